"""``zoo benchmark layers``: the zoo's recurrent layers against Keras' built-ins."""

import keras
import numpy as np

import zoo.layers
from zoo import backend
from zoo.benchmarks.timing import alternate, matmul_gflops


def recurrent_layer_flops(cell, batch, steps, input_dim, units):
    """Multiply-adds of a forward pass, counted as 2 FLOPs each: x W and h U per step."""
    gates = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}[cell]
    return 2 * batch * steps * (input_dim + units) * gates * units


def _layer_functions(layer, inputs):
    """``(inference, training)``: each runs the layer on ``inputs`` (numpy), compiled
    for this backend; training also computes the gradients for the inputs and weights."""
    layer(inputs)
    infer = backend.compile_function(lambda x: layer(x, training=False), layer.variables)
    return lambda: infer(inputs), _training_function(layer, inputs)


def _training_function(layer, inputs):
    name = backend.name()
    if name == "tensorflow":
        import tensorflow as tf

        def gradients(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(layer(x, training=True))
            return tape.gradient(loss, [x] + layer.trainable_weights)

        train = backend.compile_function(gradients)
        return lambda: train(inputs)
    if name == "jax":
        import jax

        def loss(trainable, non_trainable, x):
            outputs, _ = layer.stateless_call(trainable, non_trainable, x, training=True)
            return jax.numpy.sum(outputs)

        gradients = jax.jit(jax.grad(loss, argnums=(0, 2)))

        def train():
            trainable = [v.value for v in layer.trainable_variables]
            non_trainable = [v.value for v in layer.non_trainable_variables]
            return jax.block_until_ready(gradients(trainable, non_trainable, inputs))

        return train
    import torch

    def train():
        x = torch.tensor(inputs, requires_grad=True)
        loss = torch.sum(layer(x, training=True))
        return torch.autograd.grad(loss, [x] + [v.value for v in layer.trainable_weights])

    return train


def _threads():
    if backend.is_tensorflow():
        import tensorflow as tf

        return tf.config.threading.get_intra_op_parallelism_threads() or "all"
    if backend.name() == "torch":
        import torch

        return torch.get_num_threads()
    return "all"


def benchmark_layers(batch=64, steps=50, input_dim=256, units=256, rounds=7, repeats=5,
                     cells=("LSTM", "GRU"), remeasure=False, printer=print):
    """Zoo layers against the Keras built-ins, on this Keras backend: training and
    inference throughput. ``remeasure``: the inference layouts of these shapes are
    measured again first (``kernel_choice.choose``), their figures printed."""
    if remeasure:
        backend.require_tensorflow("zoo benchmark layers --remeasure (the inference layouts)")
    inputs = np.random.default_rng(0).standard_normal((batch, steps, input_dim), np.float32)
    peak = matmul_gflops()
    printer(
        f"zoo benchmark layers on {backend.name()}: batch {batch}, {steps} steps, "
        f"{input_dim} inputs, {units} units, float32, {_threads()} intra-op threads; "
        f"medians of {rounds} alternating rounds x {repeats} calls"
    )
    printer(f"this machine, one 2048x2048 matmul: {peak:.1f} GFLOP/s")
    header = f"{'layer':<6}{'mode':<11}{'zoo seq/s':>11}{'keras seq/s':>13}{'zoo/keras':>11}{'zoo GFLOP/s':>13}{'of matmul':>11}"
    printer(header)
    results = []
    for cell in cells:
        keras.utils.set_random_seed(0)
        zoo_layer = getattr(zoo.layers, cell)(units)
        keras_layer = getattr(keras.layers, cell)(units)
        if backend.is_tensorflow():  # before the layer's first call traces it
            zoo_layer.build(inputs.shape)
            printer(_inference_layout_line(zoo_layer, input_dim, units, remeasure, printer))
        zoo_infer, zoo_train = _layer_functions(zoo_layer, inputs)
        keras_infer, keras_train = _layer_functions(keras_layer, inputs)
        keras_layer.set_weights(zoo_layer.get_weights())
        np.testing.assert_allclose(zoo_infer(), keras_infer(), atol=1e-4)
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
                {"layer": cell, "mode": mode, "backend": backend.name(),
                 "zoo_seconds": seconds["zoo"], "keras_seconds": seconds["keras"],
                 "ratio": ratio, "zoo_gflops": gflops, "matmul_gflops": peak}
            )
    return results


def _inference_layout_line(layer, input_dim, units, remeasure=False, printer=print):
    from zoo.layers import kernel_choice, sequence_kernels

    kind, _ = layer.cell.fused_recurrence()
    if remeasure:
        decision = kernel_choice.choose(kind, input_dim, units, "float32",
                                        sequence_kernels.layout_calls)
        _print_layout_decision(kind, decision, printer)
    forced = kernel_choice.forced_layout()
    if forced:
        return f"{kind}: inference loop {forced} ({kernel_choice.LAYOUT_VARIABLE})"
    threshold = kernel_choice.feature_major_from(kind, input_dim, units, "float32",
                                                 sequence_kernels.layout_calls)
    where = "at no batch size" if threshold is None else f"from batch {threshold}"
    return (f"{kind}: inference loop feature-major {where}, batch-major below "
            f"(measured on this machine, {kernel_choice.cache_path()})")


def _print_layout_decision(kind, decision, printer):
    """Each measured batch's feature-major speed-up (batch-major's time over
    feature-major's) with its 95% interval and what it decides, then whether it is kept."""
    from zoo.layers import kernel_choice

    for batch, speedup in decision["batches"].items():
        low, high = speedup["interval_95"]
        printer(f"{kind}: batch {batch:>3}: feature-major speed-up {speedup['ratio']:.2f} "
                f"({low:.2f}-{high:.2f}): {speedup['verdict'] or 'undecided'}")
    if decision["kept"]:
        printer(f"{kind}: decided at every batch: kept in {kernel_choice.cache_path()}")
    else:
        printer(f"{kind}: undecided (an interval across 1 and wider than "
                f"{kernel_choice.EQUIVALENT_WITHIN}x): used by this run only, measured "
                "again by the next one")
