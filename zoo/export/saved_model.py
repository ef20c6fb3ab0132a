"""SavedModel export for TF Serving: a batch of strings in, a batch of strings out.

Everything runs inside the graph with core TensorFlow ops (regex rewrites, string
split, hash-table lookup, while loops), so the stock ``tensorflow/serving`` binary
and a plain ``tf.saved_model.load`` can run it without ``zoo`` installed:

- translation: ``serving_default(texts: string[B]) -> {"translations": string[B]}``
  (greedy, or the ``search`` given to the export: ``zoo.decoding.BeamSearch(5)``),
  ``translate_beam(texts: string[B], beam_size: int32[])`` and
  ``translate_n_best(texts, beam_size, num_hypotheses: int32[]) -> {"translations":
  string[B, n], "scores": float32[B, n]}`` (the beam's n best, best first) and
  ``translate_sample(texts, temperature: float32[], seed: int32[], top_k: int32[] (0: no
  cut), top_p: float32[] (1: no cut))`` (what ``model.translate(texts, sampling=True,
  ...)`` draws with that seed) and ``translate_with_rules(texts, beam_size,
  no_repeat_ngram_size: int32[], min_length_ratio: float32[], max_length_ratio:
  float32[])`` (``model.translate``'s output rules, each given: 0 turns one off; the
  other signatures keep the preset's defaults, ``model.output_rules``) and
  ``translate_with_prefix(texts, prefixes: string[B], beam_size)`` (``model.translate(texts,
  beam_size, prefix=prefixes)``);
- language model: ``serving_default(prompt: string[], length: int32[],
  temperature: float32[], seed: int32[], top_k: int32[] (0: no cut), top_p: float32[]
  (1: no cut)) -> {"text": string[]}`` (the continuation);
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
from zoo.layers import blocks
from zoo.text.preprocessor import checked_texts, lookup_table
from zoo.decoding import searches
from zoo.decoding.arguments import MAX_BEAM_SIZE, MAX_GENERATION_LENGTH, SMALLEST_TOP_P
from zoo.text.codec import EMPTY_PROMPT, MAX_TEXT_LENGTH

VERSION = 1


def _serving_functions(model, codec, search):
    def serving_default(texts):
        source_ids = codec.tokenize(texts)
        rows = tf.range(tf.shape(source_ids)[0])  # a sampling's draws follow each text's row
        ids = search.run(model, source_ids, search.feeds(rows), None, False, None)[0]
        return {"translations": codec.detokenize(source_ids, ids)}

    def searched(texts, beam_size, rules=None):
        with tf.control_dependencies(beam_checks(beam_size)):
            source_ids = codec.tokenize(texts)
        # Beam 1 takes the greedy path, exactly as model.translate(beam_size=1) does.
        ids = tf.cond(
            tf.equal(beam_size, 1),
            lambda: model.generate_ids(source_ids, rules=rules)[0],
            lambda: model.generate_ids(source_ids, beam_size, rules=rules)[0],
        )
        return {"translations": codec.detokenize(source_ids, ids)}

    def translate_beam(texts, beam_size):
        return searched(texts, beam_size)

    def translate_with_rules(texts, beam_size, no_repeat_ngram_size, min_length_ratio,
                             max_length_ratio):
        return searched(texts, beam_size, {
            "no_repeat_ngram_size": no_repeat_ngram_size, "min_length_ratio": min_length_ratio,
            "max_length_ratio": max_length_ratio})

    def translate_with_prefix(texts, prefixes, beam_size):
        return searched(texts, beam_size, {"prefix": codec.tokenize_targets(prefixes)})

    def translate_n_best(texts, beam_size, num_hypotheses):
        with tf.control_dependencies(n_best_checks(beam_size, num_hypotheses)):
            source_ids = codec.tokenize(texts)
        tokens, scores, _ = model.generate_hypotheses(source_ids, beam_size, num_hypotheses)
        # Decoded as B * n rows, each beside its own sentence's source.
        rows = tf.reshape(tokens, [-1, tf.shape(tokens)[-1]])
        sources = tf.repeat(source_ids, num_hypotheses, axis=0)
        texts_out = tf.reshape(codec.detokenize(sources, rows), tf.shape(scores))
        return {"translations": texts_out, "scores": scores}

    def translate_sample(texts, temperature, seed, top_k, top_p):
        with tf.control_dependencies(sampling_checks(temperature, seed, top_k, top_p)):
            source_ids = codec.tokenize(texts)
        ids, _ = model.generate_samples(source_ids, temperature, seed, top_k, top_p)
        return {"translations": codec.detokenize(source_ids, ids)}

    return (serving_default, translate_beam, translate_n_best, translate_sample,
            translate_with_rules, translate_with_prefix)


# The checks of zoo.decoding.arguments' rules in graph ops (InvalidArgumentError, which TF Serving
# answers with 400 and the message); tests run them eagerly against the Python rules.

def sampling_checks(temperature, seed, top_k, top_p):
    return [
        # The rule of zoo.decoding.arguments.check_temperature_and_seed: finite and >= 0 (inf would
        # divide every logit to 0 and draw uniformly; NaN fails the second check).
        tf.debugging.assert_all_finite(temperature, message="temperature must be finite"),
        tf.debugging.assert_non_negative(temperature, message="temperature must be >= 0"),
        tf.debugging.assert_non_negative(seed, message="seed must be >= 0"),
        tf.debugging.assert_non_negative(top_k, message="top_k must be >= 0 (0: no cut)"),
        # Python's rule (arguments.check_sampling_filters) as the graph reads it: a
        # subnormal top_p is 0 to TensorFlow's CPU kernels, and refused on any device.
        tf.debugging.assert_greater_equal(
            top_p, SMALLEST_TOP_P,
            message=f"top_p must be in (0, 1], at least {SMALLEST_TOP_P:.8g}"),
        tf.debugging.assert_less_equal(top_p, 1.0, message="top_p must be in (0, 1]"),
    ]


def beam_checks(beam_size):
    return [
        tf.debugging.assert_greater_equal(beam_size, 1, message=f"beam_size must be an "
                                          f"integer from 1 to {MAX_BEAM_SIZE}"),
        tf.debugging.assert_less_equal(beam_size, MAX_BEAM_SIZE, message=f"beam_size must be "
                                       f"an integer from 1 to {MAX_BEAM_SIZE}"),
    ]


def n_best_checks(beam_size, num_hypotheses):
    return beam_checks(beam_size) + [
        tf.debugging.assert_greater_equal(
            num_hypotheses, 1, message="num_hypotheses must be at least 1"),
        tf.debugging.assert_less_equal(
            num_hypotheses, beam_size, message="num_hypotheses must be at most beam_size"),
    ]


def generation_checks(length, temperature, seed, top_k, top_p):
    return [
        tf.debugging.assert_less_equal(
            length, MAX_GENERATION_LENGTH,
            message=f"length must be an integer from 0 to {MAX_GENERATION_LENGTH:,}"),
        tf.debugging.assert_non_negative(
            length, message=f"length must be an integer from 0 to {MAX_GENERATION_LENGTH:,}"),
        *sampling_checks(temperature, seed, top_k, top_p),
    ]


def _translation_endpoints(model, search=None):
    """``serving_default(texts)`` (with ``search``, a ``zoo.decoding`` search value;
    default: greedy), ``translate_beam(texts, beam_size)``, ``translate_n_best(texts,
    beam_size, num_hypotheses) -> {"translations": string[B, n], "scores": float32[B, n]}``,
    ``translate_sample``, ``translate_with_rules`` and ``translate_with_prefix``."""
    codec = model.require_preprocessor().graph()
    (serving_default, translate_beam, translate_n_best, translate_sample, translate_with_rules,
     translate_with_prefix) = _serving_functions(model, codec, served_search(search))
    texts = tf.TensorSpec([None], tf.string, name="texts")
    beam_size = tf.TensorSpec([], tf.int32, name="beam_size")
    return codec.resources, {
        "serving_default": (serving_default, [texts]),
        "translate_beam": (translate_beam, [texts, beam_size]),
        "translate_n_best": (translate_n_best, [
            texts, beam_size, tf.TensorSpec([], tf.int32, name="num_hypotheses")]),
        "translate_sample": (translate_sample, [
            texts, tf.TensorSpec([], tf.float32, name="temperature"),
            tf.TensorSpec([], tf.int32, name="seed"), tf.TensorSpec([], tf.int32, name="top_k"),
            tf.TensorSpec([], tf.float32, name="top_p")]),
        "translate_with_rules": (translate_with_rules, [
            texts, beam_size, tf.TensorSpec([], tf.int32, name="no_repeat_ngram_size"),
            tf.TensorSpec([], tf.float32, name="min_length_ratio"),
            tf.TensorSpec([], tf.float32, name="max_length_ratio")]),
        "translate_with_prefix": (translate_with_prefix, [
            texts, tf.TensorSpec([None], tf.string, name="prefixes"), beam_size]),
    }


def served_search(search):
    """The search of a translator's ``serving_default``: a request gives texts alone, so the
    search must give one translation (not the n best: ``translate_n_best``) and the same
    one to the same request (a sampling with its seed)."""
    search = searches.chosen(search, searches.GreedySearch())
    if search.returns_hypotheses:
        raise ValueError(f"serving_default returns one translation per text; received "
                         f"{search!r} (the n best are the translate_n_best signature's).")
    if isinstance(search, searches.RandomSampling) and search.seed is None:
        raise ValueError(f"serving_default must answer a request as it answered it before: "
                         f"give the sampling a seed; received {search!r}.")
    return search


def _language_model_endpoints(model, search=None):
    """``serving_default(prompt, length, temperature, seed, top_k, top_p) -> {"text"}``
    (the continuation)."""
    characters = model.require_preprocessor().characters
    table = lookup_table(characters, -1)
    characters = tf.constant(characters)

    def generate(prompt, length, temperature, seed, top_k, top_p):
        split = tf.strings.unicode_split(checked_texts(prompt), "UTF-8")
        split = tf.cond(tf.size(split) > 0, lambda: split, lambda: tf.constant([EMPTY_PROMPT]))
        ids = tf.cast(table.lookup(split), tf.int32)
        checks = [
            tf.debugging.assert_non_negative(
                ids, message="the prompt contains characters this model was not trained on"),
            *generation_checks(length, temperature, seed, top_k, top_p),
        ]
        with tf.control_dependencies(checks):
            generated = model.generate_ids(ids[None], length, temperature, seed, top_k, top_p)
        return {"text": tf.strings.reduce_join(tf.gather(characters, generated[0]))}

    return [table], {"serving_default": (generate, [
        tf.TensorSpec([], tf.string, name="prompt"), tf.TensorSpec([], tf.int32, name="length"),
        tf.TensorSpec([], tf.float32, name="temperature"), tf.TensorSpec([], tf.int32, name="seed"),
        tf.TensorSpec([], tf.int32, name="top_k"), tf.TensorSpec([], tf.float32, name="top_p"),
    ])}


def _classifier_endpoints(model, search=None):
    """``serving_default(texts) -> {"labels": string[B], "probabilities": float[B, labels]}``."""
    codec = model.require_preprocessor().graph()
    labels = tf.constant(model.labels)

    def classify(texts):
        probabilities = tf.nn.softmax(model(codec.tokenize(texts)))
        return {"labels": tf.gather(labels, tf.argmax(probabilities, axis=-1)),
                "probabilities": probabilities}

    return codec.resources, {
        "serving_default": (classify, [tf.TensorSpec([None], tf.string, name="texts")])}


_ENDPOINTS = {"translation": _translation_endpoints, "language_model": _language_model_endpoints,
              "classifier": _classifier_endpoints}


def export_saved_model(model, directory, name, search=None):
    """Write ``directory/name/1/`` (TF Serving's layout); returns that path. ``search``: a
    translator's ``serving_default`` search (``zoo.decoding``; default: greedy)."""
    path = Path(directory) / name / str(VERSION)
    if path.exists():
        raise FileExistsError(f"{path} already exists; remove it or choose another --out.")
    kind = model_kind(model)
    if search is not None and kind != "translation":
        raise ValueError(f"search is a translator's; this model is of kind {kind}.")
    resources, endpoints = _ENDPOINTS[kind](model, search)
    with without_cudnn(model), blocks.whole_products():
        archive = keras.export.ExportArchive()
        archive.track(model)
        for resource in resources:
            archive.track(resource)
        for endpoint, (function, signature) in endpoints.items():
            archive.add_endpoint(endpoint, function, input_signature=signature)
        archive.write_out(str(path), verbose=False)
    return path
