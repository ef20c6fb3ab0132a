"""The teaching tasks refuse what they cannot answer: sums outside the addition model's
domain, and the dates model's answers that are no calendar date -- the same rule in
Python, the SavedModel, the LiteRT runner and the CLI."""

import random

import pytest
import tensorflow as tf

import zoo
from zoo import export
from zoo.cli import main
from zoo.data import written_by_hand
from zoo.export import TFLiteTranslator
from zoo.text import UnreadableTextError
from zoo.text.preprocessor import is_calendar_date, tf_is_calendar_date

OUTSIDE_THE_DOMAIN = ["1000+1", "12345+1", "5+", "+5", "1+2+3", "1-2", "1*2", "", "  ",
                      "abc", "٣+٤", "1.5+2", "-1+2", "1++2", "１+２"]


@pytest.fixture(scope="module")
def addition():
    return zoo.load("lstm_seq2seq_addition")


@pytest.fixture(scope="module")
def addition_runtimes(addition, tmp_path_factory):
    folder = tmp_path_factory.mktemp("addition")
    served = tf.saved_model.load(str(export.export("lstm_seq2seq_addition", "saved_model", folder)))
    phone = TFLiteTranslator(export.export("lstm_seq2seq_addition", "tflite", folder))
    return {
        "keras": addition.translate,
        "saved_model": lambda texts: [t.decode() for t in served.signatures["serving_default"](
            texts=tf.constant(texts))["translations"].numpy()],
        "tflite": phone.translate,
    }


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["keras", "saved_model", "tflite"])
def test_sums_outside_the_domain_are_refused_in_every_runtime(addition_runtimes, runtime):
    translate = addition_runtimes[runtime]
    expected = (tf.errors.InvalidArgumentError if runtime == "saved_model" else ValueError)
    for text in OUTSIDE_THE_DOMAIN:
        # (TensorFlow's message escapes the quotes around the +)
        with pytest.raises(expected, match="not accepted by this model.*two whole numbers from "
                                           "0 to 999 joined by"):
            translate(["1+1", text])
    assert translate(["535 + 61", " 7+\u00a08 ", "999+999"]) == ["596", "15", "1998"]


