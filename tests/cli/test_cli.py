"""The command line: start-up noise filtered, real messages kept; a reader that stops
early ends it quietly."""

import subprocess
import sys

import pytest

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
        "E0000 00:00:1796012458.001234    3816 mkl_util.h:123] oneDNN supports DT_BOOL only on "
        "platforms with AVX-512. Falling back to the default Eigen-based implementation if "
        "present.",
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


@pytest.mark.slow
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


# A native library writing to file descriptor 2 after start-up, as oneDNN does at the
# first kernel run on some CPUs: its notice is dropped, a real warning and a progress bar
# pass, the warning while the command is still running.
LATE_NATIVE_OUTPUT = """
import os, sys, time
from zoo._startup import STARTUP_NOISE, live_stderr_without
with live_stderr_without(STARTUP_NOISE):
    os.write(2, b"E0000 00:00:1.2 3 mkl_util.h:1] oneDNN supports DT_BOOL only on platforms "
                b"with AVX-512. Falling back\\n")
    os.write(2, b"W0000 a real native warning\\n")
    print("python warning", file=sys.stderr, flush=True)
    time.sleep(3)
    os.write(2, b" 50%\\r100%\\r")
"""


def test_late_native_notices_are_filtered_live():
    import time

    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", LATE_NATIVE_OUTPUT], stderr=subprocess.PIPE)
    first_lines = [child.stderr.readline(), child.stderr.readline()]
    arrived = time.monotonic() - started
    rest = child.stderr.read()
    assert child.wait(timeout=60) == 0
    assert first_lines == [b"W0000 a real native warning\n", b"python warning\n"]
    assert rest == b" 50%\r100%\r"
    assert arrived < time.monotonic() - started - 2  # before the command's end, not after


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`zoo list | head -1`: here the pipe is closed before the command writes at all."""
    process = subprocess.Popen([sys.executable, "-m", "zoo", "list"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 0
    assert stderr == ""
