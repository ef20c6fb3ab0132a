"""zoo.layers.kernel_choice: the inference loop's layout, chosen by measuring."""

import datetime
import functools
import json
import os
from unittest import mock

import keras
import numpy as np
import pytest

import zoo.layers
from zoo.layers import blocks, kernel_choice, machine_load, sequence_kernels

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


def _choice(threshold, in_blocks=False):
    return {"feature_major_from": threshold, "batch_major_in_blocks": in_blocks}


def test_layout_for_batch():
    assert kernel_choice.layout_for_batch(_choice(16), 1) == "batch_major"
    assert kernel_choice.layout_for_batch(_choice(16), 16) == "feature_major"
    assert kernel_choice.layout_for_batch(_choice(16), 200) == "feature_major"
    assert kernel_choice.layout_for_batch(_choice(None), 200) == "batch_major"
    assert kernel_choice.layout_for_batch(_choice(16, True), 15) == "batch_major_in_blocks"
    assert kernel_choice.layout_for_batch(_choice(16, True), 16) == "feature_major"


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


@pytest.mark.parametrize("interval, chosen, expected", [
    ((0.88, 1.02), "batch_major", "batch_major (within 5%)"),  # feature-major 2% faster at most
    ((0.88, 1.02), "feature_major", None),  # feature-major may be 12% slower
    ((0.97, 1.3), "feature_major", "feature_major (within 5%)"),
    ((0.97, 1.3), "batch_major", None),
    ((0.9, 1.2), "batch_major", None),  # either way, the choice may cost more than 5%
    ((1.01, 1.4), "batch_major", "feature_major"),  # wholly above 1 says which is faster
])
def test_a_batch_is_decided_where_the_layout_chosen_costs_at_most_5_percent(interval, chosen,
                                                                            expected):
    assert kernel_choice.verdict(interval, chosen=chosen) == expected


def test_a_measurement_that_costs_at_most_5_percent_somewhere_is_kept():
    # batch 16: feature-major's speed-up 0.97 (0.88-1.03): across 1, but at most 1.03 on
    # feature-major's side, and the crossover gives batch 16 batch-major
    close = _samples((16, 20.0, [0.93, 0.86, 1.03, 0.98, 1.02, 0.93, 1.04, 0.88, 0.97]))[16]
    decision = kernel_choice.decide({**QUIET, 16: close})
    low, high = decision["batches"][16]["interval_95"]
    assert low < 1 < high <= kernel_choice.EQUIVALENT_WITHIN
    assert decision["feature_major_from"] == 64
    assert decision["batches"][16]["verdict"] == "batch_major (within 5%)"
    assert decision["kept"]


def test_a_verdict_names_the_two_sides_it_was_asked_about():
    assert kernel_choice.verdict((1.2, 1.3), "in_blocks", "whole") == "in_blocks"
    assert kernel_choice.verdict((0.7, 0.8), "in_blocks", "whole") == "whole"
    assert kernel_choice.verdict((0.99, 1.01), "in_blocks", "whole") == "either"


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


def _with_blocks(samples, ratios):
    """``samples`` with batch-major in blocks measured at every batch, its time in each
    round ``ratios`` times batch-major's."""
    return {batch: {**seconds, "batch_major_in_blocks": [
                whole * ratio for whole, ratio in zip(seconds["batch_major"], ratios)]}
            for batch, seconds in samples.items()}


def test_blocks_faster_at_the_smallest_batch_are_chosen_and_compared_with_feature_major():
    decision = kernel_choice.decide(_with_blocks(QUIET, [0.7] * 9))
    assert decision["batch_major_in_blocks"] and decision["kept"]
    assert decision["blocks"]["ratio"] == pytest.approx(1 / 0.7)
    assert decision["blocks"]["verdict"] == "batch_major_in_blocks"
    # feature-major's speed-up is now over the blocks: at batch 1 0.6 x 0.7, at 16 1.2 x 0.7
    assert decision["batches"][1]["ratio"] == pytest.approx(0.42)
    assert decision["batches"][1]["verdict"] == "batch_major_in_blocks"
    assert decision["batches"][16]["ratio"] == pytest.approx(0.84)
    assert decision["feature_major_from"] is None  # at 64: 1.36 x 0.7, below 1


