"""Metrics, computed with the libraries made for them (sacreBLEU), and breakdowns by length."""

import unicodedata

import numpy as np
import sacrebleu

from zoo.text import tokenizers
from zoo.text.preprocessor import translation_words
from zoo.text.vocabulary import OOV

# sacreBLEU's tokenizer for each target language: its own Chinese tokenizer for
# Chinese, the WMT standard 13a elsewhere. Scores are cased, on detokenized text.
BLEU_TOKENIZE = {"zh": "zh", "en": "13a", "fr": "13a", "de": "13a", "es": "13a", "it": "13a",
                 "pt": "13a", "ru": "13a"}
LENGTH_BUCKETS = ((1, 5), (6, 10), (11, 15), (16, 20), (21, None))
# Real text runs longer than Tatoeba's: its buckets reach past 50 source tokens.
REAL_TEXT_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 50), (51, None))


def _paired(hypotheses, references):
    """Lists of one hypothesis per reference, at least one (a corpus score of lists of
    other lengths would score only their overlap)."""
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references) or not references:
        raise ValueError(f"A corpus score needs one hypothesis per reference, at least one; "
                         f"received {len(hypotheses)} hypotheses and {len(references)} "
                         f"references.")
    return hypotheses, references


def bleu(hypotheses, references, target_language):
    """Corpus BLEU of detokenized hypotheses against raw references (one each)."""
    if target_language not in BLEU_TOKENIZE:
        raise ValueError(f"No BLEU tokenizer chosen for target language {target_language!r}; "
                         f"known: {', '.join(BLEU_TOKENIZE)}.")
    hypotheses, references = _paired(hypotheses, references)
    metric = sacrebleu.metrics.BLEU(tokenize=BLEU_TOKENIZE[target_language])
    score = metric.corpus_score(hypotheses, [references])
    return {"score": round(score.score, 2), "signature": str(metric.get_signature()),
            "length_ratio": round(score.sys_len / max(score.ref_len, 1), 3)}


def bleu_gain(hypotheses, baseline, references, target_language, resamples=1000, seed=0):
    """The BLEU of ``hypotheses`` minus that of ``baseline`` on the same references, with
    a 95% paired bootstrap interval (Koehn 2004): ``resamples`` draws of the sentences
    with replacement, both systems scored on each draw, from sacreBLEU's per-sentence
    statistics (as its own paired bootstrap test computes them)."""
    hypotheses, references = _paired(hypotheses, references)
    baseline, _ = _paired(baseline, references)
    metric = sacrebleu.metrics.BLEU(tokenize=BLEU_TOKENIZE[target_language])
    statistics = [np.asarray(metric._extract_corpus_statistics(system, [references]))
                  for system in (hypotheses, baseline)]

    def gain(rows):
        return (metric._compute_score_from_stats(statistics[0][rows].sum(axis=0)).score
                - metric._compute_score_from_stats(statistics[1][rows].sum(axis=0)).score)

    rng = np.random.default_rng(seed)
    draws = [gain(rng.integers(0, len(references), len(references))) for _ in range(resamples)]
    low, high = np.percentile(draws, [2.5, 97.5])
    return {"gain": round(gain(np.arange(len(references))), 2),
            "interval_95": [round(float(low), 2), round(float(high), 2)], "resamples": resamples}


def chrf(hypotheses, references):
    hypotheses, references = _paired(hypotheses, references)
    metric = sacrebleu.metrics.CHRF()
    score = metric.corpus_score(hypotheses, [references])
    return {"score": round(score.score, 2), "signature": str(metric.get_signature())}


def _percent(count, total):
    return round(100 * count / max(total, 1), 2)


def exact_match(hypotheses, references):
    """Percentage of outputs identical to their reference (the teaching tasks' metric)."""
    correct = sum(h == r for h, r in zip(hypotheses, references, strict=True))
    return {"score": _percent(correct, len(references)), "correct": correct,
            "examples": len(references)}


def unknown_outputs(hypotheses):
    """How many outputs have an ``[UNK]`` hole: what a reader sees first, and BLEU hides."""
    count = sum(OOV in hypothesis for hypothesis in hypotheses)
    return {"count": count, "examples": len(hypotheses),
            "percent": _percent(count, len(hypotheses))}


