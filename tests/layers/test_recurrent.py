"""zoo.layers.recurrent: the sequence layers SimpleRNN, LSTM and GRU against Keras and by hand.

(Their cells alone: tests/layers/test_cells.py.)
"""

import keras
import numpy as np
import pytest
import zoo.layers

from testcase import outputs_and_gradients, run_serialization_test

TENSORFLOW_ONLY = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                     reason="tf.function graphs: the TensorFlow backend")

CASES = [
    ("SimpleRNN", {}),
    ("LSTM", {}),
    ("GRU", {"reset_after": True}),
    ("GRU", {"reset_after": False}),
    ("LSTM", {"use_bias": False}),
    ("GRU", {"use_bias": False}),
]


def _case_id(case):
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


def _masks():
    right_padded = np.ones((3, 7), bool)
    right_padded[1, 5:] = False
    right_padded[2, 2:] = False
    arbitrary = np.ones((3, 7), bool)
    arbitrary[0, [0, 1]] = False  # leading masked steps
    arbitrary[2, [3, 5]] = False
    # Not ordered by length, one sequence empty: the inference loop reorders them to
    # compute each step's real sequences only (sequence_kernels._in_packed_rows).
    unordered = np.arange(7) < np.array([[2], [7], [0]])
    return {"none": None, "right_padded": right_padded, "arbitrary": arbitrary,
            "right_padded_unordered": unordered, "left_padded": unordered[:, ::-1].copy()}


MASK_NAMES = list(_masks())


def _outputs_and_gradients(layer, inputs, mask, initial_state, training):
    initial_state = list(initial_state or [])

    def run(inputs, *initial_state):
        outputs = layer(inputs, mask=mask, initial_state=list(initial_state) or None,
                        training=training)
        outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
        # Weight every output element differently, so that no gradient term cancels.
        weights = [np.arange(1, 1 + o.shape[-1], dtype="float32") / o.shape[-1] for o in outputs]
        return outputs, sum(keras.ops.sum(keras.ops.multiply(o, w)) for o, w in zip(outputs, weights))

    outputs, gradients = outputs_and_gradients(
        run, [inputs] + initial_state, layer.trainable_weights)
    # The order of the sources as before: inputs, weights, initial states.
    count = 1 + len(initial_state)
    return outputs, gradients[:1] + gradients[count:] + gradients[1:count]


def _pair(name, **kwargs):
    ours = getattr(zoo.layers, name)(4, **kwargs)
    theirs = getattr(keras.layers, name)(4, **kwargs)
    return ours, theirs


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("mask_name", MASK_NAMES)
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("training", [False, True])
def test_sequence_layer_matches_keras(case, mask_name, go_backwards, training, rng):
    _assert_matches_keras(case, mask_name, go_backwards, training, rng)


@TENSORFLOW_ONLY  # the layouts are those of the TensorFlow kernels
@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("mask_name", MASK_NAMES)
@pytest.mark.parametrize("go_backwards", [False, True])
def test_batch_major_inference_matches_keras(case, mask_name, go_backwards, rng, monkeypatch):
    """The suite runs the feature-major inference loop (conftest); the other layout too."""
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "batch_major")
    _assert_matches_keras(case, mask_name, go_backwards, False, rng)


def _assert_matches_keras(case, mask_name, go_backwards, training, rng):
    name, kwargs = case
    inputs = rng.normal(size=(3, 7, 5)).astype("float32")
    mask = _masks()[mask_name]
    num_states = 2 if name == "LSTM" else 1
    initial_state = [rng.normal(size=(3, 4)).astype("float32") for _ in range(num_states)]
    ours, theirs = _pair(
        name, return_sequences=True, return_state=True, go_backwards=go_backwards, **kwargs
    )
    ours(inputs)
    theirs(inputs)
    theirs.set_weights(ours.get_weights())

    our_out, our_grads = _outputs_and_gradients(ours, inputs, mask, initial_state, training)
    their_out, their_grads = _outputs_and_gradients(theirs, inputs, mask, initial_state, training)

    assert len(our_out) == len(their_out) == 1 + num_states
    for a, b in zip(our_out, their_out):
        np.testing.assert_allclose(a, b, atol=1e-5)
    for a, b in zip(our_grads, their_grads):
        np.testing.assert_allclose(a, b, atol=1e-4)


@pytest.mark.parametrize("case", CASES[:4], ids=_case_id)
@pytest.mark.parametrize("return_sequences", [False, True])
def test_bidirectional_matches_keras(case, return_sequences, rng):
    name, kwargs = case
    inputs = rng.normal(size=(3, 7, 5)).astype("float32")
    mask = _masks()["right_padded"]
    ours = keras.layers.Bidirectional(
        getattr(zoo.layers, name)(4, return_sequences=return_sequences, **kwargs)
    )
    theirs = keras.layers.Bidirectional(
        getattr(keras.layers, name)(4, return_sequences=return_sequences, **kwargs)
    )
    ours(inputs)
    theirs(inputs)
    theirs.set_weights(ours.get_weights())
    for training in (False, True):
        a, grads_a = _outputs_and_gradients(ours, inputs, mask, None, training)
        b, grads_b = _outputs_and_gradients(theirs, inputs, mask, None, training)
        np.testing.assert_allclose(a[0], b[0], atol=1e-5)
        for ga, gb in zip(grads_a, grads_b):
            np.testing.assert_allclose(ga, gb, atol=1e-4)


