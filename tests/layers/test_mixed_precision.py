"""Mixed precision (``zoo.precision``): under Keras' ``mixed_bfloat16`` policy the zoo's
layers and translators keep float32 variables and compute in bfloat16, the attention's
softmax and the logits in float32, with finite gradients; the same numbers as float32
within bfloat16's rounding. Backend-neutral (keras.ops): CI runs this file on JAX and
PyTorch too (.ci/run)."""

import keras
import numpy as np
import pytest
from keras import ops
from testcase import outputs_and_gradients

import zoo.layers
from zoo import precision
from zoo.models import (
    AttentionSeq2Seq,
    BottleneckSeq2Seq,
    CharLanguageModel,
    TextClassifier,
)

BF16 = "bfloat16"
# bfloat16 keeps 8 bits of a number (a relative step of 2^-8, 0.4%): over a few recurrent
# steps of values below 1, a few of those steps.
ATOL = 3e-2

SEQUENCE_LAYERS = {
    "simple_rnn": (zoo.layers.SimpleRNN, {}),
    "lstm": (zoo.layers.LSTM, {}),
    "gru": (zoo.layers.GRU, {}),
    "gru_reset_before": (zoo.layers.GRU, {"reset_after": False}),
}


def _dtype(tensor):
    return keras.backend.standardize_dtype(tensor.dtype)


def _numpy(tensor):
    return np.asarray(ops.convert_to_numpy(ops.cast(tensor, "float32")))


def _twins(make):
    """``(float32 object, mixed_bfloat16 object)`` of ``make()``, the mixed one built
    with the float32 one's weights."""
    plain = make()
    with precision.policy("mixed_bfloat16"):
        mixed = make()
    mixed.set_weights(plain.get_weights())
    return plain, mixed


def _sequences(rng, batch=3, steps=6, features=5):
    inputs = rng.normal(size=(batch, steps, features)).astype("float32")
    mask = np.ones((batch, steps), bool)
    mask[0, 4:] = False  # padding: masked steps keep the state
    return inputs, mask


def test_precision_names_what_it_received_and_what_it_accepts():
    with pytest.raises(ValueError) as error:
        precision.check("bfloat16", "--precision")
    assert str(error.value) == ("--precision must be one of float32, mixed_bfloat16; "
                                "received 'bfloat16'.")
    with pytest.raises(ValueError, match="received 'mixed_float16'"), \
            precision.policy("mixed_float16"):
        pass


def test_the_policy_holds_inside_the_block_only():
    before = keras.config.dtype_policy().name
    with precision.policy("mixed_bfloat16"):
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
    assert keras.config.dtype_policy().name == before
    with pytest.raises(RuntimeError), precision.policy("mixed_bfloat16"):
        raise RuntimeError("inside")
    assert keras.config.dtype_policy().name == before  # restored on an error too


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", list(SEQUENCE_LAYERS))
def test_sequence_layers_keep_float32_weights_and_compute_in_bfloat16(name, training, rng):
    layer_class, options = SEQUENCE_LAYERS[name]
    plain, mixed = _twins(lambda: _built(layer_class(
        8, return_sequences=True, return_state=True, **options), (None, None, 5)))
    inputs, mask = _sequences(rng)
    expected = plain(inputs, mask=mask, training=training)
    outputs = mixed(inputs, mask=mask, training=training)
    assert {v.dtype for v in mixed.weights} == {"float32"}
    assert [_dtype(o) for o in outputs] == [BF16] * len(outputs)
    for got, want in zip(outputs, expected):
        np.testing.assert_allclose(_numpy(got), _numpy(want), atol=ATOL)


def _built(layer, shape):
    layer.build(shape)
    return layer


@pytest.mark.parametrize("name", list(SEQUENCE_LAYERS))
def test_sequence_layers_gradients_are_finite_float32_and_near_float32s(name, rng):
    layer_class, options = SEQUENCE_LAYERS[name]
    plain, mixed = _twins(lambda: _built(layer_class(8, return_sequences=True, **options),
                                         (None, None, 5)))
    inputs, mask = _sequences(rng)

    def loss_of(layer):
        def function(x):
            outputs = layer(x, mask=mask, training=True)
            return outputs, ops.sum(ops.cast(outputs, "float32") ** 2)
        return function

    _, want = outputs_and_gradients(loss_of(plain), [inputs], plain.trainable_weights)
    _, got = outputs_and_gradients(loss_of(mixed), [inputs], mixed.trainable_weights)
    for gradient, expected in zip(got[1:], want[1:]):  # the variables' gradients
        assert gradient.dtype == np.float32
        assert np.isfinite(gradient).all()
        scale = np.abs(expected).max()
        np.testing.assert_allclose(gradient, expected, atol=0.05 * scale)


