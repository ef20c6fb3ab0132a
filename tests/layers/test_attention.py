"""zoo.layers.BahdanauAttention and LuongAttention."""

import keras
import numpy as np
import pytest

import zoo.layers

from testcase import run_serialization_test

ATTENTIONS = {
    "bahdanau": lambda: zoo.layers.BahdanauAttention(6),
    "bahdanau_normalized": lambda: zoo.layers.BahdanauAttention(6, normalize=True),
    "luong_dot": lambda: zoo.layers.LuongAttention(score="dot"),
    "luong_general_scaled": lambda: zoo.layers.LuongAttention(score="general", scale=True),
    "luong_concat": lambda: zoo.layers.LuongAttention(5, score="concat"),
}


@pytest.fixture
def batch(rng):
    query = rng.normal(size=(3, 4)).astype("float32")
    memory = rng.normal(size=(3, 6, 4)).astype("float32")
    mask = np.array(
        [[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], dtype=bool
    )
    return query, memory, mask


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_masked_positions_get_zero_weight_and_rows_sum_to_one(name, batch):
    query, memory, mask = batch
    context, weights = ATTENTIONS[name]()(query, memory, memory_mask=mask)
    weights = np.array(weights)
    assert weights.shape == (3, 6) and context.shape == (3, 4)
    assert np.all(weights[~mask] == 0.0)  # exactly zero, not just small
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(context, np.einsum("bs,bsd->bd", weights, memory), atol=1e-5)
    np.testing.assert_allclose(context[2], memory[2, 0], atol=1e-6)  # one real position


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_cached_keys_equal_uncached(name, batch):
    query, memory, mask = batch
    attention = ATTENTIONS[name]()
    uncached = attention(query, memory, memory_mask=mask)
    keys = attention.project_keys(memory)
    cached = attention(query, memory, keys=keys, memory_mask=mask)
    for a, b in zip(uncached, cached):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_project_keys_before_build_says_how_to_build(name, batch):
    query, memory, mask = batch
    attention = ATTENTIONS[name]()
    with pytest.raises(ValueError, match=r"project_keys needs the layer built.*"
                                         r"attention\.build\(query\.shape, memory\.shape\)"):
        attention.project_keys(memory)
    attention.build(query.shape, memory.shape)
    keys = attention.project_keys(memory)
    np.testing.assert_array_equal(attention(query, memory, keys=keys, memory_mask=mask)[1],
                                  attention(query, memory, memory_mask=mask)[1])


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_many_queries_equal_one_at_a_time(name, batch, rng):
    _, memory, mask = batch
    queries = rng.normal(size=(3, 5, 4)).astype("float32")
    attention = ATTENTIONS[name]()
    context, weights = attention(queries, memory, memory_mask=mask)
    assert context.shape == (3, 5, 4) and weights.shape == (3, 5, 6)
    for step in range(5):
        c, w = attention(queries[:, step], memory, memory_mask=mask)
        np.testing.assert_allclose(context[:, step], c, atol=1e-6)
        np.testing.assert_allclose(weights[:, step], w, atol=1e-6)


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
@pytest.mark.parametrize("reweighted", [False, True])
def test_rows_grouped_per_memory_row_equal_the_memory_repeated(name, batch, rng, reweighted):
    """A step's query of K consecutive rows per memory row (a beam's hypotheses) gives
    what each row gives with its memory row repeated for it."""
    _, memory, mask = batch
    query = rng.normal(size=(3 * 2, 4)).astype("float32")
    attention = ATTENTIONS[name]()
    reweight = (lambda weights: keras.ops.flip(weights, axis=-1)) if reweighted else None
    grouped = attention(query, memory, memory_mask=mask, reweight=reweight)
    repeated = attention(query, np.repeat(memory, 2, axis=0), memory_mask=np.repeat(mask, 2, 0),
                         reweight=reweight)
    assert grouped[0].shape == (6, 4) and grouped[1].shape == (6, 6)
    for a, b in zip(grouped, repeated):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b),
                                   atol=1e-6)


@pytest.mark.parametrize("queries", [None, 5])
def test_reweight_replaces_the_weights_the_context_is_formed_from(batch, rng, queries):
    query, memory, mask = batch
    if queries:
        query = rng.normal(size=(3, queries, 4)).astype("float32")
    attention = ATTENTIONS["bahdanau"]()
    seen = []

    def reversed_weights(weights):
        seen.append(keras.ops.convert_to_numpy(weights))
        return keras.ops.flip(weights, axis=-1)

    context, weights = keras.tree.map_structure(keras.ops.convert_to_numpy, attention(
        query, memory, memory_mask=mask, reweight=reversed_weights))
    _, original = attention(query, memory, memory_mask=mask)
    # It is given the weights as the layer returns them.
    np.testing.assert_array_equal(seen[0], keras.ops.convert_to_numpy(original))
    np.testing.assert_allclose(weights, keras.ops.convert_to_numpy(original)[..., ::-1],
                               atol=1e-7)
    einsum = "bs,bsd->bd" if queries is None else "bqs,bsd->bqd"
    np.testing.assert_allclose(context, np.einsum(einsum, weights, memory), atol=1e-5)


