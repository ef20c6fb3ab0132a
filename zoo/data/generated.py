"""Teaching tasks whose data the project generates: dates and addition.

Each task is a function of its split: ``splits(sizes, seed)`` gives
``{"train": (sources, targets), "validation": ..., "test": ...}``. Which split an
example belongs to depends on its answer alone (the calendar day, the pair of
operands), never on the random draw, so no test answer is ever seen in training,
however many examples are drawn. A split can be written as a TSV file
(``source <TAB> target``, no header) for ``zoo evaluate NAME --data FILE``:

    python -m zoo.data.generated dates test 5000 > dates_test.tsv
"""

import csv
import datetime
import random
import sys

from zoo.data import utf8_lines

SPLITS = ("train", "validation", "test")


def _split_of(number):
    """Test for 1 number in 20, validation for 1 in 20, training for the rest."""
    bucket = (number * 2654435761) % 2**32 % 20  # Knuth's multiplicative hash
    return "test" if bucket == 0 else "validation" if bucket == 1 else "train"


# -- dates ---------------------------------------------------------------------------------

FIRST_DAY = datetime.date(1950, 1, 1)
LAST_DAY = datetime.date(2049, 12, 31)  # with 1950, two-digit years read one way only
DATE_LOCALES = ("en_US", "en_GB", "fr_FR", "de_DE", "es_ES", "it_IT", "pt_BR", "nl_NL",
                "ru_RU", "pl_PL", "tr_TR", "sv_SE", "zh_CN", "ja_JP", "ko_KR")
DATE_WIDTHS = ("full", "long", "medium", "short")
# en_US writes 11/30/26 where es_ES and it_IT write 30/11/26: "1/2/26" would mean two
# days. The other numeric styles differ in separator, padding or year length.
_AMBIGUOUS_STYLES = {("en_US", "short")}
DATE_STYLES = tuple((locale, width) for locale in DATE_LOCALES for width in DATE_WIDTHS
                    if (locale, width) not in _AMBIGUOUS_STYLES)


def write_date(day, locale, width):
    """A date as people in ``locale`` write it (Babel's CLDR patterns)."""
    from babel.dates import format_date

    return format_date(day, width, locale=locale)


# -- dates as people write them by hand ----------------------------------------------------

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
# Dotted abbreviations as English style guides write them (May, June, July stay whole).
DOTTED_MONTHS = ("Jan.", "Feb.", "Mar.", "Apr.", "May", "June", "July", "Aug.", "Sept.",
                 "Oct.", "Nov.", "Dec.")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
FRENCH_MONTHS = ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août",
                 "septembre", "octobre", "novembre", "décembre")
FRENCH_WEEKDAYS = ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche")
CHINESE_DIGITS = "〇一二三四五六七八九"


def ordinal(number):
    """1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, 21st, 22nd, 23rd, 31st."""
    suffix = "th" if 11 <= number % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def chinese_number(number):
    """1-31 in Chinese numerals: 三, 十一, 二十, 三十一."""
    tens, units = divmod(number, 10)
    return ((CHINESE_DIGITS[tens] if tens > 1 else "") + ("十" if tens else "")
            + (CHINESE_DIGITS[units] if units or not tens else ""))


def chinese_year(year, zero):
    """A year read digit by digit (一九九九, 二〇二六 or 二零二六)."""
    return "".join(zero if c == "0" else CHINESE_DIGITS[int(c)] for c in str(year))


def _english(day, rng):
    month, dotted = MONTHS[day.month - 1], DOTTED_MONTHS[day.month - 1]
    weekday, nth, year = WEEKDAYS[day.weekday()], ordinal(day.day), day.year
    return rng.choice([
        f"{month} {nth}, {year}", f"{nth} of {month} {year}", f"the {nth} of {month}, {year}",
        f"{nth} {month} {year}", f"{month} {nth} {year}", f"{dotted} {day.day}, {year}",
        f"{day.day} {dotted} {year}", f"{weekday}, {month} {nth}, {year}",
        f"{weekday[:3]} {day.day} {month[:3]} {year}", f"{weekday} the {nth} of {month} {year}",
        f"{day.day}-{month[:3]}-{year}",
    ])


def _french(day, rng):
    number = "1er" if day.day == 1 else str(day.day)
    month, weekday = FRENCH_MONTHS[day.month - 1], FRENCH_WEEKDAYS[day.weekday()]
    return rng.choice([f"le {number} {month} {day.year}", f"{number} {month} {day.year}",
                       f"{weekday} {number} {month} {day.year}",
                       f"le {weekday} {number} {month} {day.year}"])


def _chinese(day, rng):
    year = chinese_year(day.year, rng.choice("〇零"))
    month, number = chinese_number(day.month), chinese_number(day.day)
    return rng.choice([f"{year}年{month}月{number}日", f"{year}年{month}月{number}号",
                       f"{day.year}年{day.month}月{day.day}号"])


def _numeric(day, rng):
    """Numbers only, in an order the numbers make unambiguous: month-day-year and
    day-month-year only when the day is over 12, year first always."""
    styles = [f"{day.year}/{day.month}/{day.day}", f"{day.year}-{day.month}-{day.day}",
              f"{day.year}.{day.month:02d}.{day.day:02d}"]
    if day.day > 12:
        styles += [f"{day.month}/{day.day}/{day.year}", f"{day.day}/{day.month}/{day.year}",
                   f"{day.month:02d}-{day.day:02d}-{day.year}", f"{day.day}.{day.month}.{day.year}"]
    return rng.choice(styles)


