"""training/device_run.py: the device run prepared and tried here, so that the accelerator
never runs its code first. Its train step runs as it would there: JAX, no TensorFlow
(importing it fails), a deadline."""

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

import zoo
from zoo import presets
from zoo.training import packs

from tests.training.test_packs import french_data, toy_recipe  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "training" / "device_run.py"
# Imports that fail in the train step's processes, as on the accelerator's machine.
NO_TENSORFLOW = '''
import importlib.abc, importlib.util, sys
ABSENT = ("tensorflow", "tensorflow_datasets", "tf_keras", "ai_edge_litert", "eflomal")
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r} (as on the accelerator)",
                                      name=name)
sys.meta_path.insert(0, NotInstalled())
found = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: (
    None if name.split(".")[0] in ABSENT else found(name, package))
'''


def device_run():
    spec = importlib.util.spec_from_file_location("device_run", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recipes_that_fine_tune_another_run_after_it_in_one_chain():
    run = device_run()
    packed = {name: {"recipe": {"initial_preset": start}} for name, start in (
        ("zh_en", None), ("fr_guided", None), ("fr", "fr_guided"), ("fr_more", "fr"),
        ("baseline", None), ("fine_tune_of_a_shipped_one", "gru_bahdanau_cmn_en"))}
    assert run.chains(list(packed), packed) == [
        ["zh_en"], ["fr_guided", "fr", "fr_more"], ["baseline"], ["fine_tune_of_a_shipped_one"]]
    # The last stage of a chain keeps a fifth of the time; the others share the rest.
    assert run.stage_deadlines(["a"], 100.0, 50.0) == [150.0]
    assert run.stage_deadlines(["a", "b", "c"], 100.0, 50.0) == [120.0, 140.0, 150.0]


def test_what_a_device_call_sends_is_what_git_lists_and_the_carried_folders(tmp_path):
    run = device_run()
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("/packs/\n")
    (tmp_path / "code.py").write_bytes(b"x" * 1000)
    (tmp_path / "packs" / "run").mkdir(parents=True)
    (tmp_path / "packs" / "run" / "ids.npz").write_bytes(b"y" * 5000)
    subprocess.run(["git", "add", "code.py", ".gitignore"], cwd=tmp_path, check=True)
    (tmp_path / "notes.txt").write_bytes(b"z" * 300)  # untracked, not ignored: it travels
    assert run.travelling_bytes(tmp_path) == 1000 + 300 + len("/packs/\n")
    assert run.travelling_bytes(tmp_path, [tmp_path / "packs" / "run"]) == 1308 + 5000
    (tmp_path / "code.py").unlink()  # a tracked file that is not there does not travel
    assert run.travelling_bytes(tmp_path) == 308


@pytest.mark.slow
def test_the_device_run_trains_every_chain_on_jax_without_tensorflow_and_finishes_on_the_cpu(
        french_data, tmp_path, monkeypatch):  # noqa: F811
    """Pack here; train as on the accelerator (one process per chain, JAX, no TensorFlow,
    a deadline that cuts the longest run); finish here: decoding chosen, scored, compared
    with another preset and installed."""
    def diagonal_links(preprocessor, sources, targets, printer):
        rows = zip(preprocessor.source_rows(sources), preprocessor.target_rows(targets))
        return [{(i, i) for i in range(min(len(s), len(t)))} for s, t in rows]

    monkeypatch.setattr(packs, "_links", diagonal_links)  # eflomal's place, for speed
    recipes = [toy_recipe("toy_plain", epochs=1),
               toy_recipe("toy_guided", guided_alignment={"weight": 1.0}, epochs=1000,
                          patience=1000),
               toy_recipe("toy_tuned", initial_preset="toy_guided", epochs=1,
                          learning_rate=2.5e-4)]
    pack = tmp_path / "run"
    (pack).mkdir()
    packs.write_pack(recipes, pack / "pack", data_dir=french_data, printer=lambda _: None)
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(NO_TENSORFLOW)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    finished = subprocess.run(
        [sys.executable, str(SCRIPT), "train", str(pack), "--out", str(out), "--seconds", "40",
         "--run-dir", str(tmp_path / "device")], env=env, capture_output=True, text=True,
        timeout=600)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    summary = json.loads((out / "run.json").read_text())
    assert sorted(p.name for p in out.iterdir()) == ["run.json", "run.log", "toy_plain.tar",
                                                     "toy_tuned.tar"]
    log = (out / "run.log").read_text()
    assert "No module named 'tensorflow'" not in log.replace("(as on the accelerator)", "")
    plain, tuned = summary["recipes"]["toy_plain"], summary["recipes"]["toy_tuned"]
    assert plain["returncode"] == tuned["returncode"] == 0, log
    assert plain["stages"]["toy_plain"]["epochs_run"] == 1
    assert plain["stages"]["toy_plain"]["stopped_at_deadline"] is None
    # The guided stage ran until its deadline (80% of the time), then the fine-tune.
    guided = tuned["stages"]["toy_guided"]
    assert guided["stopped_at_deadline"]["steps"] >= 1 and "JAX" in guided["machine"]
    assert tuned["stages"]["toy_tuned"]["epochs_run"] == 1
    with tarfile.open(out / "toy_tuned.tar") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    back = tmp_path / "back" / "toy_tuned"
    metadata = presets.describe(back)
    assert metadata["unfinished"].startswith("trained, not yet judged")
    assert metadata["training"]["initial_preset"]["name"] == "toy_guided"
    assert metadata["weights_dtype"] == "float16"
    model = zoo.load(back)
    assert all(w.dtype == np.float32 for w in model.get_weights())  # stored as float16
    # Finish on the CPU: the decoding chosen and the preset scored, unfinished no more.
    from zoo.training import translation

    translation.retune_decoding(back, data_dir=french_data, printer=lambda _: None)
    finished_metadata = presets.describe(back)
    assert "unfinished" not in finished_metadata
    assert finished_metadata["test"]["beam5"]["bleu"]["score"] >= 0
    assert set(finished_metadata["real_text_test"]) == {"ntrex_test", "newstest2014_test",
                                                        "diabla_test"}
    assert "output_rules" in finished_metadata
    with tarfile.open(out / "toy_plain.tar") as tar:
        tar.extractall(tmp_path / "back", filter="data")
    other = tmp_path / "back" / "toy_plain"
    translation.retune_decoding(other, data_dir=french_data, printer=lambda _: None)
    verdict = translation.against_shipped(back, other, data_dir=french_data,
                                          printer=lambda _: None)
    assert set(verdict["figures"]) == {"ntrex_validation", "newstest2013_validation",
                                       "diabla_validation", "ntrex_test", "tatoeba_test_bleu"}
    figures = verdict["figures"]
    assert verdict["ships"] == (all(figures[s]["retrained"] > figures[s]["shipped"]
                                    for s in figures if s != "tatoeba_test_bleu")
                                and figures["tatoeba_test_bleu"]["retrained"]
                                >= figures["tatoeba_test_bleu"]["shipped"] - 1)
    monkeypatch.setattr(presets, "presets_root", lambda: tmp_path / "shipped")
    (tmp_path / "shipped").mkdir()
    installed = presets.install(back, "toy_tuned")
    assert presets.describe("toy_tuned")["files"] == finished_metadata["files"]
    with pytest.raises(presets.PresetError, match="holds the preset 'toy_tuned', not "
                                                  "'toy_plain'"):
        presets.install(back, "toy_plain")
    assert installed == tmp_path / "shipped" / "toy_tuned"


def test_a_bad_precision_stops_the_train_step_before_anything_is_installed(tmp_path):
    with pytest.raises(SystemExit) as stopped:
        device_run().main(["train", str(tmp_path / "pack"), "--out", str(tmp_path / "out"),
                           "--precision", "bf16"])
    assert str(stopped.value) == ("device_run: --precision must be one of float32, "
                                  "mixed_bfloat16; received 'bf16'.")
    assert not (tmp_path / "out").exists()


def test_the_workers_train_each_recipe_in_the_precision_asked(monkeypatch, tmp_path):
    from zoo.training import driver, recipes

    class Task:  # a packed recipe as PackedTranslationTask holds it
        def __init__(self, pack, name, presets_dir=None):
            self.recipe = recipes.from_dict(toy_recipe(name, epochs=1))

    trained = []
    monkeypatch.setattr(packs, "read_pack", lambda folder: None)
    monkeypatch.setattr(packs, "PackedTranslationTask", Task)
    monkeypatch.setattr(driver, "train", lambda recipe, **options: trained.append(
        (recipe.name, recipe.precision, "precision" in recipe.written, options["command"])))
    for precision in ("mixed_bfloat16", "float32"):
        device_run().main(["worker", "pack", "toy_a", "--deadline", "1e12", "--seconds", "9",
                           "--run-dir", str(tmp_path), "--precision", precision])
    command = "python training/device_run.py train PACK --seconds 9.0"
    assert trained == [
        ("toy_a", "mixed_bfloat16", True,
         f"{command} --precision mixed_bfloat16 (stage toy_a of toy_a)"),
        # as before: the recipe as written, the command as it was
        ("toy_a", "float32", False, f"{command} (stage toy_a of toy_a)")]
