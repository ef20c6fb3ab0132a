"""Corpus readers: a local path first, the public URL and checksum second."""

import hashlib
import os
import urllib.request
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


def local_file(relative, url, directory=None):
    """``data_dir(directory)/relative``, or an error that says where to get it."""
    path = data_dir(directory) / relative
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found. Set {DATA_DIR_VARIABLE} to the folder that contains "
            f"{relative}, or download it from {url}."
        )
    return path


def download_file(url, sha256, target):
    """Fetch ``url`` into ``target`` (needs internet), refusing a file with another checksum."""
    request = urllib.request.Request(url, headers={"User-Agent": "zoo"})
    with urllib.request.urlopen(request, timeout=60) as response:
        content = response.read()
    digest = hashlib.sha256(content).hexdigest()
    if digest != sha256:
        raise ValueError(f"{url} now holds a different file (sha256 {digest}) than the one "
                         f"the presets were trained on ({sha256}).")
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return target
