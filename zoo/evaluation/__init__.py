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
    BLEU_TOKENIZE, DECODING_FAILURE_TARGETS, LENGTH_BUCKETS, REAL_TEXT_BUCKETS,
    SEQUENCE_METRICS, attention_on_punctuation, bleu, bleu_by_source_length, bleu_gain,
    bucket_name, by_source_length, chrf, decoding_failures, exact_match,
    failures_beyond_targets, length_buckets, made_up_words, metric_of, punctuation_only,
    real_text_scores, repeated_phrases, sequence_score, source_length, stutters,
    translation_scores, unknown_outputs)


def scoring_of(kind):
    """The scoring module of a kind of model (``zoo.models.KINDS``), named after it:
    ``evaluate_file`` (``zoo evaluate``) and the scores a preset ships with. Imported when
    asked for, so that the metrics alone stay light."""
    from zoo.models import KINDS

    if kind not in KINDS:
        raise ValueError(f"No kind {kind!r} in zoo.models; known: {', '.join(KINDS)}.")
    return importlib.import_module(f"zoo.evaluation.{kind}")


__all__ = [
    "BLEU_TOKENIZE", "DECODING_FAILURE_TARGETS", "LENGTH_BUCKETS", "REAL_TEXT_BUCKETS",
    "SEQUENCE_METRICS", "attention_on_punctuation", "bleu", "bleu_by_source_length",
    "bleu_gain", "bucket_name", "by_source_length", "chrf", "decoding_failures",
    "exact_match", "failures_beyond_targets", "length_buckets", "made_up_words", "metric_of",
    "punctuation_only", "real_text_scores", "repeated_phrases", "sequence_score",
    "source_length", "stutters", "scoring_of", "translation_scores", "unknown_outputs"]