# -- numbers computed by hand from the equations --------------------------------------


def _constant_layer(layer, value, inputs):
    layer(inputs)
    layer.set_weights([np.full(w.shape, value, "float32") for w in layer.get_weights()])
    return layer


def test_simple_rnn_by_hand():
    # x = [1, 2] (one feature), W = U = b = 0.5, h0 = 0:
    # h1 = tanh(0.5*1 + 0.5) = tanh(1); h2 = tanh(0.5*2 + 0.5*tanh(1) + 0.5)
    inputs = np.array([[[1.0], [2.0]]], "float32")
    layer = _constant_layer(zoo.layers.SimpleRNN(1, return_sequences=True), 0.5, inputs)
    h1 = np.tanh(1.0)
    h2 = np.tanh(1.0 + 0.5 * h1 + 0.5)
    np.testing.assert_allclose(np.array(layer(inputs))[0, :, 0], [h1, h2], atol=1e-6)


def test_lstm_by_hand():
    # One unit, all weights and biases 0.1 (unit_forget_bias off), x = [1, 1]:
    # step 1: every gate pre-activation is 0.1*1 + 0.1*0 + 0.1 = 0.2
    inputs = np.ones((1, 2, 1), "float32")
    layer = _constant_layer(
        zoo.layers.LSTM(1, return_sequences=True, return_state=True, unit_forget_bias=False),
        0.1,
        inputs,
    )
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    c1 = sig(0.2) * np.tanh(0.2)  # f*0 + i*g
    h1 = sig(0.2) * np.tanh(c1)
    z2 = 0.1 + 0.1 * h1 + 0.1
    c2 = sig(z2) * c1 + sig(z2) * np.tanh(z2)
    h2 = sig(z2) * np.tanh(c2)
    outputs, h, c = layer(inputs)
    np.testing.assert_allclose(np.array(outputs)[0, :, 0], [h1, h2], atol=1e-6)
    np.testing.assert_allclose([float(h[0, 0]), float(c[0, 0])], [h2, c2], atol=1e-6)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_by_hand(reset_after):
    # One unit, weights 0.2, biases 0.2 (both halves when reset_after), x = [1, 1].
    inputs = np.ones((1, 2, 1), "float32")
    layer = _constant_layer(
        zoo.layers.GRU(1, return_sequences=True, reset_after=reset_after), 0.2, inputs
    )
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    recurrent_bias = 0.2 if reset_after else 0.0
    h, expected = 0.0, []
    for x in (1.0, 1.0):
        z = sig(0.2 * x + 0.2 + 0.2 * h + recurrent_bias)
        r = sig(0.2 * x + 0.2 + 0.2 * h + recurrent_bias)
        if reset_after:
            n = np.tanh(0.2 * x + 0.2 + r * (0.2 * h + 0.2))
        else:
            n = np.tanh(0.2 * x + 0.2 + 0.2 * (r * h))
        h = z * h + (1 - z) * n
        expected.append(h)
    np.testing.assert_allclose(np.array(layer(inputs))[0, :, 0], expected, atol=1e-6)


# -- drop-in compatibility ------------------------------------------------------------


@pytest.mark.parametrize("name", ["SimpleRNN", "LSTM", "GRU"])
def test_accepts_every_keras_constructor_argument(name):
    kwargs = {
        "kernel_initializer": "he_normal",
        "recurrent_initializer": "glorot_uniform",
        "bias_initializer": "ones",
        "kernel_regularizer": "l2",
        "recurrent_regularizer": "l1",
        "bias_regularizer": "l2",
        "activity_regularizer": "l2",
        "kernel_constraint": "max_norm",
        "recurrent_constraint": "unit_norm",
        "bias_constraint": "non_neg",
        "dropout": 0.1,
        "recurrent_dropout": 0.1,
        "seed": 3,
        "use_bias": True,
        "return_sequences": True,
        "return_state": False,
        "go_backwards": False,
        "stateful": False,
        "unroll": True,
    }
    if name != "SimpleRNN":
        kwargs.update(recurrent_activation="hard_sigmoid", implementation=1, use_cudnn=False)
    if name == "LSTM":
        kwargs["unit_forget_bias"] = False
    if name == "GRU":
        kwargs["reset_after"] = False
    ours = getattr(zoo.layers, name)(3, **kwargs)
    theirs = getattr(keras.layers, name)(3, **kwargs)
    inputs = np.ones((2, 4, 5), "float32")
    ours(inputs)
    theirs(inputs)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours(inputs), theirs(inputs), atol=1e-5)
    # 3 weight regularizers + the activity regularizer. keras.layers.SimpleRNN
    # documents activity_regularizer but drops it; the zoo layer applies it.
    assert len(ours.losses) == 4
    assert len(theirs.losses) == (3 if name == "SimpleRNN" else 4)
    our_config, their_config = ours.get_config(), theirs.get_config()
    known_differences = {"name"} | ({"activity_regularizer"} if name == "SimpleRNN" else set())
    for key in their_config:
        if key not in known_differences:
            assert key in our_config, key
            assert our_config[key] == their_config[key], key
    assert ours.units == 3 and ours.dropout == 0.1


