"""Figures with matplotlib: attention heatmaps (CJK glyphs included), a recurrent layer's
states and gates over a text, and line plots."""

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")  # files only; no display needed

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import font_manager  # noqa: E402


def cjk_font_path():
    """Noto Sans CJK SC (SIL OFL), shipped by the ``mplfonts`` package: the plots' and the
    page's (``zoo demo``) Chinese glyphs."""
    import mplfonts

    return Path(mplfonts.__file__).parent / "fonts" / "NotoSansCJKsc-Regular.otf"


def cjk_font():
    """``cjk_font_path``'s font as FontProperties."""
    path = cjk_font_path()
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


# Colour scales by what a quantity can be: gates are sigmoids in (0, 1); h, the LSTM's
# candidate c~ and the GRU's candidate n are tanh values in (-1, 1); c is unbounded.
_UNIT_INTERVAL = {"cmap": "viridis", "vmin": 0.0, "vmax": 1.0}
_TANH_RANGE = {"cmap": "RdBu_r", "vmin": -1.0, "vmax": 1.0}
_GATE_SCALES = {"h": _TANH_RANGE, "c~": _TANH_RANGE, "n": _TANH_RANGE}
MOST_TICK_LABELS = 120  # past this many steps, every k-th token is labelled


def picked_units(trace, count, pick="varying"):
    """Indices of the ``count`` units to draw: the first ones, or (``"varying"``) those
    whose hidden state varies most over the text (largest standard deviation), in
    index order."""
    if pick not in ("varying", "first"):
        raise ValueError(f"pick must be 'varying' or 'first'; received {pick!r}.")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError(f"The number of units must be a positive integer; received {count!r}.")
    h = trace["states"]["h"]
    count = min(count, h.shape[1])
    if pick == "first":
        return np.arange(count)
    return np.sort(np.argsort(-h.std(axis=0), kind="stable")[:count])


def token_label(token):
    """A token as a tick label: newlines, tabs and spaces made visible (with glyphs the
    CJK font has)."""
    return token.replace("\n", "\u23ce").replace("\t", "\\t").replace(" ", "\u2423")


def gates_heatmap(trace, tokens, path, units=32, pick="varying", title=None):
    """Save a recurrent layer's trace (``zoo.inspection``) as heatmaps over the text:
    one panel per state and gate, the steps on x (the tokens as tick labels), the
    ``units`` units of ``picked_units`` on y."""
    shown = picked_units(trace, units, pick)
    panels = {**trace["states"], **trace["gates"]}
    steps = len(tokens)
    font = cjk_font()
    figure, axes = plt.subplots(
        len(panels), 1, squeeze=False,
        figsize=(min(40.0, max(6.0, 0.16 * steps + 2.5)), 1.2 + len(panels) * max(1.6, 0.05 * len(shown))))
    every = max(1, -(-steps // MOST_TICK_LABELS))
    for axis, (name, values) in zip(axes[:, 0], panels.items()):
        scale = _GATE_SCALES.get(name, _UNIT_INTERVAL)
        if name == "c":
            bound = float(np.percentile(np.abs(values), 99)) or 1.0  # a few outliers would wash out the rest
            scale = {"cmap": "RdBu_r", "vmin": -bound, "vmax": bound}
        image = axis.imshow(values[:, shown].T, aspect="auto", interpolation="nearest", **scale)
        axis.set_ylabel(name, rotation=0, labelpad=14, fontsize="large")
        axis.set_yticks([0, len(shown) - 1])
        axis.set_yticklabels([str(shown[0]), str(shown[-1])], fontsize="x-small")
        axis.set_xticks(range(0, steps, every))
        axis.set_xticklabels([token_label(t) for t in tokens[::every]], fontproperties=font,
                             fontsize="x-small", rotation=90 if max(map(len, tokens)) > 1 else 0)
        figure.colorbar(image, ax=axis, fraction=0.02, pad=0.01)
    heading = f"{trace['name']} ({trace['cell']}): {len(shown)} of {trace['states']['h'].shape[1]} units"
    figure.suptitle(heading if title is None else f"{title}\n{heading}", fontproperties=font)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)


def units_over_text(text, values_by_label, path, title=None):
    """Save ``text`` once per entry of ``values_by_label``, each character on a cell
    coloured by the value (in [-1, 1]: a tanh unit) at that character, as Karpathy,
    Johnson & Fei-Fei (2015) draw their units; a newline ends a row (drawn as a return
    sign)."""
    cells = [(row, column) for row, line in enumerate(text.split("\n"))
             for column in range(len(line) + 1)][: len(text)]
    rows, columns = cells[-1][0] + 1, max(c for _, c in cells) + 1
    figure, axes = plt.subplots(len(values_by_label), 1, squeeze=False,
                                figsize=(max(6.0, 0.14 * columns + 1.5),
                                         len(values_by_label) * (0.24 * rows + 0.6)))
    for axis, (label, values) in zip(axes[:, 0], values_by_label.items()):
        grid = np.full((rows, columns), np.nan)
        for (row, column), value in zip(cells, values):
            grid[row, column] = value
        axis.imshow(grid, cmap="RdBu_r", vmin=-1.0, vmax=1.0, aspect="auto",
                    interpolation="nearest")
        for (row, column), character in zip(cells, text):
            axis.text(column, row, token_label(character), ha="center", va="center",
                      family="monospace", fontsize=7)
        axis.set_title(label, fontsize="small", loc="left")
        axis.set_axis_off()
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)


def saturation_scatter(saturation, path, below=0.1, above=0.9):
    """Save, for each model and gate, each unit's fraction of time left-saturated (x)
    against right-saturated (y): ``saturation[cell][layer][gate]["per_unit"]``."""
    panels = [(cell, gate) for cell, layers in saturation.items()
              for gate in next(iter(layers.values()))]
    figure, axes = plt.subplots(1, len(panels), squeeze=False,
                                figsize=(2.6 * len(panels) + 0.5, 3.0))
    for axis, (cell, gate) in zip(axes[0], panels):
        for layer, gates in saturation[cell].items():
            per_unit = gates[gate]["per_unit"]
            axis.scatter(per_unit["left"], per_unit["right"], s=4, alpha=0.5, label=layer)
        axis.plot([0, 1], [1, 0], color="grey", linewidth=0.5)
        axis.set_xlim(0, 1)
        axis.set_ylim(0, 1)
        axis.set_title(f"{cell} {gate}", fontsize="small")
        axis.set_xlabel(f"fraction < {below}", fontsize="x-small")
        axis.set_ylabel(f"fraction > {above}", fontsize="x-small")
        axis.legend(fontsize="xx-small", markerscale=2)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return Path(path)


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
