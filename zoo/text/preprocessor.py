"""Preprocessors: everything between text and token ids, apart from the networks.

``TranslationPreprocessor`` (words, then WordPiece pieces), ``ClassifierPreprocessor``
(words), ``CharacterPreprocessor`` (characters, for the language models).

As in keras-hub's Preprocessor / Backbone / Task split, a preprocessor owns the
tokenizer rules, the vocabularies (stored as preset assets) and the way text becomes
ids and ids become text -- in plain Python (training, ``model.translate``, the LiteRT
runner, which has no TensorFlow), inside a TensorFlow graph with core ops only (the
SavedModel), and as data (``runner_config``, written beside a ``.tflite`` so that an
app can implement it). The networks see ids only.

A translation preprocessor splits text into words with the language's rules
(``zoo.text.tokenizers``), then words into WordPiece pieces (``zoo.text.wordpiece``).
Presets trained before subwords keep whole-word vocabularies (``subwords=False``):
every word is then one piece.
"""

import datetime
import json
import re
import typing
from pathlib import Path

import numpy as np

from zoo.text import codec, tokenizers, wordpiece
from zoo.text.vocabulary import (END_ID, OOV, OOV_ID, PAD_ID, SPECIAL_TOKENS, START_ID,
                                 Vocabulary, pad_batch)

SOURCE_VOCABULARY_FILE = "source_vocabulary.txt"
TARGET_VOCABULARY_FILE = "target_vocabulary.txt"
CONFIG_FILE = "preprocessor.json"


class Alignment(typing.NamedTuple):
    """Attention between a source text and its translation: ``weights[i, j]`` is how
    much the ``i``-th produced unit (word or piece) looked at the ``j``-th source unit."""

    source: list
    produced: list
    weights: np.ndarray


