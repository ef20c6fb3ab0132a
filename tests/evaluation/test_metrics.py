"""zoo.evaluation.metrics (reached as ``zoo.evaluation.bleu`` and so on): BLEU, chrF, exact
match and the by-source-length breakdowns.

Expected values are worked out by hand (BLEU's n-gram precisions, brevity penalty and
smoothing) or taken from sacreBLEU's own corpus functions called directly.
(``unknown_outputs`` is tested in tests/text/test_wordpiece.py.)
"""

import math

import numpy as np
import pytest
import sacrebleu

from zoo import evaluation
from zoo.text.preprocessor import translation_words

# -- BLEU ----------------------------------------------------------------------------


def test_bleu_of_one_sentence_by_hand():
    # 6 tokens each. Matching n-grams: 1-grams 5/6 (all but "the" #2), 2-grams 3/5
    # (the cat, cat sat, sat on), 3-grams 2/4, 4-grams 1/3; equal lengths, so no
    # brevity penalty: BLEU = (5/6 * 3/5 * 2/4 * 1/3) ** (1/4) = (1/12) ** (1/4).
    result = evaluation.bleu(["the cat sat on the mat"], ["the cat sat on a mat"], "en")
    assert result["score"] == round(100 * (1 / 12) ** 0.25, 2) == 53.73
    assert "tok:13a" in result["signature"] and "nrefs:1" in result["signature"]


def test_bleu_of_chinese_uses_sacrebleus_chinese_tokenizer():
    # tok:zh splits every Han character: hypothesis 我 读 了 书 。 (5 tokens) against
    # 我 读 了 一 本 书 。 (7). Precisions 5/5, 3/4, 1/3 and 0/2, the zero smoothed
    # ("exp") to 1 / (2 * 2); brevity penalty exp(1 - 7/5).
    expected = math.exp(1 - 7 / 5) * (1 * 3 / 4 * 1 / 3 * 1 / 4) ** 0.25
    result = evaluation.bleu(["我读了书。"], ["我读了一本书。"], "zh")
    assert result["score"] == round(100 * expected, 2) == 33.52
    assert "tok:zh" in result["signature"]
    # With 13a the unspaced sentence is one token, wrong: it would score 0.
    assert evaluation.bleu(["我读了书。"], ["我读了一本书。"], "en")["score"] == 0.0


def test_bleu_of_a_corpus_matches_sacrebleu():
    hypotheses = ["I read a book.", "Hello!", "He is very happy today.", "You read it."]
    references = ["I read a book.", "Hello.", "He is happy.", "You read."]
    expected = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="13a").score
    assert 0 < expected < 100
    result = evaluation.bleu(iter(hypotheses), tuple(references), "fr")  # any iterables
    assert result["score"] == round(expected, 2)
    # Corpus BLEU pools n-gram counts: not the mean of sentence scores.
    sentence_mean = sum(
        sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hypotheses, references)) / 4
    assert abs(result["score"] - sentence_mean) > 1


def test_bleu_is_cased_and_perfect_for_identical_text():
    sentences = ["The cat sat on the mat.", "A dog barked twice."]
    assert evaluation.bleu(sentences, sentences, "en")["score"] == 100.0
    lowered = [s.lower() for s in sentences]
    assert evaluation.bleu(lowered, sentences, "en")["score"] < 100.0


def test_bleu_uses_one_tokenizer_per_target_language():
    assert evaluation.BLEU_TOKENIZE == {"zh": "zh", "en": "13a", "fr": "13a", "de": "13a",
                                        "es": "13a", "it": "13a", "pt": "13a", "ru": "13a"}
    for language, tokenizer in evaluation.BLEU_TOKENIZE.items():
        signature = evaluation.bleu(["a b c d"], ["a b c d"], language)["signature"]
        assert f"tok:{tokenizer}" in signature


# -- chrF -----------------------------------------------------------------------------


def test_bleu_gain_is_the_difference_with_a_paired_bootstrap_interval():
    references = ["the cat sat on the mat", "a dog ran in the park", "it is raining today",
                  "we read a good book", "she plays the piano well", "they left early"]
    better = list(references[:4]) + ["she plays piano", "they left"]
    worse = ["the cat sat", "a dog ran", "it rains", "we read books", "she plays", "left"]
    result = evaluation.bleu_gain(better, worse, references, "en", resamples=200)
    expected = (evaluation.bleu(better, references, "en")["score"]
                - evaluation.bleu(worse, references, "en")["score"])
    assert abs(result["gain"] - expected) <= 0.011  # both rounded to 2 decimals
    low, high = result["interval_95"]
    assert 0 < low <= result["gain"] <= high  # better on every sentence: every draw gains
    assert result == evaluation.bleu_gain(better, worse, references, "en", resamples=200)
    same = evaluation.bleu_gain(worse, worse, references, "en", resamples=50)
    assert same["gain"] == 0 and same["interval_95"] == [0, 0]
    with pytest.raises(ValueError, match="one hypothesis per reference"):
        evaluation.bleu_gain(better[:3], worse, references, "en")


