"""The driver: a recipe in, a scored preset out, the same steps for every task.

Read the splits, learn the text pipeline from the training split, then for each seed:
seed everything, build the model in the strategy's scope (and the recipe's
``precision``: ``zoo.precision``; what ships is float32), make the datasets, compile,
and fit with ``loop.fit`` (progress lines, TensorBoard logs, early stopping with the
best weights restored, checkpoints to resume from), then, with the recipe's
``average_last``, keep the mean of the last epochs' weights where it validates better.
The best seed on validation is described, shipped and scored as it ships
(``shipping.ship``). What differs between tasks is in their ``Task`` (``translation``,
``language_model``, ``classification``).

The parts: a task's datasets are ``loop.EpochData``, batches of numpy arrays that are a
function of the epoch (``tf.data`` appears only inside ``loop.fit``, which adapts them);
the distribution strategy and the checkpoints come in ``loop.Options``.
"""

import json
import shutil
import time
from pathlib import Path

import keras
import numpy as np

from zoo import precision, presets
from zoo.evaluation import cards
from zoo.files import staging_folder
from zoo.training import callbacks, loop, recipes, shipping
from zoo.training.classification import ClassificationTask
from zoo.training.language_model import LanguageModelTask
from zoo.training.translation import GeneratedTask, TranslationTask

RUN_FILE = "run.json"  # which run a checkpoint folder's text pipeline belongs to
TASKS = {
    "translation": TranslationTask,
    "date_normalization": GeneratedTask,
    "addition": GeneratedTask,
    "language_model": LanguageModelTask,
    "classifier": ClassificationTask,
}


def task_of(recipe_or_metadata):
    """The ``Task`` class of a recipe, or of a preset's metadata."""
    name = recipes.task_name(getattr(recipe_or_metadata, "task", None)
                             or recipe_or_metadata.get("task", "translation"))
    if name not in TASKS:
        raise ValueError(f"No task {name!r} in zoo.training; known: {', '.join(TASKS)}.")
    return TASKS[name]


def train(recipe, out_dir=None, epochs=None, data_file=None, data_dir=None, log_dir=None,
          command=None, tfds_name=None, printer=print, options=None, choose_and_score=True,
          task=None):
    """Train a preset from a recipe (a ``recipes.Recipe`` or a dict); returns its directory.

    By default on the recipe's corpus into ``saved_models/NAME``; with ``data_file`` (a
    file of the task's examples) or ``tfds_name`` (a tensorflow-datasets translation
    corpus) the same architecture is trained on other data and ``out_dir`` is required.
    ``options`` (``loop.Options``): the ``tf.distribute`` strategy and the checkpoints to
    resume from. ``choose_and_score=False`` (``zoo train --no-finish``): the preset is
    written as trained, its decoding not chosen nor its test split scored (``finish``).
    ``task``: a ``Task`` of the recipe made elsewhere (``packs.PackedTranslationTask``
    reads a pack's token ids, where the corpora are not at hand).
    """
    started = time.time()
    recipe = recipes.from_dict(recipe)
    task_class = task_of(recipe)
    if tfds_name and task_class is not TranslationTask:
        raise ValueError(f"--tfds applies to translation recipes; {recipe.name} is a "
                         f"{recipe.task} recipe.")
    if not choose_and_score and task_class is not TranslationTask:
        raise ValueError(f"--no-finish applies to translation recipes (their decoding is "
                         f"chosen and scored by translating); {recipe.name} is a "
                         f"{recipe.task} recipe, scored in moments as it ships.")
    if (data_file or tfds_name) and not out_dir:
        raise ValueError("Training on other data needs an output directory (--out DIR).")
    if task is not None:
        recipe = task.recipe
    elif tfds_name:
        task = TranslationTask.on_tfds(recipe, tfds_name, printer)
    else:
        task = task_class(recipe, data_file, data_dir, printer)
    options = options or loop.Options()
    splits = task.read_splits()
    empty = [name for name, size in task.split_sizes(splits).items() if not size]
    if empty:
        raise ValueError(f"The data leaves the {' and '.join(empty)} split(s) empty; "
                         f"{recipe.name} needs examples in train, validation and test.")
    preprocessor = _text_pipeline(task, splits, options)
    runs = {seed: _fit(task, preprocessor, splits, seed, epochs, log_dir, options, first=i == 0)
            for i, seed in enumerate(task.recipe.seeds_to_train())}
    choose = _best_of(task.monitor)
    seed = choose(runs, key=lambda s: choose(runs[s][1][task.monitor]))
    model, history, averaging, stopped = runs[seed]
    best_epoch = int(np.argmax(history[task.monitor]) if choose is max
                     else np.argmin(history[task.monitor])) + 1
    record = {**shipping.training_record(task.recipe, command, started,
                                         len(history[task.monitor]), best_epoch),
              **task.training_summary(history)}
    if averaging:
        record["checkpoint_averaging"] = averaging
    if stopped:
        record["stopped_at_deadline"] = stopped
    if _seeds_apart(task):
        record["seed"] = seed
        record[f"best_{task.monitor}_by_seed"] = {
            str(s): task.best_of_history(h) for s, (_, h, _, _) in runs.items()}
    directory = finish(task, model, splits, record,
                       Path(out_dir or presets.presets_root() / recipe.name), choose_and_score)
    options.remove_checkpoints()  # the preset is written: a new run starts afresh
    return directory


