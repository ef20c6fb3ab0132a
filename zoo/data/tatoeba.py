"""Tatoeba sentence pairs (as packaged by manythings.org/anki), read from a local copy.

Files are TSV: English, the other language, then attribution columns (ignored).
Where the files are: ``$ZOO_DATA_DIR/tatoeba/`` if set, else ``../shared/data/tatoeba``
next to the repository (the layout of this project's machines); ``download()``
fetches the public copy for users elsewhere.

The split is deterministic and leak-free: pairs that share a sentence on either side
(Tatoeba lists one English sentence with several translations, and the reverse) form
one group, and each group goes to train, validation or test as a whole, chosen by a
hash of its sentences. No test sentence, on either side, occurs in training.
"""

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path

from zoo import data
from zoo.data import DATA_DIR_VARIABLE, data_dir, utf8_lines


# The public download, and the sha256 of the TSV as this project trained on it.
# The upstream archive is updated over time (and fra-eng.tsv here is its shortest
# part), so a fresh download may differ: download() says so instead of mixing data.
CORPORA = {
    "cmn": {
        "file": "cmn-eng.tsv",
        "url": "http://www.manythings.org/anki/cmn-eng.zip",
        "sha256": "50e674f20a02f0d819211151c21ea04070d7a7db42f18f137c3c497902d99cbc",
        "language": "zh",
    },
    "fra": {
        "file": "fra-eng.tsv",
        "url": "http://www.manythings.org/anki/fra-eng.zip",
        # This project's copy keeps the 71,162 pairs whose English side has at
        # most 30 characters; truncate a fresh download the same way to compare.
        "sha256": "1ab07e45ff70e06c108be66561d1bc0c84939bf43750b5cc7132c084622f7715",
        "language": "fr",
    },
}

SPLITS = ("train", "validation", "test")
VALIDATION_FRACTION = 0.05
TEST_FRACTION = 0.05


@dataclass(frozen=True)
class Pair:
    english: str
    other: str


def corpus_path(corpus, directory=None):
    if corpus not in CORPORA:
        raise ValueError(f"Unknown Tatoeba corpus {corpus!r}; known: {', '.join(CORPORA)}.")
    path = data_dir(directory) / "tatoeba" / CORPORA[corpus]["file"]
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found. Set {DATA_DIR_VARIABLE} to the folder that contains "
            f"tatoeba/{CORPORA[corpus]['file']}, or fetch it with "
            f"zoo.data.tatoeba.download({corpus!r}, DIRECTORY)."
        )
    return path


def read_pairs(path, unreadable=None):
    """Pairs from a TSV file (gzip-compressed or not): English first, the other
    language second, rest ignored (``unreadable``: see ``zoo.data.utf8_lines``)."""
    pairs = []
    lines = utf8_lines(path, unreadable)
    for number, row in enumerate(csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2:
            raise ValueError(
                f"{path}, line {number}: expected at least 2 tab-separated columns "
                f"(English, other language), found {len(row)}: {row[0][:60]!r}"
            )
        pairs.append(Pair(row[0].strip(), row[1].strip()))
    return pairs


def read(corpus, directory=None):
    """All pairs of a corpus ('cmn' or 'fra')."""
    return read_pairs(corpus_path(corpus, directory))


def _groups(pairs):
    """Indices of pairs, grouped so that groups share no sentence on either side."""
    parent = list(range(len(pairs)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_seen = {}
    for index, pair in enumerate(pairs):
        for key in (("en", pair.english), ("xx", pair.other)):
            if key in first_seen:
                parent[find(index)] = find(first_seen[key])
            else:
                first_seen[key] = index
    groups = {}
    for index in range(len(pairs)):
        groups.setdefault(find(index), []).append(index)
    return list(groups.values())


def _group_split(pairs, indices):
    key = "\n".join(sorted(pairs[i].english + "\t" + pairs[i].other for i in indices))
    fraction = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") / 2**64
    if fraction < TEST_FRACTION:
        return "test"
    if fraction < TEST_FRACTION + VALIDATION_FRACTION:
        return "validation"
    return "train"


def split(pairs):
    """``{"train": [...], "validation": [...], "test": [...]}``, deterministic and leak-free."""
    result = {name: [] for name in SPLITS}
    assignment = {}
    for indices in _groups(pairs):
        name = _group_split(pairs, indices)
        for index in indices:
            assignment[index] = name
    for index, pair in enumerate(pairs):  # keep the file's order within each split
        result[assignment[index]].append(pair)
    return result


def download(corpus, directory, verify=True):
    """Fetch a corpus from its public URL into ``directory/tatoeba/`` (needs internet)."""
    info = CORPORA[corpus]
    files = {info["file"]: (f"tatoeba/{info['file']}", info["sha256"])}
    return data.download(info["url"], files, directory, verify)[0]
