"""Spy tests: zoo.layers' sequence layers really take their fast kernels.

``zoo.layers.SimpleRNN``/``LSTM``/``GRU`` dispatch, in ``_ProjectedInputRNN.inner_loop``:

1. cuDNN (``backend.lstm``/``backend.gru``; LSTM and GRU only), where Keras would;
2. otherwise ``sequence_kernels.run_inference`` (``training=False``) or
   ``sequence_kernels.run_recurrence`` (``training=True``, with the hand-written
   ``_backward_loop`` as its gradient), for the textbook activations unless
   ``unroll`` or (in training) ``recurrent_dropout``;
3. otherwise Keras' generic ``backend.rnn`` loop.

The outputs of every path are equal (tests/layers/test_recurrent.py and
tests/layers/test_cells.py check them against Keras), so a silent fall-back to a slower path is invisible there; these
tests wrap the kernels in ``mock.Mock(wraps=...)`` and count the calls, as Keras'
``lstm_test`` checks that its cuDNN path is taken.
"""

import contextlib
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo.layers
from zoo.layers import recurrent, sequence_kernels

HAS_GPU = bool(tf.config.list_logical_devices("GPU"))

# (layer, constructor arguments, the kernel it must run)
CASES = [
    ("SimpleRNN", {}, "simple_rnn"),
    ("LSTM", {}, "lstm"),
    ("LSTM", {"use_bias": False}, "lstm"),
    ("GRU", {"reset_after": True}, "gru_reset_after"),
    ("GRU", {"reset_after": True, "use_bias": False}, "gru_reset_after"),
    ("GRU", {"reset_after": False}, "gru_reset_before"),
]


def _case_id(case):
    name, kwargs, _ = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def _inputs(rng, batch=2, time=4, features=3):
    return tf.constant(rng.normal(size=(batch, time, features)).astype("float32"))


def _arbitrary_mask():
    mask = np.ones((2, 4), bool)
    mask[0, 0] = False  # a leading masked step
    mask[1, 2] = False  # one in the middle
    return tf.constant(mask)


class Spies:
    """Call counters on every kernel a sequence layer can dispatch to."""

    def __init__(self, stack):
        def spy(target, name):
            return stack.enter_context(
                mock.patch.object(target, name, wraps=getattr(target, name)))

        self.inference = spy(sequence_kernels, "run_inference")
        self.training = spy(sequence_kernels, "run_recurrence")
        self.backward = spy(sequence_kernels, "_backward_loop")
        self.generic = spy(recurrent.backend, "rnn")
        # cudnn_function is a staticmethod bound when the class was made: patch it there.
        self.cudnn = {}
        for layer in (recurrent.LSTM, recurrent.GRU):
            wrapped = mock.Mock(wraps=layer.cudnn_function)
            stack.enter_context(
                mock.patch.object(layer, "cudnn_function", staticmethod(wrapped)))
            self.cudnn[layer.__name__] = wrapped

    def kinds(self, kernel):
        return [c.args[0] for c in kernel.call_args_list]


@contextlib.contextmanager
def spies():
    with contextlib.ExitStack() as stack:
        yield Spies(stack)


def _layer(name, **kwargs):
    # use_cudnn=False: on a GPU machine LSTM/GRU would otherwise (rightly) take
    # cuDNN; the cuDNN dispatch has tests of its own below. (SimpleRNN, as Keras',
    # takes no use_cudnn.)
    defaults = {} if name == "SimpleRNN" else {"use_cudnn": False}
    return getattr(zoo.layers, name)(3, **{**defaults, **kwargs})


def _run(layer, inputs, training, mask=None):
    """Call the layer (and differentiate it in training) inside the spies."""
    with spies() as s:
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs = layer(inputs, mask=mask, training=training)
            loss = sum(tf.reduce_sum(o) for o in tf.nest.flatten(outputs))
        gradients = tape.gradient(loss, [inputs] + layer.trainable_weights)
    assert all(g is not None for g in gradients)
    return s


