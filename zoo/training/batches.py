"""Batches of similar length, the same in a resumed run as in an uninterrupted one."""

import bisect
import math

import numpy as np

from zoo.training.loop import EpochData

# A pass drawn anew (``mixed_dataset``) is sorted by length within chunks of this many
# batches: padding stays low, and the batches differ from pass to pass.
CHUNK_BATCHES = 50


def length_sorted_batches(order, length_of, batch_size, chunk_batches=None):
    """``order`` cut into batches of similar length, sorted within chunks of
    ``chunk_batches`` batches (None: all of ``order``; the sort is stable, so equal
    lengths keep ``order``'s order)."""
    chunk = len(order) if chunk_batches is None else batch_size * chunk_batches
    chunk = max(chunk, 1)
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=length_of)
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    return batches


def bucket_width(longest, length_buckets):
    """The smallest of the increasing ``length_buckets`` that holds a row of ``longest``
    ids; past the widest, ``longest`` itself (the batch keeps its natural width: one
    shape more, and no row is cut)."""
    index = bisect.bisect_left(length_buckets, longest)
    return length_buckets[index] if index < len(length_buckets) else longest


def bucketed_dataset(indices, length_of, batch_of, output_signature, batch_size, shuffle, seed=0,
                     examples_in=len):
    """An ``EpochData`` of the examples ``indices`` in batches of similar length, made
    once for every pass (shuffled: in an order drawn anew each pass); ``batch_of(indices)``
    builds one batch (``examples_in``: ``EpochData``'s).

    The batches are cut from all the examples sorted by length (equal lengths in a seeded
    random order): as every pass has the same batches, sorting in chunks would only add
    padding: 20,000 pairs of the zh-en mix at batch 64 pad the attention's real area 1.38
    times so, 1.95 times in chunks of 50 batches (docs/benchmarks.md, "Batches sorted
    whole")."""
    rng = np.random.default_rng(seed)
    order = np.array(indices)
    if shuffle:
        order = rng.permutation(order)
    batches = length_sorted_batches(order, length_of, batch_size)

    def batches_of_pass(index):
        order = range(len(batches))
        if shuffle:  # pass k's order: the k-th draw after the chunks' (one random stream)
            replay = np.random.default_rng(seed)
            replay.permutation(len(indices))
            for _ in range(index + 1):
                order = replay.permutation(len(batches))
        for i in order:
            yield batch_of(batches[i])

    return EpochData(batches_of_pass, len(batches), output_signature, examples_in)


def mixed_dataset(groups, length_of, batch_of, output_signature, batch_size, seed=0,
                  examples_in=len):
    """An ``EpochData`` whose every pass draws from each group of examples by its weight.

    ``groups``: ``[(indices, weight)]``; a pass takes every example of a group
    ``int(weight)`` times and a random ``weight % 1`` share of them once more, drawn
    anew for each pass from ``(seed, pass)``, so that a resumed run draws what an
    uninterrupted one would. Every pass has the same number of examples, hence of batches
    (``examples_in``: ``EpochData``'s).
    """
    groups = [(np.asarray(indices), weight) for indices, weight in groups]
    shares = [(int(weight), round((weight % 1) * len(indices))) for indices, weight in groups]
    examples = sum(len(indices) * whole + part for (indices, _), (whole, part) in zip(groups, shares))
    count = math.ceil(examples / batch_size)  # chunks are whole batches: one part at most

    def batches_of_pass(index):
        rng = np.random.default_rng([seed, index])
        batches = length_sorted_batches(drawn_pass(groups, rng), length_of, batch_size,
                                        CHUNK_BATCHES)
        for i in rng.permutation(len(batches)):
            yield batch_of(batches[i])

    return EpochData(batches_of_pass, count, output_signature, examples_in)


def drawn_pass(groups, rng):
    """The examples of one pass of ``mixed_dataset``, shuffled by ``rng``: of each group
    ``(indices, weight)`` every example ``int(weight)`` times and a random ``weight % 1``
    share of them once more."""
    groups = [(np.asarray(indices), weight) for indices, weight in groups]
    drawn = [np.tile(indices, int(weight)) for indices, weight in groups]
    drawn += [rng.choice(indices, round((weight % 1) * len(indices)), replace=False)
              for indices, weight in groups if round((weight % 1) * len(indices))]
    return rng.permutation(np.concatenate(drawn))
