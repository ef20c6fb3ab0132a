"""Packs: translators' training pairs as token ids, written on the CPU and trained from
where the corpora are not (``zoo.training.packs``, ``training/device_run.py``)."""

import dataclasses
import itertools
import json

import numpy as np
import pytest

from zoo.data import parallel, tatoeba
from zoo.training import packs, recipes

SUBJECTS = [("the cat", "le chat"), ("the dog", "le chien"), ("my friend", "mon ami"),
            ("the teacher", "le professeur"), ("his brother", "son frère"),
            ("our neighbour", "notre voisin")]
VERBS = [("sees", "voit"), ("likes", "aime"), ("calls", "appelle"), ("finds", "trouve"),
         ("paints", "peint")]
OBJECTS = [("the house", "la maison"), ("a book", "un livre"), ("the city", "la ville"),
           ("the car", "la voiture"), ("a letter", "une lettre"), ("the garden", "le jardin")]
ENDINGS = [("", ""), (" today", " aujourd'hui"), (" again", " encore"),
           (" every day", " chaque jour"), (" at night", " la nuit"), (" now", " maintenant")]
# Each file of the French mix and its real-text sets, with how many sentences it takes.
FRENCH_FILES = {"tatoeba/fra-eng.tsv": 400, "parallel/opensubtitles.en-fr.tsv": 300,
                "parallel/multi30k.en-fr.tsv": 200, "parallel/newstest2008-2012.en-fr.tsv": 120,
                "parallel/freedict.en-fr.tsv": 80, "parallel/ntrex128.en-fr.tsv": 60,
                "parallel/newstest2013.en-fr.tsv": 30, "parallel/newstest2014.en-fr.tsv": 30,
                "parallel/diabla.en-fr.tsv": 60}
SMALL_SETS = {"ntrex_validation": ("ntrex_fr", 0, 30), "ntrex_test": ("ntrex_fr", 30, None),
              "newstest2013_validation": ("newstest2013", 0, None),
              "newstest2014_test": ("newstest2014", 0, None),
              "diabla_validation": ("diabla", 0, 30), "diabla_test": ("diabla", 30, None)}


def sentences():
    """Every English-French pair of the toy grammar, in a fixed shuffled order."""
    pairs = [(f"{s[0]} {v[0]} {o[0]}{e[0]}.".capitalize(), f"{s[1]} {v[1]} {o[1]}{e[1]}.".capitalize())
             for s, v, o, e in itertools.product(SUBJECTS, VERBS, OBJECTS, ENDINGS)]
    order = np.random.default_rng(0).permutation(len(pairs))
    return [pairs[i] for i in order]


@pytest.fixture
def french_data(tmp_path, monkeypatch):
    """A data folder with every file of the French mix (toy sentences, a different
    stretch of them in each), and the recipes' checksums set to these files'."""
    folder = tmp_path / "data"
    pairs, start = sentences(), 0
    for name, count in FRENCH_FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        chosen = pairs[start:start + count]
        start = (start + count) % (len(pairs) - count)
        path.write_text("".join(f"{en}\t{fr}\n" for en, fr in chosen), encoding="utf-8")
    monkeypatch.setitem(tatoeba.CORPORA, "fra", {**tatoeba.CORPORA["fra"],
                                                 "sha256": packs.sha256(folder / "tatoeba/fra-eng.tsv")})
    for name, corpus in list(parallel.CORPORA.items()):
        if corpus.language == "fr":
            monkeypatch.setitem(parallel.CORPORA, name, dataclasses.replace(
                corpus, sha256=packs.sha256(folder / corpus.file)))
    monkeypatch.setitem(parallel.EVALUATION_SETS, "fr", SMALL_SETS)
    return folder


def toy_recipe(name="toy_en_fr", **changes):
    return {"name": name, "task": "translation", "model": "AttentionSeq2Seq", "corpus": "fra",
            "source_language": "en", "target_language": "fr",
            "model_config": {"embedding_dim": 8, "units": 8, "max_source_length": 24,
                             "max_output_length": 24},
            "vocabulary": {"subwords": True, "source_size": 150, "target_size": 160},
            "mix": {"tatoeba": 1, "opensubtitles_fr": 0.5, "multi30k": 1, "wmt_news_fr": 2,
                    "freedict": 1},
            "batch_size": 8, "epochs": 2, "max_train_tokens": 7, "length_buckets": [5, 8],
            "weights_dtype": "float16",
            **changes}