@pytest.mark.parametrize("ratios, kept", [([1.3] * 9, True),  # slower: whole
                                          ([1.01, 0.99] * 4 + [1.0], True),  # a tie: whole
                                          ([0.6, 1.5] * 4 + [0.9], False)])  # undecided
def test_blocks_not_clearly_faster_are_not_chosen(ratios, kept):
    decision = kernel_choice.decide(_with_blocks(QUIET, ratios))
    assert not decision["batch_major_in_blocks"] and decision["kept"] == kept
    assert decision["batches"][1]["ratio"] == pytest.approx(0.6, abs=0.02)


def test_a_noisy_batch_leaves_the_measurement_undecided():
    decision = kernel_choice.decide(BUSY)
    assert decision["batches"][64]["verdict"] is None
    low, high = decision["batches"][64]["interval_95"]
    assert low < 1 < high
    # the medians still choose, for this process: batch-major at every batch
    assert decision["feature_major_from"] is None and not decision["kept"]


class Load:
    """The machine's load as ``kernel_choice`` sees it, set by a test: ``while_measuring``
    (what ``machine_load.others_share`` says of a measurement) and ``now`` (what
    ``machine_load.share_now`` says), both quiet until a test says otherwise."""

    def __init__(self, monkeypatch):
        self.while_measuring = self.now = 0.0
        monkeypatch.setattr(machine_load, "others_share",
                            lambda before, after: self.while_measuring)
        monkeypatch.setattr(machine_load, "share_now", lambda *seconds: self.now)


@pytest.fixture
def load(monkeypatch):
    return Load(monkeypatch)


@pytest.fixture
def measuring(monkeypatch, tmp_path, load):
    """Measuring, as in a new process, into a cache file of this test's, on a machine
    quiet unless the test loads it (``load``)."""
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "measure")
    monkeypatch.setenv("ZOO_RNN_LAYOUT_CACHE", str(tmp_path / "rnn_layouts.json"))
    kernel_choice.forget()
    yield tmp_path / "rnn_layouts.json"
    kernel_choice.forget()


def _choose(samples):
    """The crossover chosen("lstm", 2, 3) gives with ``samples`` for what measuring finds,
    and how many times it measured."""
    with mock.patch.object(kernel_choice, "measure", return_value=samples) as measure:
        choice = kernel_choice.chosen("lstm", 2, 3, "float32", sequence_kernels.layout_calls)
    return choice["feature_major_from"], measure.call_count


def test_a_decided_measurement_is_kept_and_read_by_the_next_process(measuring):
    assert _choose(QUIET) == (16, 1)
    kept = json.loads(measuring.read_text())[kernel_choice.machine_key()]["lstm/2x3/float32"]
    assert kept["feature_major_from"] == 16 and kept["batch_major_in_blocks"] is False
    assert kept["batches"]["64"]["verdict"] == "feature_major"
    assert _choose(BUSY) == (16, 0)  # this process: remembered
    kernel_choice.forget()  # a new process: read, not measured
    assert _choose(BUSY) == (16, 0)


def test_an_undecided_measurement_is_used_but_not_kept(measuring):
    assert _choose(BUSY) == (None, 3)  # measured, then its undecided batch twice more
    assert _choose(QUIET) == (None, 0)  # this process keeps its choice
    assert json.loads(measuring.read_text() if measuring.exists() else "{}") == {}
    kernel_choice.forget()  # the next process measures again, and keeps a clear one
    assert _choose(QUIET) == (16, 1)
    assert list(json.loads(measuring.read_text()).values()) == [
        {"lstm/2x3/float32": mock.ANY}]


