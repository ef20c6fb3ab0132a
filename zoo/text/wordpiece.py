"""WordPiece: words into subword pieces by greedy longest match (Wu et al. 2016, BERT).

A word is split from the left: at each position the longest vocabulary entry that
matches is taken, written with the continuation prefix ``##`` after the first piece
(``unbelievable`` -> ``un ##believ ##able``). This is the algorithm of BERT's
tokenizer, of HF ``tokenizers``' ``WordPiece`` model and of the TFLite Support
library's ``BertTokenizer`` on Android and iOS, so an app can reproduce it from the
vocabulary alone (``NAME.json`` beside a ``.tflite`` holds it).

The vocabularies are learned on the training split only, with HF ``tokenizers``'
WordPiece trainer (``train_pieces``), and every character seen in training is added
as a word start and as a continuation piece, so that any word made of known
characters can be spelled: the decoder never needs ``[UNK]``. What is still
``[UNK]`` (a choice, as in standard WordPiece): a source word with a character never
seen in training, or longer than ``MAX_WORD_CHARACTERS``, becomes one ``[UNK]``.
Chinese keeps one token per character (the word rules already split Han characters
and full-width punctuation off, so each is a "word" of one character, a word start
only); Latin words and numbers inside Chinese text take pieces like any other word.

``split_words`` runs in plain Python (training, inference, the LiteRT runner);
``tf_split_words`` runs the same algorithm with core TensorFlow ops (SavedModel,
stock TF Serving: no tensorflow-text). Tests check that both, and HF's own encoder,
give the same pieces.
"""

import collections

CONTINUATION = "##"
# Longer words become one [UNK] (BERT's max_input_chars_per_word): a guard against
# pathological input, far beyond any word of the corpora.
MAX_WORD_CHARACTERS = 100


def split_word(word, pieces, unknown):
    """The pieces of one word (``pieces``: a container of vocabulary entries, such as a
    ``Vocabulary``), or ``[unknown]`` when it cannot be spelled with them."""
    if len(word) > MAX_WORD_CHARACTERS:
        return [unknown]
    result, start = [], 0
    while start < len(word):
        prefix = CONTINUATION if start else ""
        for end in range(len(word), start, -1):
            piece = prefix + word[start:end]
            if piece in pieces:
                result.append(piece)
                start = end
                break
        else:
            return [unknown]
    return result


def split_words(words, pieces, unknown):
    """The pieces of a list of words, in order (plain Python)."""
    return [piece for word in words for piece in split_word(word, pieces, unknown)]


def continues_word(piece, position):
    """Whether a piece is glued to the word before it: a continuation piece (the prefix
    and at least one character) that does not open the sequence."""
    return position > 0 and piece.startswith(CONTINUATION) and len(piece) > len(CONTINUATION)


def word_indices(pieces):
    """For each piece, the index of the word it belongs to in ``join_pieces(pieces)``."""
    indices, word = [], -1
    for position, piece in enumerate(pieces):
        word += not continues_word(piece, position)
        indices.append(word)
    return indices


def join_pieces(pieces):
    """Words from pieces: a continuation piece is glued to the word before it (one that
    opens the sequence stands as a word, without its prefix)."""
    words = []
    for position, piece in enumerate(pieces):
        if continues_word(piece, position):
            words[-1] += piece[len(CONTINUATION):]
        else:
            words.append(piece.removeprefix(CONTINUATION) if len(piece) > len(CONTINUATION)
                         else piece)
    return words


def train_pieces(words, vocabulary_size, reserved, single_characters=(), min_character_count=1):
    """Vocabulary entries learned from ``words`` (a list of lists of training words)
    with HF ``tokenizers``' WordPiece trainer; ``reserved`` (the special tokens) come
    first. Every character seen at least ``min_character_count`` times is added as a
    word start and, unless it is in ``single_characters`` (characters the word rules
    always split off alone, such as Han characters), also as a continuation piece, so
    every word made of them can be spelled; rarer characters read as ``[UNK]`` (on a
    corpus of millions of subtitles, thousands of characters are seen a few times)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    counts = collections.Counter(c for sentence in words for word in sentence for c in word)
    characters = sorted(c for c, count in counts.items() if count >= min_character_count)

    tokenizer = Tokenizer(models.WordPiece(unk_token=reserved[1],
                                           continuing_subword_prefix=CONTINUATION,
                                           max_input_chars_per_word=MAX_WORD_CHARACTERS))
    # The words are already split by zoo's rules; a space never occurs inside one.
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    rare_left_out = {"limit_alphabet": len(characters)} if min_character_count > 1 else {}
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocabulary_size, min_frequency=1, special_tokens=list(reserved),
        continuing_subword_prefix=CONTINUATION, show_progress=False, **rare_left_out)
    tokenizer.train_from_iterator((" ".join(sentence) for sentence in words), trainer)
    # Sorted, so that the same pieces get the same ids (greedy longest match does not
    # depend on their order). The trainer numbers its continuation pieces in hash-map
    # order, which differs from run to run, and breaks ties between merges of equal
    # counts by those numbers: two runs on the same words can still learn a few
    # different pieces (huggingface/tokenizers#1794, fix open in #2066).
    entries = sorted(token for token in tokenizer.get_vocab() if token not in reserved
                     and all(counts[c] >= min_character_count for c in token.removeprefix(CONTINUATION)))
    present = set(entries)
    for character in characters:
        for entry in (character, CONTINUATION + character):
            if entry not in present and not (entry != character and character in single_characters):
                entries.append(entry)
                present.add(entry)
    return list(reserved) + entries


def hf_tokenizer(vocabulary_tokens, unknown):
    """HF ``tokenizers``' own WordPiece encoder over a vocabulary (tests compare with it)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordPiece(
        {token: index for index, token in enumerate(vocabulary_tokens)}, unk_token=unknown,
        continuing_subword_prefix=CONTINUATION, max_input_chars_per_word=MAX_WORD_CHARACTERS))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tokenizer


