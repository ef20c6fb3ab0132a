"""One meaning per word (docs/architecture.md, "Words"): ``encode`` and ``decode`` are what
networks and the search loop do, text becomes ids and ids text by ``tokenize`` and
``detokenize``; ``load`` is a preset's (``zoo.load``), a corpus is ``read``, and a
constructor that reads files is ``from_file`` or ``from_directory``.

The packages where a word would mean something else may not define it: no function,
method or class attribute of that name or starting with it (``encode_sources``), an
alias ``encode = tokenize`` included.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "zoo"

# package -> {word it may not define (alone or as a name's first word): what it says instead}
FORBIDDEN = {
    "text": {"encode": "tokenize (text -> ids), ids_of (tokens -> ids)",
             "decode": "detokenize (ids -> text), tokens_of (ids -> tokens)",
             "load": "from_file / from_directory"},
    "data": {"load": "read"},
}


def _defined_names(tree):
    """``(line, name)`` of each function and method at any depth, and of each name bound
    at module or class level (by an assignment or an import)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for statement in node.body:
                for name in _bound_names(statement):
                    yield statement.lineno, name


def _bound_names(statement):
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in statement.names]
    targets = (statement.targets if isinstance(statement, ast.Assign)
               else [statement.target] if isinstance(statement, ast.AnnAssign) else [])
    return [name.id for target in targets for name in ast.walk(target)
            if isinstance(name, ast.Name)]


def misnamed(source, package):
    """``(line, name, instead)`` for each name that ``source`` defines with a forbidden word."""
    forbidden = FORBIDDEN[package]
    return sorted((line, name, forbidden[_first_word(name)])
                  for line, name in _defined_names(ast.parse(source))
                  if _first_word(name) in forbidden)


def _first_word(name):
    """``_decode_target`` -> ``decode``."""
    return name.lstrip("_").split("_")[0]


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_module_defines_a_word_that_means_something_else_here(package):
    found = [f"zoo/{package}/{path.name}:{line} defines {name}: call it {instead}"
             for path in sorted((PACKAGE / package).rglob("*.py"))
             for line, name, instead in misnamed(path.read_text(encoding="utf-8"), package)]
    assert found == [], "\n".join(found)


TEXT = FORBIDDEN["text"]


@pytest.mark.parametrize("source, package, reported", [
    ("class Vocabulary:\n    def encode(self, tokens):\n        pass\n", "text",
     [(2, "encode", TEXT["encode"])]),
    ("class P:\n    @classmethod\n    def load(cls, directory):\n        pass\n", "text",
     [(3, "load", TEXT["load"])]),
    ("class P:\n    def tokenize(self, ids):\n        pass\n    decode = tokenize\n", "text",
     [(4, "decode", TEXT["decode"])]),
    ("def outer():\n    def _decode_target(ids):\n        pass\n", "text",
     [(2, "_decode_target", TEXT["decode"])]),
    ("def load(corpus, directory=None):\n    pass\n", "data", [(1, "load", "read")]),
    ("from zoo.data.tatoeba import read as load\nload: object = None\n", "data",
     [(1, "load", "read"), (2, "load", "read")]),
    # Allowed: the new words, calls of other libraries' encode/decode/load, local names.
    ("class P:\n    def tokenize(self, text):\n        return text.encode('utf-8')\n"
     "    def detokenize(self, data):\n        return data.decode()\n", "text", []),
    ("import json\n\ndef read(path):\n    return json.load(open(path))\n", "data", []),
    ("def read(corpus):\n    load = corpus\n    return load\n", "data", []),
])
def test_the_check_reports_a_word_used_in_its_other_meaning(source, package, reported):
    assert misnamed(source, package) == reported