@pytest.mark.parametrize("cell_class", [zoo.layers.SimpleRNNCell, zoo.layers.LSTMCell,
                                        zoo.layers.GRUCell])
def test_cells_step_in_bfloat16(cell_class, rng):
    plain, mixed = _twins(lambda: _built(cell_class(8), (None, 5)))
    inputs = rng.normal(size=(3, 5)).astype("float32")
    states = mixed.get_initial_state(3)
    assert [_dtype(s) for s in states] == [BF16] * len(states)
    output, new_states = mixed(inputs, states)
    expected, _ = plain(inputs, plain.get_initial_state(3))
    assert _dtype(output) == BF16
    assert {_dtype(s) for s in keras.tree.flatten(new_states)} == {BF16}
    np.testing.assert_allclose(_numpy(output), _numpy(expected), atol=ATOL)


@pytest.mark.parametrize("make", [
    lambda: zoo.layers.BahdanauAttention(6),
    lambda: zoo.layers.BahdanauAttention(6, normalize=True),
    lambda: zoo.layers.LuongAttention(score="general", scale=True),
    lambda: zoo.layers.LuongAttention(6, score="concat"),
], ids=["bahdanau", "bahdanau_normalized", "luong_general", "luong_concat"])
def test_attention_softmax_runs_in_float32_and_its_weights_come_in_bfloat16(make, rng):
    query = rng.normal(size=(3, 4, 7)).astype("float32")
    memory = rng.normal(size=(3, 5, 7)).astype("float32")
    mask = np.ones((3, 5), bool)
    mask[1, 3:] = False
    mask[2] = False  # no real position: zero weights, zero context

    def make_built():
        layer = make()
        layer.build(query.shape, memory.shape)
        return layer

    plain, mixed = _twins(make_built)
    context, weights = mixed(query, memory, memory_mask=mask)
    expected_context, expected_weights = plain(query, memory, memory_mask=mask)
    assert (_dtype(context), _dtype(weights)) == (BF16, BF16)
    assert {v.dtype for v in mixed.weights} == {"float32"}
    weights = _numpy(weights)
    np.testing.assert_array_equal(weights[1, :, 3:], 0.0)  # padding gets exactly 0
    np.testing.assert_array_equal(weights[2], 0.0)
    # Normalised in float32, then rounded once to bfloat16: each row sums to 1 within
    # that one rounding of its terms.
    np.testing.assert_allclose(weights[:2].sum(-1), 1.0, atol=1e-2)
    np.testing.assert_allclose(weights, _numpy(expected_weights), atol=ATOL)
    np.testing.assert_allclose(_numpy(context), _numpy(expected_context), atol=3 * ATOL)


def _translator(model_class):
    model = model_class("zh", "en", 30, 40, embedding_dim=8, units=8, dropout=0.0)
    model.build()
    return model


def _ids(rng):
    source = rng.integers(4, 30, (3, 7)).astype("int32")
    source[0, 5:] = 0
    target_in = rng.integers(4, 40, (3, 6)).astype("int32")
    target_in[1, 4:] = 0
    return source, target_in


@pytest.mark.parametrize("model_class", [AttentionSeq2Seq, BottleneckSeq2Seq])
def test_translators_compute_in_bfloat16_with_float32_logits(model_class, rng):
    plain, mixed = _twins(lambda: _translator(model_class))
    source, target_in = _ids(rng)
    state = mixed.encode(source)
    assert {_dtype(state[key]) for key in mixed.recurrent_state} == {BF16}
    logits = mixed((source, target_in))
    assert _dtype(logits) == "float32"  # what the loss reads, as Keras advises
    assert {v.dtype for v in mixed.weights} == {"float32"}
    expected = _numpy(plain((source, target_in)))
    np.testing.assert_allclose(_numpy(logits), expected, atol=0.05 * np.abs(expected).max())
    if model_class.has_attention:
        # As a training view (guided alignment) calls it: inside its autocast scope.
        with precision.autocasting(mixed):
            _, attention = mixed.decode_teacher_forced(target_in, state, return_attention=True)
        assert _dtype(attention) == BF16


