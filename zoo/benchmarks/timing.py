"""What the benchmarks share: medians of functions timed round-robin, this machine's
matmul rate, the number of threads the frameworks compute on, and other work to measure
under (``busy_cores``)."""

import contextlib
import statistics
import subprocess
import sys
import time

import keras
import numpy as np

from zoo import backend
from zoo.layers.timing import alternate_rounds, paired_speed_ratio


def alternate(functions, rounds, repeats_per_round):
    """Median seconds per call of each function, measured round-robin."""
    samples = alternate_rounds(functions, rounds, repeats_per_round)
    return {name: statistics.median(values) for name, values in samples.items()}


def median_with_interval(seconds):
    """``(median, [low, high])`` of per-round seconds, the interval a 95% bootstrap one
    of the median: ``paired_speed_ratio``'s resampling, against a baseline of 1 s."""
    paired = paired_speed_ratio(np.ones(len(seconds)), seconds)
    return paired["ratio"], paired["interval_95"]


def repeats_for(function, seconds_per_round=0.2, most=10):
    """Calls per round so that a round of ``function`` lasts about ``seconds_per_round``
    (a call of a few milliseconds is timed several times, one of a second once)."""
    start = time.perf_counter()
    function()
    return max(1, min(most, round(seconds_per_round / (time.perf_counter() - start))))


def matmul_gflops(size=2048, repeats=10):
    """This machine's float32 throughput on one large matrix product (this backend)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size), np.float32) for _ in range(2))
    product = backend.compile_function(keras.ops.matmul)
    seconds = alternate({"matmul": lambda: product(a, b)}, rounds=3, repeats_per_round=repeats)
    return 2 * size**3 / seconds["matmul"] / 1e9


def use_threads(count, inter_op=None):
    """Compute on ``count`` threads: TensorFlow's intra-op thread pool (the threads one
    operation is split across) and its inter-op pool (operations run side by side;
    ``inter_op``, default ``count``) and, where it is loaded, PyTorch's. TensorFlow fixes
    its pools when it first runs anything, so this comes first in a process (a ValueError
    after)."""
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(count)
        tf.config.threading.set_inter_op_parallelism_threads(inter_op or count)
    except RuntimeError:
        raise ValueError(
            f"Cannot compute on {count} threads: TensorFlow has already started on "
            f"{tensorflow_threads()} intra-op threads in this process, and sets its thread "
            "pools once.") from None
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(count)


def thread_setting(text):
    """``"N"`` (N threads in both of TensorFlow's pools) or ``"N/M"`` (N intra-op, M
    inter-op) as ``(N, M)``, or a ValueError naming what is accepted."""
    parts = text.split("/")
    if len(parts) in (1, 2) and all(part.isdigit() and int(part) > 0 for part in parts):
        return int(parts[0]), int(parts[-1])
    raise ValueError(f"a thread setting is N (threads) or N/M (intra-op/inter-op threads), "
                     f"positive whole numbers; received {text!r}.")


def tensorflow_threads():
    """TensorFlow's intra-op threads: a number, or "all" (its default, one per core)."""
    import tensorflow as tf

    return tf.config.threading.get_intra_op_parallelism_threads() or "all"


@contextlib.contextmanager
def busy_cores(count=None):
    """Other work on ``count`` cores (default: every one this process may use) while the
    block runs: a busy loop each, in a process of its own (it inherits this process's
    CPU affinity, so it competes for the same cores), ended when the block ends."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(count or backend.usable_cores())]
    try:
        time.sleep(0.2)  # started: each loop holds its core from here
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
