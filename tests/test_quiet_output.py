"""Machine output on stdout, progress on stderr only on a terminal, and no notices that a
user cannot act on: from the CLI and from the Python API."""

import json
import logging
import os
import pty
import subprocess
import sys

import keras
import pytest

from zoo import backend
from zoo.cli import main

# TensorFlow's start-up notices, as they begin on a machine without a GPU.
NOTICES = ("cuInit", "cuda", "oneDNN", "cpu_feature_guard", "absl::InitializeLog")


def _python(script, **environment):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # a user's
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**env, **environment})


@pytest.mark.slow
def test_the_python_api_starts_as_quietly_as_the_cli():
    result = _python("import zoo\n"
                     "print(zoo.load('lstm_seq2seq_addition').translate(['535+61']))")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "['596']\n"
    assert not [line for line in result.stderr.splitlines()
                if any(notice.lower() in line.lower() for notice in NOTICES)], result.stderr


@pytest.mark.slow
def test_a_users_tensorflow_log_level_is_kept():
    script = "import os, zoo, keras\nprint(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))"
    assert _python(script, TF_CPP_MIN_LOG_LEVEL="0").stdout == "0\n"


def test_import_zoo_leaves_tensorflow_for_first_use():
    result = _python("import sys, zoo\nzoo.list_models()\nprint('tensorflow' in sys.modules)")
    assert result.stdout == "False\n" and result.stderr == ""


def test_evaluate_json_writes_the_json_alone_to_stdout(toy_preset, tmp_path, capsys):
    data = tmp_path / "pairs.tsv"
    data.write_text("I read a book.\t我读了一本书。\nHello.\t你好。\n", encoding="utf-8")
    assert main(["evaluate", str(toy_preset), "--data", str(data), "--json"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    assert json.loads(out)["value"] == 100.0
    assert err.splitlines()[0].startswith("BLEU 100.0")
    assert "\x1b" not in out + err  # no colour codes, no progress bar off a terminal
    assert main(["evaluate", str(toy_preset), "--data", str(data)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("BLEU 100.0") and err == ""


STDERR_IS_TERMINAL = """
from zoo._startup import STARTUP_NOISE, live_stderr_without, stderr_is_terminal
with live_stderr_without(STARTUP_NOISE):
    print(stderr_is_terminal())
"""


@pytest.mark.parametrize("terminal", [True, False])
def test_progress_bars_know_a_terminal_behind_the_filter(terminal, tmp_path):
    """The CLI filters stderr through a pipe: progress bars ask what the user sees."""
    if terminal:
        reader, writer = pty.openpty()
    else:
        writer = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT)
    try:
        result = subprocess.run([sys.executable, "-c", STDERR_IS_TERMINAL], stderr=writer,
                                stdout=subprocess.PIPE, text=True)
    finally:
        os.close(writer)
        if terminal:
            os.close(reader)
    assert result.stdout == f"{terminal}\n"


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function's warning")
def test_functions_compiled_from_one_closure_warn_of_no_retracing(caplog):
    def make(scale):
        def scaled(x):
            return x * scale
        return backend.compile_function(scaled)

    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        for scale in range(8):  # a new function each, as a search per beam size
            assert make(scale)(keras.ops.ones(2)).tolist() == [scale, scale]
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
