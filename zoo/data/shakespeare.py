"""Tiny Shakespeare (char-rnn): 1.06 M characters of plays, for the character language models.

The split is by position: the first 90% trains, the next 5% validates, and the last
5% -- a held-out tail of whole scenes the models never read -- is the test text.
"""

from zoo import data
from zoo.data import local_file, utf8_lines

FILE = "tinyshakespeare/input.txt"
URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SHA256 = "6f5553d5098e3579ce5a6c71cd406a4a83520b956641eaaed50c24ee6501777e"
FRACTIONS = {"train": 0.90, "validation": 0.05, "test": 0.05}


def read_text(path, unreadable=None):
    """The text of a file (``unreadable``: see ``zoo.data.utf8_lines``)."""
    return "".join(utf8_lines(path, unreadable))


def read(directory=None):
    """The whole corpus, one string (``split`` cuts it into train, validation and test)."""
    return read_text(local_file(FILE, URL, directory))


def split(text):
    """``{"train": str, "validation": str, "test": str}``: consecutive parts, test last."""
    first = int(len(text) * FRACTIONS["train"])
    second = first + int(len(text) * FRACTIONS["validation"])
    return {"train": text[:first], "validation": text[first:second], "test": text[second:]}


def download(directory):
    """Fetch the corpus into ``directory/tinyshakespeare/`` (needs internet)."""
    return data.download(URL, {"": (FILE, SHA256)}, directory)[0]
