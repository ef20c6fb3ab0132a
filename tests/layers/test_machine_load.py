"""zoo.layers.machine_load: how much of this process's cores other work took."""

import os

import pytest

from zoo import backend
from zoo.layers import machine_load
from zoo.layers.machine_load import Reading


def _reading(wall=0.0, own_cpu=0.0, busy=None, total=None, load_average=None, cores=2):
    return Reading(wall, own_cpu, busy, total, load_average, cores)


@pytest.mark.parametrize("busy, own, expected", [
    (3.0, 1.9, 0.275),  # 2 cores for 2 s: 3 s busy, 1.9 of them this process's
    (1.9, 1.9, 0.0),  # all of it this process's
    (4.0, 0.0, 1.0),  # all of it others'
    (1.8, 1.9, 0.0),  # own time counted a tick ahead of /proc/stat's: none, not below
])
def test_others_share_is_the_cores_busy_time_less_this_processs(busy, own, expected):
    before = _reading(wall=10.0, own_cpu=5.0, busy=100.0, total=200.0)
    after = _reading(wall=12.0, own_cpu=5.0 + own, busy=100.0 + busy, total=204.0)
    assert machine_load.others_share(before, after) == pytest.approx(expected)


def test_without_proc_stat_the_load_average_less_this_processs_use_stands_in():
    before = _reading(wall=10.0, own_cpu=5.0)
    after = _reading(wall=12.0, own_cpu=7.0, load_average=2.5)  # this process: 1 core
    assert machine_load.others_share(before, after) == pytest.approx(0.75)
    assert machine_load.others_share(before, after._replace(load_average=None)) is None


def test_two_readings_in_one_tick_tell_nothing_of_others():
    same = _reading(busy=100.0, total=200.0)
    assert machine_load.others_share(same, same) == 0.0


@pytest.mark.parametrize("share, loaded", [(None, False), (0.0, False), (0.149, False),
                                           (0.15, True), (0.6, True)])
def test_loaded_from_15_percent_of_the_cores(share, loaded):
    assert machine_load.is_loaded(share) == loaded


STAT = """cpu  300 10 60 1000 5 1 2 7 0 0
cpu0 100 0 20 600 5 0 1 3 0 0
cpu1 200 10 40 400 0 1 1 4 50 0
intr 714033 0 0
"""


def test_core_seconds_count_only_the_usable_cores_and_steal_as_busy():
    # cpu1: user 200, nice 10, system 40, irq 1, softirq 1, steal 4 (guest is in user)
    assert machine_load.core_seconds(STAT, [1], 100) == (2.56, 6.56)
    assert machine_load.core_seconds(STAT, [0, 1], 100) == pytest.approx((3.80, 13.85))
    assert machine_load.core_seconds(STAT, [5], 100) == (None, None)


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux's /proc/stat")
def test_a_reading_on_linux_counts_this_processs_cores():
    first = machine_load.reading()
    assert first.cores == backend.usable_cores() and 0 < first.busy <= first.total
    share = machine_load.share_now(0.05)
    assert 0.0 <= share <= 1.0


def test_waiting_for_quiet_looks_until_the_cores_are_left_alone(monkeypatch):
    shares = iter([0.6, 0.4, 0.05, 0.9])
    monkeypatch.setattr(machine_load, "share_now", lambda seconds: next(shares))
    assert machine_load.wait_for_quiet(within_seconds=60) == 0.05


def test_waiting_for_quiet_gives_up_busy(monkeypatch):
    monkeypatch.setattr(machine_load, "share_now", lambda seconds: 0.6)
    assert machine_load.wait_for_quiet(within_seconds=0) == 0.6
