"""The command line: start-up noise filtered, real messages kept."""

import subprocess
import sys

from zoo._startup import is_startup_noise


def test_known_startup_notices_are_recognised():
    noise = [
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
        "I0000 00:00:1796012453.824725    3816 cudart_stub.cc:31] Could not find cuda drivers "
        "on your machine, GPU will not be used.",
        "E0000 00:00:1796012457.676840    3816 cuda_platform.cc:52] failed call to cuInit: "
        "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
        "I0000 00:00:1796012453.924674    3816 cpu_feature_guard.cc:227] This TensorFlow binary "
        "is optimized to use available CPU instructions in performance-critical operations.",
    ]
    assert all(is_startup_noise(line) for line in noise)


def test_real_warnings_are_not_noise():
    real = [
        "W0000 00:00:1796012457.676840    3816 op_level_cost_estimator.cc:699] Error in "
        "PredictCost() for the op: op: \"Softmax\"",
        "UserWarning: Skipping variable loading for optimizer 'adam'",
        "E0000 allocator.cc] Out of memory while trying to allocate 4.00GiB",
    ]
    assert not any(is_startup_noise(line) for line in real)


def test_tensorflow_starts_silently_and_keeps_python_warnings():
    script = (
        "import warnings\n"
        "from zoo._startup import import_tensorflow_quietly\n"
        "tf = import_tensorflow_quietly()\n"
        "warnings.warn('a real warning')\n"
        "print(tf.reduce_sum(tf.ones(3)).numpy())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.strip() == "3.0"
    assert result.stderr.splitlines() == ["<string>:4: UserWarning: a real warning"]


def test_layer_benchmark_reports_both_layers_with_ratios():
    from zoo.benchmark import benchmark_layers

    lines = []
    results = benchmark_layers(batch=4, steps=3, input_dim=5, units=6, rounds=1, repeats=1,
                               printer=lines.append)
    assert [(r["layer"], r["mode"]) for r in results] == [
        ("LSTM", "inference"), ("LSTM", "training"), ("GRU", "inference"), ("GRU", "training")
    ]
    for r in results:
        assert r["ratio"] == r["keras_seconds"] / r["zoo_seconds"] > 0
        assert r["matmul_gflops"] > 0
    assert lines[2].split() == ["layer", "mode", "zoo", "seq/s", "keras", "seq/s", "zoo/keras",
                                "zoo", "GFLOP/s", "of", "matmul"]
    assert len(lines) == 7