@pytest.mark.parametrize("older", [None, 4, {"feature_major_from": 4, "batches": {}}])
def test_an_entry_of_an_older_rule_is_measured_again(measuring, older):
    measuring.write_text(json.dumps({kernel_choice.machine_key(): {"lstm/2x3/float32": older}}))
    assert _choose(QUIET) == (16, 1)
    kept = json.loads(measuring.read_text())[kernel_choice.machine_key()]["lstm/2x3/float32"]
    assert kept["feature_major_from"] == 16


# Measured while other work held the cores (issue 52's GRU of 256 units): at batch 64
# batch-major within 5% on a tight interval (0.80-1.01 there), where the quiet machine
# measures feature-major faster: decided, and on the wrong side.
LOADED = {**QUIET, 64: _samples((64, 74.0, [0.8, 0.88, 0.96, 1.02, 0.99, 0.92, 1.04, 0.95,
                                            1.01]))[64]}


def _kept(path, key="lstm/2x3/float32"):
    return json.loads(path.read_text())[kernel_choice.machine_key()][key]


def test_a_loaded_measurement_is_decided_on_the_wrong_side():
    """What the rules on the rounds alone keep: why the load is looked at."""
    decision = kernel_choice.decide(LOADED)
    assert decision["kept"] and decision["feature_major_from"] is None
    assert decision["batches"][64]["verdict"] == "batch_major (within 5%)"
    assert decision["batches"][64]["interval_95"] == pytest.approx([0.88, 1.01])


def test_a_measurement_under_load_is_kept_until_a_quiet_start_measures_again(measuring, load):
    load.while_measuring = 0.6  # other work took 60% of the cores while measuring
    assert _choose(LOADED) == (None, 1)
    kept = _kept(measuring)
    assert kept["load"] == 0.6 and not kernel_choice.kept_for_good(kept)
    assert kept["feature_major_from"] is None
    kernel_choice.forget()  # a process started while the machine is still busy: used as it is
    load.now = 0.6
    assert _choose(QUIET) == (None, 0)
    kernel_choice.forget()  # one started quietly: measured again, and kept for good
    load.now = load.while_measuring = 0.02
    assert _choose(QUIET) == (16, 1)
    kept = _kept(measuring)
    assert kept["load"] == 0.02 and kernel_choice.kept_for_good(kept)
    kernel_choice.forget()  # then read, not measured, busy or quiet
    load.now = 0.6
    assert _choose(LOADED) == (16, 0)


@pytest.mark.parametrize("share, for_good", [(0.0, True), (0.149, True), (0.15, False),
                                             (1.0, False), (None, True)])
def test_an_entry_is_kept_for_good_where_other_work_took_less_than_15_percent(share, for_good):
    assert kernel_choice.kept_for_good({**_choice(16), "load": share}) == for_good


@pytest.mark.parametrize("name", ["GRU", "LSTM"])
def test_layers_with_a_cache_written_under_load_run_as_with_one_written_quietly(
        name, measuring, load, tmp_path, monkeypatch, rng):
    """Issue 52: a cache written while other work held the cores, then a quiet start: the
    layer runs the layouts a cache written quietly gives it at every measured batch (the
    same graphs, so the same speed), where the rule before ran the loaded choice."""
    def layouts_run(cache, measured):
        """The layouts a new process with ``cache`` runs the layer in at each batch, and
        how many times it measured (finding ``measured``)."""
        monkeypatch.setenv(kernel_choice.CACHE_VARIABLE, str(tmp_path / cache))
        kernel_choice.forget()
        layer, layouts = getattr(zoo.layers, name)(3), mock.Mock(
            wraps=sequence_kernels.inference_in_layout)
        with mock.patch.object(kernel_choice, "measure", return_value=measured) as measure, \
                mock.patch.object(sequence_kernels, "inference_in_layout", layouts):
            for batch in kernel_choice.MEASURED_BATCHES:
                layer(rng.normal(size=(batch, 5, 2)).astype("float32"))
        return [c.args[0].__name__ for c in layouts.call_args_list], measure.call_count

    load.while_measuring = 0.6
    loaded_layouts, _ = layouts_run("under_load.json", LOADED)
    load.while_measuring = 0.0
    quiet_layouts, _ = layouts_run("quiet.json", QUIET)
    assert loaded_layouts[-1] != quiet_layouts[-1] == "FeatureMajor"  # at batch 64
    assert layouts_run("quiet.json", LOADED) == (quiet_layouts, 0)  # kept for good: read
    assert layouts_run("under_load.json", QUIET) == (quiet_layouts, 1)  # measured again
    assert layouts_run("under_load.json", LOADED) == (quiet_layouts, 0)  # then kept


