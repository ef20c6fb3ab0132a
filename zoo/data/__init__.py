"""Corpus readers: a local path first, the public URL and checksum second."""

import gzip
import hashlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path

DATA_DIR_VARIABLE = "ZOO_DATA_DIR"


def data_dir(override=None):
    """The folder that holds ``tatoeba/``: argument, environment, or ../shared/data."""
    if override:
        return Path(override)
    if os.environ.get(DATA_DIR_VARIABLE):
        return Path(os.environ[DATA_DIR_VARIABLE])
    repository = Path(__file__).resolve().parents[2]
    for candidate in (repository.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    return repository.parent / "shared" / "data"


def decoded_line(line):
    """``(text, None)`` for a line of bytes that is UTF-8, else ``(None, why not)``: the
    one rule of every command that reads a user's file line by line."""
    try:
        return line.decode("utf-8"), None
    except UnicodeDecodeError as error:
        return None, f"not UTF-8 ({error.reason} at byte {error.start})"


def utf8_lines(path, unreadable=None):
    """The lines of a user's file, line ends kept (what ``open(path, newline="")``
    reads). A line that is not UTF-8 is reported on stderr by its number, appended to
    ``unreadable`` and read as an empty line: the rest of the file is read, and numbered,
    as it is."""
    with (gzip.open if Path(path).suffix == ".gz" else open)(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            text, problem = decoded_line(line)
            if problem:
                print(f"{path}, line {number}: {problem}; left out", file=sys.stderr)
                if unreadable is not None:
                    unreadable.append(number)
            yield text or ""


def local_file(relative, url, directory=None):
    """``data_dir(directory)/relative``, or an error that says where to get it."""
    path = data_dir(directory) / relative
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found. Set {DATA_DIR_VARIABLE} to the folder that contains "
            f"{relative}, or download it from {url}."
        )
    return path


def download(url, files, directory, verify=True):
    """Fetch ``url`` (a file, or a zip archive) with ``keras.utils.get_file`` and write each
    of ``files`` (``{name in the archive or "": (relative target, sha256)}``) under
    ``directory``, refusing one whose checksum differs (unless ``verify`` is False: scores
    would not be comparable). Needs internet, except for a ``file://`` URL."""
    import keras

    with tempfile.TemporaryDirectory() as cache:
        fetched = Path(keras.utils.get_file(origin=url, cache_dir=cache, cache_subdir="."))
        archive = zipfile.ZipFile(fetched) if zipfile.is_zipfile(fetched) else None
        written = []
        for member, (relative, sha256) in files.items():
            content = archive.read(member) if archive else fetched.read_bytes()
            digest = hashlib.sha256(content).hexdigest()
            if verify and digest != sha256:
                raise ValueError(
                    f"{url} now holds a different {member or fetched.name} (sha256 {digest}) "
                    f"than the one the presets were trained and scored on ({sha256}).")
            target = Path(directory) / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            written.append(target)
    return written
