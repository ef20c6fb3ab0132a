"""Keras' own tests of its recurrent layers, passed by the zoo's layers.

Keras' test files for ``LSTM``, ``GRU``, ``SimpleRNN`` and ``Bidirectional`` (they ship
inside the keras package) run in a subprocess with those three layers replaced by the
zoo's (``tests/zoo_layers_as_keras.py``). The zoo's ``LSTM`` and ``GRU`` subclass Keras'
(keeping their own cells and loops), so that ``Bidirectional`` recognises them by class
and offers them its fused bidirectional kernel (cuDNN on a GPU); the last tests check
that the kernel is called with the zoo layers' weights.
"""

import os
import re
import subprocess
import sys
from pathlib import Path
from unittest import mock

import keras
import numpy as np
import pytest
from keras.src.layers.rnn import bidirectional

import zoo.layers

TESTS = Path(__file__).resolve().parents[1]
KERAS_RNN_TESTS = Path(keras.__file__).parent / "src" / "layers" / "rnn"
FILES = ["lstm_test.py", "gru_test.py", "simple_rnn_test.py", "bidirectional_test.py"]


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="run on TensorFlow (the layers' tests on other backends: tests/layers)")
@pytest.mark.slow
def test_keras_rnn_tests_pass_with_the_zoo_layers(tmp_path):
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(TESTS), os.environ.get("PYTHONPATH", "")]), "TF_CPP_MIN_LOG_LEVEL": "2"}
    # -o addopts=: not this project's options (a process per core, -m 'not slow'), which
    # pytest reads from its pyproject.toml when the venv lies inside the checkout.
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "zoo_layers_as_keras", "-p",
         "no:cacheprovider", "--rootdir", str(tmp_path),
         *(str(KERAS_RNN_TESTS / name) for name in FILES)],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=900)
    assert "zoo.layers.recurrent.LSTM, zoo.layers.recurrent.GRU, zoo.layers.recurrent.SimpleRNN" \
        in run.stdout
    assert run.returncode == 0, run.stdout[-3000:]
    summary = run.stdout.strip().splitlines()[-1]
    assert "failed" not in summary and int(re.search(r"(\d+) passed", summary)[1]) >= 32


def test_zoo_layers_are_keras_layers():
    assert isinstance(zoo.layers.LSTM(3), keras.layers.LSTM)
    assert isinstance(zoo.layers.GRU(3), keras.layers.GRU)
    assert not hasattr(zoo.layers.SimpleRNN(3), "use_cudnn")  # as Keras' SimpleRNN


@pytest.mark.parametrize("name, kernel", [("LSTM", "bidirectional_lstm"),
                                          ("GRU", "bidirectional_gru")])
def test_bidirectional_offers_its_fused_kernel_the_zoo_layers_weights(name, kernel, rng):
    if not hasattr(getattr(bidirectional, "backend", None), kernel):
        pytest.skip(f"Keras {keras.__version__}'s Bidirectional has no fused kernel "
                    "(Keras 3.12, the newest for Python 3.10)")
    layer = keras.layers.Bidirectional(getattr(zoo.layers, name)(4, return_sequences=True))
    inputs = rng.normal(size=(2, 5, 3)).astype("float32")
    layer(inputs)
    seen = {}

    def unavailable(*args, **kwargs):  # as on a CPU: the layer falls back to two calls
        seen.update(kwargs)
        raise NotImplementedError

    with mock.patch.object(bidirectional.backend, kernel, side_effect=unavailable) as fused:
        outputs = layer(inputs)
    assert fused.call_count == 1
    assert seen["fwd_kernel"] is layer.forward_layer.cell.kernel
    assert seen["bwd_recurrent_kernel"] is layer.backward_layer.cell.recurrent_kernel
    np.testing.assert_allclose(outputs, layer(inputs), atol=1e-6)
