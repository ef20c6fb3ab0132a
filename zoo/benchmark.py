"""``zoo benchmark``: speed measured side by side, in one run, on this machine.

Timings on a shared machine are noisy, so every comparison here alternates the
contenders round by round (zoo, Keras, zoo, Keras, ...) and reports medians: a
slow moment of the machine hits both sides instead of one.
"""

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np

import zoo.layers
from zoo import backend
from zoo.layers.timing import alternate_rounds, paired_speed_ratio
from zoo.text.vocabulary import END_ID, PAD_ID, START_ID


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


# -- translation runtimes ------------------------------------------------------------------

TUTORIAL_MAX_LENGTH = 50  # the tutorial's translate(max_length=50)


def tutorial_translator(source_vocabulary_size, target_vocabulary_size, units=256,
                        start_id=START_ID, end_id=END_ID):
    """The translator of TensorFlow's tutorial "Neural machine translation with
    attention" (tensorflow.org/text/tutorials/nmt_with_attention), rebuilt from its
    published layers in Keras 3 and left untrained: embeddings of ``units``, a
    bidirectional GRU encoder (outputs summed), a GRU decoder whose output queries a
    one-head ``MultiHeadAttention`` over the encoder outputs, residual and
    ``LayerNormalization``, a ``Dense`` layer over the target vocabulary; greedy.

    Returns ``(decode, parameter_count)``; ``decode(source_ids [B, S], steps)``
    returns ``[B, steps]`` tokens. The tutorial exports ``translate`` as a
    ``tf.function`` whose Python loop is unrolled to 50 steps (its early ``break``
    runs only eagerly), so its cost does not depend on the weights; its optional
    ``tf.range`` loop stops when every sentence has ended, which for an untrained
    model never happens, so ``steps`` below 50 stand in for where a trained one stops.
    """
    import tensorflow as tf

    encoder_embedding = keras.layers.Embedding(source_vocabulary_size, units, mask_zero=True)
    encoder = keras.layers.Bidirectional(
        keras.layers.GRU(units, return_sequences=True), merge_mode="sum")
    decoder_embedding = keras.layers.Embedding(target_vocabulary_size, units, mask_zero=True)
    decoder = keras.layers.GRU(units, return_sequences=True, return_state=True)
    attention = keras.layers.MultiHeadAttention(num_heads=1, key_dim=units)
    normalization = keras.layers.LayerNormalization()
    output_layer = keras.layers.Dense(target_vocabulary_size)

    def next_token(context, token, done, state):
        outputs, state = decoder(decoder_embedding(token), initial_state=state)
        outputs = normalization(outputs + attention(query=outputs, value=context))
        token = tf.argmax(output_layer(outputs), axis=-1, output_type=tf.int32)
        done = done | tf.equal(token, end_id)
        return tf.where(done, PAD_ID, token), done, state

    def encode(source_ids):
        """The encoder outputs and the first step's ``(token, done, state)``."""
        batch = tf.shape(source_ids)[0]
        return encoder(encoder_embedding(source_ids)), (
            tf.fill([batch, 1], start_id), tf.zeros([batch, 1], tf.bool), tf.zeros([batch, units]))

    def decode_unrolled(source_ids, steps):
        context, step = encode(source_ids)
        tokens = []
        for _ in range(steps):
            step = next_token(context, *step)
            tokens.append(step[0])
        return tf.concat(tokens, axis=-1)

    def decode_loop(source_ids, steps):
        context, step = encode(source_ids)

        def body(t, token, done, state, tokens):
            token, done, state = next_token(context, token, done, state)
            return t + 1, token, done, state, tokens.write(t, token[:, 0])

        *_, tokens = tf.while_loop(lambda t, *_: t < steps, body,
                                   (0, *step, tf.TensorArray(tf.int32, size=steps)))
        return tf.transpose(tokens.stack())

    ids = tf.TensorSpec([None, None], tf.int32)
    unrolled = tf.function(lambda source_ids: decode_unrolled(source_ids, TUTORIAL_MAX_LENGTH),
                           input_signature=[ids])
    looped = tf.function(decode_loop, input_signature=[ids, tf.TensorSpec([], tf.int32)])

    def decode(source_ids, steps=TUTORIAL_MAX_LENGTH):
        if steps == TUTORIAL_MAX_LENGTH:
            return unrolled(source_ids).numpy()
        return looped(source_ids, tf.constant(steps)).numpy()

    decode(tf.ones([1, 1], tf.int32), 1)  # builds the layers
    layers = (encoder_embedding, encoder, decoder_embedding, decoder, attention, normalization,
              output_layer)
    parameters = sum(int(np.prod(w.shape)) for layer in layers for w in layer.weights)
    return decode, parameters


