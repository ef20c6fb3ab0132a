"""Which layout the recurrent layers' inference loop runs in, chosen by measuring here.

``sequence_kernels.run_inference`` has two layouts (``inference_in_layout``) that compute the same numbers:
``FeatureMajor`` (states ``[units, batch]``, each step's input projection inside the loop)
and ``BatchMajor`` (states ``[batch, units]``, every step's projection done first as one
product). Which is faster depends on the CPU and on the batch: on an AMD EPYC (AVX2, one
thread), an LSTM of 256 units over 256 inputs ran batch 1 in 3.3 ms batch-major against
5.6 ms feature-major, and batch 64 in 101 against 74 ms. So neither is a default: the
first time a (kind, features, units, dtype) is met, both are timed on random inputs at
``MEASURED_BATCHES``, and the smallest batch from which feature-major wins is used. A
batch between two measured ones takes the choice of the nearest one below it.

The rule (``decide``), so that one measurement on a busy machine is not kept for good:

- At each batch the two layouts alternate for ``MEASURED_ROUNDS`` rounds, every other
  round in the reverse order (``timing.alternate_rounds``); a round's ratio is
  batch-major's time over feature-major's (feature-major's speed-up), and the batch's
  figure is the median of the rounds' ratios with its 95% bootstrap interval
  (``timing.paired_speed_ratio``).
- The crossover is the smallest batch from which that median is above 1 at every
  measured batch up to the largest (None: batch-major at every batch).
- A batch is decided when its interval lies wholly above 1 (feature-major faster) or
  wholly below 1 (batch-major faster), or wholly within ``EQUIVALENT_WITHIN`` of 1 (the
  two within 5% of each other: either is fine, and which one does not matter).
- Only a measurement decided at every batch is kept: in memory and in a JSON file in the
  user's cache folder (``cache_path``), under a key naming this machine (CPU model and
  flags, usable cores, TensorFlow version and thread settings), with each batch's ratio
  and interval, so that a machine measures each shape once. An undecided one is used by
  this process only (the medians' crossover, the best guess at hand) and leaves the file
  without the shape, so the next process measures again. Entries of an older rule (a
  bare number) are measured again too.

``zoo benchmark layers --remeasure`` measures the benchmark's shapes again and replaces
their entries (``choose``). ``ZOO_RNN_LAYOUT=feature_major`` or ``batch_major`` fixes the
layout instead (the two agree to float32 rounding, not bit for bit); ``measure`` is the
default. ``ZOO_RNN_LAYOUT_CACHE`` names another file for the choices (the tests point it
at a folder of their own).

This module only decides and keeps; ``sequence_kernels`` hands it the two layouts'
calls to time (``layout_calls``), so the import goes one way.
"""

import hashlib
import json
import os
import platform
import tempfile
from pathlib import Path

from zoo.layers import timing

LAYOUT_VARIABLE = "ZOO_RNN_LAYOUT"
CACHE_VARIABLE = "ZOO_RNN_LAYOUT_CACHE"
LAYOUTS = ("feature_major", "batch_major")
MEASURED_BATCHES = (1, 4, 16, 64)
MEASURED_STEPS = 32
MEASURED_ROUNDS = 9
EQUIVALENT_WITHIN = 1.05  # a speed-up interval within [1/1.05, 1.05]: either layout will do
NEVER = None  # a crossover meaning: batch-major at every batch

_CHOSEN = {}  # this process's crossovers, kept or not, by shape key


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


def crossover(speedups):
    """The smallest measured batch from which feature-major is faster at every measured
    batch at or above it; None when batch-major wins at the largest.

    ``speedups``: ``{batch: batch-major seconds / feature-major seconds}``.
    """
    threshold = NEVER
    for batch in sorted(speedups, reverse=True):
        if speedups[batch] <= 1:
            break
        threshold = batch
    return threshold


def layout_for_batch(threshold, batch):
    """The layout a crossover ``threshold`` gives a batch of ``batch`` rows."""
    return "feature_major" if threshold is not NEVER and batch >= threshold else "batch_major"


