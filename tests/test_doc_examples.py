"""Every ```python example of README.md and docs/*.md runs as written.

Each example runs on its own (as a reader copies one), in a fresh namespace, in an empty
folder that holds the files a reader would have (``READER_FILES``: a few sentence pairs,
a little of a play, a TFLite export). An HTML comment on the line before an example marks
it for the slow suite (``<!-- example: slow -->``: trainings, exports, several presets
loaded and run, over ten seconds here) or, with a reason, as not run
(``<!-- example: not run: REASON -->``); no example is marked so today.
"""

import re
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
MARKER = re.compile(r"<!-- example: (slow|not run: .+) -->")


def python_examples(path):
    """``(line of the opening fence, marker or None, code)`` of each ```python block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    examples, start = [], None
    for number, line in enumerate(lines):
        if line.strip() == "```python":
            start = number
        elif line.strip() == "```" and start is not None:
            marker = MARKER.fullmatch(lines[start - 1].strip()) if start else None
            examples.append((start + 1, marker and marker.group(1),
                             "\n".join(lines[start + 1 : number]) + "\n"))
            start = None
    return examples


def _params():
    for path in DOCUMENTS:
        for line, marker, code in python_examples(path):
            marks = [pytest.mark.slow] if marker == "slow" else []
            if marker and marker.startswith("not run: "):
                marks = [pytest.mark.skip(reason=marker.removeprefix("not run: "))]
            yield pytest.param(code, id=f"{path.relative_to(REPOSITORY)}:{line}", marks=marks)


# Sentence pairs, English first, as `training.tsv_dataset` reads them.
PAIRS = [("I read a book.", "我读了一本书。"), ("Hello.", "你好。"), ("He is happy.", "他很高兴。"),
         ("I am happy.", "我很高兴。"), ("He read a book.", "他读了一本书。"), ("You read.", "你读书。")]


def _write_pairs(path):
    path.write_text("".join(f"{english}\t{chinese}\n" for english, chinese in PAIRS * 3),
                    encoding="utf-8")


def _write_play(path):
    path.write_text("ROMEO:\nBut soft, what light through yonder window breaks?\n"
                    "It is the east, and Juliet is the sun.\n", encoding="utf-8")


def _export_tflite(path):
    from zoo import export

    export.export("gru_bahdanau_cmn_en", "tflite", path.parent, quantize="dynamic")


# The files the examples read, made only for the examples that name them.
READER_FILES = {
    "my_pairs.tsv": _write_pairs,
    "my_validation.tsv": _write_pairs,
    "plays.txt": _write_play,
    "exports/phone/gru_bahdanau_cmn_en.tflite": _export_tflite,
}


@pytest.mark.parametrize("code", list(_params()))
def test_example_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, write in READER_FILES.items():
        if name in code:
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            write(tmp_path / name)
    exec(compile(code, "<example>", "exec"), {"__name__": "__example__"})


def test_markers_are_read(tmp_path):
    document = tmp_path / "doc.md"
    document.write_text("text\n```python\nx = 1\n```\n<!-- example: slow -->\n```python\n"
                        "y = 2\n```\n<!-- example: not run: needs a GPU -->\n```python\nz\n"
                        "```\n```bash\nls\n```\n", encoding="utf-8")
    assert python_examples(document) == [(2, None, "x = 1\n"), (6, "slow", "y = 2\n"),
                                         (10, "not run: needs a GPU", "z\n")]
