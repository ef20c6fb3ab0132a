import json
import time
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo.layers
from zoo.benchmarks import decoding, layers, translate, tutorial
from zoo.layers.timing import alternate_rounds, paired_speed_ratio
from zoo.text.vocabulary import PAD_ID


def _tutorial(end_id=3):
    keras.utils.set_random_seed(0)
    return tutorial.tutorial_translator(7, 9, units=4, end_id=end_id)


@pytest.mark.slow
def test_tutorial_translator_has_the_tutorials_layers():
    _, parameters = _tutorial()
    embeddings = 7 * 4 + 9 * 4
    gru = 4 * 12 + 4 * 12 + 2 * 12  # kernel, recurrent kernel, reset-after biases
    attention = 3 * (4 * 4 + 4) + (4 * 4 + 4)  # query, key, value; output
    normalization = 2 * 4
    output = 4 * 9 + 9
    assert parameters == embeddings + 3 * gru + attention + normalization + output


@pytest.mark.slow
def test_tutorial_translator_decodes_greedily_and_stops_at_end():
    source_ids = tf.constant([[4, 5, 6], [6, 5, 0]], tf.int32)
    decode, _ = _tutorial()
    unrolled = decode(source_ids)
    assert unrolled.shape == (2, tutorial.TUTORIAL_MAX_LENGTH)
    np.testing.assert_array_equal(decode(source_ids, 6), unrolled[:, :6])
    # The same weights, told that the last token of sentence 0 ends a translation:
    # as in the tutorial, sentence 0 is padded from where that token first appears.
    end = int(unrolled[0, -1])
    assert end != PAD_ID
    first = int(np.argmax(unrolled[0] == end))
    decode, _ = _tutorial(end_id=end)
    stopped = decode(source_ids)
    np.testing.assert_array_equal(stopped[0, :first], unrolled[0, :first])
    assert (stopped[0, first:] == PAD_ID).all()
    np.testing.assert_array_equal(stopped[1], np.where(np.cumsum(unrolled[1] == end) > 0,
                                                       PAD_ID, unrolled[1]))


@pytest.mark.slow
def test_layer_benchmark_reports_both_layers_with_ratios():
    lines = []
    results = layers.benchmark_layers(batch=4, steps=3, input_dim=5, units=6, rounds=1,
                                      repeats=1, printer=lines.append)
    assert [(r["layer"], r["mode"]) for r in results] == [
        ("LSTM", "inference"), ("LSTM", "training"), ("GRU", "inference"), ("GRU", "training")
    ]
    for r in results:
        assert r["ratio"] == r["keras_seconds"] / r["zoo_seconds"] > 0
        assert r["matmul_gflops"] > 0
    assert lines[2].split() == ["layer", "mode", "zoo", "seq/s", "keras", "seq/s", "zoo/keras",
                                "zoo", "GFLOP/s", "of", "matmul"]
    # before each layer's rows, the layout of its inference loop (fixed by tests/conftest.py)
    assert lines[3] == "lstm: inference loop feature_major (ZOO_RNN_LAYOUT)"
    assert lines[6] == "gru_reset_after: inference loop feature_major (ZOO_RNN_LAYOUT)"
    assert len(lines) == 9


def test_translation_ratios_compare_with_the_rebuilt_tutorial():
    speed = [{"runtime": r, "beam_size": b, "latency_ms": 2.0 * b, "sentences_per_second": 600.0}
             for r in ("keras", "saved_model", "tflite_float32", "tflite_dynamic") for b in (1, 5)]
    results = {"speed": speed, "tutorial": {"tutorial_exported": 150.0, "tutorial_loop": 400.0}}
    lines = []
    translate._print_speed_ratios(results, 64, lines.append)
    assert lines[-1] == (
        "greedy batch-64 throughput, best of Keras/SavedModel: 600 sentences/s = 1.50x the TF "
        "tutorial's translator rebuilt here (400)")