def test_recipes_that_read_the_same_text_share_one_group():
    shipped = [recipes.load_recipe(name) for name in (
        "gru_bahdanau_cmn_en", "lstm_seq2seq_cmn_en", "gru_bahdanau_en_cmn",
        "gru_bahdanau_en_fr_guided", "gru_bahdanau_en_fr")]
    groups = packs.text_groups(shipped)
    assert {group: [r.name for r in members] for group, members in groups.items()} == {
        "gru_bahdanau_cmn_en": ["gru_bahdanau_cmn_en", "lstm_seq2seq_cmn_en",
                                "gru_bahdanau_en_cmn"],
        "gru_bahdanau_en_fr_guided": ["gru_bahdanau_en_fr_guided", "gru_bahdanau_en_fr"]}


def test_a_recipe_the_other_way_round_reads_the_groups_ids_from_the_other_side(french_data,
                                                                                tmp_path):
    reverse = toy_recipe("toy_fr_en", source_language="fr", target_language="en",
                         vocabulary={"subwords": True, "source_size": 160, "target_size": 150})
    manifest = packs.write_pack([toy_recipe(), reverse], tmp_path / "pack",
                                data_dir=french_data, printer=lambda _: None)
    assert list(manifest["groups"]) == ["toy_en_fr"]
    pack = packs.read_pack(tmp_path / "pack")
    forward = packs.PackedTranslationTask(pack, "toy_en_fr")
    backward = packs.PackedTranslationTask(pack, "toy_fr_en")
    there, back = forward.read_splits(), backward.read_splits()
    assert back["train"] == there["train"][::-1]
    assert back["validation"] == there["validation"][::-1]
    text, reversed_text = forward.build_preprocessor(there), backward.build_preprocessor(back)
    assert (reversed_text.source_language, reversed_text.target_language) == ("fr", "en")
    french = [fr for _, fr in sentences()[:50]]
    english = [en for en, _ in sentences()[:50]]
    assert reversed_text.source_rows(french) == text.target_rows(french)
    assert reversed_text.target_rows(english) == text.source_rows(english)


def test_a_pack_holds_each_corpus_as_the_ids_the_text_pipeline_gives(french_data, tmp_path):
    out = tmp_path / "pack"
    manifest = packs.write_pack([toy_recipe()], out, data_dir=french_data, printer=lambda _: None)
    pack = packs.read_pack(out)
    group = manifest["groups"]["toy_en_fr"]
    assert list(group["corpora"]) == ["tatoeba", "opensubtitles_fr", "multi30k", "wmt_news_fr",
                                      "freedict"]
    assert group["corpora"]["multi30k"]["pairs"] == 200  # none of them held out
    task = packs.PackedTranslationTask(pack, "toy_en_fr", printer=lambda _: None)
    splits = task.read_splits()
    preprocessor = task.build_preprocessor(splits)
    lines = (french_data / "parallel/multi30k.en-fr.tsv").read_text(encoding="utf-8").splitlines()
    english, french = zip(*(line.split("\t") for line in lines))
    source, target, links = packs.rows_of(pack.arrays("toy_en_fr", "multi30k"))
    kept = [(s, t) for s, t in zip(preprocessor.source_rows(english),
                                   preprocessor.target_rows(french)) if max(len(s), len(t)) <= 7]
    assert 0 < len(kept) < 200  # the longest pairs are left out, as make_dataset does
    assert list(zip(source, target)) == kept and links is None
    assert group["corpora"]["multi30k"]["packed"] == len(kept)
    assert task.split_sizes(splits) == group["split_sizes"]
    assert len(splits["validation"][0]) == group["validation"] == \
        group["split_sizes"]["validation"]
    # A pass takes each corpus by its weight: 0.5 of the subtitles, twice the news.
    assert [weight for _, weight in task.pools] == [1, 0.5, 1, 2, 1]
    assert set(manifest["files"]) == {str(p.relative_to(out)) for p in out.rglob("*")
                                      if p.is_file() and p.name != packs.PACK_FILE}


