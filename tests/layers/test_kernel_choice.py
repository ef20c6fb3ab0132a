"""zoo.layers.kernel_choice: the inference loop's layout, chosen by measuring."""

import functools
import json
import os
from unittest import mock

import keras
import numpy as np
import pytest

import zoo.layers
from zoo.layers import kernel_choice, sequence_kernels

pytestmark = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                reason="the fused loops are TensorFlow's")


@pytest.mark.parametrize("speedups, expected", [
    ({1: 0.6, 4: 0.9, 16: 1.2, 64: 1.1}, 16),
    ({1: 1.5, 4: 1.5, 16: 1.5, 64: 1.5}, 1),
    ({1: 0.6, 4: 0.9, 16: 0.8, 64: 0.97}, None),
    # feature-major winning at 4 but not at 16 is noise: only a run up to the top counts
    ({1: 0.6, 4: 1.1, 16: 0.8, 64: 1.1}, 64),
    ({1: 0.6, 4: 0.9, 16: 1.0, 64: 1.1}, 64),  # a tie is no win
])
def test_crossover_is_where_feature_major_wins_from_there_up(speedups, expected):
    assert kernel_choice.crossover(speedups) == expected


def test_layout_for_batch():
    assert kernel_choice.layout_for_batch(16, 1) == "batch_major"
    assert kernel_choice.layout_for_batch(16, 16) == "feature_major"
    assert kernel_choice.layout_for_batch(16, 200) == "feature_major"
    assert kernel_choice.layout_for_batch(None, 200) == "batch_major"


@pytest.mark.parametrize("interval, expected", [
    ((1.01, 1.4), "feature_major"),  # wholly above 1, however close
    ((0.5, 0.99), "batch_major"),
    ((0.97, 1.04), "either"),  # across 1 but within 5% both ways
    ((1 / 1.05, 1.05), "either"),
    ((0.9, 1.2), None),  # across 1 and wide: undecided
    ((0.99, 1.06), None),
])
def test_a_batch_is_decided_by_where_its_interval_lies(interval, expected):
    assert kernel_choice.verdict(interval) == expected


def _samples(*batches):
    """{batch: {layout: [seconds per round]}} from (batch, feature-major seconds, the
    rounds' ratios of batch-major's time to it)."""
    return {batch: {"feature_major": [seconds] * len(ratios),
                    "batch_major": [seconds * r for r in ratios]}
            for batch, seconds, ratios in batches}


# A quiet machine: batch-major clearly faster at 1 and 4, feature-major from 16 on.
QUIET = _samples((1, 5.6, [0.58, 0.6, 0.59, 0.61, 0.6, 0.57, 0.6, 0.62, 0.59]),
                 (4, 9.0, [0.9, 0.88, 0.91, 0.9, 0.89, 0.92, 0.9, 0.87, 0.9]),
                 (16, 20.0, [1.2, 1.25, 1.18, 1.22, 1.2, 1.21, 1.19, 1.23, 1.2]),
                 (64, 74.0, [1.36, 1.3, 1.4, 1.35, 1.38, 1.33, 1.36, 1.37, 1.34]))
# A busy one: at 64 the rounds' ratios scatter across 1 (median 0.9, batch-major's side).
BUSY = {**QUIET, 64: _samples((64, 74.0, [0.6, 1.4, 0.7, 1.5, 0.9, 1.3, 0.8, 0.9, 0.95]))[64]}


def test_a_clear_measurement_is_decided_at_every_batch():
    decision = kernel_choice.decide(QUIET)
    assert decision["feature_major_from"] == 16 and decision["kept"]
    assert [b["verdict"] for b in decision["batches"].values()] == [
        "batch_major", "batch_major", "feature_major", "feature_major"]
    assert decision["batches"][64]["ratio"] == pytest.approx(1.36)
    low, high = decision["batches"][64]["interval_95"]
    assert 1.3 <= low < 1.36 < high <= 1.4


def test_a_noisy_batch_leaves_the_measurement_undecided():
    decision = kernel_choice.decide(BUSY)
    assert decision["batches"][64]["verdict"] is None
    low, high = decision["batches"][64]["interval_95"]
    assert low < 1 < high
    # the medians still choose, for this process: batch-major at every batch
    assert decision["feature_major_from"] is None and not decision["kept"]