def test_decoding_flops_count_the_matrix_products_by_hand():
    from zoo.models import AttentionSeq2Seq, BottleneckSeq2Seq

    e, u, a, v = 4, 6, 5, 11
    attention = AttentionSeq2Seq("zh", "en", 9, v, embedding_dim=e, units=u, attention_units=a)
    s, steps = 7, 3
    encoder = 2 * s * (e + u) * 3 * u + s * 2 * u * a + u * u
    step = (u * a + s * a + s * 2 * u) + (e + 3 * u) * 3 * u + (3 * u + e) * e + e * v
    assert attention.decoding_flops(s, steps) == 2 * (encoder + steps * step)
    bottleneck = BottleneckSeq2Seq("zh", "en", 9, v, embedding_dim=e, units=u)
    step = (e + u) * 4 * u + (u + e) * e + e * v
    assert bottleneck.decoding_flops(s, steps) == 2 * (s * (e + u) * 4 * u + steps * step)


def test_greedy_work_counts_each_sentence_to_its_end(toy_translators):
    from conftest import SOURCES, TARGETS

    model = toy_translators["attention"]
    work = translate.greedy_work(model, SOURCES)
    target_steps = [len(model.preprocessor.target_rows([t])[0]) + 1 for t in TARGETS]  # + [END]
    source_lengths = [len(row) for row in model.preprocessor.source_rows(SOURCES)]
    assert work["mean_steps"] == pytest.approx(np.mean(target_steps))
    assert work["flops_per_sentence"] == pytest.approx(np.mean(
        [model.decoding_flops(s, t) for s, t in zip(source_lengths, target_steps)]))
    results = {"greedy_work": work, "speed": [
        {"runtime": "keras", "beam_size": 1, "sentences_per_second": 500.0}]}
    lines = []
    translate._print_greedy_work(results, 100.0, lines.append)
    gflops = work["flops_per_sentence"] * 500 / 1e9
    assert lines == [
        f"greedy, one batch: {work['flops_per_sentence'] / 1e6:.1f} MFLOP per sentence "
        f"({work['mean_steps']:.1f} decoder steps on average; matrix products); Keras at 500 "
        f"sentences/s computes {gflops:.1f} GFLOP/s, {gflops / 100:.0%} of this machine's "
        "matmul rate (100 GFLOP/s)"]


def test_paired_speed_ratio_is_the_median_of_each_rounds_ratio():
    baseline = [2.0, 2.0, 4.0, 2.0, 9.0]
    this = [1.0, 4.0, 2.0, 1.0, 3.0]  # ratios 2, 0.5, 2, 2, 3: a slow round hits both sides
    paired = paired_speed_ratio(this, baseline, resamples=500)
    assert paired["ratio"] == 2.0
    low, high = paired["interval_95"]
    assert 0.5 <= low <= 2.0 <= high <= 3.0
    steady = paired_speed_ratio([1.0] * 8, [1.25] * 8)
    assert steady == {"ratio": 1.25, "interval_95": [1.25, 1.25]}


def test_rounds_alternate_their_order():
    """Each function runs first in every other round, after the warm-up calls."""
    calls = []
    samples = alternate_rounds(
        {name: (lambda name=name: calls.append(name)) for name in "abc"}, 3, 1)
    assert calls[6:] == list("abc") + list("cba") + list("abc")
    assert {name: len(seconds) for name, seconds in samples.items()} == {"a": 3, "b": 3, "c": 3}


def test_rounds_count_what_a_function_reports_it_took_when_told_to():
    """A worker process's own timing, not the exchange with it: the call's seconds here
    (a sleep) would be over 0.01."""
    def reporting(seconds):
        def call():
            time.sleep(0.01)
            return seconds
        return call

    samples = alternate_rounds({"a": reporting(0.5), "b": reporting(2.0)}, 3, 2, reported=True)
    assert samples == {"a": [0.5] * 3, "b": [2.0] * 3}
    timed = alternate_rounds({"a": reporting(0.5)}, 2, 1)
    assert all(0.01 <= seconds < 0.5 for seconds in timed["a"])


