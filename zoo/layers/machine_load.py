"""How much of this process's cores other work took while it measured something.

A layout measured while other processes hold the cores answers for a busy machine, not
for this one: feature-major runs each step's input projection ahead on another core, and
with that core taken it loses its lead (``kernel_choice`` keeps such a decision for a
while only). The figure is ``others_share``: of the usable cores' time between two
``reading``s, the share that went to other work than this process, from 0 (none) to 1
(all of it):

- on Linux, from ``/proc/stat``, each usable core's (this process's CPU affinity) busy
  time (user, nice, system, interrupts, and steal: time the hypervisor gave to other
  virtual machines) less this process's own CPU time (all its threads);
- elsewhere, from the one-minute load average less this process's own use over the
  interval, over the usable cores (it lags: it is mostly the minute before);
- None where neither can be read (Windows).

Work of this process's other threads counts as its own: a server that measures while it
translates is not told apart.
"""

import collections
import os
import time

from zoo import backend as zoo_backend

# From this share of the usable cores' time taken by other work, a measurement was taken
# under load: on the 2-core AMD EPYC of docs/benchmarks.md, quiet spells measured 0-1%
# (kernel threads), one other busy process 50%, and a busy loop on each core, while the
# layouts of an LSTM and a GRU were measured, 63-69%.
LOADED_FROM = 0.15
PROBE_SECONDS = 0.25  # how long ``share_now`` watches: 50 ticks of /proc/stat on 2 cores

Reading = collections.namedtuple("Reading", "wall own_cpu busy total load_average cores")
Reading.__doc__ = """At one moment: ``wall`` and ``own_cpu`` (this process's CPU time)
in seconds; ``busy`` and ``total``, the usable cores' busy and whole time in seconds since
boot (None without /proc/stat); ``load_average``, the one-minute one (None where there is
none); ``cores``, how many this process may use."""


def reading():
    """The figures ``others_share`` compares, now."""
    cores = _usable_cpu_ids()
    busy, total = _core_seconds(cores)
    try:
        load_average = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has none
        load_average = None
    return Reading(time.monotonic(), time.process_time(), busy, total, load_average,
                   len(cores) if cores else zoo_backend.usable_cores())


def others_share(before, after):
    """The share of the usable cores' time between two readings that other work took
    (0 to 1), or None where the system says nothing of it."""
    own = after.own_cpu - before.own_cpu
    if before.busy is not None and after.busy is not None:
        elapsed = after.total - before.total
        if elapsed <= 0:  # the same tick: nothing to tell
            return 0.0
        return _between_0_and_1((after.busy - before.busy - own) / elapsed)
    wall = after.wall - before.wall
    if after.load_average is None or wall <= 0:
        return None
    return _between_0_and_1((after.load_average - own / wall) / after.cores)


def is_loaded(share):
    """Whether a measurement during which other work took ``share`` of the cores was
    taken under load (an unknown share is not: nothing better can be known there)."""
    return share is not None and share >= LOADED_FROM


def share_now(seconds=PROBE_SECONDS):
    """``others_share`` over the next ``seconds``, this process asleep meanwhile."""
    before = reading()
    time.sleep(seconds)
    return others_share(before, reading())


def wait_for_quiet(within_seconds=120, look_seconds=1.0):
    """Look at the cores (``share_now``, ``look_seconds`` at a time) until other work
    leaves them, or ``within_seconds`` have passed: the last share seen (``is_loaded``
    of it says whether the wait ended busy). For a benchmark or test that measures
    quietly on a shared machine."""
    deadline = time.monotonic() + within_seconds
    while True:
        share = share_now(look_seconds)
        if not is_loaded(share) or time.monotonic() >= deadline:
            return share


def _between_0_and_1(value):
    return min(1.0, max(0.0, value))


def _usable_cpu_ids():
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return None


_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (guest is in user)
_WHOLE_COLUMNS = (0, 1, 2, 3, 4, 5, 6, 7)  # and idle, iowait


def _core_seconds(cores):
    """``(busy, total)`` seconds since boot of these cores (``core_seconds``), or (None,
    None) where /proc/stat cannot be read."""
    try:
        with open("/proc/stat") as handle:
            text = handle.read()
    except OSError:
        return None, None
    return core_seconds(text, cores, os.sysconf("SC_CLK_TCK"))


def core_seconds(stat_text, cores, ticks_per_second):
    """``(busy, total)`` seconds of ``cores`` (their ids) in the text of /proc/stat, or
    (None, None) where it names none of them."""
    wanted = {f"cpu{core}" for core in cores or ()}
    busy = total = 0
    for line in stat_text.splitlines():
        name, *columns = line.split() or [""]
        if name in wanted:
            ticks = [int(column) for column in columns]
            busy += sum(ticks[i] for i in _BUSY_COLUMNS if i < len(ticks))
            total += sum(ticks[i] for i in _WHOLE_COLUMNS if i < len(ticks))
    if not total:
        return None, None
    return busy / ticks_per_second, total / ticks_per_second