def verdict(interval_95):
    """What a batch's 95% interval of feature-major's speed-up decides: the faster
    layout, ``"either"`` (within ``EQUIVALENT_WITHIN`` both ways), or None (undecided)."""
    low, high = interval_95
    if low > 1:
        return "feature_major"
    if high < 1:
        return "batch_major"
    if 1 / EQUIVALENT_WITHIN <= low and high <= EQUIVALENT_WITHIN:
        return "either"
    return None


def decide(samples):
    """The choice from ``{batch: {layout: [seconds per round]}}`` (rounds paired):
    ``{"feature_major_from": crossover, "kept": decided at every batch, "batches":
    {batch: {"ratio", "interval_95", "verdict"}}}``."""
    batches = {}
    for batch, seconds in sorted(samples.items()):
        speedup = timing.paired_speed_ratio(seconds["feature_major"], seconds["batch_major"])
        batches[batch] = {**speedup, "verdict": verdict(speedup["interval_95"])}
    return {"feature_major_from": crossover({b: s["ratio"] for b, s in batches.items()}),
            "kept": all(s["verdict"] is not None for s in batches.values()),
            "batches": batches}


def feature_major_from(kind, features, units, dtype, layout_calls):
    """The crossover batch for these shapes on this machine: this process's, else the
    file's, else measured (``choose``). ``layout_calls`` as ``measure`` takes it."""
    key = shape_key(kind, features, units, dtype)
    if key not in _CHOSEN:
        kept = _read(cache_path()).get(machine_key(), {}).get(key)
        if isinstance(kept, dict):  # a bare number is an older rule's: measure again
            _CHOSEN[key] = kept["feature_major_from"]
        else:
            choose(kind, features, units, dtype, layout_calls)
    return _CHOSEN[key]


def choose(kind, features, units, dtype, layout_calls, **measuring):
    """Measure these shapes now and decide (``decide``'s dict): this process uses the
    crossover; the file keeps it, replacing what it held, when decided at every batch,
    and otherwise loses the shape's entry, so that the next process measures again."""
    decision = decide(measure(kind, features, units, dtype, layout_calls, **measuring))
    key = shape_key(kind, features, units, dtype)
    _CHOSEN[key] = decision["feature_major_from"]
    path = cache_path()
    stored = _read(path)
    machine = stored.setdefault(machine_key(), {})
    if decision["kept"]:
        machine[key] = {"feature_major_from": decision["feature_major_from"],
                        "batches": {str(b): s for b, s in decision["batches"].items()}}
        _write(path, stored)
    elif machine.pop(key, None) is not None:
        _write(path, stored)
    return decision


def shape_key(kind, features, units, dtype):
    return f"{kind}/{int(features)}x{int(units)}/{dtype}"


def measure(kind, features, units, dtype, layout_calls, batches=MEASURED_BATCHES,
            steps=MEASURED_STEPS, rounds=MEASURED_ROUNDS):
    """Seconds per call of each layout in each round at each batch, ``{batch: {layout:
    [seconds]}}``: ``layout_calls(kind, features, units, dtype, batch, steps)`` gives the
    two layouts as calls without arguments (``sequence_kernels.layout_calls``), timed in
    alternating rounds (``timing.alternate_rounds``, after two warm-up calls each)."""
    import tensorflow as tf

    with tf.init_scope():  # measure eagerly, even when asked while a graph is traced
        return {batch: timing.alternate_rounds(
                    layout_calls(kind, features, units, dtype, batch, steps), rounds, 1)
                for batch in batches}


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
    """``$ZOO_RNN_LAYOUT_CACHE`` if set, else ``rnn_layouts.json`` in the user's cache
    folder (``$XDG_CACHE_HOME/zoo``, or ``~/.cache/zoo``)."""
    if os.environ.get(CACHE_VARIABLE):
        return Path(os.environ[CACHE_VARIABLE])
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
