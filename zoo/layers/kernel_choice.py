"""Which layout the recurrent layers' inference loop runs in, chosen by measuring here.

``sequence_kernels.run_inference`` has layouts (``inference_in_layout``) that compute
the same numbers: ``FeatureMajor`` (states ``[units, batch]``, each step's input
projection inside the loop) and ``BatchMajor`` (states ``[batch, units]``, every step's
projection done first as one product), and ``BatchMajorInBlocks``, batch-major with the
recurrent product split into column blocks that TensorFlow's threads run side by side
(where the weight makes at least ``blocks.FROM_BLOCKS``). Which is
faster depends on the CPU, its threads and the batch: on an AMD EPYC (one thread), an
LSTM of 256 units over 256 inputs ran batch 1 in 3.3 ms batch-major against 5.6 ms
feature-major, and batch 64 in 101 against 74 ms; on two threads an LSTM of 512 units
ran batch 1 in 15.7 ms batch-major and 11.1 in blocks. So none is a default: the first
time a (kind, features, units, dtype) is met, all are timed on random inputs at
``MEASURED_BATCHES``; the batch-major variant is the one faster at the smallest batch,
and the smallest batch from which feature-major beats it is where feature-major is used.
A batch between two measured ones takes the choice of the nearest one below it.

The rule (``decide``), so that one measurement on a busy machine is not kept for good:

- At each batch the layouts alternate for ``MEASURED_ROUNDS`` rounds, every other
  round in the reverse order (``timing.alternate_rounds``); a round's ratio is
  batch-major's time over feature-major's (feature-major's speed-up), and the batch's
  figure is the median of the rounds' ratios with its 95% bootstrap interval
  (``timing.paired_speed_ratio``).
- The batch-major variant: in blocks when, at the smallest batch, its speed-up over
  batch-major (the median of the rounds' ratios, with its interval) lies wholly above 1;
  whole when wholly below 1 or within ``EQUIVALENT_WITHIN`` of 1 (fewer operations).
- The crossover is the smallest batch from which feature-major's median speed-up over
  that variant is above 1 at every measured batch up to the largest (None: batch-major
  at every batch).
- A batch is decided when its interval lies wholly above 1 (feature-major faster) or
  wholly below 1 (batch-major faster), or wholly within ``EQUIVALENT_WITHIN`` of 1 (the
  two within 5% of each other: either is fine, and which one does not matter), or where
  the layout the crossover gives it is at worst 5% slower than the other (its interval
  up to 1.05 for batch-major, from 1/1.05 for feature-major): on this 2-core AMD EPYC
  the translators' encoder shape at batch 16 measured batch-major about 3-7% faster,
  with intervals such as 0.88-1.02. Of 10 processes on a quiet machine, 1 kept the shape
  without this margin and without measuring again, 5 with measuring again, 8 with both.
  The variant alike: whole unless the blocks are wholly faster, decided when they are
  at most 5% faster.
- Where a first measurement leaves a batch (or the variant) undecided, that batch alone
  is measured for ``MEASURED_ROUNDS`` more rounds and decided on all of its rounds, up
  to twice (``MEASURED_AGAIN``): an undecided shape is measured again by the next
  process, 2-4 s before its first translation.
- Only a measurement decided at every batch (and on the variant) is kept: in memory and
  in a JSON file in the user's cache folder (``cache_path``), under a key naming this
  machine (CPU model and flags, usable cores, TensorFlow version and thread settings),
  with each batch's ratio and interval, so that a machine measures each shape once (twice
  where the first measurement was taken under load: below). An
  undecided one is used by this process only (the medians' crossover, the best guess at
  hand) and leaves the file without the shape, so the next process measures again.
  Entries of an older rule (a bare number, a choice without the variant) are measured
  again too.
- A measurement taken under load is not kept for good: the entry records ``"load"``,
  the share of this process's cores that other work took while it measured
  (``machine_load.others_share``: /proc/stat's busy time, steal included, less this
  process's CPU time), and ``"measured"``, when (UTC). An entry is kept for good
  (``kept_for_good``) where that share was below ``machine_load.LOADED_FROM`` (15%).
  One measured under load is used as it is while the machine stays busy (measuring
  again then would measure the load again), and measured again by the first process
  that meets the shape while the machine is quiet (``quiet_now``: a 0.25 s look at
  the cores, once a minute at most). A load biases the rounds, it does not only scatter
  them: feature-major runs each step's input projection ahead on another core, which
  the other work holds. On the 2-core AMD EPYC with a busy loop on each core, the GRU of
  256 units measured feature-major's speed-up at batch 64 at 0.90 (0.83-1.04), decided
  "batch_major (within 5%)", where the quiet machine measured 1.09 (1.04-1.11); the
  layer then ran batch 64 at 0.88 of the speed it runs with a quietly written cache
  (issue 52: 0.80-1.01 against 1.06-1.22). Entries written before the load was recorded
  (no ``"load"``) are treated as measured under load: used, and measured again at a
  quiet start, which writes the new form. A measurement under load never replaces an
  entry kept for good (``--remeasure`` on a busy machine: used by that process only).

``zoo benchmark layers --remeasure`` measures the benchmark's shapes again and replaces
their entries (``choose``). ``ZOO_RNN_LAYOUT=feature_major``, ``batch_major`` or
``batch_major_in_blocks`` fixes the layout instead (they agree to float32 rounding, not
bit for bit); ``measure`` is the default. ``ZOO_RNN_LAYOUT_CACHE`` names another file for
the choices (the tests point it at a folder of their own).

This module only decides and keeps; ``sequence_kernels`` hands it the layouts' calls
to time (``layout_calls``), so the import goes one way.
"""

