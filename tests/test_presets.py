"""zoo.presets: save, load, verify, and refuse what is unsafe or broken."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import zoo
import zoo.layers
from zoo import presets

from testcase import run_preset_round_trip, run_preset_test


def _tiny_model():
    inputs = keras.Input((None, 3))
    hidden = keras.layers.Bidirectional(zoo.layers.GRU(4, return_sequences=True))(inputs)
    outputs = keras.layers.Dense(2)(zoo.layers.LSTM(5)(hidden))
    return keras.Model(inputs, outputs)


@pytest.fixture
def saved(tmp_path):
    model = _tiny_model()
    directory = presets.save(model, tmp_path / "tiny", metadata={"task": "test"})
    return model, directory


def test_save_and_load_round_trip(saved, rng):
    model, directory = saved
    # A plain Keras model has no assets (vocabularies) to write.
    assert sorted(p.name for p in directory.iterdir()) == [
        "README.md", "config.json", "metadata.json", "model.weights.h5"
    ]
    metadata = json.loads((directory / "metadata.json").read_text())
    assert metadata["task"] == "test" and metadata["name"] == "tiny"
    assert metadata["parameters"] == model.count_params()
    assert set(metadata["files"]) == {"README.md", "config.json", "model.weights.h5"}
    inputs = rng.normal(size=(2, 7, 3)).astype("float32")
    run_preset_test(directory, model, lambda m: m(inputs), atol=1e-6)
    assert zoo.describe(directory)["files"] == metadata["files"]


def test_save_replaces_atomically_and_leaves_no_temporary_folder(saved):
    model, directory = saved
    presets.save(model, directory, metadata={"task": "second"})
    assert zoo.describe(directory)["task"] == "second"
    assert sorted(p.name for p in directory.parent.iterdir()) == ["tiny"]


def test_failed_save_leaves_previous_preset_intact(saved):
    model, directory = saved

    class Unserializable:
        pass

    with pytest.raises(TypeError):
        presets.save(model, directory, metadata={"task": Unserializable()})
    assert zoo.describe(directory)["task"] == "test"
    assert sorted(p.name for p in directory.parent.iterdir()) == ["tiny"]


def test_unknown_name_lists_known_ones():
    with pytest.raises(presets.PresetError, match=r"Unknown preset 'no_such_model'\. Known presets:"):
        zoo.load("no_such_model")


@pytest.mark.parametrize("name", ["../x", "..", "a/../../b", "Upper", "x y"])
def test_names_cannot_leave_saved_models(name):
    with pytest.raises(presets.PresetError, match="Invalid preset name|not found"):
        zoo.load(name)


def test_missing_file_is_named(saved):
    _, directory = saved
    (directory / "model.weights.h5").unlink()
    with pytest.raises(presets.PresetError, match="missing the file 'model.weights.h5'"):
        zoo.load(directory)


def test_checksum_mismatch(saved):
    _, directory = saved
    with open(directory / "config.json", "a") as handle:
        handle.write(" ")
    with pytest.raises(presets.PresetError, match="Checksum mismatch for 'config.json'"):
        zoo.load(directory)


def test_truncated_weights_fail_the_checksum(saved):
    _, directory = saved
    weights = directory / "model.weights.h5"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(presets.PresetError, match="Checksum mismatch for 'model.weights.h5'"):
        zoo.load(directory)


def test_truncated_weights_with_matching_checksum_are_reported(saved):
    # Someone re-signed a broken file: the checksum passes, the reader must not crash.
    _, directory = saved
    weights = directory / "model.weights.h5"
    weights.write_bytes(weights.read_bytes()[:1000])
    _resign(directory)
    with pytest.raises(presets.PresetError, match="truncated, corrupt"):
        zoo.load(directory)


def _resign(directory):
    metadata = json.loads((directory / "metadata.json").read_text())
    metadata["files"] = {name: presets.sha256(directory / name) for name in metadata["files"]}
    (directory / "metadata.json").write_text(json.dumps(metadata))


def _model_with_a_payload(marker):
    """A model whose Lambda layer creates ``marker`` when it runs (no closure: the code
    travels in the saved config as bytecode). Building the model runs it once: the
    marker is removed before returning."""
    payload = eval(f"lambda x: (__import__('pathlib').Path({str(marker)!r}).touch(), x)[1]")
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Lambda(payload)(inputs))
    marker.unlink()
    return model


def test_lambda_layer_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    directory = presets.save(_model_with_a_payload(marker), tmp_path / "evil")
    with pytest.raises(presets.PresetError, match="contains a Lambda layer"):
        zoo.load(directory)
    assert not marker.exists()
    # The payload is live: with safe mode off, Keras would have run it.
    config = json.loads((directory / "config.json").read_text())
    unsafe = keras.saving.deserialize_keras_object(config, safe_mode=False)
    unsafe(np.zeros((1, 3), "float32"))
    assert marker.exists()


def test_keras_file_loads_like_a_preset(toy_translators, tmp_path):
    from conftest import SOURCES

    model = toy_translators["attention"]
    model.save(tmp_path / "toy.keras")
    loaded = zoo.load(tmp_path / "toy.keras")
    assert loaded.translate(SOURCES) == model.translate(SOURCES)  # vocabularies came along


def test_keras_file_with_a_lambda_layer_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "ran"
    _model_with_a_payload(marker).save(tmp_path / "evil.keras")
    with pytest.raises(presets.PresetError, match="evil.keras contains a Lambda layer"):
        zoo.load(tmp_path / "evil.keras")
    assert not marker.exists()
    keras.saving.load_model(tmp_path / "evil.keras", safe_mode=False)(np.zeros((1, 3), "float32"))
    assert marker.exists()


def _keras_file_with_config(source, target, change):
    """A copy of the .keras file ``source`` whose config.json ``change(config)`` edited."""
    import zipfile

    with zipfile.ZipFile(source) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(files["config.json"])
    change(config)
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(target, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return target


def test_keras_file_with_an_unregistered_class_is_refused(tmp_path):
    def exploit(config):
        config["config"]["layers"][1].update(class_name="Exploit", module="os")

    _tiny_model().save(tmp_path / "tiny.keras")
    path = _keras_file_with_config(tmp_path / "tiny.keras", tmp_path / "exploit.keras", exploit)
    with pytest.raises(presets.PresetError, match="not registered"):
        zoo.load(path)


def test_broken_or_missing_keras_file_is_a_clear_error(tmp_path):
    with pytest.raises(presets.PresetError, match="No such .keras file"):
        zoo.load(tmp_path / "missing.keras")
    (tmp_path / "text.keras").write_text("not a zip archive")
    with pytest.raises(presets.PresetError, match="is not a .keras file"):
        zoo.load(tmp_path / "text.keras")


def test_loading_unpickles_nothing(saved, toy_translators, tmp_path, monkeypatch):
    import pickle

    toy_translators["attention"].save(tmp_path / "toy.keras")

    def refuse(*args, **kwargs):
        raise AssertionError("something was unpickled")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(np, "load", lambda *a, allow_pickle=False, **k: refuse()
                        if allow_pickle else np.lib.npyio.load(*a, **k))
    zoo.load(saved[1])
    zoo.load(tmp_path / "toy.keras")


def test_unregistered_class_is_refused(saved):
    _, directory = saved
    config = json.loads((directory / "config.json").read_text())
    config["config"]["layers"][1]["class_name"] = "Exploit"
    config["config"]["layers"][1]["module"] = "os"
    (directory / "config.json").write_text(json.dumps(config))
    _resign(directory)
    with pytest.raises(presets.PresetError, match="not registered"):
        zoo.load(directory)


def test_metadata_without_checksums_is_refused(saved):
    _, directory = saved
    metadata = json.loads((directory / "metadata.json").read_text())
    del metadata["files"]
    (directory / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(presets.PresetError, match="refusing to load unverified files"):
        zoo.load(directory)


def test_cli_errors_are_one_line_without_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "zoo", "info", "../etc"],
        capture_output=True, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": ""},
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "zoo: error: Preset directory not found: '../etc'."
    ]
    result = subprocess.run([sys.executable, "-m", "zoo", "info", "nope"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("zoo: error: Unknown preset 'nope'. Known presets:")


@pytest.mark.slow
def test_compiled_model_is_saved_without_optimizer_state(tmp_path, rng):
    import h5py

    model = _tiny_model()
    model.compile(optimizer="adam", loss="mse")
    model.fit(rng.normal(size=(4, 3, 3)), rng.normal(size=(4, 2)), verbose=0)
    inputs = rng.normal(size=(2, 3, 3)).astype("float32")
    directory, _ = run_preset_round_trip(model, tmp_path / "compiled", lambda m: m(inputs),
                                         atol=1e-6)
    with h5py.File(directory / "model.weights.h5") as weights:
        assert "optimizer" not in weights


def _stored_arrays(path):
    import h5py

    arrays = {}
    with h5py.File(path) as weights:
        weights.visititems(lambda name, item: arrays.update({name: item})
                           if isinstance(item, h5py.Dataset) else None)
        return {name: (item[()], item.compression, item.shuffle, item.id.get_storage_size())
                for name, item in arrays.items()}


def test_float16_weights_are_half_the_values_and_stored_compressed(tmp_path):
    model = keras.Sequential([keras.Input((None,)), keras.layers.Embedding(1000, 64)])
    full = _stored_arrays(presets.save(model, tmp_path / "full") / "model.weights.h5")
    half = _stored_arrays(presets.save(model, tmp_path / "half", weights_dtype="float16")
                          / "model.weights.h5")
    (name, (values, compression, shuffle, stored)), = half.items()
    assert values.dtype == np.float16 and compression == "gzip" and shuffle
    assert values.nbytes == full[name][0].nbytes // 2 == model.count_params() * 2
    assert stored < values.nbytes  # gzip after the byte shuffle gains on float16 weights
    np.testing.assert_array_equal(values, model.get_weights()[0].astype(np.float16))
    np.testing.assert_array_equal(zoo.load(tmp_path / "half").get_weights()[0],
                                  values.astype(np.float32))
    with pytest.raises(ValueError, match="weights_dtype must be 'float32' or 'float16'"):
        presets.save(model, tmp_path / "bad", weights_dtype="int8")


def test_loaded_preset_is_not_compiled(tmp_path):
    model = _tiny_model()
    model.compile(optimizer="adam", loss="mse")
    directory = presets.save(model, tmp_path / "compiled")
    assert "compile_config" not in json.loads((directory / "config.json").read_text())
    assert not zoo.load(directory).compiled


class Killed(BaseException):
    """What a SIGKILL would do at that point: stop, with no clean-up."""


def test_a_save_killed_between_its_renames_leaves_a_loadable_preset(saved, monkeypatch, rng):
    model, directory = saved
    inputs = rng.normal(size=(1, 4, 3)).astype("float32")
    before = zoo.load(directory)(inputs)
    renames = []

    def rename_then_die(path, target):
        renames.append(path)
        if len(renames) == 2:  # the staging folder into place: the second rename
            raise Killed()
        return os.rename(path, target)

    monkeypatch.setattr(type(directory), "rename", rename_then_die)
    monkeypatch.setattr(presets.shutil, "rmtree", lambda *a, **k: None)  # no clean-up
    other = _tiny_model()
    with pytest.raises(Killed):
        presets.save(other, directory)
    monkeypatch.undo()
    left = {p.name for p in directory.parent.iterdir()} - {".tiny.old"}
    assert len(left) == 1 and left.pop().startswith(".tiny.")  # and the new one, staged
    assert (directory.parent / ".tiny.old").is_dir()
    np.testing.assert_allclose(zoo.load(directory)(inputs), before, atol=1e-6)
    assert zoo.describe(directory)["task"] == "test"
    presets.save(other, directory)  # the next save puts the new preset in place
    assert ".tiny.old" not in [p.name for p in directory.parent.iterdir()]
    np.testing.assert_allclose(zoo.load(directory)(inputs), other(inputs), atol=1e-6)


def test_an_interrupted_save_of_a_shipped_preset_keeps_it_listed(saved, monkeypatch):
    _, directory = saved
    monkeypatch.setattr(presets, "presets_root", lambda: directory.parent)
    directory.rename(directory.with_name(".tiny.old"))
    assert presets.list_models() == ["tiny"]
    assert zoo.describe("tiny")["task"] == "test"


def test_saved_presets_follow_the_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        directory = presets.save(_tiny_model(), tmp_path / "shared")
        assert directory.stat().st_mode & 0o777 == 0o755
        assert {p.stat().st_mode & 0o777 for p in directory.iterdir()} == {0o644}
        os.umask(0o077)
        private = presets.save(_tiny_model(), tmp_path / "private")
        assert private.stat().st_mode & 0o777 == 0o700
    finally:
        os.umask(previous)


def test_a_file_without_a_checksum_is_refused(saved):
    _, directory = saved
    (directory / "assets").mkdir()
    (directory / "assets" / "vocabulary.txt").write_text("swapped\n")
    with pytest.raises(presets.PresetError, match="holds files that metadata.json lists no "
                                                  "checksum for: assets/vocabulary.txt"):
        zoo.load(directory)


def test_a_config_that_is_not_json_is_named(saved, tmp_path):
    _, directory = saved
    (directory / "config.json").write_text("{not json")
    _resign(directory)
    with pytest.raises(presets.PresetError, match=r"config.json is not valid JSON: Expecting"):
        zoo.load(directory)


@pytest.mark.parametrize("key, value", [("units", 10**9), ("source_vocabulary_size", 20_000_000),
                                        ("max_output_length", 1_000_000_000),
                                        ("embedding_dim", 10**6), ("num_layers", 1000)])
def test_absurd_config_sizes_are_refused_before_building(toy_preset, tmp_path, key, value,
                                                         monkeypatch):
    import shutil

    directory = tmp_path / "absurd"
    shutil.copytree(toy_preset, directory)
    config = json.loads((directory / "config.json").read_text())
    config["config"][key] = value
    (directory / "config.json").write_text(json.dumps(config))
    _resign(directory)
    monkeypatch.setattr(keras.saving, "deserialize_keras_object",
                        lambda *a, **k: pytest.fail("built before the sizes were checked"))
    with pytest.raises(presets.PresetError, match=f"gives {key} = {value:,}; the most zoo "
                                                  f"loads is {presets.CONFIG_LIMITS[key]:,}"):
        zoo.load(directory)


def test_absurd_sizes_in_a_keras_file_or_keras_layer_are_refused(tmp_path):
    def huge(config):
        config["config"]["layers"][0]["config"]["units"] = 10**9

    keras.Sequential([keras.Input((3,)), keras.layers.Dense(4)]).save(tmp_path / "dense.keras")
    path = _keras_file_with_config(tmp_path / "dense.keras", tmp_path / "huge.keras", huge)
    with pytest.raises(presets.PresetError, match="gives units = 1,000,000,000"):
        zoo.load(path)


def test_shipped_presets_are_within_the_config_limits():
    for name in presets.list_models():
        directory = presets.resolve(name)
        config = json.loads((directory / "config.json").read_text())
        presets.check_config_sizes(config, name)  # raises beyond a limit


@pytest.mark.parametrize("model_class, name", [
    ("AttentionSeq2Seq", "gru_bahdanau_dates"), ("BottleneckSeq2Seq", "lstm_seq2seq_addition"),
    ("Seq2Seq", "lstm_seq2seq_addition"), ("CharLanguageModel", "rnn_charlm_shakespeare"),
    ("TextClassifier", "bilstm_sst2"),
])
def test_from_preset_loads_a_preset_of_its_class(model_class, name):
    model_class = getattr(zoo.models, model_class)
    model = model_class.from_preset(name)
    assert isinstance(model, model_class)
    assert model.preset_metadata == zoo.describe(name)  # as zoo.load gives it, verified


def test_from_preset_refuses_a_preset_of_another_class():
    with pytest.raises(ValueError) as error:
        zoo.models.TextClassifier.from_preset("gru_bahdanau_cmn_en")
    assert str(error.value) == (
        "TextClassifier.from_preset('gru_bahdanau_cmn_en'): that preset holds a model of class "
        "AttentionSeq2Seq, not TextClassifier; load it with AttentionSeq2Seq.from_preset or "
        "zoo.load. TextClassifier presets: bilstm_sst2.")
    with pytest.raises(ValueError, match="holds a model of class BottleneckSeq2Seq, not "
                                         "AttentionSeq2Seq.*presets: gru_bahdanau_cmn_en, "):
        zoo.models.AttentionSeq2Seq.from_preset("lstm_seq2seq_cmn_en")
