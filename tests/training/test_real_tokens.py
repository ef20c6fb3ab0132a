"""Training on TensorFlow computes the output layer and the loss over the real target
tokens only (``RealTokensTraining``): the same loss and gradients as over every position."""

import keras
import numpy as np
import pytest
from testcase import outputs_and_gradients

from tests.conftest import MODELS, SOURCES, TARGETS, tiny_translator
from zoo.models import SmoothedCrossentropy
from zoo.training import alignment
from zoo.training.translation import RealTokensTraining, TranslationTask

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="packed logits are TensorFlow's (other backends "
                                       "compile fixed shapes)")


def _batch(model, rows=8, width=12):
    """The toy pairs padded to ``rows`` rows (empty ones after) and ``width`` positions."""
    source = model.preprocessor.tokenize_sources(SOURCES)
    decoder_in, decoder_out = model.preprocessor.tokenize_targets(TARGETS)

    def padded(ids):
        out = np.zeros((rows, width), np.int32)
        out[: ids.shape[0], : ids.shape[1]] = ids
        return out

    return padded(source), padded(decoder_in), padded(decoder_out)


def _loss_and_gradients(view, model, batch, loss):
    """The loss of ``view`` on the batch in training (dropout on) and its gradients, the
    dropout's seed state put back first, so that every call draws the same masks."""
    source, decoder_in, decoder_out = batch
    seeds = [(v, v.numpy()) for v in model.non_trainable_variables]
    for variable, value in seeds:
        variable.assign(value)

    def run():
        value = loss(decoder_out, view((source, decoder_in), training=True))
        return value, value

    value, gradients = outputs_and_gradients(run, [], model.trainable_variables)
    for variable, value_before in seeds:
        variable.assign(value_before)
    return float(value), gradients


@pytest.mark.parametrize("kind", sorted(MODELS))
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_the_real_tokens_give_the_loss_and_gradients_of_every_position(kind, smoothing):
    tiny = tiny_translator(MODELS[kind])
    # dropout draws for the whole batch in both
    model = MODELS[kind].from_config({**tiny.get_config(), "dropout": 0.3})
    model.set_preprocessor(tiny.preprocessor)
    batch = _batch(model)
    loss = SmoothedCrossentropy(smoothing)
    dense, dense_gradients = _loss_and_gradients(model, model, batch, loss)
    packed, packed_gradients = _loss_and_gradients(RealTokensTraining(model), model, batch, loss)
    assert dense > 0
    assert packed == pytest.approx(dense, rel=1e-6)
    assert len(packed_gradients) == len(model.trainable_variables)
    for packed_gradient, dense_gradient in zip(packed_gradients, dense_gradients, strict=True):
        np.testing.assert_allclose(packed_gradient, dense_gradient, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_packed_logits_are_those_of_the_real_positions_in_row_major_order(kind):
    model = tiny_translator(MODELS[kind])
    source, decoder_in, _ = _batch(model)
    state = model.encode(source)
    dense = keras.ops.convert_to_numpy(model.decode_teacher_forced(decoder_in, state))
    packed = keras.ops.convert_to_numpy(
        model.decode_teacher_forced(decoder_in, state, real_only=True))
    assert packed.shape == (int((decoder_in != 0).sum()), model.target_vocabulary_size)
    np.testing.assert_allclose(packed, dense[decoder_in != 0], rtol=1e-6, atol=1e-6)


def test_the_translation_task_trains_the_real_tokens_view_and_guided_alignment_packs_too():
    model = tiny_translator(MODELS["attention"])

    class Recipe:
        guided_alignment = None

    task = TranslationTask.__new__(TranslationTask)
    task.recipe = Recipe()
    view = task.training_view(model)
    assert isinstance(view, RealTokensTraining) and view.translator is model
    source, decoder_in, _ = _batch(model)
    guided = alignment.GuidedAlignmentTraining(model, 1.0)
    logits = keras.ops.convert_to_numpy(guided((source, decoder_in)))
    assert logits.shape == (int((decoder_in != 0).sum()), model.target_vocabulary_size)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_a_source_cut_at_its_last_real_position_gives_the_same_state(kind):
    model = tiny_translator(MODELS[kind])
    source, _, _ = _batch(model, width=20)
    width = int(np.nonzero((source != 0).any(axis=0))[0][-1]) + 1
    assert width < source.shape[1]
    whole = model.encode(source)
    cut = model.encode(source, trim_padding=True)
    assert sorted(cut) == sorted(whole)
    for name, value in whole.items():
        value = keras.ops.convert_to_numpy(value)
        if name in ("memory", "keys", "mask"):  # per source position: the real ones kept
            value = value[:, :width]
        np.testing.assert_allclose(keras.ops.convert_to_numpy(cut[name]), value,
                                   rtol=1e-6, atol=1e-6)


def _trained_weights(kind, metrics, steps=3):
    """A tiny translator's weights after ``steps`` of Keras' ``train_on_batch`` from the
    same weights and seeds (dropout on), compiled as the README's fine-tune compiles."""
    from zoo.training.translation import compile_for_training

    tiny = tiny_translator(MODELS[kind])
    keras.utils.set_random_seed(3)
    model = MODELS[kind].from_config({**tiny.get_config(), "dropout": 0.3})
    model.set_preprocessor(tiny.preprocessor)
    model.set_weights([np.random.default_rng(0).normal(scale=0.1, size=w.shape)
                       for w in model.get_weights()])
    compile_for_training(model, learning_rate=1e-2, label_smoothing=0.1)
    if metrics:  # metrics read every position's logits: the dense step
        model.compile(optimizer=model.optimizer, loss=model.loss, metrics=metrics)
    decode = model.decode_teacher_forced
    model.real_only_calls = []

    def recorded(*args, real_only=False, **kwargs):  # what the step is traced with
        model.real_only_calls.append(real_only)
        return decode(*args, real_only=real_only, **kwargs)

    model.decode_teacher_forced = recorded
    source, decoder_in, decoder_out = _batch(model, width=20)
    losses = [float(model.train_on_batch((source, decoder_in), decoder_out)
                    if not metrics else
                    model.train_on_batch((source, decoder_in), decoder_out)[0])
              for _ in range(steps)]
    return model, losses, [np.asarray(w) for w in model.get_weights()]


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_fit_on_the_translator_trains_the_real_tokens_to_the_same_weights(kind):
    """The README's fine-tune (``compile_for_training``, then ``fit`` on the translator
    itself) takes the real tokens' step; the same losses and weights as the dense one."""
    model, losses, weights = _trained_weights(kind, metrics=None)
    assert model.real_only_calls and all(model.real_only_calls)
    assert not model._trains_real_tokens(((1, 2), 3, np.ones(2)))  # sample weights: dense
    dense_model, dense_losses, dense_weights = _trained_weights(kind, metrics=["accuracy"])
    assert dense_model.real_only_calls and not any(dense_model.real_only_calls)
    np.testing.assert_allclose(losses, dense_losses, rtol=1e-5)
    assert losses[-1] < losses[0]
    for weight, dense_weight in zip(weights, dense_weights, strict=True):
        np.testing.assert_allclose(weight, dense_weight, rtol=1e-4, atol=1e-5)
    # evaluate takes the packed step too: the same loss as the dense model's
    source, decoder_in, decoder_out = _batch(model, width=20)
    packed = model.evaluate((source, decoder_in), decoder_out, verbose=0)
    dense_model.set_weights(weights)
    dense = dense_model.evaluate((source, decoder_in), decoder_out, verbose=0)[0]
    assert packed == pytest.approx(dense, rel=1e-5)
