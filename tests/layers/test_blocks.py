"""zoo.layers.blocks: one row's product in blocks of the weight, and zoo.layers.attention's
weighted sum for one query of one row."""

import keras
import numpy as np
import pytest

from zoo.layers import attention, blocks

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="the blocks are TensorFlow's")


def _products(function, *arguments):
    """The result of ``function`` traced by tf.function, and how many products its graph
    has."""
    import tensorflow as tf

    traced = tf.function(function).get_concrete_function(*arguments)
    products = [op for op in traced.graph.get_operations() if op.type == "MatMul"]
    return traced(*arguments).numpy(), len(products)


@pytest.mark.parametrize("transpose_weight", [False, True])
def test_a_row_product_in_blocks_is_the_product(transpose_weight, monkeypatch, rng):
    """A weight of 7 x 11 floats (308 bytes) in blocks of at most 64 bytes: 5 of its rows'
    uneven blocks (2, 2, 1, 1, 1 rows), one product each, equal to one product."""
    import tensorflow as tf

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 64)
    monkeypatch.setattr(blocks, "several_threads", lambda: True)
    weight = tf.constant(rng.normal(size=(7, 11)).astype("float32"))
    row = tf.constant(rng.normal(size=(1, 11 if transpose_weight else 7)).astype("float32"))
    expected = tf.matmul(row, weight, transpose_b=transpose_weight).numpy()
    found, products = _products(
        lambda r, w: blocks.row_product(r, w, transpose_weight), row, weight)
    assert blocks.block_sizes(7, blocks.blocks_for(7, 11, 4)) == [2, 2, 1, 1, 1]
    assert products == 5
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("why", ["one thread", "two rows", "two blocks", "an export"])
def test_a_row_product_stays_whole_where_blocks_do_not_pay(why, monkeypatch, rng):
    import tensorflow as tf

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 64 if why != "two blocks" else 160)
    monkeypatch.setattr(blocks, "several_threads", lambda: why != "one thread")
    weight = tf.constant(rng.normal(size=(7, 11)).astype("float32"))
    row = tf.constant(rng.normal(size=(2 if why == "two rows" else 1, 7)).astype("float32"))
    if why == "an export":
        with blocks.whole_products():
            found, products = _products(blocks.row_product, row, weight)
        assert not blocks._whole_products  # restored
    else:
        found, products = _products(blocks.row_product, row, weight)
    assert products == 1
    np.testing.assert_allclose(found, tf.matmul(row, weight).numpy(), rtol=1e-6)


def test_several_threads_follows_tensorflows_setting(monkeypatch):
    import tensorflow as tf

    for threads, expected in ((1, False), (2, True)):
        monkeypatch.setattr(tf.config.threading, "get_intra_op_parallelism_threads",
                            lambda threads=threads: threads)
        assert blocks.several_threads() == expected


@pytest.mark.parametrize("rows, queries", [(1, 1), (1, 3), (4, 1)])
def test_the_weighted_sum_is_the_product(rows, queries, rng):
    """One query of one row is a multiply and a sum; the rest a product: the same numbers."""
    import tensorflow as tf

    weights = tf.constant(rng.random((rows, queries, 6)).astype("float32"))
    memory = tf.constant(rng.normal(size=(rows, 6, 5)).astype("float32"))
    found, _ = _products(attention.weighted_sum, weights, memory)
    np.testing.assert_allclose(found, tf.matmul(weights, memory).numpy(), rtol=1e-5, atol=1e-6)
    assert found.shape == (rows, queries, 5)


def test_usable_cores_without_an_affinity_call(monkeypatch):
    """macOS and Windows have no os.sched_getaffinity: every core counts there."""
    import os

    from zoo import backend

    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert backend.usable_cores() == 6


def test_a_row_product_makes_at_most_one_block_a_row(monkeypatch, rng):
    """A weight of 3 rows x 100 columns (1200 bytes) would make 19 blocks of 64 bytes; it is
    split along its rows, so into 3, none empty."""
    import tensorflow as tf

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 64)
    monkeypatch.setattr(blocks, "several_threads", lambda: True)
    weight = tf.constant(rng.normal(size=(3, 100)).astype("float32"))
    row = tf.constant(rng.normal(size=(1, 3)).astype("float32"))
    found, products = _products(blocks.row_product, row, weight)
    assert products == 3
    np.testing.assert_allclose(found, tf.matmul(row, weight).numpy(), rtol=1e-5, atol=1e-6)
