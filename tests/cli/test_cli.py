"""The command line: start-up noise filtered, real messages kept."""

import subprocess
import sys

import numpy as np
import pytest

from zoo._startup import is_startup_noise


def test_known_startup_notices_are_recognised():
    noise = [
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
        "I0000 00:00:1796012453.824725    3816 cudart_stub.cc:31] Could not find cuda drivers "
        "on your machine, GPU will not be used.",
        "E0000 00:00:1796012457.676840    3816 cuda_platform.cc:52] failed call to cuInit: "
        "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
        "I0000 00:00:1796012453.924674    3816 cpu_feature_guard.cc:227] This TensorFlow binary "
        "is optimized to use available CPU instructions in performance-critical operations.",
        "E0000 00:00:1796012458.001234    3816 mkl_util.h:123] oneDNN supports DT_BOOL only on "
        "platforms with AVX-512. Falling back to the default Eigen-based implementation if "
        "present.",
    ]
    assert all(is_startup_noise(line) for line in noise)


def test_real_warnings_are_not_noise():
    real = [
        "W0000 00:00:1796012457.676840    3816 op_level_cost_estimator.cc:699] Error in "
        "PredictCost() for the op: op: \"Softmax\"",
        "UserWarning: Skipping variable loading for optimizer 'adam'",
        "E0000 allocator.cc] Out of memory while trying to allocate 4.00GiB",
    ]
    assert not any(is_startup_noise(line) for line in real)


@pytest.mark.slow
def test_tensorflow_starts_silently_and_keeps_python_warnings():
    script = (
        "import warnings\n"
        "from zoo._startup import import_tensorflow_quietly\n"
        "tf = import_tensorflow_quietly()\n"
        "warnings.warn('a real warning')\n"
        "print(tf.reduce_sum(tf.ones(3)).numpy())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout.strip() == "3.0"
    assert result.stderr.splitlines() == ["<string>:4: UserWarning: a real warning"]


# A native library writing to file descriptor 2 after start-up, as oneDNN does at the
# first kernel run on some CPUs: its notice is dropped, a real warning and a progress bar
# pass, the warning while the command is still running.
LATE_NATIVE_OUTPUT = """
import os, sys, time
from zoo._startup import STARTUP_NOISE, live_stderr_without
with live_stderr_without(STARTUP_NOISE):
    os.write(2, b"E0000 00:00:1.2 3 mkl_util.h:1] oneDNN supports DT_BOOL only on platforms "
                b"with AVX-512. Falling back\\n")
    os.write(2, b"W0000 a real native warning\\n")
    print("python warning", file=sys.stderr, flush=True)
    time.sleep(3)
    os.write(2, b" 50%\\r100%\\r")
"""


def test_late_native_notices_are_filtered_live():
    import time

    started = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", LATE_NATIVE_OUTPUT], stderr=subprocess.PIPE)
    first_lines = [child.stderr.readline(), child.stderr.readline()]
    arrived = time.monotonic() - started
    rest = child.stderr.read()
    assert child.wait(timeout=60) == 0
    assert first_lines == [b"W0000 a real native warning\n", b"python warning\n"]
    assert rest == b" 50%\r100%\r"
    assert arrived < time.monotonic() - started - 2  # before the command's end, not after


def _zoo(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "zoo", *map(str, args)], input=stdin,
                          capture_output=True, text=True)


@pytest.mark.slow
def test_translate_arguments_and_stdin(toy_preset):
    result = _zoo("translate", toy_preset, "我读了一本书。", "你好。")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "I read a book.\nHello.\n"
    assert result.stderr == ""
    result = _zoo("translate", toy_preset, "--beam", "3", stdin="他很高兴。\n你读书。\n")
    assert result.stdout == "He is happy.\nYou read.\n"


