"""docs/tutorial.ipynb: committed without outputs (so that none can go stale), its links
resolve, and it runs from top to bottom (executed by nbclient, as a reader runs it)."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[1] / "docs" / "tutorial.ipynb"
CELL_SECONDS = 300


def cells():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]


def test_the_tutorial_is_committed_without_outputs():
    code = [cell for cell in cells() if cell["cell_type"] == "code"]
    assert code, "the tutorial has no code cells"
    stale = [i for i, cell in enumerate(code) if cell["outputs"] or cell["execution_count"]]
    assert not stale, (f"code cells {stale} of {NOTEBOOK.name} keep outputs: clear them "
                       "(Jupyter: Edit > Clear Outputs of All Cells) and save")


def test_the_tutorials_links_to_the_docs_resolve():
    text = "\n".join("".join(cell["source"]) for cell in cells() if cell["cell_type"] == "markdown")
    links = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text)
    assert links
    missing = [link for link in links if not (NOTEBOOK.parent / link).exists()]
    assert not missing, missing


@pytest.mark.slow
def test_the_tutorial_runs_from_top_to_bottom():
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    NotebookClient(notebook, timeout=CELL_SECONDS, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    printed = "".join(output.get("text", "") for cell in code for output in cell.outputs)
    difference = float(re.search(r"largest difference from model.inspect: (\S+)", printed)[1])
    assert difference < 1e-5  # the cell stepped by hand is the model's cell
    images = sum("image/png" in output.get("data", {}) for cell in code for output in cell.outputs)
    tables = [output["data"]["text/markdown"] for cell in code for output in cell.outputs
              if "text/markdown" in output.get("data", {})]
    assert images == 6 and len(tables) == 8
    bottleneck = next(t for t in tables if t.startswith("| source length (characters)"))
    assert "`lstm_seq2seq_cmn_en` BLEU" in bottleneck and "`gru_bahdanau_cmn_en` BLEU" in bottleneck
