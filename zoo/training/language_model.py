"""Character language models: text in, a preset scored in nats per character out.

The text is split by position (``zoo.data.shakespeare.split``: the test split is the
held-out tail). Training reads windows of ``sequence_length + 1`` characters, from a
new random offset every epoch. The preset is scored on the validation and test text,
each read in one pass.
"""

import math

import keras
import numpy as np

import zoo.models
from zoo import presets
from zoo.data import shakespeare
from zoo.evaluation import language_model as scoring
from zoo.evaluation.splits import TEXT_CORPORA, text_splits
from zoo.text.preprocessor import CharacterPreprocessor
from zoo.training.loop import EpochData, Ids
from zoo.training.optimizer import adam
from zoo.training.task import Task


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

    spec = Ids(width=sequence_length)
    return EpochData(batches_of_pass, batches, (spec, spec))


def build_model(characters, model_config):
    """A built ``CharLanguageModel`` that reads and writes ``characters``."""
    model = zoo.models.CharLanguageModel(len(characters), **model_config)
    model.build()
    model.set_preprocessor(CharacterPreprocessor(characters))
    return model


class LanguageModelTask(Task):
    """A character language model on a corpus of ``TEXT_CORPORA`` or a user's text file."""

    kind = "language_model"

    def read_splits(self):
        if self.data_file:
            return shakespeare.split(shakespeare.read_text(self.data_file))
        return text_splits(self.recipe.corpus, self.data_dir)

    @staticmethod
    def split_sizes(splits):
        return {name: len(text) for name, text in splits.items()}

    def build_preprocessor(self, splits):
        return CharacterPreprocessor(sorted(set(splits["train"])))  # every character seen

    def build_model(self, preprocessor):
        return build_model(preprocessor.characters, self.recipe.model_config)

    def datasets(self, model, splits, seed):
        length, batch_size = self.recipe.sequence_length, self.recipe.batch_size
        train_ids, validation_ids = (model.preprocessor.tokenize(splits[name])
                                     for name in ("train", "validation"))
        return (windows(train_ids, length, batch_size, shuffle=True, seed=seed),
                windows(validation_ids, length, batch_size, shuffle=False))

    def _cosine(self):
        return self.recipe.learning_rate_decay == "cosine"

    def compile(self, model, steps_per_epoch, epochs):
        learning_rate = self.recipe.learning_rate
        if self._cosine():
            # Decays to 5% over the planned epochs: the last epochs at a small learning rate
            # gain more than halving it on a plateau, which a fixed epoch budget rarely reaches.
            learning_rate = keras.optimizers.schedules.CosineDecay(
                learning_rate, steps_per_epoch * epochs, alpha=0.05)
        model.compile(optimizer=adam(learning_rate, self.recipe.ema_momentum),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def reduce_on_plateau(self):
        return not self._cosine()

    def summary(self, splits, preprocessor, model):
        return (f"{self.recipe.name}: {len(splits['train']):,} training characters, "
                f"{len(preprocessor.characters)} distinct, {model.count_params():,} parameters")

    def training_summary(self, history):
        return {**super().training_summary(history),
                "final_train_loss": round(float(history["loss"][-1]), 4)}

    def describe(self, model, splits, record):
        recipe = self.recipe
        return {
            "task": "language_model",
            "metric": "nats_per_char",
            "description": recipe.description,
            "architecture": f"CharLanguageModel ({recipe.model_config.get('cell', 'lstm')})",
            "data": self.data_description(splits),
            "vocabulary": {"characters": len(model.preprocessor.characters)},
            "training": record,
            "weights_dtype": recipe.weights_dtype,
        }

    def data_description(self, splits):
        sizes = self.split_sizes(splits)
        if self.data_file:
            return {"file": str(self.data_file), "sha256": presets.sha256(self.data_file),
                    "characters": sizes, "split": "by position: 90% / 5% / 5%, test last"}
        corpus = TEXT_CORPORA[self.recipe.corpus]
        return {"file": corpus.FILE, "url": corpus.URL, "sha256": corpus.SHA256,
                "characters": sizes,
                "split": "by position: first 90% train, next 5% validation, last 5% test"}

    def score(self, shipped, splits):
        """Validation and test, with a sample of the preset's text."""
        return scoring.preset_scores(shipped, splits, self.printer)
