"""``zoo benchmark layers``: the zoo's recurrent layers against Keras' built-ins, and
(``--against torch``) against PyTorch's ``torch.nn.LSTM`` and ``GRU`` as well."""

import contextlib
import functools
import os
from pathlib import Path

import keras
import numpy as np

import zoo.layers
from zoo import backend
from zoo.benchmarks.timing import (alternate, busy_cores, matmul_gflops, median_with_interval,
                                   repeats_for, tensorflow_threads)
from zoo.layers.timing import alternate_rounds, paired_speed_ratio

TORCH_EXTRA = 'pip install "keras-sequence-zoo[torch]"'
SAME_OUTPUTS_WITHIN = 1e-5  # float32 rounding over 100 steps stays well inside it


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
        return tensorflow_threads()
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
    choice = kernel_choice.chosen(kind, input_dim, units, "float32",
                                  sequence_kernels.layout_calls)
    threshold = choice["feature_major_from"]
    where = "at no batch size" if threshold is None else f"from batch {threshold}"
    below = "batch-major in blocks" if choice["batch_major_in_blocks"] else "batch-major"
    return (f"{kind}: inference loop feature-major {where}, {below} below "
            f"(measured on this machine, {kernel_choice.cache_path()}"
            f"{_entry_state(kernel_choice.kept_entry(kind, input_dim, units, 'float32'))})")


def _entry_state(entry):
    """What the layout line adds about the file's entry: nothing when it is kept for good."""
    from zoo.layers import kernel_choice

    if entry is None:
        return ": not kept, measured again by the next run"
    if kernel_choice.kept_for_good(entry):
        return ""
    if "load" not in entry:
        return ": kept before the load was recorded, measured again at a quiet start"
    return (f": measured while other work took {entry['load']:.0%} of the cores, "
            "measured again at a quiet start")


def _print_layout_decision(kind, decision, printer):
    """The blocks' speed-up over batch-major at the smallest batch (when measured), each
    measured batch's feature-major speed-up (the batch-major variant's time over
    feature-major's), each with its 95% interval and what it decides, then the load
    while measuring and what became of the kept choice."""
    from zoo.layers import kernel_choice

    def figures(speedup):
        low, high = speedup["interval_95"]
        return f"{speedup['ratio']:.2f} ({low:.2f}-{high:.2f}): {speedup['verdict'] or 'undecided'}"

    if decision["blocks"] is not None:
        printer(f"{kind}: batch {min(decision['batches']):>3}: batch-major in blocks "
                f"speed-up {figures(decision['blocks'])}")
    for batch, speedup in decision["batches"].items():
        printer(f"{kind}: batch {batch:>3}: feature-major speed-up {figures(speedup)}")
    path = kernel_choice.cache_path()
    outcome = {
        "kept for good": f"decided at every batch: kept for good in {path}",
        "kept until a quiet start": f"decided at every batch, under load: kept in {path} "
                                    "until a quiet start measures again",
        "left as it was": f"measured under load: used by this run only, {path} keeps the "
                          "choice measured quietly",
        "removed": f"undecided (at some batch the layout chosen may be more than "
                   f"{kernel_choice.EQUIVALENT_WITHIN}x slower): used by this run only, "
                   "measured again by the next one"}[decision["entry"]]
    printer(f"{kind}: {outcome} ({_load_words(decision['load'])})")


def _entry_load_words(entry):
    if entry is None:
        return "none kept"
    if "load" not in entry:
        return "kept before the load was recorded"
    return _share_words(entry["load"])


def _load_words(share):
    from zoo.layers import machine_load

    return f"{_share_words(share)}; under load from {machine_load.LOADED_FROM:.0%}"


def _share_words(share):
    if share is None:
        return "the load while measuring could not be read"
    return f"other work took {share:.0%} of the cores while measuring"


CACHE_CASES = ("under load", "quiet", "kept before")


