"""Mixed precision (``zoo.precision``): under Keras' ``mixed_bfloat16`` policy the zoo's
layers and translators keep float32 variables and compute in bfloat16, the attention's
softmax, the additive attention's score and the logits in float32, the recurrent states
and the gates' arithmetic in float32 too (only the products in bfloat16), with finite
gradients; the same numbers as float32 within bfloat16's rounding. Backend-neutral
(keras.ops): CI runs this file on JAX and PyTorch too (.ci/run)."""

import keras
import numpy as np
import pytest
from keras import ops
from testcase import outputs_and_gradients

import zoo.layers
from zoo import precision
from zoo.layers import blocks
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


CELLS = {
    "simple_rnn": lambda: zoo.layers.SimpleRNNCell(8),
    "lstm": lambda: zoo.layers.LSTMCell(8),
    "gru": lambda: zoo.layers.GRUCell(8),
    "gru_reset_before": lambda: zoo.layers.GRUCell(8, reset_after=False),
}


@pytest.fixture
def product_dtypes(monkeypatch):
    """The dtypes of the operands of every matrix product a cell makes (``ops.matmul``,
    and ``blocks.row_product``, which a step of one row takes on TensorFlow)."""
    seen = []

    def spy(function):
        def spied(a, b, *args, **kwargs):
            seen.append((_dtype(a), _dtype(b)))
            return function(a, b, *args, **kwargs)
        return spied

    monkeypatch.setattr(keras.ops, "matmul", spy(keras.ops.matmul))
    monkeypatch.setattr(blocks, "row_product", spy(blocks.row_product))
    return seen


@pytest.mark.parametrize("name", list(CELLS))
def test_cells_multiply_in_bfloat16_and_carry_float32_states(name, rng, product_dtypes):
    plain, mixed = _twins(lambda: _built(CELLS[name](), (None, 5)))
    inputs = rng.normal(size=(3, 5)).astype("float32")
    states = mixed.get_initial_state(3)
    assert [_dtype(s) for s in states] == ["float32"] * len(states)
    output, new_states = mixed(inputs, states)
    assert product_dtypes and set(product_dtypes) == {(BF16, BF16)}
    expected, _ = plain(inputs, plain.get_initial_state(3))
    assert _dtype(output) == "float32"
    assert {_dtype(s) for s in keras.tree.flatten(new_states)} == {"float32"}
    np.testing.assert_allclose(_numpy(output), _numpy(expected), atol=ATOL)
    # A loop that carries bfloat16 states (keras.layers.RNN's) gets them back so.
    _, new_states = mixed(inputs, [ops.cast(s, BF16) for s in states])
    assert {_dtype(s) for s in keras.tree.flatten(new_states)} == {BF16}


@pytest.mark.parametrize("name", list(CELLS))
def test_cells_run_in_keras_own_loop(name, rng):
    plain, mixed = _twins(lambda: _built(keras.layers.RNN(CELLS[name](), return_state=True),
                                         (None, None, 5)))
    inputs, mask = _sequences(rng)
    outputs = mixed(inputs, mask=mask)
    assert [_dtype(o) for o in outputs] == [BF16] * len(outputs)
    for got, want in zip(outputs, plain(inputs, mask=mask)):
        np.testing.assert_allclose(_numpy(got), _numpy(want), atol=ATOL)


def _near_one_gate(cell, offset):
    """``cell``'s weights with its update gate (GRU: z) or forget gate (LSTM: f, and its
    input gate near 0) saturated by a bias of ``offset``: at 8 the state moves by a few
    parts in 10^4 a step, less than half a bfloat16 step (2^-9) of a state between 0.5
    and 1."""
    weights = cell.get_weights()
    bias = weights[2]
    units = cell.units
    if isinstance(cell, zoo.layers.LSTMCell):
        bias[:units] = -offset  # i
        bias[units:2 * units] = offset  # f
    else:
        (bias[0] if bias.ndim == 2 else bias)[:units] = offset  # z (a reset-after GRU's input half)
    return weights


@pytest.mark.parametrize("name", ["lstm", "gru", "gru_reset_before"])
def test_a_state_keeps_an_update_smaller_than_bfloat16s_step(name, rng):
    plain, mixed = _twins(lambda: _built(CELLS[name](), (None, 5)))
    weights = _near_one_gate(plain, 8.0)
    plain.set_weights(weights)
    mixed.set_weights(weights)
    inputs = rng.normal(size=(4, 5)).astype("float32")
    states = [rng.uniform(0.5, 1.0, size=(4, 8)).astype("float32")
              for _ in plain.get_initial_state(4)]
    _, want = plain(inputs, states)
    _, got = mixed(inputs, states)
    state, want, got = states[-1], _numpy(want[-1]), _numpy(got[-1])  # h (GRU), c (LSTM)
    update = np.abs(want - state)
    assert 1e-5 < update.max() < 2.0 ** -9  # each update under half a bfloat16 step
    # The mixed cell's step agrees with float32's to a few hundredths of the update (its
    # products' rounding), far inside bfloat16's 2^-8 of the state, which would lose the
    # update altogether.
    np.testing.assert_allclose(got, want, rtol=0, atol=2.0 ** -14)
    assert (np.abs(got - state) > 0.5 * update).all()


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("name", ["lstm", "gru", "gru_reset_before"])
def test_sequence_layers_accumulate_small_updates_over_many_steps(name, training, rng):
    """Every loop that runs a cell (Keras' on JAX and PyTorch, the fused kernels' on
    TensorFlow) carries its states in float32: 64 updates each below bfloat16's step add
    up as in float32; a bfloat16 state would not move from where it started."""
    layer_class, options = SEQUENCE_LAYERS[name]
    plain, mixed = _twins(lambda: _built(layer_class(8, return_state=True, **options),
                                         (None, None, 5)))
    weights = _near_one_gate(plain.cell, 7.0)
    plain.set_weights(weights)
    mixed.set_weights(weights)
    inputs = rng.normal(size=(4, 64, 5)).astype("float32")
    start = [rng.uniform(0.5, 1.0, size=(4, 8)).astype("float32")
             for _ in plain.cell.get_initial_state(4)]
    want = _numpy(plain(inputs, initial_state=start, training=training)[-1])
    got = _numpy(mixed(inputs, initial_state=start, training=training)[-1])
    moved = np.abs(want - start[-1])
    assert moved.mean() > 4 * 2.0 ** -8  # well past what bfloat16 steps would lose
    # the start and the end rounded once each to bfloat16 (what the layer takes and returns)
    np.testing.assert_allclose(got, want, rtol=0, atol=2.0 ** -7)


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