def made_up_words(hypotheses, known_words, language):
    """How many outputs hold a word found in no training text (``known_words``): with
    subword pieces, an unknown word comes out as invented pieces ("pillr") instead of
    ``[UNK]``. Words as ``zoo.text.tokenize`` splits them; numbers do not count."""
    invented = [[word for word in tokenizers.tokenize(hypothesis, language)
                 if word not in known_words and not any(c.isdigit() for c in word)]
                for hypothesis in hypotheses]
    count = sum(bool(words) for words in invented)
    return {"count": count, "examples": len(hypotheses),
            "percent": _percent(count, len(hypotheses)),
            "words": sorted({word for words in invented for word in words})[:50]}


def _words(text, language):
    """The words that carry content (``zoo.text.tokenize``'s, punctuation left out)."""
    return [w for w in tokenizers.tokenize(text, language) if not punctuation_only(w)]


def stutters(words):
    """Whether a word or a phrase comes three times in a row ("m. m. m.", "a b a b a b")."""
    for size in range(1, len(words) // 3 + 1):
        for start in range(len(words) - 3 * size + 1):
            phrase = words[start : start + size]
            if (phrase == words[start + size : start + 2 * size]
                    == words[start + 2 * size : start + 3 * size]):
                return True
    return False


def repeated_phrases(words, size=3):
    """The phrases of ``size`` words said more than once."""
    counts = {}
    for start in range(len(words) - size + 1):
        phrase = tuple(words[start : start + size])
        counts[phrase] = counts.get(phrase, 0) + 1
    return {phrase for phrase, count in counts.items() if count > 1}


# What a translator's search may leave of each failure, in percent of outputs (issues 41
# and 51: at most 1% that stutter, 5% that repeat a phrase, 3% under half the reference).
DECODING_FAILURE_TARGETS = {"stutter": 1.0, "repeated_phrase": 5.0, "short": 3.0}


def decoding_failures(hypotheses, references, language):
    """The failures a reader sees at once in a search's outputs (issue 41; Koehn and
    Knowles 2017), as percentages of outputs, counted in words without punctuation
    (Chinese: characters): ``stutter``, a word or phrase three times in a row;
    ``repeated_phrase``, a phrase of three words said twice where the reference does
    not say it twice; ``short``, fewer than half the reference's words."""
    hypotheses, references = _paired(hypotheses, references)
    counts = {"stutter": 0, "repeated_phrase": 0, "short": 0}
    for hypothesis, reference in zip(hypotheses, references):
        said, meant = _words(hypothesis, language), _words(reference, language)
        counts["stutter"] += stutters(said)
        counts["repeated_phrase"] += bool(repeated_phrases(said) - repeated_phrases(meant))
        counts["short"] += 2 * len(said) < len(meant)
    return {"outputs": len(hypotheses),
            **{name: _percent(count, len(hypotheses)) for name, count in counts.items()}}


def failures_beyond_targets(failures):
    """How far ``decoding_failures``' figures go past ``DECODING_FAILURE_TARGETS``: the
    percentage points above each target, summed (0 where every target holds)."""
    return round(sum(max(0.0, failures[name] - target)
                     for name, target in DECODING_FAILURE_TARGETS.items()), 2)


def punctuation_only(word):
    """A word made only of Unicode punctuation (category P: ``.``, ``！``, ``«``, ...)."""
    return bool(word) and all(unicodedata.category(ch).startswith("P") for ch in word)


def attention_on_punctuation(sources, outputs, attentions, source_language, target_language):
    """How often a translator's attention is unreadable: of the produced words that are
    not punctuation, the share whose strongest weight falls on a source word made only
    of punctuation (most often the final "."), in all and for the first words.

    ``attentions``: per text the word-level ``(produced words, source words)`` array of
    ``model.translate(..., return_attention=True)``, words as ``tokenizers.tokenize``
    splits ``sources`` and ``outputs``.
    """
    counts = {"words": 0, "on_punctuation": 0, "first_words": 0, "first_on_punctuation": 0}
    for source, output, weights in zip(sources, outputs, attentions, strict=True):
        source_words = tokenizers.tokenize(source, source_language)
        produced = translation_words(output, target_language)
        if np.shape(weights) != (len(produced), len(source_words)):
            raise ValueError(f"Attention of shape {np.shape(weights)} for {len(produced)} "
                             f"produced and {len(source_words)} source words: {output!r:.60}")
        for position, word in enumerate(produced):
            if punctuation_only(word):
                continue
            looked_at = punctuation_only(source_words[int(np.argmax(weights[position]))])
            counts["words"] += 1
            counts["on_punctuation"] += looked_at
            counts["first_words"] += position == 0
            counts["first_on_punctuation"] += looked_at and position == 0
    return {**counts,
            "percent": round(100 * counts["on_punctuation"] / max(counts["words"], 1), 1),
            "first_word_percent": round(100 * counts["first_on_punctuation"]
                                        / max(counts["first_words"], 1), 1)}


SEQUENCE_METRICS = ("bleu", "exact_match")


def metric_of(metadata):
    """The metric a sequence-to-sequence preset is judged by: BLEU unless it says otherwise."""
    return metadata.get("metric", "bleu")


def sequence_score(metric, hypotheses, references, target_language):
    """The one number a sequence-to-sequence preset is judged by."""
    if metric == "exact_match":
        return exact_match(hypotheses, references)["score"]
    if metric == "bleu":
        return bleu(hypotheses, references, target_language)["score"]
    raise ValueError(f"Unknown metric {metric!r}; known: {', '.join(SEQUENCE_METRICS)}.")


def source_length(text, language):
    """Length of a source sentence: characters for Chinese, words otherwise."""
    return len(tokenizers.tokenize(text, language))


def bucket_name(low, high):
    return f"{low}-{high}" if high else f"{low}+"


def bleu_by_source_length(sources, hypotheses, references, source_language, target_language):
    """BLEU per source-length bucket (tokens: characters for Chinese, words otherwise)."""
    return by_source_length(sources, hypotheses, references, source_language,
                            lambda h, r: bleu(h, r, target_language)["score"], "bleu")


def length_buckets(sources, source_language, bounds=LENGTH_BUCKETS):
    """The positions of the sources in each source-length bucket (in tokens) that has any."""
    lengths = [source_length(text, source_language) for text in sources]
    buckets = {bucket_name(low, high): [i for i, length in enumerate(lengths)
                                        if low <= length <= (high or 10**9)]
               for low, high in bounds}
    return {name: chosen for name, chosen in buckets.items() if chosen}


def by_source_length(sources, hypotheses, references, source_language, score, name,
                     bounds=LENGTH_BUCKETS):
    """``score(hypotheses, references)`` per source-length bucket, in tokens."""
    return {bucket: {name: score([hypotheses[i] for i in chosen], [references[i] for i in chosen]),
                     "sentences": len(chosen)}
            for bucket, chosen in length_buckets(sources, source_language, bounds).items()}


def translation_scores(hypotheses, references, target_language):
    """chrF, BLEU and the length ratio (output tokens / reference tokens, BLEU's)."""
    result = bleu(hypotheses, references, target_language)
    return {"chrf": chrf(hypotheses, references)["score"], "bleu": result["score"],
            "length_ratio": result["length_ratio"]}


def real_text_scores(sources, hypotheses, references, source_language, target_language):
    """``translation_scores`` of the whole set and of each source-length bucket
    (``REAL_TEXT_BUCKETS``), with the signatures."""
    buckets = {bucket: {**translation_scores([hypotheses[i] for i in chosen],
                                             [references[i] for i in chosen], target_language),
                        "sentences": len(chosen)}
               for bucket, chosen in length_buckets(sources, source_language,
                                                    REAL_TEXT_BUCKETS).items()}
    return {**translation_scores(hypotheses, references, target_language),
            "sentences": len(sources), "by_source_length": buckets,
            "bleu_signature": bleu(["a"], ["a"], target_language)["signature"],
            "chrf_signature": chrf(["a"], ["a"])["signature"]}