def _translation_runtimes(model, name, directory):
    """Translate functions ``(texts, beam_size) -> list[str]`` for every runtime, and the
    TFLite files by variant."""
    import tensorflow as tf

    from zoo import export

    tflite = {
        variant: export.export(model, "tflite", f"{directory}/{variant}", name=name,
                               quantize=None if variant == "float32" else variant)
        for variant in ("float32", "float16", "dynamic")
    }
    # Loaded after the conversions: a loaded lookup table in the process makes every
    # later tf.saved_model.save (the TFLite converter's first step) warn about it.
    saved = tf.saved_model.load(str(export.export(model, "saved_model", directory, name=name)))
    translators = {v: export.TFLiteTranslator(p) for v, p in tflite.items()}

    def serve(texts, beam_size):
        texts = tf.constant(texts)
        if beam_size == 1:
            out = saved.signatures["serving_default"](texts=texts)
        else:
            out = saved.signatures["translate_beam"](texts=texts, beam_size=tf.constant(beam_size))
        return [t.decode("utf-8") for t in out["translations"].numpy()]

    runtimes = {
        "keras": lambda texts, beam: model.translate(texts, beam_size=beam),
        "saved_model": serve,
        "tflite_float32": translators["float32"].translate,
        "tflite_dynamic": translators["dynamic"].translate,
    }
    return runtimes, tflite, translators


