"""Synthetic sequence tasks of the literature, drawn fresh from a numpy generator.

They probe one ability each, with unlimited data, so that what a model fails at is
the task, not overfitting (used by the experiments in ``zoo/experiments``):

- ``adding_problem``: remember two marked numbers across ``length`` steps
  (Hochreiter & Schmidhuber 1997, as set up by Le, Jaitly & Hinton 2015).
- ``delayed_copy``: output, at every step, the symbol read ``lag`` steps before.
- ``reversal``: write a string backwards (a sequence-to-sequence task whose answer
  depends on every source position equally).
"""

import numpy as np

LETTERS = "abcdefghijklmnopqrst"  # the reversal task's alphabet: 20 symbols


def adding_problem(batch, length, rng):
    """``(inputs [batch, length, 2], targets [batch, 1])``, float32.

    Channel 0 holds numbers uniform in [0, 1); channel 1 marks two of them, one in
    each half of the sequence; the target is the sum of the two marked numbers.
    Predicting 1.0 always scores a mean squared error of 1/6 (the variance of the
    sum), the baseline a model must beat to show it remembers anything.
    """
    if length < 2:
        raise ValueError(f"The adding problem needs a length of at least 2; got {length}.")
    values = rng.random((batch, length), dtype=np.float32)
    half = length // 2
    first = rng.integers(0, half, batch)
    second = rng.integers(half, length, batch)
    markers = np.zeros((batch, length), np.float32)
    rows = np.arange(batch)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    targets = values[rows, first] + values[rows, second]
    return np.stack([values, markers], axis=-1), targets[:, None]


ADDING_BASELINE_MSE = 1.0 / 6.0


def delayed_copy(batch, length, lag, symbols, rng):
    """``(tokens [batch, length], targets [batch, length], weights [batch, length])``.

    The target at step ``t`` is the token of step ``t - lag``; the first ``lag``
    steps have no target (weight 0). Chance accuracy is ``1 / symbols``.
    """
    if not 0 < lag < length:
        raise ValueError(f"The lag must be between 1 and length - 1 ({length - 1}); got {lag}.")
    tokens = rng.integers(0, symbols, (batch, length)).astype(np.int32)
    targets = np.zeros_like(tokens)
    targets[:, lag:] = tokens[:, :-lag]
    weights = np.zeros((batch, length), np.float32)
    weights[:, lag:] = 1.0
    return tokens, targets, weights


def reversal(count, min_length, max_length, rng):
    """``count`` pairs (string, the string reversed) over ``LETTERS``, lengths uniform."""
    lengths = rng.integers(min_length, max_length + 1, count)
    sources = ["".join(rng.choice(list(LETTERS), n)) for n in lengths]
    return sources, [s[::-1] for s in sources]
