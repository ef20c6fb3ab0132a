"""Which layout the recurrent layers' inference loop runs in, chosen by measuring here.

``sequence_kernels.run_inference`` has two layouts (``inference_in_layout``) that compute the same numbers:
``FeatureMajor`` (states ``[units, batch]``, each step's input projection inside the loop)
and ``BatchMajor`` (states ``[batch, units]``, every step's projection done first as one
product). Which is faster depends on the CPU and on the batch: on an AMD EPYC (AVX2, one
thread), an LSTM of 256 units over 256 inputs ran batch 1 in 3.3 ms batch-major against
5.6 ms feature-major, and batch 64 in 101 against 74 ms. So neither is a default: the
first time a (kind, features, units, dtype) is met, both are timed on random inputs at
``MEASURED_BATCHES``, and the smallest batch from which feature-major wins is kept, in
memory and in a JSON file in the user's cache folder under a key naming this machine (CPU
model and flags, usable cores, TensorFlow version and thread settings), so that a machine
measures each shape once. A batch between two measured ones takes the choice of the
nearest one below it.

``ZOO_RNN_LAYOUT=feature_major`` or ``batch_major`` fixes the layout instead (the two
agree to float32 rounding, not bit for bit); ``measure`` is the default.
"""

import functools
import hashlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

LAYOUT_VARIABLE = "ZOO_RNN_LAYOUT"
LAYOUTS = ("feature_major", "batch_major")
MEASURED_BATCHES = (1, 4, 16, 64)
MEASURED_STEPS = 32
NEVER = None  # a crossover meaning: batch-major at every batch


class LayoutError(ValueError):
    """A ZOO_RNN_LAYOUT value that names no layout."""


def forced_layout():
    """The layout ZOO_RNN_LAYOUT fixes, or None to measure."""
    value = os.environ.get(LAYOUT_VARIABLE, "measure").strip().lower()
    if value == "measure":
        return None
    if value not in LAYOUTS:
        raise LayoutError(f"{LAYOUT_VARIABLE} must be one of measure, {', '.join(LAYOUTS)}; "
                          f"got {value!r}.")
    return value


def crossover(timings):
    """The smallest measured batch from which feature-major is faster at every measured
    batch at or above it; None when batch-major wins at the largest.

    ``timings``: ``{batch: {"feature_major": seconds, "batch_major": seconds}}``.
    """
    threshold = NEVER
    for batch in sorted(timings, reverse=True):
        seconds = timings[batch]
        if seconds["feature_major"] >= seconds["batch_major"]:
            break
        threshold = batch
    return threshold


def layout_for_batch(threshold, batch):
    """The layout a crossover ``threshold`` gives a batch of ``batch`` rows."""
    return "feature_major" if threshold is not NEVER and batch >= threshold else "batch_major"


def feature_major_from(kind, features, units, dtype):
    """The crossover batch for these shapes on this machine (measured once, then read)."""
    return _crossover_cached(kind, int(features), int(units), str(dtype))


@functools.cache
def _crossover_cached(kind, features, units, dtype):
    key = f"{kind}/{features}x{units}/{dtype}"
    path = cache_path()
    stored = _read(path)
    machine = stored.setdefault(machine_key(), {})
    if key not in machine:
        machine[key] = crossover(measure(kind, features, units, dtype))
        _write(path, stored)
    return machine[key]


def measure(kind, features, units, dtype, batches=MEASURED_BATCHES, steps=MEASURED_STEPS,
            rounds=5):
    """Seconds per call of each layout at each batch, on random inputs and weights, each
    layout compiled as a tf.function and called once to warm up; the two alternate for
    ``rounds`` rounds and the fastest call of each counts (a busy machine only ever adds
    time)."""
    import tensorflow as tf

    from zoo.layers import sequence_kernels

    cell = sequence_kernels.KERNELS[kind]
    rng = np.random.default_rng(0)

    def weights(*shape):
        return tf.constant(rng.normal(scale=0.05, size=shape).astype(dtype))

    timings = {}
    with tf.init_scope():  # measure eagerly, even when asked while a graph is traced
        input_kernel = weights(features, cell.gates * units)
        recurrent_kernel = weights(units, cell.gates * units)
        recurrent_bias = weights(cell.gates * units) if kind == "gru_reset_after" else None
        for batch in batches:
            sequences = weights(steps, batch, features)
            states = [tf.zeros([batch, units], dtype)] * cell.states
            runs = {layout: tf.function(functools.partial(
                sequence_kernels.inference_in_layout, sequence_kernels.LAYOUT_CLASSES[layout],
                kind, sequences, input_kernel, None, recurrent_kernel, recurrent_bias, states))
                for layout in LAYOUTS}
            seconds = {layout: [] for layout in LAYOUTS}
            for run in runs.values():
                run()
            for _ in range(rounds):
                for layout, run in runs.items():
                    start = time.perf_counter()
                    run()
                    seconds[layout].append(time.perf_counter() - start)
            timings[batch] = {layout: min(s) for layout, s in seconds.items()}
    return timings


def machine_key():
    """What the speed of the two layouts depends on, in a short stable string."""
    import tensorflow as tf

    threads = tf.config.threading
    parts = [platform.machine(), _cpu_description(), str(len(os.sched_getaffinity(0))),
             tf.__version__, str(threads.get_intra_op_parallelism_threads()),
             str(threads.get_inter_op_parallelism_threads())]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _cpu_description():
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    wanted = ("model name", "flags", "cpu family", "model")
    return "|".join(sorted({line.split(":", 1)[1].strip() for line in lines
                            if line.split(":", 1)[0].strip() in wanted}))


def cache_path():
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "zoo" / "rnn_layouts.json"


def _read(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # none yet, or unreadable: measure again
        return {}


def _write(path, stored):
    """Replace the file in one rename, so that a reader never sees half of it; a cache
    that cannot be written only means measuring again in the next process."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False,
                                         suffix=".tmp") as handle:
            json.dump(stored, handle, indent=1, sort_keys=True)
        os.replace(handle.name, path)
    except OSError:
        pass