@pytest.mark.slow
def test_translate_a_file_to_a_file_with_progress(toy_preset, tmp_path):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    target.write_text("kept until the run is complete\n")
    source.write_text("我读了一本书。\n\n" + "好" * 2001 + "\n你好。\n", encoding="utf-8")
    result = _zoo("translate", toy_preset, "--input", source, "--output", target,
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


@pytest.mark.slow
def test_attention_plot(toy_preset, tmp_path):
    import matplotlib.image

    out = tmp_path / "plot.png"
    result = _zoo("attention", toy_preset, "我读了一本书。", "--out", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["I read a book.", f"attention heatmap written to {out}"]
    height, width, _ = matplotlib.image.imread(out).shape
    assert width > 300 and height > 200


@pytest.mark.slow
def test_evaluate_json_last_line(toy_preset, tmp_path):
    import json

    data = tmp_path / "pairs.tsv"
    data.write_text("I read a book.\t我读了一本书。\tattribution\nHello.\t你好。\n", encoding="utf-8")
    result = _zoo("evaluate", toy_preset, "--data", data, "--json")
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
    result = _zoo("evaluate", toy_preset, "--data", data)
    assert result.returncode == 2
    assert result.stderr == f"zoo: error: {data} holds no sentence pairs.\n"


@pytest.mark.slow
def test_export_writes_the_files_and_nothing_but_our_line(toy_preset, tmp_path):
    result = _zoo("export", toy_preset, "--format", "tflite", "--quantize", "dynamic",
                  "--out", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"tflite export of {toy_preset} written to "
                             f"{tmp_path / (toy_preset.name + '.tflite')}\n")
    assert result.stderr == ""  # the converter's notes are filtered
    assert (tmp_path / f"{toy_preset.name}.json").is_file()


@pytest.mark.slow
def test_export_and_benchmark_usage_errors(toy_preset, tmp_path):
    result = _zoo("export", toy_preset, "--format", "saved_model", "--quantize", "dynamic",
                  "--out", tmp_path)
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: --quantize applies to --format tflite only.\n")
    result = _zoo("benchmark", "translate")
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: zoo benchmark translate needs a preset name.\n")
    result = _zoo("benchmark", "layers", "--batch", "0")
    assert (result.returncode, result.stderr) == (
        2, "zoo: error: --batch must be a positive number of sequences; got 0.\n")


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`zoo list | head -1`: here the pipe is closed before the command writes at all."""
    process = subprocess.Popen([sys.executable, "-m", "zoo", "list"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 0
    assert stderr == ""


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


def _one_line_error(capsys, expected):
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"zoo: error: {expected}\n"


def test_export_refuses_in_one_line(toy_preset, tmp_path, capsys):
    import json
    import shutil

    from zoo import presets
    from zoo.cli import main

    existing = tmp_path / "exports" / toy_preset.name / "1"
    existing.mkdir(parents=True)
    assert main(["export", str(toy_preset), "--format", "saved_model", "--out",
                 str(tmp_path / "exports")]) == 2
    _one_line_error(capsys, f"{existing} already exists; remove it or choose another --out.")

    a_file = tmp_path / "file.txt"
    a_file.write_text("")
    assert main(["export", str(toy_preset), "--format", "saved_model", "--out",
                 str(a_file / "exports")]) == 2
    _one_line_error(capsys, f"cannot write into --out {a_file / 'exports'}: Not a directory.")

    absurd = tmp_path / "absurd"
    shutil.copytree(toy_preset, absurd)
    config = json.loads((absurd / "config.json").read_text())
    config["config"]["units"] = 10**9
    (absurd / "config.json").write_text(json.dumps(config))
    metadata = json.loads((absurd / "metadata.json").read_text())
    metadata["files"]["config.json"] = presets.sha256(absurd / "config.json")
    (absurd / "metadata.json").write_text(json.dumps(metadata))
    assert main(["export", str(absurd), "--format", "tflite", "--out",
                 str(tmp_path / "exports")]) == 2
    _one_line_error(capsys, f"{absurd / 'config.json'} gives units = 1,000,000,000; the most "
                            "zoo loads is 4,096 (zoo.presets.CONFIG_LIMITS, docs/bad_input.md). "
                            "Refusing to build it.")


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
