"""Batches of similar length, the same in a resumed run as in an uninterrupted one."""

import numpy as np

from zoo.training.loop import EpochData


def bucketed_dataset(indices, length_of, batch_of, output_signature, batch_size, shuffle, seed=0):
    """An ``EpochData`` of the examples ``indices`` in batches of similar length.

    Sorting by length inside shuffled chunks keeps padding low without making every
    epoch see the batches in the same order; ``batch_of(indices)`` builds one batch.
    """
    rng = np.random.default_rng(seed)
    order = np.array(indices)
    if shuffle:
        order = rng.permutation(order)
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=length_of)
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]

    def batches_of_pass(index):
        order = range(len(batches))
        if shuffle:  # pass k's order: the k-th draw after the chunks' (one random stream)
            replay = np.random.default_rng(seed)
            replay.permutation(len(indices))
            for _ in range(index + 1):
                order = replay.permutation(len(batches))
        for i in order:
            yield batch_of(batches[i])

    return EpochData(batches_of_pass, len(batches), output_signature)