def benchmark_layout_caches(folder, batches=(1, 16, 64), steps=50, input_dim=256, units=256,
                            rounds=7, cells=("LSTM", "GRU"), printer=print):
    """The layers with a layout cache written under load against one written quietly,
    side by side in one process (issue 52), on TensorFlow:

    1. ``folder/under_load.json``: each cell's layouts measured while a busy loop holds
       every usable core (``busy_cores``); ``folder/quiet.json``: measured after the
       loops end (each decision printed, with the load while measuring);
    2. each cache met as a new process meets it (``kernel_choice.chosen`` after
       ``forget``): an entry measured under load is measured again if the machine is
       quiet now;
    3. per cell and batch, inference of the zoo layer traced with each cache's choice
       ("under load", "quiet") and with the choice measured under load ("kept before":
       what the rule before kept for good when it was decided, and what the loaded
       process ran), and of Keras' layer, alternating in ``rounds`` rounds: each one's
       median, and its speed over the quiet cache's layer and over Keras' (medians of
       the rounds' ratios, 95% intervals).

    Each quiet step first waits (up to two minutes) for other work on a shared machine
    to leave the cores, and says so where it did not.

    Returns the rows (a dict per cell and batch)."""
    from zoo.layers import kernel_choice

    backend.require_tensorflow("the layout caches' benchmark")
    if kernel_choice.forced_layout():
        raise ValueError(f"{kernel_choice.LAYOUT_VARIABLE} fixes the layout: unset it (or "
                         "set it to measure) to compare the layouts measured.")
    folder = Path(folder)
    layers = {cell: getattr(zoo.layers, cell)(units) for cell in cells}
    for layer in layers.values():
        layer.build((None, steps, input_dim))
    shapes = {cell: (layer.cell.fused_recurrence()[0], input_dim, units, "float32")
              for cell, layer in layers.items()}
    printer(f"layout caches: {', '.join(cells)} of {input_dim} inputs and {units} units; "
            f"under load: a busy loop on each of {backend.usable_cores()} cores")
    with busy_cores():
        kept_before = _measure_into(folder / "under_load.json", shapes, printer)
    _wait_for_quiet(printer)
    _measure_into(folder / "quiet.json", shapes, printer)
    choices = {"kept before": kept_before}
    for case, name in (("under load", "under_load.json"), ("quiet", "quiet.json")):
        _wait_for_quiet(printer)
        choices[case] = _met_by_a_new_process(folder / name, layers, shapes, printer)
    printer(f"{'case':<16}{'layouts: under load, quiet, kept before':<48}"
            + "".join(f"{name + ' ms':>16}" for name in (*CACHE_CASES, "keras"))
            + f"{'under load / quiet':>22}{'kept before / quiet':>22}"
            + f"{'zoo / keras: each':>20}")
    rows = []
    for cell, layer in layers.items():
        keras_layer = getattr(keras.layers, cell)(units)
        keras_layer.build((None, steps, input_dim))
        keras_layer.set_weights(layer.get_weights())
        for batch in batches:
            _wait_for_quiet(printer)  # the choices are compared where they were measured
            rows.append(_compare_choices(cell, layer, keras_layer, shapes[cell], batch, steps,
                                         {case: choices[case][cell] for case in CACHE_CASES},
                                         rounds))
            printer(_choices_row(rows[-1]))
    return rows


def _wait_for_quiet(printer):
    """Before what the benchmark measures or meets quietly: wait up to two minutes for
    other work (on a shared machine) to leave the cores, and say so if it did not."""
    from zoo.layers import machine_load

    share = machine_load.wait_for_quiet()
    if machine_load.is_loaded(share):
        printer(f"the machine stayed busy (other work took {share:.0%} of the cores): what "
                "follows is not measured quietly")


@contextlib.contextmanager
def _layout_cache(path):
    """``kernel_choice`` keeps its choices in ``path`` while the block runs."""
    from zoo.layers import kernel_choice

    before = os.environ.get(kernel_choice.CACHE_VARIABLE)
    os.environ[kernel_choice.CACHE_VARIABLE] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(kernel_choice.CACHE_VARIABLE)
        else:
            os.environ[kernel_choice.CACHE_VARIABLE] = before


def _measure_into(path, shapes, printer):
    """Each shape's layouts measured into ``path`` as a new process does (``choose``),
    its decision printed; returns ``{cell: choice}``."""
    from zoo.layers import kernel_choice, sequence_kernels

    kernel_choice.forget()
    printer(f"measuring into {path}:")
    choices = {}
    with _layout_cache(path):
        for cell, shape in shapes.items():
            decision = kernel_choice.choose(*shape, sequence_kernels.layout_calls)
            _print_layout_decision(shape[0], decision, printer)
            choices[cell] = {name: decision[name] for name in kernel_choice.CHOICE_KEYS}
    return choices