import datetime
import hashlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from zoo import backend as zoo_backend
from zoo.layers import machine_load, timing

LAYOUT_VARIABLE = "ZOO_RNN_LAYOUT"
CACHE_VARIABLE = "ZOO_RNN_LAYOUT_CACHE"
LAYOUTS = ("feature_major", "batch_major", "batch_major_in_blocks")
MEASURED_BATCHES = (1, 4, 16, 64)
MEASURED_STEPS = 32
MEASURED_ROUNDS = 9
MEASURED_AGAIN = 2  # how many times an undecided batch gets MEASURED_ROUNDS rounds more
EQUIVALENT_WITHIN = 1.05  # a speed-up interval within [1/1.05, 1.05]: either layout will do
NEVER = None  # a crossover meaning: batch-major at every batch
QUIET_PROBE_HOLDS_SECONDS = 60  # how long ``quiet_now``'s answer is taken as still true

_CHOSEN = {}  # this process's choices (``decide``'s first two keys), kept or not, by shape key
_QUIET_PROBE = None  # ``quiet_now``'s last answer: (time.monotonic(), quiet)


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


def layout_for_batch(choice, batch):
    """The layout a choice (``chosen``) gives a batch of ``batch`` rows."""
    threshold = choice["feature_major_from"]
    if threshold is not NEVER and batch >= threshold:
        return "feature_major"
    return "batch_major_in_blocks" if choice["batch_major_in_blocks"] else "batch_major"


def verdict(interval_95, faster="feature_major", slower="batch_major", chosen=None):
    """What a 95% interval of a speed-up decides: ``faster`` (wholly above 1),
    ``slower`` (wholly below), ``"either"`` (within ``EQUIVALENT_WITHIN`` both ways),
    ``"<chosen> (within 5%)"`` (the side ``chosen`` is, at worst, that much slower than
    the other), or None (undecided)."""
    low, high = interval_95
    if low > 1:
        return faster
    if high < 1:
        return slower
    if 1 / EQUIVALENT_WITHIN <= low and high <= EQUIVALENT_WITHIN:
        return "either"
    if (chosen == faster and 1 / EQUIVALENT_WITHIN <= low
            or chosen == slower and high <= EQUIVALENT_WITHIN):
        return f"{chosen} (within {round((EQUIVALENT_WITHIN - 1) * 100)}%)"
    return None


