"""zoo.text.vocabulary: token ids, special tokens, saving, padding.

(Tokenizers: tests/text/test_tokenizers.py.)
"""

import numpy as np
import pytest

from zoo.text import Vocabulary
from zoo.text.vocabulary import END_ID, OOV_ID, PAD_ID, START_ID, pad_batch


def test_vocabulary_build_encode_decode_save(tmp_path):
    texts = [["a", "b", "a"], ["b", "c"], ["a"]]
    vocabulary = Vocabulary.build(texts, min_count=2)
    assert vocabulary.tokens == ["[PAD]", "[UNK]", "[START]", "[END]", "a", "b"]
    assert (PAD_ID, OOV_ID, START_ID, END_ID) == (0, 1, 2, 3)
    assert vocabulary.ids_of(["a", "c", "b"]) == [4, OOV_ID, 5]
    assert vocabulary.tokens_of([START_ID, 4, 5, END_ID, 4]) == ["a", "b"]
    vocabulary.save(tmp_path / "v.txt")
    assert (tmp_path / "v.txt").read_text() == "[PAD]\n[UNK]\n[START]\n[END]\na\nb\n"
    assert Vocabulary.from_file(tmp_path / "v.txt") == vocabulary


def test_pad_batch():
    np.testing.assert_array_equal(pad_batch([[5, 6], [7], []]), [[5, 6], [7, 0], [0, 0]])
    assert pad_batch([[]]).shape == (1, 1)


def test_pad_batch_to_a_shape():
    np.testing.assert_array_equal(pad_batch([[5, 6], [7]], width=3, batch_size=3),
                                  [[5, 6, 0], [7, 0, 0], [0, 0, 0]])
    with pytest.raises(ValueError, match="A row of 2 ids does not fit a width of 1; pad_batch takes a width at least"):
        pad_batch([[5, 6]], width=1)