def test_an_entry_written_before_the_load_was_recorded_is_measured_again_at_a_quiet_start(
        measuring, load):
    """An older version's entry (no "load", no "measured": issue 52's cache) is read and
    used while the machine is busy, and replaced, in the new form, at a quiet start."""
    older = {**_choice(None), "blocks": None, "batches": {"64": {
        "ratio": 0.93, "interval_95": [0.8, 1.01], "verdict": "batch_major (within 5%)"}}}
    measuring.write_text(json.dumps({kernel_choice.machine_key(): {"lstm/2x3/float32": older}}))
    load.now = 0.6
    assert _choose(QUIET) == (None, 0)
    assert _kept(measuring) == older
    kernel_choice.forget()
    load.now = 0.0
    assert _choose(QUIET) == (16, 1)
    kept = _kept(measuring)
    assert kept["load"] == 0.0 and kernel_choice.kept_for_good(kept)
    measured = datetime.datetime.fromisoformat(kept["measured"])
    assert abs(datetime.datetime.now(datetime.timezone.utc) - measured).total_seconds() < 60


def test_a_measurement_under_load_leaves_an_entry_kept_for_good_as_it_was(measuring, load):
    """``--remeasure`` on a busy machine: this process runs what it measured; the file
    keeps the quiet measurement."""
    assert _choose(QUIET) == (16, 1)
    quiet_file = measuring.read_text()
    load.while_measuring = 0.6
    with mock.patch.object(kernel_choice, "measure", return_value=LOADED):
        decision = kernel_choice.choose("lstm", 2, 3, "float32", sequence_kernels.layout_calls)
    assert decision["load"] == 0.6 and decision["entry"] == "left as it was"
    assert measuring.read_text() == quiet_file
    assert kernel_choice._CHOSEN["lstm/2x3/float32"] == _choice(None)


@pytest.mark.parametrize("samples, share, entry", [(QUIET, 0.0, "kept for good"),
                                                   (LOADED, 0.6, "kept until a quiet start"),
                                                   (BUSY, 0.6, "removed"),
                                                   (BUSY, 0.0, "removed")])
def test_a_decision_says_what_became_of_its_entry(samples, share, entry, measuring, load):
    load.while_measuring = share
    with mock.patch.object(kernel_choice, "measure", return_value=samples):
        decision = kernel_choice.choose("lstm", 2, 3, "float32", sequence_kernels.layout_calls)
    assert decision["entry"] == entry
    assert (kernel_choice.kept_entry("lstm", 2, 3, "float32") is None) == (entry == "removed")


def test_the_machine_is_looked_at_once_a_minute_at_most(measuring, monkeypatch):
    looks = mock.Mock(return_value=0.6)
    monkeypatch.setattr(machine_load, "share_now", looks)
    assert not kernel_choice.quiet_now() and not kernel_choice.quiet_now()
    assert looks.call_count == 1
    when, quiet = kernel_choice._QUIET_PROBE  # a minute later
    kernel_choice._QUIET_PROBE = (when - kernel_choice.QUIET_PROBE_HOLDS_SECONDS - 1, quiet)
    looks.return_value = 0.01
    assert kernel_choice.quiet_now() and looks.call_count == 2


