"""`zoo attention`: the heatmap of one translation."""

import pytest

from commandline import run_zoo


@pytest.mark.slow
def test_attention_plot(toy_preset, tmp_path):
    import matplotlib.image

    out = tmp_path / "plot.png"
    result = run_zoo("attention", toy_preset, "我读了一本书。", "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["I read a book.", f"attention heatmap written to {out}"]
    height, width, _ = matplotlib.image.imread(out).shape
    assert width > 300 and height > 200
