"""A translator trained twice from one seed on a slice of Tatoeba cmn-eng, in float32 and in
mixed_bfloat16 (``zoo.precision``), with ``zoo train``'s own code (``driver.train``, the
preset written unfinished: nothing is translated); one JSON line on stdout: each run's
validation loss, steps and seconds, and the mixed run's preset (float32, as every preset
loads) validated again in float32.

Run with ``KERAS_BACKEND=jax`` (tests/training/test_mixed_precision_training.py runs it
in a subprocess; docs/benchmarks.md#mixed-precision records a longer run):

    KERAS_BACKEND=jax python tests/mixed_precision_run.py OUT [PAIRS EPOCHS UNITS NOISE [RUNS]]

``RUNS``: the runs to make, by name, comma-separated (``mixed_bfloat16,mixed_bfloat16_seed_1``:
the mixed runs alone, when a change leaves float32's numbers as they were); all by default.
"""

import json
import sys
import time
from pathlib import Path

import keras
import numpy as np

import zoo
from zoo.data import tatoeba
from zoo.training import driver, loop, translation

RECIPE = {
    "name": "mixed_precision_check", "model": "AttentionSeq2Seq", "corpus": "cmn",
    "source_language": "zh", "target_language": "en",
    # Whole words (Chinese: characters) seen twice: a vocabulary learned alike for every
    # run (the WordPiece trainer's is not deterministic, and losses over other pieces
    # would not compare).
    "vocabulary": {"min_count": 2},
    "batch_size": 32, "learning_rate": 0.002, "label_smoothing": 0.1, "patience": 10,
    "max_train_tokens": 30, "seed": 0,
}


def data_folder(out, pairs):
    """A data folder whose Tatoeba cmn-eng holds ``pairs`` pairs spread evenly over the
    whole file (it is sorted short to long: every length is there)."""
    lines = tatoeba.corpus_path("cmn").read_text(encoding="utf-8").splitlines()
    picked = np.linspace(0, len(lines) - 1, pairs).astype(int)
    folder = Path(out) / "data"
    (folder / "tatoeba").mkdir(parents=True, exist_ok=True)
    (folder / "tatoeba" / "cmn-eng.tsv").write_text(
        "\n".join(lines[i] for i in picked) + "\n", encoding="utf-8")
    return folder


def train(recipe, data_dir, out):
    """``(preset folder, seconds, best validation loss as training logged it)``."""
    started = time.time()
    directory = driver.train(recipe, out_dir=out, data_dir=data_dir, log_dir=out / "logs",
                             choose_and_score=False, printer=lambda *_: None)
    metadata = zoo.describe(directory)
    return directory, time.time() - started, metadata["training"]["best_val_loss"]


def float32_validation_loss(directory, recipe, data_dir):
    """The validation loss of a preset as it loads (float32), over the same batches."""
    model = zoo.load(directory)
    task = translation.TranslationTask(driver.recipes.from_dict(recipe), data_dir=data_dir,
                                       printer=lambda *_: None)
    _, validation = task.datasets(model, task.read_splits(), recipe["seed"])
    translation.compile_for_training(model, label_smoothing=recipe["label_smoothing"])
    return loop.evaluator(model, {})(validation)["loss"], len(task.datasets(
        model, task.read_splits(), recipe["seed"])[0])


def main(out, pairs=3000, epochs=3, units=64, noise=0, only=""):
    """``noise=n``: both precisions from seeds 1 to n too, how far apart trainings of one
    precision end. ``only``: the names of the runs to make, comma-separated (all if
    empty)."""
    out = Path(out)
    data_dir = data_folder(out, pairs)
    recipe = {**RECIPE, "epochs": epochs,
              "model_config": {"embedding_dim": units, "units": units, "dropout": 0.1,
                               "max_source_length": 48, "max_output_length": 48}}
    results = {"backend": keras.backend.backend(), "pairs": pairs, "epochs": epochs,
               "units": units}
    runs = {"float32": {"precision": "float32"},
            "mixed_bfloat16": {"precision": "mixed_bfloat16"}}
    runs.update({f"{name}_seed_{seed}": {**changes, "seed": seed}
                 for seed in range(1, noise + 1) for name, changes in runs.items()})
    if only:
        chosen = only.split(",")
        unknown = [name for name in chosen if name not in runs]
        if unknown:
            raise SystemExit(f"No run named {', '.join(unknown)}; the runs are "
                             f"{', '.join(runs)} (seed n's with NOISE n or more).")
        runs = {name: runs[name] for name in chosen}
    for name, changes in runs.items():
        written = {**recipe, **changes}
        directory, seconds, logged = train(written, data_dir, out / name)
        reloaded, steps = float32_validation_loss(directory, written, data_dir)
        results[name] = {"val_loss_logged": logged, "val_loss_float32": reloaded,
                              "seconds": round(seconds, 1), "steps_per_epoch": steps,
                              "preset_dtypes": sorted({w.dtype.name for w in
                                                       zoo.load(directory).get_weights()}),
                              "target_vocabulary": zoo.load(directory).target_vocabulary_size}
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:6]), *sys.argv[6:7])
