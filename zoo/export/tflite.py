"""TFLite export for phones: builtin ops only, the whole decode loop inside.

Signatures of a translator (batch 1, any source length; ids of the preset's vocabularies):

- ``greedy(source_ids: int32[1, S]) -> {"tokens": int32[1, L]}``
- ``beam(source_ids: int32[1, S]) -> {"tokens": int32[1, L]}`` (beam width fixed at export)
- ``sample(source_ids: int32[1, S], uniforms: float32[L], temperature: float32[], top_k:
  int32[] (0: no cut), top_p: float32[] (1: no cut)) -> {"tokens": int32[1, L]}``: step t
  draws with ``uniforms[t]``; ``zoo.decoding.step_uniforms(seed, L, row)`` gives the
  numbers ``model.translate(..., sampling=True, seed=seed)`` uses for the text at
  position ``row`` (the hash's integer ops are not TFLite builtins: the app computes them)
- ``greedy_with_rules``, ``beam_with_rules(source_ids, no_repeat_ngram_size: int32[],
  min_length_ratio: float32[], max_length_ratio: float32[])``: ``model.translate``'s
  output rules (0 turns one off)

``L`` is the model's ``max_output_length``; a translation ends at its first
``[END]`` and is padded with ``[PAD]``. A language model exports one step with its
state as explicit input and output, ``step(token: int32[1], states: float32[S, 1, units])
-> {"logits", "states"}`` (the app samples); a classifier exports
``classify(ids: int32[1, T]) -> {"probabilities": float32[1, labels]}``. Beside
``NAME.tflite`` goes ``NAME.json``: tokenizer rules, vocabularies, special ids, all
a runner needs.

Why this route (measured with TF 2.21): the functions are traced at batch 1, where
the recurrences' loop buffers have static shapes and lower to builtin ops; they are
frozen before conversion, because variables read inside a ``while`` body would
survive as resource variables and fail at run time; the decoders write fixed
``[beam, L]`` buffers by position, because a growing loop tensor does not convert.
"""

import json
import tempfile
from pathlib import Path

import tensorflow as tf
from tensorflow.python.framework import convert_to_constants

from zoo._startup import CONVERSION_NOISE, native_stderr_without
from zoo.decoding import searches
from zoo.decoding.arguments import MAX_BEAM_SIZE
from zoo.export import QUANTIZATIONS, TFLITE_FORMATS, model_kind
from zoo.export.graph import without_cudnn
from zoo.layers import blocks
from zoo.text.codec import MAX_TEXT_LENGTH

SIGNATURES = ("greedy", "beam")


def _frozen(function):
    """A concrete function with every variable replaced by a constant."""
    concrete = function.get_concrete_function()
    return convert_to_constants.convert_variables_to_constants_v2(concrete)


