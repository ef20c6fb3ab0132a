"""Judging a text classifier: accuracy, and the behavioural suite
(``zoo.data.sentiment_behaviour``)."""

import numpy as np

from zoo.data import sentiment_behaviour, sst2


def accuracy(model, sentences, labels):
    """Percentage of sentences whose likeliest label is the reference."""
    predicted = model.probabilities(sentences).argmax(axis=-1)
    return round(100 * float(np.mean(predicted == np.asarray(labels))), 2)


def preset_scores(shipped, splits, printer):
    """Validation and test accuracy, the behavioural suite, and the headline."""
    scores = {}
    for split in ("validation", "test"):
        scores[split] = {"accuracy": accuracy(shipped, *splits[split]),
                         "sentences": len(splits[split][0])}
        printer(f"{split}: {scores[split]}")
    behaviour = sentiment_behaviour.score(shipped)
    printer(f"behaviour: {({k: v['percent'] for k, v in behaviour.items()})}")
    return {**scores, "behaviour": behaviour,
            "headline": f"test accuracy {scores['test']['accuracy']}%"}


def evaluate_file(model, metadata, path, beam_size=1, batch_size=64):
    """A ``label<TAB>sentence`` file scored (``zoo evaluate``): ``(result for --json,
    lines to print)``."""
    unreadable = []
    sentences, labels = sst2.read_tsv(path, unreadable)
    if not sentences:
        raise ValueError(f"{path} holds no sentences.")
    value = accuracy(model, sentences, labels)
    return ({"metric": "accuracy", "value": value, "examples": len(sentences),
             "unreadable_lines": len(unreadable)},
            [f"accuracy {value}% on {len(sentences)} sentences"])
