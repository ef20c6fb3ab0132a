"""``zoo train`` and fine-tuning on JAX and PyTorch; their presets load and export on
TensorFlow.

Each run is a subprocess with ``KERAS_BACKEND`` set (this process runs TensorFlow): a
tiny character LM trained by ``zoo train`` (Keras' ``fit`` over numpy batches there),
killed after a checkpoint and resumed to the same weights as an uninterrupted run;
its preset loaded here and exported; and a shipped preset fine-tuned with ``fit``.
"""

import json
import os
import signal
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

import zoo
from zoo import export
from zoo.data import shakespeare

from testcase import preset_weights

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                       reason="the presets are loaded back on TensorFlow"),
]

BACKENDS = ["jax", "torch"]
RECIPE = {
    "task": "language_model", "model": "CharLanguageModel", "corpus": "tinyshakespeare",
    "model_config": {"cell": "gru", "embedding_dim": 8, "units": 32, "num_layers": 1,
                     "dropout": 0.1},  # dropout: its random state must resume too
    "sequence_length": 32, "batch_size": 16, "learning_rate": 0.01, "epochs": 3,
    "patience": 3, "seed": 0,
}


def _environment(backend):
    return {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "",
            "TF_CPP_MIN_LOG_LEVEL": "2"}


def _skip_unless_installed(backend):
    if subprocess.run([sys.executable, "-c", f"import {backend}"],
                      capture_output=True).returncode:
        assert not os.environ.get("CI"), f"CI installs {backend}; it is missing"
        pytest.skip(f"{backend} is not installed (pip install '.[{backend}]')")


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    text = shakespeare.read()[:40000]
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _train_command(recipe, text_file, out, checkpoints):
    return [sys.executable, "-m", "zoo", "train", str(recipe), "--data", str(text_file),
            "--out", str(out), "--checkpoint-dir", str(checkpoints),
            "--log-dir", str(out.parent / "runs")]


def _epoch_of_checkpoint(checkpoints):
    try:
        return json.loads((checkpoints / "latest" / "state.json").read_text())["epoch"]
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.parametrize("backend", BACKENDS)
def test_zoo_train_resumes_and_its_preset_exports_on_tensorflow(backend, text_file, tmp_path):
    _skip_unless_installed(backend)
    recipe = tmp_path / "tiny_lm.json"
    recipe.write_text(json.dumps(RECIPE))
    environment = _environment(backend)
    uninterrupted = tmp_path / "uninterrupted"
    run = subprocess.run(_train_command(recipe, text_file, uninterrupted, tmp_path / "ck_a"),
                         env=environment, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]

    resumed, checkpoints = tmp_path / "resumed", tmp_path / "ck_b"
    command = _train_command(recipe, text_file, resumed, checkpoints)
    process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 900
    while time.time() < deadline and _epoch_of_checkpoint(checkpoints) != 1:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)  # during its second epoch
    process.wait(timeout=60)
    assert _epoch_of_checkpoint(checkpoints) == 1 and not resumed.exists()
    result = subprocess.run(command, env=environment, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "epoch 2, step 0" in result.stdout
    expected, actual = preset_weights(uninterrupted), preset_weights(resumed)
    assert expected.keys() == actual.keys()
    for name in expected:
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-5, err_msg=name)

    metadata = zoo.describe(str(resumed))
    framework = {"jax": "JAX", "torch": "PyTorch"}[backend]
    assert f"; {framework} " in metadata["training"]["machine"]
    model = zoo.load(str(resumed))  # on TensorFlow, from a preset trained on another backend
    assert model.nats_per_char(text_file.read_text()[-2000:]) == pytest.approx(
        metadata["test"]["nats_per_char"], abs=0.5)
    exported = export.export(model, "tflite", tmp_path / "exports", "tiny")
    assert exported.is_file()


FINE_TUNE = """
import json, sys
import numpy as np
import keras
import zoo
model = zoo.load("gru_bahdanau_dates")
sources = ["3 March 2021", "the 1st of May 1999", "12/25/2010", "July 4, 1976"] * 8
targets = ["2021-03-03", "1999-05-01", "2010-12-25", "1976-07-04"] * 8
source_ids = model.preprocessor.tokenize_sources(sources)
decoder_in, decoder_out = model.preprocessor.tokenize_targets(targets)
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0))
before = model.evaluate((source_ids, decoder_in), decoder_out, verbose=0)
model.fit((source_ids, decoder_in), decoder_out, epochs=3, batch_size=8, verbose=0)
after = model.evaluate((source_ids, decoder_in), decoder_out, verbose=0)
print(json.dumps({"before": before, "after": after,
                  "translation": model.translate(["3 March 2021"])[0]}))
"""


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_shipped_preset_fine_tunes_with_fit(backend):
    _skip_unless_installed(backend)
    run = subprocess.run([sys.executable, "-c", FINE_TUNE], env=_environment(backend),
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["after"] < result["before"]
    assert result["translation"] == "2021-03-03"


def test_zoo_train_on_two_jax_devices_matches_one(text_file, tmp_path):
    """``--strategy mirrored`` on JAX is ``keras.distribution.DataParallel``: two host
    devices take 8 + 8 of every batch of 16, the same step up to summation order."""
    _skip_unless_installed("jax")
    recipe = tmp_path / "tiny_lm.json"
    recipe.write_text(json.dumps(dict(RECIPE, epochs=1)))
    presets = {}
    for strategy in ("default", "mirrored"):
        environment = {**_environment("jax"),
                       "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
        out = tmp_path / strategy
        run = subprocess.run(
            _train_command(recipe, text_file, out, tmp_path / f"ck_{strategy}")
            + ["--strategy", strategy], env=environment, capture_output=True, text=True,
            timeout=900)
        assert run.returncode == 0, run.stderr[-3000:]
        if strategy == "mirrored":
            assert "DataParallel over 2 devices" in run.stdout
        presets[strategy] = preset_weights(out)
    for name, expected in presets["default"].items():
        np.testing.assert_allclose(presets["mirrored"][name], expected, atol=1e-4, err_msg=name)


def test_export_on_another_backend_is_a_one_line_error(tmp_path):
    _skip_unless_installed("jax")
    run = subprocess.run(
        [sys.executable, "-m", "zoo", "export", "gru_bahdanau_dates", "--format", "tflite",
         "--out", str(tmp_path)], env=_environment("jax"), capture_output=True, text=True,
        timeout=300)
    assert run.returncode == 2
    assert run.stderr.strip() == (
        "zoo: error: Exporting (tflite) needs the TensorFlow backend; this process runs Keras "
        "on 'jax'. Run it again with KERAS_BACKEND=tensorflow.")
    assert not any(tmp_path.iterdir())
