"""A behavioural test suite for sentiment classifiers, in the manner of CheckList
(Ribeiro et al. 2020): short sentences built from templates, each testing one
capability, with the label a reader would give.

The suite is kept apart from training data: no trainer reads this module, and its
adjectives and nouns are listed here so that a trainer that writes templated examples
of its own can be checked to use other words (``SUITE_WORDS``).

    from zoo.data import sentiment_behaviour
    sentiment_behaviour.score(zoo.load("bilstm_sst2"))
"""

import itertools

POSITIVE = ("good", "great", "funny", "charming", "moving", "clever", "beautiful", "enjoyable")
NEGATIVE = ("bad", "dull", "boring", "awful", "terrible", "predictable", "tedious", "clumsy")
SUBJECTS = ("the movie", "the film", "this picture", "the acting", "the script", "the story")
INTENSIFIERS = ("very", "really", "truly", "extremely")
SUITE_WORDS = frozenset(POSITIVE + NEGATIVE + INTENSIFIERS)
LABELS = {0: "negative", 1: "positive"}


def _cases():
    """``{capability: [(sentence, label)]}``, label 1 positive, 0 negative."""
    pairs = list(zip(POSITIVE, NEGATIVE))
    subjects = itertools.cycle(SUBJECTS)
    cases = {name: [] for name in ("plain", "negated negative", "negated positive",
                                   "never", "contrast with but", "intensifier")}
    for good, bad in pairs:
        subject, other = next(subjects), next(subjects)
        cases["plain"] += [(f"{subject} is {good} .", 1), (f"{subject} is {bad} .", 0)]
        cases["negated negative"] += [(f"{subject} is not {bad} .", 1), (f"not {bad} at all .", 1)]
        cases["negated positive"] += [(f"{subject} is not {good} .", 0),
                                      (f"{subject} is n't {good} at all .", 0)]
        cases["never"] += [(f"{subject} is never {bad} .", 1), (f"never {good} .", 0)]
        cases["contrast with but"] += [
            (f"{subject} is {bad} , but {other} is {good} .", 1),
            (f"{subject} is {good} , but {other} is {bad} .", 0),
        ]
    for (good, bad), intensifier in zip(pairs, itertools.cycle(INTENSIFIERS)):
        subject = next(subjects)
        cases["intensifier"] += [(f"{subject} is {intensifier} {good} .", 1),
                                 (f"{subject} is {intensifier} {bad} .", 0)]
    return cases


CASES = _cases()
# The capabilities that negation and contrast make up, reported together.
NEGATION_AND_CONTRAST = ("negated negative", "negated positive", "never", "contrast with but")


def score(model):
    """Per capability ``{"passed", "cases", "percent", "failures": [sentences]}``, and
    ``"negation and contrast"``: those four capabilities together."""
    results, together = {}, [0, 0]
    for capability, cases in CASES.items():
        predictions = model.classify([sentence for sentence, _ in cases])
        failures = [sentence for (sentence, label), prediction in zip(cases, predictions)
                    if prediction["label"] != LABELS[label]]
        passed = len(cases) - len(failures)
        results[capability] = {"passed": passed, "cases": len(cases),
                               "percent": round(100 * passed / len(cases), 1),
                               "failures": failures}
        if capability in NEGATION_AND_CONTRAST:
            together[0] += passed
            together[1] += len(cases)
    results["negation and contrast"] = {"passed": together[0], "cases": together[1],
                                        "percent": round(100 * together[0] / together[1], 1)}
    return results