def _assert_inference_kernel(s, kind, calls=1):
    assert s.kinds(s.inference) == [kind] * calls, "run_inference was not taken"
    assert s.training.call_count == 0
    assert s.generic.call_count == 0, "fell back to keras' generic backend.rnn"


def _assert_training_kernel(s, kind, calls=1):
    assert s.kinds(s.training) == [kind] * calls, "run_recurrence was not taken"
    # ... and its hand-written gradient ran, once per recurrence, in tape.gradient.
    assert s.backward.call_count == calls, "the hand-written backward pass did not run"
    assert s.inference.call_count == 0
    assert s.generic.call_count == 0, "fell back to keras' generic backend.rnn"


def _assert_generic_loop(s):
    assert s.generic.call_count == 1
    assert s.inference.call_count == s.training.call_count == s.backward.call_count == 0


# -- the fast paths are taken --------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_fused_kernel_is_taken(case, training, rng):
    name, kwargs, kind = case
    layer = _layer(name, return_sequences=True, **kwargs)
    s = _run(layer, _inputs(rng), training)
    if training:
        _assert_training_kernel(s, kind)
    else:
        _assert_inference_kernel(s, kind)


# Configurations the fused loops handle themselves (no reason to fall back).
FUSED_CONFIGURATIONS = {
    "mask": ({}, True),
    "go_backwards": ({"go_backwards": True}, False),
    "last_output_and_state": ({"return_sequences": False, "return_state": True}, False),
    "input_dropout": ({"dropout": 0.5}, False),
    # At inference recurrent dropout is off, so the fused loop still applies.
    "recurrent_dropout_inference": ({"recurrent_dropout": 0.5}, False),
    "zero_output_for_mask": ({"zero_output_for_mask": True, "return_sequences": True}, True),
}


@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[5]], ids=_case_id)
@pytest.mark.parametrize("configuration", list(FUSED_CONFIGURATIONS))
def test_fused_kernel_is_taken_in_every_supported_configuration(case, configuration, rng):
    name, kwargs, kind = case
    extra, masked = FUSED_CONFIGURATIONS[configuration]
    mask = _arbitrary_mask() if masked else None
    trainings = [False] if configuration == "recurrent_dropout_inference" else [False, True]
    for training in trainings:
        layer = _layer(name, **{"return_sequences": True, **kwargs, **extra})
        s = _run(layer, _inputs(rng), training, mask=mask)
        if training:
            _assert_training_kernel(s, kind)
        else:
            _assert_inference_kernel(s, kind)


@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[3], CASES[5]], ids=_case_id)
def test_bidirectional_runs_the_fused_kernel_in_both_directions(case, rng):
    name, kwargs, kind = case
    layer = keras.layers.Bidirectional(_layer(name, return_sequences=True, **kwargs))
    inputs, mask = _inputs(rng), _arbitrary_mask()
    _assert_inference_kernel(_run(layer, inputs, False, mask), kind, calls=2)
    _assert_training_kernel(_run(layer, inputs, True, mask), kind, calls=2)


def test_fit_and_predict_take_the_training_and_inference_kernels(rng):
    inputs = rng.normal(size=(4, 5, 3)).astype("float32")
    targets = rng.normal(size=(4, 2)).astype("float32")
    model = keras.Sequential([keras.Input((5, 3)), _layer("GRU"), keras.layers.Dense(2)])
    model.compile("sgd", "mse", jit_compile=False)
    with spies() as s:
        model.fit(inputs, targets, batch_size=4, epochs=1, verbose=0)
    # Counted when train_step is traced: at least once, and never anything else.
    assert s.training.call_count >= 1 and s.backward.call_count >= 1
    assert set(s.kinds(s.training)) == {"gru_reset_after"}
    assert s.inference.call_count == s.generic.call_count == 0
    with spies() as s:
        model.predict(inputs, verbose=0)
    assert s.inference.call_count >= 1 and set(s.kinds(s.inference)) == {"gru_reset_after"}
    assert s.training.call_count == s.generic.call_count == 0


# -- ... and not taken where they do not apply ----------------------------------------------