def test_choosing_again_replaces_the_entry_or_removes_it_when_undecided(measuring):
    assert _choose(QUIET) == (16, 1)
    other = {"gru_reset_after/2x3/float32": {**_choice(4), "batches": {}}}
    stored = json.loads(measuring.read_text())
    stored[kernel_choice.machine_key()].update(other)
    measuring.write_text(json.dumps(stored))

    def choose(samples):
        with mock.patch.object(kernel_choice, "measure", return_value=samples):
            return kernel_choice.choose("lstm", 2, 3, "float32", sequence_kernels.layout_calls)

    assert not choose(BUSY)["kept"]
    assert kernel_choice._CHOSEN["lstm/2x3/float32"] == _choice(None)  # this process: the new guess
    assert json.loads(measuring.read_text()) == {kernel_choice.machine_key(): other}
    assert choose(QUIET)["kept"]
    assert kernel_choice._CHOSEN["lstm/2x3/float32"] == _choice(16)
    assert sorted(json.loads(measuring.read_text())[kernel_choice.machine_key()]) == [
        "gru_reset_after/2x3/float32", "lstm/2x3/float32"]


def test_an_undecided_batch_alone_is_measured_again_and_decided_on_all_its_rounds(measuring):
    # batch 64's first rounds reach below 1; nine more, clearly feature-major's, decide it
    first = {**QUIET, 64: _samples((64, 74.0, [0.95, 1.4, 1.3, 1.5, 0.9, 1.3, 1.35, 1.2, 1.0]))[64]}
    assert kernel_choice.decide(first)["batches"][64]["verdict"] is None
    again = _samples((64, 74.0, [1.36, 1.3, 1.4, 1.35, 1.38, 1.33, 1.36, 1.37, 1.34]))
    with mock.patch.object(kernel_choice, "measure", side_effect=[first, again]) as measure:
        decision = kernel_choice.choose("lstm", 2, 3, "float32", sequence_kernels.layout_calls)
    assert measure.call_args_list[1].kwargs["batches"] == (64,)
    assert decision["kept"] and decision["feature_major_from"] == 16
    assert decision["batches"][64]["verdict"] == "feature_major"
    assert decision["batches"][64]["ratio"] == pytest.approx(1.345)  # the median of 18 rounds
    assert decision["batches"][16] == kernel_choice.decide(QUIET)["batches"][16]
    kept = json.loads(measuring.read_text())[kernel_choice.machine_key()]["lstm/2x3/float32"]
    assert kept["feature_major_from"] == 16


def test_undecided_blocks_are_measured_again_at_the_smallest_batch():
    decision = kernel_choice.decide(_with_blocks(QUIET, [0.6, 1.5] * 4 + [0.9]))
    assert kernel_choice.undecided_batches(decision) == (1,)
    assert kernel_choice.undecided_batches(kernel_choice.decide(BUSY)) == (64,)
    assert kernel_choice.undecided_batches(kernel_choice.decide(QUIET)) == ()


def test_measuring_alternates_both_layouts_round_by_round_at_every_batch(measuring):
    samples = kernel_choice.measure("gru_reset_after", 2, 3, "float32",
                                    sequence_kernels.layout_calls, batches=(1, 8), rounds=2)
    assert sorted(samples) == [1, 8]
    for seconds in samples.values():
        assert sorted(seconds) == ["batch_major", "feature_major"]
        assert all(len(s) == 2 and min(s) > 0 for s in seconds.values())


def test_the_two_layouts_measured_compute_the_same_numbers():
    calls = sequence_kernels.layout_calls("lstm", 2, 3, "float32", batch=4, steps=5)
    assert sorted(calls) == ["batch_major", "feature_major"]  # a weight too small to split


