"""The translators' loss: cross-entropy masked on padding, optionally label-smoothed."""

import keras
import numpy as np
import pytest

from zoo.models import SmoothedCrossentropy

TARGETS = np.array([[3, 1, 0, 0], [2, 2, 4, 0]])  # 0 is padding
LOGITS = np.random.default_rng(0).normal(size=(2, 4, 5)).astype("float32")
tensorflow_only = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                     reason="TensorFlow's tape and packed logits")


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


def former_loss(targets, logits, smoothing):
    """The loss as written before it was fused (log p_t picked out, the mean of log p)."""
    from keras import ops

    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    picked = ops.squeeze(ops.take_along_axis(log_probs, ops.cast(targets, "int32")[..., None],
                                             axis=-1), -1)
    per_token = -((1.0 - smoothing) * picked + smoothing * ops.mean(log_probs, axis=-1))
    counted = ops.cast(ops.not_equal(targets, 0), "float32")
    return ops.sum(per_token * counted) / ops.maximum(ops.sum(counted), 1.0)


@tensorflow_only
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_the_fused_loss_and_its_gradient_are_the_former_ones_within_float_rounding(smoothing):
    import tensorflow as tf

    rng = np.random.default_rng(1)
    targets = rng.integers(0, 50, size=(6, 9))
    targets[:, 6:] = 0
    logits = tf.constant(rng.normal(scale=3, size=(6, 9, 50)).astype("float32"))
    values = []
    for loss in (SmoothedCrossentropy(smoothing), lambda t, x: former_loss(t, x, smoothing)):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            value = loss(targets, logits)
        values.append((float(value), tape.gradient(value, logits).numpy()))
    (new, new_gradient), (old, old_gradient) = values
    assert new == pytest.approx(old, rel=1e-6)
    np.testing.assert_allclose(new_gradient, old_gradient, rtol=1e-5, atol=1e-8)
    assert np.all(new_gradient[targets == 0] == 0)


@tensorflow_only
def test_packed_logits_of_the_real_tokens_give_the_loss_of_all_positions():
    import tensorflow as tf

    real = TARGETS != 0
    packed = LOGITS[real]  # row-major, as tf.boolean_mask takes them
    for smoothing in (0.0, 0.1):
        loss = SmoothedCrossentropy(smoothing)
        assert float(loss(TARGETS, tf.constant(packed))) == pytest.approx(
            float(loss(TARGETS, LOGITS)), rel=1e-6)
