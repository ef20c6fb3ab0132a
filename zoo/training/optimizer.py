"""The optimizer every trainer uses."""

import keras


def adam(learning_rate, ema_momentum=None, clipnorm=1.0):
    """Adam with gradient clipping; with ``ema_momentum`` (a recipe's key) it also keeps an
    exponential moving average of the weights (Polyak averaging), which
    ``callbacks.standard_callbacks`` swaps in for validation, early stopping and the
    shipped preset."""
    averaging = {"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}
    return keras.optimizers.Adam(learning_rate, clipnorm=clipnorm, **averaging)