def test_fully_masked_row_gives_zero_weights_and_context(batch):
    query, memory, _ = batch
    mask = np.zeros((3, 6), bool)
    mask[0] = True
    context, weights = zoo.layers.BahdanauAttention(3)(query, memory, memory_mask=mask)
    assert np.all(np.array(weights)[1:] == 0) and np.all(np.array(context)[1:] == 0)


def test_bahdanau_hand_computed_2x3():
    # Batch 1, source length 3, units 2, every dimension 2.
    # W = I, U = I, v = [1, 1]; s = [0.5, 0]; h_1 = [0, 0], h_2 = [1, 0], h_3 = [0, 1].
    attention = zoo.layers.BahdanauAttention(2)
    query = np.array([[0.5, 0.0]], "float32")
    memory = np.array([[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]], "float32")
    attention(query, memory)
    attention.set_weights([np.eye(2, dtype="float32"), np.eye(2, dtype="float32"),
                           np.ones(2, "float32")])
    # e_i = tanh(0.5 + h_i1) + tanh(h_i2)
    e = np.array([np.tanh(0.5), np.tanh(1.5), np.tanh(0.5) + np.tanh(1.0)])
    a = np.exp(e) / np.exp(e).sum()
    context, weights = attention(query, memory)
    np.testing.assert_allclose(weights[0], a, atol=1e-6)
    np.testing.assert_allclose(context[0], [a[1], a[2]], atol=1e-6)
    # The same numbers with the third position masked: renormalised over two.
    _, masked = attention(query, memory, memory_mask=np.array([[True, True, False]]))
    np.testing.assert_allclose(masked[0], np.append(np.exp(e[:2]) / np.exp(e[:2]).sum(), 0),
                               atol=1e-6)


def test_normalized_bahdanau_scales_v_to_g():
    attention = zoo.layers.BahdanauAttention(2, normalize=True)
    query = np.array([[0.5, 0.0]], "float32")
    memory = np.array([[[0.0, 0.0], [1.0, 0.0]]], "float32")
    attention(query, memory)
    eye = np.eye(2, dtype="float32")
    # v = [3, 4] has norm 5; g = 2 makes the effective v = [1.2, 1.6]; b = 0.
    attention.set_weights([eye, eye, np.array([3.0, 4.0], "float32"),
                           np.array(2.0, "float32"), np.zeros(2, "float32")])
    e = np.array([1.2 * np.tanh(0.5), 1.2 * np.tanh(1.5)])
    _, weights = attention(query, memory)
    np.testing.assert_allclose(weights[0], np.exp(e) / np.exp(e).sum(), atol=1e-6)


def test_luong_scores_by_hand():
    query = np.array([[1.0, 2.0]], "float32")
    memory = np.array([[[1.0, 0.0], [0.0, 1.0]]], "float32")
    dot = zoo.layers.LuongAttention(score="dot")
    _, weights = dot(query, memory)
    np.testing.assert_allclose(weights[0], np.exp([1, 2]) / np.exp([1, 2]).sum(), atol=1e-6)
    general = zoo.layers.LuongAttention(score="general", scale=True)
    general(query, memory)
    general.set_weights([2 * np.eye(2, dtype="float32"), np.array(0.5, "float32")])
    _, weights = general(query, memory)  # s^T (2I) h * 0.5 = s^T h
    np.testing.assert_allclose(weights[0], np.exp([1, 2]) / np.exp([1, 2]).sum(), atol=1e-6)


def test_argument_errors():
    with pytest.raises(ValueError, match="`score` must be one of"):
        zoo.layers.LuongAttention(score="cosine")
    with pytest.raises(ValueError, match="score='concat' needs a positive integer `units`"):
        zoo.layers.LuongAttention(score="concat")
    with pytest.raises(ValueError, match="query_dim=3, memory_dim=4"):
        zoo.layers.LuongAttention(score="dot")(np.zeros((1, 3), "f"), np.zeros((1, 2, 4), "f"))


@pytest.mark.parametrize("name", sorted(ATTENTIONS))
def test_config_round_trip_and_keras_file(name, batch, tmp_path):
    query, memory, mask = batch
    query_in, memory_in = keras.Input((4,)), keras.Input((None, 4))
    context, weights = ATTENTIONS[name]()(query_in, memory_in)
    model = keras.Model([query_in, memory_in], [context, weights])
    # The config round trip compares the contexts, the .keras file both outputs.
    run_serialization_test(model.layers[-1], lambda layer: layer(query, memory)[0], model,
                           [query, memory], tmp_path / "attention.keras", atol=1e-6)