def tf_split_words(words, table, unknown_id, longest_piece):
    """Greedy longest match inside a TensorFlow graph, with core ops only.

    Args:
        words: a ``tf.RaggedTensor`` of strings ``[batch, (words)]``.
        table: a ``tf.lookup`` table from vocabulary entry to id (-1 when absent).
        unknown_id: the id of ``[UNK]``.
        longest_piece: the most characters of any entry (without its prefix).

    Returns:
        ``tf.RaggedTensor`` of int32 ids ``[batch, (pieces)]``, as ``split_words``
        followed by a vocabulary lookup.

    All words advance together: each round, every unfinished word looks up its next
    ``longest_piece`` candidate prefixes at once and takes the longest one found.
    """
    import tensorflow as tf

    flat = words.flat_values
    count = tf.shape(flat)[0]
    length = tf.strings.length(flat, unit="UTF8_CHAR")
    too_long = length > MAX_WORD_CHARACTERS
    candidate_lengths = tf.range(1, longest_piece + 1)  # [K]
    # At least one round: a TensorArray of no rounds cannot be stacked.
    rounds = tf.reduce_max(tf.concat([tf.where(too_long, 0, length), [1]], axis=0))

    def find_next_piece(start):
        """Per word: (length of the longest entry at ``start``, its id), 0 when none."""
        positions = tf.repeat(start[:, None], longest_piece, axis=1)
        lengths = tf.broadcast_to(candidate_lengths[None, :], tf.shape(positions))
        candidates = tf.strings.substr(tf.repeat(flat[:, None], longest_piece, axis=1),
                                       positions, lengths, unit="UTF8_CHAR")
        candidates = tf.where(start[:, None] > 0, CONTINUATION + candidates, candidates)
        ids = tf.cast(table.lookup(candidates), tf.int32)
        fits = start[:, None] + lengths <= length[:, None]
        found = (ids >= 0) & fits
        best = tf.reduce_max(tf.where(found, lengths, 0), axis=1)
        best_id = tf.reduce_sum(tf.where(found & tf.equal(lengths, best[:, None]), ids, 0), axis=1)
        return best, best_id

    def body(round_index, start, failed, emitted, emitted_mask):
        active = (start < length) & ~failed & ~too_long
        best, best_id = find_next_piece(start)
        failed = failed | (active & tf.equal(best, 0))
        taken = active & (best > 0)
        emitted = emitted.write(round_index, tf.where(taken, best_id, 0))
        emitted_mask = emitted_mask.write(round_index, taken)
        return round_index + 1, start + tf.where(taken, best, 0), failed, emitted, emitted_mask

    _, _, failed, emitted, emitted_mask = tf.while_loop(
        lambda round_index, *_: round_index < rounds, body,
        (0, tf.zeros([count], tf.int32), tf.zeros([count], tf.bool),
         tf.TensorArray(tf.int32, size=rounds, element_shape=[None]),
         tf.TensorArray(tf.bool, size=rounds, element_shape=[None])))
    # [words, rounds + 1]: one spare column, where an unknown word writes its [UNK].
    ids = tf.pad(tf.transpose(tf.reshape(emitted.stack(), [rounds, count])), [[0, 0], [0, 1]])
    mask = tf.pad(tf.transpose(tf.reshape(emitted_mask.stack(), [rounds, count])),
                  [[0, 0], [0, 1]])
    unknown = (failed | too_long)[:, None]
    first_column = tf.equal(tf.range(rounds + 1), 0)[None, :]
    ids = tf.where(unknown, tf.where(first_column, unknown_id, 0), ids)
    mask = tf.where(unknown, first_column, mask)
    per_word = tf.ragged.boolean_mask(ids, mask)
    return tf.RaggedTensor.from_nested_row_splits(
        per_word.flat_values, (words.row_splits, per_word.row_splits)).merge_dims(1, 2)
