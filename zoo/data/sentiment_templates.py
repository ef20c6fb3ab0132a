"""Templated training examples that teach a sentiment classifier negation and contrast.

SST-2's phrases rarely show a negated negative ("not bad"): a model trained on them
reads "not" + a negative word as negative. These examples state the rules directly:
"not" / "n't" / "never" flip the polarity of the word after them, and the clause after
"but" decides. Their polarity words are learned from the training split itself (words
whose lines are almost always of one label), never the words of the behavioural suite
(``zoo.data.sentiment_behaviour.SUITE_WORDS``), whose subjects and intensifiers are
not used either: the suite measures whether the rule was learned, not the words.
"""

import collections
import random

from zoo.data import sentiment_behaviour

SUBJECTS = ("the plot", "the cast", "the ending", "the performances", "the dialogue", "it",
            "the sequel", "the direction", "the soundtrack", "the premise")
INTENSIFIERS = ("so", "quite", "remarkably", "incredibly")
# Words that carry no polarity of their own, or change the polarity of others.
FUNCTION_WORDS = frozenset("""not n't never no nothing but and or the a an of to in is it 's
that this with for as its on be by are was his her their there so too more most than very
all just even only about what who which how if has have from at one out up film movie nor
neither none without lack lacks lacking fails fail hardly""".split())


def polarity_words(sentences, labels, per_label=150, min_count=25, purity=0.85):
    """``(positive, negative)``: the most frequent words whose training lines are at least
    ``purity`` of one label, the suite's words and function words left out."""
    counts = collections.Counter()
    positive_counts = collections.Counter()
    for sentence, label in zip(sentences, labels):
        words = set(sentence.lower().split())
        counts.update(words)
        if label == 1:
            positive_counts.update(words)
    excluded = FUNCTION_WORDS | sentiment_behaviour.SUITE_WORDS
    candidates = [w for w, c in counts.most_common() if c >= min_count and w.isalpha()
                  and len(w) > 2 and w not in excluded]
    positive = [w for w in candidates if positive_counts[w] / counts[w] >= purity]
    negative = [w for w in candidates if positive_counts[w] / counts[w] <= 1 - purity]
    return positive[:per_label], negative[:per_label]


TEMPLATES = (  # (template, label); {pos} and {neg} are polarity words, {s} {t} subjects
    ("{s} is {pos} .", 1), ("{s} is {neg} .", 0),
    ("{s} is not {neg} .", 1), ("{s} is not {pos} .", 0),
    ("{s} is n't {neg} .", 1), ("{s} is n't {pos} .", 0),
    ("not {neg} at all .", 1), ("not {pos} at all .", 0),
    ("{s} is never {neg} .", 1), ("{s} is never {pos} .", 0), ("never {neg} .", 1),
    ("{s} is {neg} , but {t} is {pos} .", 1), ("{s} is {pos} , but {t} is {neg} .", 0),
    ("{s} is {i} {pos} .", 1), ("{s} is {i} {neg} .", 0),
)


def examples(sentences, labels, count, seed=0):
    """``(sentences, labels)``: ``count`` templated examples, balanced over templates."""
    positive, negative = polarity_words(sentences, labels)
    rng = random.Random(f"sentiment_templates/{seed}")
    made, made_labels = [], []
    for index in range(count):
        template, label = TEMPLATES[index % len(TEMPLATES)]
        subject, other = rng.sample(SUBJECTS, 2)
        made.append(template.format(s=subject, t=other, pos=rng.choice(positive),
                                    neg=rng.choice(negative), i=rng.choice(INTENSIFIERS)))
        made_labels.append(label)
    return made, made_labels
