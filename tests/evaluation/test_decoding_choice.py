"""zoo.evaluation.translation's choice of decoding defaults on validation: the search
defaults (output rules, coverage penalty) and the validation sample they are tried on."""

from zoo.evaluation import translation


class OptionsFollowingTranslator:
    """Answers each search-defaults candidate with outputs given in advance."""

    target_language = "en"
    has_attention = True

    def __init__(self, outputs):
        self.outputs, self.output_rules, self.coverage_penalty, self.calls = outputs, {}, 0.0, []

    def translate(self, sources, beam_size, check_outputs):
        self.calls.append((len(sources), beam_size))
        options = {**self.output_rules, "coverage_penalty": self.coverage_penalty}
        options = tuple(sorted((k, v) for k, v in options.items() if v))
        return self.outputs[options][len(sources) > 2]


def test_search_defaults_are_the_best_real_text_chrf_that_keeps_the_textbook_score():
    textbook = (["a", "b"], ["the cat sat.", "a dog ran."])
    real_text = {"news": (["x", "y", "z"], ["it was a long day at work.", "we left early.",
                                            "rain fell all night."])}
    stuttering = ["it was a a a day.", "we left.", "rain rain rain."]
    fixed = ["it was a long day.", "we left early.", "rain fell."]
    outputs = {
        (): (textbook[1], stuttering),
        (("no_repeat_ngram_size", 3),): (textbook[1], fixed),
        # The best chrF of all, but it costs the textbook BLEU: not chosen.
        (("min_length_ratio", 0.5),): (["the cat.", "a dog."], real_text["news"][1]),
        (("coverage_penalty", 0.2),): (textbook[1], stuttering),
    }
    model = OptionsFollowingTranslator(outputs)
    # A previous choice: every candidate is tried alone all the same.
    model.output_rules, model.coverage_penalty = {"min_length_ratio": 0.5}, 0.2
    candidates = [dict(options) for options in outputs]
    lines = []
    results = translation.choose_search_defaults(model, textbook, real_text, "bleu",
                                                 candidates=candidates, printer=lines.append)
    assert (model.output_rules, model.coverage_penalty) == ({"no_repeat_ngram_size": 3}, 0.0)
    assert [r["options"] for r in results] == candidates
    assert results[2]["chrf"] == 100.0 and results[2]["bleu"] < results[0]["bleu"] == 100.0
    assert results[0]["stutter"] == 66.67 and results[1]["stutter"] == 0.0
    assert {beam for _, beam in model.calls} == {5}
    assert lines[-1] == "search defaults chosen: {'no_repeat_ngram_size': 3}"
    # A model without attention is not tried with a coverage penalty.
    model.has_attention = False
    results = translation.choose_search_defaults(model, textbook, real_text, "bleu",
                                                 candidates=candidates, printer=lines.append)
    assert [r["options"] for r in results] == candidates[:3]


def test_spread_sample_keeps_both_ends_of_a_set_sorted_by_length():
    sources = [str(i) for i in range(10)]
    assert translation.spread_sample(sources, sources, 4) == (["0", "3", "6", "9"],) * 2
    assert translation.spread_sample(sources, sources, 20) == (sources, sources)
