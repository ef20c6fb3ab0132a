"""``zoo benchmark training``: how fast a translator trains, per Keras backend, against
the same model built from plain Keras layers.

Each backend (and each ``--threads`` count) runs in a process of its own
(``KERAS_BACKEND`` is fixed once a process, and so are TensorFlow's thread pools). In
that process the zoo's ``AttentionSeq2Seq`` and ``PlainAttentionTranslator`` (the same
network of Keras' own layers: the same sizes and parameter count) take training steps
(``model.train_on_batch``: Keras' compiled train step, which runs ``model.train_step``,
as ``zoo train`` does) on the same batches, compiled the same way (the recipe's Adam,
clipping, moving average of the weights and smoothed loss), in alternating rounds:

- fixed shapes: random ids, ``batches`` rows of ``width`` tokens each side, no padding;
- real batches: ``zoo train``'s batches of the recipe's mix (``mix_batches``), padded to
  the recipe's ``length_buckets``, a few spread over their widths.

Per model and case: target tokens a step (not padding), the step's time (median of the
rounds, 95% bootstrap interval), target tokens/s, the share of the device's matmul rate
that the step's products reach, and the compile time of each shape (its first step less
a warm step of the same batch). Per case, zoo over Keras: the median of the rounds'
speed ratios with its 95% interval. The matmul rate is measured in the same rounds on
the same device: the faster of a product of the output layer's sizes (``[rows x
embedding] x [embedding x vocabulary]``) and a large square one.

Each ``--precision`` runs in a process of its own: float32, or mixed_bfloat16 (Keras' mixed
precision, ``zoo.precision``: both models compute in bfloat16 on float32 weights), whose
matmul rate is measured in bfloat16, the limit of its step.

The JAX and PyTorch processes import nothing of TensorFlow (a GPU machine may have none):
the batches reach them as a ``.npz`` file, made here from the corpora, or carried along
(``batches_file``).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

DEFAULT_RECIPE = "gru_bahdanau_cmn_en"
BACKENDS = ("tensorflow", "jax", "torch")
FIXED_BATCHES = (64, 256, 512)
FIXED_WIDTH = 32
REAL_BATCHES = 8
ROUNDS = 5
# Products of training a step, over the forward pass's: each forward product has two in
# the backward pass (the gradients of its input and of its weight), as ``zoo benchmark
# layers`` counts.
TRAINING_OVER_FORWARD = 3
SQUARE_MATMUL = {"cpu": 2048, "gpu": 8192}

_HERE = Path(__file__).resolve().parents[2]  # this checkout (zoo/benchmarks/training.py)


# -- what is measured: sizes, batches ---------------------------------------------------------


def model_sizes(name, embedding_dim=None, units=None, vocabulary=None):
    """The network ``zoo benchmark training NAME`` builds: the recipe's ``model_config``
    (``embedding_dim``, ``units``, ``dropout``, ``attention_units``) and vocabulary sizes
    (the shipped preset's, else the recipe's), each overridden where given
    (``vocabulary``: ``(source, target)``); with the recipe's optimisation."""
    from zoo.training import recipes

    recipe = recipes.load_recipe(name)
    if recipe.task != "translation" or recipe.model != "AttentionSeq2Seq":
        raise ValueError(f"zoo benchmark training measures AttentionSeq2Seq translation "
                         f"recipes; {name!r} is a {recipe.task} recipe of {recipe.model}.")
    config = recipe.model_config
    sizes = {"embedding_dim": config.get("embedding_dim", 256), "units": config.get("units", 256),
             "dropout": config.get("dropout", 0.2)}
    sizes["attention_units"] = config.get("attention_units") or sizes["units"]
    shipped = _shipped_config(name)
    sizes["source_vocabulary_size"] = shipped.get("source_vocabulary_size",
                                                  recipe.vocabulary.get("source_size"))
    sizes["target_vocabulary_size"] = shipped.get("target_vocabulary_size",
                                                  recipe.vocabulary.get("target_size"))
    for key, value in (("embedding_dim", embedding_dim), ("units", units)):
        if value is not None:
            sizes[key] = value
            if key == "units":
                sizes["attention_units"] = value
    if vocabulary is not None:
        sizes["source_vocabulary_size"], sizes["target_vocabulary_size"] = vocabulary
    if not all(isinstance(sizes[k], int) and sizes[k] > 0 for k in (
            "source_vocabulary_size", "target_vocabulary_size")):
        raise ValueError(f"{name!r} names no vocabulary sizes (no shipped preset, no "
                         "vocabulary source_size/target_size): give --vocabulary SOURCE TARGET.")
    training = {"learning_rate": recipe.learning_rate, "ema_momentum": recipe.ema_momentum,
                "label_smoothing": recipe.label_smoothing}
    return sizes, training


