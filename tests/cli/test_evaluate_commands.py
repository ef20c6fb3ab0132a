"""`zoo evaluate` and `zoo score`: a preset judged on a file."""

import numpy as np
import pytest

from commandline import run_zoo


def test_score_prints_each_pairs_log_probability(toy_preset, tmp_path, capsys):
    import json

    import zoo
    from zoo.cli import main

    data = tmp_path / "pairs.tsv"
    data.write_text("I read a book.\t我读了一本书。\tattribution\nHello.\t你好。\n", encoding="utf-8")
    expected = zoo.load(toy_preset).score(["我读了一本书。", "你好。"], ["I read a book.", "Hello."])
    assert main(["score", str(toy_preset), "--data", str(data)]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [line[2:] for line in lines] == [["我读了一本书。", "I read a book."], ["你好。", "Hello."]]
    np.testing.assert_allclose([[float(line[0]), float(line[1])] for line in lines],
                               [[e["total"], e["per_token"]] for e in expected], atol=1e-4)
    assert main(["score", str(toy_preset), "--data", str(data), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[1] == {"source": "你好。", "target": "Hello.", **expected[1]}
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    assert main(["score", str(toy_preset), "--data", str(empty)]) == 2
    assert capsys.readouterr().err == f"zoo: error: {empty} holds no sentence pairs.\n"


@pytest.mark.slow
def test_evaluate_json_last_line(toy_preset, tmp_path):
    import json

    data = tmp_path / "pairs.tsv"
    data.write_text("I read a book.\t我读了一本书。\tattribution\nHello.\t你好。\n", encoding="utf-8")
    result = run_zoo("evaluate", toy_preset, "--data", data, "--json")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1  # the JSON alone: `--json > out.json`
    assert result.stderr.startswith("BLEU 100.0")
    report = json.loads(result.stdout)
    assert report["metric"] == "bleu" and report["examples"] == 2
    assert report["value"] == 100.0 and report["chrf"] == 100.0
    assert report["unknown_outputs"] == 0
    assert report["decoding_failures"] == {"outputs": 2, "stutter": 0.0, "repeated_phrase": 0.0,
                                           "short": 0.0}
    assert ("outputs that stutter 0.0%, repeat a phrase the reference does not 0.0%, have "
            "under half the reference's words 0.0%") in result.stderr.splitlines()


@pytest.mark.slow
def test_evaluate_empty_file_is_a_clear_error(toy_preset, tmp_path):
    data = tmp_path / "empty.tsv"
    data.write_text("")
    result = run_zoo("evaluate", toy_preset, "--data", data)
    assert result.returncode == 2
    assert result.stderr == f"zoo: error: {data} holds no sentence pairs.\n"


def test_evaluate_reports_an_undecodable_line_and_scores_the_rest(toy_preset, tmp_path, capsys):
    import json

    from zoo.cli import main

    data = tmp_path / "pairs.tsv"
    data.write_bytes("I read a book.\t我读了一本书。\n".encode() + b"\xff\xfe\tbad\n"
                     + "Hello.\t你好。\n".encode())
    assert main(["evaluate", str(toy_preset), "--data", str(data), "--json"]) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # the JSON alone on stdout, the scores' lines on stderr
    assert (report["examples"], report["unreadable_lines"], report["value"]) == (2, 1, 100.0)
    reported, *scores, summary = captured.err.splitlines()
    assert reported == f"{data}, line 2: not UTF-8 (invalid start byte at byte 0); left out"
    assert scores[0].startswith("BLEU 100.0") and scores[1].startswith("chrF 100.0")
    assert summary == "1 line(s) could not be read and were left out (reported above)."
