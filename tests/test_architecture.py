"""The floors of the ``zoo`` package (docs/architecture.md): no module imports from a floor
above its own, nor from its own floor unless the rules name that import.

The rules are data, here and nowhere else: ``FLOORS``, ``SAME_FLOOR`` and
``KNOWN_EXCEPTIONS``. docs/architecture.md shows them as the text ``rules_text`` renders,
which a test checks, so that the document and the check cannot drift apart. Every
import statement counts, at any depth (an import inside a function too); imports between
the modules of one package are that package's own business and are not checked, nor are
imports by name at run time (``importlib``).
"""

import ast
import collections
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "zoo"
DOC = ROOT / "docs" / "architecture.md"

# Bottom first. A unit is a package of zoo (with all its modules) or a module at zoo's top
# level; "zoo" is the package's face (zoo/__init__.py: what ``import zoo`` and
# ``from zoo import load`` give).
FLOORS = (
    ("base", ("zoo._startup", "zoo.backend", "zoo.files", "zoo.precision")),
    ("blocks", ("zoo.layers", "zoo.text", "zoo.data", "zoo.decoding")),
    ("models", ("zoo.inspection", "zoo.presets", "zoo.models", "zoo")),
    ("judging", ("zoo.evaluation",)),
    ("workshops", ("zoo.training", "zoo.export")),
    ("apps", ("zoo.plots", "zoo.file_translation", "zoo.demo", "zoo.benchmarks",
              "zoo.experiments", "zoo.cli", "zoo.__main__")),
)
# A unit may import every unit of the floors below its own; of its own floor, only these.
SAME_FLOOR = {
    "zoo.models": ("zoo.inspection", "zoo.presets"),
    "zoo": ("zoo.models", "zoo.presets"),
    "zoo.demo": ("zoo.plots",),
    "zoo.experiments": ("zoo.plots",),
    "zoo.cli": ("zoo.benchmarks", "zoo.demo", "zoo.experiments", "zoo.file_translation",
                "zoo.plots"),
    "zoo.__main__": ("zoo.cli",),
}
# Imports today's code makes against the rules, each with why and what will end it; a new
# one fails the test, and so does one listed here that no longer happens.
KNOWN_EXCEPTIONS = {}

FLOOR_OF = {unit: index for index, (_, units) in enumerate(FLOORS) for unit in units}

Violation = collections.namedtuple("Violation", "module line imported")


def unit_of(module):
    """``zoo.text.codec`` -> ``zoo.text``; ``zoo.cli`` -> ``zoo.cli``; ``zoo`` -> ``zoo``."""
    return ".".join(module.split(".")[:2])


def allowed(importer, imported):
    """May unit ``importer`` import unit ``imported``? (Both must be on a floor.)"""
    return (importer == imported or FLOOR_OF[imported] < FLOOR_OF[importer]
            or imported in SAME_FLOOR.get(importer, ()))


