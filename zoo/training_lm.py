"""Training a character language model from a recipe: text in, a scored preset out.

The text is split by position (``zoo.data.shakespeare.split``: the test split is the
held-out tail). Training reads windows of ``sequence_length + 1`` characters, from a
new random offset every epoch, with ``zoo.training_loop.fit`` (TensorBoard logs, early
stopping on the validation loss with the best weights restored). The preset is scored in
nats per character on the validation and test text, each read in one pass.
"""

import math
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import zoo.models
from zoo import presets, training, training_loop
from zoo.data import shakespeare
from zoo.text.preprocessor import CharacterPreprocessor

CORPORA = {"tinyshakespeare": shakespeare}


def read_splits(recipe, data_file=None, data_dir=None):
    if data_file:
        return shakespeare.split(shakespeare.read_text(data_file))
    if recipe["corpus"] not in CORPORA:
        raise ValueError(f"Unknown text corpus {recipe['corpus']!r}; known: {', '.join(CORPORA)}.")
    return CORPORA[recipe["corpus"]].split(CORPORA[recipe["corpus"]].load(data_dir))


def windows(ids, sequence_length, batch_size, shuffle, seed=0):
    """An ``EpochData`` of ``(ids [B, L], next ids [B, L])`` batches cut from one long id array.

    When shuffling, every pass starts the cuts at a new random offset, so the model
    does not always see the same window boundaries.
    """
    ids = np.asarray(ids, np.int32)
    count = (len(ids) - 1) // sequence_length - 1  # one window spare for the random offset
    if count < (batch_size if shuffle else 1):
        raise ValueError(f"The text is too short: {len(ids)} characters for "
                         f"{batch_size} windows of {sequence_length}.")
    # Training drops the last partial batch (its windows come back at other offsets).
    batches = count // batch_size if shuffle else math.ceil(count / batch_size)

    def batches_of_pass(index):
        starts = sequence_length * np.arange(count)
        if shuffle:  # pass k: the k-th draws of one random stream
            rng = np.random.default_rng(seed)
            for _ in range(index + 1):
                offset = int(rng.integers(sequence_length))
                order = rng.permutation(count)
            starts = offset + starts[order]
        for b in range(batches):
            chosen = starts[b * batch_size : (b + 1) * batch_size, None] + np.arange(sequence_length + 1)
            rows = ids[chosen]
            yield rows[:, :-1], rows[:, 1:]

    spec = tf.TensorSpec([None, sequence_length], tf.int32)
    return training_loop.EpochData(batches_of_pass, batches, (spec, spec))


def build_model(recipe, characters):
    model = zoo.models.CharLanguageModel(len(characters), **recipe.get("model_config", {}))
    model.build()
    model.set_preprocessor(CharacterPreprocessor(characters))
    return model


def train(recipe, out_dir=None, epochs=None, data_file=None, data_dir=None, log_dir=None,
          command=None, printer=print, options=None):
    """Train a character language model preset; returns the preset directory."""
    started = time.time()
    if data_file and not out_dir:
        raise ValueError("Training on other data needs an output directory (--out DIR).")
    splits = read_splits(recipe, data_file, data_dir)
    characters = sorted(set(splits["train"]))
    keras.utils.set_random_seed(recipe.get("seed", 0))
    options = options or training_loop.Options()
    with options.scope():
        model = build_model(recipe, characters)
    printer(f"{recipe['name']}: {len(splits['train']):,} training characters, "
            f"{len(characters)} distinct, {model.count_params():,} parameters")
    history = _fit(model, recipe, splits, epochs, log_dir, options,
                   run={"epochs": epochs, "data": str(data_file or "")})
    val_losses = history["val_loss"]
    record = {
        **training.training_record(recipe, command, started, len(val_losses),
                                   int(np.argmin(val_losses)) + 1),
        "best_val_loss": round(float(min(val_losses)), 4),
        "final_train_loss": round(float(history["loss"][-1]), 4),
    }
    metadata = preset_metadata(recipe, splits, data_file, characters, record)
    out_dir = Path(out_dir or presets.presets_root() / recipe["name"])
    return score_and_ship(model, out_dir, metadata, splits, printer)


