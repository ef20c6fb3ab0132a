"""Judging a sequence-to-sequence preset (translators, and the generated tasks judged by
exact match): its test split greedy and beam 5, real text, the input written by hand, a
user's file of pairs (``zoo evaluate``), and the decoding settings chosen on validation
(the length penalty, the search defaults), which only translate and score.
"""

import sys

import numpy as np
from tqdm import tqdm

import zoo
from zoo import _startup, presets
from zoo.data import generated, tatoeba, written_by_hand
from zoo.evaluation import cards, metrics
from zoo.evaluation.splits import pair_sides, preset_splits

LENGTH_PENALTIES = (0.0, 0.6, 1.0, 1.5, 2.0)


def read_pairs_file(model, path, unreadable=None):
    """A user's TSV of pairs, English first, as (sources, references) in the model's
    direction (``unreadable``: see ``zoo.data.utf8_lines``)."""
    return pair_sides(tatoeba.read_pairs(path, unreadable), model.source_language)


# -- scores --------------------------------------------------------------------------------


def score_translations(model, sources, references, beam_size=1, metric="bleu"):
    # Greedy translations of an attention model keep their alignments: how readable they
    # are is part of the score (the model card's "attention on punctuation").
    with_attention = beam_size == 1 and metric == "bleu" and model.has_attention
    hypotheses = model.translate(sources, beam_size=beam_size, check_outputs=False,
                                 return_attention=with_attention)
    readability = {}
    if with_attention:
        hypotheses, attentions = hypotheses
        readability = {"attention_on_punctuation": metrics.attention_on_punctuation(
            sources, hypotheses, attentions, model.source_language, model.target_language)}
    target = model.target_language
    if metric == "exact_match":
        return {
            "exact_match": metrics.exact_match(hypotheses, references),
            "exact_match_by_source_length": metrics.by_source_length(
                sources, hypotheses, references, model.source_language,
                lambda h, r: metrics.exact_match(h, r)["score"], "exact_match"),
        }, hypotheses
    return {
        "bleu": metrics.bleu(hypotheses, references, target),
        "chrf": metrics.chrf(hypotheses, references),
        "unknown_outputs": metrics.unknown_outputs(hypotheses),
        "bleu_by_source_length": metrics.bleu_by_source_length(
            sources, hypotheses, references, model.source_language, target
        ),
        **readability,
    }, hypotheses


def score_test_split(shipped, test, metric, printer):
    """The test split (``(sources, references)``), greedy and beam 5, and the headline."""
    test_sources, test_references = test
    scores = {}
    for name, beam in (("greedy", 1), ("beam5", 5)):
        result, _ = score_translations(shipped, test_sources, test_references,
                                       beam_size=beam, metric=metric)
        scores[name] = result
        printer(f"test {name}: " + ", ".join(
            f"{key} {value['score']}" for key, value in result.items() if "score" in value))
    label = "BLEU" if metric == "bleu" else "exact match %"
    return {"test": {"sentences": len(test_sources), **scores},
            "headline": f"test {label} {scores['beam5'][metric]['score']} (beam 5), "
                        f"{scores['greedy'][metric]['score']} (greedy)"}


def score_real_text(model, sources, references, known_words, printer, name, beam_size=5):
    """``metrics.real_text_scores`` of a real-text test set (beam 5), and the outputs
    with a word found in no training text (``known_words``)."""
    hypotheses = model.translate(sources, beam_size=beam_size, check_outputs=False)
    result = metrics.real_text_scores(sources, hypotheses, references, model.source_language,
                                      model.target_language)
    result["made_up_words"] = metrics.made_up_words(hypotheses, known_words,
                                                    model.target_language)
    printer(f"test {name}, beam {beam_size}: chrF {result['chrf']}, BLEU {result['bleu']}, "
            f"length ratio {result['length_ratio']}, made-up words in "
            f"{result['made_up_words']['percent']}% of outputs")
    return result


def behaviour_of(shipped, corpus, printer):
    """``{"behaviour": ...}`` on the input written by hand for a generated task."""
    behaviour = written_by_hand.score(shipped, corpus)
    printer(f"written by hand: {({k: v['percent'] for k, v in behaviour.items()})}")
    return {"behaviour": behaviour}


# -- decoding chosen on validation ---------------------------------------------------------


def choose_length_penalty(model, sources, references, candidates=LENGTH_PENALTIES, beam_size=5,
                          metric="bleu"):
    """The GNMT alpha that scores best on the validation split (never the test split)."""
    results = {}
    for alpha in candidates:
        model.length_penalty = alpha
        hypotheses = model.translate(sources, beam_size=beam_size, check_outputs=False)
        results[alpha] = metrics.sequence_score(metric, hypotheses, references,
                                                model.target_language)
    model.length_penalty = max(results, key=results.get)
    return results


