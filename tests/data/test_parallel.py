"""The broader parallel corpora: their cleaning, filters and the training mix."""

import gzip

import numpy as np
import pytest

from zoo.data import parallel
from zoo.data.tatoeba import Pair
from zoo.training import recipes
from zoo.training.batches import mixed_dataset


def test_subtitle_chinese_reads_as_written_text():
    assert parallel.normalise_subtitle_chinese("我女朋友也才跟我分手 所以...",
                                               "my girlfriend broke up with me, so...") == \
        "我女朋友也才跟我分手，所以..."
    # The English's final mark is the Chinese line's, where the subtitle dropped it.
    assert parallel.normalise_subtitle_chinese("没有血缘关系吧", "Hopefully no relation?") == \
        "没有血缘关系吧？"
    assert parallel.normalise_subtitle_chinese("我的天 真不幸的名字", "Oh, my. What a name.") == \
        "我的天，真不幸的名字。"
    # Spaces beside Latin words or numbers stay; a line that has its mark keeps it.
    assert parallel.normalise_subtitle_chinese("他叫 Tom 对吧？", "His name is Tom, right?") == \
        "他叫 Tom 对吧？"


def test_a_gloss_is_its_first_sense_without_notes():
    assert parallel.first_gloss("trisomy; Down's syndrome") == "trisomy"
    assert parallel.first_gloss("percent (Tw)") == "percent"
    assert parallel.first_gloss("to run/to jog") == "to run"
    assert parallel.first_gloss("variant of 說|说[shuo1]") is None
    assert parallel.first_gloss("CL:個|个[ge4]") is None
    assert parallel.first_gloss("(Tw)") is None


def test_pairs_out_of_proportion_or_too_long_are_left_out():
    assert parallel.keep_pair(Pair("I read a book.", "我读了一本书。"), "zh")
    assert not parallel.keep_pair(Pair("Yes.", "是的，我昨天晚上在图书馆里读了一整本关于中国历史的书。"), "zh")
    assert not parallel.keep_pair(Pair("", "你好"), "zh")
    fifty = " ".join(["word"] * 50)
    assert parallel.keep_pair(Pair(fifty, " ".join(["mot"] * 55)), "fr")
    too_long = " ".join(["word"] * (parallel.MAX_WORDS + 1))
    assert not parallel.keep_pair(Pair(too_long, too_long), "fr")


def test_training_pairs_read_gzip_drop_duplicates_and_held_out_sentences(tmp_path, monkeypatch):
    folder = tmp_path / "parallel"
    folder.mkdir()
    lines = ["Hello.\t你好", "Hello.\t你好", "I read a book.\t我读了一本书", "Thanks.\t谢谢",
             "Good night.\t晚安 睡个好觉"]
    with gzip.open(folder / "tvsub.en-zh.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    held_out = [Pair("Thanks a lot.", "谢谢")]  # shares its Chinese side with a pair
    pairs = parallel.training_pairs(["tvsub"], "zh", held_out, directory=tmp_path)["tvsub"]
    assert pairs == [Pair("Hello.", "你好。"), Pair("I read a book.", "我读了一本书。"),
                     Pair("Good night.", "晚安，睡个好觉。")]
    with pytest.raises(ValueError, match="pairs English with 'zh'; this mix translates "
                                         "between English and 'fr'"):
        parallel.training_pairs(["tvsub"], "fr", directory=tmp_path)


def test_the_real_text_sets_are_split_by_position_and_never_overlap():
    validation = parallel.evaluation_sets("zh", "validation")["ntrex_validation"]
    test = parallel.evaluation_sets("zh", "test")["ntrex_test"]
    assert (len(validation), len(test)) == (1000, 997)
    assert not {p.english for p in validation} & {p.english for p in test}
    assert set(parallel.evaluation_sets("fr", "test")) == {"ntrex_test", "newstest2014_test",
                                                           "diabla_test"}
    assert parallel.verify("ntrex_zh") and parallel.verify("newstest2014")


def test_each_pass_of_a_mix_draws_by_weight_anew_and_reproducibly():
    twice, quarter = list(range(10)), list(range(10, 50))
    data = mixed_dataset([(twice, 2), (quarter, 0.25)], lambda i: i % 7,
                         lambda batch: np.array(batch), None, batch_size=4, seed=3)
    passes = [np.concatenate(list(data.batches_of_pass(k))) for k in range(3)]
    for drawn in passes:
        assert len(drawn) == 30 and len(data) == 8  # 10 x 2 + 40 / 4; ceil(30 / 4)
        assert all(np.sum(drawn == i) == 2 for i in twice)
        from_quarter = drawn[drawn >= 10]
        assert len(from_quarter) == len(set(from_quarter)) == 10
    assert set(passes[0][passes[0] >= 10]) != set(passes[1][passes[1] >= 10])
    again = np.concatenate(list(data.batches_of_pass(1)))
    assert np.array_equal(again, passes[1])


def test_a_mix_names_known_corpora_with_positive_weights():
    base = {"name": "m", "corpus": "cmn", "model": "AttentionSeq2Seq",
            "source_language": "zh", "target_language": "en"}
    assert recipes.from_dict({**base, "mix": {"tatoeba": 2, "tvsub": 0.1}}).mix == \
        {"tatoeba": 2, "tvsub": 0.1}
    with pytest.raises(recipes.RecipeError, match="unknown corpus 'subs'; known: tatoeba, tvsub"):
        recipes.from_dict({**base, "mix": {"subs": 1}})
    with pytest.raises(recipes.RecipeError, match="the weight of 'tvsub' must be a positive "
                                                  "number; received 0"):
        recipes.from_dict({**base, "mix": {"tvsub": 0}})
