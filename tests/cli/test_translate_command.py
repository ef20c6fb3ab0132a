"""`zoo translate`: texts, stdin and files, n-best, output rules, its usage errors."""

import pytest

from commandline import run_zoo


@pytest.mark.slow
def test_translate_arguments_and_stdin(toy_preset):
    result = run_zoo("translate", toy_preset, "我读了一本书。", "你好。")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "I read a book.\nHello.\n"
    assert result.stderr == ""
    result = run_zoo("translate", toy_preset, "--beam", "3", stdin="他很高兴。\n你读书。\n")
    assert result.stdout == "He is happy.\nYou read.\n"


@pytest.mark.slow
def test_translate_a_file_to_a_file_with_progress(toy_preset, tmp_path):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    target.write_text("kept until the run is complete\n")
    source.write_text("我读了一本书。\n\n" + "好" * 2001 + "\n你好。\n", encoding="utf-8")
    result = run_zoo("translate", toy_preset, "--input", source, "--output", target,
                     "--batch-size", "2", "--progress")
    assert target.read_text(encoding="utf-8") == "I read a book.\n\n\nHello.\n"
    assert result.returncode == 1 and result.stdout == ""
    assert "line 3: 2,001 characters, over the 2,000-character limit; written as an empty " \
           "line\n" in result.stderr
    assert "4/4" in result.stderr and "sentence/s" in result.stderr
    assert result.stderr.endswith("1 line(s) could not be translated and were written empty "
                                  "(reported above).\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt"]  # no .partial


def test_translate_n_best_with_scores(toy_preset, capsys):
    from zoo.cli import main  # in this process: the subprocess tests above cover start-up

    assert main(["translate", str(toy_preset), "--beam", "3", "--n-best", "2", "我读了一本书。",
                 "你好。"]) == 0
    first, second = capsys.readouterr().out.split("\n\n")
    lines = [line.split("\t") for line in first.splitlines()]
    assert [text for _, text in lines][0] == "I read a book." and len(lines) == 2
    assert float(lines[0][0]) >= float(lines[1][0])
    assert second.splitlines()[0].split("\t")[1] == "Hello."
    assert main(["translate", str(toy_preset), "--beam", "2", "--n-best", "3", "你好。"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: --n-best must be at most --beam (2): a beam holds that many "
        "hypotheses; received 3.\n")


def test_translate_with_output_rules(toy_preset, tmp_path, capsys):
    import zoo
    from zoo.cli import main

    model = zoo.load(toy_preset)
    rules = dict(no_repeat_ngram_size=1, min_length_ratio=1.5)
    expected = model.translate(["我读了一本书。", "你好。"], beam_size=3, **rules)
    assert expected != model.translate(["我读了一本书。", "你好。"], beam_size=3)
    options = ["--beam", "3", "--no-repeat-ngram", "1", "--min-length-ratio", "1.5"]
    assert main(["translate", str(toy_preset), *options, "我读了一本书。", "你好。"]) == 0
    assert capsys.readouterr().out.splitlines() == expected
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("我读了一本书。\n你好。\n", encoding="utf-8")
    assert main(["translate", str(toy_preset), *options, "--input", str(source),
                 "--output", str(output)]) == 0
    assert output.read_text(encoding="utf-8").splitlines() == expected
    assert main(["translate", str(toy_preset), "--max-length-ratio", "-1", "你好。"]) == 2
    assert capsys.readouterr().err == ("zoo: error: --max-length-ratio must be a positive "
                                       "number, 0 (off) or None; received -1.0.\n")


def test_translate_file_usage_errors(toy_preset, tmp_path, capsys):
    from zoo.cli import main
    source = tmp_path / "in.txt"
    source.write_text("你好。\n", encoding="utf-8")
    for args, message in [
        (["--input", source, "--output", source], f"--output {source} is the input file; "
                                                  "write to another file."),
        (["--input", tmp_path / "missing.txt"],
         f"cannot read --input {tmp_path / 'missing.txt'}: No such file or directory."),
        (["--input", source, "你好。"], "give texts or --input FILE, not both."),
        (["--batch-size", "0", "你好。"], "--batch-size must be a positive integer; "
                                         "received 0."),
        (["--beam", "1000000", "你好。"], "--beam must be an integer from 1 to 64; "
                                         "received 1000000."),
        (["--max-length", "1000000000", "你好。"], "--max-length must be an integer from 1 "
                                                  "to 1,024; received 1000000000."),
        (["--beam", "1000000", "--n-best", "1", "你好。"], "--beam must be an integer from "
                                                          "1 to 64; received 1000000."),
        (["--n-best", "2"], "--n-best takes the texts on the command line (a file is "
                            "translated one line per line)."),
    ]:
        assert main(["translate", str(toy_preset), *map(str, args)]) == 2
        assert capsys.readouterr().err == f"zoo: error: {message}\n"
    assert source.read_text(encoding="utf-8") == "你好。\n"


def test_translate_output_keeps_its_mode_and_its_symbolic_link(toy_preset, tmp_path, capsys):
    from zoo.cli import main

    source, real, link = tmp_path / "in.txt", tmp_path / "real.txt", tmp_path / "out.txt"
    source.write_text("你好。\n", encoding="utf-8")
    real.write_text("old\n")
    real.chmod(0o644)
    link.symlink_to(real)
    assert main(["translate", str(toy_preset), "--input", str(source), "--output",
                 str(link)]) == 0
    assert link.is_symlink() and real.read_text() == "Hello.\n"
    assert real.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.txt", "real.txt"]


def test_translate_computes_one_thread_per_operation_from_the_start(toy_preset, monkeypatch,
                                                                     capsys):
    """Set before the model loads (TensorFlow fixes its pools when it first runs): the
    batch's parts are then searched side by side (``backend.side_by_side_searches``)."""
    from zoo import backend
    from zoo.cli import main, translate

    calls = []
    monkeypatch.setattr(backend, "use_one_thread_per_operation",
                        lambda: calls.append("one thread per operation"))
    loading = translate.load_translator
    monkeypatch.setattr(translate, "load_translator",
                        lambda name: calls.append("load") or loading(name))
    assert main(["translate", str(toy_preset), "你好。"]) == 0
    assert calls == ["one thread per operation", "load"]
    assert capsys.readouterr().out == "Hello.\n"