def _layout_samples(*ratios):
    """Five rounds at each batch (1, 4, ...), batch-major's times ``ratios`` times
    feature-major's."""
    return {batch: {"feature_major": [1.0] * 5, "batch_major": list(r)}
            for batch, r in zip((1, 4), ratios)}


def test_remeasuring_prints_each_batchs_ratio_and_replaces_the_kept_choice(monkeypatch,
                                                                            tmp_path):
    from zoo.layers import kernel_choice, machine_load

    path = tmp_path / "rnn_layouts.json"
    monkeypatch.setenv("ZOO_RNN_LAYOUT_CACHE", str(path))
    monkeypatch.setenv("ZOO_RNN_LAYOUT", "measure")
    monkeypatch.setattr(kernel_choice, "_CHOSEN", {})
    load = mock.Mock(return_value=0.02)  # other work's share of the cores while measuring
    monkeypatch.setattr(machine_load, "others_share", load)
    monkeypatch.setattr(machine_load, "share_now", load)
    key = kernel_choice.machine_key()
    quiet = "other work took 2% of the cores while measuring; under load from 15%"
    path.write_text(json.dumps({key: {"lstm/5x6/float32": {"feature_major_from": None}}}))

    def layout_line(samples):
        lines = []
        with mock.patch.object(kernel_choice, "measure", return_value=samples):
            lines.append(layers._inference_layout_line(
                zoo.layers.LSTM(6), 5, 6, remeasure=True, printer=lines.append))
        return lines

    assert layout_line(_layout_samples([0.5] * 5, [2.0] * 5)) == [
        "lstm: batch   1: feature-major speed-up 0.50 (0.50-0.50): batch_major",
        "lstm: batch   4: feature-major speed-up 2.00 (2.00-2.00): feature_major",
        f"lstm: decided at every batch: kept for good in {path} ({quiet})",
        f"lstm: inference loop feature-major from batch 4, batch-major below (measured on "
        f"this machine, {path})"]
    assert json.loads(path.read_text())[key]["lstm/5x6/float32"]["feature_major_from"] == 4

    in_blocks = _layout_samples([0.5] * 5, [2.0] * 5)
    for batch in in_blocks:
        in_blocks[batch]["batch_major_in_blocks"] = [0.25] * 5
    assert layout_line(in_blocks) == [
        "lstm: batch   1: batch-major in blocks speed-up 2.00 (2.00-2.00): "
        "batch_major_in_blocks",
        "lstm: batch   1: feature-major speed-up 0.25 (0.25-0.25): batch_major_in_blocks",
        "lstm: batch   4: feature-major speed-up 0.25 (0.25-0.25): batch_major_in_blocks",
        f"lstm: decided at every batch: kept for good in {path} ({quiet})",
        f"lstm: inference loop feature-major at no batch size, batch-major in blocks below "
        f"(measured on this machine, {path})"]
    assert json.loads(path.read_text())[key]["lstm/5x6/float32"]["batch_major_in_blocks"]

    noisy = layout_line(_layout_samples([0.5] * 5, [0.5, 2.0, 0.6, 1.8, 0.9]))
    # batch 4 measured twice more (the same five rounds each time): 15 rounds, still across 1
    assert noisy[1] == "lstm: batch   4: feature-major speed-up 0.90 (0.60-1.80): undecided"
    assert noisy[2] == ("lstm: undecided (at some batch the layout chosen may be more than "
                        f"1.05x slower): used by this run only, measured again by the next one "
                        f"({quiet})")
    assert noisy[3].endswith(f", {path}: not kept, measured again by the next run)")
    assert "at no batch size" in noisy[3]
    assert json.loads(path.read_text()) == {key: {}}

    load.return_value = 0.48  # a busy machine: kept until a quiet start, and said so
    busy = layout_line(_layout_samples([0.5] * 5, [2.0] * 5))
    assert busy[2:] == [
        f"lstm: decided at every batch, under load: kept in {path} until a quiet start "
        "measures again (other work took 48% of the cores while measuring; under load from "
        "15%)",
        f"lstm: inference loop feature-major from batch 4, batch-major below (measured on "
        f"this machine, {path}: measured while other work took 48% of the cores, measured "
        "again at a quiet start)"]
    load.return_value = 0.02  # measured quietly, then under load: the quiet one stays
    layout_line(_layout_samples([0.5] * 5, [2.0] * 5))
    assert layout_line(_layout_samples([0.5] * 5, [0.5] * 5))[2].startswith(
        "lstm: decided at every batch: kept for good")
    load.return_value = 0.48
    assert layout_line(_layout_samples([0.5] * 5, [2.0] * 5))[2] == (
        f"lstm: measured under load: used by this run only, {path} keeps the choice measured "
        "quietly (other work took 48% of the cores while measuring; under load from 15%)")


