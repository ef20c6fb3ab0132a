"""Subword vocabularies: one WordPiece tokenization in Python, in a TF graph, in HF
``tokenizers`` and in an app that reads only ``NAME.json``."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from zoo.data import tatoeba
from zoo.text import TranslationPreprocessor, tokenize, wordpiece
from zoo.text.vocabulary import OOV, SPECIAL_TOKENS


def _pairs(corpus):
    return tatoeba.split(tatoeba.read(corpus))


@pytest.fixture(scope="module")
def preprocessors():
    """Preprocessors learned on each corpus' training split, both directions of cmn."""
    cmn, fra = _pairs("cmn"), _pairs("fra")
    made = {}
    for name, splits, source_language, target_language, sizes in (
        ("zh_en", cmn, "zh", "en", (3000, 4500)),
        ("en_zh", cmn, "en", "zh", (4500, 3000)),
        ("en_fr", fra, "en", "fr", (5800, 9000)),
    ):
        def side(pairs, language):
            return [p.english if language == "en" else p.other for p in pairs]

        train = splits["train"]
        made[name] = {
            "preprocessor": TranslationPreprocessor.train(
                side(train, source_language), side(train, target_language), source_language,
                target_language, *sizes),
            "train": (side(train, source_language), side(train, target_language)),
            "test": (side(splits["test"], source_language), side(splits["test"], target_language)),
        }
    return made


def test_greedy_longest_match():
    pieces = {"un", "##believ", "##able", "##b", "a", "##e"}
    assert wordpiece.split_word("unbelievable", pieces, OOV) == ["un", "##believ", "##able"]
    assert wordpiece.split_word("unbe", pieces, OOV) == ["un", "##b", "##e"]
    assert wordpiece.split_word("unz", pieces, OOV) == [OOV]  # one unknown character
    assert wordpiece.split_word("a" * 101, {"a", "##a"}, OOV) == [OOV]
    assert wordpiece.join_pieces(["un", "##believ", "##able", "!", "##x"]) == ["unbelievable", "!x"]
    assert wordpiece.join_pieces(["##x", "a", "##", "b"]) == ["x", "a", "##", "b"]
    assert wordpiece.word_indices(["##x", "a", "##b", "##", "b"]) == [0, 1, 1, 2, 3]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["zh_en", "en_zh", "en_fr"])
def test_every_training_character_can_be_spelled(preprocessors, name):
    case = preprocessors[name]
    preprocessor = case["preprocessor"]
    for texts, language, vocabulary in (
        (case["train"][0], preprocessor.source_language, preprocessor.source_vocabulary),
        (case["train"][1], preprocessor.target_language, preprocessor.target_vocabulary),
    ):
        tokens = set(vocabulary.tokens)
        characters = {c for text in texts for word in tokenize(text, language) for c in word}
        assert len(characters) > 40 and not characters - tokens  # each starts a word
        if language != "zh":  # and continues one
            assert not {wordpiece.CONTINUATION + c for c in characters} - tokens
    pieces = [case["preprocessor"].target_pieces(text) for text in case["test"][1]]
    unknown_characters = {c for text in case["test"][1] for c in text} - set(
        case["preprocessor"].target_vocabulary.tokens)
    unknown = sum(p.count(OOV) for p in pieces)
    # The decoder can write every reference but those with a character never seen.
    assert unknown <= sum(1 for text in case["test"][1] if set(text) & unknown_characters)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["zh_en", "en_zh", "en_fr"])
def test_python_equals_the_training_librarys_encoder(preprocessors, name):
    case = preprocessors[name]
    preprocessor = case["preprocessor"]
    for texts, language, vocabulary in (
        (case["test"][0] + case["train"][0][:2000], preprocessor.source_language,
         preprocessor.source_vocabulary),
        (case["test"][1], preprocessor.target_language, preprocessor.target_vocabulary),
    ):
        library = wordpiece.hf_tokenizer(vocabulary.tokens, OOV)
        for text in texts:
            words = tokenize(text, language)
            assert preprocessor.pieces(words, vocabulary) == library.encode(
                " ".join(words)).tokens, text


def _graph_tokenize(preprocessor):
    graph = preprocessor.graph()
    return tf.function(graph.tokenize, input_signature=[tf.TensorSpec([None], tf.string)])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["zh_en", "en_zh", "en_fr"])
def test_graph_equals_python_on_the_corpus(preprocessors, name):
    case = preprocessors[name]
    preprocessor = case["preprocessor"]
    texts = case["test"][0] + case["train"][0][:500]
    tokenize = _graph_tokenize(preprocessor)
    for start in range(0, len(texts), 256):
        batch = texts[start:start + 256]
        np.testing.assert_array_equal(tokenize(tf.constant(batch)).numpy(),
                                      preprocessor.tokenize_sources(batch))


@pytest.fixture(scope="module")
def en_fr_graph(preprocessors):
    preprocessor = preprocessors["en_fr"]["preprocessor"]
    return preprocessor, _graph_tokenize(preprocessor)