def finish(task, model, splits, record, out_dir, choose_and_score=True):
    """Write a trained model as a preset: described (``record``: how it was trained),
    its decoding chosen on validation (``Task.choose_decoding``), shipped and scored as
    it ships (``shipping.ship``). What ``train`` does after fitting, and what
    ``training/device_run.py finish`` does with weights trained elsewhere.

    ``choose_and_score=False`` writes the preset as trained, marked unfinished
    (``shipping.UNFINISHED``): nothing slow runs (no search on validation, no test
    translation), and ``zoo train NAME --retune-decoding`` finishes it later.
    """
    metadata = task.describe(model, splits, record)
    if not choose_and_score:
        return shipping.ship_unfinished(model, out_dir, metadata)
    metadata.update(task.choose_decoding(model, splits))
    return shipping.ship(model, out_dir, metadata, lambda shipped: task.score(shipped, splits),
                         task.card)


def _text_pipeline(task, splits, options):
    """The text pipeline learned from the training split, kept beside the checkpoints: a
    resumed run reads text into the ids the interrupted one trained on (a vocabulary
    learned again may differ: the WordPiece trainer is not deterministic,
    huggingface/tokenizers#1794)."""
    if not options.checkpoint_dir:
        return task.build_preprocessor(splits)
    folder, run = Path(options.checkpoint_dir) / "text", {"recipe": task.recipe.written,
                                                           "data": task.data_name}
    run = json.loads(json.dumps(run))  # as it reads back
    if (folder / RUN_FILE).is_file():
        if json.loads((folder / RUN_FILE).read_text()) != run:
            raise loop.CheckpointMismatch(
                f"{options.checkpoint_dir} holds the checkpoint of another run (its recipe or "
                f"data differ from this command's); delete that folder to start afresh, or "
                f"choose another with --checkpoint-dir.")
        return task.preprocessor_class.from_directory(folder)
    preprocessor = task.build_preprocessor(splits)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = staging_folder(folder.parent, prefix=".text-")
    preprocessor.save(staging)
    (staging / RUN_FILE).write_text(json.dumps(run), encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return preprocessor


def _best_of(monitor):
    """``max`` for a figure that grows with quality (accuracy), else ``min`` (a loss)."""
    return max if monitor.endswith("accuracy") else min


def _fit(task, preprocessor, splits, seed, epochs, log_dir, options, first):
    """One training from ``seed``: ``(model with its best weights, history, checkpoint
    averaging's record or None, where a deadline stopped it or None)``: the best weights
    are early stopping's, or the average of the last epochs' (``_average_if_better``).
    Seeds kept apart (``_seeds_apart``) each have their own checkpoints and logs
    (``seed_N``)."""
    recipe = task.recipe
    # (``epochs`` as asked, None for the recipe's: a checkpoint's run is identified so)
    description = {"recipe": recipe.written, "epochs": epochs, "data": task.data_name}
    epochs = epochs or recipe.epochs
    log_dir = Path(log_dir or Path("runs") / recipe.name)
    if _seeds_apart(task):
        description["seed"] = seed
        options, log_dir = options.part(f"seed_{seed}"), log_dir / f"seed_{seed}"
    keras.utils.set_random_seed(seed)
    with options.scope(), precision.policy(recipe.precision):
        model = task.build_model(preprocessor)
    if first:
        task.printer(task.summary(splits, preprocessor, model))
    train_data, validation_data = task.datasets(model, splits, seed)
    with options.scope(), precision.policy(recipe.precision):
        trained = task.training_view(model)  # the same weights as model's
        task.compile(trained, len(train_data), epochs)
    fit_callbacks = callbacks.standard_callbacks(recipe, log_dir, task.monitor,
                                                 task.reduce_on_plateau())
    deadline = callbacks.StopAtDeadline(options.deadline) if options.deadline else None
    fit_callbacks += [deadline] if deadline else []
    history = loop.fit(trained, train_data, epochs, validation_data, fit_callbacks,
                       description, options, validation_metrics=task.validation_metrics)
    averaging = next((c for c in fit_callbacks if isinstance(c, callbacks.AverageLastEpochs)),
                     None)
    if _seeds_apart(task):
        task.printer(task.seed_line(seed, history))
    stopped = deadline.stopped_at if deadline else None
    if stopped:
        task.printer(f"stopped at the deadline: epoch {stopped['epoch']} after "
                     f"{stopped['steps']} of its {len(train_data)} steps")
    if averaging is not None:
        averaging = _average_if_better(task, trained, averaging, validation_data)
    # Trained in mixed precision or not, the model is chosen, scored and shipped in float32.
    return precision.copy_in(model, "float32"), history, averaging, stopped


def _average_if_better(task, trained, averaging, validation_data):
    """Checkpoint averaging: the final weights (early stopping's best) and the mean of
    the kept epochs' weights, each validated as training validates (``loop.evaluator``
    on its validation data); the average stays in ``trained`` if it is better on the
    task's monitor, else the final weights do. Returns the record for the metadata."""
    final = trained.get_weights()
    figures = {"final": _validation_figures(task, trained, validation_data)}
    trained.set_weights(averaging.average())
    figures["average"] = _validation_figures(task, trained, validation_data)
    monitor = task.monitor  # (on a tie, min and max keep the first: the final weights)
    shipped = _best_of(monitor)(figures, key=lambda which: figures[which][monitor])
    if shipped == "final":
        trained.set_weights(final)
    record = {"average_last": averaging.count, "epochs_averaged": list(averaging.kept_epochs),
              **{name: {which: round(values[name], 4) for which, values in figures.items()}
                 for name in dict.fromkeys(("val_loss", monitor))},
              "chosen_by": monitor, "shipped": shipped}
    task.printer(f"checkpoint averaging: {cards.averaging_summary(record)}")
    return record


def _validation_figures(task, trained, validation_data):
    """``{"val_loss": ..., "val_NAME": ...}`` of the weights in ``trained``, as the
    training logs them after every epoch."""
    results = loop.evaluator(trained, task.validation_metrics or {})(validation_data)
    return {f"val_{name}": value for name, value in results.items()}


def _seeds_apart(task):
    """Whether the runs of each seed are kept and recorded apart: for a recipe that lists
    its ``seeds``, and always for the tasks that do so (``Task.seeds_apart``)."""
    return task.seeds_apart or task.recipe.seeds is not None