def test_chrf_matches_sacrebleu():
    hypotheses = ["Je suis content.", "Bonjour !", "Il lit un livre."]
    references = ["Je suis heureux.", "Bonjour.", "Il a lu un livre."]
    expected = sacrebleu.corpus_chrf(hypotheses, [references]).score
    assert 0 < expected < 100
    result = evaluation.chrf(hypotheses, references)
    assert result["score"] == round(expected, 2)
    assert "nc:6" in result["signature"] and "nw:0" in result["signature"]  # chrF, not chrF++


def test_chrf_extremes():
    assert evaluation.chrf(["abc def"], ["abc def"])["score"] == 100.0
    assert evaluation.chrf(["xyz"], ["abc"])["score"] == 0.0


# -- exact match ------------------------------------------------------------------------


def test_exact_match_counts_identical_strings():
    result = evaluation.exact_match(["2024-01-05", "1999-12-31", "2000-1-1"],
                                    ["2024-01-05", "1999-12-31", "2000-01-01"])
    assert result == {"score": 66.67, "correct": 2, "examples": 3}


def test_exact_match_is_exact():
    # No normalisation of case or spacing: a teaching task's answer is right or wrong.
    result = evaluation.exact_match(["Hello.", "hello", "hello "], ["Hello.", "Hello", "hello"])
    assert result == {"score": 33.33, "correct": 1, "examples": 3}


def test_exact_match_of_nothing_is_zero():
    assert evaluation.exact_match([], []) == {"score": 0.0, "correct": 0, "examples": 0}


def test_exact_match_refuses_lists_of_different_lengths():
    with pytest.raises(ValueError):
        evaluation.exact_match(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        evaluation.exact_match(["a", "b"], ["a"])


# -- unknown outputs (beyond tests/text/test_wordpiece.py) -----------------------------------


def test_unknown_outputs_counts_outputs_not_holes():
    result = evaluation.unknown_outputs(["[UNK] [UNK] [UNK]", "ok", "fine"])
    assert result == {"count": 1, "examples": 3, "percent": 33.33}


# -- the preset's single number ------------------------------------------------------------


def test_sequence_score_picks_the_metric():
    hypotheses, references = ["the cat sat on the mat", "yes"], ["the cat sat on a mat", "yes"]
    assert evaluation.sequence_score("exact_match", hypotheses, references, "en") == 50.0
    assert evaluation.sequence_score("bleu", hypotheses, references, "en") == (
        evaluation.bleu(hypotheses, references, "en")["score"])
    assert set(evaluation.SEQUENCE_METRICS) == {"bleu", "exact_match"}


def test_sequence_score_refuses_an_unknown_metric():
    with pytest.raises(ValueError, match="Unknown metric 'chrf'; known: bleu, exact_match"):
        evaluation.sequence_score("chrf", ["a"], ["a"], "en")


# -- by source length -------------------------------------------------------------------


def test_source_length_is_characters_for_chinese_and_words_otherwise():
    assert evaluation.source_length("我读了一本书。", "zh") == 7
    assert evaluation.source_length("我叫Tom。", "zh") == 4  # Latin words stay whole
    assert evaluation.source_length("Hello, world!", "en") == 4  # punctuation counts
    assert evaluation.source_length("I read a book", "en") == 4


def test_bucket_names():
    assert [evaluation.bucket_name(low, high) for low, high in evaluation.LENGTH_BUCKETS] == [
        "1-5", "6-10", "11-15", "16-20", "21+"]


def _sentence(words):
    return " ".join(f"w{i}" for i in range(words))


def test_by_source_length_splits_at_the_bucket_edges():
    lengths = [1, 5, 6, 10, 11, 16, 20, 21, 40, 3]
    sources = [_sentence(n) for n in lengths]
    hypotheses = [f"h{i}" for i in range(len(sources))]
    seen = {}

    def score(chosen_hypotheses, chosen_references):
        seen[tuple(chosen_hypotheses)] = list(chosen_references)
        return len(chosen_hypotheses)

    buckets = evaluation.by_source_length(sources, hypotheses, [h.upper() for h in hypotheses],
                                          "en", score, "count")
    assert buckets == {
        "1-5": {"count": 3, "sentences": 3},  # lengths 1, 5, 3
        "6-10": {"count": 2, "sentences": 2},
        "11-15": {"count": 1, "sentences": 1},
        "16-20": {"count": 2, "sentences": 2},
        "21+": {"count": 2, "sentences": 2},
    }
    # Each bucket scores its own sentences, hypotheses paired with their references,
    # in corpus order.
    assert seen == {
        ("h0", "h1", "h9"): ["H0", "H1", "H9"],
        ("h2", "h3"): ["H2", "H3"],
        ("h4",): ["H4"],
        ("h5", "h6"): ["H5", "H6"],
        ("h7", "h8"): ["H7", "H8"],
    }


def test_by_source_length_leaves_out_empty_buckets():
    buckets = evaluation.by_source_length(["a b", "c"], ["x", "y"], ["x", "z"], "en",
                                          lambda h, r: evaluation.exact_match(h, r)["score"],
                                          "exact_match")
    assert buckets == {"1-5": {"exact_match": 50.0, "sentences": 2}}
    assert evaluation.by_source_length([], [], [], "en", lambda h, r: 0, "x") == {}


def test_bleu_by_source_length_is_bleu_of_each_bucket():
    sources = ["我很高兴。", "你好。", "他昨天在图书馆里读了一本很有意思的书。"]  # 5, 3, 19 characters
    hypotheses = ["I am happy.", "Hello there.", "Yesterday he read a very good book in the library."]
    references = ["I am happy.", "Hello.", "Yesterday he read an interesting book in the library."]
    buckets = evaluation.bleu_by_source_length(sources, hypotheses, references, "zh", "en")
    assert list(buckets) == ["1-5", "16-20"]
    assert buckets["1-5"] == {
        "bleu": evaluation.bleu(hypotheses[:2], references[:2], "en")["score"], "sentences": 2}
    assert buckets["16-20"] == {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses[2:], [references[2:]]).score, 2),
        "sentences": 1}
    assert 0 < buckets["16-20"]["bleu"] < 100


