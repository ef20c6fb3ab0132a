"""What a trained preset ships with: it is saved, loaded back and scored as it ships,
and its metadata records how it was trained."""

import os
import platform
import time

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


def card_training_lines(metadata, sizes_key):
    """The model card's "Training" section (every kind of preset)."""
    training, data = metadata["training"], metadata["data"]
    return [
        "## Training",
        "",
        f"- command: `{training['command']}`",
        f"- data: {data.get('file') or data.get('generator') or 'the mix above'} "
        f"({data[sizes_key]}); split {data['split']}",
        f"- epochs: {training['epochs_run']} (best {training['best_epoch']}), wall time "
        f"{training['wall_time_seconds'] / 60:.0f} min on {training['machine']}",
        f"- weights stored as {metadata['weights_dtype']}; file size "
        f"{metadata.get('size_bytes', 0) / 1e6:.1f} MB",
    ] + ([f"- checkpoint averaging: {averaging_summary(training['checkpoint_averaging'])}"]
         if "checkpoint_averaging" in training else []) + (
        [f"- note: {training['note']}"] if "note" in training else [])


def averaging_summary(averaging):
    """Checkpoint averaging's choice in one line (``driver._average_if_better``'s record)."""
    epochs, count = averaging["epochs_averaged"], averaging["average_last"]
    ran = f"; only {len(epochs)} epochs ran" if len(epochs) < count else ""
    figures = ", ".join(f"{name} {values['average']} averaged, {values['final']} final"
                        for name, values in averaging.items() if name.startswith("val_"))
    ships = {"average": "the average ships", "final": "the final weights ship"}[
        averaging["shipped"]]
    return (f"the mean of the weights of epochs {', '.join(map(str, epochs))} (average_last "
            f"{count}{ran}) against the final weights: {figures}; {ships} (chosen on "
            f"{averaging['chosen_by']})")


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