@pytest.mark.parametrize("make", [
    lambda: zoo.layers.BahdanauAttention(6),
    lambda: zoo.layers.BahdanauAttention(6, normalize=True),
    lambda: zoo.layers.LuongAttention(6, score="concat"),
], ids=["bahdanau", "bahdanau_normalized", "luong_concat"])
def test_additive_scores_run_in_float32_on_bfloat16_products(make, rng):
    query = rng.normal(size=(3, 4, 7)).astype("float32")
    memory = rng.normal(size=(3, 5, 7)).astype("float32")

    def make_built():
        layer = make()
        layer.build(query.shape, memory.shape)
        return layer

    plain, mixed = _twins(make_built)
    # The memory as a mixed encoder hands it over; the keys it makes once per sentence
    # are float32, and so are the scores made from them at every step.
    keys = mixed.project_keys(ops.cast(memory, BF16))
    scores = mixed.score(ops.cast(query, BF16), keys)
    assert (_dtype(keys), _dtype(scores)) == ("float32", "float32")
    expected = _numpy(plain.score(query, plain.project_keys(memory)))
    # Only the products' inputs rounded to bfloat16 (8 bits): the scores of 6 tanh units
    # move by a few of bfloat16's steps, not by the many of a bfloat16 tanh and sum.
    np.testing.assert_allclose(_numpy(scores), expected, atol=2e-2)


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
    # the decoder's states, carried in float32 as its cell carries them
    assert {_dtype(state[key]) for key in mixed.recurrent_state} == {"float32"}
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
    copy = precision.copy_in(mixed, "float32")
    assert copy is not mixed and copy.dtype_policy.name == "float32"
    assert {layer.dtype_policy.name for layer in copy._flatten_layers()} == {"float32"}
    assert len(copy.weights) == len(mixed.weights)
    for ours, theirs in zip(copy.get_weights(), mixed.get_weights()):
        np.testing.assert_array_equal(ours, theirs)
    assert copy.get_config() == {**mixed.get_config(), "dtype": copy.get_config()["dtype"]}
    plain = _built_model(make)
    assert precision.copy_in(plain, "float32") is plain


@pytest.mark.parametrize("make", [
    lambda: AttentionSeq2Seq("zh", "en", 30, 40, embedding_dim=8, units=8),
    lambda: CharLanguageModel(30, cell="gru", embedding_dim=8, units=8, num_layers=2),
], ids=["attention", "language_model"])
def test_a_float32_model_copies_into_mixed_precision_to_fine_tune(make):
    plain = _built_model(make)
    mixed = precision.copy_in(plain, "mixed_bfloat16")
    assert mixed.dtype_policy.name == "mixed_bfloat16"
    assert {layer.dtype_policy.name for layer in mixed._flatten_layers()} == {"mixed_bfloat16"}
    assert {v.dtype for v in mixed.weights} == {"float32"}  # the master weights
    for ours, theirs in zip(mixed.get_weights(), plain.get_weights()):
        np.testing.assert_array_equal(ours, theirs)
    assert precision.copy_in(mixed, "mixed_bfloat16") is mixed
    with pytest.raises(ValueError, match="precision must be one of float32, mixed_bfloat16; "
                                         "received 'bf16'"):
        precision.copy_in(plain, "bf16")


def _products(jaxpr):
    """The operands' ``(dtype, shape)`` of every matrix product in a jaxpr, its loops'
    bodies included."""
    found = []
    for equation in jaxpr.eqns:
        if equation.primitive.name == "dot_general":
            found.append(tuple((str(v.aval.dtype), tuple(v.aval.shape))
                               for v in equation.invars))
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
    # The one product in float32 by design: the additive score's with its vector v
    # ([..., units] by [units]: ``attention.additive_scores``).
    units = getattr(getattr(model, "attention", None), "units", None)
    score_vector = [product for product in products if product[1] == ("float32", (units,))]
    assert len(score_vector) == model_class.has_attention
    dtypes = {tuple(dtype for dtype, _ in product) for product in products
              if product not in score_vector}
    assert dtypes == {(BF16, BF16)}
    assert str(traced.out_avals[0].dtype) == "float32"  # the logits