def test_the_layout_caches_benchmark_compares_a_cache_written_under_load_with_a_quiet_one(
        monkeypatch, tmp_path):
    """Under ``busy_cores`` (here a flag, and other work's share 60%) batch-major measures
    faster at batch 4; quietly feature-major does. A new process with the cache written
    under load measures it again, so its layer runs the quiet choice; "kept before" runs
    the loaded one."""
    import contextlib

    from zoo.layers import kernel_choice, machine_load

    monkeypatch.setenv("ZOO_RNN_LAYOUT", "measure")
    monkeypatch.setattr(kernel_choice, "_CHOSEN", {})
    busy = []

    @contextlib.contextmanager
    def busy_cores():
        busy.append(True)
        yield
        busy.clear()

    monkeypatch.setattr(layers, "busy_cores", busy_cores)
    monkeypatch.setattr(machine_load, "others_share", lambda *_: 0.6 if busy else 0.0)
    monkeypatch.setattr(machine_load, "share_now", lambda *seconds: 0.0)
    loaded, quiet = _layout_samples([0.5] * 5, [0.9] * 5), _layout_samples([0.5] * 5, [2.0] * 5)
    monkeypatch.setattr(kernel_choice, "measure",
                        lambda *args, **kwargs: loaded if busy else quiet)
    lines = []
    rows = layers.benchmark_layout_caches(tmp_path, batches=(1, 4), steps=3, input_dim=2,
                                          units=3, rounds=2, cells=("GRU",),
                                          printer=lines.append)
    assert [row["layouts"] for row in rows] == [
        {"under load": "batch_major", "quiet": "batch_major", "kept before": "batch_major"},
        {"under load": "feature_major", "quiet": "feature_major", "kept before": "batch_major"}]
    assert ("gru_reset_after: measured again at this start; before: other work took 60% of "
            "the cores while measuring; now: other work took 0% of the cores while "
            "measuring") in lines
    for row in rows:
        assert set(row["over_quiet"]) == {"under load", "kept before"}
        assert all(paired["ratio"] > 0 for paired in row["over_keras"].values())
    assert lines[-1].startswith("GRU batch 4     feature_major, feature_major, batch_major")


def test_decoding_benchmark_needs_a_checkout_to_compare_with(tmp_path):
    with pytest.raises(ValueError, match="--baseline must be a checkout of the zoo"):
        decoding.benchmark_decoding("gru_bahdanau_cmn_en", tmp_path)


@pytest.mark.slow
def test_decoding_benchmark_compares_two_processes_case_by_case():
    """Against this very checkout: both sides translate, each case is timed on both."""
    from pathlib import Path

    checkout = Path(decoding.__file__).resolve().parents[2]
    lines = []
    results = decoding.benchmark_decoding("gru_bahdanau_cmn_en", checkout, batch=4,
                                          latency_sentences=2, rounds=1, printer=lines.append)
    assert [(c["beam_size"], c["batch"]) for c in results["cases"]] == [(1, 4), (5, 4), (1, 1),
                                                                        (5, 1)]
    for case in results["cases"]:
        assert case["sentences_per_second"] > 0 and case["baseline_sentences_per_second"] > 0
        # One round: its ratio is the ratio of the two speeds, and nothing to resample.
        assert case["ratio"] == pytest.approx(
            case["sentences_per_second"] / case["baseline_sentences_per_second"])
        assert case["interval_95"] == pytest.approx([case["ratio"]] * 2)
    assert lines[2].startswith("greedy, batch of 4")
    ratio = results["cases"][0]["ratio"]
    assert lines[2].endswith(f"{ratio:>8.2f}  {ratio:.2f}-{ratio:.2f}")