@pytest.mark.parametrize("block_bytes, measured", [(144 // 2, False), (144 // 3, True)])
def test_blocks_are_measured_from_three_blocks(block_bytes, measured, monkeypatch):
    """An LSTM of 3 units: its 144-byte weight in 2 blocks is not worth measuring, in 3 it is."""
    monkeypatch.setattr(blocks, "BLOCK_BYTES", block_bytes)
    calls = sequence_kernels.layout_calls("lstm", 2, 3, "float32", batch=4, steps=5)
    assert ("batch_major_in_blocks" in calls) == measured
    feature_major, batch_major = calls["feature_major"](), calls["batch_major"]()
    np.testing.assert_allclose(feature_major[0], batch_major[0], atol=1e-6)
    assert feature_major[0].shape == (5, 4, 3)


@pytest.mark.parametrize("kind", ["lstm", "gru_reset_after", "gru_reset_before", "simple_rnn"])
def test_blocks_compute_the_same_numbers_as_one_product(kind, monkeypatch):
    """A weight of 3 units' gates split into column blocks of at most 10 bytes (the
    reset-before GRU's two products each split on their own)."""
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 10)
    columns = sequence_kernels.KERNELS[kind].gates * 3
    split = sequence_kernels.BatchMajorInBlocks.prepare(np.ones((3, columns), "float32"))
    assert len(split) == min(columns, -(-3 * columns * 4 // 10))
    assert sum(block.shape[-1] for block in split) == columns
    calls = sequence_kernels.layout_calls(kind, 2, 3, "float32", batch=2, steps=5)
    outputs = {name: call()[0] for name, call in calls.items()}
    assert sorted(outputs) == ["batch_major", "batch_major_in_blocks", "feature_major"]
    np.testing.assert_allclose(outputs["batch_major_in_blocks"], outputs["batch_major"],
                               atol=1e-6)


def test_a_weight_is_split_into_the_fewest_blocks_within_the_limit():
    # an LSTM of 512 units in float32: 4 MiB, 8 blocks of 512 KiB
    assert blocks.blocks_for(512, 2048, 4) == 8
    assert blocks.blocks_for(256, 768, 4) == 2  # 768 KiB
    assert blocks.blocks_for(64, 256, 4) == 1
    assert blocks.blocks_for(1_000_000, 3, 4) == 3  # one block a column at most


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

    monkeypatch.setattr(kernel_choice, "EQUIVALENT_WITHIN", float("inf"))  # decided at once
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
                             "batch_major, batch_major_in_blocks; got 'column_major'"):
        zoo.layers.LSTM(3)(np.zeros((1, 2, 2), "float32"))


@pytest.mark.parametrize("in_blocks", [False, True])
@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_an_open_batch_runs_the_layout_of_each_batch_size(name, in_blocks, measuring, rng,
                                                          monkeypatch):
    """Traced with the batch unknown, the layer decides per call: both layouts in the graph,
    each giving Keras' numbers on its side of the crossover (below it, batch-major whole
    or in blocks of at most 40 bytes, as chosen)."""
    import tensorflow as tf

    monkeypatch.setattr(blocks, "BLOCK_BYTES", 40)

    ours, theirs = getattr(zoo.layers, name)(3), getattr(keras.layers, name)(3)
    ours(np.zeros((1, 2, 2), "float32"))
    theirs(np.zeros((1, 2, 2), "float32"))
    theirs.set_weights(ours.get_weights())
    run = tf.function(ours, input_signature=[tf.TensorSpec([None, None, 2])])
    layouts = mock.Mock(wraps=sequence_kernels.inference_in_layout)
    with mock.patch.object(kernel_choice, "chosen", return_value=_choice(4, in_blocks)), \
            mock.patch.object(sequence_kernels, "inference_in_layout", layouts):
        for batch in (2, 4, 9):
            inputs = rng.normal(size=(batch, 5, 2)).astype("float32")
            np.testing.assert_allclose(run(inputs), theirs(inputs), atol=1e-5)
    chosen = [c.args[0] for c in layouts.call_args_list]
    below = sequence_kernels.BatchMajorInBlocks if in_blocks else sequence_kernels.BatchMajor
    assert chosen == [sequence_kernels.FeatureMajor, below]


def test_a_known_batch_is_decided_while_tracing(measuring, rng):
    layouts = mock.Mock(wraps=sequence_kernels.inference_in_layout)
    layer = zoo.layers.GRU(3)
    with mock.patch.object(kernel_choice, "chosen", return_value=_choice(4)), \
            mock.patch.object(sequence_kernels, "inference_in_layout", layouts):
        layer(rng.normal(size=(2, 5, 2)).astype("float32"))
        layer(rng.normal(size=(6, 5, 2)).astype("float32"))
    chosen = [c.args[0] for c in layouts.call_args_list]
    assert chosen == [sequence_kernels.BatchMajor, sequence_kernels.FeatureMajor]


def _quiet_or_skip(within_seconds=60):
    """Wait for other work to leave the cores (``machine_load.wait_for_quiet``), or skip."""
    share = machine_load.wait_for_quiet(within_seconds)
    if machine_load.is_loaded(share):
        pytest.skip(f"other work took {share:.0%} of the cores for {within_seconds} s: "
                    "measuring quietly needs a quiet machine")


@pytest.mark.slow
def test_a_cache_written_while_every_core_is_busy_is_measured_again_quietly(monkeypatch,
                                                                            tmp_path):
    """Issue 52, for real: a busy loop on every usable core while a GRU of 256 units is
    measured (batches 1 and 64, three rounds, decided whatever the rounds say): its entry
    is kept until a quiet start, not for good. Once they end, a new process measures it
    again and keeps that; the layer traced with that cache's choice and with a cache's
    written quietly run as fast (the ratio of their times in alternating rounds, within
    20%)."""
    import tensorflow as tf

    from zoo.benchmarks.timing import busy_cores
    from zoo.layers import timing

    monkeypatch.setenv("ZOO_RNN_LAYOUT", "measure")
    monkeypatch.setattr(kernel_choice, "EQUIVALENT_WITHIN", float("inf"))  # always decided
    monkeypatch.setattr(kernel_choice, "measure", functools.partial(
        kernel_choice.measure, batches=(1, 64), rounds=3))
    shape = ("gru_reset_after", 256, 256, "float32")

    def new_process_with(cache):
        """The choice a new process with ``cache`` runs, and the cache's entry after."""
        monkeypatch.setenv(kernel_choice.CACHE_VARIABLE, str(tmp_path / cache))
        kernel_choice.forget()
        choice = kernel_choice.chosen(*shape, sequence_kernels.layout_calls)
        return choice, kernel_choice.kept_entry(*shape)

    with busy_cores():
        _, entry = new_process_with("under_load.json")
    assert entry["load"] >= machine_load.LOADED_FROM and not kernel_choice.kept_for_good(entry)

    _quiet_or_skip()
    choices = {}
    choices["quiet"], entry = new_process_with("quiet.json")
    if not kernel_choice.kept_for_good(entry):
        pytest.skip(f"other work took {entry['load']:.0%} of the cores while measuring")
    choices["under load"], entry = new_process_with("under_load.json")
    assert kernel_choice.kept_for_good(entry)  # measured again, quietly

    layer = zoo.layers.GRU(256)
    inputs = np.random.default_rng(0).normal(size=(64, 50, 256)).astype("float32")
    calls = {}
    for case, choice in choices.items():
        kernel_choice.use(*shape, choice)
        run = tf.function(lambda x: layer(x, training=False))
        run(inputs)  # traced with this choice
        calls[case] = functools.partial(run, inputs)
    samples = timing.alternate_rounds(calls, 5, 1)
    speed = timing.paired_speed_ratio(samples["under load"], samples["quiet"])
    assert 0.8 < speed["ratio"] < 1.25, speed
