"""One training loop for every ``tf.distribute`` strategy, resumable after a crash.

(On JAX and PyTorch, where ``tf.distribute`` does not exist, ``fit`` hands the same
batches, callbacks, validation and checkpoints to Keras' own ``model.fit``; JAX spreads
batches over devices with ``keras.distribution.DataParallel``.)

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
step, the history and the callbacks' state (early stopping's best weights, the epochs
kept for checkpoint averaging) are written to ``checkpoint_dir``, atomically. Started
again with the same command, training continues where the last checkpoint left it: an
epoch's batches are a function of ``(seed, epoch)``, and those already taken are skipped.
"""

import dataclasses
import itertools
import json
import os
import shutil
from pathlib import Path

import contextlib

import keras
import numpy as np

from zoo import backend

STRATEGIES = ("default", "mirrored", "multi_worker")
STATE_FILE = "state.json"
VARIABLES_FILE = "variables.weights.h5"
BEST_WEIGHTS_FILE = "best.weights.h5"
KEPT_WEIGHTS_FILE = "kept_epoch_{}.weights.h5"  # an epoch kept for checkpoint averaging
# Callback attributes that carry state from epoch to epoch (EarlyStopping, ReduceLROnPlateau;
# SwapEMAWeights' flag: whether the model or the optimizer holds the averaged weights;
# AverageLastEpochs' epochs, whose weights are saved beside).
_CALLBACK_STATE = ("wait", "best", "best_epoch", "stopped_epoch", "cooldown_counter",
                   "_ema_weights_in_model", "kept_epochs")


class CheckpointMismatch(ValueError):
    """A checkpoint folder holds another run's state."""


def make_strategy(name="default"):
    """The ``tf.distribute`` strategy called ``name`` (create it before any model).

    On JAX, ``mirrored`` (every local device) is ``keras.distribution.DataParallel``,
    set for the process, and the strategy returned is None, as for ``default``.
    """
    if name not in STRATEGIES:
        raise ValueError(f"Unknown strategy {name!r}; known: {', '.join(STRATEGIES)}.")
    if not backend.is_tensorflow():
        return _keras_distribution(name)
    import tensorflow as tf

    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        # All GPUs; without one, every logical CPU device (one unless configured otherwise,
        # as the tests do to run two replicas on one CPU).
        devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([device.name for device in devices])
    if "TF_CONFIG" not in os.environ:
        raise ValueError("--strategy multi_worker needs the TF_CONFIG environment variable "
                         "(the cluster's workers and this process's index); it is not set.")
    return tf.distribute.MultiWorkerMirroredStrategy()


def _keras_distribution(name):
    if name == "default":
        return None
    if name == "mirrored" and backend.name() == "jax":
        devices = keras.distribution.list_devices()
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        print(f"keras.distribution.DataParallel over {len(devices)} devices: "
              f"{', '.join(devices)}")
        return None
    raise ValueError(f"--strategy {name} needs TensorFlow (tf.distribute); on {backend.name()} "
                     "the strategies are: default"
                     + (", mirrored (keras.distribution.DataParallel)."
                        if backend.name() == "jax" else "."))


@dataclasses.dataclass(frozen=True)
class Ids:
    """The spec of one int32 tensor of a batch: ``[batch]`` (``rank=1``), ``[batch,
    width]`` (``width`` None: any), or of rank 3 ``[batch, any, width]`` (guided
    alignment's links)."""

    rank: int = 2
    width: int | None = None

    def tensor_spec(self):
        import tensorflow as tf

        shape = [None] if self.rank == 1 else [None] * (self.rank - 1) + [self.width]
        return tf.TensorSpec(shape, tf.int32)


