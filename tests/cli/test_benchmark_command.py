"""`zoo benchmark`: its options reach the benchmarks; its usage errors."""

from unittest import mock

import pytest

from zoo import cli
from zoo.benchmarks import layers

from commandline import run_zoo


def test_the_remeasure_flag_reaches_the_layers_benchmark():
    with mock.patch.object(layers, "benchmark_layers", return_value=[]) as benchmark_layers:
        assert cli.main(["benchmark", "layers", "--remeasure", "--batch", "2"]) == 0
        assert cli.main(["benchmark", "layers"]) == 0
    assert benchmark_layers.call_args_list == [mock.call(batch=2, remeasure=True),
                                               mock.call(remeasure=False)]


@pytest.mark.slow
def test_benchmark_usage_errors():
    result = run_zoo("benchmark", "translate")
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: zoo benchmark translate needs a preset name.\n")
    result = run_zoo("benchmark", "layers", "--batch", "0")
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: --batch must be a positive number of sequences; got 0.\n")


def test_thread_settings_reach_the_decoding_benchmark(capsys):
    from zoo.benchmarks import decoding

    with mock.patch.object(decoding, "benchmark_decoding_threads",
                           return_value={}) as benchmark_threads:
        assert cli.main(["benchmark", "decoding", "gru_bahdanau_cmn_en", "--threads", "1", "2",
                         "1/2", "--rounds", "3"]) == 0
    assert benchmark_threads.call_args_list == [
        mock.call("gru_bahdanau_cmn_en", [(1, 1), (2, 2), (1, 2)], data_dir=None, rounds=3)]
    assert cli.main(["benchmark", "decoding", "gru_bahdanau_cmn_en", "--threads", "1",
                     "--baseline", "."]) == 2
    assert cli.main(["benchmark", "translate", "gru_bahdanau_cmn_en", "--threads", "1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "zoo: error: --threads compares thread settings of this checkout: run it without "
        "--baseline.",
        "zoo: error: --threads is an option of zoo benchmark layers and decoding, not of zoo "
        "benchmark translate."]
    assert cli.main(["benchmark", "decoding", "gru_bahdanau_cmn_en", "--threads", "2", "1/x"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: --threads must be positive numbers of threads, N or N/M (intra-op/"
        "inter-op); got 2 1/x.\n")


def test_training_options_reach_the_training_benchmark(capsys):
    from zoo.benchmarks import training

    with mock.patch.object(training, "benchmark_training", return_value={}) as benchmark:
        assert cli.main(["benchmark", "training"]) == 0
        assert cli.main(["benchmark", "training", "gru_bahdanau_en_cmn", "--backends", "jax",
                         "--threads", "1", "2", "--batches", "8", "16", "--width", "16", "101",
                         "--real-batches", "0", "--units", "6", "--embedding-dim", "4",
                         "--vocabulary", "40", "50", "--rounds", "2", "--batches-file", "b.npz",
                         "--data-dir", "data", "--precision", "float32", "mixed_bfloat16"]) == 0
    common = {"batches_file": None, "embedding_dim": None, "units": None, "vocabulary": None,
              "data_dir": None, "backends": None}
    assert benchmark.call_args_list == [
        mock.call("gru_bahdanau_cmn_en", threads=[None], **common),
        mock.call("gru_bahdanau_en_cmn", threads=[1, 2], backends=["jax"], batches=[8, 16],
                  widths=[16, 101], real_batches=0, units=6, embedding_dim=4,
                  vocabulary=(40, 50), rounds=2, batches_file="b.npz", data_dir="data",
                  precisions=["float32", "mixed_bfloat16"])]


def test_training_benchmark_usage_errors(capsys, monkeypatch):
    from zoo.benchmarks import training

    def measured(*_, **__):
        raise AssertionError("measured despite a bad option")

    monkeypatch.setattr(training, "_run_worker", measured)
    monkeypatch.setattr(training, "mix_batches", measured)
    for argv in (["--threads", "1/2"], ["--backends", "tensorfow"], ["--batch", "4"],
                 ["--width", "0"], ["--real-batches", "-2"], ["--remeasure"],
                 ["--precision", "float16"]):
        assert cli.main(["benchmark", "training", *argv]) == 2
    assert cli.main(["benchmark", "layers", "--backends", "jax", "--width", "8"]) == 2
    assert cli.main(["benchmark", "decoding", "--precision", "mixed_bfloat16"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        ("zoo: error: --threads for training takes positive numbers of cores (N, each run "
         "pinned to N cores); got 1/2."),
        ("zoo: error: --backends: 'tensorfow' is not a Keras backend; accepted: tensorflow, "
         "jax, torch."),
        "zoo: error: --batch is not an option of zoo benchmark training.",
        "zoo: error: --width takes positive whole numbers; received [0].",
        "zoo: error: --real-batches takes a number of batches, 0 or more; received -2.",
        "zoo: error: --remeasure is not an option of zoo benchmark training.",
        ("zoo: error: --precision must be one of float32, mixed_bfloat16; received "
         "'float16'."),
        ("zoo: error: --backends, --width: options of zoo benchmark training, not of zoo "
         "benchmark layers."),
        ("zoo: error: --precision: option of zoo benchmark training, not of zoo benchmark "
         "decoding.")]


def test_fine_tune_options_reach_the_fine_tune_benchmark(capsys):
    from zoo.benchmarks import fine_tune

    with mock.patch.object(fine_tune, "benchmark_fine_tune",
                           return_value={"runs": []}) as benchmark:
        assert cli.main(["benchmark", "fine-tune"]) == 0
        assert capsys.readouterr().out == ""
        assert cli.main(["benchmark", "fine-tune", "gru_bahdanau_en_fr", "--pairs", "500",
                         "--precision", "mixed_bfloat16", "--threads", "2/1", "--rounds", "3",
                         "--epochs", "2", "--seed", "7", "--data-dir", "data", "--json"]) == 0
    assert capsys.readouterr().out == '{"runs": []}\n'
    assert benchmark.call_args_list == [
        mock.call("gru_bahdanau_cmn_en", threads=None, data_dir=None),
        mock.call("gru_bahdanau_en_fr", threads=(2, 1), data_dir="data", pairs=500,
                  precisions=["mixed_bfloat16"], rounds=3, epochs=2, seed=7)]


def test_fine_tune_benchmark_usage_errors(capsys, monkeypatch):
    from zoo.benchmarks import fine_tune, training

    def measured(*_, **__):
        raise AssertionError("measured despite a bad option")

    monkeypatch.setattr(training, "_run_worker", measured)
    monkeypatch.setattr(fine_tune, "read_corpora", measured)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    for argv in (["--pairs", "0"], ["--precision", "float16"], ["--threads", "1", "2"],
                 ["--threads", "2/x"], ["--rounds", "0"], ["--epochs", "0"], ["--seed", "-1"],
                 ["bilstm_sst2"], ["--batches", "8", "--units", "4"], ["--remeasure"],
                 ["--baseline", "."]):
        assert cli.main(["benchmark", "fine-tune", *argv]) == 2
    assert cli.main(["benchmark", "training", "--pairs", "100"]) == 2
    assert cli.main(["benchmark", "decoding", "gru_bahdanau_cmn_en", "--epochs", "2",
                     "--seed", "1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "zoo: error: --pairs takes a positive whole number; received 0.",
        "zoo: error: --precision must be one of float32, mixed_bfloat16; received 'float16'.",
        ("zoo: error: --threads for fine-tune takes one setting, N or N/M (intra-op/inter-op); "
         "got 1 2."),
        ("zoo: error: --threads must be positive numbers of threads, N or N/M (intra-op/"
         "inter-op); got 2/x."),
        "zoo: error: --rounds takes a positive whole number; received 0.",
        "zoo: error: --epochs takes a positive whole number; received 0.",
        "zoo: error: --seed takes a whole number from 0 to 4294967295; received -1.",
        ("zoo: error: zoo benchmark fine-tune fine-tunes a translator; 'bilstm_sst2' is a "
         "TextClassifier, not a translator. Translators: gru_bahdanau_cmn_en, "
         "gru_bahdanau_en_cmn, gru_bahdanau_en_fr, lstm_seq2seq_cmn_en."),
        ("zoo: error: --batches, --units: options of zoo benchmark training, not of zoo "
         "benchmark fine-tune."),
        "zoo: error: --remeasure is not an option of zoo benchmark fine-tune.",
        "zoo: error: --baseline is not an option of zoo benchmark fine-tune.",
        "zoo: error: --pairs: option of zoo benchmark fine-tune, not of zoo benchmark training.",
        ("zoo: error: --epochs, --seed: options of zoo benchmark fine-tune, not of zoo "
         "benchmark decoding.")]
