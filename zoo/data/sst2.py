"""SST-2 (GLUE's Stanford Sentiment Treebank, binary): ``label <TAB> sentence`` with a header.

The training file holds the training sentences *and every phrase of their parse
trees* (67,349 lines from about 6,900 sentences); the dev file holds 872 whole
sentences and is the test split here (GLUE's test labels are not public).

The validation split must look like the test split: whole sentences, none of whose
phrases the model trained on. A line 1 in 8 by hash, of at least 6 words, that is
no phrase of another line (a whole sentence) goes to validation, and the training
lines of 3 words or more found inside a validation sentence (its phrases) are left
out of training. Words and two-word phrases stay: they are vocabulary, shared by many
sentences. (A first version drew 1 line in 20, phrases included: it scored 93% while
the same model scored 81.5% on dev, and early stopping picked the wrong epoch.)
"""

import csv
import hashlib
from pathlib import Path

from zoo import data
from zoo.data import local_file, utf8_lines

URL = "https://dl.fbaipublicfiles.com/glue/data/SST-2.zip"
FILES = {"train": "sst2/train.tsv", "test": "sst2/dev.tsv"}
SHA256 = {"train": "dc4a10637729af71aeb11f573482b10031ba7ffe53159403599d06759e484e30",
          "test": "95e23a00053d2596a991cd6d65735790f18c79549dbf91dfad70d8de61e3ce27"}
LABELS = ("negative", "positive")


def read_tsv(path, unreadable=None):
    """(sentences, labels 0/1) from a ``label <TAB> sentence`` file with that header
    (``unreadable``: see ``zoo.data.utf8_lines``)."""
    sentences, labels = [], []
    rows = csv.reader(utf8_lines(path, unreadable), delimiter="\t", quoting=csv.QUOTE_NONE)
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


def _is_validation(sentence, share=20):
    """1 line in ``share``, chosen by the hash of its text."""
    return hashlib.sha256(sentence.encode("utf-8")).digest()[0] < 256 / share


def split_sentences_from_phrases(lines, share=8, min_words=6, kept_phrase_words=2):
    """``(train, validation)`` line indices: whole sentences for validation, their
    phrases of more than ``kept_phrase_words`` words left out of both."""
    # A line that occurs once in the whole file, separators included, is no phrase
    # of a longer line: str.count scans the 4 MB in C, 770 times in a few seconds.
    everything = "\n".join(lines) + "\n"
    validation = [i for i, line in enumerate(lines)
                  if len(line.split()) >= min_words and _is_validation(line, share)
                  and everything.count(line) == 1]
    validation_text = "\n".join(f" {lines[i]} " for i in validation)
    chosen = set(validation)
    train = [i for i, line in enumerate(lines) if i not in chosen
             and not (len(line.split()) > kept_phrase_words and f" {line} " in validation_text)]
    return train, validation


def read(directory=None):
    """``{"train", "validation", "test"}`` -> (sentences, labels)."""
    train = read_tsv(local_file(FILES["train"], URL, directory))
    test = read_tsv(local_file(FILES["test"], URL, directory))
    train_rows, validation_rows = split_sentences_from_phrases(train[0])
    return {
        "train": tuple([side[i] for i in train_rows] for side in train),
        "validation": tuple([side[i] for i in validation_rows] for side in train),
        "test": test,
    }


def download(directory):
    """Fetch GLUE's SST-2 archive and unpack train.tsv and dev.tsv (needs internet)."""
    data.download(URL, {f"SST-2/{relative.split('/')[1]}": (relative, SHA256[split])
                        for split, relative in FILES.items()}, directory)
    return directory
