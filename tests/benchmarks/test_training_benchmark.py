"""`zoo benchmark training`: the plain-Keras twin has the zoo's parameters, the figures it
prints agree with each other, bad options say what they received and what is accepted,
and the JAX process runs where TensorFlow cannot be imported (as on the GPU machine)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.training.test_device_run import NO_TENSORFLOW
from zoo.backend import usable_cores
from zoo.benchmarks import training
from zoo.text.vocabulary import END_ID, PAD_ID, START_ID

ROOT = Path(__file__).resolve().parents[2]
TINY = {"embedding_dim": 8, "units": 6, "vocabulary": (40, 50)}


def test_the_plain_keras_translator_has_the_zoos_weights_and_arithmetic():
    sizes, optimisation = training.model_sizes("gru_bahdanau_cmn_en", 8, 6, (40, 50))
    assert sizes == {"embedding_dim": 8, "units": 6, "attention_units": 6, "dropout": 0.2,
                     "source_vocabulary_size": 40, "target_vocabulary_size": 50}
    assert optimisation == {"learning_rate": 0.0015, "ema_momentum": 0.999,
                            "label_smoothing": 0.1}
    models = training.build_models(sizes, optimisation)
    # The same shapes (the score vector a Dense of one unit there: [units, 1])
    shapes = {side: sorted(tuple(d for d in w.shape if d != 1) for w in model.weights
                           if w.trainable) for side, model in models.items()}
    assert shapes["zoo"] == shapes["keras"]
    assert models["zoo"].count_params() == models["keras"].count_params()
    e, u, v = 8, 6, 50
    source, target_in, target_out = training.fixed_batch(3, 5, sizes)
    assert source.shape == target_in.shape == target_out.shape == (3, 5)
    assert source.min() >= 4 and target_out.min() >= 4  # no padding, no special ids
    np.testing.assert_array_equal(target_in[:, 1:], target_out[:, :-1])
    # A step's products by hand: the encoder (two GRUs, the keys, the bridge) once, the
    # decoder's step (attention, cell, deep output, tied output layer) at each position.
    encoder = 2 * 5 * (e + u) * 3 * u + 5 * 2 * u * u + u * u
    step = (u * u + 5 * u + 5 * 2 * u) + (e + 3 * u) * 3 * u + (3 * u + e) * e + e * v
    forward = 3 * 2 * (encoder + 5 * step)
    assert training.step_flops(models["zoo"], (source, target_in, target_out)) == 3 * forward
    # The same ids in, logits of the same shape out; ids past a smaller vocabulary read as
    # unknown, padding stays padding.
    for model in models.values():
        assert tuple(model((source, target_in)).shape) == (3, 5, v)
    fitted = training._fitted_to([(np.array([[45, 3, 0]]),) * 3], sizes)
    np.testing.assert_array_equal(fitted[0][0], [[1, 3, 0]])
    np.testing.assert_array_equal(fitted[0][1], [[45, 3, 0]])


def test_bad_options_name_what_was_received_and_what_is_accepted(monkeypatch):
    def measured(*_, **__):
        raise AssertionError("measured despite a bad option")

    monkeypatch.setattr(training, "_run_worker", measured)
    monkeypatch.setattr(training, "mix_batches", measured)
    with pytest.raises(ValueError, match=r"--backends: 'tensorfow' is not a Keras backend; "
                                         r"accepted: tensorflow, jax, torch\."):
        training.check_backends(["tensorfow"])
    with pytest.raises(ValueError, match=r"takes each backend once; received tensorflow "
                                         r"tensorflow\."):
        training.check_backends(["tensorflow", "tensorflow"])
    # As in the README's environment, which installs TensorFlow alone.
    with monkeypatch.context() as only_tensorflow:
        only_tensorflow.setattr(training, "installed_backends", lambda: ["tensorflow"])
        with pytest.raises(ValueError, match=r"--backends: jax is not installed here; "
                                             r"installed: tensorflow\."):
            training.check_backends(["tensorflow", "jax"])
    cases = [({"batches": [64, 0]}, r"--batches takes positive whole numbers; received \[64, 0\]"),
             ({"widths": [-3]}, r"--width takes positive whole numbers; received \[-3\]"),
             ({"threads": [0]}, r"--threads takes positive whole numbers; received \[0\]"),
             ({"threads": [1, usable_cores() + 1]},
              rf"--threads {usable_cores() + 1}: this process may use {usable_cores()} cores\."),
             ({"units": 0}, r"--units takes a positive whole number; received 0"),
             ({"vocabulary": (40, 3)}, (r"--vocabulary takes two sizes of at least 5 .*"
                                        r"received \[40, 3\]")),
             ({"real_batches": -1}, (r"--real-batches takes a number of batches, 0 or more; "
                                     r"received -1")),
             ({"rounds": 0}, r"--rounds takes a positive number; received 0"),
             ({"batches": [], "real_batches": 0}, r"Nothing to measure"),
             ({"precisions": ["bfloat16"]}, (r"--precision must be one of float32, "
                                             r"mixed_bfloat16; received 'bfloat16'\.")),
             ({"precisions": ["float32", "float32"]},
              r"--precision takes each precision once; received float32 float32\.")]
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            training.benchmark_training(backends=["tensorflow"], **options)
    monkeypatch.delattr(training.os, "sched_setaffinity")  # as on macOS and Windows
    with pytest.raises(ValueError, match=r"--threads 1 2: pinning a process to cores needs "
                                         r"Linux's CPU affinity"):
        training.benchmark_training(backends=["tensorflow"], threads=[1, 2])
    with pytest.raises(ValueError, match=r"measures AttentionSeq2Seq translation recipes; "
                                         r"'lstm_seq2seq_cmn_en' is a translation recipe of "
                                         r"BottleneckSeq2Seq"):
        training.model_sizes("lstm_seq2seq_cmn_en")


def test_missing_corpora_stop_the_real_batches_naming_the_file(tmp_path):
    with pytest.raises(ValueError) as error:
        training.mix_batches("gru_bahdanau_cmn_en", 2, data_dir=tmp_path, printer=lambda _: None)
    message = str(error.value)
    assert message.startswith("zoo benchmark training gru_bahdanau_cmn_en: its real batches "
                              "need the recipe's corpora: ")
    assert f"{tmp_path}/tatoeba/cmn-eng.tsv not found" in message
    assert message.endswith("(or --real-batches 0: fixed shapes only).")


def _real_like_batches():
    """Two batches as ``rows_dataset`` pads them: widths 6 and 8, empty rows and padding."""
    rng = np.random.default_rng(1)
    batches = []
    for width, lengths in ((6, [5, 3, 0, 0]), (8, [7, 6, 6, 2])):
        source = np.zeros((4, width), np.int32)
        target_in, target_out = source.copy(), source.copy()
        for row, length in enumerate(lengths):
            if length:
                source[row, :length] = rng.integers(4, 40, length)
                words = rng.integers(4, 60, length - 1)  # some past a vocabulary of 50
                target_in[row, :length] = [START_ID, *words]
                target_out[row, :length] = [*words, END_ID]
        batches.append((source, target_in, target_out))
    return batches


ROW = re.compile(r"^(fixed \S+|mix, \d+ batches of \d+)\s+(zoo|keras)\s+([\d.]+)\s+([\d.]+)\s+"
                 r"([\d.]+)-([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+(.*)$")


def _check_printed_figures(lines, results):
    rows = [ROW.match(line) for line in lines]
    rows = [row for row in rows if row]
    runs = results["runs"]
    assert len(rows) == sum(2 * len(run["cases"]) for run in runs)
    for row in rows:
        tokens, step_ms, low, high, speed = (float(row.group(i)) for i in (3, 4, 5, 6, 7))
        assert tokens > 0 and 0 < low <= step_ms <= high
        assert speed == pytest.approx(tokens / (step_ms / 1000), rel=0.01)
    for run in runs:
        # The first step of all traces or compiles the step (later shapes may reuse it)
        first_shape = run["cases"][0]["shapes"][0]
        assert all(run["cases"][0][side]["compile_seconds"][first_shape] > 0
                   for side in ("zoo", "keras"))
        assert run["parameters"]["zoo"] == run["parameters"]["keras"]
        assert 0 <= run["others_share_while_timing"] <= 1  # read from /proc/stat here
        assert (f"other work took {run['others_share_while_timing']:.0%} of this process's "
                "cores while the rounds were timed") in lines
        assert all(rate > 0 for rate in run["matmul_gflops"].values())
        assert run["limit_gflops"] == max(run["matmul_gflops"].values())
        for case in run["cases"]:
            for side in ("zoo", "keras"):
                figures = case[side]
                assert figures["target_tokens_per_second"] == pytest.approx(
                    case["target_tokens_per_step"] / figures["step_seconds"])
                assert 0 < figures["share_of_matmul_rate"] <= 1
                assert figures["share_of_matmul_rate"] == pytest.approx(
                    case["flops_per_step"] / figures["step_seconds"] / 1e9 / run["limit_gflops"])
                assert set(figures["compile_seconds"]) == set(case["shapes"])
            low, high = case["zoo_over_keras"]["interval_95"]
            assert 0 < low <= case["zoo_over_keras"]["ratio"] <= high


@pytest.mark.slow
def test_both_backends_print_consistent_figures_for_fixed_shapes_and_real_batches(tmp_path):
    """TensorFlow and JAX, each in its process: tokens/s is the tokens of a step over its
    time, the share is in (0, 1], the real batches count their target tokens only."""
    batches_file = tmp_path / "batches.npz"
    training.write_batches(batches_file, _real_like_batches())
    lines = []
    results = training.benchmark_training(
        backends=["tensorflow", "jax"], batches=[4], widths=[5], real_batches=2,
        batches_file=batches_file, rounds=3, wait_for_quiet=False, printer=lines.append,
        embedding_dim=TINY["embedding_dim"], units=TINY["units"], vocabulary=TINY["vocabulary"])
    assert [run["backend"] for run in results["runs"]] == ["tensorflow", "jax"]
    assert lines[0] == f"real batches: read from {batches_file}"
    _check_printed_figures(lines, results)
    for run in results["runs"]:
        fixed, real = run["cases"]
        assert (fixed["case"], fixed["target_tokens_per_step"], fixed["shapes"]) == (
            "fixed 4x5", 20, ["4x5"])
        # 5 + 3 and 7 + 6 + 6 + 2 target tokens (their [END] included), no padding nor
        # empty rows counted, in two steps
        assert (real["case"], real["target_tokens_per_step"], real["shapes"]) == (
            "mix, 2 batches of 4", 14.5, ["4x6", "4x8"])
    assert lines[-3:] == [
        "summary: the zoo's target tokens/s (a core: over the threads, on the CPU)",
        *(f"  {run['backend']}, all usable cores: " + "; ".join(
            f"{case['case']} {case['zoo']['target_tokens_per_second']:,.0f}"
            for case in run["cases"]) for run in results["runs"])]


@pytest.mark.slow
def test_the_jax_run_needs_no_tensorflow_and_pins_its_threads(tmp_path):
    """As on the GPU machine: TensorFlow cannot be imported in the command's process nor in
    the one that measures (the real batches come as a file); one thread: one core."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(NO_TENSORFLOW)
    batches_file = tmp_path / "batches.npz"
    training.write_batches(batches_file, _real_like_batches())
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1])\n"
        "from zoo.benchmarks import training\n"
        "results = training.benchmark_training(backends=['jax'], threads=[1], batches=[3],"
        " widths=[4], real_batches=2, batches_file=sys.argv[2], rounds=2, wait_for_quiet=False,"
        " embedding_dim=8, units=6, vocabulary=(40, 50), printer=lambda line: None)\n"
        "print(json.dumps({'results': results, 'tensorflow': 'tensorflow' in sys.modules}))\n")
    env = {**os.environ, "PYTHONPATH": str(blocker), "KERAS_BACKEND": "jax"}
    finished = subprocess.run([sys.executable, "-c", script, str(ROOT), str(batches_file)],
                              env=env, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr
    assert "No module named 'tensorflow'" not in finished.stderr.replace(
        "(as on the accelerator)", "")
    reply = json.loads(finished.stdout.strip().splitlines()[-1])
    assert reply["tensorflow"] is False
    (run,) = reply["results"]["runs"]
    assert (run["backend"], run["device"], run["device_kind"], run["threads"]) == (
        "jax", "cpu", "cpu", 1)
    assert [case["case"] for case in run["cases"]] == ["fixed 3x4", "mix, 2 batches of 4"]


@pytest.mark.slow
def test_real_batches_are_zoo_trains_batches_of_the_recipes_mix():
    """From ../shared/data: the recipe's batch size, one of its widths each side, [START]
    before each target and [END] after it, rows of padding at the end only."""
    recipe_widths = [16, 24, 36, 56, 101]
    batches = training.mix_batches("gru_bahdanau_cmn_en", 6, printer=lambda _: None)
    widths = [source.shape[1] for source, _, _ in batches]
    assert widths == sorted(widths) and set(widths) <= set(recipe_widths)
    for source, target_in, target_out in batches:
        assert source.shape == target_in.shape == target_out.shape == (256, source.shape[1])
        pairs = np.any(target_out != PAD_ID, axis=1)
        assert pairs.sum() > 200 and (np.any(source != PAD_ID, axis=1) == pairs).all()
        lengths = (target_out[pairs] != PAD_ID).sum(axis=1)
        assert (target_in[pairs, 0] == START_ID).all()
        assert (target_out[pairs][np.arange(len(lengths)), lengths - 1] == END_ID).all()
        np.testing.assert_array_equal(target_in[pairs, 1:][target_out[pairs, :-1] != END_ID],
                                      target_out[pairs, :-1][target_out[pairs, :-1] != END_ID])
        assert source.max() < 4500 and target_out.max() < 6016


@pytest.mark.slow
def test_the_torch_run_prints_consistent_figures(tmp_path):
    """PyTorch (eager: its first step compiles nothing, it is only slower), as a GPU
    machine runs it beside JAX."""
    pytest.importorskip("torch")
    batches_file = tmp_path / "batches.npz"
    training.write_batches(batches_file, _real_like_batches())
    lines = []
    results = training.benchmark_training(
        backends=["torch"], threads=[1], batches=[3], widths=[4], real_batches=2,
        batches_file=batches_file, rounds=2, wait_for_quiet=False, printer=lines.append,
        embedding_dim=TINY["embedding_dim"], units=TINY["units"], vocabulary=TINY["vocabulary"])
    _check_printed_figures(lines, results)
    (run,) = results["runs"]
    assert (run["backend"], run["device"], run["threads"]) == ("torch", "cpu", 1)
