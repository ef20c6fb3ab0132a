"""Interpretable units and saturated gates in the character language models.

After Karpathy, Johnson & Fei-Fei (2015), "Visualizing and Understanding Recurrent
Networks": some units of a character LSTM track properties of the text (the position
in the line, being inside quotes or a comment), and the gates of trained LSTMs and GRUs
are often saturated. Measured here on the test text of tiny-shakespeare (the last 5%,
as ``zoo.data.shakespeare.split`` cuts it, never read in training) with the three
character presets, through ``model.inspect``:

1. for each of five properties of the text that tiny-shakespeare has (``FEATURES``),
   the unit whose hidden state ``h`` correlates best with it (Pearson's r over every
   character, every unit of every layer), and that unit drawn over a passage;
2. for the LSTM and the GRU, the fraction of the time each gate is left-saturated
   (below 0.1) or right-saturated (above 0.9), overall and unit by unit.

``inspect`` starts from the zero state and reads at most 2,000 characters, so the text
is read in passages cut at blank lines (where a speech ends): each starts as generation
does, after a blank line.
Run: ``zoo experiment units --out docs/experiments``.
"""

import re

import numpy as np

import zoo
from zoo import plots
from zoo.data import shakespeare
from zoo.text import codec

PRESETS = {"rnn": "rnn_charlm_shakespeare", "lstm": "lstm_charlm_shakespeare",
           "gru": "gru_charlm_shakespeare"}
FEATURES = {
    "position_in_line": "characters since the last newline",
    "speaker_line": "on a speaker's name line (capitals, ending with ':', e.g. 'ROMEO:')",
    "after_newline": "the first character after a newline",
    "inside_word": "a letter (inside a word)",
    "end_of_sentence": "'.', '!' or '?'",
}
SATURATED_BELOW, SATURATED_ABOVE = 0.1, 0.9
GATES = {"lstm": ("i", "f", "o"), "gru": ("z", "r")}  # sigmoid gates (c~ and n are tanh)
QUICK_CHARACTERS = 600
PASSAGE_LINES = 9


def run(out_dir, quick=False, printer=print):
    text = shakespeare.split(shakespeare.read())["test"]
    if quick:
        text = text[:QUICK_CHARACTERS]
    features = text_features(text)
    passage = display_passage(text)
    results = {"characters": len(text), "features": FEATURES, "best_units": {},
               "saturation": {}, "figures": []}
    for cell, preset in PRESETS.items():
        hidden, saturation = read_model(zoo.load(preset), text, quick)
        best = best_units(hidden, features)
        results["best_units"][cell] = best
        for feature, found in best.items():
            printer(f"{cell} {feature}: r = {found['correlation']:+.3f} ({found['layer']} unit "
                    f"{found['unit']})")
        if saturation:
            results["saturation"][cell] = saturation
        figure = out_dir / f"units_{cell}.png"
        plots.units_over_text(passage[1], {
            f"{feature}: {found['layer']} unit {found['unit']}, r = {found['correlation']:+.2f}":
                hidden[found["layer"]][passage[0]][:, found["unit"]]
            for feature, found in best.items()}, figure, title=f"{preset}: the best unit per property")
        results["figures"].append(figure.name)
    figure = out_dir / "units_saturation.png"
    plots.saturation_scatter(results["saturation"], figure, SATURATED_BELOW, SATURATED_ABOVE)
    results["figures"].append(figure.name)
    for cell, layers in results["saturation"].items():
        for layer, gates in layers.items():
            printer(f"{cell} {layer}: " + ", ".join(
                f"{g} {s['left']:.0%} left / {s['right']:.0%} right" for g, s in gates.items()))
    for per_layer in results["saturation"].values():  # the per-unit fractions: figure only
        for gates in per_layer.values():
            for summary in gates.values():
                del summary["per_unit"]
    return results


# -- the properties of the text ------------------------------------------------------------
def speaker_lines(text):
    """A boolean per character: on a line that is a speaker's name (letters all capitals,
    ending with ':'), its newline included."""
    on_line = np.zeros(len(text), bool)
    for match in re.finditer(r"(?m)^[^\n]*\n?", text):
        line = match.group().rstrip("\n")
        if line.endswith(":") and re.search("[A-Z]", line) and line == line.upper():
            on_line[match.start():match.end()] = True
    return on_line