FALLBACKS = {
    # name: (layer, constructor arguments, the training modes that must fall back)
    "unroll": ("LSTM", {"unroll": True}, (False, True)),
    "unroll_simple_rnn": ("SimpleRNN", {"unroll": True}, (False, True)),
    "recurrent_dropout_training": ("GRU", {"recurrent_dropout": 0.5}, (True,)),
    "relu_simple_rnn": ("SimpleRNN", {"activation": "relu"}, (False, True)),
    "linear_lstm": ("LSTM", {"activation": None}, (False, True)),
    "hard_sigmoid_gru": ("GRU", {"recurrent_activation": "hard_sigmoid"}, (False, True)),
    "hard_sigmoid_gru_reset_before": (
        "GRU", {"recurrent_activation": "hard_sigmoid", "reset_after": False}, (False, True)),
}


@pytest.mark.parametrize("fallback", list(FALLBACKS))
def test_configurations_without_a_fused_kernel_use_the_generic_loop(fallback, rng):
    name, kwargs, trainings = FALLBACKS[fallback]
    for training in trainings:
        layer = _layer(name, return_sequences=True, **kwargs)
        _assert_generic_loop(_run(layer, _inputs(rng), training))


# -- cuDNN ------------------------------------------------------------------------------


@pytest.mark.skipif(HAS_GPU, reason="on a GPU cuDNN succeeds; see the test below")
@pytest.mark.parametrize("name,kwargs,kind", [CASES[1], CASES[3]], ids=["LSTM", "GRU"])
def test_cudnn_is_tried_first_and_falls_back_to_the_fused_kernel_on_cpu(name, kwargs, kind, rng):
    layer = _layer(name, use_cudnn="auto", return_sequences=True, **kwargs)
    for training in (False, True):
        s = _run(layer, _inputs(rng), training)
        # Tried (and refused: no GPU), then the fused kernel ran instead.
        assert s.cudnn[name].call_count == 1
        if training:
            _assert_training_kernel(s, kind)
        else:
            _assert_inference_kernel(s, kind)


@pytest.mark.parametrize(
    "name,kwargs",
    [("LSTM", {"use_cudnn": False}), ("GRU", {"use_cudnn": False}),
     ("LSTM", {"recurrent_dropout": 0.5}), ("GRU", {"recurrent_dropout": 0.5})],
    ids=["LSTM-use_cudnn=False", "GRU-use_cudnn=False", "LSTM-recurrent_dropout",
         "GRU-recurrent_dropout"],
)
def test_cudnn_is_not_tried_where_keras_would_not(name, kwargs, rng):
    layer = _layer(name, **{"use_cudnn": "auto", **kwargs})
    s = _run(layer, _inputs(rng), False)
    assert s.cudnn[name].call_count == 0
    assert s.inference.call_count == 1


def test_simple_rnn_has_no_cudnn_path(rng):
    assert recurrent.SimpleRNN.cudnn_function is None
    layer = _layer("SimpleRNN")
    assert not hasattr(layer, "use_cudnn")
    with pytest.raises(ValueError, match="Unrecognized keyword arguments passed to SimpleRNN"):
        _layer("SimpleRNN", use_cudnn="auto")
    _assert_inference_kernel(_run(layer, _inputs(rng), False), "simple_rnn")


@pytest.mark.skipif(HAS_GPU, reason="cuDNN is available here")
def test_use_cudnn_true_without_cudnn_is_an_error(rng):
    layer = _layer("LSTM", use_cudnn=True)
    with pytest.raises(ValueError, match="use_cudnn=True"):
        layer(_inputs(rng))


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU with cuDNN")
@pytest.mark.parametrize("name,kwargs", [("LSTM", {}), ("GRU", {"reset_after": True})])
def test_cudnn_is_taken_on_a_gpu(name, kwargs, rng):
    layer = _layer(name, use_cudnn="auto", return_sequences=True, **kwargs)
    for training in (False, True):
        s = _run(layer, _inputs(rng), training)
        assert s.cudnn[name].call_count == 1
        assert s.inference.call_count == s.training.call_count == s.generic.call_count == 0