class TranslationPreprocessor:
    """Source text -> source ids, target text -> decoder ids, output ids -> text.

    Args:
        source_language, target_language: keys of ``zoo.text.LANGUAGES``.
        source_vocabulary, target_vocabulary: ``Vocabulary`` objects of pieces (of
            words when ``subwords`` is False).
        max_source_length: longer sources are cut to this many pieces.
        subwords: split words into WordPiece pieces.
        tokenize_rules, detokenize_rules: the source language's word rules and the
            target language's joining rules, when given as data.
        input_rules, accepted_input: a task's input domain (the addition model): rewrites
            applied to a source first, then ``{"pattern", "description"}``: a source that
            the pattern does not match in full is refused with the description.
        output_format: ``"iso_date"`` (the dates model): an output that is not a calendar
            date ``YYYY-MM-DD`` is refused (``UnreadableTextError``).
    """

    def __init__(self, source_language, target_language, source_vocabulary, target_vocabulary,
                 max_source_length=64, subwords=True, tokenize_rules=None,
                 detokenize_rules=None, input_rules=(), accepted_input=None, output_format=None):
        for language in (source_language, target_language):
            tokenizers._check_language(language)
        # The languages' rules, unless given as data (a runner reads them from NAME.json).
        self.tokenize_rules = tokenize_rules or tokenizers.RULES[source_language]
        self.detokenize_rules = detokenize_rules or tokenizers.DETOKENIZE_RULES[target_language]
        self.source_language = source_language
        self.target_language = target_language
        self.source_vocabulary = source_vocabulary
        self.target_vocabulary = target_vocabulary
        self.max_source_length = max_source_length
        self.subwords = subwords
        self.input_rules = [list(rule) for rule in input_rules]
        self.accepted_input = accepted_input
        if output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}; received "
                             f"{output_format!r}.")
        self.output_format = output_format

    # -- learning the vocabularies ------------------------------------------------------
    @classmethod
    def train(cls, sources, targets, source_language, target_language, source_size,
              target_size, max_source_length=64, min_character_count=1, **task_rules):
        """Piece vocabularies learned from training pairs only (``wordpiece.train_pieces``:
        characters seen fewer than ``min_character_count`` times read as ``[UNK]``);
        ``task_rules``: ``input_rules``, ``accepted_input``, ``output_format``."""
        vocabularies = [
            Vocabulary(wordpiece.train_pieces(
                [tokenizers.tokenize(text, language) for text in texts], size, SPECIAL_TOKENS,
                single_characters=single_characters(texts, language),
                min_character_count=min_character_count))
            for texts, language, size in ((sources, source_language, source_size),
                                          (targets, target_language, target_size))
        ]
        return cls(source_language, target_language, *vocabularies, max_source_length,
                   **task_rules)

    # -- plain Python --------------------------------------------------------------------
    def accepted_source(self, text, position=None):
        """The source after the task's input rules; one outside its domain is refused
        (the error names the text's ``position`` in its batch, when given)."""
        received = text
        for pattern, replacement in self.input_rules:
            text = re.sub(pattern, replacement, text)
        if self.accepted_input and not re.fullmatch(self.accepted_input["pattern"], text):
            which = "The text" if position is None else f"Text {position}"
            raise ValueError(f"{which} is not accepted by this model: {received!r:.60}; it "
                             f"takes {self.accepted_input['description']}.")
        return text

    def source_words(self, text):
        """Words as ``zoo.text.tokenize`` splits them (what attention is shown over)."""
        return tokenizers.split_with_rules(self.accepted_source(text), self.tokenize_rules)

    def pieces(self, words, vocabulary):
        if not self.subwords:
            return list(words)
        return wordpiece.split_words(words, vocabulary, OOV)

    def piece_starts(self, words, vocabulary):
        """Where each word's pieces begin among ``pieces(words, vocabulary)``, and (last)
        how many pieces there are: word ``i`` is pieces ``starts[i]:starts[i + 1]``."""
        starts = [0]
        for word in words:
            starts.append(starts[-1] + len(self.pieces([word], vocabulary)))
        return starts

    def source_pieces(self, text):
        """The pieces the encoder reads, cut to ``max_source_length``."""
        return self.pieces(self.source_words(text), self.source_vocabulary)[: self.max_source_length]

    def target_pieces(self, text):
        """The pieces of a reference translation (training)."""
        return self.pieces(tokenizers.tokenize(text, self.target_language), self.target_vocabulary)

    def tokenize_sources(self, texts):
        """Right-padded source ids ``[batch, longest]`` (int32, at least one column)."""
        return pad_batch([self.source_vocabulary.ids_of(self.source_pieces(t)) for t in texts])

    def source_rows(self, texts):
        """The source ids of each text (``source_pieces``), unpadded."""
        return self._rows(texts, self.source_words, self.source_vocabulary,
                          self.max_source_length)

    def target_rows(self, texts):
        """The ids of each reference translation (``target_pieces``), unpadded."""
        return self._rows(texts, lambda text: tokenizers.tokenize(text, self.target_language),
                          self.target_vocabulary)

    def _rows(self, texts, words_of, vocabulary, limit=None):
        # Each distinct word is split into pieces once: a corpus of millions of
        # sentences repeats its words, and the split is the slow part in Python.
        ids_of_word, rows = {}, []
        for text in texts:
            row = []
            for word in words_of(text):
                ids = ids_of_word.get(word)
                if ids is None:
                    ids = ids_of_word[word] = vocabulary.ids_of(self.pieces([word], vocabulary))
                row += ids
            rows.append(row[:limit])
        return rows

    def tokenize_targets(self, texts):
        """(decoder inputs ``[START] y``, decoder targets ``y [END]``), padded, int32."""
        rows = self.target_rows(texts)
        return pad_batch([[START_ID] + r for r in rows]), pad_batch([r + [END_ID] for r in rows])

    def output_pieces(self, ids):
        """The produced pieces: up to ``[END]``, without pads."""
        return self.target_vocabulary.tokens_of(ids)

    def output_words(self, ids):
        pieces = self.output_pieces(ids)
        return wordpiece.join_pieces(pieces) if self.subwords else pieces

    def detokenize_target(self, ids):
        """Readable text for output ids."""
        return tokenizers.join_with_rules(self.output_words(ids), self.detokenize_rules)

    def detokenize_translation(self, source_ids, ids):
        """The translation of one source row: a source without a known piece (an empty
        or blank text, or only characters the model never saw) translates to the empty
        string instead of whatever the decoder would make up."""
        if not any(int(i) not in (PAD_ID, OOV_ID) for i in source_ids):
            return ""
        return self.detokenize_target(ids)

    def check_outputs(self, texts, outputs):
        """Refuse outputs that are not of the task's format (``UnreadableTextError``, which
        carries them all): a dates model's answer that is no calendar date."""
        if self.output_format != "iso_date":
            return outputs
        unreadable = [i for i, output in enumerate(outputs) if not is_calendar_date(output)]
        if unreadable:
            first = unreadable[0]
            raise UnreadableTextError(
                f"Text {first} could not be read as a date: {texts[first]!r:.60} (the model "
                f"answered {outputs[first]!r}, which is not a calendar date YYYY-MM-DD)"
                + (f"; {len(unreadable) - 1} more like it" if len(unreadable) > 1 else "")
                + ".", outputs, unreadable)
        return outputs

    def alignment(self, text, ids, weights, level="word"):
        """An ``Alignment`` of a source text and the output ``ids`` decoded from it, with
        the decoder's attention ``weights`` ``[output steps, source pieces]``; at word
        level a source word's columns are summed and a produced word's rows averaged."""
        source_pieces, produced_pieces = self.source_pieces(text), self.output_pieces(ids)
        weights = np.asarray(weights)[: len(produced_pieces), : len(source_pieces)]
        if level == "piece":
            return Alignment(source_pieces, produced_pieces, weights)
        source_words = self.source_words(text)
        starts = self.piece_starts(source_words, self.source_vocabulary)
        source_index = [word for word in range(len(source_words))
                        for _ in range(starts[word], starts[word + 1])][: len(source_pieces)]
        produced_index = (wordpiece.word_indices(produced_pieces) if self.subwords
                          else list(range(len(produced_pieces))))
        produced_words = self.output_words(ids)
        columns = np.zeros((len(source_pieces), len(source_words)))
        columns[np.arange(len(source_pieces)), source_index] = 1
        rows = np.zeros((len(produced_words), len(produced_pieces)))
        rows[produced_index, np.arange(len(produced_pieces))] = 1
        rows /= np.maximum(rows.sum(axis=1, keepdims=True), 1)
        if self.subwords:  # joined pieces may hold more than one word ("l'" "##été")
            parts = [(part, row) for row, word in enumerate(produced_words)
                     for part in translation_words(word, self.target_language)]
            produced_words = [part for part, _ in parts]
            rows = rows[[row for _, row in parts]]
        return Alignment(source_words, produced_words, rows @ weights @ columns)

    # -- assets and the runner's config -------------------------------------------------------
    def save(self, directory):
        directory = Path(directory)
        self.source_vocabulary.save(directory / SOURCE_VOCABULARY_FILE)
        self.target_vocabulary.save(directory / TARGET_VOCABULARY_FILE)
        _write_config(directory, self.get_config())

    def get_config(self):
        return {"source_language": self.source_language, "target_language": self.target_language,
                "max_source_length": self.max_source_length, "subwords": self.subwords,
                **self._task_rules()}

    def _task_rules(self):
        return {"input_rules": self.input_rules, "accepted_input": self.accepted_input,
                "output_format": self.output_format}

    @classmethod
    def from_directory(cls, directory, **defaults):
        """From preset assets; ``defaults`` for presets written before ``preprocessor.json``
        (whole-word vocabularies, the languages from the model's config)."""
        directory = Path(directory)
        config = {"subwords": False, **defaults, **_read_config(directory)}
        return cls(source_vocabulary=Vocabulary.from_file(directory / SOURCE_VOCABULARY_FILE),
                   target_vocabulary=Vocabulary.from_file(directory / TARGET_VOCABULARY_FILE),
                   **config)

    def runner_config(self):
        """The tokenization as data, for ``NAME.json`` beside a ``.tflite``: with it and
        the rules of ``zoo.text.tokenizers`` documented there, an app needs nothing else."""
        return {
            "source_language": self.source_language,
            "target_language": self.target_language,
            "max_source_length": self.max_source_length,
            "special_ids": {"pad": PAD_ID, "unknown": OOV_ID, "start": START_ID, "end": END_ID},
            "tokenize_rules": self.tokenize_rules,
            "detokenize_rules": self.detokenize_rules,
            "wordpiece": ({"continuation_prefix": wordpiece.CONTINUATION,
                           "max_word_characters": wordpiece.MAX_WORD_CHARACTERS}
                          if self.subwords else None),
            **self._task_rules(),
            "source_vocabulary": self.source_vocabulary.tokens,
            "target_vocabulary": self.target_vocabulary.tokens,
        }

    @classmethod
    def from_runner_config(cls, config):
        return cls(config["source_language"], config["target_language"],
                   Vocabulary(config["source_vocabulary"]), Vocabulary(config["target_vocabulary"]),
                   config["max_source_length"], subwords=config.get("wordpiece") is not None,
                   tokenize_rules=config["tokenize_rules"],
                   detokenize_rules=config["detokenize_rules"],
                   input_rules=config.get("input_rules", ()),
                   accepted_input=config.get("accepted_input"),
                   output_format=config.get("output_format"))

    # -- inside a TensorFlow graph ----------------------------------------------------------
    def graph(self):
        """Tokenizing and detokenizing in graph ops (``GraphTranslationPreprocessor``)."""
        return GraphTranslationPreprocessor(self)


