"""What the benchmarks share: medians of functions timed round-robin, and this
machine's matmul rate."""

import statistics

import keras
import numpy as np

from zoo import backend
from zoo.layers.timing import alternate_rounds


def alternate(functions, rounds, repeats_per_round):
    """Median seconds per call of each function, measured round-robin."""
    samples = alternate_rounds(functions, rounds, repeats_per_round)
    return {name: statistics.median(values) for name, values in samples.items()}


def matmul_gflops(size=2048, repeats=10):
    """This machine's float32 throughput on one large matrix product (this backend)."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size), np.float32) for _ in range(2))
    product = backend.compile_function(keras.ops.matmul)
    seconds = alternate({"matmul": lambda: product(a, b)}, rounds=3, repeats_per_round=repeats)
    return 2 * size**3 / seconds["matmul"] / 1e9
