"""Run TensorFlow (and convert to TFLite) without its native-log noise.

TensorFlow's C++ runtime prints several lines while it starts (CUDA probing on a
machine without a GPU, CPU-feature and oneDNN notes), some before its own log-level
setting takes effect, so ``TF_CPP_MIN_LOG_LEVEL`` cannot hide them, and some machines
print a oneDNN notice only when the first kernel runs; the TFLite converter prints
notes about options it ignores. The CLI runs each command with the process's stderr
passed through a filter (``live_stderr_without``) that forwards every line as it
comes, except the known notices below: a real warning, an error or a progress bar
still reaches the user when it happens.
"""

import contextlib
import os
import re
import sys
import tempfile
import threading

STARTUP_NOISE = re.compile(
    "|".join(
        [
            r"All log messages before absl::InitializeLog\(\) is called",
            r"cudart_stub\.cc.*Could not find cuda drivers",
            r"cpu_feature_guard\.cc.*This TensorFlow binary is optimized",
            r"^To enable the following instructions:.*rebuild TensorFlow",
            r"cuda_platform\.cc.*failed call to cuInit",
            r"cuda_executor\.cc.*could not find cuda drivers",
            r"oneDNN custom operations are on",
            r"Unable to register cu(DNN|FFT|BLAS) factory",
            r"computation placer already registered",
            # Seen on a Xeon with AVX-512 and AMX, at the first kernel run (oneDNN's own
            # check disagrees with the CPU): harmless, the kernel runs without oneDNN.
            r"oneDNN supports DT_[A-Z0-9]+ only on platforms with AVX-512",
        ]
    )
)


# Printed by every TFLite conversion of a saved model (TF 2.21), harmless.
CONVERSION_NOISE = re.compile(
    "|".join(
        [
            r"tf_tfl_flatbuffer_helpers\.cc.*Ignored (output_format|drop_control_dependency)",
            r"node_def_util\.cc.*NodeDef mentions attribute Truncate which is not in the "
            r"op definition: Op<name=Identity",
        ]
    )
)


def is_startup_noise(line):
    return bool(STARTUP_NOISE.search(line))


@contextlib.contextmanager
def native_stderr_without(noise):
    """Capture file descriptor 2 and forward every line that ``noise`` does not match."""
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            captured.seek(0)
            for line in captured.read().decode("utf-8", "replace").splitlines(keepends=True):
                if not noise.search(line):
                    sys.stderr.write(line)


@contextlib.contextmanager
def live_stderr_without(noise):
    """Pass file descriptor 2 through a pipe and forward, as it arrives, every line (or
    progress-bar segment ending in ``\\r``) that ``noise`` does not match."""
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    forwarder = threading.Thread(target=_forward, args=(read_end, saved_stderr, noise),
                                 daemon=True)
    forwarder.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)  # closes our write end of the pipe: the forwarder ends
        forwarder.join(timeout=10)  # unless a child process still holds the pipe
        os.close(saved_stderr)


def _forward(read_end, target, noise):
    pending = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            pending += chunk
            *complete, pending = re.split(rb"(?<=[\n\r])", pending)
            _write_unless_noise(target, complete, noise)
    _write_unless_noise(target, [pending], noise)


def _write_unless_noise(target, segments, noise):
    for segment in segments:
        if segment and not noise.search(segment.decode("utf-8", "replace")):
            os.write(target, segment)


def import_tensorflow_quietly():
    """Import TensorFlow and enumerate devices with start-up notices filtered out.

    Only where Keras will run on TensorFlow: on JAX or PyTorch (``KERAS_BACKEND``),
    on a machine that may not have TensorFlow at all, nothing is imported (None).
    """
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    if os.environ.get("KERAS_BACKEND", "tensorflow") != "tensorflow":
        return None
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    with native_stderr_without(STARTUP_NOISE):
        import tensorflow as tf

        tf.config.list_physical_devices()
    return tf