# The search defaults a preset may ship with (issue 41), tried on validation: output
# rules (no repeated 3-gram of pieces; a floor on the length, a share of the source's
# pieces) and GNMT's coverage penalty (beam search, attention models), alone and together.
SEARCH_DEFAULT_CANDIDATES = (
    {}, {"no_repeat_ngram_size": 3}, {"min_length_ratio": 0.5},
    {"no_repeat_ngram_size": 3, "min_length_ratio": 0.5},
    {"no_repeat_ngram_size": 3, "min_length_ratio": 0.8},
    {"coverage_penalty": 0.2},
    {"no_repeat_ngram_size": 3, "min_length_ratio": 0.5, "coverage_penalty": 0.2})
# Sentences of each real-text validation set the defaults are tried on (``spread_sample``).
RULES_SAMPLE = 300


def spread_sample(sources, references, count):
    """``count`` pairs (all, when there are fewer) spread evenly over the set, first and
    last included: Tatoeba's files run from short sentences to long."""
    if len(sources) <= count:
        return list(sources), list(references)
    positions = np.linspace(0, len(sources) - 1, count).round().astype(int)
    return [sources[i] for i in positions], [references[i] for i in positions]


def set_search_defaults(model, candidate):
    """The model's output rules and coverage penalty, those of ``candidate`` alone."""
    model.output_rules = {k: v for k, v in candidate.items() if k != "coverage_penalty"}
    model.coverage_penalty = candidate.get("coverage_penalty", 0.0)


def choose_search_defaults(model, textbook, real_text, metric="bleu", beam_size=5,
                           candidates=SEARCH_DEFAULT_CANDIDATES, printer=print):
    """Set the model's ``output_rules`` and ``coverage_penalty`` to the candidate that
    ``chosen_search_defaults`` picks from each one's figures, tried at beam 5 on the
    real-text validation sets (``real_text``: ``{name: (sources, references)}``, long
    sentences among them) and the textbook validation pairs (``textbook``: ``(sources,
    references)``); returns those figures (real-text chrF and
    ``metrics.decoding_failures``, the textbook ``metric`` and its gain on no option with
    a 95% paired bootstrap interval). A coverage penalty is tried on attention models
    only."""
    language = model.target_language
    sources = [s for pairs in real_text.values() for s in pairs[0]]
    references = [r for pairs in real_text.values() for r in pairs[1]]

    def translated(texts):
        return model.translate(texts, beam_size=beam_size, check_outputs=False)

    results, textbook_of_none = [], None
    for candidate in candidates:
        if candidate.get("coverage_penalty") and not model.has_attention:
            continue
        set_search_defaults(model, candidate)  # the candidate alone, whatever was set before
        hypotheses, textbook_outputs = translated(sources), translated(textbook[0])
        if textbook_of_none is None:  # the first candidate: no option
            textbook_of_none = textbook_outputs
        result = {"options": candidate,
                  "chrf": metrics.chrf(hypotheses, references)["score"],
                  metric: metrics.sequence_score(metric, textbook_outputs, textbook[1], language),
                  f"{metric}_gain": _textbook_gain(metric, textbook_outputs, textbook_of_none,
                                                   textbook[1], language),
                  **metrics.decoding_failures(hypotheses, references, language)}
        printer(f"search options {candidate or 'none'}: real-text chrF {result['chrf']}, "
                f"textbook {metric} {result[metric]} (gain on none "
                f"{result[f'{metric}_gain']['interval_95']}), stutter {result['stutter']}%, "
                f"repeated phrase {result['repeated_phrase']}%, short {result['short']}%")
        results.append(result)
    chosen = chosen_search_defaults(results, metric)
    set_search_defaults(model, chosen)
    printer(f"search defaults chosen: {chosen or 'none'}")
    return results


def _textbook_gain(metric, hypotheses, of_none, references, language):
    """A candidate's textbook ``metric`` minus no option's, with its 95% paired bootstrap
    interval (``metrics.bleu_gain``); for exact match the difference alone, as its
    interval (the generated tasks have no real-text sets: never chosen on)."""
    if metric == "bleu":
        return metrics.bleu_gain(hypotheses, of_none, references, language)
    gain = round(metrics.sequence_score(metric, hypotheses, references, language)
                 - metrics.sequence_score(metric, of_none, references, language), 2)
    return {"gain": gain, "interval_95": [gain, gain]}


def chosen_search_defaults(results, metric="bleu"):
    """The rule that picks a translator's search defaults from its candidates' figures
    (``choose_search_defaults``; the first candidate is no option):

    1. only candidates whose textbook ``metric`` is within noise of no option's: the
       95% paired bootstrap interval of their gain reaches 0;
    2. of those, the ones that leave the least failure beyond the targets
       (``metrics.failures_beyond_targets``: the real-text outputs that stutter, repeat a
       phrase or come out short), so that a failure rate above a target is not kept for
       a textbook difference within noise;
    3. of those, the ones whose textbook ``metric`` is not below no option's; where each
       is below, the ones with the best (the fix that costs least);
    4. of those, the best real-text chrF; the first on ties.
    """
    within_noise = [r for r in results if r[f"{metric}_gain"]["interval_95"][1] >= 0]
    least = min(metrics.failures_beyond_targets(r) for r in within_noise)
    fewest = [r for r in within_noise if metrics.failures_beyond_targets(r) == least]
    floor = min(results[0][metric], max(r[metric] for r in fewest))
    kept = [r for r in fewest if r[metric] >= floor]
    return max(kept, key=lambda r: r["chrf"])["options"]


