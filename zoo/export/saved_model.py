"""SavedModel export for TF Serving: a batch of strings in, a batch of strings out.

Everything runs inside the graph with core TensorFlow ops (regex rewrites, string
split, hash-table lookup, while loops), so the stock ``tensorflow/serving`` binary
and a plain ``tf.saved_model.load`` can run it without ``zoo`` installed:

- ``serving_default(texts: string[B]) -> {"translations": string[B]}``: greedy.
- ``translate_beam(texts: string[B], beam_size: int32[]) -> {"translations": ...}``.

Tokenization uses ``zoo.text.tokenizers.tf_tokenize``, the same rules that the
Python tokenizer runs, so the SavedModel answers exactly what ``model.translate`` does.
"""

from pathlib import Path

import keras
import tensorflow as tf

from zoo.export.graph import without_cudnn
from zoo.text import tokenizers
from zoo.text.vocabulary import END_ID, OOV_ID, PAD_ID, START_ID

MAX_BEAM_SIZE = 64
VERSION = 1


class GraphTextCodec:
    """Strings <-> token ids inside a graph, with the model's tokenizers and vocabularies."""

    def __init__(self, model):
        self.model = model
        tokens = model.source_vocabulary.tokens
        self.source_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(tokens), tf.range(len(tokens), dtype=tf.int64)
            ),
            default_value=OOV_ID,
        )
        self.target_tokens = tf.constant(model.target_vocabulary.tokens)

    def encode(self, texts):
        """Right-padded source ids ``[B, max(longest, 1)]``, as ``model.encode_source``."""
        tokens = tokenizers.tf_tokenize(texts, self.model.source_language)
        tokens = tokens[:, : self.model.max_source_length]
        ids = tf.cast(tf.ragged.map_flat_values(self.source_table.lookup, tokens), tf.int32)
        ids = ids.to_tensor(default_value=PAD_ID)
        missing_column = 1 - tf.minimum(tf.shape(ids)[1], 1)  # an all-empty batch
        return tf.pad(ids, [[0, 0], [0, missing_column]])

    def decode(self, ids):
        """Detokenized text per row of ``ids``: up to the first ``[END]``, without pads."""
        after_end = tf.cumsum(tf.cast(tf.equal(ids, END_ID), tf.int32), axis=1) > 0
        keep = ~after_end & tf.not_equal(ids, PAD_ID) & tf.not_equal(ids, START_ID)
        tokens = tf.where(keep, tf.gather(self.target_tokens, ids), "")
        return tokenizers.tf_detokenize(tokens, self.model.target_language)


def _serving_functions(model, codec):
    def serving_default(texts):
        ids, _ = model.generate_ids(codec.encode(texts))
        return {"translations": codec.decode(ids)}

    def translate_beam(texts, beam_size):
        checks = [
            tf.debugging.assert_greater_equal(
                beam_size, 1, message="beam_size must be at least 1"),
            tf.debugging.assert_less_equal(
                beam_size, MAX_BEAM_SIZE, message=f"beam_size must be at most {MAX_BEAM_SIZE}"),
        ]
        with tf.control_dependencies(checks):
            source_ids = codec.encode(texts)
        # Beam 1 takes the greedy path, exactly as model.translate(beam_size=1) does.
        ids = tf.cond(
            tf.equal(beam_size, 1),
            lambda: model.generate_ids(source_ids)[0],
            lambda: model.generate_ids(source_ids, beam_size)[0],
        )
        return {"translations": codec.decode(ids)}

    return serving_default, translate_beam


def export_saved_model(model, directory, name):
    """Write ``directory/name/1/`` (TF Serving's layout); returns that path."""
    model._require_vocabularies()
    path = Path(directory) / name / str(VERSION)
    if path.exists():
        raise FileExistsError(f"{path} already exists; remove it or choose another --out.")
    codec = GraphTextCodec(model)
    serving_default, translate_beam = _serving_functions(model, codec)
    texts = tf.TensorSpec([None], tf.string, name="texts")
    with without_cudnn(model):
        archive = keras.export.ExportArchive()
        archive.track(model)
        archive.track(codec.source_table)
        archive.add_endpoint("serving_default", serving_default, input_signature=[texts])
        archive.add_endpoint(
            "translate_beam", translate_beam,
            input_signature=[texts, tf.TensorSpec([], tf.int32, name="beam_size")],
        )
        archive.write_out(str(path), verbose=False)
    return path
