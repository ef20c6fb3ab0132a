"""The Tatoeba reader and its leak-free split."""

import pytest

from zoo.data import tatoeba


def test_reads_the_local_corpora():
    pairs = tatoeba.read("cmn")
    assert len(pairs) == 26997
    assert pairs[0] == tatoeba.Pair("Hi.", "嗨。")
    assert len(tatoeba.read("fra")) == 71162


@pytest.mark.parametrize("corpus", ["cmn", "fra"])
def test_split_is_deterministic_and_no_test_sentence_occurs_in_training(corpus):
    pairs = tatoeba.read(corpus)
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
        tatoeba.read("cmn")


@pytest.mark.parametrize("corpus", ["cmn", "fra"])
def test_recorded_checksum_is_the_local_corpus(corpus):
    from zoo.presets import sha256

    info = tatoeba.CORPORA[corpus]
    assert info["url"] == f"http://www.manythings.org/anki/{info['file'][:3]}-eng.zip"
    assert sha256(tatoeba.corpus_path(corpus)) == info["sha256"]


def test_downloads_verify_each_file_they_write(tmp_path):
    """The download code a user outside this environment runs, on ``file://`` URLs: the
    Tatoeba member of a zip archive and a plain file, each checked against its sha256."""
    import hashlib
    import zipfile

    from zoo import data
    from zoo.data import shakespeare, tatoeba

    pairs = "Hi.\t嗨。\tCC-BY 2.0 (France)\n"
    archive = tmp_path / "cmn-eng.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("cmn.txt", pairs)
    digest = hashlib.sha256(pairs.encode()).hexdigest()
    files = {"cmn.txt": ("tatoeba/cmn-eng.tsv", digest)}
    (written,) = data.download(archive.as_uri(), files, tmp_path / "data")
    assert written.read_text(encoding="utf-8") == pairs
    assert tatoeba.read_pairs(written)[0].other == "嗨。"
    with pytest.raises(ValueError, match=r"now holds a different cmn.txt \(sha256 [0-9a-f]{64}\) "
                                         r"than the one the presets were trained and scored on"):
        data.download(archive.as_uri(), {"cmn.txt": ("x.tsv", "0" * 64)}, tmp_path / "bad")
    assert not (tmp_path / "bad" / "x.tsv").exists()
    text = tmp_path / "input.txt"
    text.write_text("First Citizen:\n", encoding="utf-8")
    plain = {"": (shakespeare.FILE, hashlib.sha256(text.read_bytes()).hexdigest())}
    (copied,) = data.download(text.as_uri(), plain, tmp_path / "data")
    assert copied.read_text(encoding="utf-8") == "First Citizen:\n"