def benchmark_translate(name, latency_sentences=16, batch=64, rounds=9, data_dir=None,
                        printer=print):
    """Latency (batch 1) and throughput (batch 64), greedy and beam 5, for Keras,
    SavedModel and TFLite, measured alternately; then size and BLEU of each TFLite file."""
    backend.require_tensorflow("zoo benchmark translate")
    import tensorflow as tf

    import tempfile

    import zoo
    from zoo import evaluation
    from zoo.evaluation import splits

    model = zoo.load(name)
    sources, references = splits.preset_splits(name, data_dir)["test"]
    stride = max(len(sources) // batch, 1)
    batch_texts = sources[::stride][:batch]
    latency_texts = batch_texts[:latency_sentences]
    results = {"preset": name, "speed": [], "files": []}
    with tempfile.TemporaryDirectory() as directory:
        runtimes, tflite, translators = _translation_runtimes(model, name, directory)
        printer(
            f"zoo benchmark translate {name}: {len(batch_texts)} test sentences; latency "
            f"one sentence per call (mean of {latency_sentences}), throughput one batch of "
            f"{len(batch_texts)} (TFLite files are batch 1: a loop); medians of {rounds} "
            "alternating rounds"
        )
        printer(f"{'runtime':<16}{'decoding':<9}{'latency ms':>11}{'sentences/s':>13}")
        # Greedy and beam alternate too: their ratio is reported, and a machine that
        # slows down between two separate series would skew it.
        cases = [(r, beam) for beam in (1, 5) for r in runtimes]
        latency = alternate({(r, beam): (lambda f=runtimes[r], beam=beam:
                                         [f([t], beam) for t in latency_texts])
                             for r, beam in cases}, rounds, 1)
        tutorial, tutorial_cases = _tutorial_functions(model, batch_texts)
        zoo_cases = {(r, beam): (lambda f=runtimes[r], beam=beam: f(batch_texts, beam))
                     for r, beam in cases}
        throughput = alternate({**zoo_cases, **tutorial_cases}, rounds, 1)
        for runtime, beam in cases:
            row = {"runtime": runtime, "beam_size": beam,
                   "latency_ms": 1000 * latency[runtime, beam] / len(latency_texts),
                   "sentences_per_second": len(batch_texts) / throughput[runtime, beam]}
            results["speed"].append(row)
            printer(f"{runtime:<16}{'greedy' if beam == 1 else 'beam 5':<9}"
                    f"{row['latency_ms']:>11.2f}{row['sentences_per_second']:>13.0f}")
        for case, steps in tutorial["steps"].items():
            tutorial[case] = len(batch_texts) / throughput[case]
            printer(f"{'tf_tutorial':<16}{'greedy':<9}{'':>11}{tutorial[case]:>13.0f}"
                    f"  ({steps} steps{', unrolled' if case == 'tutorial_exported' else ''})")
        printer(f"tf_tutorial: the TF attention tutorial's translator rebuilt for these "
                f"vocabularies, {tutorial['parameters'] / 1e6:.1f} M parameters, untrained "
                "(zoo.benchmark.tutorial_translator); greedy batch only")
        results["tutorial"] = tutorial
        _print_speed_ratios(results, len(batch_texts), printer)
        results["greedy_work"] = greedy_work(model, batch_texts)
        _print_greedy_work(results, matmul_gflops(), printer)

        printer(f"TFLite files, BLEU (greedy) on all {len(sources)} test sentences:")
        float32_size = tflite["float32"].stat().st_size
        for variant, path in tflite.items():
            hypotheses = translators[variant].translate(sources)
            score = evaluation.bleu(hypotheses, references, model.target_language)["score"]
            size = path.stat().st_size
            results["files"].append({"variant": variant, "bytes": size, "bleu": score})
            printer(f"  {variant:<8} {size / 2**20:6.2f} MB ({size / float32_size:4.0%} of float32)"
                    f"  BLEU {score:5.2f}")
    return results


def _print_speed_ratios(results, batch, printer):
    speed = {(r["runtime"], r["beam_size"]): r for r in results["speed"]}
    tflite_vs_saved = (speed["tflite_float32", 1]["latency_ms"]
                       / speed["saved_model", 1]["latency_ms"])
    printer(f"TFLite float32 / SavedModel greedy latency: {tflite_vs_saved:.2f}")
    for runtime in ("keras", "saved_model", "tflite_float32", "tflite_dynamic"):
        ratio = speed[runtime, 5]["latency_ms"] / speed[runtime, 1]["latency_ms"]
        printer(f"{runtime} beam 5 / greedy latency: {ratio:.2f}")
    best = max(speed[r, 1]["sentences_per_second"] for r in ("keras", "saved_model"))
    tutorial = results["tutorial"]
    tutorial_best = max(tutorial["tutorial_exported"], tutorial["tutorial_loop"])
    printer(f"greedy batch-{batch} throughput, best of Keras/SavedModel: {best:.0f} sentences/s = "
            f"{best / tutorial_best:.2f}x the TF tutorial's translator rebuilt here "
            f"({tutorial_best:.0f})")


def greedy_work(model, texts):
    """What greedy decoding of ``texts`` in one batch computes: floating-point operations
    per sentence (``model.decoding_flops``: each sentence encodes its pieces and steps
    until its [END], as TensorFlow's greedy search drops finished sentences) and the
    mean number of decoder steps."""
    source_ids = model.preprocessor.encode_sources(texts)
    tokens, _ = model.generate_ids(source_ids)
    tokens = np.asarray(tokens)
    steps = [int(np.argmax(row == END_ID)) + 1 if (row == END_ID).any() else len(row)
             for row in tokens]
    lengths = (source_ids != PAD_ID).sum(axis=1)
    flops = [model.decoding_flops(int(s), t) for s, t in zip(lengths, steps)]
    return {"flops_per_sentence": float(np.mean(flops)), "mean_steps": float(np.mean(steps))}


def _print_greedy_work(results, peak, printer):
    work = results["greedy_work"]
    keras_speed = next(r["sentences_per_second"] for r in results["speed"]
                       if r["runtime"] == "keras" and r["beam_size"] == 1)
    gflops = work["flops_per_sentence"] * keras_speed / 1e9
    work.update(keras_gflops=gflops, matmul_gflops=peak)
    printer(f"greedy, one batch: {work['flops_per_sentence'] / 1e6:.1f} MFLOP per sentence "
            f"({work['mean_steps']:.1f} decoder steps on average; matrix products); Keras at "
            f"{keras_speed:.0f} sentences/s computes {gflops:.1f} GFLOP/s, {gflops / peak:.0%} "
            f"of this machine's matmul rate ({peak:.0f} GFLOP/s)")


def _tutorial_functions(model, texts):
    """The rebuilt TF tutorial translator (``tutorial_translator``) for this preset's
    vocabularies, as benchmark cases: its exported 50-step function, and its loop
    stopped after as many steps as this preset's greedy search takes on ``texts``
    (where a trained tutorial model would stop, near enough)."""
    import tensorflow as tf

    decode, parameters = tutorial_translator(model.source_vocabulary_size,
                                             model.target_vocabulary_size, model.units)
    source_ids = tf.constant(model.preprocessor.encode_sources(texts))
    tokens, _ = model.generate_ids(source_ids, return_attention=False)
    steps = int(tf.reduce_max(tf.math.count_nonzero(tokens, axis=1)))  # [END] included
    info = {"parameters": parameters,
            "steps": {"tutorial_exported": TUTORIAL_MAX_LENGTH, "tutorial_loop": steps}}
    cases = {case: (lambda steps=steps: decode(source_ids, steps))
             for case, steps in info["steps"].items()}
    return info, cases


# -- decoding code against another checkout ----------------------------------------------------

# Runs in a process of its own, importing zoo from the checkout named first: only calls
# every version of the zoo has (load, translate), so that any commit can be measured.
_DECODING_WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import zoo
model = zoo.load(sys.argv[2])
print(json.dumps({"zoo": zoo.__file__}), flush=True)
texts = json.loads(sys.stdin.readline())
for line in sys.stdin:
    case = json.loads(line)
    start = time.perf_counter()
    for _ in range(case["calls"]):
        model.translate(texts[case["texts"]], beam_size=case["beam_size"])
    print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)
