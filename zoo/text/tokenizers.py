"""Tokenizers: Chinese by character, English and French by word, punctuation split off.

A tokenizer is a list of regular-expression rewrites (``RULES``) followed by a split
on spaces; a detokenizer is a join with spaces followed by rewrites
(``DETOKENIZE_RULES``). The rules are data, written in the subset of syntax that
Python's ``re`` and TensorFlow's RE2 (``tf.strings.regex_replace``) read the same
way -- no look-arounds, no ``\\s``/``\\w``/``\\b`` (whose meaning differs between the
two for non-ASCII text), explicit character classes instead. ``tokenize`` and
``detokenize`` run them in plain Python (training, the TFLite runner, no TensorFlow
needed); ``tf_tokenize`` and ``tf_detokenize`` run the very same rules inside a
TensorFlow graph (SavedModel). Tests check that both agree on the corpora.

Text keeps its case, apostrophes and hyphens (``don't``, ``êtes-vous``); French
elisions are split after the apostrophe (``l'homme`` -> ``l'`` ``homme``) so that
``l'`` is one vocabulary entry instead of one per following word.
"""

import re

# Unicode spaces (no-break, narrow no-break, thin, ideographic, tabs, newlines)
# become plain spaces; zero-width spaces vanish; curly apostrophes become '.
_SPACES = "[\t\n\r\f\v\u00a0\u2009\u202f\u3000]"
_COMMON_RULES = [
    (_SPACES, " "),
    ("\u200b", ""),
    ("[\u2019\u2018]", "'"),
]

SPACE_TOKEN = "\u2581"  # ▁, as in SentencePiece

# ASCII and typographic punctuation that stands alone as a token in English/French.
_WORD_PUNCTUATION = "[.,!?;:\"«»()\\[\\]…%$€&+/]"

RULES = {
    "en": _COMMON_RULES + [(f"({_WORD_PUNCTUATION})", r" \1 ")],
    "fr": _COMMON_RULES + [(f"({_WORD_PUNCTUATION})", r" \1 "), ("'", "' ")],
    # Every character that is not ASCII letter, digit, apostrophe, hyphen or space
    # (Han characters, full-width punctuation) is a token; Latin words and numbers
    # inside Chinese text stay whole ("Tom", "100").
    "zh": _COMMON_RULES + [("([^A-Za-z0-9' -])", r" \1 ")],
    # English as the Penn Treebank writes it (SST-2): clitics split off ("did n't",
    # "it 's"). Models that read it also lower-case their input.
    "en_ptb": _COMMON_RULES + [(f"({_WORD_PUNCTUATION})", r" \1 "), ("n't", " n't"),
                               ("'(s|re|ve|ll|d|m)( |$)", r" '\1\2")],
    # Character level (the teaching tasks: dates, addition): every character is a
    # token, a space is the visible token SPACE_TOKEN; runs of spaces count as one and
    # spaces at either end are dropped, as a word tokenizer would.
    "char": _COMMON_RULES + [(" +", " "), ("^ | $", ""), (" ", SPACE_TOKEN), ("(.)", r" \1 ")],
}

DETOKENIZE_RULES = {
    "en": [
        (" ([.,!?;:%)\\]…])", r"\1"),
        ("([(\\[$]) ", r"\1"),
        ('" ([^"]*) "', r'"\1"'),
    ],
    # French typography: a space before ! ? ; : (as most of the corpus writes it),
    # none before . , and none after an elided article.
    "fr": [
        (" ([.,)\\]…%])", r"\1"),
        ("([(\\[]) ", r"\1"),
        ("' ", "'"),
        ('" ([^"]*) "', r'"\1"'),
    ],
    # No spaces in Chinese, except between two Latin words or numbers.
    "zh": [
        ("([^A-Za-z0-9]) ", r"\1"),
        (" ([^A-Za-z0-9])", r"\1"),
    ],
    "char": [(" ", ""), (SPACE_TOKEN, " ")],
    "en_ptb": [(" ([.,!?;:%)\\]…])", r"\1"), ("([(\\[$]) ", r"\1"), (" (n't|'s|'re|'ve|'ll|'d|'m)", r"\1")],
}

# Other languages written with spaces between words take the English rules
# (used when training on a tensorflow-datasets corpus such as ted_hrlr_translate).
for _language in ("de", "es", "it", "pt", "ru"):
    RULES[_language] = RULES["en"]
    DETOKENIZE_RULES[_language] = DETOKENIZE_RULES["en"]

LANGUAGES = tuple(RULES)


def _check_language(language):
    if language not in RULES:
        raise ValueError(
            f"Unsupported language {language!r}; supported: {', '.join(LANGUAGES)}."
        )


# \1 in a replacement means the same to re.sub and to RE2.
_COMPILED = {
    language: [(re.compile(p), r) for p, r in rules]
    for language, rules in RULES.items()
}
_COMPILED_DETOKENIZE = {
    language: [(re.compile(p), r) for p, r in rules]
    for language, rules in DETOKENIZE_RULES.items()
}


def tokenize(text, language):
    """Split one string into tokens (plain Python)."""
    _check_language(language)
    return split_with_rules(text, _COMPILED[language])


def detokenize(tokens, language):
    """Join tokens into readable text (plain Python)."""
    _check_language(language)
    return join_with_rules(tokens, _COMPILED_DETOKENIZE[language])


def split_with_rules(text, rules):
    """``tokenize`` with the rules given as data (``(pattern, replacement)`` pairs, e.g.
    read from a runner's ``NAME.json``)."""
    for pattern, replacement in rules:
        text = re.sub(pattern, replacement, text)
    return [token for token in text.split(" ") if token]


def join_with_rules(tokens, rules):
    """``detokenize`` with the rules given as data."""
    text = " ".join(tokens)
    for pattern, replacement in rules:
        text = re.sub(pattern, replacement, text)
    return text


def tf_tokenize(texts, language, rules=None):
    """Tokenize a 1-D string tensor inside a graph: a ``tf.RaggedTensor`` of tokens
    (``rules``: the language's rules given as data instead)."""
    import tensorflow as tf

    _check_language(language)
    for pattern, replacement in rules or RULES[language]:
        texts = tf.strings.regex_replace(texts, pattern, replacement)
    tokens = tf.strings.split(texts, sep=" ")
    return tf.ragged.boolean_mask(tokens, tf.strings.length(tokens) > 0)


def tf_detokenize(tokens, language, rules=None):
    """Join a ragged (or dense, with empty strings as padding) string tensor of tokens."""
    import tensorflow as tf

    _check_language(language)
    if isinstance(tokens, tf.RaggedTensor):
        texts = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
    else:
        tokens = tf.ragged.boolean_mask(tokens, tf.strings.length(tokens) > 0)
        texts = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
    for pattern, replacement in rules or DETOKENIZE_RULES[language]:
        texts = tf.strings.regex_replace(texts, pattern, replacement)
    return texts
