"""One training loop for every ``tf.distribute`` strategy, resumable after a crash.

Why not ``model.fit``: under ``MultiWorkerMirroredStrategy``, Keras 3's ``fit`` (TF 2.21)
fails before its first step with "Attempt to convert a value (PerReplica:...)" (its
symbolic build reduces a distributed batch eagerly). This loop runs Keras' own
``model.train_step`` (compiled loss, optimizer, gradient clipping: the step ``fit``
runs) inside ``strategy.run``, so the default strategy, ``mirrored`` (several devices
on one host) and ``multi_worker`` (several hosts, ``TF_CONFIG``) share one code path.
It drives the usual Keras callbacks (early stopping, learning-rate schedules,
TensorBoard, the progress lines of ``fit(verbose=2)``).

Every replica gets an equal slice of each global batch, so the replicas together
take the step single-device training takes on that batch.

Resuming: after every epoch and every ``checkpoint_every`` steps, the model's and the
optimizer's variables (dropout seeds and the step counter included), the epoch and
step, the history and the callbacks' state (early stopping's best weights) are
written to ``checkpoint_dir``, atomically. Started again with the same command,
training continues where the last checkpoint left it: an epoch's batches are a
function of ``(seed, epoch)``, and those already taken are skipped.
"""

import dataclasses
import itertools
import json
import os
import shutil
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

STRATEGIES = ("default", "mirrored", "multi_worker")
STATE_FILE = "state.json"
VARIABLES_FILE = "variables.weights.h5"
BEST_WEIGHTS_FILE = "best.weights.h5"
# Callback attributes that carry state from epoch to epoch (EarlyStopping, ReduceLROnPlateau;
# SwapEMAWeights' flag: whether the model or the optimizer holds the averaged weights).
_CALLBACK_STATE = ("wait", "best", "best_epoch", "stopped_epoch", "cooldown_counter",
                   "_ema_weights_in_model")


class CheckpointMismatch(ValueError):
    """A checkpoint folder holds another run's state."""


def make_strategy(name="default"):
    """The ``tf.distribute`` strategy called ``name`` (create it before any model)."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        # All GPUs; without one, every logical CPU device (one unless configured otherwise,
        # as the tests do to run two replicas on one CPU).
        devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([device.name for device in devices])
    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("--strategy multi_worker needs the TF_CONFIG environment variable "
                             "(the cluster's workers and this process's index); it is not set.")
        return tf.distribute.MultiWorkerMirroredStrategy()
    raise ValueError(f"Unknown strategy {name!r}; known: {', '.join(STRATEGIES)}.")


class EpochData:
    """Batches that are a function of the epoch, so that a resumed run sees what an
    uninterrupted one would.

    ``batches_of_pass(index)`` yields the batches of pass ``index``; every pass has
    ``count`` batches matching ``output_signature``.
    """

    def __init__(self, batches_of_pass, count, output_signature):
        self.batches_of_pass, self.count, self.output_signature = batches_of_pass, count, output_signature

    def __len__(self):
        return self.count

    def dataset(self, first_pass=0):
        """The batches of pass ``first_pass`` (repeated: of the passes after it)."""
        passes = itertools.count(first_pass)

        def generate():
            yield from self.batches_of_pass(next(passes))

        dataset = tf.data.Dataset.from_generator(generate, output_signature=self.output_signature)
        # A known length lets Keras show progress and end validation cleanly.
        return dataset.apply(tf.data.experimental.assert_cardinality(self.count)).prefetch(2)


@dataclasses.dataclass
class Options:
    """How a training runs, not what it trains: its strategy and its checkpoints."""

    strategy: tf.distribute.Strategy | None = None  # None: the default strategy
    checkpoint_dir: Path | None = None  # None: no checkpoints, nothing to resume
    checkpoint_every: int | None = None  # steps between checkpoints inside an epoch

    def scope(self):
        """Build and compile the model under this (its variables belong to the strategy)."""
        return (self.strategy or tf.distribute.get_strategy()).scope()

    def part(self, name):
        """The options for one of several trainings of one run (own checkpoints)."""
        checkpoint_dir = Path(self.checkpoint_dir) / name if self.checkpoint_dir else None
        return dataclasses.replace(self, checkpoint_dir=checkpoint_dir)

    def remove_checkpoints(self):
        """Forget a finished run's checkpoints (the next run of the command starts afresh)."""
        if self.checkpoint_dir:
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)