"""


class _DecodingWorker:
    """A process that translates with the zoo of ``checkout``; timed from inside it."""

    def __init__(self, checkout, preset_directory, texts):
        self._process = subprocess.Popen(
            [sys.executable, "-c", _DECODING_WORKER, str(checkout), str(preset_directory)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        imported = self._reply()["zoo"]
        expected = Path(checkout).resolve() / "zoo"
        if Path(imported).resolve().parent != expected:
            self.close()
            raise ValueError(f"--baseline {checkout}: its process imported zoo from {imported}, "
                             f"not from {expected}.")
        self._send(texts)

    def _send(self, value):
        self._process.stdin.write(json.dumps(value, ensure_ascii=False) + "\n")
        self._process.stdin.flush()

    def _reply(self):
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"the decoding worker stopped (exit status {self._process.wait()})")
        return json.loads(line)

    def seconds(self, texts, beam_size, calls):
        self._send({"texts": texts, "beam_size": beam_size, "calls": calls})
        return self._reply()["seconds"]

    def close(self):
        self._process.stdin.close()
        self._process.wait()


def benchmark_decoding(name, baseline, batch=64, latency_sentences=16, rounds=9, data_dir=None,
                       printer=print):
    """This checkout's decoding against ``baseline`` (another checkout of the zoo, e.g. a
    ``git worktree`` of an earlier commit), the same preset weights for both: greedy and
    beam 5, one batch of ``batch`` test sentences and one sentence per call, Keras
    ``model.translate``. Each side runs in its own process, one call at a time, rounds
    alternating. Returns the sentences/s of each side (medians) and, per case, the
    median of the rounds' ratios with its 95% bootstrap interval (``paired_speed_ratio``)."""
    from zoo import presets
    from zoo.evaluation import splits

    baseline = Path(baseline)
    if not (baseline / "zoo" / "__init__.py").is_file():
        raise ValueError(f"--baseline must be a checkout of the zoo (a folder with "
                         f"zoo/__init__.py); received {str(baseline)!r}.")
    sources, _ = splits.preset_splits(name, data_dir)["test"]
    stride = max(len(sources) // batch, 1)
    texts = {"batch": sources[::stride][:batch]}
    texts["one"] = texts["batch"][:1]
    preset_directory = presets.resolve(name)
    here = Path(__file__).resolve().parent.parent
    workers = {"this checkout": _DecodingWorker(here, preset_directory, texts),
               "baseline": _DecodingWorker(baseline, preset_directory, texts)}
    cases = [("batch", beam, 1) for beam in (1, 5)] + [
        ("one", beam, latency_sentences) for beam in (1, 5)]
    try:
        rounds_seconds = alternate_rounds(
            {(side, case): (lambda w=worker, c=case: w.seconds(*c))
             for case in cases for side, worker in workers.items()}, rounds, 1)
    finally:
        for worker in workers.values():
            worker.close()
    printer(f"zoo benchmark decoding {name}: this checkout against {baseline}, the same "
            f"weights, Keras translate; {rounds} alternating rounds (times measured inside each "
            "process): medians, and the median of each round's ratio with its 95% bootstrap "
            "interval")
    printer(f"{'case':<28}{'this checkout':>15}{'baseline':>12}{'ratio':>8}  95% interval")
    results = {"preset": name, "baseline": str(baseline), "rounds": rounds, "cases": []}
    for texts_name, beam, calls in cases:
        count = len(texts[texts_name]) * calls
        seconds = {side: rounds_seconds[side, (texts_name, beam, calls)] for side in workers}
        speeds = {side: count / statistics.median(seconds[side]) for side in workers}
        paired = paired_speed_ratio(seconds["this checkout"], seconds["baseline"])
        low, high = paired["interval_95"]
        label = (f"{'greedy' if beam == 1 else 'beam 5'}, "
                 f"{'batch of ' + str(count) if texts_name == 'batch' else 'one per call'}")
        printer(f"{label:<28}{speeds['this checkout']:>11.0f} s/s{speeds['baseline']:>8.0f} s/s"
                f"{paired['ratio']:>8.2f}  {low:.2f}-{high:.2f}")
        results["cases"].append({"beam_size": beam, "batch": len(texts[texts_name]),
                                 "sentences_per_second": speeds["this checkout"],
                                 "baseline_sentences_per_second": speeds["baseline"],
                                 **paired})
    return results


# -- the decoding options' cost -----------------------------------------------------------

# Each option of issue 41 alone, at the value a preset would use; "none" turns every rule
# off (a call's 0), so that a preset's defaults do not hide in the reference.
DECODING_OPTIONS = {
    "none": {"no_repeat_ngram_size": 0, "min_length_ratio": 0, "max_length_ratio": 0},
    "no_repeat_ngram_size=3": {"no_repeat_ngram_size": 3, "min_length_ratio": 0,
                               "max_length_ratio": 0},
    "min_length_ratio=0.5": {"no_repeat_ngram_size": 0, "min_length_ratio": 0.5,
                             "max_length_ratio": 0},
    "max_length_ratio=2": {"no_repeat_ngram_size": 0, "min_length_ratio": 0,
                           "max_length_ratio": 2.0},
    "the preset's defaults": {},
}


def benchmark_decoding_options(name, batch=64, rounds=9, data_dir=None, printer=print):
    """What each decoding option costs: Keras ``model.translate`` of one batch of
    ``batch`` test sentences, greedy and beam 5, with each output rule alone, the
    preset's defaults, and (beam 5, attention presets) a coverage penalty of 0.2, each
    timed against no option in the same rounds (alternating, in one process): the
    median of the rounds' speed ratios with its 95% bootstrap interval."""
    import zoo
    from zoo.evaluation import splits

    model = zoo.load(name)
    sources, _ = splits.preset_splits(name, data_dir)["test"]
    texts = sources[:: max(len(sources) // batch, 1)][:batch]

    def translating(model, beam_size, rules):
        return lambda: model.translate(texts, beam_size=beam_size, **rules)

    cases = {(beam, option): translating(model, beam, rules)
             for beam in (1, 5) for option, rules in DECODING_OPTIONS.items()}
    if model.has_attention:
        covering = zoo.load(name)  # a model of its own: a new beta recompiles the searches
        covering.coverage_penalty = 0.2
        cases[5, "coverage_penalty=0.2"] = translating(covering, 5, DECODING_OPTIONS["none"])
    seconds = alternate_rounds(cases, rounds, 1)
    printer(f"zoo benchmark decoding {name}: each option's speed against none, Keras translate "
            f"of {len(texts)} test sentences in one batch; {rounds} alternating rounds: the "
            f"median of each round's ratio with its 95% bootstrap interval (the preset's "
            f"defaults: {model.output_rules or 'none'})")
    printer(f"{'search':<8}{'option':<26}{'sentences/s':>12}{'ratio':>8}  95% interval")
    results = {"preset": name, "rounds": rounds, "batch": len(texts),
               "output_rules": model.output_rules, "cases": []}
    for (beam, option), times in seconds.items():
        paired = paired_speed_ratio(times, seconds[beam, "none"])
        low, high = paired["interval_95"]
        speed = len(texts) / statistics.median(times)
        search = "greedy" if beam == 1 else "beam 5"
        printer(f"{search:<8}{option:<26}{speed:>12.1f}{paired['ratio']:>8.2f}  "
                f"{low:.2f}-{high:.2f}")
        results["cases"].append({"beam_size": beam, "option": option,
                                 "sentences_per_second": speed, **paired})
    return results


# -- serving under load ----------------------------------------------------------------------


def _serving_texts(name, data_dir=None):
    """Request texts for a preset whose SavedModel takes ``texts``: its test split."""
    import zoo
    from zoo.evaluation import splits

    task = zoo.describe(name).get("task")
    if task == "classification":
        from zoo.data import sst2

        return sst2.load(data_dir)["test"][0]
    if task == "language_modeling":
        raise ValueError(f"zoo benchmark serve measures presets served with texts in "
                         f"(translators, classifiers); {name} is a language model.")
    return splits.preset_splits(name, data_dir)["test"][0]


def concurrent_requests(serve, texts, concurrency, requests):
    """Send ``requests`` one-text requests from ``concurrency`` threads.

    Returns ``(answers in request order, latencies in seconds, wall seconds)``.
    """
    from concurrent.futures import ThreadPoolExecutor

    def timed(text):
        start = time.perf_counter()
        answer = serve(text)
        return answer, time.perf_counter() - start

    batch = [texts[i % len(texts)] for i in range(requests)]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(timed, batch))
    return [a for a, _ in results], [t for _, t in results], time.perf_counter() - started


def benchmark_serve(name, requests=200, concurrency=(1, 4, 16), data_dir=None, printer=print):
    """Throughput and p50/p99 latency of the SavedModel's ``serving_default`` signature
    called from 1, 4 and 16 threads, one text per request (as TF Serving would see
    independent clients). The answers are checked equal to sequential calls."""
    backend.require_tensorflow("zoo benchmark serve")
    import tensorflow as tf

    import tempfile

    from zoo import export

    texts = _serving_texts(name, data_dir)
    with tempfile.TemporaryDirectory() as directory:
        signature = tf.saved_model.load(
            str(export.export(name, "saved_model", directory))).signatures["serving_default"]
        output = next(iter(signature.structured_outputs))  # translations, or labels

        def serve(text):
            return signature(texts=tf.constant([text]))[output].numpy()[0].decode("utf-8")

        expected, _, _ = concurrent_requests(serve, texts, 1, min(requests, len(texts)))
        printer(f"{name}: SavedModel serving_default, {requests} requests of one text each, "
                f"{tf.config.threading.get_inter_op_parallelism_threads() or 'default'} "
                f"inter-op threads")
        printer(f"{'threads':>8}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}")
        results = {}
        for workers in concurrency:
            answers, latencies, seconds = concurrent_requests(serve, texts, workers, requests)
            wrong = sum(a != expected[i % len(expected)] for i, a in enumerate(answers))
            if wrong:
                raise RuntimeError(f"{wrong} of {requests} answers from {workers} threads "
                                   "differ from sequential calls.")
            p50, p99 = np.percentile(latencies, [50, 99]) * 1000
            results[workers] = {"requests_per_second": round(requests / seconds, 1),
                                "p50_ms": round(float(p50), 1), "p99_ms": round(float(p99), 1)}
            printer(f"{workers:>8}{requests / seconds:>12.1f}{p50:>9.1f}{p99:>9.1f}")
    return {"preset": name, "requests": requests, "concurrency": results}