@pytest.mark.skipif(not HAS_GPU, reason="needs a GPU with cuDNN")
def test_reset_before_gru_is_not_a_cudnn_gru_and_runs_fused_on_a_gpu(rng):
    layer = _layer("GRU", use_cudnn="auto", reset_after=False, return_sequences=True)
    _assert_inference_kernel(_run(layer, _inputs(rng), False), "gru_reset_before")


# -- the spies catch a silent fall-back ------------------------------------------------------


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_the_assertions_fail_when_the_dispatch_falls_back(training, rng, monkeypatch):
    """Simulate a regression that silently drops to keras' loop: the checks must fail."""
    monkeypatch.setattr(recurrent._ProjectedInputRNN, "_fused_recurrence",
                        lambda self, training: None)
    s = _run(_layer("LSTM", return_sequences=True), _inputs(rng), training)
    assert s.generic.call_count == 1  # the fall-back happened, with equal outputs...
    with pytest.raises(AssertionError):  # ... and the fast-path check notices it
        (_assert_training_kernel if training else _assert_inference_kernel)(s, "lstm")


def test_the_assertions_fail_when_training_runs_the_inference_kernel(rng, monkeypatch):
    """A regression that ignored ``training`` (no hand-written gradient) is caught too."""
    original = recurrent._ProjectedInputRNN._fused_loop
    monkeypatch.setattr(recurrent._ProjectedInputRNN, "_fused_loop",
                        lambda self, *args, **kwargs: original(self, *args[:-1], False))
    s = _run(_layer("GRU", return_sequences=True), _inputs(rng), True)
    with pytest.raises(AssertionError):
        _assert_training_kernel(s, "gru_reset_after")


# -- padded sequences: each step computes the real ones only --------------------------------


def _recording_loop(sequences, initial_states, mask, active_counts=None):
    """An inference loop that returns what it was given: its sequences as the outputs,
    and as its state the steps' counts of computed rows (-1 when it ran masked)."""
    counted = (tf.fill([tf.shape(sequences)[0]], -1) if active_counts is None
               else active_counts)
    state = tf.zeros_like(initial_states[0]) + tf.cast(tf.reduce_sum(counted), tf.float32)
    return sequences, sequences[-1], [state]


@pytest.mark.parametrize("lengths, reversed_, counts", [
    ([2, 4, 0], False, [2, 2, 1, 1]),  # right-padded, in no order, one empty
    ([2, 4, 0], True, [1, 1, 2, 2]),  # left-padded: a backward layer's reversed input
])
def test_padded_sequences_are_computed_in_packed_rows(lengths, reversed_, counts, rng):
    mask = np.arange(4)[:, None] < np.array(lengths)  # time-major [T, B]
    mask = mask[::-1] if reversed_ else mask
    sequences = tf.constant(rng.normal(size=(4, 3, 2)).astype("float32"))
    outputs, last_output, states = sequence_kernels._in_packed_rows(
        _recording_loop, sequences, [tf.zeros([3, 5])], tf.constant(mask))
    # The loop saw the sequences longest first; its results come back in their order.
    np.testing.assert_array_equal(outputs, sequences)
    np.testing.assert_array_equal(last_output, sequences[-1])
    np.testing.assert_array_equal(states[0], np.full([3, 5], sum(counts)))


def test_a_mask_that_no_order_packs_runs_the_masked_loop(rng):
    # Longest first, the second sequence is real at the last step, the first is not.
    mask = np.array([[1, 0, 0, 1], [1, 1, 1, 0], [1, 1, 0, 0]], bool).T
    sequences = tf.constant(rng.normal(size=(4, 3, 2)).astype("float32"))
    outputs, _, states = sequence_kernels._in_packed_rows(
        _recording_loop, sequences, [tf.zeros([3, 5])], tf.constant(mask))
    np.testing.assert_array_equal(outputs, sequences)
    np.testing.assert_array_equal(states[0], np.full([3, 5], -4))