def fit(model, train_data, epochs, validation_data=None, callbacks=(), run_description=None,
        options=None, validation_metrics=None):
    """Train a compiled ``model``; returns the history (``fit``'s ``history.history``).

    Args:
        train_data: an ``EpochData`` of global batches (one epoch is one pass).
        validation_data: an ``EpochData`` (or a ``tf.data`` dataset) of batches,
            evaluated after every epoch into
            ``val_loss`` and ``val_NAME`` for each of ``validation_metrics``
            (``{NAME: fn(y_true, y_pred) -> per-example values}``).
        run_description: what identifies the run (recipe, epochs, data); a checkpoint
            of another run is refused rather than resumed.
        options: an ``Options``; the model was built and compiled in its ``scope()``.
    """
    options = options or Options()
    if isinstance(validation_data, EpochData):
        validation_data = validation_data.dataset()
    strategy = options.strategy or tf.distribute.get_strategy()
    with strategy.scope():
        model.optimizer.build(model.trainable_variables)
    checkpoint = (_Checkpoint(Path(options.checkpoint_dir), model, run_description)
                  if options.checkpoint_dir else None)
    checkpoint_every = options.checkpoint_every
    history = keras.callbacks.History()
    callback_list = keras.callbacks.CallbackList(
        [*callbacks, history], add_progbar=True, model=model, verbose=2, epochs=epochs,
        steps=len(train_data))
    train_step = _distributed_train_step(model, strategy)
    evaluate = _evaluator(model, validation_metrics or {})

    model.stop_training = False
    callback_list.on_train_begin()
    epoch, step = checkpoint.restore(callbacks, history) if checkpoint else (0, 0)
    while epoch < epochs and not model.stop_training:
        for metric in model.metrics:  # the logged loss is this epoch's mean, as in fit
            metric.reset_state()
        callback_list.on_epoch_begin(epoch)
        iterator = iter(_distribute(strategy, train_data.dataset(epoch).skip(step)))
        logs = {}
        for step in range(step, len(train_data)):
            callback_list.on_train_batch_begin(step)
            logs = train_step(iterator)
            callback_list.on_train_batch_end(step, logs)
            if checkpoint and checkpoint_every and (step + 1) % checkpoint_every == 0 \
                    and step + 1 < len(train_data):
                checkpoint.save(epoch, step + 1, callbacks, history)
        logs = {name: float(value) for name, value in logs.items()}
        if validation_data is not None:
            callback_list.on_test_begin()  # as in fit: SwapEMAWeights evaluates the average
            results = evaluate(validation_data)
            callback_list.on_test_end(results)
            logs.update({f"val_{name}": value for name, value in results.items()})
        logs["learning_rate"] = float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))
        callback_list.on_epoch_end(epoch, logs)
        epoch, step = epoch + 1, 0
        if checkpoint:
            checkpoint.save(epoch, 0, callbacks, history)
    callback_list.on_train_end()
    return history.history


def _distributed_train_step(model, strategy):
    @tf.function
    def train_step(iterator):
        outputs = strategy.run(model.train_step, args=(next(iterator),))
        return {name: strategy.reduce("MEAN", value, axis=None) for name, value in outputs.items()}

    return train_step


