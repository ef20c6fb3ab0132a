"""The Tatoeba reader and its leak-free split."""

import pytest

from zoo.data import tatoeba


def test_reads_the_local_corpora():
    pairs = tatoeba.load("cmn")
    assert len(pairs) == 26997
    assert pairs[0] == tatoeba.Pair("Hi.", "嗨。")
    assert len(tatoeba.load("fra")) == 71162


@pytest.mark.parametrize("corpus", ["cmn", "fra"])
def test_split_is_deterministic_and_no_test_sentence_occurs_in_training(corpus):
    pairs = tatoeba.load(corpus)
    first, second = tatoeba.split(pairs), tatoeba.split(list(pairs))
    assert first == second
    assert sum(len(v) for v in first.values()) == len(pairs)
    train_english = {p.english for p in first["train"]}
    train_other = {p.other for p in first["train"]}
    for held_out in ("validation", "test"):
        assert all(p.english not in train_english for p in first[held_out])
        assert all(p.other not in train_other for p in first[held_out])
        assert 0.04 < len(first[held_out]) / len(pairs) < 0.06


def test_pairs_sharing_a_sentence_stay_together():
    pairs = [tatoeba.Pair("Hi.", "嗨。"), tatoeba.Pair("Hi.", "你好。"),
             tatoeba.Pair("Hello.", "你好。"), tatoeba.Pair("Bye.", "再见。")]
    splits = tatoeba.split(pairs)
    where = {p: name for name, subset in splits.items() for p in subset}
    assert where[pairs[0]] == where[pairs[1]] == where[pairs[2]]


def test_user_tsv_with_extra_columns_and_blank_lines(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("Hello.\tBonjour.\tsome attribution\n\nThanks.\tMerci.\n", encoding="utf-8")
    assert tatoeba.read_pairs(path) == [tatoeba.Pair("Hello.", "Bonjour."),
                                        tatoeba.Pair("Thanks.", "Merci.")]


def test_malformed_tsv_names_the_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("Hello.\tBonjour.\nonly one column\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv, line 2: expected at least 2 tab-separated"):
        tatoeba.read_pairs(path)


def test_missing_corpus_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv(tatoeba.DATA_DIR_VARIABLE, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"Set ZOO_DATA_DIR .* zoo.data.tatoeba.download"):
        tatoeba.load("cmn")


@pytest.mark.parametrize("corpus", ["cmn", "fra"])
def test_recorded_checksum_is_the_local_corpus(corpus):
    from zoo.presets import sha256

    info = tatoeba.CORPORA[corpus]
    assert info["url"] == f"http://www.manythings.org/anki/{info['file'][:3]}-eng.zip"
    assert sha256(tatoeba.corpus_path(corpus)) == info["sha256"]
