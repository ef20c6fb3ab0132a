"""The Keras callbacks every training runs with."""

import importlib.util
import time

import keras
import numpy as np


def standard_callbacks(recipe, log_dir, monitor="val_loss", reduce_on_plateau=True):
    """Early stopping on ``monitor`` with the best weights restored (after the recipe's
    ``patience`` epochs without progress), the learning rate halved after one such epoch
    (``reduce_on_plateau``, unless the recipe schedules it), and TensorBoard logs.
    With the recipe's ``ema_momentum`` (see ``optimizer.adam``), the averaged weights are
    validated, and they are the weights that early stopping keeps: they are swapped in at
    the end of every epoch, before the callbacks after them see the model. With the
    recipe's ``average_last``, ``AverageLastEpochs`` keeps the last epochs' weights."""
    mode = "max" if monitor.endswith("accuracy") else "min"
    callbacks = [keras.callbacks.SwapEMAWeights(swap_on_epoch=True)] if recipe.ema_momentum else []
    callbacks.append(keras.callbacks.EarlyStopping(monitor=monitor, mode=mode,
                                                   restore_best_weights=True,
                                                   patience=recipe.patience))
    if reduce_on_plateau:
        callbacks.append(keras.callbacks.ReduceLROnPlateau(monitor=monitor, mode=mode, factor=0.5,
                                                           patience=1))
    if recipe.average_last:  # after SwapEMAWeights: it keeps the weights that are validated
        callbacks.append(AverageLastEpochs(recipe.average_last))
    if importlib.util.find_spec("tensorflow") is None:  # Keras writes TensorBoard logs with it
        print("TensorBoard logs need TensorFlow, which this machine lacks: none are written.")
        return callbacks
    return callbacks + [keras.callbacks.TensorBoard(log_dir=str(log_dir))]


class AverageLastEpochs(keras.callbacks.Callback):
    """Checkpoint averaging: keeps the model's weights at the end of each of the last
    ``count`` epochs (the moving average of the weights when ``SwapEMAWeights`` is before
    it: what is validated), for ``average()``. ``loop.fit``'s checkpoints carry
    ``kept_epochs`` and ``kept_weights``: a resumed run keeps what an uninterrupted one
    would."""

    def __init__(self, count):
        super().__init__()
        self.count = count
        self.kept_epochs, self.kept_weights = [], []  # epochs counted from 1

    def on_train_begin(self, logs=None):
        self.kept_epochs, self.kept_weights = [], []

    def on_epoch_end(self, epoch, logs=None):
        self.kept_epochs = [*self.kept_epochs, epoch + 1][-self.count:]
        self.kept_weights = [*self.kept_weights, self.model.get_weights()][-self.count:]

    def average(self):
        """The element-wise mean of the kept weights (those of every epoch run, when
        training stopped before ``count`` epochs); a weight that is not a float (a
        counter) is not averaged: it keeps its last value."""
        if not self.kept_weights:
            raise ValueError("No epoch has ended: there are no weights to average.")
        return [np.mean(values, axis=0, dtype=np.float64).astype(values[-1].dtype)
                if np.issubdtype(values[-1].dtype, np.floating) else values[-1]
                for values in zip(*self.kept_weights)]


class StopAtDeadline(keras.callbacks.Callback):
    """Stops training after the first step that ends at or past ``deadline`` (a
    ``time.time()`` value): the epoch ends there, validated as every epoch is (the moving
    average of the weights swapped in), and early stopping then restores the best
    validated weights, those of the cut epoch where they are best. ``stopped_at``:
    ``{"epoch": k, "steps": n}`` (epoch counted from 1, the steps of it taken), or None."""

    def __init__(self, deadline):
        super().__init__()
        self.deadline, self.stopped_at, self._epoch = deadline, None, 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.stopped_at is None and time.time() >= self.deadline:
            self.model.stop_training = True
            self.stopped_at = {"epoch": self._epoch + 1, "steps": batch + 1}
