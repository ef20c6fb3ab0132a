"""SavedModel export for TF Serving: a batch of strings in, a batch of strings out.

Everything runs inside the graph with core TensorFlow ops (regex rewrites, string
split, hash-table lookup, while loops), so the stock ``tensorflow/serving`` binary
and a plain ``tf.saved_model.load`` can run it without ``zoo`` installed:

- translation: ``serving_default(texts: string[B]) -> {"translations": string[B]}``
  (greedy) and ``translate_beam(texts: string[B], beam_size: int32[])``;
- language model: ``serving_default(prompt: string[], length: int32[],
  temperature: float32[], seed: int32[]) -> {"text": string[]}`` (the continuation);
- classifier: ``serving_default(texts: string[B]) -> {"labels": string[B],
  "probabilities": float32[B, labels]}``.

Text is processed by the models' preprocessors in graph ops (for a translator
``zoo.text.TranslationPreprocessor.graph()``: the word rules and WordPiece), the same
rules that the Python code runs, so a SavedModel answers exactly what the Keras
model does.
"""

from pathlib import Path

import keras
import tensorflow as tf

from zoo.export import model_kind
from zoo.export.graph import without_cudnn
from zoo.text.preprocessor import checked_texts, lookup_table
from zoo.text.codec import EMPTY_PROMPT, MAX_GENERATION_LENGTH, MAX_TEXT_LENGTH

MAX_BEAM_SIZE = 64
VERSION = 1


def _serving_functions(model, codec):
    def serving_default(texts):
        source_ids = codec.encode(texts)
        ids, _ = model.generate_ids(source_ids)
        return {"translations": codec.decode(source_ids, ids)}

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
        return {"translations": codec.decode(source_ids, ids)}

    return serving_default, translate_beam


def _translation_endpoints(model):
    """``serving_default(texts)`` and ``translate_beam(texts, beam_size)``."""
    codec = model._require_preprocessor().graph()
    serving_default, translate_beam = _serving_functions(model, codec)
    texts = tf.TensorSpec([None], tf.string, name="texts")
    return codec.resources, {
        "serving_default": (serving_default, [texts]),
        "translate_beam": (translate_beam, [texts, tf.TensorSpec([], tf.int32, name="beam_size")]),
    }


def _language_model_endpoints(model):
    """``serving_default(prompt, length, temperature, seed) -> {"text"}`` (the continuation)."""
    characters = model._require_preprocessor().characters
    table = lookup_table(characters, -1)
    characters = tf.constant(characters)

    def generate(prompt, length, temperature, seed):
        split = tf.strings.unicode_split(checked_texts(prompt), "UTF-8")
        split = tf.cond(tf.size(split) > 0, lambda: split, lambda: tf.constant([EMPTY_PROMPT]))
        ids = tf.cast(table.lookup(split), tf.int32)
        checks = [
            tf.debugging.assert_non_negative(
                ids, message="the prompt contains characters this model was not trained on"),
            tf.debugging.assert_less_equal(
                length, MAX_GENERATION_LENGTH,
                message=f"length must be from 0 to {MAX_GENERATION_LENGTH}"),
            tf.debugging.assert_non_negative(length, message="length must be from 0"),
            tf.debugging.assert_non_negative(temperature, message="temperature must be >= 0"),
            tf.debugging.assert_non_negative(seed, message="seed must be >= 0"),
        ]
        with tf.control_dependencies(checks):
            generated = model.generate_ids(ids[None], length, temperature, seed)
        return {"text": tf.strings.reduce_join(tf.gather(characters, generated[0]))}

    return [table], {"serving_default": (generate, [
        tf.TensorSpec([], tf.string, name="prompt"), tf.TensorSpec([], tf.int32, name="length"),
        tf.TensorSpec([], tf.float32, name="temperature"), tf.TensorSpec([], tf.int32, name="seed"),
    ])}


def _classifier_endpoints(model):
    """``serving_default(texts) -> {"labels": string[B], "probabilities": float[B, labels]}``."""
    codec = model._require_preprocessor().graph()
    labels = tf.constant(model.labels)

    def classify(texts):
        probabilities = tf.nn.softmax(model(codec.encode(texts)))
        return {"labels": tf.gather(labels, tf.argmax(probabilities, axis=-1)),
                "probabilities": probabilities}

    return codec.resources, {
        "serving_default": (classify, [tf.TensorSpec([None], tf.string, name="texts")])}


_ENDPOINTS = {"translation": _translation_endpoints, "language_model": _language_model_endpoints,
              "classifier": _classifier_endpoints}


def export_saved_model(model, directory, name):
    """Write ``directory/name/1/`` (TF Serving's layout); returns that path."""
    path = Path(directory) / name / str(VERSION)
    if path.exists():
        raise FileExistsError(f"{path} already exists; remove it or choose another --out.")
    resources, endpoints = _ENDPOINTS[model_kind(model)](model)
    with without_cudnn(model):
        archive = keras.export.ExportArchive()
        archive.track(model)
        for resource in resources:
            archive.track(resource)
        for endpoint, (function, signature) in endpoints.items():
            archive.add_endpoint(endpoint, function, input_signature=signature)
        archive.write_out(str(path), verbose=False)
    return path