def _shipped_config(name):
    from zoo import presets

    try:
        directory = presets.resolve(name)
    except presets.PresetError:  # no preset of that name ships: the recipe's sizes
        return {}
    config = json.loads((Path(directory) / "config.json").read_text())
    return config.get("config", {})


def fixed_batch(batch, width, sizes, seed=0):
    """``(source, target in, target out)`` of random ids, ``batch`` rows of ``width``
    tokens each side, none of them padding (ids from 4: past the special ones)."""
    rng = np.random.default_rng(seed)
    source = rng.integers(4, sizes["source_vocabulary_size"], (batch, width)).astype(np.int32)
    target = rng.integers(4, sizes["target_vocabulary_size"], (batch, width + 1)).astype(np.int32)
    return source, target[:, :-1], target[:, 1:]


def mix_batches(name, count, batch_size=None, data_dir=None, seed=0, printer=print):
    """``count`` batches as ``zoo train NAME`` makes them from its recipe's mix:
    ``(source, target in, target out)`` id arrays padded to the recipe's
    ``length_buckets``, in the shipped preset's vocabularies.

    A pass of ``zoo train`` draws the mix by its weights, shuffles it and sorts it by
    length (``batches.mixed_dataset``). Here the corpora are read and cleaned as ``zoo
    train`` reads them, the first pass is drawn (seeded) and tokenized, batched by
    ``translation.rows_dataset`` (the recipe's ``max_train_tokens`` and widths), and
    ``count`` of its batches, spread evenly over its length order, are returned: batches
    of the widths a pass has, in about its proportions."""
    from zoo import presets
    from zoo.text import TranslationPreprocessor
    from zoo.training import batches as batching
    from zoo.training import recipes
    from zoo.training.translation import TranslationTask, rows_dataset

    recipe = recipes.load_recipe(name)
    batch_size = batch_size or recipe.batch_size
    task = TranslationTask(recipe, data_dir=data_dir, printer=printer)
    try:
        if recipe.mix:
            sources, targets = task.mixed_training_pairs()
            parts = [(task.mix_sizes[corpus], weight) for corpus, weight in recipe.mix.items()]
        else:
            sources, targets = task.read_splits()["train"]
            parts = [(len(sources), 1)]
    except FileNotFoundError as error:
        raise ValueError(f"zoo benchmark training {name}: its real batches need the recipe's "
                         f"corpora: {error} (or --real-batches 0: fixed shapes only).") from None
    preprocessor = TranslationPreprocessor.from_directory(Path(presets.resolve(name)) / "assets")
    starts = np.cumsum([0] + [size for size, _ in parts])
    groups = [(np.arange(start, start + size), weight)
              for start, (size, weight) in zip(starts, parts)]
    # The first pass of a run seeded ``seed``, as batches.mixed_dataset draws it.
    drawn = batching.drawn_pass(groups, np.random.default_rng([seed, 0]))
    data = rows_dataset(preprocessor.source_rows([sources[i] for i in drawn]),
                        preprocessor.target_rows([targets[i] for i in drawn]), batch_size,
                        shuffle=False, max_tokens=recipe.max_train_tokens,
                        length_buckets=recipe.batch_widths())
    if count > len(data):
        raise ValueError(f"--real-batches {count}: a pass of the mix holds {len(data)} "
                         f"batches of {batch_size}; ask for at most that.")
    # The middle batch of each of ``count`` equal parts of the length order: each stands
    # for as many batches of the pass (its first and last, the shortest and the longest,
    # are rare).
    picked = set(((np.arange(count) + 0.5) * len(data) / count).astype(int).tolist())
    return [(source, target_in, target_out) for index, ((source, target_in), target_out)
            in enumerate(data.batches_of_pass(0)) if index in picked]


