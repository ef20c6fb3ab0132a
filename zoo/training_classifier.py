"""Training a text classifier from a recipe: labelled sentences in, a scored preset out.

SST-2's training file gives train and validation (whole sentences, their phrases
kept out of training: see ``zoo.data.sst2``); its dev file is the test split. Batches
are bucketed by length; ``zoo.training_loop.fit`` with early stopping on the
validation accuracy restores the best weights.
"""

import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import zoo.models
from zoo import presets, training, training_loop
from zoo.data import sentiment_behaviour, sentiment_templates, sst2
from zoo.text.preprocessor import ClassifierPreprocessor
from zoo.text.vocabulary import pad_batch


def accuracy(model, sentences, labels):
    """Percentage of sentences whose likeliest label is the reference."""
    predicted = model.probabilities(sentences).argmax(axis=-1)
    return round(100 * float(np.mean(predicted == np.asarray(labels))), 2)


def make_dataset(model, sentences, labels, batch_size, shuffle, seed=0):
    """Batches ``(word ids, labels)``, bucketed by length; texts without words are left out."""
    rows = model.preprocessor.rows(sentences)

    def batch_of(batch):
        return pad_batch([rows[i] for i in batch]), np.array([labels[i] for i in batch], np.int32)

    return training.bucketed_dataset(
        [i for i, row in enumerate(rows) if row], lambda i: len(rows[i]), batch_of,
        (tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.int32)),
        batch_size, shuffle, seed)


def train(recipe, out_dir=None, epochs=None, data_file=None, data_dir=None, log_dir=None,
          command=None, printer=print, options=None):
    """Train a classifier preset (SST-2, or a user's ``label<TAB>sentence`` file)."""
    started = time.time()
    if data_file and not out_dir:
        raise ValueError("Training on other data needs an output directory (--out DIR).")
    splits = sst2.load(data_dir) if not data_file else _user_splits(data_file)
    # SST-2's training split only (a user's file may hold too few polarity words);
    # validation and test stay as they are.
    if recipe.get("templated_examples") and not data_file:
        made = sentiment_templates.examples(*splits["train"], recipe["templated_examples"],
                                            recipe.get("seed", 0))
        splits["train"] = tuple(old + new for old, new in zip(splits["train"], made))
    config = dict(recipe.get("model_config", {}))
    text_settings = {key: config[key] for key in ("language", "lowercase", "max_length")
                     if key in config}
    preprocessor = ClassifierPreprocessor.train(
        splits["train"][0], **text_settings,
        min_count=recipe.get("vocabulary", {}).get("min_count", 1))
    vocabulary = preprocessor.vocabulary
    printer(f"{recipe['name']}: {len(splits['train'][0]):,} training sentences, "
            f"{len(vocabulary):,} words")
    # Several seeds, when the recipe lists them: the one best on validation ships (a
    # sentence-level score over ~800 sentences moves by a point from seed to seed).
    runs = {}
    for seed in recipe.get("seeds") or [recipe.get("seed", 0)]:
        runs[seed] = _fit(recipe, config, preprocessor, splits, seed, epochs,
                          Path(log_dir or Path("runs") / recipe["name"]) / f"seed_{seed}",
                          (options or training_loop.Options()).part(f"seed_{seed}"),
                          run={"epochs": epochs, "data": str(data_file or "")})
        printer(f"seed {seed}: best validation accuracy "
                f"{100 * max(runs[seed][1]['val_accuracy']):.2f}%")
    seed = max(runs, key=lambda s: max(runs[s][1]["val_accuracy"]))
    model, history = runs[seed]
    metadata = {
        "task": "classification",
        "metric": "accuracy",
        "description": recipe.get("description", ""),
        "architecture": "TextClassifier",
        "labels": model.labels,
        "data": _data_description(data_file, splits),
        "vocabulary": {"words": len(vocabulary)},
        "training": {
            **training.training_record(recipe, command, started, len(history["val_accuracy"]),
                                       int(np.argmax(history["val_accuracy"])) + 1),
            "best_val_accuracy": round(100 * float(max(history["val_accuracy"])), 2),
            "seed": seed,
            "best_val_accuracy_by_seed": {str(s): round(100 * float(max(h["val_accuracy"])), 2)
                                          for s, (_, h) in runs.items()},
        },
        "weights_dtype": recipe.get("weights_dtype", "float32"),
    }
    out_dir = Path(out_dir or presets.presets_root() / recipe["name"])

    def score(shipped):
        scores = {}
        for split in ("validation", "test"):
            scores[split] = {"accuracy": accuracy(shipped, *splits[split]),
                             "sentences": len(splits[split][0])}
            printer(f"{split}: {scores[split]}")
        behaviour = sentiment_behaviour.score(shipped)
        printer(f"behaviour: {({k: v['percent'] for k, v in behaviour.items()})}")
        return {**scores, "behaviour": behaviour,
                "headline": f"test accuracy {scores['test']['accuracy']}%"}

    return training.ship(model, out_dir, metadata, score, model_card)


