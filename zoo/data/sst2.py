"""SST-2 (GLUE's Stanford Sentiment Treebank, binary): ``label <TAB> sentence`` with a header.

The training file holds sentences and their phrases; the dev file holds 872 whole
sentences and is the test split here (GLUE's test labels are not public). The
validation split for early stopping is 1 training line in 20, chosen by hash.
"""

import csv
import hashlib
import io
import urllib.request
import zipfile
from pathlib import Path

from zoo.data import local_file

URL = "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"
FILES = {"train": "sst2/train.tsv", "test": "sst2/dev.tsv"}
SHA256 = {"train": "dc4a10637729af71aeb11f573482b10031ba7ffe53159403599d06759e484e30",
          "test": "95e23a00053d2596a991cd6d65735790f18c79549dbf91dfad70d8de61e3ce27"}
LABELS = ("negative", "positive")


def read_tsv(path):
    """(sentences, labels 0/1) from a ``label <TAB> sentence`` file with that header."""
    sentences, labels = [], []
    with open(path, encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows, None)
        if header is None or [c.strip().lower() for c in header[:2]] != ["label", "sentence"]:
            raise ValueError(f"{path}: expected the header 'label<TAB>sentence'; found {header!r}.")
        for number, row in enumerate(rows, 2):
            if not row or not "".join(row).strip():
                continue
            if len(row) != 2 or row[0].strip() not in ("0", "1"):
                raise ValueError(f"{path}, line {number}: expected 'label<TAB>sentence' with "
                                 f"label 0 or 1; found {row!r:.80}.")
            labels.append(int(row[0]))
            sentences.append(row[1])
    return sentences, labels


def _is_validation(sentence):
    return hashlib.sha256(sentence.encode("utf-8")).digest()[0] < 256 / 20


def load(directory=None):
    """``{"train", "validation", "test"}`` -> (sentences, labels)."""
    train = read_tsv(local_file(FILES["train"], URL, directory))
    test = read_tsv(local_file(FILES["test"], URL, directory))
    validation_rows = [_is_validation(s) for s in train[0]]
    return {
        "train": tuple([x for x, v in zip(side, validation_rows) if not v] for side in train),
        "validation": tuple([x for x, v in zip(side, validation_rows) if v] for side in train),
        "test": test,
    }


def download(directory):
    """Fetch GLUE's SST-2 archive and unpack train.tsv and dev.tsv (needs internet)."""
    with urllib.request.urlopen(URL, timeout=60) as response:
        archive = zipfile.ZipFile(io.BytesIO(response.read()))
    for split, relative in FILES.items():
        content = archive.read(f"SST-2/{relative.split('/')[1]}")
        if hashlib.sha256(content).hexdigest() != SHA256[split]:
            raise ValueError(f"{URL} now holds a different {relative} than the one trained on.")
        target = Path(directory) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return directory