def write_batches(path, batches):
    """``batches`` (``mix_batches``') into the ``.npz`` file ``path`` (its folder made)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    arrays = {f"{part}_{i}": array for i, batch in enumerate(batches)
              for part, array in zip(("source", "target_in", "target_out"), batch)}
    np.savez_compressed(path, **arrays)


def read_batches(path):
    with np.load(path) as arrays:
        count = len(arrays.files) // 3
        return [tuple(arrays[f"{part}_{i}"] for part in ("source", "target_in", "target_out"))
                for i in range(count)]


def _fitted_to(batches, sizes):
    """Real batches for a smaller vocabulary than theirs (a tiny model, via options):
    ids past it read as unknown (1), padding stays padding; shapes are unchanged."""
    def fit(ids, size):
        return np.where(ids >= size, 1, ids).astype(np.int32)

    return [(fit(s, sizes["source_vocabulary_size"]), fit(i, sizes["target_vocabulary_size"]),
             fit(o, sizes["target_vocabulary_size"])) for s, i, o in batches]


# -- the models --------------------------------------------------------------------------------


def plain_translator_class():
    """``PlainAttentionTranslator``, made on first use (it subclasses ``keras.Model``:
    importing Keras is left to the process that measures)."""
    import keras
    from keras import ops

    from zoo.precision import StatelessAutocast

    class PlainAttentionTranslator(StatelessAutocast, keras.Model):
        """RNNsearch of Keras' own layers, at ``AttentionSeq2Seq``'s sizes: embeddings
        (the source's masking padding), ``Bidirectional(GRU)`` encoder, a ``Dense``
        bridge from the backward state, additive attention of three bias-free ``Dense``
        (query, keys, score vector), a ``GRUCell`` decoder stepped by ``ops.scan``, the
        deep output ``Dense`` and the tied target embedding with an output bias. The same
        weights' shapes, hence parameters, as the zoo's; dropout on the embeddings and
        before the output layer, as there."""

        def __init__(self, source_vocabulary_size, target_vocabulary_size, embedding_dim,
                     units, attention_units, dropout, **kwargs):
            super().__init__(**kwargs)
            e, u = embedding_dim, units
            self.sizes = (source_vocabulary_size, target_vocabulary_size, e, u, attention_units)
            self.source_embedding = keras.layers.Embedding(source_vocabulary_size, e,
                                                           mask_zero=True)
            self.target_embedding = keras.layers.Embedding(target_vocabulary_size, e)
            self.encoder = keras.layers.Bidirectional(
                keras.layers.GRU(u, return_sequences=True, return_state=True))
            self.bridge = keras.layers.Dense(u, activation="tanh")
            self.query = keras.layers.Dense(attention_units, use_bias=False)
            self.keys = keras.layers.Dense(attention_units, use_bias=False)
            self.score = keras.layers.Dense(1, use_bias=False)
            self.cell = keras.layers.GRUCell(u)
            self.output_projection = keras.layers.Dense(e, activation="tanh")
            self.dropout = keras.layers.Dropout(dropout)

        def build(self, input_shape=None):
            _, vt, e, u, _ = self.sizes
            self.source_embedding.build((None, None))
            self.target_embedding.build((None, None))
            self.encoder.build((None, None, e))
            self.bridge.build((None, u))
            self.query.build((None, u))
            self.keys.build((None, None, 2 * u))
            self.score.build((None, None, self.sizes[4]))
            self.cell.build((None, e + 2 * u))
            self.output_projection.build((None, None, 3 * u + e))
            self.output_bias = self.add_weight(shape=(vt,), initializer="zeros",
                                               name="output_bias")
            self.built = True

        def call(self, inputs, training=False):
            source, target_in = inputs
            mask = ops.not_equal(source, 0)
            embedded = self.dropout(self.source_embedding(source), training=training)
            memory, _, backward = self.encoder(embedded, mask=mask, training=training)
            keys = self.keys(memory)
            target = self.dropout(self.target_embedding(target_in), training=training)

            # ops.scan's outputs have the carry's structure (TensorFlow's scan requires
            # it): the carry holds the step's context too, which the next step ignores.
            def step(carry, embedded_t):
                state, _ = carry
                hidden = ops.tanh(keys + ops.expand_dims(self.query(state), 1))
                scores = ops.where(mask, ops.squeeze(self.score(hidden), -1), -1e9)
                context = ops.einsum("bs,bsd->bd", ops.softmax(scores, axis=-1), memory)
                state, _ = self.cell(ops.concatenate([embedded_t, context], -1), [state],
                                     training=training)
                return (state, context), (state, context)

            start = self.bridge(backward)
            _, (states, contexts) = ops.scan(step, (start, ops.zeros_like(memory[:, 0])),
                                             ops.transpose(target, (1, 0, 2)))
            features = ops.concatenate([ops.transpose(states, (1, 0, 2)),
                                        ops.transpose(contexts, (1, 0, 2)), target], -1)
            hidden = self.dropout(self.output_projection(features), training=training)
            return (ops.matmul(hidden, ops.transpose(self.target_embedding.embeddings))
                    + self.output_bias)

    return PlainAttentionTranslator


def build_models(sizes, training, seed=0, precision="float32"):
    """``{"zoo": AttentionSeq2Seq, "keras": PlainAttentionTranslator}`` of ``sizes``, both
    built in ``precision`` (``zoo.precision``) and compiled as ``zoo train`` compiles a
    translator (``compile_for_training``)."""
    import keras

    from zoo import precision as precisions
    from zoo.models.seq2seq import AttentionSeq2Seq
    from zoo.training.translation import compile_for_training

    keras.utils.set_random_seed(seed)
    network = {key: sizes[key] for key in ("source_vocabulary_size", "target_vocabulary_size",
                                            "embedding_dim", "units", "attention_units",
                                            "dropout")}
    with precisions.policy(precision):
        zoo_model = AttentionSeq2Seq("zh", "en", **network, max_source_length=128,
                                     max_output_length=128)
        plain = plain_translator_class()(**network)
        models = {"zoo": zoo_model, "keras": plain}
        for model in models.values():
            model.build()
            compile_for_training(model, training["learning_rate"],
                                 ema_momentum=training["ema_momentum"],
                                 label_smoothing=training["label_smoothing"])
    return models


def step_flops(model, batch):
    """A training step's floating-point operations on ``batch`` (its padded shape: padding
    is computed): ``TRAINING_OVER_FORWARD`` times the forward pass's matrix products,
    ``decoding_flops`` of each row (teacher forcing runs the decoder's step at every
    target position)."""
    source, target_in, _ = batch
    return (TRAINING_OVER_FORWARD * source.shape[0]
            * model.decoding_flops(source.shape[1], target_in.shape[1]))


# -- one backend, in a process of its own -------------------------------------------------------


def _device(backend):
    """``(kind, name)``: "gpu" or "cpu", and what the backend calls its first device."""
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        kind = "cpu" if device.platform == "cpu" else "gpu"
        return kind, device.platform if kind == "cpu" else f"{device.platform}: {device.device_kind}"
    if backend == "torch":
        import torch

        if torch.cuda.is_available():
            return "gpu", torch.cuda.get_device_name(0)
        return "cpu", "cpu"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return ("gpu", gpus[0].name) if gpus else ("cpu", "cpu")


def _matmul(backend, rows, inner, columns, dtype="float32"):
    """A product ``[rows x inner] x [inner x columns]`` of ``dtype`` (the step's compute
    dtype: its limit) on the backend's device, finished when the call returns (JAX:
    ``block_until_ready``; PyTorch: the GPU synchronised; TensorFlow: one number of it
    read back)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, inner), np.float32)
    b = rng.standard_normal((inner, columns), np.float32)
    if backend == "jax":
        import jax

        a, b = jax.device_put(a).astype(dtype), jax.device_put(b).astype(dtype)
        product = jax.jit(lambda x, y: x @ y)
        return lambda: product(a, b).block_until_ready()
    if backend == "torch":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        torch_dtype = getattr(torch, dtype)
        a, b = (torch.from_numpy(m).to(device=device, dtype=torch_dtype) for m in (a, b))

        def run():
            with torch.no_grad():
                torch.matmul(a, b)
            if device == "cuda":
                torch.cuda.synchronize()

        return run
    import tensorflow as tf

    a, b = tf.cast(a, dtype), tf.cast(b, dtype)
    product = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)[:1]))
    return lambda: product(a, b).numpy()


