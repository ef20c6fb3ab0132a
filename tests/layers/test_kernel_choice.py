"""zoo.layers.kernel_choice: the inference loop's layout, chosen by measuring."""

import json
from unittest import mock

import keras
import numpy as np
import pytest

import zoo.layers
from zoo.layers import kernel_choice

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="the fused loops are TensorFlow's")


def _timings(*pairs):
    """{batch: {...}} from (batch, feature-major seconds, batch-major seconds)."""
    return {b: {"feature_major": f, "batch_major": m} for b, f, m in pairs}


@pytest.mark.parametrize("pairs, expected", [
    ([(1, 5, 3), (4, 9, 8), (16, 11, 13), (64, 27, 30)], 16),
    ([(1, 2, 3), (4, 2, 3), (16, 2, 3), (64, 2, 3)], 1),
    ([(1, 5, 3), (4, 9, 8), (16, 13, 11), (64, 31, 30)], None),
    # feature-major winning at 4 but not at 16 is noise: only a run up to the top counts
    ([(1, 5, 3), (4, 7, 8), (16, 13, 11), (64, 27, 30)], 64),
])
def test_crossover_is_where_feature_major_wins_from_there_up(pairs, expected):
    assert kernel_choice.crossover(_timings(*pairs)) == expected


def test_layout_for_batch():
    assert kernel_choice.layout_for_batch(16, 1) == "batch_major"
    assert kernel_choice.layout_for_batch(16, 16) == "feature_major"
    assert kernel_choice.layout_for_batch(16, 200) == "feature_major"
    assert kernel_choice.layout_for_batch(None, 200) == "batch_major"


def test_a_layout_that_does_not_exist_is_refused(monkeypatch):
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "column_major")
    with pytest.raises(kernel_choice.LayoutError,
                       match="ZOO_RNN_LAYOUT must be one of measure, feature_major, "
                             "batch_major; got 'column_major'"):
        zoo.layers.LSTM(3)(np.zeros((1, 2, 2), "float32"))


@pytest.fixture
def measuring(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "measure")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    kernel_choice._crossover_cached.cache_clear()
    yield tmp_path / "zoo" / "rnn_layouts.json"
    kernel_choice._crossover_cached.cache_clear()


@pytest.mark.slow
def test_a_machine_measures_a_shape_once_and_then_reads_it(measuring):
    threshold = kernel_choice.feature_major_from("lstm", 2, 3, "float32")
    assert threshold in (*kernel_choice.MEASURED_BATCHES, None)
    stored = json.loads(measuring.read_text())
    assert stored == {kernel_choice.machine_key(): {"lstm/2x3/float32": threshold}}

    kernel_choice._crossover_cached.cache_clear()  # a new process
    with mock.patch.object(kernel_choice, "measure", side_effect=AssertionError("measured")):
        assert kernel_choice.feature_major_from("lstm", 2, 3, "float32") == threshold


def test_a_layer_first_met_while_a_graph_is_traced_is_measured_outside_it(measuring, rng):
    import tensorflow as tf

    layer = zoo.layers.GRU(3)
    run = tf.function(layer, input_signature=[tf.TensorSpec([None, None, 2])])
    inputs = rng.normal(size=(2, 5, 2)).astype("float32")
    np.testing.assert_allclose(run(inputs), layer(inputs), atol=1e-5)
    assert list(json.loads(measuring.read_text()).values()) == [
        {"gru_reset_after/2x3/float32": kernel_choice.feature_major_from(
            "gru_reset_after", 2, 3, "float32")}]


def test_measuring_times_both_layouts_at_every_batch(measuring):
    timings = kernel_choice.measure("gru_reset_after", 2, 3, "float32", batches=(1, 8), rounds=1)
    assert sorted(timings) == [1, 8]
    assert all(sorted(t) == ["batch_major", "feature_major"] and min(t.values()) > 0
               for t in timings.values())


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_an_open_batch_runs_the_layout_of_each_batch_size(name, measuring, rng):
    """Traced with the batch unknown, the layer decides per call: both layouts in the graph,
    each giving Keras' numbers on its side of the crossover."""
    import tensorflow as tf

    from zoo.layers import sequence_kernels

    ours, theirs = getattr(zoo.layers, name)(3), getattr(keras.layers, name)(3)
    ours(np.zeros((1, 2, 2), "float32"))
    theirs(np.zeros((1, 2, 2), "float32"))
    theirs.set_weights(ours.get_weights())
    run = tf.function(ours, input_signature=[tf.TensorSpec([None, None, 2])])
    layouts = mock.Mock(wraps=sequence_kernels.inference_in_layout)
    with mock.patch.object(kernel_choice, "feature_major_from", return_value=4), \
            mock.patch.object(sequence_kernels, "inference_in_layout", layouts):
        for batch in (2, 4, 9):
            inputs = rng.normal(size=(batch, 5, 2)).astype("float32")
            np.testing.assert_allclose(run(inputs), theirs(inputs), atol=1e-5)
    chosen = [c.args[0] for c in layouts.call_args_list]
    assert chosen == [sequence_kernels.FeatureMajor, sequence_kernels.BatchMajor]


def test_a_known_batch_is_decided_while_tracing(measuring, rng):
    from zoo.layers import sequence_kernels

    layouts = mock.Mock(wraps=sequence_kernels.inference_in_layout)
    layer = zoo.layers.GRU(3)
    with mock.patch.object(kernel_choice, "feature_major_from", return_value=4), \
            mock.patch.object(sequence_kernels, "inference_in_layout", layouts):
        layer(rng.normal(size=(2, 5, 2)).astype("float32"))
        layer(rng.normal(size=(6, 5, 2)).astype("float32"))
    chosen = [c.args[0] for c in layouts.call_args_list]
    assert chosen == [sequence_kernels.BatchMajor, sequence_kernels.FeatureMajor]