def _is_submodule(name):
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def zoo_imports(source, module, is_package=False):
    """``(line, imported module)`` for each import of a zoo module in ``source``, the text
    of ``module`` (``is_package``: its ``__init__.py``). ``from zoo import X`` imports the
    module ``zoo.X`` when there is one, else the package's face ``zoo``."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            if base == "zoo":
                names = [f"zoo.{a.name}" if _is_submodule(a.name) else "zoo" for a in node.names]
            else:
                names = [base]
        else:
            continue
        for name in names:
            if name == "zoo" or name.startswith("zoo."):
                yield node.lineno, name


def violations(source, module, is_package=False):
    """The imports of ``source`` (the text of ``module``) that the floors forbid."""
    importer = unit_of(module)
    return [Violation(module, line, imported)
            for line, imported in zoo_imports(source, module, is_package)
            if not allowed(importer, unit_of(imported))]


def package_modules():
    """``(module name, path, is_package)`` for every module under zoo/."""
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        yield ".".join(parts[:-1] if is_package else parts), path, is_package


def rules_text():
    """The rules as docs/architecture.md shows them: a table of the floors, top first,
    and the known exceptions."""
    def names(units):
        return ", ".join(f"`{unit}`" for unit in units)

    lines = ["| Floor | Packages and modules | Imports allowed on its own floor |",
             "|---|---|---|"]
    for index, (floor, units) in reversed(list(enumerate(FLOORS))):
        own = "; ".join(f"`{unit}` → {names(SAME_FLOOR[unit])}"
                        for unit in units if unit in SAME_FLOOR)
        lines.append(f"| {index + 1}. {floor} | {names(units)} | {own or 'none'} |")
    if not KNOWN_EXCEPTIONS:
        return "\n".join([*lines, "", "Known exceptions: none."])
    lines += ["", "Known exceptions, to be removed:", ""]
    lines += [f"- `{importer}` imports `{imported}`: {reason}."
              for (importer, imported), reason in KNOWN_EXCEPTIONS.items()]
    return "\n".join(lines)


def _all_violations():
    found = []
    for module, path, is_package in package_modules():
        found += violations(path.read_text(encoding="utf-8"), module, is_package)
    return found


def test_every_package_and_module_is_on_one_floor():
    units = [unit for _, unit_list in FLOORS for unit in unit_list]
    assert len(units) == len(set(units)), "a unit is on two floors"
    found = {unit_of(module) for module, _, _ in package_modules()}
    assert found - set(units) == set(), "put each new package or top-level module on a floor " \
                                        "(FLOORS here, and docs/architecture.md)"
    assert set(units) - found == set(), "a unit on a floor no longer exists: remove it"
    for importer, allowed_units in SAME_FLOOR.items():
        for imported in allowed_units:
            assert FLOOR_OF[importer] == FLOOR_OF[imported], (importer, imported)


def test_no_module_imports_from_a_floor_above_its_own():
    new = [v for v in _all_violations()
           if (unit_of(v.module), unit_of(v.imported)) not in KNOWN_EXCEPTIONS]
    assert new == [], "\n".join(
        f"{v.module} (line {v.line}, floor {FLOORS[FLOOR_OF[unit_of(v.module)]][0]}) imports "
        f"{v.imported} (floor {FLOORS[FLOOR_OF[unit_of(v.imported)]][0]}): "
        "docs/architecture.md says where the code belongs" for v in new)


def test_each_known_exception_still_happens():
    happening = {(unit_of(v.module), unit_of(v.imported)) for v in _all_violations()}
    assert set(KNOWN_EXCEPTIONS) - happening == set(), "no longer needed: remove it"


@pytest.mark.parametrize("module, source, is_package, reported", [
    # Decoding is handed its special ids: it imports nothing of text, at any depth.
    ("zoo.decoding.loop", "from zoo.text.vocabulary import START_ID\n", False,
     [("zoo.decoding.loop", 1, "zoo.text.vocabulary")]),
    ("zoo.decoding.beam", "import keras\n\ndef f():\n    import zoo.text\n", False,
     [("zoo.decoding.beam", 4, "zoo.text")]),
    ("zoo.training.loop", "def f():\n    if True:\n        from zoo import cli, backend\n",
     False, [("zoo.training.loop", 3, "zoo.cli")]),
    ("zoo.layers.cells", "from zoo import load\n", False, [("zoo.layers.cells", 1, "zoo")]),
    ("zoo.training.loop", "from ..cli import main\nfrom .batches import Batches\n", False,
     [("zoo.training.loop", 1, "zoo.cli")]),
    ("zoo.training", "from .. import demo\n", True, [("zoo.training", 1, "zoo.demo")]),
    ("zoo.export", "from zoo.training import translation\n", True,
     [("zoo.export", 1, "zoo.training")]),
    ("zoo.demo", "from zoo import benchmarks\n", False, [("zoo.demo", 1, "zoo.benchmarks")]),
    # Allowed: a lower floor, the same package, a named import on the same floor.
    ("zoo.decoding.loop", "from zoo import backend\nfrom zoo.decoding import beam\n", False,
     []),
    ("zoo.export.runner", "from ..models import language_model\nimport zoo\n", False, []),
    ("zoo.models.seq2seq", "from zoo import inspection, presets\n", False, []),
    ("zoo.cli", "from zoo import demo, training\n", False, []),
])
def test_the_check_reports_an_import_the_floors_forbid(module, source, is_package, reported):
    assert [tuple(v) for v in violations(source, module, is_package)] == reported


def test_the_architecture_document_shows_these_rules():
    assert rules_text() in DOC.read_text(encoding="utf-8"), (
        "docs/architecture.md must show the rules of tests/test_architecture.py as:\n\n"
        + rules_text())


def test_every_package_is_in_the_distribution():
    # pyproject.toml names the packages a regular install carries: a package left out
    # installs as a hole (tests/test_packaging.py installs one, slowly).
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the test extra's backport
        import tomli as tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = {".".join(path.parent.relative_to(ROOT).parts)
             for path in PACKAGE.rglob("__init__.py")}
    assert found - listed == set(), "add them to pyproject.toml's packages"