def test_the_error_names_the_text_and_what_is_accepted(addition, capsys):
    with pytest.raises(ValueError) as error:
        addition.translate(["1+1", "1000+1"])
    assert str(error.value) == (
        "Text 1 is not accepted by this model: '1000+1'; it takes two whole numbers from 0 "
        "to 999 joined by '+', such as 535+61 (spaces are ignored).")
    assert main(["translate", "lstm_seq2seq_addition", "12345+1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "zoo: error: Text 0 is not accepted by this model: '12345+1'; it takes two whole "
        "numbers from 0 to 999 joined by '+', such as 535+61 (spaces are ignored)."]


def test_sums_inside_the_domain_written_with_spaces_are_still_right(addition):
    rng = random.Random(2026)  # fresh sums, any split, spaces as people type them
    pairs = [(rng.randint(0, 999), rng.randint(0, 999)) for _ in range(1000)]
    spaces = ["", " ", "  "]
    texts = [f"{rng.choice(spaces)}{a}{rng.choice(spaces)}+{rng.choice(spaces)}{b}" for a, b in pairs]
    answers = addition.translate(texts, batch_size=500)
    correct = sum(answer == str(a + b) for answer, (a, b) in zip(answers, pairs))
    assert correct >= 995, correct


def test_calendar_dates_in_python_and_in_the_graph():
    texts = ["1999-03-01", "2000-02-29", "1900-02-29", "2024-02-29", "2023-02-29", "1999-31-12",
             "1999-03-39", "2000-01-00", "0000-01-01", "299--01-00", "19990301", "1999-3-1",
             "", "abcd-ef-gh", "2049-12-31", "1999-04-31", "1999-04-30"]
    expected = [True, True, False, True, False, False, False, False, False, False, False,
                False, False, False, True, False, True]
    assert [is_calendar_date(t) for t in texts] == expected
    assert tf_is_calendar_date(tf.constant(texts)).numpy().tolist() == expected


@pytest.fixture(scope="module")
def dates():
    return zoo.load("gru_bahdanau_dates")


def _unreadable(model, texts):
    """Texts that the dates preset answers with no calendar date (found, not assumed)."""
    answers = model.translate(texts, check_outputs=False)
    return [t for t, a in zip(texts, answers) if not is_calendar_date(a)]


CANDIDATES = ["March 3rd, 1999", "12/31/1999", "一九九九年三月三日", "February 22nd, 2022",
              "1st January 2000", "le 1er mars 1999", "the 31st of December", "tomorrow",
              "99/99/9999", "Jan 1st 2000"]


@pytest.mark.slow
def test_a_non_date_answer_is_an_error_in_every_runtime(dates, tmp_path, capsys):
    unreadable = _unreadable(dates, CANDIDATES)
    assert unreadable  # some hand-written dates still defeat the model
    readable = "Nov 30, 2026"
    with pytest.raises(UnreadableTextError, match=r"Text 1 could not be read as a date: .* \(the "
                                                  r"model answered '.*', which is not a calendar "
                                                  r"date YYYY-MM-DD\)") as error:
        dates.translate([readable, unreadable[0]])
    assert error.value.positions == [1] and error.value.outputs[0] == "2026-11-30"
    assert dates.translate([readable]) == ["2026-11-30"]
    folder = tmp_path / "dates"
    served = tf.saved_model.load(str(export.export("gru_bahdanau_dates", "saved_model", folder)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="could not be read as a date"):
        served.signatures["serving_default"](texts=tf.constant([readable, unreadable[0]]))
    assert served.signatures["serving_default"](texts=tf.constant([readable]))[
        "translations"].numpy().tolist() == [b"2026-11-30"]
    phone = TFLiteTranslator(export.export("gru_bahdanau_dates", "tflite", folder))
    with pytest.raises(UnreadableTextError, match="could not be read as a date"):
        phone.translate([readable, unreadable[0]])
    assert main(["translate", "gru_bahdanau_dates", unreadable[0]]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("zoo: error: Text 0 could not be read as a date: ")


@pytest.fixture(scope="module")
def hand_written(addition, dates):
    """Each teaching preset scored once on the input written by hand."""
    return {"lstm_seq2seq_addition": written_by_hand.score(addition, "addition"),
            "gru_bahdanau_dates": written_by_hand.score(dates, "dates")}


@pytest.mark.parametrize("name", ["lstm_seq2seq_addition", "gru_bahdanau_dates"])
def test_the_cards_report_input_written_by_hand_as_it_scores(name, hand_written):
    results = hand_written[name]
    assert zoo.presets.describe(name)["behaviour"] == results  # re-scored, the card holds
    card = (zoo.presets.resolve(name) / "README.md").read_text(encoding="utf-8")
    assert "## Input written by hand" in card
    for check, result in results.items():
        passed = result["refused"] if check.endswith("refused") else result["correct"]
        assert f"| {check} | {passed} | {result['examples']} | {result['percent']} |" in card


def test_sums_written_by_hand_meet_the_targets(hand_written):
    results = hand_written["lstm_seq2seq_addition"]
    assert results["outside the domain refused"]["percent"] == 100.0
    assert results["inside the domain, typed with spaces"]["percent"] >= 99.5


def test_dates_written_by_hand_meet_the_target(hand_written):
    result = hand_written["gru_bahdanau_dates"]["written by hand"]
    assert result["percent"] >= 95.0, result["wrong"]
    assert all(is_calendar_date(answer) for _, answer, _ in result["wrong"])


@pytest.mark.slow
def test_a_preset_rewritten_after_training_keeps_its_weights_and_loads(tmp_path):
    import shutil

    from zoo import presets
    from zoo.evaluation import translation

    folder = shutil.copytree(presets.resolve("lstm_seq2seq_addition"), tmp_path / "addition")
    weights = (folder / "model.weights.h5").read_bytes()
    metadata = dict(presets.describe(folder))
    metadata.pop("behaviour", None)
    presets.rewrite_description(folder, metadata, "# addition\n")
    assert "behaviour" not in presets.describe(folder)
    translation.record_behaviour(folder, printer=lambda line: None)
    assert (folder / "model.weights.h5").read_bytes() == weights
    assert presets.describe(folder)["behaviour"] == presets.describe(
        "lstm_seq2seq_addition")["behaviour"]
    assert zoo.load(folder).translate(["535 + 61"]) == ["596"]  # checksums verified on load