def _distribute(strategy, dataset):
    """Each global batch cut into one consecutive slice per replica.

    Slices differ by at most one example when a batch does not divide evenly;
    a batch smaller than the number of replicas is left out.
    """
    replicas = strategy.num_replicas_in_sync
    if replicas == 1:
        return dataset

    def dataset_fn(context):
        per_pipeline = replicas // context.num_input_pipelines
        first = context.input_pipeline_id * per_pipeline

        def slices(*batch):
            size = tf.shape(tf.nest.flatten(batch)[0])[0]
            bounds = [(first + i) * size // replicas for i in range(per_pipeline + 1)]
            parts = [tf.nest.map_structure(lambda t, a=a, b=b: t[a:b], batch)
                     for a, b in zip(bounds, bounds[1:])]
            sliced = tf.data.Dataset.from_tensors(parts[0])
            for part in parts[1:]:
                sliced = sliced.concatenate(tf.data.Dataset.from_tensors(part))
            return sliced

        sliced = dataset.filter(lambda *batch: tf.shape(tf.nest.flatten(batch)[0])[0] >= replicas)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        return sliced.flat_map(slices).with_options(options)

    return strategy.distribute_datasets_from_function(dataset_fn)


def _evaluator(model, metrics):
    """Loss and metrics over a dataset, each batch weighted by its size (as in ``fit``)."""
    @tf.function(reduce_retracing=True)
    def batch_results(x, y):
        predictions = model(x, training=False)
        results = {"loss": model.loss(y, predictions)}
        results.update({name: tf.reduce_mean(tf.cast(fn(y, predictions), tf.float32))
                        for name, fn in metrics.items()})
        return results, tf.shape(y)[0]

    def evaluate(dataset):
        totals, count = {}, 0
        for x, y in dataset:
            results, size = batch_results(x, y)
            for name, value in results.items():
                totals[name] = totals.get(name, 0.0) + float(value) * int(size)
            count += int(size)
        return {name: total / count for name, total in totals.items()}

    return evaluate


class _Checkpoint:
    """Training state in ``directory/latest``, replaced atomically on every save: the
    model's and the optimizer's variables (Keras' own ``save_weights``, which keys them
    by their place in the model and works on every backend), early stopping's best
    weights the same way, and a JSON of the loop's own state (epoch, step, history, the
    callbacks' counters, the weight-average swap flag, and the dropout layers' random
    states, which ``save_weights`` leaves out, in the model's order).

    Every worker of a multi-worker run keeps its own (their weights are identical), so
    each can resume from its own disk: give them different folders on shared storage.
    """

    def __init__(self, directory, model, run_description):
        self.directory, self.model = directory, model
        self.run_description = json.loads(json.dumps(run_description or {}))

    def _random_states(self):
        """The model's variables that are not weights: the seed generators' states."""
        weights = {id(variable) for variable in self.model.weights}
        return [variable for variable in self.model.variables if id(variable) not in weights]

    def _load_weights(self, path):
        try:
            self.model.load_weights(path)
        except (ValueError, KeyError, OSError) as error:
            raise CheckpointMismatch(f"{path} does not match this model's variables "
                                     f"({error}); delete it to start afresh.") from None

    def _save_weights_as(self, weights, path):
        """``weights`` (a ``get_weights`` list) written by Keras' own saving."""
        current = self.model.get_weights()
        self.model.set_weights(weights)
        self.model.save_weights(path)
        self.model.set_weights(current)

    def save(self, epoch, step, callbacks, history):
        staging = self.directory / f".saving-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        self.model.save_weights(staging / VARIABLES_FILE)  # the optimizer's variables too
        states = []
        for index, callback in enumerate(callbacks):
            states.append({k: _jsonable(getattr(callback, k)) for k in _CALLBACK_STATE
                           if hasattr(callback, k)})
            if getattr(callback, "best_weights", None) is not None:
                self._save_weights_as(callback.best_weights,
                                      staging / f"{index}_{BEST_WEIGHTS_FILE}")
        state = {"run": self.run_description, "epoch": epoch, "step": step,
                 "stopped": bool(self.model.stop_training),
                 "random_states": [keras.ops.convert_to_numpy(variable).tolist()
                                   for variable in self._random_states()],
                 "history": {k: [float(v) for v in values] for k, values in history.history.items()},
                 "callbacks": states}
        (staging / STATE_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")
        latest, previous = self.directory / "latest", self.directory / "previous"
        shutil.rmtree(previous, ignore_errors=True)
        if latest.exists():
            latest.rename(previous)
        staging.rename(latest)  # a crash before this line leaves `previous` to resume from
        shutil.rmtree(previous, ignore_errors=True)

    def restore(self, callbacks, history):
        """``(epoch, step)`` to continue from; ``(0, 0)`` when there is no checkpoint."""
        # A run killed while saving leaves its staging folder; none is ever resumed from.
        for staging in self.directory.glob(".saving-*"):
            shutil.rmtree(staging, ignore_errors=True)
        for folder in (self.directory / "latest", self.directory / "previous"):
            if (folder / STATE_FILE).is_file():
                break
        else:
            return 0, 0
        state = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
        if state["run"] != self.run_description:
            raise CheckpointMismatch(
                f"{self.directory} holds the checkpoint of another run (its recipe or options "
                f"differ from this command's); delete that folder to start afresh, or choose "
                f"another with --checkpoint-dir.")
        for index, (callback, saved) in enumerate(zip(callbacks, state["callbacks"])):
            for name, value in saved.items():
                setattr(callback, name, value)
            best = folder / f"{index}_{BEST_WEIGHTS_FILE}"
            if best.is_file():
                self._load_weights(best)
                callback.best_weights = self.model.get_weights()
        self._load_weights(folder / VARIABLES_FILE)  # last: these are the model's now
        random_states = self._random_states()
        if len(state["random_states"]) != len(random_states):
            raise CheckpointMismatch(f"{folder} does not match this model's random states; "
                                     "delete it to start afresh.")
        for variable, value in zip(random_states, state["random_states"]):
            variable.assign(np.asarray(value, variable.dtype))
        history.history.update({k: list(v) for k, v in state["history"].items()})
        history.epoch = list(range(len(next(iter(state["history"].values()), []))))
        self.model.stop_training = state["stopped"]
        print(f"Resuming from {folder}: epoch {state['epoch'] + 1}, step {state['step']}.")
        return state["epoch"], state["step"]


def _jsonable(value):
    return value.item() if isinstance(value, np.generic) else value
