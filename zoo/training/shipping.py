"""What a trained preset ships with: it is saved, loaded back and scored as it ships,
and its metadata records how it was trained."""

import os
import platform
import time
from pathlib import Path

import importlib.metadata

import keras

import zoo
from zoo import presets


def training_record(recipe, command, started, epochs_run, best_epoch):
    """How a preset was trained, for its metadata (the recipe as it was written)."""
    return {
        "recipe": recipe.written,
        "command": command or "zoo train " + recipe.name,
        "epochs_run": epochs_run,
        "best_epoch": best_epoch,
        "wall_time_seconds": round(time.time() - started),
        "machine": machine(),
    }


def machine():
    backend = keras.backend.backend()
    framework = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch"}.get(backend, backend)
    gpu = "GPU" if _has_gpu() else "no GPU"
    return (f"{platform.machine()}, {os.cpu_count()} CPU cores, {platform.system()}; "
            f"{framework} {importlib.metadata.version(backend)}, Keras {keras.__version__}; "
            f"{gpu}")


def _has_gpu():
    if keras.backend.backend() == "torch":  # Keras' distribution API is not there
        import torch

        return torch.cuda.is_available()
    devices = " ".join(keras.distribution.list_devices()).lower()
    return "gpu" in devices or "cuda" in devices


# The metadata key of a preset written as trained, before its decoding is chosen and its
# test splits scored (``zoo train --no-finish``); its value says how to finish it.
UNFINISHED = "unfinished"


def ship_unfinished(model, out_dir, metadata):
    """Save a trained preset as it is, marked ``UNFINISHED`` (its card says so too)."""
    name = metadata["training"]["recipe"]["name"]
    metadata = {**metadata, UNFINISHED: f"trained, not yet judged: `zoo train {name} "
                                        f"--retune-decoding --out {out_dir}` chooses its "
                                        f"decoding on validation and scores its test splits"}
    card = (f"# {Path(out_dir).name}\n\n{metadata.get('description', '')}\n\n"
            f"This preset is {metadata[UNFINISHED]}.\n")
    return presets.save(model, out_dir, metadata=metadata, card=card,
                        weights_dtype=metadata["weights_dtype"])


def ship(model, out_dir, metadata, score, card):
    """Save a preset, score what ships, and save it again with its scores and card.

    What ships is scored -- the preset loaded back, its weights in the dtype they are
    stored in -- not the model in memory. ``score(shipped)`` returns the metadata to
    add (scores and ``headline``); ``card(metadata)`` writes the model card.
    """
    weights_dtype = metadata["weights_dtype"]
    directory = presets.save(model, out_dir, metadata=metadata, weights_dtype=weights_dtype)
    shipped = zoo.load(directory)
    metadata = {**presets.describe(directory), **score(shipped)}
    presets.save(shipped, directory, metadata=metadata, card=card(metadata),
                 weights_dtype=weights_dtype)
    return directory