def _translation_module(model, beam_size):
    """Signatures ``greedy``, ``beam``, ``sample`` and the two ``*_with_rules``: source
    ids in, token ids out (frozen decoders)."""
    model.require_preprocessor()
    source_ids = tf.TensorSpec([1, None], tf.int32, name="source_ids")
    sampling = [tf.TensorSpec([model.max_output_length], tf.float32, name="uniforms"),
                tf.TensorSpec([], tf.float32, name="temperature"),
                tf.TensorSpec([], tf.int32, name="top_k"),
                tf.TensorSpec([], tf.float32, name="top_p")]
    rules = [tf.TensorSpec([], tf.int32, name="no_repeat_ngram_size"),
             tf.TensorSpec([], tf.float32, name="min_length_ratio"),
             tf.TensorSpec([], tf.float32, name="max_length_ratio")]

    def with_rules(beam):
        def decode(ids, no_repeat_ngram_size, min_length_ratio, max_length_ratio):
            return model.generate_ids(ids, beam, rules={
                "no_repeat_ngram_size": no_repeat_ngram_size,
                "min_length_ratio": min_length_ratio, "max_length_ratio": max_length_ratio})[0]

        frozen = _frozen(tf.function(decode, input_signature=[source_ids, *rules],
                                     autograph=False))
        return tf.function(lambda source_ids, *values: {"tokens": frozen(source_ids, *values)[0]},
                           input_signature=[source_ids, *rules])

    greedy = _frozen(tf.function(
        lambda ids: model.generate_ids(ids)[0], input_signature=[source_ids], autograph=False))
    beam = _frozen(tf.function(
        lambda ids: model.generate_ids(ids, beam_size)[0], input_signature=[source_ids],
        autograph=False))
    # The seed is not an input: the runner computes the draws (zoo.decoding.step_uniforms).
    sample = _frozen(tf.function(
        lambda ids, uniforms, temperature, top_k, top_p: model.generate_samples(
            ids, temperature, 0, top_k, top_p, uniforms=uniforms[:, None])[0],
        input_signature=[source_ids, *sampling], autograph=False))
    module = tf.Module()
    module.greedy = tf.function(lambda source_ids: {"tokens": greedy(source_ids)[0]},
                                input_signature=[source_ids])
    module.beam = tf.function(lambda source_ids: {"tokens": beam(source_ids)[0]},
                              input_signature=[source_ids])
    module.sample = tf.function(
        lambda source_ids, uniforms, temperature, top_k, top_p: {
            "tokens": sample(source_ids, uniforms, temperature, top_k, top_p)[0]},
        input_signature=[source_ids, *sampling])
    module.greedy_with_rules, module.beam_with_rules = with_rules(1), with_rules(beam_size)
    return module, ("greedy", "beam", "sample", "greedy_with_rules", "beam_with_rules")


def _language_model_module(model, beam_size):
    """Signature ``step``: one character and the state in, logits and the next state out."""
    count = model.num_layers * model.states_per_layer
    token = tf.TensorSpec([1], tf.int32, name="token")
    states = tf.TensorSpec([count, 1, model.units], tf.float32, name="states")

    def step(token, states):
        logits, new_states = model.step(token, tf.unstack(states, num=count))
        return logits, tf.stack(new_states)

    frozen = _frozen(tf.function(step, input_signature=[token, states], autograph=False))
    module = tf.Module()
    module.step = tf.function(
        lambda token, states: dict(zip(("logits", "states"), frozen(token, states))),
        input_signature=[token, states])
    return module, ("step",)


def _classifier_module(model, beam_size):
    """Signature ``classify``: word ids ``[1, T]`` in, label probabilities ``[1, labels]`` out."""
    ids = tf.TensorSpec([1, None], tf.int32, name="ids")
    frozen = _frozen(tf.function(lambda ids: tf.nn.softmax(model(ids)), input_signature=[ids],
                                 autograph=False))
    module = tf.Module()
    module.classify = tf.function(lambda ids: {"probabilities": frozen(ids)[0]},
                                  input_signature=[ids])
    return module, ("classify",)


_MODULES = {"translation": _translation_module, "language_model": _language_model_module,
            "classifier": _classifier_module}


def convert(model, beam_size=5, quantize=None):
    """The .tflite flatbuffer (bytes) of a zoo model."""
    with (without_cudnn(model), blocks.whole_products(),
          tempfile.TemporaryDirectory() as staging):
        module, signature_names = _MODULES[model_kind(model)](model, beam_size)
        signatures = {name: getattr(module, name).get_concrete_function()
                      for name in signature_names}
        tf.saved_model.save(module, staging, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            staging, signature_keys=list(signature_names)
        )
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        if quantize is not None:
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            if quantize == "float16":
                converter.target_spec.supported_types = [tf.float16]
            else:
                # The tied target embedding feeds both GATHER and FULLY_CONNECTED.
                # Per-channel weights for the latter would store a second int8 copy
                # of the matrix (36% of the float32 file instead of 26%, measured);
                # per-tensor lets both share one, at no measured BLEU cost.
                converter._experimental_disable_per_channel_quantization_for_dense_layers = True
        with native_stderr_without(CONVERSION_NOISE):
            return converter.convert()