def _met_by_a_new_process(path, layers, shapes, printer):
    """``{cell: choice}`` a new process runs with the cache ``path``, its layout lines
    printed."""
    from zoo.layers import kernel_choice, sequence_kernels

    kernel_choice.forget()
    printer(f"a new process with {path}:")
    with _layout_cache(path):
        for cell, layer in layers.items():
            before = kernel_choice.kept_entry(*shapes[cell])
            printer(_inference_layout_line(layer, *shapes[cell][1:3]))
            after = kernel_choice.kept_entry(*shapes[cell])
            if before != after:
                printer(f"{shapes[cell][0]}: measured again at this start; before: "
                        f"{_entry_load_words(before)}; now: {_entry_load_words(after)}")
        return {cell: kernel_choice.chosen(*shape, sequence_kernels.layout_calls)
                for cell, shape in shapes.items()}


def _compare_choices(cell, layer, keras_layer, shape, batch, steps, choices, rounds):
    """Inference of ``layer`` traced with each choice, and of ``keras_layer``, timed in
    alternating rounds at one batch: the row ``_choices_row`` prints."""
    from zoo.layers import kernel_choice

    inputs = np.random.default_rng(0).standard_normal((batch, steps, shape[1]), np.float32)
    calls = {}
    for case, choice in choices.items():
        kernel_choice.use(*shape, choice)
        infer = backend.compile_function(lambda x: layer(x, training=False), layer.variables)
        infer(inputs)  # traced now, with this choice
        calls[case] = functools.partial(infer, inputs)
    keras_infer = backend.compile_function(lambda x: keras_layer(x, training=False),
                                           keras_layer.variables)
    calls["keras"] = functools.partial(keras_infer, inputs)
    check_same_outputs({name: call() for name, call in calls.items()}, within=1e-4)
    samples = alternate_rounds(calls, rounds, repeats_for(calls["quiet"]))
    return {"layer": cell, "batch": batch,
            "layouts": {case: kernel_choice.layout_for_batch(choice, batch)
                        for case, choice in choices.items()},
            "seconds": {name: float(np.median(seconds)) for name, seconds in samples.items()},
            "over_quiet": {case: paired_speed_ratio(samples[case], samples["quiet"])
                           for case in ("under load", "kept before")},
            "over_keras": {case: paired_speed_ratio(samples[case], samples["keras"])
                           for case in CACHE_CASES}}


def _choices_row(row):
    def ratio(paired):
        low, high = paired["interval_95"]
        return f"{paired['ratio']:.2f} ({low:.2f}-{high:.2f})"

    layouts = ", ".join(row["layouts"][case] for case in CACHE_CASES)
    over_keras = " ".join(f"{row['over_keras'][case]['ratio']:.2f}" for case in CACHE_CASES)
    return (f"{row['layer'] + ' batch ' + str(row['batch']):<16}{layouts:<48}"
            + "".join(f"{1e3 * row['seconds'][name]:>16.1f}" for name in (*CACHE_CASES, "keras"))
            + "".join(f"{ratio(row['over_quiet'][case]):>22}"
                      for case in ("under load", "kept before"))
            + f"{over_keras:>20}")


def import_torch():
    """PyTorch (the optional extra ``torch``), or an ImportError that says how to get it."""
    try:
        import torch
    except ImportError:
        raise ImportError(f"zoo benchmark layers --against torch needs PyTorch, the zoo's "
                          f"optional extra torch: {TORCH_EXTRA}") from None
    return torch


# Where torch keeps each of Keras' gate blocks: Keras' LSTM has i, f, c, o and torch's
# i, f, g, o (the same order); Keras' GRU has z, r, h and torch's r, z, n.
_TORCH_GATE_ORDER = {"LSTM": (0, 1, 2, 3), "GRU": (1, 0, 2)}


