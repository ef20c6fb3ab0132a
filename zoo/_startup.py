"""Import TensorFlow (and convert to TFLite) without its native-log noise.

TensorFlow's C++ runtime prints several lines while it starts (CUDA probing on a
machine without a GPU, CPU-feature and oneDNN notes), some before its own log-level
setting takes effect, so ``TF_CPP_MIN_LOG_LEVEL`` cannot hide them; the TFLite
converter prints notes about options it ignores. We capture the process's stderr
around those calls and forward every line except the known notices below: a real
warning or error still reaches the user.
"""

import contextlib
import os
import re
import sys
import tempfile

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


def import_tensorflow_quietly():
    """Import TensorFlow and enumerate devices with start-up notices filtered out."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    with native_stderr_without(STARTUP_NOISE):
        import tensorflow as tf

        tf.config.list_physical_devices()
    return tf