def translation_words(text, language):
    """A translation's words as its word-level attention has rows for them: as
    ``tokenizers.tokenize`` splits the text, except that an ``[UNK]`` the decoder wrote
    stays one word (tokenize would read ``[``, ``UNK``, ``]``)."""
    words = []
    for index, part in enumerate(text.split(OOV)):
        words += [OOV] * (index > 0) + tokenizers.tokenize(part, language)
    return words


def single_characters(texts, language):
    """Characters that the word rules of ``language`` only ever leave alone in ``texts``
    (Han characters, full-width punctuation in Chinese): a word start is all they need.
    In languages written with spaces, every character is also a continuation piece."""
    if language != "zh":
        return set()
    alone, inside = set(), set()
    for text in texts:
        for word in tokenizers.tokenize(text, language):
            (alone if len(word) == 1 else inside).update(word)
    return alone - inside


class GraphTranslationPreprocessor:
    """``TranslationPreprocessor`` in core TensorFlow ops (regex rewrites, string split,
    hash-table lookups, a while loop): stock TF Serving runs it."""

    def __init__(self, preprocessor):
        import tensorflow as tf

        self.preprocessor = preprocessor
        self.source_table = lookup_table(preprocessor.source_vocabulary.tokens, -1)
        self.target_table = lookup_table(preprocessor.target_vocabulary.tokens, -1)
        self.target_tokens = tf.constant(preprocessor.target_vocabulary.tokens)

    @property
    def resources(self):
        return [self.source_table, self.target_table]

    def tokenize(self, texts):
        """Right-padded source ids ``[B, max(longest, 1)]``, as ``tokenize_sources``."""
        texts = self._accepted(checked_texts(texts))
        words = tokenizers.tf_tokenize(texts, self.preprocessor.source_language,
                                       self.preprocessor.tokenize_rules)
        ids = self._pieces(words, self.source_table, self.preprocessor.source_vocabulary)
        return tf_padded(ids[:, : self.preprocessor.max_source_length])

    def tokenize_targets(self, texts):
        """Right-padded target ids ``[B, max(longest, 1)]`` of texts in the target
        language (``target_rows``): a translation's given start."""
        words = tokenizers.tf_tokenize(checked_texts(texts), self.preprocessor.target_language)
        return tf_padded(self._pieces(words, self.target_table,
                                      self.preprocessor.target_vocabulary))

    def _pieces(self, words, table, vocabulary):
        """Ragged ids of ``words`` in ``vocabulary`` (``[UNK]`` for what it lacks)."""
        import tensorflow as tf

        if self.preprocessor.subwords:
            longest_piece = max(len(t.removeprefix(wordpiece.CONTINUATION))
                                for t in vocabulary.tokens[len(SPECIAL_TOKENS):])
            return wordpiece.tf_split_words(words, table, OOV_ID, longest_piece)
        ids = tf.cast(tf.ragged.map_flat_values(table.lookup, words), tf.int32)
        return tf.ragged.map_flat_values(lambda i: tf.where(i < 0, OOV_ID, i), ids)

    def detokenize(self, source_ids, ids):
        """Text per row of ``ids`` (as ``detokenize_translation``): up to the first ``[END]``,
        without pads, pieces joined into words; empty for a source without a known piece."""
        import tensorflow as tf

        after_end = tf.cumsum(tf.cast(tf.equal(ids, END_ID), tf.int32), axis=1) > 0
        keep = ~after_end & tf.not_equal(ids, PAD_ID) & tf.not_equal(ids, START_ID)
        pieces = tf.ragged.boolean_mask(tf.gather(self.target_tokens, ids), keep)
        if self.preprocessor.subwords:
            texts = tf.strings.reduce_join(pieces, axis=-1, separator=" ")
            texts = tf.strings.regex_replace(texts, TF_JOIN_PATTERN, r"\1")
            words = tf.strings.split(texts, sep=" ")
        else:
            words = pieces
        texts = tokenizers.tf_detokenize(words, self.preprocessor.target_language,
                                         self.preprocessor.detokenize_rules)
        known = tf.not_equal(source_ids, PAD_ID) & tf.not_equal(source_ids, OOV_ID)
        texts = tf.where(tf.reduce_any(known, axis=1), texts, "")
        if self.preprocessor.output_format != "iso_date":
            return texts
        check = tf.debugging.assert_equal(
            tf_is_calendar_date(texts), True,
            message="a text could not be read as a date (the model's answer is not a "
                    "calendar date YYYY-MM-DD)")
        with tf.control_dependencies([check]):
            return tf.identity(texts)

    def _accepted(self, texts):
        """``accepted_source`` in graph ops (InvalidArgumentError outside the domain)."""
        import tensorflow as tf

        for pattern, replacement in self.preprocessor.input_rules:
            texts = tf.strings.regex_replace(texts, pattern, replacement)
        accepted = self.preprocessor.accepted_input
        if not accepted:
            return texts
        check = tf.debugging.assert_equal(
            tf.strings.regex_full_match(texts, accepted["pattern"]), True,
            message=f"a text is not accepted by this model; it takes {accepted['description']}")
        with tf.control_dependencies([check]):
            return tf.identity(texts)


