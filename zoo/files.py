"""Files and folders written whole (a temporary one renamed into place), with the
permissions every Unix tool gives: those the umask leaves (0644 files and 0755 folders
under umask 022), where ``tempfile`` makes 0600 and 0700 ones.
"""

import contextlib
import glob
import os
import signal
import stat
import tempfile
import threading
from pathlib import Path

PARTIAL_SUFFIX = ".partial"


def umask_permissions(requested):
    """The permissions ``open`` or ``mkdir`` give for ``requested`` (0o666 for a file,
    0o777 for a folder) under this process's umask."""
    umask = os.umask(0o022)  # reading the umask means setting it: set it back at once
    os.umask(umask)
    return requested & ~umask


def staging_folder(beside, prefix):
    """A new empty folder in ``beside``'s folder, to rename into place once written,
    with the permissions a folder made by ``mkdir`` has."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=beside))
    folder.chmod(umask_permissions(0o777))
    return folder


@contextlib.contextmanager
def replacing(path):
    """A text file to write, renamed over ``path`` once the block ends without error: a
    run that fails or is stopped leaves an existing file as it was.

    ``path`` keeps its permissions (a new file gets the umask's); a symbolic link stays
    a link and its target is replaced. The file is written beside that target as
    ``.NAME.PID.XXXXXXXX.partial``, removed if the block fails or SIGTERM arrives (which
    then ends the process with status 143); SIGKILL cannot be caught, and the next
    ``replacing`` of the same path removes the partial files of processes that no longer
    run.
    """
    target = Path(os.path.realpath(path))
    _remove_abandoned_partial_files(target)
    mode = (stat.S_IMODE(target.stat().st_mode) if target.exists()
            else umask_permissions(0o666))
    descriptor, partial = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.",
                                           suffix=PARTIAL_SUFFIX, dir=target.parent)
    try:
        os.fchmod(descriptor, mode)
        with _ending_on_sigterm(), open(descriptor, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def _remove_abandoned_partial_files(target):
    prefix = f".{target.name}."
    for partial in target.parent.glob(f"{glob.escape(prefix)}*{PARTIAL_SUFFIX}"):
        pid = partial.name[len(prefix):].split(".")[0]
        if pid.isdigit() and not _running(int(pid)):
            partial.unlink(missing_ok=True)


def _running(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another account's process
        pass
    return True


class Terminated(SystemExit):
    """SIGTERM arrived while a file was written (the exit status a shell reports for it)."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


@contextlib.contextmanager
def _ending_on_sigterm():
    """SIGTERM raises ``Terminated`` here, so that the ``finally`` blocks run (Python's
    default would end the process at once). Only the main thread receives signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
