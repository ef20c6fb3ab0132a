"""Input for the teaching tasks written by hand, the way people write it: the check of
how the dates and addition presets meet real input, kept apart from training.

No generator wrote these and no training data comes from them: the dates were typed one by
one in the styles people use (English ordinals, French "1er", capitals, stray spaces,
unambiguous numeric orders, Chinese numerals, other languages), some of them in styles
the training data never has (spaces around a slash, a comma after the weekday of a French
date). Their days are any days of 1950-2049, so a day may be one the model trained on:
what is tested is the writing, not the calendar.

    from zoo.data import written_by_hand
    written_by_hand.score(zoo.load("gru_bahdanau_dates"), "dates")
"""

DATES = (
    ("3rd of March 1999", "1999-03-03"),
    ("March 3rd, 1999", "1999-03-03"),
    ("MARCH 3, 1999", "1999-03-03"),
    ("march 3 1999", "1999-03-03"),
    ("Jan 1st 2000", "2000-01-01"),
    ("1st January 2000", "2000-01-01"),
    ("February 22nd, 2022", "2022-02-22"),
    ("12/31/1999", "1999-12-31"),
    ("31/12/1999", "1999-12-31"),
    ("31.12.1999", "1999-12-31"),
    ("July 4, 1976", "1976-07-04"),
    ("4 July 1976", "1976-07-04"),
    ("the 4th of July, 1976", "1976-07-04"),
    ("Tuesday, September 11, 2001", "2001-09-11"),
    ("Sept. 9, 1981", "1981-09-09"),
    ("Dec 25th 2019", "2019-12-25"),
    ("25 dec 2019", "2019-12-25"),
    ("2019/12/25", "2019-12-25"),
    ("12/25/2019", "2019-12-25"),
    ("the 2nd of april 2013", "2013-04-02"),
    ("Oct. 31, 2020", "2020-10-31"),
    ("31 Oct 2020", "2020-10-31"),
    ("November 5th 1955", "1955-11-05"),
    ("21st June 2045", "2045-06-21"),
    ("JUNE 21ST 2045", "2045-06-21"),
    ("Aug 8 2008", "2008-08-08"),
    ("Sat 14 Feb 2009", "2009-02-14"),
    ("Thursday the 1st of January 2015", "2015-01-01"),
    ("1 JAN 1970", "1970-01-01"),
    ("  May  17,  1968 ", "1968-05-17"),
    ("2001-9-11", "2001-09-11"),
    ("1/13/2021", "2021-01-13"),
    ("13/01/2021", "2021-01-13"),
    ("2020-02-29", "2020-02-29"),
    ("29th February 2020", "2020-02-29"),
    ("10 / 31 / 1986", "1986-10-31"),
    ("le 1er mars 1999", "1999-03-01"),
    ("1er janvier 2000", "2000-01-01"),
    ("14 juillet 1989", "1989-07-14"),
    ("le 25 décembre 2019", "2019-12-25"),
    ("lundi 3 février 2020", "2020-02-03"),
    ("Le 8 Mai 1985", "1985-05-08"),
    ("mercredi, 6 juin 1984", "1984-06-06"),
    ("3. März 1999", "1999-03-03"),
    ("24. Dezember 2012", "2012-12-24"),
    ("1. Januar 2000", "2000-01-01"),
    ("3 de marzo de 1999", "1999-03-03"),
    ("25 de diciembre de 2019", "2019-12-25"),
    ("3 marzo 1999", "1999-03-03"),
    ("12 oktober 2010", "2010-10-12"),
    ("一九九九年三月三日", "1999-03-03"),
    ("二〇二〇年二月二十九日", "2020-02-29"),
    ("二零零八年八月八日", "2008-08-08"),
    ("2008年8月8日", "2008-08-08"),
    ("2019年12月25号", "2019-12-25"),
    ("1978年10月1日", "1978-10-01"),
    ("2011年3月11日", "2011-03-11"),
    ("1st of may 1990", "1990-05-01"),
    ("Wed Nov 30 2022", "2022-11-30"),
    ("30th November, 2022", "2022-11-30"),
)

# Sums as people type them: inside the domain (two numbers of 0-999 and a +, with the
# spaces of typing), and outside it, each of which the model must refuse.
ADDITIONS_INSIDE = (
    ("535 + 61", "596"), (" 7 +8", "15"), ("0+0", "0"), ("999 + 999", "1998"),
    ("12+ 3", "15"), ("100 +900", "1000"), ("  42+58  ", "100"), ("808 + 192", "1000"),
    ("1 + 1", "2"), ("250+250", "500"), ("65 + 35", "100"), ("3+ 997", "1000"),
)
ADDITIONS_OUTSIDE = (
    "1000+1", "12345+1", "5+", "+5", "1+2+3", "2 plus 2", "10-3", "3*4", "one+two",
    "1,000+5", "7+-3", "0.5+1", "", "  ", "12 + 34 + 5", "999+1000", "5 + 5 =", "1e3+1",
)


TASKS = ("dates", "addition")


def _exact(model, pairs):
    """``{"correct", "refused", "wrong": [(text, answer, expected)], "examples", "percent"}``."""
    correct, refused, wrong = 0, 0, []
    for text, expected in pairs:
        try:
            (answer,) = model.translate([text], beam_size=5)
        except ValueError:  # refused: the input, or the answer, is not of the task
            refused += 1
            continue
        if answer == expected:
            correct += 1
        else:
            wrong.append([text, answer, expected])
    return {"correct": correct, "refused": refused, "wrong": wrong, "examples": len(pairs),
            "percent": round(100 * correct / len(pairs), 1)}


def _refused(model, texts):
    answered = []
    for text in texts:
        try:
            (answer,) = model.translate([text], beam_size=5)
        except ValueError:
            continue
        answered.append([text, answer])
    refused = len(texts) - len(answered)
    return {"refused": refused, "answered": answered, "examples": len(texts),
            "percent": round(100 * refused / len(texts), 1)}


def score(model, task):
    """How a teaching preset meets input written by hand (beam 5, as it ships).

    dates: ``{"written by hand": exact-match result}`` (a refusal is not an invalid date
    but is not right either); addition: ``{"inside the domain, typed with spaces": ...,
    "outside the domain refused": ...}``.
    """
    if task == "dates":
        return {"written by hand": _exact(model, DATES)}
    if task == "addition":
        return {"inside the domain, typed with spaces": _exact(model, ADDITIONS_INSIDE),
                "outside the domain refused": _refused(model, ADDITIONS_OUTSIDE)}
    raise ValueError(f"No hand-written input for task {task!r}; there is for {', '.join(TASKS)}.")