def _check_cores(counts):
    """Refuse core counts ``_use_cores`` cannot pin, before any process starts (the
    measuring processes inherit this one's cores)."""
    if counts and not hasattr(os, "sched_setaffinity"):
        raise ValueError(f"--threads {' '.join(map(str, counts))}: pinning a process to cores "
                         "needs Linux's CPU affinity, which this system has not; leave "
                         "--threads out to measure on every core.")
    from zoo import backend

    usable = backend.usable_cores()
    if any(count > usable for count in counts):
        raise ValueError(f"--threads {max(counts)}: this process may use {usable} cores.")


def _use_cores(threads):
    """This process on its first ``threads`` usable cores (``_check_cores``), before any
    framework starts: TensorFlow's and XLA's thread pools size themselves by the cores a
    process may use."""
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])


def measure(spec):
    """One backend's figures (this process's ``KERAS_BACKEND``): ``spec`` says the sizes,
    the recipe's optimisation, the cases (``fixed``: ``[batch, width]`` pairs;
    ``batches_file``: real batches), the rounds and the threads."""
    if spec.get("threads"):
        _use_cores(spec["threads"])
    import keras

    from zoo.benchmarks.timing import median_with_interval, use_threads
    from zoo.layers import machine_load
    from zoo.layers.timing import alternate_rounds, paired_speed_ratio

    backend = keras.backend.backend()
    if spec.get("threads") and backend == "tensorflow":
        use_threads(spec["threads"])
    if spec.get("threads") and backend == "torch":
        import torch

        torch.set_num_threads(spec["threads"])
    kind, device = _device(backend)
    sizes = spec["sizes"]
    precision = spec.get("precision", "float32")
    models = build_models(sizes, spec["training"], precision=precision)
    compute_dtype = models["zoo"].compute_dtype
    cases = {f"fixed {batch}x{width}": [fixed_batch(batch, width, sizes)]
             for batch, width in spec["fixed"]}
    if spec.get("batches_file"):
        real = _fitted_to(read_batches(spec["batches_file"]), sizes)
        cases[f"mix, {len(real)} batches of {real[0][0].shape[0]}"] = real

    def stepping(model, batches):
        def run():
            for source, target_in, target_out in batches:
                model.train_on_batch((source, target_in), target_out)
        return run

    compile_seconds = {side: {} for side in models}
    for side, model in models.items():
        for batches in cases.values():
            for batch in batches:
                shape = f"{batch[0].shape[0]}x{batch[0].shape[1]}"
                if shape not in compile_seconds[side]:
                    first, warm = (_seconds(stepping(model, [batch])) for _ in range(2))
                    compile_seconds[side][shape] = first - warm
    largest = max(cases.values(), key=lambda batches: batches[0][0].size)[0][0]
    rows = largest.size
    e, v = sizes["embedding_dim"], sizes["target_vocabulary_size"]
    square = SQUARE_MATMUL[kind]
    functions = {(side, case): stepping(model, batches)
                 for case, batches in cases.items() for side, model in models.items()}
    functions["matmul", "model"] = _matmul(backend, rows, e, v, compute_dtype)
    functions["matmul", "square"] = _matmul(backend, square, square, square, compute_dtype)
    before = machine_load.reading()
    seconds = alternate_rounds(functions, spec["rounds"], 1)
    others_share = machine_load.others_share(before, machine_load.reading())
    rates = {"model": 2 * rows * e * v / statistics.median(seconds["matmul", "model"]) / 1e9,
             "square": 2 * square**3 / statistics.median(seconds["matmul", "square"]) / 1e9}
    limit = max(rates.values())
    results = {"backend": backend, "device": device, "device_kind": kind,
               "threads": spec.get("threads"), "precision": precision,
               "parameters": {side: int(model.count_params()) for side, model in models.items()},
               "matmul_gflops": {f"[{rows}x{e}]x[{e}x{v}]": rates["model"],
                                 f"{square}x{square}": rates["square"]},
               "limit_gflops": limit, "rounds": spec["rounds"],
               "others_share_while_timing": others_share, "cases": []}
    for case, batches in cases.items():
        tokens = sum(int(np.count_nonzero(out)) for _, _, out in batches) / len(batches)
        flops = sum(step_flops(models["zoo"], batch) for batch in batches) / len(batches)
        shapes = sorted({f"{b[0].shape[0]}x{b[0].shape[1]}" for b in batches},
                        key=lambda s: [int(n) for n in s.split("x")])
        entry = {"case": case, "steps": len(batches), "target_tokens_per_step": tokens,
                 "flops_per_step": flops, "shapes": shapes}
        for side in models:
            steps = [s / len(batches) for s in seconds[side, case]]
            step, interval = median_with_interval(steps)
            entry[side] = {"step_seconds": step, "step_interval_95": interval,
                           "target_tokens_per_second": tokens / step,
                           "share_of_matmul_rate": flops / step / 1e9 / limit,
                           "compile_seconds": {s: compile_seconds[side][s] for s in shapes}}
        entry["zoo_over_keras"] = paired_speed_ratio(seconds["zoo", case], seconds["keras", case])
        results["cases"].append(entry)
    return results


