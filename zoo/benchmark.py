"""``zoo benchmark``: speed measured side by side, in one run, on this machine.

Timings on a shared machine are noisy, so every comparison here alternates the
contenders round by round (zoo, Keras, zoo, Keras, ...) and reports medians: a
slow moment of the machine hits both sides instead of one.
"""

import statistics
import time

import keras
import numpy as np
import tensorflow as tf

import zoo.layers


def _median_seconds(function, repeats):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def alternate(functions, rounds, repeats_per_round):
    """Median seconds per call of each function, measured round-robin."""
    for function in functions.values():  # trace and warm up
        function()
        function()
    samples = {name: [] for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            samples[name].append(_median_seconds(function, repeats_per_round))
    return {name: statistics.median(values) for name, values in samples.items()}


def matmul_gflops(size=2048, repeats=10):
    """This machine's float32 throughput on one large matrix product."""
    a = tf.random.normal((size, size))
    b = tf.random.normal((size, size))
    product = tf.function(lambda: tf.matmul(a, b))
    seconds = alternate({"matmul": lambda: product().numpy()}, rounds=3, repeats_per_round=repeats)
    return 2 * size**3 / seconds["matmul"] / 1e9


def recurrent_layer_flops(cell, batch, steps, input_dim, units):
    """Multiply-adds of a forward pass, counted as 2 FLOPs each: x W and h U per step."""
    gates = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}[cell]
    return 2 * batch * steps * (input_dim + units) * gates * units


def _layer_functions(layer, inputs):
    layer(inputs)

    @tf.function
    def infer():
        return layer(inputs, training=False)

    @tf.function
    def train():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(inputs, training=True))
        return tape.gradient(loss, [inputs] + layer.trainable_weights)

    def run(function):
        return lambda: [t.numpy() for t in tf.nest.flatten(function())]

    return run(infer), run(train)


def benchmark_layers(batch=64, steps=50, input_dim=256, units=256, rounds=7, repeats=5,
                     cells=("LSTM", "GRU"), printer=print):
    """Zoo layers against the Keras built-ins: training and inference throughput."""
    inputs = tf.Variable(tf.random.normal((batch, steps, input_dim), seed=0))
    peak = matmul_gflops()
    printer(
        f"zoo benchmark layers: batch {batch}, {steps} steps, {input_dim} inputs, "
        f"{units} units, float32, {tf.config.threading.get_intra_op_parallelism_threads() or 'all'} "
        f"intra-op threads; medians of {rounds} alternating rounds x {repeats} calls"
    )
    printer(f"this machine, one 2048x2048 matmul: {peak:.1f} GFLOP/s")
    header = f"{'layer':<6}{'mode':<11}{'zoo seq/s':>11}{'keras seq/s':>13}{'zoo/keras':>11}{'zoo GFLOP/s':>13}{'of matmul':>11}"
    printer(header)
    results = []
    for cell in cells:
        keras.utils.set_random_seed(0)
        zoo_layer = getattr(zoo.layers, cell)(units)
        keras_layer = getattr(keras.layers, cell)(units)
        zoo_infer, zoo_train = _layer_functions(zoo_layer, inputs)
        keras_infer, keras_train = _layer_functions(keras_layer, inputs)
        keras_layer.set_weights(zoo_layer.get_weights())
        np.testing.assert_allclose(zoo_infer()[0], keras_infer()[0], atol=1e-4)
        forward_flops = recurrent_layer_flops(cell, batch, steps, input_dim, units)
        for mode, zoo_fn, keras_fn, flops in (
            ("inference", zoo_infer, keras_infer, forward_flops),
            # backward: gradients for the inputs, W and U -- twice the forward work
            ("training", zoo_train, keras_train, 3 * forward_flops),
        ):
            seconds = alternate({"zoo": zoo_fn, "keras": keras_fn}, rounds, repeats)
            ratio = seconds["keras"] / seconds["zoo"]
            gflops = flops / seconds["zoo"] / 1e9
            printer(
                f"{cell:<6}{mode:<11}{batch / seconds['zoo']:>11.0f}{batch / seconds['keras']:>13.0f}"
                f"{ratio:>11.2f}{gflops:>13.1f}{gflops / peak:>10.0%}"
            )
            results.append(
                {"layer": cell, "mode": mode, "zoo_seconds": seconds["zoo"],
                 "keras_seconds": seconds["keras"], "ratio": ratio, "zoo_gflops": gflops,
                 "matmul_gflops": peak}
            )
    return results
