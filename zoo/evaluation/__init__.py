"""Judging a preset, apart from training it: the metrics, the scoring of each kind, the
splits a preset is judged on and its model card.

    metrics.py         sacreBLEU and chrF, exact match, decoding failures, breakdowns by
                       source length (what ``zoo.evaluation.bleu`` and the others are)
    translation.py     translators and the generated tasks: test scores, real text, the
                       decoding settings chosen on validation, a user's file of pairs
    language_model.py  nats per character
    classifier.py      accuracy
    splits.py          a preset's validation and test splits, rebuilt from its metadata
    cards.py           the model card (README.md) of every kind

``zoo evaluate``, the benchmarks and the experiments judge presets with these; the
trainer (``zoo.training``) calls them for the scores and card a preset ships with.
"""

import importlib

from zoo.evaluation.metrics import (
    BLEU_TOKENIZE, LENGTH_BUCKETS, REAL_TEXT_BUCKETS, SEQUENCE_METRICS,
    attention_on_punctuation, bleu, bleu_by_source_length, bleu_gain, bucket_name,
    by_source_length, chrf, decoding_failures, exact_match, length_buckets, made_up_words,
    metric_of, punctuation_only, real_text_scores, repeated_phrases, sequence_score,
    source_length, stutters, translation_scores, unknown_outputs)

# The scoring module of each preset task (the metadata's "task"); imported when asked
# for, so that the metrics alone stay light.
SCORING = {"translation": "translation", "date_normalization": "translation",
           "addition": "translation", "language_modeling": "language_model",
           "classification": "classifier"}


def task_of(metadata):
    """The scoring module of a preset's task (``metadata``: its metadata.json): its
    ``model_method`` (what its models do for users) and ``evaluate_file``."""
    name = metadata.get("task", "translation")
    if name not in SCORING:
        raise ValueError(f"No task {name!r} in zoo.evaluation; known: {', '.join(SCORING)}.")
    return importlib.import_module(f"zoo.evaluation.{SCORING[name]}")


__all__ = [
    "BLEU_TOKENIZE", "LENGTH_BUCKETS", "REAL_TEXT_BUCKETS", "SEQUENCE_METRICS", "SCORING",
    "attention_on_punctuation", "bleu", "bleu_by_source_length", "bleu_gain", "bucket_name",
    "by_source_length", "chrf", "decoding_failures", "exact_match", "length_buckets",
    "made_up_words", "metric_of", "punctuation_only", "real_text_scores", "repeated_phrases",
    "sequence_score", "source_length", "stutters", "task_of", "translation_scores",
    "unknown_outputs"]