@pytest.mark.parametrize("score", [lambda h, r: evaluation.bleu(h, r, "en"), evaluation.chrf])
def test_corpus_scores_refuse_lists_that_do_not_pair_up(score):
    with pytest.raises(ValueError, match="one hypothesis per reference, at least one; received "
                                         "1 hypotheses and 2 references"):
        score(["a b c d e"], ["a b c d e", "x y z w v"])
    with pytest.raises(ValueError, match="received 0 hypotheses and 0 references"):
        score([], [])


def test_bleu_names_the_target_languages_it_knows():
    with pytest.raises(ValueError, match="No BLEU tokenizer chosen for target language 'ja'; "
                                         "known: zh, en, fr"):
        evaluation.bleu(["こんにちは"], ["こんにちは"], "ja")


def test_attention_on_punctuation_counts_words_that_look_at_punctuation_only():
    # "Je suis étudiant ." from "I am a student .": "Je" looks at ".", "suis" at "am",
    # "étudiant" at "student"; the produced "." is punctuation and not counted.
    weights = np.array([[0.1, 0.1, 0.1, 0.1, 0.6],
                        [0.1, 0.7, 0.1, 0.0, 0.1],
                        [0.0, 0.0, 0.2, 0.7, 0.1],
                        [0.0, 0.0, 0.0, 0.1, 0.9]])
    share = evaluation.attention_on_punctuation(
        ["I am a student.", "Hello!"], ["Je suis étudiant.", "Bonjour !"],
        [weights, np.array([[0.2, 0.8], [0.0, 1.0]])], "en", "fr")
    assert (share["words"], share["on_punctuation"]) == (4, 2)
    assert (share["first_words"], share["first_on_punctuation"]) == (2, 2)
    assert (share["percent"], share["first_word_percent"]) == (50.0, 100.0)
    assert evaluation.punctuation_only("«") and evaluation.punctuation_only("。")
    assert not evaluation.punctuation_only("3.") and not evaluation.punctuation_only("")


def test_attention_on_punctuation_refuses_attention_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"Attention of shape \(1, 2\) for 2 produced and 2"):
        evaluation.attention_on_punctuation(["Hi."], ["Salut !"], [np.ones((1, 2))], "en", "fr")