# Letters of the corpora, characters they never had, spaces the rules rewrite, marks.
ALPHABET = st.sampled_from(list("abcdeéèçœ ABZ'-.,!?«»…0123 我读书。\u00a0\u3000\u200b☃😀\ufffdß\u0301"))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(ALPHABET, max_size=40) | st.text(max_size=20), min_size=1, max_size=4))
def test_graph_equals_python_on_any_unicode(en_fr_graph, texts):
    preprocessor, tokenize = en_fr_graph
    np.testing.assert_array_equal(tokenize(tf.constant(texts)).numpy(),
                                  preprocessor.tokenize_sources(texts))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 8999), max_size=20), min_size=1, max_size=4))
def test_graph_detokenizing_equals_python(en_fr_graph, rows):
    preprocessor, _ = en_fr_graph
    rows = [r + [0] * (20 - len(r)) for r in rows]
    detokenize = preprocessor.graph().detokenize
    source = tf.constant([[5]] * len(rows))  # a known source piece: detokenize the output
    got = [t.decode() for t in detokenize(source, tf.constant(rows)).numpy()]
    assert got == [preprocessor.detokenize_target(r) for r in rows]


@pytest.mark.slow
def test_an_app_reading_only_the_runner_config_gives_the_same_ids(preprocessors, tmp_path):
    for name in ("zh_en", "en_fr"):
        case = preprocessors[name]
        config = tmp_path / f"{name}.json"
        config.write_text(json.dumps(case["preprocessor"].runner_config(), ensure_ascii=False),
                          encoding="utf-8")
        texts = case["test"][0][:300] + ["", "a" * 120, "x☃y", "iPhone 12 我有"]
        (tmp_path / "texts.json").write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        script = Path(__file__).resolve().parents[1] / "runner_config_tokenizer.py"  # in tests/
        blocked = "import runpy, sys; sys.modules['zoo'] = None; sys.argv = sys.argv[1:]; "
        result = subprocess.run(
            [sys.executable, "-c", blocked + f"runpy.run_path({str(script)!r}, run_name='__main__')",
             str(script), str(config), str(tmp_path / "texts.json")],
            capture_output=True, text=True, timeout=120, check=True)
        expected = [case["preprocessor"].source_vocabulary.ids_of(
            case["preprocessor"].source_pieces(t)) for t in texts]
        assert json.loads(result.stdout) == expected


def test_word_level_attention_sums_source_pieces_and_averages_produced_pieces():
    from zoo.text import Vocabulary

    source = Vocabulary(list(SPECIAL_TOKENS) + ["I", "read", "bo", "##ok", "."])
    target = Vocabulary(list(SPECIAL_TOKENS) + ["J'", "ai", "lu", "un", "li", "##vre", "."])
    preprocessor = TranslationPreprocessor("en", "fr", source, target)
    assert preprocessor.source_pieces("I read book.") == ["I", "read", "bo", "##ok", "."]
    ids = [target.ids_of([t])[0] for t in ["li", "##vre", "."]] + [3]
    weights = np.array([[0.1, 0.1, 0.3, 0.4, 0.1],
                        [0.0, 0.2, 0.2, 0.2, 0.4],
                        [0.0, 0.0, 0.0, 0.0, 1.0],
                        [0.2, 0.2, 0.2, 0.2, 0.2]])  # the [END] step: not produced
    pieces = preprocessor.alignment("I read book.", ids, weights, level="piece")
    assert pieces.produced == ["li", "##vre", "."] and pieces.weights.shape == (3, 5)
    words = preprocessor.alignment("I read book.", ids, weights)
    assert words.source == ["I", "read", "book", "."] and words.produced == ["livre", "."]
    np.testing.assert_allclose(words.weights, [[0.05, 0.15, 0.55, 0.25], [0, 0, 0, 1]])
    np.testing.assert_allclose(words.weights.sum(axis=1), 1.0)


def test_word_level_rows_follow_the_words_of_the_translation_text():
    """Pieces joined into one word may be two words of the text ("l'" "##été" reads
    "l'été", which zoo.text.tokenize splits after the elision): each gets the joined
    word's row, so the rows match tokenize(translation) (what scoring re-reads)."""
    from zoo.text import Vocabulary
    from zoo.text.preprocessor import translation_words

    source = Vocabulary(list(SPECIAL_TOKENS) + ["the", "summer", "."])
    target = Vocabulary(list(SPECIAL_TOKENS) + ["l'", "##été", "."])
    preprocessor = TranslationPreprocessor("en", "fr", source, target)
    ids = [target.ids_of([t])[0] for t in ["l'", "##été", ".", "[UNK]"]] + [3]
    weights = np.array([[0.6, 0.4, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0],
                        [1.0, 0.0, 0.0]])
    words = preprocessor.alignment("the summer.", ids, weights)
    translation = preprocessor.detokenize_target(ids)
    assert translation == "l'été. [UNK]"
    assert words.produced == ["l'", "été", ".", "[UNK]"]
    assert words.produced == translation_words(translation, "fr")
    np.testing.assert_allclose(words.weights, [[0.3, 0.7, 0], [0.3, 0.7, 0], [0, 0, 1],
                                               [0.5, 0.5, 0]])


def test_outputs_with_holes_are_counted():
    from zoo import evaluation

    assert evaluation.unknown_outputs(["Je suis un [UNK].", "[UNK] !", "Bonjour.", "[UNK"]) == {
        "count": 2, "examples": 4, "percent": 50.0}
    assert evaluation.unknown_outputs([]) == {"count": 0, "examples": 0, "percent": 0.0}