def torch_layer(layer):
    """``torch.nn.LSTM`` or ``GRU`` (batch first) with the weights of a built zoo or Keras
    ``LSTM``/``GRU`` layer. Keras keeps ``W`` as ``[inputs, gates * units]`` and torch
    its transpose, gate blocks reordered (``_TORCH_GATE_ORDER``); an LSTM's one bias
    goes to torch's input bias, a reset-after GRU's two (``[input; recurrent]``: the
    recurrent one inside ``r * (h U + b)``, as torch's ``b_hn``) to ``bias_ih`` and
    ``bias_hh``. Other configurations compute other equations: a ValueError."""
    torch = import_torch()
    cell_name = "GRU" if isinstance(layer, keras.layers.GRU) else "LSTM"
    cell = layer.cell
    if not cell.use_bias or (cell_name == "GRU" and not cell.reset_after):
        raise ValueError(f"torch.nn.{cell_name} computes a {cell_name} with biases"
                         f"{' and reset_after=True' if cell_name == 'GRU' else ''}; "
                         f"got use_bias={cell.use_bias}"
                         f"{f', reset_after={cell.reset_after}' if cell_name == 'GRU' else ''}.")
    order = _TORCH_GATE_ORDER[cell_name]

    def torch_weight(matrix):  # [..., gates * units] -> [gates * units, ...], torch's order
        blocks = np.split(np.asarray(matrix), len(order), axis=-1)
        return torch.from_numpy(np.concatenate([blocks[i] for i in order], axis=-1).T.copy())

    bias = np.asarray(cell.bias)
    input_bias, recurrent_bias = (bias, np.zeros_like(bias)) if cell_name == "LSTM" else bias
    module = getattr(torch.nn, cell_name)(cell.kernel.shape[0], cell.units, batch_first=True)
    with torch.no_grad():
        for weight, value in ((module.weight_ih_l0, cell.kernel),
                              (module.weight_hh_l0, cell.recurrent_kernel),
                              (module.bias_ih_l0, input_bias),
                              (module.bias_hh_l0, recurrent_bias)):
            weight.copy_(torch_weight(value))
    return module


def _torch_functions(module, inputs):
    """``(inference, training)`` of a torch layer on ``inputs``, as ``_layer_functions``:
    the last step's output (what the zoo and Keras layers return); training also computes
    the gradients for the inputs and every weight."""
    torch = import_torch()
    x = torch.from_numpy(inputs)

    def infer():
        with torch.inference_mode():
            return module(x)[0][:, -1].numpy()

    def train():
        x_watched = x.detach().requires_grad_()
        loss = torch.sum(module(x_watched)[0][:, -1])
        return torch.autograd.grad(loss, [x_watched, *module.parameters()])

    return infer, train


def check_same_outputs(outputs, within=SAME_OUTPUTS_WITHIN):
    """``outputs``: each framework's output on the same inputs and weights; a ValueError
    naming the largest difference if any differs from the first by more than ``within``."""
    (first_name, first), *others = outputs.items()
    for name, output in others:
        difference = float(np.max(np.abs(np.asarray(output) - first)))
        if not difference <= within:
            raise ValueError(f"{name}'s outputs differ from {first_name}'s by up to "
                             f"{difference:.2g} (more than {within:g}) on the same inputs and "
                             "weights: the weights were not copied faithfully; nothing timed.")


FRAMEWORKS = ("zoo", "keras", "torch")


def benchmark_layers_against_torch(batches=(1, 64), steps=100, input_dim=256, units=512,
                                   rounds=7, cells=("LSTM", "GRU"), matmul_size=1024,
                                   printer=print):
    """The zoo's layers, Keras' and PyTorch's with the same weights, alternating in one
    process, for each cell, batch size and mode (inference; training: forward and
    backward, for the inputs and weights): medians with 95% intervals, the speed ratios
    zoo / Keras and zoo / torch (above 1: the zoo faster; the median of the rounds'
    ratios, with its interval) and each one's share of this machine's matmul rate.
    That rate is the faster of TensorFlow's and torch's ``matmul_size`` square matmul,
    timed in the same rounds as each case (one measured apart, on a shared machine, was
    slower than the layers in a busier spell); training counts as 3x the forward FLOPs.
    Threads: TensorFlow's, as ``timing.use_threads`` set them before; torch's matched."""
    backend.require_tensorflow("zoo benchmark layers --against torch")
    torch = import_torch()
    threads = tensorflow_threads()
    if threads != "all":
        torch.set_num_threads(threads)  # matched to TensorFlow's
    printer(f"zoo benchmark layers --against torch: {steps} steps, {input_dim} inputs, {units} "
            f"units, float32; TensorFlow {threads} intra-op threads, torch "
            f"{torch.get_num_threads()} threads; medians of {rounds} alternating rounds (95% "
            "intervals)")
    printer(f"share: of the faster {matmul_size}x{matmul_size} matmul, TensorFlow's or torch's, "
            "timed in the same rounds; training counted as 3x the forward pass's FLOPs")
    printer(f"{'case':<24}" + "".join(f"{name + ' ms':>24}" for name in FRAMEWORKS)
            + f"{'zoo/keras':>20}{'zoo/torch':>20}{'share zoo keras torch':>23}")
    matmuls = _matmul_calls(matmul_size, torch)
    results = []
    for cell in cells:
        for batch in batches:
            results += _compare_cell(cell, batch, steps, input_dim, units, rounds, matmuls,
                                     threads, printer)
    return results


