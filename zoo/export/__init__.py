"""Exports: derived artifacts for serving, written by ``zoo export``.

Two formats, one registry (keyed like ``zoo export --format``):

- ``saved_model``: TF Serving's layout ``DIR/NAME/1/``; strings in, strings out --
  tokenization, encoder, decode loop and detokenization all in one graph.
- ``tflite``: ``DIR/NAME.tflite`` (token ids in, token ids out, builtin ops only,
  greedy and beam search inside) and ``DIR/NAME.json`` (the tokenizer rules and
  vocabularies a phone needs). ``TFLiteTranslator`` runs it with LiteRT alone.

The exporters need Keras on TensorFlow (a preset trained on JAX or PyTorch exports
from there: presets are backend-neutral); TensorFlow is imported only by them: ``TFLiteTranslator`` needs just
``ai_edge_litert`` and numpy, as a mobile app would.
"""

import importlib
import os
from pathlib import Path

FORMATS = {
    "saved_model": ("zoo.export.saved_model", "export_saved_model"),
    "tflite": ("zoo.export.tflite", "export_tflite"),
}
QUANTIZATIONS = ("float16", "dynamic")
# Each kind of model (``zoo.models.KINDS``): the "format" field of its TFLite NAME.json,
# and the LiteRT runner that reads it (``zoo.export.runner``).
TFLITE_FORMATS = {"translation": "zoo-tflite-translator/1",
                  "language_model": "zoo-tflite-language-model/1",
                  "classifier": "zoo-tflite-classifier/1"}
RUNNERS = {"translation": "TFLiteTranslator", "language_model": "TFLiteLanguageModel",
           "classifier": "TFLiteClassifier"}


def model_kind(model):
    """The model's kind (``zoo.models.KINDS``): what each exporter writes."""
    from zoo.models import preset_model

    try:
        return preset_model.kind_of(model)
    except ValueError as error:
        raise ValueError(f"Cannot export it: {error}") from None


def export(model, format, directory, name=None, **options):
    """Export a model (or a preset name) in ``format``; returns the path written.

    Options: ``quantize`` (TFLite: ``"float16"`` or ``"dynamic"``) and ``beam_size``
    (TFLite: the beam width compiled into the ``beam`` signature, default 5).
    """
    if format not in FORMATS:
        raise ValueError(
            f"Unknown export format {format!r}; available: {', '.join(FORMATS)}."
        )
    from zoo import backend

    backend.require_tensorflow(f"Exporting ({format})")
    if isinstance(model, (str, os.PathLike)):
        import zoo

        name = name or Path(model).name  # a preset's name, or its folder's
        model = zoo.load(model)
    if not name or Path(name).name != name:
        raise ValueError(
            f"An export's name must be a plain file name; received {name!r} "
            "(give name=..., or pass a preset name as model)."
        )
    module_name, function_name = FORMATS[format]
    exporter = getattr(importlib.import_module(module_name), function_name)
    return exporter(model, directory, name, **options)


def __getattr__(name):
    if name in RUNNERS.values():
        from zoo.export import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'zoo.export' has no attribute {name!r}")