def tune_decoding(model, sources, references, metric, printer):
    """Pick the beam-search length penalty on validation; the metric of greedy and beam 5 there."""
    alpha_results = choose_length_penalty(model, sources, references, metric=metric)
    printer(f"length penalty on validation {metric}: {alpha_results} -> {model.length_penalty}")
    greedy = metrics.sequence_score(metric, model.translate(sources, check_outputs=False),
                                    references, model.target_language)
    return {"greedy": greedy, "beam5": alpha_results[model.length_penalty]}


# -- a user's file (``zoo evaluate``) ------------------------------------------------------


def evaluate_file(model, metadata, path, beam_size=1, batch_size=64):
    """BLEU and chrF of a TSV of pairs, English first; or, for a preset judged by
    exact match, of (input, expected answer) pairs: ``(result for --json, lines to
    print)``."""
    exact = metrics.metric_of(metadata) == "exact_match"
    unreadable = []
    sources, references = (generated.read_tsv(path, unreadable) if exact
                           else read_pairs_file(model, path, unreadable))
    if not sources:
        raise ValueError(f"{path} holds no sentence pairs.")
    hypotheses = _translate_with_progress(model, sources, beam_size, batch_size)
    if exact:
        result = metrics.exact_match(hypotheses, references)
        return ({"metric": "exact_match", "value": result["score"],
                 "examples": len(sources), "beam_size": beam_size,
                 "unreadable_lines": len(unreadable)},
                [f"exact match {result['score']}% ({result['correct']} of {len(sources)})"])
    scores = metrics.real_text_scores(sources, hypotheses, references,
                                      model.source_language, model.target_language)
    holes = metrics.unknown_outputs(hypotheses)
    failures = metrics.decoding_failures(hypotheses, references, model.target_language)
    buckets = [f"  {bucket:>6} source tokens: {values['sentences']:5} sentences, chrF "
               f"{values['chrf']}, BLEU {values['bleu']}, length ratio {values['length_ratio']}"
               for bucket, values in scores["by_source_length"].items()]
    return ({"metric": "bleu", "value": scores["bleu"], "examples": len(sources),
             "signature": scores["bleu_signature"], "chrf": scores["chrf"],
             "length_ratio": scores["length_ratio"], "beam_size": beam_size,
             "unknown_outputs": holes["count"], "by_source_length": scores["by_source_length"],
             "decoding_failures": failures, "unreadable_lines": len(unreadable)},
            [f"BLEU {scores['bleu']}  ({scores['bleu_signature']})",
             f"chrF {scores['chrf']}  ({scores['chrf_signature']})",
             f"length ratio {scores['length_ratio']} (output / reference tokens)",
             f"[UNK] in {holes['count']} of {holes['examples']} outputs ({holes['percent']}%)",
             f"outputs that stutter {failures['stutter']}%, repeat a phrase the reference "
             f"does not {failures['repeated_phrase']}%, have under half the reference's "
             f"words {failures['short']}%",
             "by source length:", *buckets])


def _translate_with_progress(model, sources, beam_size, batch_size):
    """A progress bar on stderr, only where the user sees it on a terminal: stdout stays
    for results (``zoo evaluate --json > out.json``), a log file gets no bar."""
    hypotheses = []
    with tqdm(total=len(sources), unit="sentence", file=sys.stderr,
              disable=not _startup.stderr_is_terminal()) as progress:
        for start in range(0, len(sources), batch_size):
            chunk = sources[start : start + batch_size]
            hypotheses += model.translate(chunk, beam_size=beam_size, check_outputs=False)
            progress.update(len(chunk))
    return hypotheses


# -- presets already shipped: measurements added after the fact ----------------------------


def record_behaviour(directory, printer=print):
    """Score a shipped generated-task preset on the input written by hand and write the
    result into its metadata and card (for presets trained before the check existed);
    the weights are not touched."""
    directory = presets.resolve(directory)
    metadata = presets.describe(directory)
    corpus = metadata["training"]["recipe"]["corpus"]
    metadata.update(behaviour_of(zoo.load(directory), corpus, printer))
    return presets.rewrite_description(directory, metadata, cards.translation_card(metadata))


def record_attention_on_punctuation(directory, data_dir=None, printer=print):
    """Measure a shipped attention translator's attention on punctuation (greedy, test
    split) and write it into its metadata and card (for presets trained before the
    measurement existed); the weights are not touched."""
    directory = presets.resolve(directory)
    test_sources, _ = preset_splits(directory, data_dir)["test"]
    model, metadata = zoo.load(directory), presets.describe(directory)
    outputs, attentions = model.translate(test_sources, check_outputs=False,
                                          return_attention=True)
    measured = metrics.attention_on_punctuation(
        test_sources, outputs, attentions, model.source_language, model.target_language)
    printer(f"{directory.name}: attention on punctuation {measured}")
    metadata["test"]["greedy"]["attention_on_punctuation"] = measured
    return presets.rewrite_description(directory, metadata, cards.translation_card(metadata))
