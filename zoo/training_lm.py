"""Training a character language model from a recipe: text in, a scored preset out.

The text is split by position (``zoo.data.shakespeare.split``: the test split is the
held-out tail). Training reads windows of ``sequence_length + 1`` characters, from a
new random offset every epoch, with Keras ``fit`` (TensorBoard logs, early stopping
on the validation loss with the best weights restored). The preset is scored in
nats per character on the validation and test text, each read in one pass.
"""

import math
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import zoo.models
from zoo import presets, training
from zoo.data import shakespeare

CORPORA = {"tinyshakespeare": shakespeare}


def read_splits(recipe, data_file=None, data_dir=None):
    if data_file:
        return shakespeare.split(shakespeare.read_text(data_file))
    if recipe["corpus"] not in CORPORA:
        raise ValueError(f"Unknown text corpus {recipe['corpus']!r}; known: {', '.join(CORPORA)}.")
    return CORPORA[recipe["corpus"]].split(CORPORA[recipe["corpus"]].load(data_dir))


def windows(ids, sequence_length, batch_size, shuffle, seed=0):
    """A dataset of ``(ids [B, L], next ids [B, L])`` batches cut from one long id array.

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
    rng = np.random.default_rng(seed)

    def generate():
        offset = int(rng.integers(sequence_length)) if shuffle else 0
        starts = offset + sequence_length * np.arange(count)
        if shuffle:
            starts = rng.permutation(starts)
        for b in range(batches):
            chosen = starts[b * batch_size : (b + 1) * batch_size, None] + np.arange(sequence_length + 1)
            rows = ids[chosen]
            yield rows[:, :-1], rows[:, 1:]

    spec = tf.TensorSpec([None, sequence_length], tf.int32)
    dataset = tf.data.Dataset.from_generator(generate, output_signature=(spec, spec))
    return dataset.apply(tf.data.experimental.assert_cardinality(batches)).prefetch(2), batches


def build_model(recipe, characters):
    model = zoo.models.CharLanguageModel(len(characters), **recipe.get("model_config", {}))
    model.build()
    model.set_characters(characters)
    return model


def train(recipe, out_dir=None, epochs=None, data_file=None, data_dir=None, log_dir=None,
          command=None, printer=print):
    """Train a character language model preset; returns the preset directory."""
    started = time.time()
    if data_file and not out_dir:
        raise ValueError("Training on other data needs an output directory (--out DIR).")
    splits = read_splits(recipe, data_file, data_dir)
    characters = sorted(set(splits["train"]))
    keras.utils.set_random_seed(recipe.get("seed", 0))
    model = build_model(recipe, characters)
    model.compile(
        optimizer=keras.optimizers.Adam(recipe.get("learning_rate", 2e-3), clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    printer(f"{recipe['name']}: {len(splits['train']):,} training characters, "
            f"{len(characters)} distinct, {model.count_params():,} parameters")
    history = _fit(model, recipe, splits, epochs, log_dir)
    val_losses = history["val_loss"]
    metadata = {
        "task": "language_modeling",
        "metric": "nats_per_char",
        "description": recipe.get("description", ""),
        "architecture": f"CharLanguageModel ({recipe['model_config']['cell']})",
        "data": _data_description(recipe, data_file, splits),
        "vocabulary": {"characters": len(characters)},
        "training": {
            **training.training_record(recipe, command, started, len(val_losses),
                                       int(np.argmin(val_losses)) + 1),
            "best_val_loss": round(float(min(val_losses)), 4),
            "final_train_loss": round(float(history["loss"][-1]), 4),
        },
        "weights_dtype": recipe.get("weights_dtype", "float32"),
    }
    out_dir = Path(out_dir or presets.presets_root() / recipe["name"])
    return _score_and_ship(model, out_dir, metadata, splits, printer)


def _fit(model, recipe, splits, epochs, log_dir):
    length, batch_size = recipe.get("sequence_length", 128), recipe.get("batch_size", 64)
    train_ids, validation_ids = model.encode(splits["train"]), model.encode(splits["validation"])
    train_data, steps = windows(train_ids, length, batch_size, shuffle=True,
                                seed=recipe.get("seed", 0))
    validation_data, _ = windows(validation_ids, length, batch_size, shuffle=False)
    callbacks = [
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=recipe.get("patience", 2),
                                      restore_best_weights=True),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1),
        keras.callbacks.TensorBoard(log_dir=str(log_dir or Path("runs") / recipe["name"])),
    ]
    history = model.fit(train_data.repeat(), steps_per_epoch=steps, validation_data=validation_data,
                        epochs=epochs or recipe.get("epochs", 30), callbacks=callbacks, verbose=2,
                        shuffle=False)  # the windows are shuffled by `windows`
    return history.history


def score(model, text):
    nats = model.nats_per_char(text)
    return {"nats_per_char": round(nats, 4), "bits_per_char": round(nats / math.log(2), 4),
            "characters": len(text) - 1}


def _score_and_ship(model, out_dir, metadata, splits, printer):
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
