"""Translating a whole file (or stdin) line by line: ``zoo translate NAME --input F``.

One output line per input line, in input order. Lines are read a window at a time
(``WINDOW_BATCHES`` batches), sorted by length within it and translated in batches, so
that a batch holds sentences of similar length, memory stays bounded on any file, and
the output of a window is written before the next one is read. An empty line stays
empty. A line the model cannot take (over ``codec.MAX_TEXT_LENGTH`` characters, not
UTF-8, outside a teaching task's domain, or translated to something outside its format)
is reported on stderr by its line number and written as an empty line, and the run
goes on.
"""

import sys

from tqdm import tqdm

from zoo.data import decoded_line
from zoo.text import codec

WINDOW_BATCHES = 16


def translate_lines(model, lines, write, *, search=None, batch_size=64, max_length=None,
                    report=None, progress=False, total=None, rules=None):
    """Translate ``lines`` (an iterable of ``bytes`` or ``str``, line ends included or
    not) and ``write(text)`` one translation per line, in order.

    ``report(message)`` receives one message per line written empty because it could
    not be translated (default: print to stderr). ``progress``: a tqdm bar on stderr,
    in sentences per second (``total``: the number of lines, when known).

    ``search``: a ``zoo.decoding`` search value (default: greedy); ``rules``:
    ``model.translate``'s output rules (``no_repeat_ngram_size``, ...).

    Returns the number of lines reported.
    """
    bar = tqdm(total=total, unit="sentence", file=sys.stderr, disable=not progress,
               dynamic_ncols=True)
    # tqdm.write clears the bar, prints the message and redraws the bar below it.
    report = report or (lambda message: bar.write(message, file=sys.stderr))
    window, reported = [], 0
    with bar:
        for number, line in enumerate(lines, 1):
            window.append((number, line))
            if len(window) == batch_size * WINDOW_BATCHES:
                reported += _translate_window(model, window, write, report, bar,
                                              search, batch_size, max_length, rules)
                window = []
        reported += _translate_window(model, window, write, report, bar,
                                      search, batch_size, max_length, rules)
    return reported


def _translate_window(model, window, write, report, bar, search, batch_size, max_length, rules):
    """Translate and write one window of ``(line number, line)``; the number reported."""
    outputs, texts, problems = {}, {}, 0

    def refuse(number, problem):
        nonlocal problems
        report(f"line {number}: {problem}; written as an empty line")
        outputs[number] = ""
        problems += 1

    for number, line in window:
        text, problem = _readable_text(model, line)
        if problem:
            refuse(number, problem)
        elif not text.strip():
            outputs[number] = ""
        else:
            texts[number] = text
    bar.update(len(window) - len(texts))
    by_length = sorted(texts, key=lambda number: len(texts[number]))
    for start in range(0, len(by_length), batch_size):
        numbers = by_length[start : start + batch_size]
        batch = [texts[number] for number in numbers]
        translations = model.translate(batch, max_length=max_length, search=search,
                                       batch_size=batch_size, check_outputs=False,
                                       **(rules or {}))
        for number, text, translation in zip(numbers, batch, translations):
            problem = _unreadable_output(model, text, translation)
            if problem:
                refuse(number, problem)
            else:
                outputs[number] = translation
        bar.update(len(numbers))
    for number, _ in window:
        write(outputs[number])
    return problems


def readable_line(line):
    """A line (``bytes`` or ``str``) without its end as ``(text, None)``, or ``(None, why
    no model can take it)``: not UTF-8, or over ``codec.MAX_TEXT_LENGTH`` characters."""
    if isinstance(line, bytes):
        line, problem = decoded_line(line)
        if problem:
            return None, problem
    text = line.rstrip("\r\n")
    if len(text) > codec.MAX_TEXT_LENGTH:
        return None, (f"{len(text):,} characters, over the {codec.MAX_TEXT_LENGTH:,}-character "
                      "limit")
    return text, None


def _readable_text(model, line):
    """``(text, None)``, or ``(None, why the model cannot take it)``."""
    text, problem = readable_line(line)
    if problem:
        return None, problem
    if text.strip():
        try:
            model.preprocessor.accepted_source(text)
        except ValueError as error:
            return None, _clause(str(error).removeprefix("The text is "))
    return text, None


def _unreadable_output(model, text, translation):
    try:
        model.preprocessor.check_outputs([text], [translation])
    except ValueError as error:
        return _clause(str(error).removeprefix("Text 0 "))
    return None


def _clause(message):
    """An error message as a clause of a report line."""
    return message.rstrip(".")