def decide(samples):
    """The choice from ``{batch: {layout: [seconds per round]}}`` (rounds paired):
    ``{"feature_major_from": crossover, "batch_major_in_blocks": bool, "kept": decided
    at every batch and on the variant, "blocks": the variant's speed-up at the smallest
    batch {"ratio", "interval_95", "verdict"} (None when measured without blocks),
    "batches": {batch: feature-major's speed-up over the variant, the same keys}}``."""
    smallest = samples[min(samples)]
    blocks = None
    if "batch_major_in_blocks" in smallest:
        blocks = timing.paired_speed_ratio(smallest["batch_major_in_blocks"],
                                           smallest["batch_major"])
        blocks["verdict"] = verdict(blocks["interval_95"], "batch_major_in_blocks",
                                    "batch_major", chosen="batch_major")
    in_blocks = blocks is not None and blocks["verdict"] == "batch_major_in_blocks"
    batch_major = "batch_major_in_blocks" if in_blocks else "batch_major"
    batches = {batch: timing.paired_speed_ratio(seconds["feature_major"], seconds[batch_major])
               for batch, seconds in sorted(samples.items())}
    choice = {"feature_major_from": crossover({b: s["ratio"] for b, s in batches.items()}),
              "batch_major_in_blocks": in_blocks}
    for batch, speedup in batches.items():
        speedup["verdict"] = verdict(speedup["interval_95"], slower=batch_major,
                                     chosen=layout_for_batch(choice, batch))
    return {**choice,
            "kept": (all(s["verdict"] is not None for s in batches.values())
                     and (blocks is None or blocks["verdict"] is not None)),
            "blocks": blocks,
            "batches": batches}


CHOICE_KEYS = ("feature_major_from", "batch_major_in_blocks")


def chosen(kind, features, units, dtype, layout_calls):
    """The choice for these shapes on this machine, ``{"feature_major_from": crossover
    batch, "batch_major_in_blocks": bool}``: this process's, else the file's, else
    measured (``choose``). A file's entry not kept for good (``kept_for_good``) is
    measured again where the machine is quiet now (``quiet_now``), and used as it is
    where it is not. ``layout_calls`` as ``measure`` takes it."""
    key = shape_key(kind, features, units, dtype)
    if key not in _CHOSEN:
        kept = kept_entry(kind, features, units, dtype)
        if kept is None:  # none, or an older rule's (a bare number, no variant)
            choose(kind, features, units, dtype, layout_calls)
        elif not kept_for_good(kept) and quiet_now():  # measured under load: once more
            choose(kind, features, units, dtype, layout_calls)
        else:
            _CHOSEN[key] = {name: kept[name] for name in CHOICE_KEYS}
    return _CHOSEN[key]


def _is_choice(entry):
    return isinstance(entry, dict) and all(name in entry for name in CHOICE_KEYS)


def kept_for_good(entry):
    """Whether a file's entry is final: measured while other work took less than
    ``machine_load.LOADED_FROM`` of the cores (or where the load cannot be read). One
    measured under load, or before the load was recorded (no ``"load"``: an older
    version's), holds until a quiet start measures again."""
    return "load" in entry and not machine_load.is_loaded(entry["load"])


def quiet_now():
    """Whether other work leaves this process's cores alone now (``machine_load
    .share_now``), asked once a minute at most: a translator meets two or three shapes
    at its start, each would wait for the probe."""
    global _QUIET_PROBE
    now = time.monotonic()
    if _QUIET_PROBE is None or now - _QUIET_PROBE[0] > QUIET_PROBE_HOLDS_SECONDS:
        _QUIET_PROBE = (now, not machine_load.is_loaded(machine_load.share_now()))
    return _QUIET_PROBE[1]


def choose(kind, features, units, dtype, layout_calls, **measuring):
    """Measure these shapes now and decide (``decide``'s dict, with ``"load"``: the
    share of the cores other work took meanwhile, ``machine_load.others_share``),
    measuring undecided batches again (``MEASURED_AGAIN``): this process uses the
    crossover; the file keeps what it decides (``_keep``)."""
    before = machine_load.reading()
    samples = measure(kind, features, units, dtype, layout_calls, **measuring)
    decision = decide(samples)
    for _ in range(MEASURED_AGAIN):
        if decision["kept"]:
            break
        again = undecided_batches(decision)
        more = measure(kind, features, units, dtype, layout_calls,
                       **{**measuring, "batches": again})
        samples = {batch: ({layout: seconds + more[batch][layout]
                            for layout, seconds in by_layout.items()}
                           if batch in again else by_layout)
                   for batch, by_layout in samples.items()}
        decision = decide(samples)  # on all of an undecided batch's rounds
    decision["load"] = machine_load.others_share(before, machine_load.reading())
    key = shape_key(kind, features, units, dtype)
    _CHOSEN[key] = {name: decision[name] for name in CHOICE_KEYS}
    decision["entry"] = _keep(key, decision)
    return decision


