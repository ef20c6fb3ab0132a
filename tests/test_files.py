"""zoo.files: files replaced whole, with the permissions the umask gives."""

import os
import signal
import subprocess
import sys

import pytest

from zoo import files


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path):
    return os.stat(path).st_mode & 0o777


def _written(path, text):
    with files.replacing(path) as handle:
        handle.write(text)


def test_a_new_file_and_a_staging_folder_follow_the_umask(tmp_path, umask_022):
    _written(tmp_path / "new.txt", "one\n")
    assert _mode(tmp_path / "new.txt") == 0o644
    assert _mode(files.staging_folder(tmp_path, ".x.")) == 0o755
    os.umask(0o077)
    _written(tmp_path / "private.txt", "one\n")
    assert _mode(tmp_path / "private.txt") == 0o600


def test_an_existing_file_keeps_its_mode(tmp_path, umask_022):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    _written(target, "new\n")
    assert (target.read_text(), _mode(target)) == ("new\n", 0o640)


def test_a_symbolic_link_stays_a_link_and_its_target_is_written(tmp_path):
    real = tmp_path / "data" / "real.txt"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    _written(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new\n"
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.txt"]  # no partial file


def test_a_failure_leaves_the_old_file_and_no_partial_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), files.replacing(target) as handle:
        handle.write("half")
        raise RuntimeError()
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_sigterm_while_writing_removes_the_partial_file_and_exits_143(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    with pytest.raises(SystemExit) as stopped, files.replacing(target) as handle:
        handle.write("half")
        os.kill(os.getpid(), signal.SIGTERM)
        handle.write("never")  # the handler raises before this line runs
    assert stopped.value.code == 143
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handler is put back


def test_the_partial_file_of_a_killed_process_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "out.txt"
    # A process killed with SIGKILL while it wrote (its partial file stays), and one alive.
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()
    abandoned = tmp_path / f".out.txt.{killed.pid}.abcd1234.partial"
    in_progress = tmp_path / f".out.txt.{writer.pid}.efgh5678.partial"
    other = tmp_path / f".other.txt.{killed.pid}.abcd1234.partial"
    for path in (abandoned, in_progress, other):
        path.write_text("half")
    try:
        _written(target, "new\n")
    finally:
        writer.kill()
        writer.wait()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [in_progress.name, other.name, "out.txt"])