def _matmul_calls(size, torch):
    """``({name: call}, FLOPs of a call)``: one square float32 matmul in each framework."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((size, size), np.float32) for _ in range(2))
    tf_a, tf_b, torch_a, torch_b = tf.constant(a), tf.constant(b), torch.tensor(a), torch.tensor(b)
    tf_matmul = tf.function(tf.matmul)
    calls = {"tensorflow matmul": lambda: tf_matmul(tf_a, tf_b),
             "torch matmul": lambda: torch_a @ torch_b}
    return calls, 2 * size**3


def _compare_cell(cell, batch, steps, input_dim, units, rounds, matmuls, threads, printer):
    """One cell at one batch size, inference and training: its two table rows."""
    inputs = np.random.default_rng(0).standard_normal((batch, steps, input_dim), np.float32)
    keras.utils.set_random_seed(0)
    layers = {"zoo": getattr(zoo.layers, cell)(units), "keras": getattr(keras.layers, cell)(units)}
    layers["zoo"].build(inputs.shape)
    layers["keras"].build(inputs.shape)
    layers["keras"].set_weights(layers["zoo"].get_weights())
    functions = {name: _layer_functions(layer, inputs) for name, layer in layers.items()}
    functions["torch"] = _torch_functions(torch_layer(layers["zoo"]), inputs)
    check_same_outputs({name: infer() for name, (infer, _) in functions.items()})
    forward_flops = recurrent_layer_flops(cell, batch, steps, input_dim, units)
    matmul_calls, matmul_flops = matmuls
    results = []
    for mode, flops in (("inference", forward_flops), ("training", 3 * forward_flops)):
        calls = {name: train if mode == "training" else infer
                 for name, (infer, train) in functions.items()}
        samples = alternate_rounds({**calls, **matmul_calls}, rounds, repeats_for(calls["zoo"]))
        peak = max(matmul_flops / np.median(samples[name]) / 1e9 for name in matmul_calls)
        result = {"layer": cell, "mode": mode, "batch": batch, "steps": steps,
                  "input_dim": input_dim, "units": units, "threads": threads,
                  "matmul_gflops": peak}
        for name in FRAMEWORKS:
            median, interval = median_with_interval(samples[name])
            result[name] = {"seconds": median, "interval_95": interval,
                            "share_of_matmul": flops / median / 1e9 / peak}
        for other in ("keras", "torch"):
            result[f"zoo_over_{other}"] = paired_speed_ratio(samples["zoo"], samples[other])
        printer(_case_row(result))
        results.append(result)
    return results


def _case_row(result):
    def milliseconds(name):
        low, high = result[name]["interval_95"]
        return f"{1e3 * result[name]['seconds']:.1f} ({1e3 * low:.1f}-{1e3 * high:.1f})"

    def ratio(other):
        paired = result[f"zoo_over_{other}"]
        low, high = paired["interval_95"]
        return f"{paired['ratio']:.2f} ({low:.2f}-{high:.2f})"

    shares = " ".join(f"{result[name]['share_of_matmul']:.0%}" for name in FRAMEWORKS)
    case = f"{result['layer']} {result['mode']}, batch {result['batch']}"
    return (f"{case:<24}" + "".join(f"{milliseconds(name):>24}" for name in FRAMEWORKS)
            + f"{ratio('keras'):>20}{ratio('torch'):>20}{shares:>23}")