def runner_config(model, beam_size, quantize):
    """Everything besides the flatbuffer that a runner needs (written as NAME.json)."""
    kind = model_kind(model)
    return {"format": TFLITE_FORMATS[kind], **_RUNNER_CONFIGS[kind](model, beam_size, quantize),
            **model.require_preprocessor().runner_config()}


def _language_model_runner_config(model, beam_size, quantize):
    return {
        "quantize": quantize,
        "max_text_length": MAX_TEXT_LENGTH,
        "states": [model.num_layers * model.states_per_layer, 1, model.units],
    }


def _classifier_runner_config(model, beam_size, quantize):
    return {"quantize": quantize, "max_text_length": MAX_TEXT_LENGTH, "labels": model.labels}


def _translation_runner_config(model, beam_size, quantize):
    return {
        "max_output_length": model.max_output_length,
        "beam_size": beam_size,
        # The preset's defaults, compiled into greedy, beam and sample; a runner passes
        # them to the *_with_rules signatures under the rules a call sets.
        "output_rules": model.output_rules,
        "quantize": quantize,
        "max_text_length": MAX_TEXT_LENGTH,
        "signatures": {"greedy": "greedy", "beam": "beam", "sample": "sample",
                       "input": "source_ids", "output": "tokens",
                       "sample_inputs": ["uniforms", "temperature", "top_k", "top_p"],
                       "greedy_with_rules": "greedy_with_rules",
                       "beam_with_rules": "beam_with_rules",
                       "rules_inputs": ["no_repeat_ngram_size", "min_length_ratio",
                                        "max_length_ratio"]},
    }


def _beam_width(beam_size, search):
    """The width of the ``beam`` signature: for widths over 1 (greedy has its own), to every
    runtime's limit; a ``BeamSearch``'s own, which must return one translation."""
    if isinstance(search, searches.BeamSearch) and search.beam_size > 1:
        if search.returns_hypotheses:
            raise ValueError(f"A TFLite file's beam returns the best translation only; received "
                             f"{search!r} (the n best: model.translate or the SavedModel).")
        if beam_size not in (None, search.beam_size):
            raise ValueError(f"beam_size {beam_size!r} and {search!r} disagree; give one.")
        beam_size = search.beam_size
    beam_size = 5 if beam_size is None else beam_size
    if (not isinstance(beam_size, int) or isinstance(beam_size, bool)
            or not 2 <= beam_size <= MAX_BEAM_SIZE):
        raise ValueError(f"beam_size must be an integer from 2 to {MAX_BEAM_SIZE}; received "
                         f"{beam_size!r}.")
    return beam_size


_RUNNER_CONFIGS = {"translation": _translation_runner_config,
                   "language_model": _language_model_runner_config,
                   "classifier": _classifier_runner_config}


def export_tflite(model, directory, name, quantize=None, beam_size=None, search=None):
    """Write ``directory/name.tflite`` and ``directory/name.json``; returns the .tflite path.

    A translator's ``beam`` signature has the width ``beam_size`` (default 5), or that of
    ``search`` when it is a ``zoo.decoding.BeamSearch``; ``search`` (a ``zoo.decoding``
    search value) is also what ``TFLiteTranslator.translate`` runs when a call names none
    (written to NAME.json; default: greedy)."""
    if quantize is not None and quantize not in QUANTIZATIONS:
        raise ValueError(
            f"Unknown quantization {quantize!r}; accepted: {', '.join(QUANTIZATIONS)} "
            "(or none)."
        )
    if search is not None and model_kind(model) != "translation":
        raise ValueError(f"search is a translator's; this model is of kind {model_kind(model)}.")
    search = None if search is None else searches.chosen(search, None)
    beam_size = _beam_width(beam_size, search)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    flatbuffer = convert(model, beam_size, quantize)
    path = directory / f"{name}.tflite"
    path.write_bytes(flatbuffer)
    config = runner_config(model, beam_size, quantize)
    if search is not None:
        config["search"] = search.to_config()
    (directory / f"{name}.json").write_text(
        json.dumps(config, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    return path