def _as_typed(text, rng):
    """Capitals or lower case, and the stray spaces of typing."""
    text = rng.choice([text, text, text.upper(), text.lower()])
    if rng.random() < 0.3:
        text = rng.choice([" ", "  "]).join(text.split(" "))
    if rng.random() < 0.2:
        text = rng.choice([" ", "  "]) + text + rng.choice(["", " "])
    return text


def write_date_by_hand(day, rng):
    """A date as a person might type it: English ordinals ("3rd of March 1999"), French
    "1er", weekday names, dotted abbreviations, Chinese numerals (一九九九年三月三日),
    unambiguous numeric orders, capitals, lower case and extra spaces."""
    writer = rng.choice([_english, _english, _french, _chinese, _numeric])
    text = writer(day, rng)
    return text if writer is _chinese else _as_typed(text, rng)


def _days_of(split):
    days = range(FIRST_DAY.toordinal(), LAST_DAY.toordinal() + 1)
    return [datetime.date.fromordinal(n) for n in days if _split_of(n) == split]


def dates(split, count, seed=0, typed_share=0.0):
    """``count`` (human-written date, ISO date) pairs drawn from the split's days: a
    ``typed_share`` of them as people type them (``write_date_by_hand``), the rest as the
    locales' standards write them. (The recipe's ``typed_share``; presets trained before
    it had none, and their splits are drawn as they were.)"""
    rng = random.Random(f"dates/{split}/{seed}")
    days = _days_of(split)
    pairs = []
    for _ in range(count):
        day = rng.choice(days)
        if typed_share and rng.random() < typed_share:
            text = write_date_by_hand(day, rng)
        else:
            text = write_date(day, *rng.choice(DATE_STYLES))
        pairs.append((text, day.isoformat()))
    return pairs


# -- addition ------------------------------------------------------------------------------

MAX_OPERAND = 999


def additions(split, count, seed=0):
    """``count`` ("535+61", "596") pairs with operands 0..MAX_OPERAND.

    The split is chosen by the unordered pair of operands, so the test split's
    problems do not occur in training in either order.
    """
    rng = random.Random(f"addition/{split}/{seed}")
    pairs = []
    while len(pairs) < count:
        a, b = rng.randint(0, MAX_OPERAND), rng.randint(0, MAX_OPERAND)
        low, high = min(a, b), max(a, b)
        if _split_of(low * (MAX_OPERAND + 1) + high) == split:
            pairs.append((f"{a}+{b}", str(a + b)))
    return pairs


TASKS = {"dates": dates, "addition": additions}

# What each task's preprocessor is told (``zoo.text.TranslationPreprocessor``): the
# addition model was trained on sums of two numbers of 0-999 written without spaces, and
# answers anything else with a confident wrong number, so other input is refused; the
# dates model may write a string that is not a calendar date, which is refused too.
TEXT_RULES = {
    "addition": {
        "input_rules": [["[ \t\n\r\f\v\u00a0\u2009\u202f\u3000]+", ""]],
        "accepted_input": {
            "pattern": "[0-9]{1,3}[+][0-9]{1,3}",
            "description": "two whole numbers from 0 to 999 joined by '+', such as 535+61 "
                           "(spaces are ignored)",
        },
    },
    "dates": {"output_format": "iso_date"},
}
SPLIT_RULE = {
    "dates": "by calendar day (1950-2049): 1 day in 20 for test, 1 in 20 for validation",
    "addition": "by unordered pair of operands: 1 pair in 20 for test, 1 in 20 for validation",
}


def splits(task, sizes, seed=0, **options):
    """``{split: (sources, targets)}`` for a task, with ``sizes[split]`` examples each
    (``options``: the task's own, such as the dates' ``typed_share``)."""
    if task not in TASKS:
        raise ValueError(f"Unknown generated task {task!r}; known: {', '.join(TASKS)}.")
    result = {}
    for split in SPLITS:
        pairs = TASKS[task](split, sizes[split], seed, **options)
        result[split] = ([s for s, _ in pairs], [t for _, t in pairs])
    return result


def read_tsv(path, unreadable=None):
    """(sources, targets) from a ``source <TAB> target`` file (no header; ``unreadable``:
    see ``zoo.data.utf8_lines``)."""
    sources, targets = [], []
    lines = utf8_lines(path, unreadable)
    for number, row in enumerate(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 2:
            raise ValueError(f"{path}, line {number}: expected 2 tab-separated columns "
                             f"(input, expected output), found {len(row)}: {row!r:.80}")
        sources.append(row[0])
        targets.append(row[1])
    return sources, targets


def write_tsv(pairs, handle):
    for source, target in pairs:
        handle.write(f"{source}\t{target}\n")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in TASKS or sys.argv[2] not in SPLITS:
        sys.exit(f"usage: python -m zoo.data.generated {'|'.join(TASKS)} "
                 f"{'|'.join(SPLITS)} COUNT > FILE.tsv")
    write_tsv(TASKS[sys.argv[1]](sys.argv[2], int(sys.argv[3])), sys.stdout)