@pytest.mark.slow
def test_decoding_options_benchmark_times_each_option_against_none():
    lines = []
    results = decoding.benchmark_decoding_options("gru_bahdanau_cmn_en", batch=3, rounds=1,
                                                  printer=lines.append)
    options = list(decoding.DECODING_OPTIONS)
    assert [(c["beam_size"], c["option"]) for c in results["cases"]] == [
        *((1, o) for o in options), *((5, o) for o in options), (5, "coverage_penalty=0.2")]
    for case in results["cases"]:
        assert case["sentences_per_second"] > 0
        if case["option"] == "none":  # against itself, in the same round
            assert case["ratio"] == 1.0 and case["interval_95"] == [1.0, 1.0]
    assert results["batch"] == 3 and lines[1].split() == ["search", "option", "sentences/s",
                                                          "ratio", "95%", "interval"]
    assert lines[2].startswith("greedy  none") and lines[2].endswith("1.00  1.00-1.00")


def test_a_thread_setting_is_n_or_intra_over_inter():
    from zoo.benchmarks.timing import thread_setting

    assert thread_setting("2") == (2, 2) and thread_setting("1/2") == (1, 2)
    for bad in ("0", "1/", "a", "1/2/3", "-1", "1.5"):
        with pytest.raises(ValueError, match=f"N/M .* positive whole numbers; received "
                                             f"'{bad}'"):
            thread_setting(bad)


def test_a_settings_greedy_share_is_of_the_matmul_rate_on_as_many_cores_as_it_uses():
    settings = {"1": (1, 1), "2": (2, 2), "1/2": (1, 2), "4/1": (4, 1)}
    assert [decoding._limit_label(s, settings) for s in settings.values()] == [
        "1", "2", "2", "4/1"]


@pytest.mark.slow
def test_decoding_threads_benchmark_times_each_setting_in_a_process_of_its_own():
    lines = []
    results = decoding.benchmark_decoding_threads("gru_bahdanau_cmn_en", [(1, 1), (1, 2)],
                                                  batch=3, latency_sentences=2, rounds=1,
                                                  printer=lines.append)
    assert results["settings"] == ["1", "1/2"]
    assert [(c["threads"], c["beam_size"], c["batch"], c["back_to_back"])
            for c in results["cases"]] == [
        (t, beam, batch, warm) for batch, beam, warm in (
            (3, 1, False), (3, 5, False), (1, 1, False), (1, 5, False), (3, 1, True),
            (3, 5, True)) for t in ("1", "1/2")]
    for case in results["cases"]:
        assert case["sentences_per_second"] > 0
        if case["threads"] == "1":  # against itself, in the same round
            assert case["ratio"] == 1.0
    assert set(results["matmul_gflops"]) == {"1", "1/2"}
    for warm, suffix in ((False, ""), (True, "_back_to_back")):
        speed = {(c["threads"], c["beam_size"]): c["sentences_per_second"]
                 for c in results["cases"] if (c["batch"], c["back_to_back"]) == (3, warm)}
        for label in ("1", "1/2"):  # no setting of two intra-op threads: each its own rate
            assert results["greedy_share_of_matmul_rate" + suffix][label] == pytest.approx(
                results["greedy_flops_per_sentence"] * speed[label, 1] / 1e9
                / results["matmul_gflops"][label])
            assert results["beam_over_greedy" + suffix][label] == pytest.approx(
                speed[label, 5] / speed[label, 1])
    assert lines[1].split() == ["case", "1", "1/2"] and lines[2].startswith("greedy, batch of 3")
    assert lines[-3].startswith("beam 5, batch of 3, back to back")
    assert lines[-1].startswith("threads 1/2 (matmul rate on threads 1/2: ")
    assert "greedy on the batch computes" in lines[-1] and "; back to back " in lines[-1]
