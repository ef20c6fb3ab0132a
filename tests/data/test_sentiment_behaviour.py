"""The behavioural suite for sentiment (CheckList-style): its cases and its scoring."""

import pytest

from zoo.data import sentiment_behaviour as suite


def test_every_capability_has_balanced_cases_with_the_suites_words():
    assert set(suite.CASES) == {"plain", "negated negative", "negated positive", "never",
                                "contrast with but", "intensifier"}
    for capability, cases in suite.CASES.items():
        assert len(cases) == 16 and sum(label for _, label in cases) in (8, 16, 0), capability
        assert len({sentence for sentence, _ in cases}) == len(cases)
    assert {label for _, label in suite.CASES["negated negative"]} == {1}
    assert ("the movie is not bad .", 1) in suite.CASES["negated negative"]
    assert ("the film is good , but the acting is bad .", 0) not in suite.CASES["contrast with but"]


class _ReadsTheLastAdjective:
    """A stand-in classifier: positive when the sentence's last listed adjective is."""

    def classify(self, texts):
        results = []
        for text in texts:
            last = [w for w in text.split() if w in suite.POSITIVE + suite.NEGATIVE][-1]
            label = "positive" if last in suite.POSITIVE else "negative"
            results.append({"label": label, "probability": 1.0})
        return results


def test_scores_count_passes_and_list_failures():
    results = suite.score(_ReadsTheLastAdjective())
    assert results["plain"] == {"passed": 16, "cases": 16, "percent": 100.0, "failures": []}
    assert results["contrast with but"]["passed"] == 16  # the clause after "but" decides
    assert results["negated negative"]["passed"] == 0
    assert results["negated negative"]["failures"][0] == "the movie is not bad ."
    assert results["never"]["passed"] == 0
    assert results["negation and contrast"] == {"passed": 16, "cases": 64, "percent": 25.0}


@pytest.mark.slow
def test_templated_training_examples_share_no_word_with_the_suite():
    from zoo.data import sentiment_templates, sst2

    splits = sst2.read()
    positive, negative = sentiment_templates.polarity_words(*splits["train"])
    assert len(positive) == len(negative) == 150 and not set(positive) & set(negative)
    assert {"best", "wonderful"} <= set(positive) and {"worst", "mess"} <= set(negative)
    sentences, labels = sentiment_templates.examples(*splits["train"], 3000)
    assert len(sentences) == 3000 and 1400 <= sum(labels) <= 1600
    suite_words = suite.SUITE_WORDS | {w for s in suite.SUBJECTS for w in s.split()} - {"the"}
    assert not {w for s in sentences for w in s.split()} & suite_words
    assert not set(sentences) & {s for cases in suite.CASES.values() for s, _ in cases}
    negated_negatives = [s for s, label in zip(sentences, labels)
                         if " is not " in s and s.split()[-2] in negative]
    assert negated_negatives and all(
        label == 1 for s, label in zip(sentences, labels) if s in negated_negatives)


def test_the_shipped_classifier_reads_negation_and_contrast():
    import zoo

    results = suite.score(zoo.load("bilstm_sst2"))
    metadata = zoo.describe("bilstm_sst2")
    assert metadata["behaviour"] == results  # re-scored, the card's table holds
    assert results["negation and contrast"]["percent"] >= 90
    assert results["plain"]["percent"] >= 90 and results["intensifier"]["percent"] >= 90
    assert metadata["test"]["accuracy"] >= 83.0