def text_features(text):
    """``{feature: float array [len(text)]}`` for each of ``FEATURES``: the value at a
    character is what holds once it has been read."""
    characters = np.array(list(text))
    newline = characters == "\n"
    last_newline = np.maximum.accumulate(np.where(newline, np.arange(len(text)), -1))
    previous = np.concatenate([[True], newline[:-1]])  # the text starts a line
    return {
        "position_in_line": np.where(newline, 0, np.arange(len(text)) - last_newline - 1)
        .astype(np.float32),
        "speaker_line": speaker_lines(text).astype(np.float32),
        "after_newline": previous.astype(np.float32),
        "inside_word": np.char.isalpha(characters).astype(np.float32),
        "end_of_sentence": np.isin(characters, [".", "!", "?"]).astype(np.float32),
    }


def passages(text, most=codec.MAX_TEXT_LENGTH):
    """``text`` in consecutive pieces of at most ``most`` characters, cut after blank
    lines (a piece holds whole speeches where they fit)."""
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + most)
        if end < len(text):
            cut = text.rfind("\n\n", start, end)
            end = cut + 2 if cut > start else end
        pieces.append(text[start:end])
        start = end
    return pieces


def display_passage(text):
    """``(slice, passage)``: the first ``PASSAGE_LINES`` lines from the second speech."""
    start = text.find("\n\n") + 2
    end = start
    for _ in range(PASSAGE_LINES):
        end = text.find("\n", end) + 1 or len(text)
    return slice(start, end), text[start:end]


# -- reading a model -------------------------------------------------------------------------
def read_model(model, text, quick=False):
    """``({layer: h [len(text), units]}, saturation)`` over ``text``, passage by passage;
    saturation as ``saturation_fractions`` gives it (empty for the vanilla RNN)."""
    hidden, counts, steps = {}, {}, 0
    for piece in passages(text, 300 if quick else codec.MAX_TEXT_LENGTH):
        for layer in model.inspect(piece)["layers"]:
            hidden.setdefault(layer["name"], []).append(layer["states"]["h"])
            for gate in GATES.get(layer["cell"], ()):
                values = layer["gates"][gate]
                left, right = counts.setdefault(layer["name"], {}).setdefault(
                    gate, [np.zeros(values.shape[1]), np.zeros(values.shape[1])])
                left += (values < SATURATED_BELOW).sum(axis=0)
                right += (values > SATURATED_ABOVE).sum(axis=0)
        steps += len(piece)
    hidden = {name: np.concatenate(arrays) for name, arrays in hidden.items()}
    return hidden, saturation_fractions(counts, steps)


def saturation_fractions(counts, steps):
    """``{layer: {gate: {"left", "right", "per_unit": {"left", "right"}}}}`` from the
    per-unit counts of saturated steps."""
    return {
        layer: {gate: {"left": round(float(left.sum() / (steps * len(left))), 4),
                       "right": round(float(right.sum() / (steps * len(right))), 4),
                       "per_unit": {"left": left / steps, "right": right / steps}}
                for gate, (left, right) in gates.items()}
        for layer, gates in counts.items()}


def correlations(hidden, feature):
    """Pearson's r of every unit of ``hidden [steps, units]`` with ``feature [steps]``
    (0 for a unit or a feature that never changes)."""
    centred_h = hidden - hidden.mean(axis=0)
    centred_f = feature - feature.mean()
    scale = np.sqrt((centred_h ** 2).sum(axis=0) * (centred_f ** 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (centred_h * centred_f[:, None]).sum(axis=0) / scale
    return np.nan_to_num(r)


def best_units(hidden, features):
    """Per feature, ``{"layer", "unit", "correlation"}`` of the largest |r| over every
    unit of every layer."""
    best = {}
    for feature, values in features.items():
        found = []
        for layer, h in hidden.items():
            r = correlations(h.astype(np.float64), values.astype(np.float64))
            unit = int(np.argmax(np.abs(r)))
            found.append({"layer": layer, "unit": unit, "correlation": round(float(r[unit]), 4)})
        best[feature] = max(found, key=lambda f: abs(f["correlation"]))
    return best