def _keep(key, decision):
    """The file's entry after a measurement: a decided one replaces it, with its load and
    time (kept for good when quiet); an undecided one removes it, so that the next process
    measures again. A measurement under load leaves an entry kept for good as it is: it
    tells about the other work, not about a quiet machine. Returns what became of the
    entry: ``"kept for good"``, ``"kept until a quiet start"``, ``"removed"`` or
    ``"left as it was"``."""
    path = cache_path()
    stored = _read(path)
    machine = stored.setdefault(machine_key(), {})
    loaded = machine_load.is_loaded(decision["load"])
    if loaded and _is_choice(machine.get(key)) and kept_for_good(machine[key]):
        return "left as it was"
    if not decision["kept"]:
        if machine.pop(key, None) is not None:
            _write(path, stored)
        return "removed"
    machine[key] = {**{name: decision[name] for name in CHOICE_KEYS},
                    "blocks": decision["blocks"],
                    "batches": {str(b): s for b, s in decision["batches"].items()},
                    "load": decision["load"], "measured": _utc_now()}
    _write(path, stored)
    return "kept until a quiet start" if loaded else "kept for good"


def _utc_now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def kept_entry(kind, features, units, dtype):
    """The file's entry for these shapes on this machine (``_keep`` writes it), or None."""
    entry = _read(cache_path()).get(machine_key(), {}).get(shape_key(kind, features, units,
                                                                     dtype))
    return entry if _is_choice(entry) else None


def use(kind, features, units, dtype, choice):
    """Run these shapes with ``choice`` in this process from now on, whatever was measured
    or kept: for a benchmark that traces one layer with each of several choices."""
    _CHOSEN[shape_key(kind, features, units, dtype)] = {name: choice[name]
                                                        for name in CHOICE_KEYS}


def forget():
    """Start over as a new process does: no choice in memory, the machine not looked at."""
    global _QUIET_PROBE
    _CHOSEN.clear()
    _QUIET_PROBE = None


def undecided_batches(decision):
    """The measured batches ``decide`` left undecided, with the smallest one when it left
    the batch-major variant undecided (the variant is measured there)."""
    batches = {batch for batch, speedup in decision["batches"].items()
               if speedup["verdict"] is None}
    if decision["blocks"] is not None and decision["blocks"]["verdict"] is None:
        batches.add(min(decision["batches"]))
    return tuple(sorted(batches))


def shape_key(kind, features, units, dtype):
    return f"{kind}/{int(features)}x{int(units)}/{dtype}"


def measure(kind, features, units, dtype, layout_calls, batches=MEASURED_BATCHES,
            steps=MEASURED_STEPS, rounds=MEASURED_ROUNDS):
    """Seconds per call of each layout in each round at each batch, ``{batch: {layout:
    [seconds]}}``: ``layout_calls(kind, features, units, dtype, batch, steps)`` gives the
    layouts as calls without arguments (``sequence_kernels.layout_calls``), timed in
    alternating rounds (``timing.alternate_rounds``, after two warm-up calls each)."""
    import tensorflow as tf

    with tf.init_scope():  # measure eagerly, even when asked while a graph is traced
        return {batch: timing.alternate_rounds(
                    layout_calls(kind, features, units, dtype, batch, steps), rounds, 1)
                for batch in batches}


def machine_key():
    """What the speed of the layouts depends on, in a short stable string."""
    import tensorflow as tf

    threads = tf.config.threading
    parts = [platform.machine(), _cpu_description(), str(zoo_backend.usable_cores()),
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