class EpochData:
    """Batches that are a function of the epoch, so that a resumed run sees what an
    uninterrupted one would.

    ``batches_of_pass(index)`` yields the batches of pass ``index`` (numpy arrays);
    every pass has ``count`` batches matching ``output_signature`` (a nest of ``Ids``).
    ``examples_in(targets)``: how many examples a batch holds, which weighs its loss in
    validation (by default its rows; batches padded with empty rows to a fixed size
    count fewer: ``translation.rows_dataset``).
    """

    def __init__(self, batches_of_pass, count, output_signature, examples_in=len):
        self.batches_of_pass, self.count, self.output_signature = batches_of_pass, count, output_signature
        self.examples_in = examples_in

    def __len__(self):
        return self.count

    def dataset(self, first_pass=0):
        """TensorFlow: a ``tf.data`` dataset of the batches of pass ``first_pass``
        (repeated: of the passes after it)."""
        import tensorflow as tf

        passes = itertools.count(first_pass)

        def generate():
            yield from self.batches_of_pass(next(passes))

        signature = tf.nest.map_structure(lambda ids: ids.tensor_spec(), self.output_signature)
        dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
        # A known length lets Keras show progress and end validation cleanly.
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(self.count)).prefetch(2)
        # No autotuning: nothing here is tuned (one fixed prefetch). With it, the deletion
        # of an epoch's iterator waited on a thread of tf.data's own pool: 22-25 s idle
        # after the last step in 5 of 10 mixed-precision fine-tunes of gru_bahdanau_cmn_en
        # (docs/benchmarks.md, "The README's fine-tune"); without it, in none of 7.
        options = tf.data.Options()
        options.autotune.enabled = False
        return dataset.with_options(options)

    def py_dataset(self, first_pass=0):
        """Any backend: a ``keras.utils.PyDataset`` whose epoch k is pass ``first_pass + k``."""
        return _Passes(self, first_pass)


class _Passes(keras.utils.PyDataset):
    """``EpochData`` for ``model.fit`` (no TensorFlow needed): epoch k reads pass k,
    in order (Keras peeks at batches before the first epoch; a batch asked for again
    restarts the pass's generator). ``fit`` tells it the epoch (``start_epoch``): how
    often Keras calls ``on_epoch_end`` around its peeks is not the epoch count."""

    def __init__(self, data, first_pass):
        super().__init__()
        self.data, self.pass_index = data, first_pass
        self._batches, self._next = None, 0

    def __len__(self):  # Keras' PyDataset.num_batches reads it
        return self.data.count

    def start_epoch(self, epoch):
        self.pass_index, self._batches = epoch, None

    def __getitem__(self, index):
        if self._batches is None or index < self._next:
            self._batches, self._next = self.data.batches_of_pass(self.pass_index), 0
        for _ in range(index - self._next):
            next(self._batches)
        self._next = index + 1
        return next(self._batches)


@dataclasses.dataclass
class Options:
    """How a training runs, not what it trains: its strategy and its checkpoints."""

    strategy: object = None  # a tf.distribute.Strategy; None: the default strategy
    checkpoint_dir: Path | None = None  # None: no checkpoints, nothing to resume
    checkpoint_every: int | None = None  # steps between checkpoints inside an epoch
    # A time.time() at which training stops after the step in flight (an accelerator's
    # lease): the driver adds ``callbacks.StopAtDeadline``.
    deadline: float | None = None

    def __post_init__(self):
        if self.checkpoint_every and not backend.is_tensorflow():
            raise ValueError(f"--checkpoint-every needs the TensorFlow backend; on "
                             f"{backend.name()} checkpoints are written after every epoch.")

    def scope(self):
        """Build and compile the model under this (its variables belong to the strategy)."""
        if self.strategy is None:
            return contextlib.nullcontext()
        return self.strategy.scope()

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
    if not backend.is_tensorflow():
        return _fit_with_keras(model, train_data, epochs, validation_data, callbacks,
                               run_description, options, validation_metrics)
    import tensorflow as tf

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
    evaluate = evaluator(model, validation_metrics or {})

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
            if model.stop_training:  # a deadline (the epoch ends here, validated)
                break
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
    import tensorflow as tf

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
    import tensorflow as tf

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


