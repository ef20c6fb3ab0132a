"""How often JAX compiles a translator's training step and its validation over an epoch of
batches of varied lengths padded to the length buckets given (a JSON list; [] for none):
one JSON line on stdout, with how many shapes of batches the same pairs bring without
buckets.

Run with ``KERAS_BACKEND=jax`` (tests/training/test_fixed_shapes.py runs it in a
subprocess, as the test process runs TensorFlow). ``jax.jit`` traces its function once
per shape of its arguments, and compiles what it traced: counting the traces of the
model's ``train_step`` (Keras' JAX trainer jits it) and of the validation's loss
(``loop.evaluator`` jits it) counts the compilations.
"""

import json
import sys

import keras
import numpy as np

from zoo.models import AttentionSeq2Seq
from zoo.training import loop, translation

BATCH_SIZE, VOCABULARY = 8, 20


def random_pairs(rng, count):
    """``count`` pairs of rows of 1 to 30 ids, a target about as long as its source
    (ids from 4: [PAD], [UNK], [START] and [END] are 0-3)."""
    lengths = rng.integers(1, 31, count)
    sources = [rng.integers(4, VOCABULARY, n).tolist() for n in lengths]
    targets = [rng.integers(4, VOCABULARY, max(1, n + rng.integers(-2, 3))).tolist()
               for n in lengths]
    return sources, targets


def compilations(length_buckets):
    """The traces of the training step and of the validation over one epoch; how many
    shapes of batches each saw, and would see without buckets."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    train_pairs, validation_pairs = random_pairs(rng, 92), random_pairs(rng, 20)
    train, validation = (translation.rows_dataset(*pairs, BATCH_SIZE, shuffle=shuffle,
                                                  length_buckets=length_buckets)
                         for pairs, shuffle in ((train_pairs, True), (validation_pairs, False)))
    model = AttentionSeq2Seq("zh", "en", VOCABULARY, VOCABULARY, embedding_dim=4, units=4,
                             dropout=0.0)
    model.build()
    translation.compile_for_training(model)
    traces = {"train": 0, "validation": 0}
    model.train_step = counted(model.train_step, traces, "train")
    # The evaluator calls model.loss; the training step calls the loss compile() wrapped.
    model.loss = counted(model.loss, traces, "validation")
    loop.fit(model, train, epochs=1, validation_data=validation)
    natural = [translation.rows_dataset(*pairs, BATCH_SIZE, shuffle=shuffle)
               for pairs, shuffle in ((train_pairs, True), (validation_pairs, False))]
    return {"traces": traces,
            "shapes": {"train": shapes(train), "validation": shapes(validation)},
            "shapes_without_buckets": {"train": shapes(natural[0]),
                                       "validation": shapes(natural[1])}}


def counted(function, counts, key):
    def call(*arguments, **keywords):
        counts[key] += 1  # Python runs only while JAX traces: once per shape
        return function(*arguments, **keywords)

    return call


def shapes(data):
    """How many shapes of batches the first pass of ``data`` brings."""
    return len({tuple(array.shape for array in (*x, y)) for x, y in data.batches_of_pass(0)})


if __name__ == "__main__":
    assert keras.backend.backend() == "jax", "run with KERAS_BACKEND=jax"
    print(json.dumps(compilations(json.loads(sys.argv[1]))))
