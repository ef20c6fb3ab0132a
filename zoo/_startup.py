"""Run TensorFlow (and convert to TFLite) without its native-log noise.

TensorFlow's C++ runtime prints several lines while it starts (CUDA probing on a
machine without a GPU, CPU-feature and oneDNN notes), some before its own log-level
setting takes effect, so ``TF_CPP_MIN_LOG_LEVEL`` cannot hide them, and some machines
print a oneDNN notice only when the first kernel runs; the TFLite converter prints
notes about options it ignores. The CLI runs each command with the process's stderr
passed through a filter (``live_stderr_without``) that forwards every line as it
comes, except the known notices below: a real warning, an error or a progress bar
still reaches the user when it happens. In the Python API, ``import zoo`` makes the
first import of TensorFlow filter its start-up notices the same way
(``quiet_first_tensorflow_import``).
"""

import contextlib
import importlib.abc
import importlib.util
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
    global _USER_STDERR
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    forwarder = threading.Thread(target=_forward, args=(read_end, saved_stderr, noise),
                                 daemon=True)
    forwarder.start()
    _USER_STDERR = saved_stderr
    try:
        yield
    finally:
        _USER_STDERR = 2
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)  # closes our write end of the pipe: the forwarder ends
        forwarder.join(timeout=10)  # unless a child process still holds the pipe
        os.close(saved_stderr)


# Where stderr's lines end up: file descriptor 2, or what it was before
# ``live_stderr_without`` put a pipe there.
_USER_STDERR = 2


def stderr_is_terminal():
    """Whether the user sees stderr on a terminal (then, and only then, progress bars are
    drawn by default), also while ``live_stderr_without`` filters it through a pipe."""
    return os.isatty(_USER_STDERR)


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
    return _import_tensorflow_filtered()


def _import_tensorflow_filtered():
    _QUIET_FIRST_IMPORT.uninstall()
    # A level the user set is theirs; unset, TensorFlow's INFO lines are not shown.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    with native_stderr_without(STARTUP_NOISE):
        import tensorflow as tf

        tf.config.list_physical_devices()  # CUDA probing happens here
    return tf


_ONEDNN_NOTICE_LOGGED = False


def log_onednn_dtype_notice_quietly():
    """Have oneDNN log, filtered out, the notice it logs once per process at the first
    kernel it declines for a dtype ("oneDNN supports DT_BOOL only on platforms with
    AVX-512", ``STARTUP_NOISE``; oneDNN's own check, which disagrees with CPUs that have
    AVX-512): otherwise it comes at a user's first translation (an LSTM encoder's mask, on
    the 2-core AMD EPYC with AVX-512 of December 2026). A transpose of a small uint8 tensor
    is such a kernel; where oneDNN declines none, nothing is logged. Called where a preset
    is loaded, which starts TensorFlow's runtime anyway: not at import, which would fix
    its thread pools before a user sets them."""
    global _ONEDNN_NOTICE_LOGGED
    tf = None if _ONEDNN_NOTICE_LOGGED else import_tensorflow_quietly()
    if tf is None:  # logged already, or Keras runs on JAX or PyTorch
        return
    with native_stderr_without(STARTUP_NOISE):
        tf.transpose(tf.zeros([1, 2], tf.uint8))
    _ONEDNN_NOTICE_LOGGED = True


class _QuietFirstImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes the first import of TensorFlow, by whatever imports it (Keras, a zoo module,
    the user's code), that of ``import_tensorflow_quietly``: the Python API starts as
    quietly as the CLI, and ``import zoo`` stays quick (TensorFlow is imported on first
    use). Installed by ``import zoo``; removes itself at that first import."""

    def install(self):
        if "tensorflow" not in sys.modules and self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def uninstall(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        tensorflow = _import_tensorflow_filtered()  # imports it anew, this finder removed
        self.tensorflow_spec = tensorflow.__spec__
        return tensorflow

    def exec_module(self, module):
        module.__spec__ = self.tensorflow_spec  # the import system set this loader's spec


_QUIET_FIRST_IMPORT = _QuietFirstImport()
quiet_first_tensorflow_import = _QUIET_FIRST_IMPORT.install