def evaluator(model, metrics):
    """Loss and metrics over an ``EpochData`` (its first pass) or an iterable of
    ``(x, y)`` batches, each batch weighted by its size (as in ``fit``; an
    ``EpochData``'s ``examples_in``: its empty rows weigh nothing)."""
    def batch_results(x, y):
        predictions = model(x, training=False)
        results = {"loss": model.loss(y, predictions)}
        results.update({name: keras.ops.mean(keras.ops.cast(fn(y, predictions), "float32"))
                        for name, fn in metrics.items()})
        return results

    compiled = backend.compile_function(batch_results, model.variables)

    def evaluate(data):
        batches = data.batches_of_pass(0) if isinstance(data, EpochData) else data
        examples_in = data.examples_in if isinstance(data, EpochData) else len
        totals, count = {}, 0
        for x, y in batches:
            results, size = compiled(x, y), examples_in(y)
            for name, value in results.items():
                totals[name] = totals.get(name, 0.0) + float(value) * size
            count += size
        return {name: total / count for name, total in totals.items()}

    return evaluate


def _fit_with_keras(model, train_data, epochs, validation_data, callbacks, run_description,
                    options, validation_metrics):
    """``fit`` on JAX and PyTorch: Keras' ``model.fit`` over ``EpochData.py_dataset``.

    Validation, callbacks and checkpoints behave as in the TensorFlow loop: validation
    runs between ``on_test_begin`` and ``on_test_end`` of the callbacks (weight
    averaging swaps there) and its results join the epoch's logs before the other
    callbacks see them; the checkpoint is written after they have all run. Checkpoints
    fall at the end of epochs (``Options.checkpoint_every`` is the TensorFlow loop's).
    """
    checkpoint = (_Checkpoint(Path(options.checkpoint_dir), model, run_description)
                  if options.checkpoint_dir else None)
    evaluate = evaluator(model, validation_metrics or {})
    restored = keras.callbacks.History()  # the epochs of the interrupted run
    model.optimizer.build(model.trainable_variables)  # so that its state can be restored
    model.stop_training = False
    start, _ = checkpoint.restore(callbacks, restored) if checkpoint else (0, 0)

    def full_history(history):
        return {k: restored.history.get(k, []) + v for k, v in history.items()}

    batches = train_data.py_dataset(first_pass=start)

    class Validate(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            batches.start_epoch(epoch)

        def on_epoch_end(self, epoch, logs=None):
            if validation_data is None:
                return
            for callback in callbacks:
                callback.on_test_begin()
            results = evaluate(validation_data)
            for callback in callbacks:
                callback.on_test_end(results)
            logs.update({f"val_{name}": value for name, value in results.items()})

    class Checkpoints(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            # The other callbacks' on_train_begin has just reset their counters.
            if checkpoint:
                checkpoint.restore(callbacks, keras.callbacks.History(), quiet=True)

        def on_epoch_end(self, epoch, logs=None):
            if checkpoint:  # (Keras' History records this epoch after every callback)
                history = keras.callbacks.History()
                history.history = full_history(self.model.history.history)
                for key, value in logs.items():
                    history.history.setdefault(key, []).append(float(value))
                checkpoint.save(epoch + 1, 0, callbacks, history)

    if start >= epochs or model.stop_training:  # the interrupted run had finished training
        for callback in callbacks:
            callback.set_model(model)
            callback.on_train_end()
        return restored.history
    fitted = model.fit(
        batches, epochs=epochs, initial_epoch=start, shuffle=False,  # the passes are shuffled
        callbacks=[Validate(), *callbacks, Checkpoints()], verbose=2)
    return full_history(fitted.history)


class _Checkpoint:
    """Training state in ``directory/latest``, replaced atomically on every save: the
    model's and the optimizer's variables (Keras' own ``save_weights``, which keys them
    by their place in the model and works on every backend), early stopping's best
    weights and the epochs kept for checkpoint averaging the same way (an epoch's file
    is written once, then linked into the next checkpoints), and a JSON of the loop's own
    state (epoch, step, history, the callbacks' counters, the weight-average swap flag,
    and the dropout layers' random states, which ``save_weights`` leaves out, in the
    model's order, and on PyTorch its global generator, which Keras' unseeded dropout
    draws from).

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

    def _weights_in(self, path):
        """The ``get_weights`` list saved in ``path`` (by ``_save_weights_as``)."""
        self._load_weights(path)
        return self.model.get_weights()

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
            for name, weights, unchanging in _weight_sets(callback):
                path = staging / f"{index}_{name}"
                if not (unchanging and _linked(self.directory / "latest" / path.name, path)):
                    self._save_weights_as(weights, path)
        state = {"run": self.run_description, "epoch": epoch, "step": step,
                 "stopped": bool(self.model.stop_training),
                 "random_states": [keras.ops.convert_to_numpy(variable).tolist()
                                   for variable in self._random_states()],
                 "torch_random_state": _torch_random_state(),
                 "history": {k: [float(v) for v in values] for k, values in history.history.items()},
                 "callbacks": states}
        (staging / STATE_FILE).write_text(json.dumps(state, indent=1), encoding="utf-8")
        latest, previous = self.directory / "latest", self.directory / "previous"
        shutil.rmtree(previous, ignore_errors=True)
        if latest.exists():
            latest.rename(previous)
        staging.rename(latest)  # a crash before this line leaves `previous` to resume from
        shutil.rmtree(previous, ignore_errors=True)

    def restore(self, callbacks, history, quiet=False):
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
                callback.best_weights = self._weights_in(best)
            if hasattr(callback, "kept_weights"):
                callback.kept_weights = [
                    self._weights_in(folder / f"{index}_{KEPT_WEIGHTS_FILE.format(epoch)}")
                    for epoch in saved.get("kept_epochs", [])]
        self._load_weights(folder / VARIABLES_FILE)  # last: these are the model's now
        random_states = self._random_states()
        if len(state["random_states"]) != len(random_states):
            raise CheckpointMismatch(f"{folder} does not match this model's random states; "
                                     "delete it to start afresh.")
        for variable, value in zip(random_states, state["random_states"]):
            variable.assign(np.asarray(value, variable.dtype))
        _set_torch_random_state(state.get("torch_random_state"))
        history.history.update({k: list(v) for k, v in state["history"].items()})
        history.epoch = list(range(len(next(iter(state["history"].values()), []))))
        self.model.stop_training = state["stopped"]
        if not quiet:
            print(f"Resuming from {folder}: epoch {state['epoch'] + 1}, step {state['step']}.")
        return state["epoch"], state["step"]


def _weight_sets(callback):
    """The weights a callback carries from epoch to epoch (``get_weights`` lists):
    ``(file name, weights, unchanging)`` for early stopping's best weights and each epoch
    kept for checkpoint averaging (``callbacks.AverageLastEpochs``); ``unchanging``: a
    file of that name always holds the same weights (an epoch's end), while the best
    weights change."""
    sets = [(KEPT_WEIGHTS_FILE.format(epoch), weights, True) for epoch, weights in
            zip(getattr(callback, "kept_epochs", ()), getattr(callback, "kept_weights", ()))]
    if getattr(callback, "best_weights", None) is not None:
        sets.append((BEST_WEIGHTS_FILE, callback.best_weights, False))
    return sets


def _linked(existing, path):
    """Whether ``existing`` (a file of the last checkpoint) is now also at ``path``: a
    hard link, not a copy (False where it is missing or the file system has none)."""
    try:
        os.link(existing, path)
    except OSError:
        return False
    return True


def _torch_random_state():
    """PyTorch's global generator, which Keras' dropout draws from there when a layer
    has no seed of its own (None on the other backends)."""
    if backend.name() != "torch":
        return None
    import torch

    return torch.get_rng_state().tolist()


def _set_torch_random_state(saved):
    if saved is not None and backend.name() == "torch":
        import torch

        torch.set_rng_state(torch.tensor(saved, dtype=torch.uint8))


def _jsonable(value):
    return value.item() if isinstance(value, np.generic) else value
