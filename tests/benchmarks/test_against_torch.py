"""`zoo benchmark layers --against torch`: torch's layers given the zoo's weights, the
side-by-side table, the thread settings, and the error without PyTorch."""

import io
import json
import sys
from unittest import mock

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo.layers
from zoo import cli
from zoo.benchmarks import layers, timing


def _zoo_layer(cell, **options):
    keras.utils.set_random_seed(0)
    layer = getattr(zoo.layers, cell)(6, return_sequences=True, **options)
    layer.build((3, 4, 5))
    # Keras sets a GRU's biases to zeros and an LSTM's to 0 and 1: give every gate's
    # bias its own value, so that a bias copied to the wrong gate shows.
    layer.cell.bias.assign(np.random.default_rng(1).normal(size=layer.cell.bias.shape))
    return layer


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_torch_layer_computes_the_zoo_layers_outputs_with_its_weights(cell):
    torch = pytest.importorskip("torch")
    layer = _zoo_layer(cell)
    inputs = np.random.default_rng(0).standard_normal((3, 4, 5), np.float32)
    with torch.no_grad():
        torch_outputs = layers.torch_layer(layer)(torch.from_numpy(inputs))[0].numpy()
    np.testing.assert_allclose(torch_outputs, layer(inputs), atol=1e-6)


def test_torch_layer_refuses_a_gru_with_other_equations():
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"torch.nn.GRU computes a GRU with biases and "
                                         r"reset_after=True; got use_bias=True, "
                                         r"reset_after=False\.$"):
        layers.torch_layer(_zoo_layer("GRU", reset_after=False))


def test_different_outputs_stop_the_benchmark_before_timing():
    outputs = {"zoo": np.zeros((2, 3)), "keras": np.zeros((2, 3)), "torch": np.full((2, 3), 1e-4)}
    with pytest.raises(ValueError, match=r"^torch's outputs differ from zoo's by up to 0.0001 "
                                         r"\(more than 1e-05\) on the same inputs and weights"):
        layers.check_same_outputs(outputs)
    outputs["torch"] = np.full((2, 3), 5e-6)
    layers.check_same_outputs(outputs)


def test_against_torch_times_every_case_side_by_side():
    pytest.importorskip("torch")
    lines = []
    results = layers.benchmark_layers_against_torch(
        batches=(2,), steps=3, input_dim=5, units=6, rounds=1, matmul_size=64,
        printer=lines.append)
    assert [(r["layer"], r["mode"], r["batch"]) for r in results] == [
        (cell, mode, 2) for cell in ("LSTM", "GRU") for mode in ("inference", "training")]
    for r in results:
        flops = layers.recurrent_layer_flops(r["layer"], r["batch"], 3, 5, 6)
        flops *= 3 if r["mode"] == "training" else 1
        for name in ("zoo", "keras", "torch"):
            seconds = r[name]["seconds"]
            assert r[name]["interval_95"] == [seconds, seconds]  # one round
            assert r[name]["share_of_matmul"] == pytest.approx(
                flops / seconds / 1e9 / r["matmul_gflops"])
        for other in ("keras", "torch"):  # one round: the ratio of the two times
            assert r[f"zoo_over_{other}"]["ratio"] == pytest.approx(
                r[other]["seconds"] / r["zoo"]["seconds"])
    assert lines[2].split() == ["case", "zoo", "ms", "keras", "ms", "torch", "ms", "zoo/keras",
                                "zoo/torch", "share", "zoo", "keras", "torch"]
    assert lines[3].startswith("LSTM inference, batch 2 ") and len(lines) == 3 + 4


def test_without_torch_the_command_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert cli.main(["benchmark", "layers", "--against", "torch"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: zoo benchmark layers --against torch needs PyTorch, the zoo's optional "
        'extra torch: pip install "keras-sequence-zoo[torch]"\n')


def test_the_command_reaches_the_torch_benchmark_with_its_options():
    with mock.patch.object(layers, "import_torch"), \
            mock.patch.object(layers, "benchmark_layers_against_torch",
                              return_value=[]) as against:
        assert cli.main(["benchmark", "layers", "--against", "torch", "--batch", "2",
                         "--rounds", "1"]) == 0
        assert cli.main(["benchmark", "layers", "--against", "torch"]) == 0
    assert against.call_args_list == [mock.call(rounds=1, batches=(2,)), mock.call()]


@pytest.mark.parametrize("arguments, error", [
    (["layers", "--threads", "1", "0"], "--threads must be positive numbers of threads, N or N/M "
                                        "(intra-op/inter-op); got 1 0."),
    (["decoding", "gru_bahdanau_cmn_en", "--threads", "0/2"],
     "--threads must be positive numbers of threads, N or N/M (intra-op/inter-op); got 0/2."),
    (["layers", "--against", "torch", "--remeasure"],
     "--remeasure measures the layouts of zoo benchmark layers' own shapes: run it without "
     "--against."),
    (["translate", "gru_bahdanau_cmn_en", "--threads", "2"],
     "--threads is an option of zoo benchmark layers and decoding, not of zoo benchmark "
     "translate."),
])
def test_benchmark_option_errors(arguments, error, capsys):
    assert cli.main(["benchmark", *arguments]) == 2
    assert capsys.readouterr() == ("", f"zoo: error: {error}\n")


def test_threads_cannot_change_once_tensorflow_has_started():
    tf.constant(1.0) + 1.0  # TensorFlow has run something in this process
    count = tf.config.threading.get_intra_op_parallelism_threads() + 1
    with pytest.raises(ValueError, match=rf"^Cannot compute on {count} threads: TensorFlow has "
                                         r"already started on \S+ intra-op threads in this "
                                         r"process, and sets its thread pools once\.$"):
        timing.use_threads(count)


class _FakeChild:
    """A `zoo benchmark layers --threads N --json` that prints its table and its JSON."""

    def __init__(self, command, **options):
        count = command[command.index("--threads") + 1]
        self.stdout = io.StringIO(f"table on {count} threads\n"
                                  + json.dumps([{"threads": int(count)}]) + "\n")
        self.returncode = 0

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        return False


def test_several_thread_counts_run_in_a_process_each(capsys):
    with mock.patch.object(layers, "import_torch"), \
            mock.patch("subprocess.Popen", side_effect=_FakeChild) as popen:
        assert cli.main(["benchmark", "layers", "--against", "torch", "--threads", "1", "2",
                         "--rounds", "3", "--json"]) == 0
    assert [call.args[0][1:] for call in popen.call_args_list] == [
        ["-m", "zoo", "benchmark", "layers", "--threads", count, "--json", "--against", "torch",
         "--rounds", "3"] for count in ("1", "2")]
    assert capsys.readouterr().out == (
        "table on 1 threads\ntable on 2 threads\n" + '[{"threads": 1}, {"threads": 2}]\n')
