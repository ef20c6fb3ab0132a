"""Import TensorFlow without its start-up noise, for the command line.

TensorFlow's C++ runtime prints several lines while it starts (CUDA probing on a
machine without a GPU, CPU-feature and oneDNN notes), some before its own log-level
setting takes effect, so ``TF_CPP_MIN_LOG_LEVEL`` cannot hide them. We capture the
process's stderr while TensorFlow starts and forward every line except the known
start-up notices below: a real warning or error still reaches the user.
"""

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


def is_startup_noise(line):
    return bool(STARTUP_NOISE.search(line))


def import_tensorflow_quietly():
    """Import TensorFlow and enumerate devices with start-up notices filtered out."""
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
    sys.stderr.flush()
    saved_stderr = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow as tf

            tf.config.list_physical_devices()
        finally:
            sys.stderr.flush()
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            captured.seek(0)
            for line in captured.read().decode("utf-8", "replace").splitlines(keepends=True):
                if not is_startup_noise(line):
                    sys.stderr.write(line)
    return tf