def preset_metadata(recipe, splits, data_file, characters, training_record):
    """The preset's metadata before scoring; ``training_record`` says how it was trained."""
    return {
        "task": "language_modeling",
        "metric": "nats_per_char",
        "description": recipe.get("description", ""),
        "architecture": f"CharLanguageModel ({recipe['model_config']['cell']})",
        "data": _data_description(recipe, data_file, splits),
        "vocabulary": {"characters": len(characters)},
        "training": training_record,
        "weights_dtype": recipe.get("weights_dtype", "float32"),
    }


def _fit(model, recipe, splits, epochs, log_dir, options, run):
    length, batch_size = recipe.get("sequence_length", 128), recipe.get("batch_size", 64)
    train_ids, validation_ids = (model.preprocessor.encode(splits[name])
                                 for name in ("train", "validation"))
    train_data = windows(train_ids, length, batch_size, shuffle=True, seed=recipe.get("seed", 0))
    validation_data = windows(validation_ids, length, batch_size, shuffle=False)
    epochs = epochs or recipe.get("epochs", 30)
    learning_rate = recipe.get("learning_rate", 2e-3)
    cosine = recipe.get("learning_rate_decay") == "cosine"
    if cosine:
        # Decays to 5% over the planned epochs: the last epochs at a small learning rate
        # gain more than halving it on a plateau, which a fixed epoch budget rarely reaches.
        learning_rate = keras.optimizers.schedules.CosineDecay(
            learning_rate, len(train_data) * epochs, alpha=0.05)
    callbacks = training.standard_callbacks(recipe, log_dir, patience=2,
                                            reduce_on_plateau=not cosine)
    with options.scope():
        model.compile(optimizer=training.adam(learning_rate, recipe.get("ema_momentum")),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return training_loop.fit(model, train_data, epochs, validation_data.dataset(), callbacks,
                             {"recipe": recipe, **run}, options)


def score(model, text):
    nats = model.nats_per_char(text)
    return {"nats_per_char": round(nats, 4), "bits_per_char": round(nats / math.log(2), 4),
            "characters": len(text) - 1}


def score_and_ship(model, out_dir, metadata, splits, printer):
    """Ship the preset scored on validation and test, with a sample of its text."""
    def score_shipped(shipped):
        scores = {}
        for split in ("validation", "test"):
            scores[split] = score(shipped, splits[split])
            printer(f"{split}: {scores[split]}")
        test = scores["test"]
        return {**scores, "sample": shipped.generate("ROMEO:", 300, temperature=0.8, seed=0),
                "headline": f"test {test['nats_per_char']} nats/char "
                            f"({test['bits_per_char']} bits/char)"}

    return training.ship(model, out_dir, metadata, score_shipped, model_card)


def _data_description(recipe, data_file, splits):
    sizes = {name: len(text) for name, text in splits.items()}
    if data_file:
        return {"file": str(data_file), "sha256": presets.sha256(data_file), "characters": sizes,
                "split": "by position: 90% / 5% / 5%, test last"}
    corpus = CORPORA[recipe["corpus"]]
    return {"file": corpus.FILE, "url": corpus.URL, "sha256": corpus.SHA256, "characters": sizes,
            "split": "by position: first 90% train, next 5% validation, last 5% test"}


def model_card(metadata):
    lines = [
        f"# {metadata['name']}", "", metadata.get("description", ""), "",
        f"Architecture: `{metadata['architecture']}`, {metadata['parameters']:,} parameters, "
        f"{metadata['vocabulary']['characters']} characters.", "",
        "## Scores (text read in one pass, state carried)", "",
        "| split | characters | nats/char | bits/char |", "|---|---|---|---|",
    ]
    for split in ("validation", "test"):
        result = metadata[split]
        lines.append(f"| {split} | {result['characters']:,} | {result['nats_per_char']} | "
                     f"{result['bits_per_char']} |")
    lines += [
        "", "Sample (`model.generate(\"ROMEO:\", 300, temperature=0.8, seed=0)`):", "", "```",
        "ROMEO:" + metadata["sample"], "```", "",
    ] + training.card_training_lines(metadata, sizes_key="characters")
    return "\n".join(lines + [""])
