"""Vocabularies: token <-> id, with reserved ids for padding, unknown, start and end."""

import collections

import numpy as np

PAD, OOV, START, END = "[PAD]", "[UNK]", "[START]", "[END]"
SPECIAL_TOKENS = (PAD, OOV, START, END)
PAD_ID, OOV_ID, START_ID, END_ID = range(4)


class Vocabulary:
    """An ordered token list; ids 0-3 are ``[PAD] [UNK] [START] [END]``.

    Stored as a text file, one token per line, in id order.
    """

    def __init__(self, tokens):
        tokens = list(tokens)
        if tuple(tokens[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            tokens = list(SPECIAL_TOKENS) + [t for t in tokens if t not in SPECIAL_TOKENS]
        if len(set(tokens)) != len(tokens):
            raise ValueError("A vocabulary cannot contain the same token twice.")
        self.tokens = tokens
        self._ids = {token: index for index, token in enumerate(tokens)}

    @classmethod
    def build(cls, tokenized_texts, min_count=2, max_size=None):
        """Tokens seen at least ``min_count`` times, most frequent first (ties by token)."""
        counts = collections.Counter(t for tokens in tokenized_texts for t in tokens)
        ranked = sorted(
            (token for token, count in counts.items() if count >= min_count),
            key=lambda token: (-counts[token], token),
        )
        if max_size is not None:
            ranked = ranked[: max_size - len(SPECIAL_TOKENS)]
        return cls(ranked)

    def __len__(self):
        return len(self.tokens)

    def __contains__(self, token):
        return token in self._ids

    def __eq__(self, other):
        return isinstance(other, Vocabulary) and self.tokens == other.tokens

    def ids_of(self, tokens):
        """The id of each token (``[UNK]``'s for a token it lacks)."""
        return [self._ids.get(token, OOV_ID) for token in tokens]

    def tokens_of(self, ids):
        """Tokens for ids, stopping at ``[END]`` and skipping ``[PAD]``/``[START]``."""
        tokens = []
        for index in ids:
            index = int(index)
            if index == END_ID:
                break
            if index in (PAD_ID, START_ID):
                continue
            tokens.append(self.tokens[index] if 0 <= index < len(self.tokens) else OOV)
        return tokens

    def save(self, path):
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write("\n".join(self.tokens) + "\n")

    @classmethod
    def from_file(cls, path):
        with open(path, encoding="utf-8", newline="\n") as handle:
            tokens = handle.read().split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        return cls(tokens)


def pad_batch(rows, width=None, batch_size=None):
    """Right-pad lists of ids with ``[PAD]`` into one int32 array: ``width`` columns (by
    default the longest row's, at least 1) and ``batch_size`` rows (by default one per
    row; those past the rows given are all ``[PAD]``)."""
    longest = max([len(r) for r in rows] + [1])
    if width is not None and width < longest:
        raise ValueError(f"A row of {longest} ids does not fit a width of {width}; pad_batch "
                         "takes a width at least the longest row's.")
    padded = np.full((batch_size or len(rows), width or longest), PAD_ID, np.int32)
    for i, row in enumerate(rows):
        padded[i, : len(row)] = row
    return padded
