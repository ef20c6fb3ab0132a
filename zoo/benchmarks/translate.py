"""``zoo benchmark translate``: a translator's latency and throughput in Keras, SavedModel and
TFLite, against the TF tutorial's translator; the TFLite files' size and BLEU."""

import numpy as np

from zoo import backend
from zoo.benchmarks.timing import alternate, matmul_gflops
from zoo.benchmarks.tutorial import TUTORIAL_MAX_LENGTH, tutorial_translator
from zoo.text.vocabulary import END_ID, PAD_ID


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
                "(zoo.benchmarks.tutorial.tutorial_translator); greedy batch only")
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
    source_ids = model.preprocessor.tokenize_sources(texts)
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
    source_ids = tf.constant(model.preprocessor.tokenize_sources(texts))
    tokens, _ = model.generate_ids(source_ids, return_attention=False)
    steps = int(tf.reduce_max(tf.math.count_nonzero(tokens, axis=1)))  # [END] included
    info = {"parameters": parameters,
            "steps": {"tutorial_exported": TUTORIAL_MAX_LENGTH, "tutorial_loop": steps}}
    cases = {case: (lambda steps=steps: decode(source_ids, steps))
             for case, steps in info["steps"].items()}
    return info, cases
