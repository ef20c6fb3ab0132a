"""Text classifiers: labelled sentences in, a preset scored by accuracy out.

SST-2's training file gives train and validation (whole sentences, their phrases kept
out of training: see ``zoo.data.sst2``), with templated negation and contrast sentences
beside it when the recipe asks (``zoo.data.sentiment_templates``); its dev file is the
test split. Batches are bucketed by length; early stopping watches the validation
accuracy. The shipped preset is also scored on the behavioural suite
(``zoo.data.sentiment_behaviour``).
"""

import keras
import numpy as np

import zoo.models
from zoo import presets
from zoo.data import sentiment_templates, sst2
from zoo.evaluation import classifier
from zoo.text.preprocessor import ClassifierPreprocessor
from zoo.text.vocabulary import pad_batch
from zoo.training.batches import bucketed_dataset
from zoo.training.loop import Ids
from zoo.training.optimizer import adam
from zoo.training.task import Task

# Settings of ``model_config`` that belong to the text pipeline (the model takes them too).
TEXT_SETTINGS = ("language", "lowercase", "max_length")


def make_dataset(model, sentences, labels, batch_size, shuffle, seed=0):
    """Batches ``(word ids, labels)``, bucketed by length; texts without words are left out."""
    rows = model.preprocessor.rows(sentences)

    def batch_of(batch):
        return pad_batch([rows[i] for i in batch]), np.array([labels[i] for i in batch], np.int32)

    return bucketed_dataset(
        [i for i, row in enumerate(rows) if row], lambda i: len(rows[i]), batch_of,
        (Ids(), Ids(rank=1)),
        batch_size, shuffle, seed)


class ClassificationTask(Task):
    """A classifier on SST-2 or a user's ``label<TAB>sentence`` file."""

    monitor = "val_accuracy"
    kind = "classifier"
    seeds_apart = True
    validation_metrics = {"accuracy": keras.metrics.sparse_categorical_accuracy}

    def read_splits(self):
        if self.data_file:
            return _user_splits(self.data_file)
        splits = sst2.read(self.data_dir)
        # SST-2's training split only (a user's file may hold too few polarity words);
        # validation and test stay as they are.
        if self.recipe.templated_examples:
            made = sentiment_templates.examples(*splits["train"], self.recipe.templated_examples,
                                                self.recipe.seed)
            splits["train"] = tuple(old + new for old, new in zip(splits["train"], made))
        return splits

    def build_preprocessor(self, splits):
        config = self.recipe.model_config
        return ClassifierPreprocessor.train(
            splits["train"][0], **{key: config[key] for key in TEXT_SETTINGS if key in config},
            min_count=self.recipe.vocabulary.get("min_count", 1))

    def build_model(self, preprocessor):
        model = zoo.models.TextClassifier(len(preprocessor.vocabulary), **self.recipe.model_config)
        model.build()
        model.set_preprocessor(preprocessor)
        return model

    def datasets(self, model, splits, seed):
        batch_size = self.recipe.batch_size
        return (make_dataset(model, *splits["train"], batch_size, True, seed),
                make_dataset(model, *splits["validation"], batch_size, False))

    def compile(self, model, steps_per_epoch, epochs):
        model.compile(optimizer=adam(self.recipe.learning_rate, self.recipe.ema_momentum),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def reduce_on_plateau(self):
        return False

    def summary(self, splits, preprocessor, model):
        return (f"{self.recipe.name}: {len(splits['train'][0]):,} training sentences, "
                f"{len(preprocessor.vocabulary):,} words")

    def best_of_history(self, history):
        return round(100 * float(max(history["val_accuracy"])), 2)

    def training_summary(self, history):
        return {"best_val_accuracy": self.best_of_history(history)}

    def seed_line(self, seed, history):
        return f"seed {seed}: best validation accuracy {self.best_of_history(history):.2f}%"

    def describe(self, model, splits, record):
        return {
            "task": "classifier",
            "metric": "accuracy",
            "description": self.recipe.description,
            "architecture": "TextClassifier",
            "labels": model.labels,
            "data": self.data_description(splits),
            "vocabulary": {"words": len(model.preprocessor.vocabulary)},
            "training": record,
            "weights_dtype": self.recipe.weights_dtype,
        }

    def data_description(self, splits):
        sizes = self.split_sizes(splits)
        if self.data_file:
            return {"file": str(self.data_file), "sha256": presets.sha256(self.data_file),
                    "sentences": sizes,
                    "split": "1 line in 10 for test, 1 in 20 of the rest for validation (by hash)"}
        return {"file": f"{sst2.FILES['train']}, {sst2.FILES['test']}", "url": sst2.URL,
                "sha256": sst2.SHA256, "sentences": sizes,
                "split": "train.tsv: whole sentences (1 in 8 by hash, 6+ words) for validation, "
                         "their phrases of 3+ words left out of training; dev.tsv is the test "
                         "split"}

    def score(self, shipped, splits):
        return classifier.preset_scores(shipped, splits, self.printer)


def _user_splits(path):
    """A user's file: 1 line in 10 for test, 1 in 20 of the rest (by hash) for validation."""
    sentences, labels = sst2.read_tsv(path)
    names = ["test" if i % 10 == 0 else "validation" if sst2._is_validation(s) else "train"
             for i, s in enumerate(sentences)]
    return {split: ([s for s, n in zip(sentences, names) if n == split],
                    [label for label, n in zip(labels, names) if n == split])
            for split in ("train", "validation", "test")}
