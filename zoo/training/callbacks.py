"""The Keras callbacks every training runs with."""

import importlib.util

import keras


def standard_callbacks(recipe, log_dir, monitor="val_loss", reduce_on_plateau=True):
    """Early stopping on ``monitor`` with the best weights restored (after the recipe's
    ``patience`` epochs without progress), the learning rate halved after one such epoch
    (``reduce_on_plateau``, unless the recipe schedules it), and TensorBoard logs.
    With the recipe's ``ema_momentum`` (see ``optimizer.adam``), the averaged weights are
    validated, and they are the weights that early stopping keeps: they are swapped in at
    the end of every epoch, before the callbacks after them see the model."""
    mode = "max" if monitor.endswith("accuracy") else "min"
    callbacks = [keras.callbacks.SwapEMAWeights(swap_on_epoch=True)] if recipe.ema_momentum else []
    callbacks.append(keras.callbacks.EarlyStopping(monitor=monitor, mode=mode,
                                                   restore_best_weights=True,
                                                   patience=recipe.patience))
    if reduce_on_plateau:
        callbacks.append(keras.callbacks.ReduceLROnPlateau(monitor=monitor, mode=mode, factor=0.5,
                                                           patience=1))
    if importlib.util.find_spec("tensorflow") is None:  # Keras writes TensorBoard logs with it
        print("TensorBoard logs need TensorFlow, which this machine lacks: none are written.")
        return callbacks
    return callbacks + [keras.callbacks.TensorBoard(log_dir=str(log_dir))]
