"""Timing side by side on a shared machine: alternating rounds and paired ratios.

The lowest place that times anything: ``zoo.layers.kernel_choice`` chooses the
recurrent layers' inference layout with it, and ``zoo benchmark`` (``zoo.benchmarks``)
compares everything else with it, so both follow one rule.
"""

import statistics
import time

import numpy as np


def _median_seconds(function, repeats, reported=False):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        seconds = function()
        samples.append(seconds if reported else time.perf_counter() - start)
    return statistics.median(samples)


def alternate_rounds(functions, rounds, repeats_per_round, reported=False):
    """Seconds per call of each function in each round, measured round-robin: a round
    times every function once, one right after the other, every other round in the
    reverse order. A call timed right after another one is slowed by it (its process's
    threads still hold the cores a moment, its data pushed the other's out of the
    caches): in the same order every round, one side of a pair always ran second.
    Measured with this checkout against a copy of itself (``zoo benchmark decoding``,
    30 rounds, greedy over a batch of 64): 0.97 (0.92-1.03) in a fixed order.

    ``reported``: each function returns the seconds it measured itself (a process that
    times its own work, without the exchange with it), which count instead of the call's.
    """
    for function in functions.values():  # trace and warm up
        function()
        function()
    samples = {name: [] for name in functions}
    order = list(functions.items())
    for round_index in range(rounds):
        for name, function in (order if round_index % 2 == 0 else order[::-1]):
            samples[name].append(_median_seconds(function, repeats_per_round, reported))
    return samples


def paired_speed_ratio(seconds, baseline_seconds, resamples=1000, seed=0):
    """How many times as fast as a baseline, from rounds timed side by side: the median
    over rounds of the baseline's time over this one's in the same round (a slow spell
    of a shared machine then slows both sides of a ratio, not one side of a median),
    with a 95% bootstrap interval of that median (``resamples`` draws of the rounds)."""
    ratios = np.asarray(baseline_seconds, float) / np.asarray(seconds, float)
    draws = np.random.default_rng(seed).integers(0, len(ratios), (resamples, len(ratios)))
    low, high = np.percentile(np.median(ratios[draws], axis=1), [2.5, 97.5])
    return {"ratio": float(np.median(ratios)), "interval_95": [float(low), float(high)]}