@pytest.fixture
def measuring(monkeypatch, tmp_path):
    """Measuring, as in a new process, into a cache file of this test's."""
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "measure")
    monkeypatch.setenv("ZOO_RNN_LAYOUT_CACHE", str(tmp_path / "rnn_layouts.json"))
    kernel_choice._CHOSEN.clear()
    yield tmp_path / "rnn_layouts.json"
    kernel_choice._CHOSEN.clear()


def _choose(samples):
    """feature_major_from("lstm", 2, 3) with ``samples`` for what measuring finds."""
    with mock.patch.object(kernel_choice, "measure", return_value=samples) as measure:
        threshold = kernel_choice.feature_major_from("lstm", 2, 3, "float32",
                                                     sequence_kernels.layout_calls)
    return threshold, measure.call_count


def test_a_decided_measurement_is_kept_and_read_by_the_next_process(measuring):
    assert _choose(QUIET) == (16, 1)
    kept = json.loads(measuring.read_text())[kernel_choice.machine_key()]["lstm/2x3/float32"]
    assert kept["feature_major_from"] == 16
    assert kept["batches"]["64"]["verdict"] == "feature_major"
    assert _choose(BUSY) == (16, 0)  # this process: remembered
    kernel_choice._CHOSEN.clear()  # a new process: read, not measured
    assert _choose(BUSY) == (16, 0)


def test_an_undecided_measurement_is_used_but_not_kept(measuring):
    assert _choose(BUSY) == (None, 1)
    assert _choose(QUIET) == (None, 0)  # this process keeps its choice
    assert json.loads(measuring.read_text() if measuring.exists() else "{}") == {}
    kernel_choice._CHOSEN.clear()  # the next process measures again, and keeps a clear one
    assert _choose(QUIET) == (16, 1)
    assert list(json.loads(measuring.read_text()).values()) == [
        {"lstm/2x3/float32": mock.ANY}]


def test_an_entry_of_the_older_rule_is_measured_again(measuring):
    measuring.write_text(json.dumps({kernel_choice.machine_key(): {"lstm/2x3/float32": None}}))
    assert _choose(QUIET) == (16, 1)
    kept = json.loads(measuring.read_text())[kernel_choice.machine_key()]["lstm/2x3/float32"]
    assert kept["feature_major_from"] == 16


def test_choosing_again_replaces_the_entry_or_removes_it_when_undecided(measuring):
    assert _choose(QUIET) == (16, 1)
    other = {"gru_reset_after/2x3/float32": {"feature_major_from": 4, "batches": {}}}
    stored = json.loads(measuring.read_text())
    stored[kernel_choice.machine_key()].update(other)
    measuring.write_text(json.dumps(stored))

    def choose(samples):
        with mock.patch.object(kernel_choice, "measure", return_value=samples):
            return kernel_choice.choose("lstm", 2, 3, "float32", sequence_kernels.layout_calls)

    assert not choose(BUSY)["kept"]
    assert kernel_choice._CHOSEN["lstm/2x3/float32"] is None  # this process: the new guess
    assert json.loads(measuring.read_text()) == {kernel_choice.machine_key(): other}
    assert choose(QUIET)["kept"]
    assert kernel_choice._CHOSEN["lstm/2x3/float32"] == 16
    assert sorted(json.loads(measuring.read_text())[kernel_choice.machine_key()]) == [
        "gru_reset_after/2x3/float32", "lstm/2x3/float32"]


def test_measuring_alternates_both_layouts_round_by_round_at_every_batch(measuring):
    samples = kernel_choice.measure("gru_reset_after", 2, 3, "float32",
                                    sequence_kernels.layout_calls, batches=(1, 8), rounds=2)
    assert sorted(samples) == [1, 8]
    for seconds in samples.values():
        assert sorted(seconds) == ["batch_major", "feature_major"]
        assert all(len(s) == 2 and min(s) > 0 for s in seconds.values())


