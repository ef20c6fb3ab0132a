"""zoo.text.tokenizers: Python and TensorFlow agree; text comes back readable.

(Vocabularies: tests/text/test_vocabulary.py.)
"""

import pytest
import tensorflow as tf

from zoo.data import tatoeba
from zoo.text import detokenize, tf_detokenize, tf_tokenize, tokenize
from zoo.text.tokenizers import SPACE_TOKEN

ROUND_TRIPS = {
    "en": ["I read a book.", "Don't you think it's \"good\"?", "It costs $5 (or 10%).",
           "Tom's here, isn't he?", "Wait... what?!"],
    "fr": ["Je l'ai lu aujourd'hui.", "Qui êtes-vous ?", "« Bonjour », dit-il.",
           "Il est 5 h : on y va !"],
    "zh": ["我读了一本书。", "你好，Tom！", "我有100块钱。", "他说：“好的。”"],
    "char": ["30 novembre 2026", "2026年11月30日", "535+61", "30 нояб. 2026 г.", "a'b-c d"],
}


@pytest.mark.parametrize("language", sorted(ROUND_TRIPS))
def test_detokenize_inverts_tokenize(language):
    for text in ROUND_TRIPS[language]:
        assert detokenize(tokenize(text, language), language) == text


def test_tokens_split_punctuation_and_keep_words_whole():
    assert tokenize("I read a book.", "en") == ["I", "read", "a", "book", "."]
    assert tokenize("Don't go-kart!", "en") == ["Don't", "go-kart", "!"]
    assert tokenize("Je l'ai vu, êtes-vous là ?", "fr") == [
        "Je", "l'", "ai", "vu", ",", "êtes-vous", "là", "?"]
    assert tokenize("你好，Tom！我有100块。", "zh") == [
        "你", "好", "，", "Tom", "！", "我", "有", "100", "块", "。"]


def test_characters_are_tokens_and_spaces_a_visible_token():
    assert tokenize("30.11. 26", "char") == ["3", "0", ".", "1", "1", ".", SPACE_TOKEN, "2", "6"]
    # Runs of spaces count as one; spaces at either end are dropped.
    assert tokenize("  Nov  30 ", "char") == ["N", "o", "v", SPACE_TOKEN, "3", "0"]
    assert tokenize(" \u3000 ", "char") == []


def test_python_and_tensorflow_agree_at_character_level():
    texts = ROUND_TRIPS["char"] + ["  Nov  30 ", "", "x\u202fy", "日\n本"]
    in_graph = tf_tokenize(tf.constant(texts), "char").to_list()
    assert [[t.decode() for t in row] for row in in_graph] == [tokenize(t, "char") for t in texts]
    tokens = tf.ragged.constant([tokenize(t, "char") for t in texts], dtype=tf.string)
    assert [t.decode() for t in tf_detokenize(tokens, "char").numpy()] == [
        detokenize(tokenize(t, "char"), "char") for t in texts]


def test_unicode_spaces_and_curly_apostrophes_are_normalised():
    assert tokenize("C\u2019est\u202f!", "fr") == ["C'", "est", "!"]
    assert tokenize("a\u00a0b\u3000c\u200bd", "en") == ["a", "b", "cd"]
    assert tokenize("   ", "en") == [] and tokenize("", "zh") == []


def test_unknown_language_is_refused():
    with pytest.raises(ValueError, match="Unsupported language 'ja'; supported: en, fr, zh, en_ptb, char, de"):
        tokenize("こんにちは", "ja")


def test_other_space_separated_languages_use_the_word_rules():
    assert tokenize("Olá, tudo bem?", "pt") == ["Olá", ",", "tudo", "bem", "?"]


def _corpus_sample(corpus, count=400):
    pairs = tatoeba.read(corpus)
    step = max(1, len(pairs) // count)
    return pairs[::step]


@pytest.mark.parametrize("corpus,language", [("cmn", "zh"), ("fra", "fr")])
def test_tensorflow_tokenizer_equals_python_on_the_corpora(corpus, language):
    pairs = _corpus_sample(corpus)
    for side, lang in (("english", "en"), ("other", language)):
        texts = [getattr(p, side) for p in pairs] + ROUND_TRIPS[lang]
        in_graph = tf_tokenize(tf.constant(texts), lang).to_list()
        assert [[t.decode() for t in row] for row in in_graph] == [tokenize(t, lang) for t in texts]
        tokens = [tokenize(t, lang) for t in texts]
        ragged = tf.ragged.constant(tokens, dtype=tf.string)
        joined = [t.decode() for t in tf_detokenize(ragged, lang).numpy()]
        assert joined == [detokenize(t, lang) for t in tokens]
