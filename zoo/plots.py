"""Figures with matplotlib: attention heatmaps (CJK glyphs included) and line plots."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402


def cjk_font():
    """Noto Sans CJK SC, shipped by the ``mplfonts`` package, as FontProperties."""
    import mplfonts

    path = Path(mplfonts.__file__).parent / "fonts" / "NotoSansCJKsc-Regular.otf"
    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path))


def attention_heatmap(weights, source_tokens, target_tokens, path, title=None):
    """Save a heatmap of ``weights [target, source]`` with tokens on the axes."""
    font = cjk_font()
    rows, columns = weights.shape
    figure, axes = plt.subplots(
        figsize=(max(4.0, 0.55 * columns + 1.8), max(3.0, 0.45 * rows + 1.5))
    )
    image = axes.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    axes.set_xticks(range(columns))
    axes.set_xticklabels(source_tokens, fontproperties=font, rotation=90 if columns > 12 else 0)
    axes.set_yticks(range(rows))
    axes.set_yticklabels(target_tokens, fontproperties=font)
    axes.xaxis.tick_top()
    axes.set_xlabel("source", fontproperties=font)
    axes.set_ylabel("translation", fontproperties=font)
    if title:
        axes.set_title(title, fontproperties=font, pad=24)
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def figure(width, height):
    """A new figure with one set of axes."""
    return plt.subplots(figsize=(width, height))


def save(figure, axes, path, legend=True):
    """Write the figure as a PNG (with its legend) and close it; returns the path."""
    if legend and axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize="small")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)