def test_an_unknown_word_in_the_output_is_one_produced_word_as_in_the_attention_rows():
    from conftest import MODELS, tiny_translator

    preprocessor = tiny_translator(MODELS["attention"]).preprocessor
    source = "我读了一本书。"
    vocabulary = preprocessor.target_vocabulary
    ids = [vocabulary.ids_of(["I"])[0], 1, vocabulary.ids_of(["."])[0]]  # 1: [UNK]
    output = preprocessor.detokenize_translation(preprocessor.tokenize_sources([source])[0], ids)
    assert output == "I [UNK]."
    words = translation_words(output, "en")
    assert words == preprocessor.output_words(ids) == ["I", "[UNK]", "."]
    source_words = preprocessor.source_words(source)
    weights = np.zeros((3, len(source_words)))
    weights[:, -1] = 1.0  # every word looks at the final "。"
    share = evaluation.attention_on_punctuation([source], [output], [weights], "zh", "en")
    assert (share["words"], share["on_punctuation"]) == (2, 2)  # "I" and "[UNK]", not "."


def test_real_text_scores_give_chrf_bleu_and_length_ratio_per_long_bucket():
    sources = [_sentence(n) for n in (4, 15, 35, 60)]
    references = ["the cat sat on the mat", "a dog ran", "it rains today", "we read books"]
    hypotheses = ["the cat sat on the mat", "a dog ran far away", "it rains", "we read books"]
    result = evaluation.real_text_scores(sources, hypotheses, references, "en", "en")
    assert set(result["by_source_length"]) == {"1-10", "11-20", "31-50", "51+"}
    assert result["by_source_length"]["1-10"] == {"chrf": 100.0, "bleu": 100.0,
                                                  "length_ratio": 1.0, "sentences": 1}
    # 5 output tokens for 3: the ratio is BLEU's system length over reference length.
    assert result["by_source_length"]["11-20"]["length_ratio"] == round(5 / 3, 3)
    assert result["by_source_length"]["31-50"]["length_ratio"] == round(2 / 3, 3)
    assert result["length_ratio"] == round((6 + 5 + 2 + 3) / (6 + 3 + 3 + 3), 3)
    assert result["chrf"] == evaluation.chrf(hypotheses, references)["score"]
    assert result["bleu"] == evaluation.bleu(hypotheses, references, "en")["score"]
    assert result["sentences"] == 4 and "tok:13a" in result["bleu_signature"]


def test_made_up_words_are_words_of_no_training_text():
    known = {"I", "read", "a", "book", "."}
    result = evaluation.made_up_words(["I read a book.", "I read a pillr.", "I read 42 books."],
                                      known, "en")
    assert (result["count"], result["examples"], result["percent"]) == (2, 3, 66.67)
    assert result["words"] == ["books", "pillr"]  # numbers never count


def test_stutters_finds_a_word_or_a_phrase_three_times_in_a_row():
    assert evaluation.stutters("the m m m o'clock".split())
    assert evaluation.stutters("to be a b a b a b".split())
    assert not evaluation.stutters("m m o'clock m".split())  # twice in a row, then apart
    assert not evaluation.stutters("a b a b c a b".split())
    assert not evaluation.stutters([])


def test_decoding_failures_counts_outputs_in_percent():
    hypotheses = ["in the m. m. m. here",  # stutter (the dots are not words)
                  "Si",  # 1 word against 7: short
                  "I like it, and I like it a lot.",  # "I like it" twice; the reference once
                  "She said no, no, no.",  # a stutter the reference has too: still a stutter
                  "Close the window please."]
    references = ["in the afternoon here", "If the heating still is not working",
                  "I like it a lot.", "She said no, no, no.", "Please close the window."]
    result = evaluation.decoding_failures(hypotheses, references, "en")
    assert result == {"outputs": 5, "stutter": 40.0, "repeated_phrase": 20.0, "short": 20.0}


def test_decoding_failures_keeps_a_phrase_the_reference_repeats_and_counts_chinese_characters():
    # The reference says "I like it" twice too: not a failure of the search.
    assert evaluation.decoding_failures(
        ["I like it, I like it."], ["I like it, I like it!"], "en")["repeated_phrase"] == 0
    # 3 characters against 8: short; 4 against 8: not.
    assert evaluation.decoding_failures(["我读书。", "我读了书。"], ["我读了一本好书。"] * 2,
                                        "zh")["short"] == 50.0
    with pytest.raises(ValueError, match="one hypothesis per reference"):
        evaluation.decoding_failures(["a"], ["a", "b"], "en")


def test_the_package_reaches_every_public_metric():
    # The docs and the model cards name them as zoo.evaluation.X.
    import ast
    import inspect

    from zoo.evaluation import metrics

    defined = ast.parse(inspect.getsource(metrics)).body
    public = {node.name for node in defined if isinstance(node, ast.FunctionDef)} | {
        target.id for node in defined if isinstance(node, ast.Assign)
        for target in node.targets}
    public = {name for name in public if not name.startswith("_")}
    assert public - set(evaluation.__all__) == set()
    assert all(getattr(evaluation, name) is getattr(metrics, name) for name in public)
