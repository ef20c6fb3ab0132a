"""A regular (non-editable) install carries the presets, the recipes and the experiments."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import zoo

pytestmark = pytest.mark.slow  # a regular install into a folder: run by .ci/run after the default suite

ROOT = Path(__file__).resolve().parent.parent


def test_regular_install_ships_presets(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--quiet",
         "--target", str(target), str(ROOT)],
        capture_output=True, text=True,
    )
    assert build.returncode == 0, build.stderr
    installed = target / "zoo"
    assert not (installed / "saved_models").is_symlink()
    script = (
        "import zoo, zoo.presets, zoo.training, zoo.experiments, zoo.cli, zoo.benchmarks.serve;"
        "print(zoo.__file__);"
        "print(zoo.presets.presets_root());"
        "print(','.join(zoo.list_models()));"
        "print(','.join(sorted(p.stem for p in zoo.training.recipes.RECIPES_DIR.glob('*.json'))));"
        "print(zoo.experiments.EXPERIMENTS_DIR, ','.join(zoo.experiments.names()))"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    module, root, names, recipes, experiments = result.stdout.strip().splitlines()
    assert module == str(installed / "__init__.py")
    assert root == str(installed / "saved_models")
    assert names.split(",") == zoo.list_models() and names
    expected_recipes = sorted(p.stem for p in (ROOT / "zoo" / "recipes").glob("*.json"))
    assert recipes.split(",") == expected_recipes
    assert experiments == f"{installed / 'experiments'} alignments,attributions,bottleneck,gradients,memory,units"
    for name in zoo.list_models():
        shipped = sorted(p.relative_to(installed / "saved_models" / name).as_posix()
                         for p in (installed / "saved_models" / name).rglob("*") if p.is_file())
        source = sorted(p.relative_to(ROOT / "saved_models" / name).as_posix()
                        for p in (ROOT / "saved_models" / name).rglob("*") if p.is_file())
        assert shipped == source
