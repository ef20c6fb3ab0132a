"""Judging a character language model: nats (and bits) per character of a text read in
one pass, its state carried."""

import math

from zoo.data import shakespeare


def score(model, text):
    nats = model.nats_per_char(text)
    return {"nats_per_char": round(nats, 4), "bits_per_char": round(nats / math.log(2), 4),
            "characters": len(text) - 1}


def preset_scores(shipped, splits, printer):
    """Validation and test, with a sample of the preset's text, and the headline."""
    scores = {}
    for split in ("validation", "test"):
        scores[split] = score(shipped, splits[split])
        printer(f"{split}: {scores[split]}")
    test = scores["test"]
    return {**scores, "sample": shipped.generate("ROMEO:", 300, temperature=0.8, seed=0),
            "headline": f"test {test['nats_per_char']} nats/char "
                        f"({test['bits_per_char']} bits/char)"}


def evaluate_file(model, metadata, path, beam_size=1, batch_size=64):
    """A text file scored (``zoo evaluate``): ``(result for --json, lines to print)``."""
    unreadable = []
    result = score(model, shakespeare.read_text(path, unreadable))
    return ({"metric": "nats_per_char", "value": result["nats_per_char"],
             "examples": result["characters"], "bits_per_char": result["bits_per_char"],
             "unreadable_lines": len(unreadable)},
            [f"{result['nats_per_char']} nats/char ({result['bits_per_char']} bits/char) "
             f"over {result['characters']:,} characters"])
