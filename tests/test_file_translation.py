"""zoo.file_translation: whole files, a line in and a line out, in order."""

import pytest

from conftest import SOURCES
from zoo import file_translation
from zoo.text import codec


@pytest.fixture
def model(toy_translators):
    return toy_translators["attention"]


def _translate(model, lines, **options):
    written, reports = [], []
    refused = file_translation.translate_lines(model, lines, written.append,
                                               report=reports.append, **options)
    return written, reports, refused


def test_one_line_out_per_line_in_in_order_across_windows_and_batches(model):
    lines = [SOURCES[(i * 5) % len(SOURCES)] + "\n" for i in range(70)]
    written, reports, refused = _translate(model, lines, batch_size=2)  # windows of 32 lines
    assert written == [model.translate([line.rstrip("\n")])[0] for line in lines]
    assert (reports, refused) == ([], 0)


def test_empty_lines_stay_empty_and_bad_lines_are_reported_and_left_empty(model):
    too_long = "好" * (codec.MAX_TEXT_LENGTH + 1)
    lines = [b"\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82\r\n",  # 你好。 with a Windows line end
             b"\n", b"   \n", too_long.encode() + b"\n", b"\xff\xfe\n",
             SOURCES[0].encode()]  # the last line without a line end
    written, reports, refused = _translate(model, lines, batch_size=4)
    translate = model.translate
    assert written == [translate(["你好。"])[0], "", "", "", "", translate([SOURCES[0]])[0]]
    assert reports == [
        "line 4: 2,001 characters, over the 2,000-character limit; written as an empty line",
        "line 5: not UTF-8 (invalid start byte at byte 0); written as an empty line",
    ]
    assert refused == 2


def test_text_outside_a_teaching_tasks_domain_is_reported_by_line(model, monkeypatch):
    def refuse_digits(text, position=None):
        if any(c.isdigit() for c in text):
            raise ValueError(f"The text is not accepted by this model: {text!r:.60}; it takes "
                             "no digits.")
        return text

    monkeypatch.setattr(model.preprocessor, "accepted_source", refuse_digits)
    written, reports, refused = _translate(model, [SOURCES[1], "123", SOURCES[2]])
    assert written[1] == "" and written[0] == model.translate([SOURCES[1]])[0]
    assert reports == ["line 2: not accepted by this model: '123'; it takes no digits; "
                       "written as an empty line"]


def test_the_progress_bar_counts_every_line(model, capsys):
    _translate(model, [SOURCES[0], "", SOURCES[1]], progress=True, total=3)
    bar = capsys.readouterr().err
    assert "3/3" in bar and "sentence/s" in bar