def _fit(recipe, config, preprocessor, splits, seed, epochs, log_dir, options, run):
    """One training run from ``seed``: ``(model with its best weights, history)``."""
    keras.utils.set_random_seed(seed)
    with options.scope():
        model = zoo.models.TextClassifier(len(preprocessor.vocabulary), **config)
        model.build()
        model.set_preprocessor(preprocessor)
        model.compile(optimizer=training.adam(recipe.get("learning_rate", 1e-3),
                                              recipe.get("ema_momentum")),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    batch_size = recipe.get("batch_size", 64)
    train_data = make_dataset(model, *splits["train"], batch_size, True, seed)
    validation_data = make_dataset(model, *splits["validation"], batch_size, False)
    callbacks = training.standard_callbacks(recipe, log_dir, patience=2, monitor="val_accuracy",
                                            reduce_on_plateau=False)
    history = training_loop.fit(
        model, train_data, epochs or recipe.get("epochs", 10), validation_data.dataset(),
        callbacks, {"recipe": recipe, "seed": seed, **run}, options,
        validation_metrics={"accuracy": keras.metrics.sparse_categorical_accuracy})
    return model, history


def _user_splits(path):
    """A user's file: 1 line in 10 for test, 1 in 20 of the rest (by hash) for validation."""
    sentences, labels = sst2.read_tsv(path)
    names = ["test" if i % 10 == 0 else "validation" if sst2._is_validation(s) else "train"
             for i, s in enumerate(sentences)]
    return {split: ([s for s, n in zip(sentences, names) if n == split],
                    [label for label, n in zip(labels, names) if n == split])
            for split in ("train", "validation", "test")}


def _data_description(data_file, splits):
    sizes = {name: len(sides[0]) for name, sides in splits.items()}
    if data_file:
        return {"file": str(data_file), "sha256": presets.sha256(data_file), "sentences": sizes,
                "split": "1 line in 10 for test, 1 in 20 of the rest for validation (by hash)"}
    return {"file": f"{sst2.FILES['train']}, {sst2.FILES['test']}", "url": sst2.URL,
            "sha256": sst2.SHA256, "sentences": sizes,
            "split": "train.tsv: whole sentences (1 in 8 by hash, 6+ words) for validation, "
                     "their phrases of 3+ words left out of training; dev.tsv is the test split"}


def model_card(metadata):
    lines = [
        f"# {metadata['name']}", "", metadata.get("description", ""), "",
        f"Architecture: `{metadata['architecture']}`, {metadata['parameters']:,} parameters, "
        f"labels {', '.join(metadata['labels'])}.", "",
        "## Scores", "", "| split | sentences | accuracy % |", "|---|---|---|",
    ]
    for split in ("validation", "test"):
        lines.append(f"| {split} | {metadata[split]['sentences']} | {metadata[split]['accuracy']} |")
    by_seed = metadata["training"].get("best_val_accuracy_by_seed", {})
    if len(by_seed) > 1:
        lines += ["", f"Seeds trained (best validation accuracy %): "
                      f"{', '.join(f'{s}: {a}' for s, a in by_seed.items())}; the best on "
                      f"validation, seed {metadata['training']['seed']}, ships."]
    if "behaviour" in metadata:
        lines += ["", "## Behaviour", "",
                  "Short sentences built from templates, one capability each "
                  "(`zoo.data.sentiment_behaviour`, after CheckList; none is in the training "
                  "data, nor are their words in the templated training examples):", "",
                  "| capability | passed | of | % |", "|---|---|---|---|"]
        for capability, result in metadata["behaviour"].items():
            lines.append(f"| {capability} | {result['passed']} | {result['cases']} | "
                         f"{result['percent']} |")
    lines += [""] + training.card_training_lines(metadata, sizes_key="sentences")
    return "\n".join(lines + [""])
