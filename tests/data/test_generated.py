"""The teaching tasks' generated data: right answers, leak-free splits, unambiguous inputs."""

import datetime

import pytest

from zoo.data import generated


def test_dates_are_written_as_each_locale_does_and_answered_in_iso():
    day = datetime.date(2026, 11, 30)
    assert generated.write_date(day, "fr_FR", "long") == "30 novembre 2026"
    assert generated.write_date(day, "en_US", "medium") == "Nov 30, 2026"
    assert generated.write_date(day, "zh_CN", "long") == "2026年11月30日"
    assert generated.write_date(day, "de_DE", "short") == "30.11.26"
    for source, target in generated.dates("train", 200, typed_share=0.5):
        assert datetime.date.fromisoformat(target).isoformat() == target and source


@pytest.mark.slow
def test_no_written_date_means_two_days():
    """Every style over years where a swapped day and month, or a two-digit year read
    first or last, could make two days look alike."""
    meaning = {}
    years = (1950, 1999, 2000, 2001, 2011, 2012, 2026, 2030, 2049)
    for year in years:
        day = datetime.date(year, 1, 1)
        while day.year == year:
            for style in generated.DATE_STYLES:
                text = generated.write_date(day, *style)
                assert meaning.setdefault(text, day) == day, (text, style)
            day += datetime.timedelta(days=1)


def test_date_splits_share_no_day():
    days = {split: {t for _, t in generated.dates(split, 3000)} for split in generated.SPLITS}
    assert not days["test"] & days["train"] and not days["validation"] & days["train"]
    assert not days["test"] & days["validation"]


def test_additions_are_right_and_test_problems_never_train_in_either_order():
    train = generated.additions("train", 20000)
    test = generated.additions("test", 2000)
    for source, target in train[:500] + test:
        a, b = map(int, source.split("+"))
        assert 0 <= a <= 999 and 0 <= b <= 999 and int(target) == a + b
    seen = {frozenset(s.split("+")) for s, _ in train}
    assert not any(frozenset(s.split("+")) in seen for s, _ in test)


def test_splits_are_deterministic_and_sized():
    sizes = {"train": 30, "validation": 5, "test": 7}
    first = generated.splits("addition", sizes, seed=3)
    assert first == generated.splits("addition", sizes, seed=3)
    assert first != generated.splits("addition", sizes, seed=4)
    assert {k: len(v[0]) for k, v in first.items()} == sizes


def test_unknown_task_and_malformed_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="Unknown generated task 'sums'; known: dates, addition"):
        generated.splits("sums", {"train": 1, "validation": 1, "test": 1})
    path = tmp_path / "bad.tsv"
    path.write_text("1+1\t2\n2+2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.tsv, line 2: expected 2 tab-separated columns"):
        generated.read_tsv(path)


def test_a_split_written_as_tsv_reads_back(tmp_path):
    pairs = generated.dates("test", 20)
    path = tmp_path / "dates.tsv"
    with open(path, "w", encoding="utf-8") as handle:
        generated.write_tsv(pairs, handle)
    assert generated.read_tsv(path) == ([s for s, _ in pairs], [t for _, t in pairs])


def test_dates_typed_by_hand_mean_one_day_and_read_as_people_write_them():
    import random

    rng = random.Random(0)
    meaning = {}
    for year in (1950, 1999, 2000, 2012, 2026, 2049):
        day = datetime.date(year, 1, 1)
        while day.year == year:
            for _ in range(8):
                text = generated.write_date_by_hand(day, rng)
                assert meaning.setdefault(" ".join(text.lower().split()), day) == day, text
            day += datetime.timedelta(days=1)
    def typed(day, draws=600):
        return {" ".join(generated.write_date_by_hand(day, rng).lower().split())
                for _ in range(draws)}

    assert {"march 3rd, 1999", "3rd of march 1999", "the 3rd of march, 1999", "mar. 3, 1999",
            "wednesday, march 3rd, 1999", "wed 3 mar 1999", "le 3 mars 1999",
            "一九九九年三月三日", "1999/3/3"} <= typed(datetime.date(1999, 3, 3))
    assert not {"3/3/1999", "3.3.1999"} & typed(datetime.date(1999, 3, 3))  # day <= 12
    assert {"12/31/1999", "31/12/1999", "december 31st, 1999"} <= typed(datetime.date(1999, 12, 31))
    assert {"le 1er janvier 2000", "1er janvier 2000"} <= typed(datetime.date(2000, 1, 1))
    assert {"二〇二六年十一月三十日", "二零二六年十一月三十日"} <= typed(datetime.date(2026, 11, 30))
    assert (generated.ordinal(1), generated.ordinal(12), generated.ordinal(22)) == ("1st", "12th", "22nd")
    assert [generated.chinese_number(n) for n in (3, 10, 11, 20, 31)] == ["三", "十", "十一", "二十", "三十一"]