def test_the_two_layouts_measured_compute_the_same_numbers():
    calls = sequence_kernels.layout_calls("lstm", 2, 3, "float32", batch=4, steps=5)
    feature_major, batch_major = calls["feature_major"](), calls["batch_major"]()
    np.testing.assert_allclose(feature_major[0], batch_major[0], atol=1e-6)
    assert feature_major[0].shape == (5, 4, 3)


def _measuring_briefly(monkeypatch):
    """kernel_choice.measure at two batches and two rounds (timed for real, in less time);
    returns it."""
    briefly = functools.partial(kernel_choice.measure, batches=(1, 4), rounds=2)
    monkeypatch.setattr(kernel_choice, "measure", briefly)
    return briefly


def _user_cache_state():
    """The user's cache file, as cache_path() names it without the tests' variable."""
    with mock.patch.dict(os.environ):
        os.environ.pop(kernel_choice.CACHE_VARIABLE, None)
        path = kernel_choice.cache_path()
    return path, (path.stat().st_mtime_ns, path.read_bytes()) if path.exists() else None


def test_the_test_suite_never_writes_the_users_cache(monkeypatch):
    """tests/conftest.py names a file of this run's: a measurement kept there, and the
    user's file (if any) left as it was."""
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "measure")
    monkeypatch.setattr(kernel_choice, "EQUIVALENT_WITHIN", float("inf"))  # always kept
    monkeypatch.setattr(kernel_choice, "_CHOSEN", {})
    _measuring_briefly(monkeypatch)
    user_path, before = _user_cache_state()
    ours = kernel_choice.cache_path()

    zoo.layers.LSTM(3)(np.zeros((2, 4, 5), "float32"))  # measures lstm/5x3/float32

    assert _user_cache_state() == (user_path, before)
    assert ours != user_path and not ours.is_relative_to(user_path.parent)
    assert "lstm/5x3/float32" in json.loads(ours.read_text())[kernel_choice.machine_key()]


def test_a_layer_first_met_while_a_graph_is_traced_is_measured_outside_it(measuring, rng,
                                                                         monkeypatch):
    import tensorflow as tf

    measured, measure = [], _measuring_briefly(monkeypatch)
    monkeypatch.setattr(kernel_choice, "measure",
                        lambda *args, **kwargs: measured.append(measure(*args, **kwargs))
                        or measured[-1])
    layer = zoo.layers.GRU(3)
    run = tf.function(layer, input_signature=[tf.TensorSpec([None, None, 2])])
    inputs = rng.normal(size=(2, 5, 2)).astype("float32")
    np.testing.assert_allclose(run(inputs), layer(inputs), atol=1e-5)
    assert len(measured) == 1  # once, while tracing; then remembered
    assert list(kernel_choice._CHOSEN) == ["gru_reset_after/2x3/float32"]
    rounds = [s for seconds in measured[0].values() for times in seconds.values() for s in times]
    assert len(rounds) == 2 * 2 * 2  # layouts, rounds, batches
    assert all(isinstance(s, float) and s > 0 for s in rounds)


def test_a_layout_that_does_not_exist_is_refused(monkeypatch):
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "column_major")
    with pytest.raises(kernel_choice.LayoutError,
                       match="ZOO_RNN_LAYOUT must be one of measure, feature_major, "
                             "batch_major; got 'column_major'"):
        zoo.layers.LSTM(3)(np.zeros((1, 2, 2), "float32"))


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_an_open_batch_runs_the_layout_of_each_batch_size(name, measuring, rng):
    """Traced with the batch unknown, the layer decides per call: both layouts in the graph,
    each giving Keras' numbers on its side of the crossover."""
    import tensorflow as tf

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
    layouts = mock.Mock(wraps=sequence_kernels.inference_in_layout)
    layer = zoo.layers.GRU(3)
    with mock.patch.object(kernel_choice, "feature_major_from", return_value=4), \
            mock.patch.object(sequence_kernels, "inference_in_layout", layouts):
        layer(rng.normal(size=(2, 5, 2)).astype("float32"))
        layer(rng.normal(size=(6, 5, 2)).astype("float32"))
    chosen = [c.args[0] for c in layouts.call_args_list]
    assert chosen == [sequence_kernels.BatchMajor, sequence_kernels.FeatureMajor]
