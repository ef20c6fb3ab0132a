"""What the tests of the commands share: ``zoo`` run in a process of its own, and the
check of a one-line error."""

import subprocess
import sys


def run_zoo(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "zoo", *map(str, args)], input=stdin,
                          capture_output=True, text=True)


def one_line_error(capsys, expected):
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"zoo: error: {expected}\n"
