"""Alignments: where the attention models look while they translate.

Claim shown (Bahdanau, Cho & Bengio 2014, Figure 3): the attention weights of a
trained RNNsearch model align each produced token with the source tokens it
translates -- near-monotonic between English and French, reordered where Chinese
and English order words differently, and, in the dates model, day, month and year
each read from wherever the written date puts them.

Every heatmap is ``model.align(text, beam_size=5)`` drawn by ``zoo.plots.attention_heatmap``
(what ``zoo attention NAME TEXT --out F.png`` does); the JSON keeps the weights.
Run: ``zoo experiment alignments --out docs/experiments``.
"""

import zoo
from zoo import plots
from zoo.text import detokenize

BEAM_SIZE = 5  # as the presets are scored
EXAMPLES = [
    ("gru_bahdanau_en_cmn", "I read a book."),
    ("gru_bahdanau_cmn_en", "我读了一本书。"),
    ("gru_bahdanau_en_fr", "I have a red car."),
    ("gru_bahdanau_cmn_en", "他每天早上喝一杯咖啡。"),
    ("gru_bahdanau_dates", "30 novembre 2026"),
    ("gru_bahdanau_dates", "Nov 30, 2026"),
    ("gru_bahdanau_dates", "2026年11月30日"),
]


def run(out_dir, quick=False, printer=print):
    examples = EXAMPLES[:2] if quick else EXAMPLES
    models, results = {}, []
    for number, (name, text) in enumerate(examples, 1):
        model = models.setdefault(name, zoo.load(name))
        source, target, weights = model.align(text, beam_size=BEAM_SIZE)
        translation = detokenize(target, model.target_language)
        path = plots.attention_heatmap(weights, source, target,
                                       out_dir / f"alignment_{number}_{name}.png",
                                       title=f"{name}: {text}")
        results.append({
            "preset": name, "text": text, "translation": translation, "figure": path.name,
            "source_tokens": source, "target_tokens": target,
            # For each produced token, the source token it looks at most.
            "strongest_source": [source[i] for i in weights.argmax(axis=-1)],
            "weights": [[round(float(w), 3) for w in row] for row in weights],
        })
        printer(f"{name}: {text} -> {translation}")
    return {"beam_size": BEAM_SIZE, "alignments": results, "figures": [r["figure"] for r in results]}