def test_a_pack_over_its_budget_draws_a_pool_of_its_largest_corpus(french_data, tmp_path):
    out = tmp_path / "whole"
    packs.write_pack([toy_recipe()], out, data_dir=french_data, printer=lambda _: None)
    whole = packs.size_of(out)
    largest = max(out.rglob("*.npz"), key=lambda p: p.stat().st_size)
    budget = whole - largest.stat().st_size // 2
    lines = []
    manifest = packs.write_pack([toy_recipe()], tmp_path / "pooled", data_dir=french_data,
                                budget_bytes=budget, printer=lines.append)
    assert packs.size_of(tmp_path / "pooled") <= budget
    record = manifest["groups"]["toy_en_fr"]["corpora"][largest.stem]
    assert 0 < record["pool"]["pairs"] < record["packed"]
    task = packs.PackedTranslationTask(packs.read_pack(tmp_path / "pooled"), "toy_en_fr")
    task.read_splits()
    weights = dict(zip(manifest["groups"]["toy_en_fr"]["corpora"], task.pools))
    # A pass still takes the recipe's share of the whole corpus, drawn from the pool.
    pool, weight = weights[largest.stem]
    assert pool == record["pool"]["pairs"]
    assert weight * pool == pytest.approx(toy_recipe()["mix"][largest.stem] * record["packed"])
    assert any(f"{record['pool']['pairs']:,} of its {record['packed']:,} pairs kept" in line
               for line in lines)


def test_a_pack_that_cannot_fit_names_its_largest_files_and_leaves_nothing(french_data,
                                                                           tmp_path):
    with pytest.raises(packs.PackError, match=r"over its budget of 1\.0 KiB, even without \w+\.npz: .*\.npz [0-9.]+ KiB"):
        packs.write_pack([toy_recipe()], tmp_path / "pack", data_dir=french_data,
                         budget_bytes=1000, printer=lambda _: None)
    assert list(tmp_path.iterdir()) == [french_data]


def test_a_missing_or_different_corpus_stops_the_pack_naming_the_file(french_data, tmp_path):
    news = french_data / "parallel/newstest2008-2012.en-fr.tsv"
    news.write_text(news.read_text(encoding="utf-8") + "One more.\tUne de plus.\n",
                    encoding="utf-8")
    with pytest.raises(packs.PackError, match=rf"{news}: sha256 [0-9a-f]{{64}} differs from"):
        packs.write_pack([toy_recipe()], tmp_path / "pack", data_dir=french_data)
    news.unlink()
    with pytest.raises(packs.PackError, match=rf"toy_en_fr trains or validates on a file "
                                              rf"that is missing: {news} not found"):
        packs.write_pack([toy_recipe()], tmp_path / "pack", data_dir=french_data)
    assert not (tmp_path / "pack").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pack")]


def test_reading_a_damaged_pack_names_the_file(french_data, tmp_path):
    out = tmp_path / "pack"
    packs.write_pack([toy_recipe()], out, data_dir=french_data, printer=lambda _: None)
    damaged = out / "toy_en_fr" / "freedict.npz"
    damaged.write_bytes(damaged.read_bytes()[:-10])
    with pytest.raises(packs.PackError, match=rf"{damaged}: sha256 differs from the pack's "
                                              rf"record; the pack is damaged"):
        packs.read_pack(out)
    with pytest.raises(packs.PackError, match="holds no pack.json: not a pack"):
        packs.read_pack(tmp_path)
    with pytest.raises(packs.PackError, match="a pack holds translators' training pairs"):
        packs.write_pack(["lstm_charlm_shakespeare"], tmp_path / "other")


def test_guided_alignment_links_travel_in_the_pack(french_data, tmp_path, monkeypatch):
    def diagonal_links(preprocessor, sources, targets, printer):
        rows = zip(preprocessor.source_rows(sources), preprocessor.target_rows(targets))
        return [{(i, i) for i in range(min(len(s), len(t)))} for s, t in rows]

    monkeypatch.setattr(packs, "_links", diagonal_links)
    guided = toy_recipe("toy_guided", guided_alignment={"weight": 1.0})
    tuned = toy_recipe("toy_tuned", initial_preset="toy_guided")
    packs.write_pack([guided, tuned], tmp_path / "pack", data_dir=french_data,
                     printer=lambda _: None)
    pack = packs.read_pack(tmp_path / "pack")
    assert pack.group_of("toy_tuned") == pack.group_of("toy_guided") == "toy_guided"
    source, target, links = packs.rows_of(pack.arrays("toy_guided", "freedict"))
    assert links == [{(i, i) for i in range(min(len(s), len(t)))}
                     for s, t in zip(source, target)]
    task = packs.PackedTranslationTask(pack, "toy_guided")
    splits = task.read_splits()
    assert len(task.links) == len(splits["train"][0])
    assert packs.PackedTranslationTask(pack, "toy_tuned").read_splits() and \
        json.dumps(pack.recipe("toy_tuned").written) == json.dumps(tuned)