def _seconds(function):
    import time

    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _worker_main(measuring=None):
    """``python -c`` entry of a measuring process: the spec as JSON on argv, the results
    of ``measuring(spec)`` (default: ``measure``) as one JSON line on stdout."""
    spec = json.loads(sys.argv[1])
    print(json.dumps((measuring or measure)(spec)), flush=True)


def _run_worker(spec, backend, module=__name__, command="zoo benchmark training"):
    """``module._worker_main()`` on ``spec`` (default: ``measure(spec)``) in a process on
    ``backend``, importing this checkout's zoo; ``command`` names the benchmark in the
    error of a process that stopped."""
    worker = (f"import sys; sys.path.insert(0, sys.argv[2]); "
              f"from {module} import _worker_main; _worker_main()")
    env = {**os.environ, "KERAS_BACKEND": backend}
    child = subprocess.run([sys.executable, "-c", worker, json.dumps(spec), str(_HERE)],
                           env=env, stdout=subprocess.PIPE, text=True, check=False)
    if child.returncode != 0:  # its own error is on stderr already
        raise RuntimeError(f"{command}: the {backend} process stopped (exit "
                           f"status {child.returncode}).")
    return json.loads(child.stdout.strip().splitlines()[-1])


# -- the benchmark -----------------------------------------------------------------------------