@pytest.mark.parametrize("model_class", [AttentionSeq2Seq, BottleneckSeq2Seq])
def test_translators_gradients_are_finite_and_float32(model_class, rng):
    from zoo.models.losses import SmoothedCrossentropy

    plain, mixed = _twins(lambda: _translator(model_class))
    source, target_in = _ids(rng)
    target_out = np.roll(target_in, -1, axis=1)
    loss = SmoothedCrossentropy(0.1)

    def loss_of(model):
        def function():
            logits = model((source, target_in), training=True)
            return logits, loss(target_out, logits)
        return function

    _, want = outputs_and_gradients(loss_of(plain), [], plain.trainable_weights)
    _, got = outputs_and_gradients(loss_of(mixed), [], mixed.trainable_weights)
    for gradient, expected in zip(got, want):
        assert gradient.dtype == np.float32
        assert np.isfinite(gradient).all()
        np.testing.assert_allclose(gradient, expected, atol=0.1 * np.abs(expected).max() + 1e-6)


def _built_model(make):
    model = make()
    model.build()
    return model


@pytest.mark.parametrize("make", [
    lambda: AttentionSeq2Seq("zh", "en", 30, 40, embedding_dim=8, units=8),
    lambda: BottleneckSeq2Seq("zh", "en", 30, 40, embedding_dim=8, units=8),
    lambda: CharLanguageModel(30, cell="gru", embedding_dim=8, units=8, num_layers=2),
    lambda: TextClassifier(30, embedding_dim=8, units=8),
], ids=["attention", "bottleneck", "language_model", "classifier"])
def test_a_mixed_model_copies_to_float32_with_the_same_weights(make):
    with precision.policy("mixed_bfloat16"):
        mixed = _built_model(make)
    copy = precision.float32_copy(mixed)
    assert copy is not mixed and copy.dtype_policy.name == "float32"
    assert {layer.dtype_policy.name for layer in copy._flatten_layers()} == {"float32"}
    assert len(copy.weights) == len(mixed.weights)
    for ours, theirs in zip(copy.get_weights(), mixed.get_weights()):
        np.testing.assert_array_equal(ours, theirs)
    assert copy.get_config() == {**mixed.get_config(), "dtype": copy.get_config()["dtype"]}
    plain = _built_model(make)
    assert precision.float32_copy(plain) is plain


def _products(jaxpr):
    """The operand dtypes of every matrix product in a jaxpr, its loops' bodies included."""
    found = []
    for equation in jaxpr.eqns:
        if equation.primitive.name == "dot_general":
            found.append(tuple(str(v.aval.dtype) for v in equation.invars))
        for value in equation.params.values():
            for inner in value if isinstance(value, (list, tuple)) else [value]:
                inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's Jaxpr
                if hasattr(inner, "eqns"):
                    found += _products(inner)
    return found


@pytest.mark.parametrize("model_class", [AttentionSeq2Seq, BottleneckSeq2Seq])
def test_jax_training_step_makes_every_product_in_bfloat16(model_class, rng):
    """Keras' JAX trainer runs ``stateless_call``, which skips the autocast scope of
    ``__call__``: the variables a model reads itself (the tied output embedding, the
    decoder cell's kernels in its loop) must still come in bfloat16
    (``precision.StatelessAutocast``), or the products around them run in float32."""
    if keras.backend.backend() != "jax":
        pytest.skip("JAX's training step (stateless_call)")
    import jax

    with precision.policy("mixed_bfloat16"):
        model = _translator(model_class)
    source, target_in = _ids(rng)
    fixed = [v.value for v in model.non_trainable_variables]

    def forward(values):
        return model.stateless_call(values, fixed, (source, target_in), training=True)[0]

    traced = jax.make_jaxpr(forward)([v.value for v in model.trainable_variables])
    products = _products(traced.jaxpr)
    assert products and set(products) == {(BF16, BF16)}
    assert str(traced.out_avals[0].dtype) == "float32"  # the logits
