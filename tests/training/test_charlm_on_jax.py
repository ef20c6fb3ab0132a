"""training/charlm_on_jax.py: the network it trains on the GPU machine is CharLanguageModel's,
and ``ship`` writes a preset with exactly the trained weights.

The script is backend-independent Keras, so these tests run it on TensorFlow, as CI has it.
"""

import importlib.util
import json
from pathlib import Path

import keras
import numpy as np
import pytest

import zoo
from zoo.data import shakespeare
from zoo.models import CharLanguageModel

ROOT = Path(__file__).resolve().parents[2]  # tests/training/ -> the repository
SPEC = importlib.util.spec_from_file_location("charlm_on_jax", ROOT / "training" / "charlm_on_jax.py")
charlm_on_jax = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(charlm_on_jax)

TINY_CONFIG = {"embedding_dim": 8, "units": 16, "num_layers": 2, "dropout": 0.1, "recurrent_dropout": 0.1}


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_the_trained_network_is_the_language_model(cell):
    config = {**TINY_CONFIG, "cell": cell}
    network = charlm_on_jax.build_network(config, 65)
    model = CharLanguageModel(65, **config)
    model.build()
    model.set_weights(network.get_weights())  # same shapes in the same order, or this raises
    ids = np.random.default_rng(0).integers(0, 65, (2, 40))
    np.testing.assert_allclose(np.asarray(model(ids)), np.asarray(network(ids)), atol=1e-5)


@pytest.mark.slow
def test_train_then_ship_writes_a_preset_of_the_trained_weights(tmp_path):
    recipe = {**json.loads((ROOT / "zoo" / "recipes" / "lstm_charlm_shakespeare.json").read_text()),
              "model_config": {**TINY_CONFIG, "cell": "lstm"}, "sequence_length": 32,
              "batch_size": 16, "epochs": 2, "weights_dtype": "float16", "ema_momentum": 0.9}
    recipe_file = tmp_path / "tiny_lm.json"
    recipe_file.write_text(json.dumps(recipe))
    ids_file = tmp_path / "ids.npz"
    charlm_on_jax.main(["ids", "--out", str(ids_file)])
    ids = dict(np.load(ids_file))
    np.savez(ids_file, characters=ids["characters"], train=ids["train"][:20_000],
             validation=ids["validation"][:4_000])

    charlm_on_jax.main(["train", str(recipe_file), "--data", str(ids_file), "--out", str(tmp_path)])
    weights_file = tmp_path / "tiny_lm_dropout0.1_recurrent0.1_lr0.002_ema0.9.npz"
    arrays = np.load(weights_file)
    record = json.loads(str(arrays["record"]))
    assert len(record["history"]) == 2
    val_losses = [epoch["val_loss"] for epoch in record["history"]]
    assert record["best_epoch"] == int(np.argmin(val_losses)) + 1
    assert arrays["w00"].dtype == np.float16
    # The kept weights are those validated: the moving average (the raw weights score otherwise).
    network = charlm_on_jax.build_network(recipe["model_config"], 65)
    network.set_weights([arrays[f"w{i:02d}"] for i in range(len(network.get_weights()))])
    network.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    validation = charlm_on_jax.window_batches(ids["validation"][:4_000], 32, 16, False, 0)
    assert network.evaluate(validation, verbose=0) == pytest.approx(min(val_losses), abs=2e-3)
    # The same run without averaging follows the same raw weights, and keeps other ones.
    charlm_on_jax.main(["train", str(recipe_file), "--data", str(ids_file), "--out", str(tmp_path),
                        "--ema-momentum", "0"])
    raw = np.load(tmp_path / "tiny_lm_dropout0.1_recurrent0.1_lr0.002_ema0.0.npz")
    assert np.abs(raw["w00"].astype(np.float32) - arrays["w00"]).max() > 1e-3

    charlm_on_jax.main(["ship", str(recipe_file), str(weights_file), "--out", str(tmp_path / "preset"),
                        "--note", "the only variant"])
    preset = zoo.load(str(tmp_path / "preset"))
    text = shakespeare.split(shakespeare.load())["test"][:200]
    ids = np.asarray([preset.preprocessor.encode(text)])
    np.testing.assert_allclose(np.asarray(preset(ids)), np.asarray(network(ids)), atol=1e-5)
    metadata = json.loads((tmp_path / "preset" / "metadata.json").read_text())
    assert metadata["training"]["epochs_run"] == 2
    assert metadata["training"]["note"] == "the only variant"
    assert metadata["training"]["best_val_loss"] == round(min(val_losses), 4)
    assert metadata["test"]["nats_per_char"] == pytest.approx(
        preset.nats_per_char(shakespeare.split(shakespeare.load())["test"]), abs=1e-4)

    recipe_file.write_text(json.dumps({**recipe, "learning_rate": 0.001}))
    with pytest.raises(SystemExit, match="was trained from another recipe than tiny_lm"):
        charlm_on_jax.main(["ship", str(recipe_file), str(weights_file), "--out", str(tmp_path / "other")])
