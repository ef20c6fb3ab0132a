"""The attention decoder's hand-written backward pass (``attention_decoder_kernel``):
the same loss and gradients as automatic differentiation of the step, and taken where
it is meant to be (TensorFlow's training step in float32)."""

from unittest import mock

import keras
import numpy as np
import pytest

from conftest import tiny_translator
from zoo import precision
from zoo.layers import attention_decoder_kernel
from zoo.models import AttentionSeq2Seq

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="a TensorFlow kernel")


def _batch(model, rng):
    """Sources with padding (one row of a single real position), targets with padding."""
    sources = rng.integers(4, model.source_vocabulary_size, (4, 6)).astype("int32")
    sources[0, 3:] = 0
    sources[2, 1:] = 0
    targets_in = rng.integers(4, model.target_vocabulary_size, (4, 5)).astype("int32")
    targets_in[1, 2:] = 0
    targets_out = np.roll(targets_in, -1, axis=1)
    targets_out[:, -1] = 0
    return sources, targets_in, targets_out


def _loss_and_gradients(model, batch, kernel):
    """The masked cross-entropy of the teacher-forced logits and its gradients, through
    the kernel or through automatic differentiation of the step; and how many times the
    kernel ran."""
    import tensorflow as tf

    sources, targets_in, targets_out = batch
    spy = mock.Mock(wraps=attention_decoder_kernel.run_attention_decoder)
    with mock.patch.object(attention_decoder_kernel, "run_attention_decoder", spy), \
            mock.patch.object(AttentionSeq2Seq, "_decoder_kernel_trains",
                              lambda self, training, attention: kernel and training):
        with tf.GradientTape() as tape:
            logits = model.decode_teacher_forced(targets_in, model.encode(sources, True), True)
            losses = keras.losses.sparse_categorical_crossentropy(targets_out, logits,
                                                                  from_logits=True)
            loss = tf.reduce_sum(losses * tf.cast(targets_out > 0, losses.dtype))
        gradients = tape.gradient(loss, model.trainable_variables)
    return float(loss), [tf.convert_to_tensor(g).numpy() for g in gradients], spy.call_count


def test_the_kernel_gives_the_loss_and_gradients_of_automatic_differentiation(rng):
    model = tiny_translator(AttentionSeq2Seq, units=16)
    for weight in model.attention.weights + model.decoder_cell.weights:
        # Larger than at initialisation, where the state barely moves the attention: a
        # gradient through the query then weighs in every weight's (checked: halving it
        # moves their gradients by 0.5-3.4% of their largest entry).
        weight.assign(3.0 * weight)
    batch = _batch(model, rng)
    loss, gradients, calls = _loss_and_gradients(model, batch, kernel=True)
    expected_loss, expected, autodiff_calls = _loss_and_gradients(model, batch, kernel=False)
    assert (calls, autodiff_calls) == (1, 0)
    assert loss == pytest.approx(expected_loss, rel=1e-6)
    for variable, ours, theirs in zip(model.trainable_variables, gradients, expected):
        largest = np.abs(theirs).max()
        assert largest > 0, variable.path  # every weight takes part
        assert np.abs(ours - theirs).max() <= 1e-5 * largest, variable.path


def test_the_training_step_takes_the_kernel_in_float32_only(rng):
    model = tiny_translator(AttentionSeq2Seq, units=16)
    mixed = precision.copy_in(model, "mixed_bfloat16")
    assert model._decoder_kernel_trains(training=True, return_attention=False)
    assert not model._decoder_kernel_trains(training=False, return_attention=False)
    assert not model._decoder_kernel_trains(training=True, return_attention=True)
    # Mixed precision keeps its bfloat16 products (automatic differentiation).
    assert not mixed._decoder_kernel_trains(training=True, return_attention=False)
    model.jit_compile = True  # XLA compiles Keras' loop
    assert not model._decoder_kernel_trains(training=True, return_attention=False)