def installed_backends():
    """Those of ``BACKENDS`` whose package this Python can import."""
    import importlib.util

    return [name for name in BACKENDS if importlib.util.find_spec(name) is not None]


def check_backends(backends):
    """``backends`` as given, or a ValueError naming what was received and what is
    accepted (and installed)."""
    installed = installed_backends()
    for name in backends:
        if name not in BACKENDS:
            raise ValueError(f"--backends: {name!r} is not a Keras backend; accepted: "
                             f"{', '.join(BACKENDS)}.")
        if name not in installed:
            raise ValueError(f"--backends: {name} is not installed here; installed: "
                             f"{', '.join(installed) or 'none'}.")
    if len(set(backends)) != len(backends):
        raise ValueError(f"--backends takes each backend once; received {' '.join(backends)}.")
    return list(backends)


def check_precisions(precisions):
    """``precisions`` as given (each of ``zoo.precision.PRECISIONS``, once), or a
    ValueError naming what was received and what is accepted."""
    from zoo import precision

    if not precisions:
        raise ValueError(f"--precision needs at least one of {', '.join(precision.PRECISIONS)}.")
    for value in precisions:
        precision.check(value, "--precision")
    if len(set(precisions)) != len(precisions):
        raise ValueError(f"--precision takes each precision once; received "
                         f"{' '.join(precisions)}.")
    return list(precisions)


# The CPU flags of instructions that compute in bfloat16 (mixed_bfloat16's products): its
# dot products on AVX-512 (Cooper Lake, Zen 4), Intel's AMX tiles (Sapphire Rapids).
BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16")


