"""The translators' loss: cross-entropy masked on padding, optionally label-smoothed."""

import keras
import numpy as np
import pytest

from zoo.models import SmoothedCrossentropy

TARGETS = np.array([[3, 1, 0, 0], [2, 2, 4, 0]])  # 0 is padding
LOGITS = np.random.default_rng(0).normal(size=(2, 4, 5)).astype("float32")


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_without_smoothing_it_is_keras_masked_sparse_crossentropy():
    keras_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    expected = float(keras_loss(TARGETS, LOGITS))
    assert float(SmoothedCrossentropy(0.0)(TARGETS, LOGITS)) == pytest.approx(expected, rel=1e-5)


def test_smoothing_mixes_in_the_uniform_distribution_over_the_real_tokens_only():
    log_probs = log_softmax(LOGITS.astype("float64"))
    smoothing, classes = 0.1, LOGITS.shape[-1]
    losses = [-(np.full(classes, smoothing / classes) + (1 - smoothing) * np.eye(classes)[t])
              @ log_probs[b, p] for b, p in zip(*np.nonzero(TARGETS)) for t in [TARGETS[b, p]]]
    assert float(SmoothedCrossentropy(smoothing)(TARGETS, LOGITS)) == pytest.approx(
        np.mean(losses), rel=1e-5)


def test_a_smoothing_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match=r"label_smoothing must be in \[0, 1\); got 1.5"):
        SmoothedCrossentropy(1.5)
