"""zoo: the classic sequence models (RNN, LSTM, GRU, Seq2Seq, Bahdanau attention) for Keras 3.

    import zoo
    zoo.list_models()                 # the pretrained presets that ship with zoo
    model = zoo.load("NAME")          # a Keras model, ready for predict / compile / fit
    zoo.layers.LSTM(256)              # drop-in for keras.layers.LSTM

TensorFlow is imported on first use of ``zoo.layers`` or ``zoo.load``, so that
``zoo.list_models()`` and ``zoo.describe()`` stay quick; its start-up notices (CUDA
probing on a machine without a GPU, CPU-feature notes) are filtered out then, as in the
CLI (``zoo._startup``).
"""

import importlib
from importlib import metadata

from zoo import _startup

_startup.quiet_first_tensorflow_import()

from zoo.presets import PresetError, describe, list_models  # noqa: E402


def load(name_or_directory):
    """Load a preset (a name, as ``list_models()`` gives it, or a preset folder), or a
    ``.keras`` file, as a built Keras model with its weights and text pipeline."""
    from zoo.models import preset_model

    return preset_model.load(name_or_directory)

try:  # the installed distribution's version, as pip reports it
    __version__ = metadata.version("keras-sequence-zoo")
except metadata.PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"
__all__ = ["list_models", "describe", "load", "PresetError", "layers", "models", "export"]

_LAZY_SUBMODULES = {"layers", "models", "decoding", "benchmarks", "export"}


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"zoo.{name}")
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")