def test_stateful_layer_carries_state_between_calls(rng):
    inputs = rng.normal(size=(2, 6, 3)).astype("float32")
    stateful = zoo.layers.GRU(4, stateful=True)
    whole = zoo.layers.GRU(4)
    stateful(inputs[:, :3])
    whole(inputs)
    whole.set_weights(stateful.get_weights())
    stateful.reset_state()
    stateful(inputs[:, :3])
    np.testing.assert_allclose(stateful(inputs[:, 3:]), whole(inputs), atol=1e-6)


def test_invalid_units_message():
    with pytest.raises(ValueError, match=r"`units` must be a positive integer; received units=0"):
        zoo.layers.LSTM(0)
    with pytest.raises(ValueError, match="use_cudnn"):
        zoo.layers.GRU(3, use_cudnn="maybe")


def test_dropout_is_active_in_training_only(rng):
    inputs = rng.normal(size=(4, 5, 6)).astype("float32")
    layer = zoo.layers.LSTM(8, dropout=0.5, recurrent_dropout=0.5)
    inference = [np.array(layer(inputs)) for _ in range(2)]
    training = [np.array(layer(inputs, training=True)) for _ in range(2)]
    np.testing.assert_array_equal(inference[0], inference[1])
    assert np.abs(training[0] - training[1]).max() > 1e-3
    assert np.abs(training[0] - inference[0]).max() > 1e-3


# -- serialization --------------------------------------------------------------------


LAYER_FACTORIES = {
    "SimpleRNN": lambda: zoo.layers.SimpleRNN(4, return_sequences=True, go_backwards=True),
    "LSTM": lambda: zoo.layers.LSTM(4, return_state=True, dropout=0.1),
    "GRU": lambda: zoo.layers.GRU(4, reset_after=False, recurrent_activation="hard_sigmoid"),
    "BiLSTM": lambda: keras.layers.Bidirectional(zoo.layers.LSTM(4, return_sequences=True)),
}


@pytest.mark.parametrize("name", sorted(LAYER_FACTORIES))
def test_config_round_trip_and_keras_file(name, tmp_path, rng):
    inputs = rng.normal(size=(2, 5, 3)).astype("float32")

    def model():
        model_in = keras.Input((5, 3))
        return keras.Model(model_in, LAYER_FACTORIES[name]()(model_in))

    run_serialization_test(LAYER_FACTORIES[name](), lambda layer: layer(inputs), model, inputs,
                           tmp_path / "model.keras", atol=1e-6)


@TENSORFLOW_ONLY
@pytest.mark.parametrize("case", CASES[:4], ids=_case_id)
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("mask_name", ["arbitrary", "right_padded_unordered"])
def test_unknown_batch_and_time_in_a_graph(case, training, mask_name, rng):
    import tensorflow as tf

    signature = [tf.TensorSpec([None, None, 5], tf.float32), tf.TensorSpec([None, None], tf.bool)]
    _assert_graph_matches_keras(case, mask_name, training, rng, input_signature=signature)


@TENSORFLOW_ONLY
@pytest.mark.parametrize("case", CASES[:4], ids=_case_id)
def test_padded_sequences_in_a_graph_that_xla_compiles(case, rng):
    """XLA needs every loop shape static: there the inference loop runs masked."""
    _assert_graph_matches_keras(case, "right_padded_unordered", False, rng, jit_compile=True)


def _assert_graph_matches_keras(case, mask_name, training, rng, **function_options):
    import tensorflow as tf

    name, kwargs = case
    ours, theirs = _pair(name, return_sequences=True, return_state=True, **kwargs)
    inputs = rng.normal(size=(3, 7, 5)).astype("float32")
    mask = _masks()[mask_name]
    ours(inputs)
    theirs(inputs)
    theirs.set_weights(ours.get_weights())
    graph_ours = tf.function(lambda x, m: ours(x, mask=m, training=training), **function_options)
    for a, b in zip(graph_ours(inputs, mask), theirs(inputs, mask=mask, training=training)):
        np.testing.assert_allclose(a, b, atol=1e-5)