OUTPUT_FORMATS = (None, "iso_date")
_ISO_DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}"


class UnreadableTextError(ValueError):
    """A model's answer is not of its task's format. ``outputs``: every output of the
    call; ``positions``: those that were refused."""

    def __init__(self, message, outputs, positions):
        super().__init__(message)
        self.outputs, self.positions = outputs, positions


def is_calendar_date(text):
    """``YYYY-MM-DD`` naming a day that exists (year 1 on, leap years included)."""
    if not re.fullmatch(_ISO_DATE, text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def tf_is_calendar_date(texts):
    """``is_calendar_date`` in core TensorFlow ops, for a 1-D string tensor."""
    import tensorflow as tf

    formatted = tf.strings.regex_full_match(texts, _ISO_DATE)
    safe = tf.where(formatted, texts, "0001-01-01")

    def number(start, length):
        return tf.strings.to_number(tf.strings.substr(safe, start, length), tf.int32)

    year, month, day = number(0, 4), number(5, 2), number(8, 2)
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    month_days = tf.gather([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31],
                           tf.clip_by_value(month - 1, 0, 11))
    month_days += tf.cast(leap & tf.equal(month, 2), tf.int32)
    return (formatted & (year >= 1) & (month >= 1) & (month <= 12) & (day >= 1)
            & (day <= month_days))


# ``wordpiece.join_pieces`` on pieces joined by spaces: a continuation piece (the prefix
# and at least one character) loses its prefix and the space before it.
TF_JOIN_PATTERN = f"(?:^| ){wordpiece.CONTINUATION}([^ ])"


def checked_texts(texts):
    """Input strings as every runtime takes them: bytes that are not UTF-8 become U+FFFD
    (a character no model knows), and a text over ``MAX_TEXT_LENGTH`` characters is
    refused (InvalidArgumentError; TF Serving answers 400 with the message)."""
    import tensorflow as tf

    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
    check = tf.debugging.assert_less_equal(
        tf.strings.length(texts, unit="UTF8_CHAR"), codec.MAX_TEXT_LENGTH,
        message=f"a text has more than {codec.MAX_TEXT_LENGTH} characters (the most in every "
                "runtime)")
    with tf.control_dependencies([check]):
        return tf.identity(texts)


def tf_lower(texts):
    """Python's ``str.lower`` in graph ops, for a 1-D string tensor.

    ``tf.strings.lower(..., encoding="utf-8")`` reads a text as a C string and drops
    everything from its first NUL character (``"great\\x00 awful"`` -> ``"great"``), where
    Python lower-cases the whole text and keeps the NUL: each part between NULs is
    lower-cased alone and the parts joined back, each but the last followed by a NUL (a
    tensor: the ``separator`` of ``reduce_join`` is read as a C string too).
    """
    import tensorflow as tf

    parts = tf.strings.split(texts, sep="\x00")
    lengths = parts.row_lengths()
    last = tf.equal(tf.ragged.range(lengths).flat_values, tf.repeat(lengths - 1, lengths))
    nul = tf.where(last, tf.constant(""), tf.constant("\x00"))
    lowered = tf.strings.join([tf.strings.lower(parts.flat_values, encoding="utf-8"), nul])
    return tf.strings.reduce_join(parts.with_flat_values(lowered), axis=-1)


class ClassifierPreprocessor:
    """Text -> word ids for a classifier: optional lower-casing, the language's word
    rules, a cut to ``max_length`` words, a whole-word vocabulary.

    A text without a known word still reads as one ``[UNK]`` (never as nothing).
    """

    def __init__(self, vocabulary, language="en_ptb", lowercase=True, max_length=128):
        tokenizers._check_language(language)
        self.vocabulary = vocabulary
        self.language = language
        self.lowercase = lowercase
        self.max_length = max_length

    @classmethod
    def train(cls, texts, language="en_ptb", lowercase=True, max_length=128, min_count=1):
        """Words of the training texts seen at least ``min_count`` times."""
        reader = cls(Vocabulary([]), language, lowercase, max_length)
        return cls(Vocabulary.build([reader.words(t) for t in texts], min_count), language,
                   lowercase, max_length)

    def words(self, text):
        return tokenizers.tokenize(text.lower() if self.lowercase else text,
                                   self.language)[: self.max_length]

    def rows(self, texts):
        """Word ids per text, unpadded (empty for a text without words: training skips it)."""
        return [self.vocabulary.ids_of(self.words(t)) for t in texts]

    def tokenize(self, texts):
        """Right-padded word ids ``[batch, longest]``; a text without words is one ``[UNK]``."""
        return pad_batch([row or [OOV_ID] for row in self.rows(texts)])

    def get_config(self):
        return {"language": self.language, "lowercase": self.lowercase,
                "max_length": self.max_length}

    def save(self, directory):
        directory = Path(directory)
        self.vocabulary.save(directory / CLASSIFIER_VOCABULARY_FILE)
        _write_config(directory, self.get_config())

    @classmethod
    def from_directory(cls, directory, **defaults):
        """From preset assets; ``defaults`` (the model's config) for presets written
        before ``preprocessor.json``."""
        directory = Path(directory)
        return cls(Vocabulary.from_file(directory / CLASSIFIER_VOCABULARY_FILE),
                   **{**defaults, **_read_config(directory)})

    def runner_config(self):
        return {**self.get_config(), "tokenize_rules": tokenizers.RULES[self.language],
                "vocabulary": self.vocabulary.tokens}

    @classmethod
    def from_runner_config(cls, config):
        return cls(Vocabulary(config["vocabulary"]), config["language"], config["lowercase"],
                   config["max_length"])

    def graph(self):
        """Tokenizing in graph ops (``GraphClassifierPreprocessor``)."""
        return GraphClassifierPreprocessor(self)


class GraphClassifierPreprocessor:
    """``ClassifierPreprocessor.tokenize`` in core TensorFlow ops, for a 1-D string tensor."""

    def __init__(self, preprocessor):
        self.preprocessor = preprocessor
        self.table = lookup_table(preprocessor.vocabulary.tokens, OOV_ID)

    @property
    def resources(self):
        return [self.table]

    def tokenize(self, texts):
        import tensorflow as tf

        texts = checked_texts(texts)
        if self.preprocessor.lowercase:
            texts = tf_lower(texts)
        words = tokenizers.tf_tokenize(texts, self.preprocessor.language)
        ids = tf_padded(tf.cast(tf.ragged.map_flat_values(
            self.table.lookup, words[:, : self.preprocessor.max_length]), tf.int32))
        empty = tf.equal(words.row_lengths(), 0)
        return tf.concat([tf.where(empty, OOV_ID, ids[:, 0])[:, None], ids[:, 1:]], axis=1)


class CharacterPreprocessor:
    """Text <-> character ids for a character language model; a character the model
    never saw is an error (generation cannot start from it)."""

    def __init__(self, characters):
        self.characters = list(characters)
        if len(set(self.characters)) != len(self.characters):
            raise ValueError(f"The characters must be distinct; received {len(self.characters)} "
                             f"({len(set(self.characters))} distinct).")
        self.index = {c: i for i, c in enumerate(self.characters)}

    @classmethod
    def train(cls, text):
        return cls(sorted(set(text)))

    def __len__(self):
        return len(self.characters)

    def tokenize(self, text):
        return codec.character_ids(text, self.index, self.characters)

    def detokenize(self, ids):
        return "".join(self.characters[int(i)] for i in ids)

    def save(self, directory):
        with open(Path(directory) / CHARACTERS_FILE, "w", encoding="utf-8") as handle:
            json.dump(self.characters, handle, ensure_ascii=False)

    @classmethod
    def from_directory(cls, directory):
        with open(Path(directory) / CHARACTERS_FILE, encoding="utf-8") as handle:
            return cls(json.load(handle))

    def runner_config(self):
        return {"characters": self.characters}


CLASSIFIER_VOCABULARY_FILE = "vocabulary.txt"
CHARACTERS_FILE = "characters.json"


def _write_config(directory, config):
    (Path(directory) / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n",
                                               encoding="utf-8")


def _read_config(directory):
    path = Path(directory) / CONFIG_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def tf_padded(ids):
    """Ragged ids -> right-padded int32 ``[B, max(longest, 1)]``, as ``pad_batch``."""
    import tensorflow as tf

    ids = ids.to_tensor(default_value=PAD_ID)
    missing_column = 1 - tf.minimum(tf.shape(ids)[1], 1)  # an all-empty batch
    return tf.pad(ids, [[0, 0], [0, missing_column]])


def lookup_table(tokens, default_value):
    """A graph hash table from each token to its position in ``tokens``."""
    import tensorflow as tf

    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(tokens),
                                            tf.range(len(tokens), dtype=tf.int64)),
        default_value=default_value)