def machine(cpuinfo="/proc/cpuinfo"):
    """This machine's CPU as ``/proc/cpuinfo`` names it, whether it has AVX-512, which of
    ``BFLOAT16_FLAGS`` it has (``bfloat16``), and the cores this process may use."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        text = ""
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                  if line.startswith("model name")), "unknown CPU")
    flags = set(text.split())
    from zoo import backend

    return {"cpu": model, "avx512": "avx512f" in flags,
            "bfloat16": [flag for flag in BFLOAT16_FLAGS if flag in flags],
            "usable_cores": backend.usable_cores()}


def benchmark_training(name=DEFAULT_RECIPE, backends=None, threads=(None,), batches=FIXED_BATCHES,
                       widths=(FIXED_WIDTH,), real_batches=REAL_BATCHES, batches_file=None,
                       rounds=ROUNDS, data_dir=None, embedding_dim=None, units=None,
                       vocabulary=None, wait_for_quiet=True, precisions=("float32",),
                       printer=print):
    """Measure training of recipe ``name``'s translator on each of ``backends`` (default:
    those installed) and each of ``threads`` (core counts; None: all), one process each,
    one after the other: fixed shapes (``batches`` rows of each of ``widths`` tokens) and
    ``real_batches`` batches of the recipe's mix (``mix_batches``; ``batches_file``: read
    from that ``.npz`` if it exists, else made and written there), each against
    ``PlainAttentionTranslator`` in alternating ``rounds``; each of ``precisions``
    (``zoo.precision.PRECISIONS``: float32, mixed_bfloat16) in a process of its own.
    Prints a table per process; returns ``{"machine", "recipe", "sizes", "runs":
    [measure's results]}``."""
    backends = check_backends(backends or installed_backends())
    check_precisions(precisions)
    for option, values in (("--batches", batches), ("--width", widths),
                           ("--threads", [t for t in threads if t is not None])):
        if any(not isinstance(v, int) or v < 1 for v in values):
            raise ValueError(f"{option} takes positive whole numbers; received {list(values)}.")
    _check_cores([t for t in threads if t is not None])
    for option, value in (("--units", units),
                          ("--embedding-dim", embedding_dim)):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise ValueError(f"{option} takes a positive whole number; received {value!r}.")
    if vocabulary is not None and any(not isinstance(v, int) or v < 5 for v in vocabulary):
        raise ValueError(f"--vocabulary takes two sizes of at least 5 (the 4 special ids and "
                         f"one more); received {list(vocabulary)}.")
    if not isinstance(real_batches, int) or real_batches < 0:
        raise ValueError(f"--real-batches takes a number of batches, 0 or more; received "
                         f"{real_batches!r}.")
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"--rounds takes a positive number; received {rounds!r}.")
    if not batches and not real_batches:
        raise ValueError("Nothing to measure: no fixed shapes (--batches) and no real batches.")
    sizes, training = model_sizes(name, embedding_dim, units, vocabulary)
    with tempfile.TemporaryDirectory() as scratch:
        if real_batches:
            batches_file = _real_batches_file(name, real_batches, batches_file, data_dir,
                                              Path(scratch), printer)
        else:
            batches_file = None
        spec = {"sizes": sizes, "training": training, "rounds": rounds,
                "fixed": [[batch, width] for width in widths for batch in batches],
                "batches_file": str(batches_file) if batches_file else None}
        results = {"machine": machine(), "recipe": name, "sizes": sizes, "training": training,
                   "runs": []}
        for count in threads:
            for backend in backends:
                for precision in precisions:
                    if wait_for_quiet:
                        _wait_for_quiet(printer)
                    run = _run_worker({**spec, "threads": count, "precision": precision},
                                      backend)
                    results["runs"].append(run)
                    print_run(name, run, results["machine"], printer)
    if len(results["runs"]) > 1:
        print_summary(results["runs"], printer)
    return results


def _real_batches_file(name, count, batches_file, data_dir, scratch, printer):
    if batches_file and Path(batches_file).is_file():
        found = len(read_batches(batches_file))
        if found < count:
            raise ValueError(f"--batches-file {batches_file} holds {found} batches; "
                             f"--real-batches asks for {count}.")
        printer(f"real batches: read from {batches_file}")
        return batches_file
    path = Path(batches_file) if batches_file else scratch / "batches.npz"
    printer(f"real batches: {count} of {name}'s mix, read from the corpora ...")
    write_batches(path, mix_batches(name, count, data_dir=data_dir, printer=printer))
    return path


def _wait_for_quiet(printer):
    from zoo.layers import machine_load

    share = machine_load.wait_for_quiet(within_seconds=60)
    if machine_load.is_loaded(share):
        printer(f"(other work took {share:.0%} of the cores before this run: measured under load)")


def _precision_note(run):
    """", mixed_bfloat16" for a run in mixed precision; nothing for float32's."""
    precision = run.get("precision", "float32")
    return "" if precision == "float32" else f", {precision}"


def _threads_label(run):
    return f"{run['threads']} thread{'s' if run['threads'] != 1 else ''}" if run["threads"] else (
        "all usable cores")


def print_run(name, run, machine_info, printer=print):
    """One process's table: per case and model, target tokens a step, the step's time
    (95% interval), target tokens/s, the share of the matmul rate, compile seconds per
    shape; per case, zoo over Keras."""
    parameters = run["parameters"]
    cpu = f"{machine_info['cpu']}, {'AVX-512' if machine_info['avx512'] else 'no AVX-512'}"
    printer(f"zoo benchmark training {name}: {run['backend']} on {run['device']} "
            f"({_threads_label(run)}{_precision_note(run)}; CPU {cpu}); zoo AttentionSeq2Seq {parameters['zoo']:,} "
            f"parameters, plain Keras {parameters['keras']:,}; {run['rounds']} alternating "
            "rounds, one process")
    rates = ", ".join(f"{rate:.1f} GFLOP/s at {shape}"
                      for shape, rate in run["matmul_gflops"].items())
    printer(f"matmul rate: {rates}; share of {run['limit_gflops']:.1f} GFLOP/s")
    if run.get("others_share_while_timing") is not None:
        printer(f"other work took {run['others_share_while_timing']:.0%} of this process's "
                "cores while the rounds were timed")
    printer(f"{'case':<26}{'model':<7}{'tokens/step':>12}{'step ms':>11}  {'95% interval':<17}"
            f"{'tokens/s':>11}{'share':>7}  compile s per shape")
    for case in run["cases"]:
        for side in ("zoo", "keras"):
            figures = case[side]
            low, high = (1000 * s for s in figures["step_interval_95"])
            # A shape that reuses an earlier one's trace (TensorFlow, from its second) is
            # no slower at first than warm: 0, not the noise's sign.
            compiled = ", ".join(f"{shape} {max(seconds, 0):.1f}"
                                 for shape, seconds in figures["compile_seconds"].items())
            printer(f"{case['case']:<26}{side:<7}{case['target_tokens_per_step']:>12.1f}"
                    f"{1000 * figures['step_seconds']:>11.2f}  {f'{low:.2f}-{high:.2f}':<17}"
                    f"{figures['target_tokens_per_second']:>11.1f}"
                    f"{figures['share_of_matmul_rate']:>7.1%}  {compiled}")
        ratio = case["zoo_over_keras"]
        low, high = ratio["interval_95"]
        printer(f"{case['case']:<26}zoo / Keras speed {ratio['ratio']:.2f} ({low:.2f}-{high:.2f})")


def print_summary(runs, printer=print):
    """Per process, the zoo's target tokens/s on each case, and per core on the CPU."""
    printer("summary: the zoo's target tokens/s (a core: over the threads, on the CPU)")
    for run in runs:
        cores = run["threads"] if run["device_kind"] == "cpu" else None
        cells = []
        for case in run["cases"]:
            speed = case["zoo"]["target_tokens_per_second"]
            cells.append(f"{case['case']} {speed:,.0f}" + (f" ({speed / cores:,.0f} a core)"
                                                           if cores else ""))
        printer(f"  {run['backend']}, {_threads_label(run)}{_precision_note(run)}: "
                + "; ".join(cells))
