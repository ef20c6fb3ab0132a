"""``zoo benchmark fine-tune``: the README's fine-tune of a shipped translator, timed in
float32 and in mixed precision, each in a process of its own, side by side.

What a user of a preset runs on pairs of their own (README)::

    model = zoo.load("gru_bahdanau_cmn_en")
    train = training.tsv_dataset(model, "my_pairs.tsv")
    val = training.tsv_dataset(model, "my_validation.tsv", shuffle=False)
    training.compile_for_training(model, learning_rate=3e-4)
    model.fit(train, validation_data=val, epochs=3)

is timed here as the user runs it, one epoch, with mixed precision as the other contender
(``zoo.precision.copy_in(model, "mixed_bfloat16")``: bfloat16 products on float32 master
weights). Two questions: how long the fit takes on this machine (the aim: one epoch of
20,000 pairs within a minute, ``TARGET_FIT_SECONDS``, on a two-core CPU), and whether
mixed precision gets there without costing what a fine-tune is for: the validation loss
of the float32 copy a user keeps (``copy_in(model, "float32")``, what ``presets.save``
writes) within 1% of float32's (``TARGET_LOSS_GAP``).

The pairs stand for a user's: ``pairs`` (20,000) drawn with a seeded RNG, 40% of them
from Tatoeba's training split of the preset's corpus, 50% from the language's subtitles
and 10% from its news (``LANGUAGES``, ``SHARES``), none sharing a sentence with a
validation or test set (Tatoeba's and the real-text sets: ``parallel.training_pairs``'
held-out check); validation: 1,000 pairs of Tatoeba's validation split and the
language's real-text validation sets. They are read once, in the command's process (the
subtitles take ~20 s), written as TSVs (English first) and read with
``training.tsv_dataset`` in each measuring process, as a user's files are.

Each run is a fresh process (TensorFlow sets its thread pools once a process; nothing is
traced, compiled or cached before its fit), one after the other, in ``rounds`` whose
order alternates (float32 first, then mixed first, ...) so that both see the same
machine. In a run: the seed, the preset loaded and copied into its precision, the
datasets, ``compile_for_training`` at 3e-4, then ``model.fit`` alone timed (wall and the
process's CPU time; its first step apart: the step's tracing; other work's share of the
cores meanwhile, ``zoo.layers.machine_load``); after it, the validation loss of its
float32 copy (``evaluate``), the preset's own before the fine-tune (once), the target
tokens of an epoch, and the rate of one square matrix product in the run's compute dtype
(its arithmetic's limit on this machine).

TensorFlow only: there ``fit`` on a translator compiled by ``compile_for_training`` takes
the real-tokens step (``Seq2Seq.train_step``), the README's fine-tune; JAX and PyTorch
compute every padded position, another fine-tune.
"""

import json
import os
import random
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from zoo.benchmarks import training as training_benchmark

DEFAULT_PRESET = "gru_bahdanau_cmn_en"
DEFAULT_PAIRS = 20_000
DEFAULT_PRECISIONS = ("float32", "mixed_bfloat16")
LEARNING_RATE = 3e-4  # the README's
# Per language paired with English: Tatoeba's corpus (the presets' own), the subtitles and
# the news of the recipes' mixes (zoo/recipes/*.json).
LANGUAGES = {
    "zh": {"tatoeba": "cmn", "subtitles": "tvsub", "news": "wmt_news_zh"},
    "fr": {"tatoeba": "fra", "subtitles": "opensubtitles_fr", "news": "wmt_news_fr"},
}
# Of the training pairs, in tenths: Tatoeba's, the subtitles', the news'.
SHARES = {"tatoeba": 4, "subtitles": 5, "news": 1}
VALIDATION_TATOEBA = 1_000
TARGET_FIT_SECONDS = 60
TARGET_LOSS_GAP = 0.01
MATMUL_SIZE = training_benchmark.SQUARE_MATMUL["cpu"]
MAX_SEED = 2**32 - 1  # numpy's seeds, which keras.utils.set_random_seed sets


# -- the preset and its pairs -----------------------------------------------------------------


def _languages_of(directory):
    """``(class name, source language, target language)`` of the preset in ``directory``
    (its config.json; the languages None where it has none)."""
    config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    settings = config.get("config", {})
    return (config.get("class_name", "model"), settings.get("source_language"),
            settings.get("target_language"))


def _other_language(source, target):
    """The language paired with English, where one of the two is English."""
    return target if source == "en" else source if target == "en" else None


def shipped_translators():
    """The shipped presets this benchmark fine-tunes: translators between English and a
    language of ``LANGUAGES``."""
    from zoo import presets

    names = []
    for name in presets.list_models():
        _, source, target = _languages_of(presets.resolve(name))
        if _other_language(source, target) in LANGUAGES:
            names.append(name)
    return names


def translator_languages(preset):
    """``(source, target, other)`` of the translator ``preset`` (a shipped name or a preset
    folder), ``other`` the language paired with English, one of ``LANGUAGES``; else a
    ValueError naming what was received and what is accepted."""
    from zoo import presets

    kind, source, target = _languages_of(presets.resolve(preset))
    if source is None or target is None:
        raise ValueError(f"zoo benchmark fine-tune fine-tunes a translator; {preset!r} is a "
                         f"{kind}, not a translator. Translators: "
                         f"{', '.join(shipped_translators())}.")
    other = _other_language(source, target)
    if other not in LANGUAGES:
        raise ValueError(f"zoo benchmark fine-tune {preset}: it translates {source} -> "
                         f"{target}; the fine-tuning pairs are English with "
                         f"{' or '.join(LANGUAGES)}, the languages with the corpora. "
                         f"Translators: {', '.join(shipped_translators())}.")
    return source, target, other


def read_corpora(language, data_dir=None):
    """What the pairs of ``language`` (a key of ``LANGUAGES``) are drawn from, as
    ``{"tatoeba", "subtitles", "news": training pairs, "tatoeba_validation": Tatoeba's
    validation split, "real_text_validation": {name: pairs}, "names": {part: corpus}}``.
    No training pair shares a sentence (``parallel.shares_a_sentence_with``) with Tatoeba's
    validation or test split or a real-text set of the language."""
    from zoo.data import parallel, tatoeba

    names = LANGUAGES[language]
    splits = tatoeba.split(tatoeba.read(names["tatoeba"], data_dir))
    real_text = {role: parallel.evaluation_sets(language, role, data_dir)
                 for role in ("validation", "test")}
    held_out = splits["validation"] + splits["test"] + [
        pair for sets in real_text.values() for pairs in sets.values() for pair in pairs]
    mix = parallel.training_pairs([names["subtitles"], names["news"]], language, held_out,
                                  data_dir)
    # Tatoeba's split keeps its own validation and test apart; the real-text sets too.
    held = parallel.shares_a_sentence_with(held_out)
    tatoeba_train = [pair for pair in splits["train"] if not held(pair)]
    return {"tatoeba": tatoeba_train, "subtitles": mix[names["subtitles"]],
            "news": mix[names["news"]], "tatoeba_validation": splits["validation"],
            "real_text_validation": real_text["validation"],
            "names": {"tatoeba": f"Tatoeba {names['tatoeba']}",
                      "subtitles": names["subtitles"], "news": names["news"]}}


def part_counts(pairs):
    """``{part: count}`` of ``pairs`` training pairs by ``SHARES``, rounded, summing to
    ``pairs``."""
    tatoeba = (SHARES["tatoeba"] * pairs + 5) // 10
    subtitles = (SHARES["subtitles"] * pairs + 5) // 10
    return {"tatoeba": tatoeba, "subtitles": subtitles, "news": pairs - tatoeba - subtitles}


def draw_pairs(corpora, pairs, seed):
    """``(train, validation, counts)``: ``pairs`` training pairs drawn from ``corpora``
    (``read_corpora``'s) by ``part_counts``, with ``random.Random(seed)``, shuffled; the
    validation pairs: ``VALIDATION_TATOEBA`` of Tatoeba's validation split (all, where
    it has fewer), drawn with a generator of the same seed of their own (the same for any
    ``pairs``), then every real-text validation set's; ``counts``: how many of each
    corpus, training and validation. A ValueError where a corpus has too few pairs."""
    counts = part_counts(pairs)
    for part, count in counts.items():
        if count > len(corpora[part]):
            raise ValueError(
                f"--pairs {pairs:,} takes {count:,} pairs of {corpora['names'][part]} "
                f"({SHARES[part]}0%), which has {len(corpora[part]):,} (its pairs that share "
                f"no sentence with a validation or test set): at most --pairs "
                f"{_most_pairs(corpora):,}.")
    rng = random.Random(seed)
    train = [pair for part, count in counts.items() for pair in rng.sample(corpora[part], count)]
    rng.shuffle(train)
    tatoeba_validation = corpora["tatoeba_validation"]
    validation = random.Random(seed).sample(
        tatoeba_validation, min(VALIDATION_TATOEBA, len(tatoeba_validation)))
    drawn = {"train": {corpora["names"][part]: count for part, count in counts.items()},
             "validation": {f"{corpora['names']['tatoeba']} validation": len(validation)}}
    for name, pairs_of_set in corpora["real_text_validation"].items():
        validation += pairs_of_set
        drawn["validation"][name] = len(pairs_of_set)
    return train, validation, drawn


def _most_pairs(corpora):
    """The largest ``pairs`` whose ``part_counts`` the corpora hold."""
    most = min(len(corpora[part]) * 10 // share for part, share in SHARES.items())
    while most > 0 and any(count > len(corpora[part])
                           for part, count in part_counts(most).items()):
        most -= 1
    return most


def write_tsv(path, pairs):
    """``pairs`` as a TSV, English first, one pair a line (a side's tabs and line breaks
    made spaces): the file a user gives ``training.tsv_dataset``."""
    def field(text):
        return " ".join(text.split())

    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(f"{field(pair.english)}\t{field(pair.other)}\n" for pair in pairs)


# -- one run, in a process of its own -----------------------------------------------------------


def measure(spec):
    """One run of the README's fine-tune in this process (TensorFlow): ``spec`` names the
    preset, the TSVs (``train``, ``validation``), the precision, seed, epochs, threads
    (``[intra-op, inter-op]`` or None: TensorFlow's default) and whether to take the
    preset's validation loss before the fine-tune (``loss_before``)."""
    from zoo.benchmarks.timing import tensorflow_threads, use_threads

    if spec.get("threads"):
        use_threads(*spec["threads"])  # before TensorFlow runs anything
    import keras
    import numpy as np

    import zoo
    from zoo import precision, training
    from zoo.layers import machine_load

    class StepTimes(keras.callbacks.Callback):
        """Each training step's start and end (``perf_counter``)."""

        def __init__(self):
            super().__init__()
            self.begins, self.ends = [], []

        def on_train_batch_begin(self, batch, logs=None):
            self.begins.append(time.perf_counter())

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append(time.perf_counter())

    keras.utils.set_random_seed(spec["seed"])
    model = precision.copy_in(zoo.load(spec["preset"]), spec["precision"])
    train = training.tsv_dataset(model, spec["train"])
    validation = training.tsv_dataset(model, spec["validation"], shuffle=False)
    training.compile_for_training(model, learning_rate=LEARNING_RATE)
    steps = StepTimes()
    reading = machine_load.reading()
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        # Keras' note that fit's shuffle=True leaves a tf.data dataset as it is (this one
        # is shuffled already): the same in both runs, said on every run's terminal.
        warnings.filterwarnings("ignore", r"`shuffle=True` was passed", UserWarning)
        model.fit(train, epochs=spec["epochs"], verbose=0, callbacks=[steps])
    fit_seconds = time.perf_counter() - start
    fit_cpu_seconds = time.process_time() - cpu
    others_share = machine_load.others_share(reading, machine_load.reading())
    step_seconds = [end - begin for begin, end in zip(steps.begins, steps.ends)]
    result = {
        "precision": spec["precision"], "round": spec.get("round", 1), "seed": spec["seed"],
        "epochs": spec["epochs"], "compute_dtype": model.compute_dtype,
        "threads": spec.get("threads"), "tensorflow_threads": tensorflow_threads(),
        "fit_seconds": fit_seconds, "fit_cpu_seconds": fit_cpu_seconds,
        "first_step_seconds": step_seconds[0],
        "median_step_seconds": statistics.median(step_seconds[1:] or step_seconds),
        "steps": len(step_seconds), "others_share_during_fit": others_share,
        "validation_loss_after": _validation_loss(precision.copy_in(model, "float32"),
                                                  validation),
        "validation_loss_before": (_validation_loss(zoo.load(spec["preset"]), validation)
                                   if spec.get("loss_before") else None),
    }
    tokens = sum(int(np.count_nonzero(target_out)) for _, target_out in train)
    result["target_tokens_per_epoch"] = tokens
    result["target_tokens_per_second"] = tokens * spec["epochs"] / fit_seconds
    result["matmul_size"] = MATMUL_SIZE
    result["matmul_gflops"] = _matmul_gflops(model.compute_dtype, MATMUL_SIZE)
    return result


def _validation_loss(model, data):
    """``model``'s loss on ``data``, compiled as the fine-tune compiles (``evaluate``)."""
    from zoo import training

    training.compile_for_training(model, learning_rate=LEARNING_RATE)
    loss = model.evaluate(data, verbose=0)
    return float(loss[0] if isinstance(loss, list) else loss)


def _matmul_gflops(dtype, size):
    """GFLOP/s of a ``size`` x ``size`` product in ``dtype`` (median of 3 rounds of 3)."""
    from zoo.benchmarks.timing import alternate

    product = training_benchmark._matmul("tensorflow", size, size, size, dtype)
    seconds = alternate({"matmul": product}, rounds=3, repeats_per_round=3)["matmul"]
    return 2 * size**3 / seconds / 1e9


def _worker_main():
    """``python -c`` entry of a measuring process (``training._run_worker``)."""
    training_benchmark._worker_main(measure)


# -- the benchmark -------------------------------------------------------------------------------


def check_options(preset, pairs, precisions, threads, rounds, epochs, seed):
    """``(source, target, other language)`` of ``preset`` when every option is one this
    benchmark takes, else a ValueError naming what was received and what is accepted."""
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend != "tensorflow":
        raise ValueError(f"zoo benchmark fine-tune runs on TensorFlow (the README's fit of a "
                         f"translator takes its real-tokens step there); KERAS_BACKEND is "
                         f"{backend!r}: set it to tensorflow, or unset it.")
    for option, value in (("--pairs", pairs), ("--rounds", rounds), ("--epochs", epochs)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{option} takes a positive whole number; received {value!r}.")
    if not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"--seed takes a whole number from 0 to {MAX_SEED}; received "
                         f"{seed!r}.")
    if threads is not None and (len(threads) != 2 or not all(
            isinstance(count, int) and count > 0 for count in threads)):
        raise ValueError(f"--threads takes one setting, N or N/M (intra-op/inter-op threads); "
                         f"received {threads!r}.")
    training_benchmark.check_precisions(list(precisions))
    return translator_languages(preset)


def benchmark_fine_tune(preset=DEFAULT_PRESET, pairs=DEFAULT_PAIRS, precisions=DEFAULT_PRECISIONS,
                        threads=None, rounds=1, epochs=1, seed=0, data_dir=None,
                        wait_for_quiet=True, printer=print):
    """Time the README's fine-tune of ``preset`` on ``pairs`` pairs (``draw_pairs``),
    ``epochs`` epochs, in each of ``precisions`` (``zoo.precision.PRECISIONS``), a fresh
    process each, in ``rounds`` of alternating order; ``threads``: ``(intra-op,
    inter-op)`` (TensorFlow's pools) or None (TensorFlow's default). Prints the header,
    a line per run as it ends, then the table (``report_lines``); returns ``{"machine",
    "preset", "pairs", "validation_pairs", "drawn", "epochs", "threads", "seed", "runs":
    [measure's results], "summary"}``."""
    _, _, language = check_options(preset, pairs, precisions, threads, rounds, epochs, seed)
    results = {"machine": training_benchmark.machine(), "preset": str(preset),
               "language": language, "pairs": pairs, "epochs": epochs,
               "threads": list(threads) if threads else None, "seed": seed,
               "precisions": list(precisions), "rounds": rounds}
    printer(header(results))
    start = time.perf_counter()
    corpora = read_corpora(language, data_dir)
    train, validation, drawn = draw_pairs(corpora, pairs, seed)
    results.update(validation_pairs=len(validation), drawn=drawn)
    seconds = time.perf_counter() - start
    printer(f"pairs: {_counted(drawn['train'])}; validation {len(validation):,}: "
            f"{_counted(drawn['validation'])} (read and drawn in {seconds:.1f} s)")
    results["runs"] = []
    with tempfile.TemporaryDirectory(prefix="zoo-fine-tune-") as folder:
        paths = {part: str(Path(folder) / f"{part}.tsv") for part in ("train", "validation")}
        write_tsv(paths["train"], train)
        write_tsv(paths["validation"], validation)
        before_taken = False
        for round_number in range(1, rounds + 1):
            order = list(precisions) if round_number % 2 else list(reversed(precisions))
            for name in order:
                # The preset's own loss, once: in float32's first run (the first run's
                # without float32), after its fit.
                loss_before = not before_taken and (name == "float32"
                                                    or "float32" not in precisions)
                before_taken = before_taken or loss_before
                if wait_for_quiet:
                    training_benchmark._wait_for_quiet(printer)
                spec = {"preset": str(preset), **paths, "precision": name, "seed": seed,
                        "epochs": epochs, "threads": list(threads) if threads else None,
                        "round": round_number, "loss_before": loss_before}
                run = training_benchmark._run_worker(spec, "tensorflow", __name__,
                                                     "zoo benchmark fine-tune")
                results["runs"].append(run)
                printer(f"round {round_number}, {name}: fit {run['fit_seconds']:.1f} s, "
                        f"validation loss {run['validation_loss_after']:.4f}")
    results["summary"] = summary(results["runs"])
    for line in report_lines(results):
        printer(line)
    return results


def _counted(counts):
    return ", ".join(f"{count:,} {name}" for name, count in counts.items())


# -- what is printed -------------------------------------------------------------------------------


def _threads_text(threads, usable_cores):
    if not threads:
        return f"TensorFlow's default threads ({usable_cores} usable cores)"
    intra_op, inter_op = threads
    if intra_op == inter_op:
        return f"{intra_op} thread{'s' if intra_op != 1 else ''}"
    return f"{intra_op} intra-op / {inter_op} inter-op threads"


def header(results):
    """The first line: preset, pairs, epochs, threads, the CPU and its bfloat16
    instructions."""
    machine = results["machine"]
    bfloat16 = (f"bfloat16 instructions: {', '.join(machine['bfloat16'])}"
                if machine.get("bfloat16") else "no bfloat16 instructions (avx512_bf16, "
                                                "amx_bf16)")
    epochs = results["epochs"]
    return (f"zoo benchmark fine-tune {results['preset']}: {results['pairs']:,} pairs, "
            f"{epochs} epoch{'s' if epochs != 1 else ''}, "
            f"{_threads_text(results['threads'], machine['usable_cores'])}, TensorFlow, "
            f"{results['rounds']} round{'s' if results['rounds'] != 1 else ''} of "
            f"{', '.join(results['precisions'])}, a process each; CPU {machine['cpu']}, "
            f"{'AVX-512' if machine['avx512'] else 'no AVX-512'}, {bfloat16}")


def summary(runs):
    """Per precision, the median over its runs of the fit's seconds, the validation loss
    after, the matmul rate; the gap of each run's loss after to float32's of the same
    round; each precision's speed over float32's (the median of the rounds' ratios), by
    the fit's wall time and by the median step (steadier: on a shared virtual machine a
    whole fit's time moved by up to 40% from run to run, its median step by 10%); the
    targets: each precision's fit within ``TARGET_FIT_SECONDS``, and the loss of each
    other than float32 within ``TARGET_LOSS_GAP`` of float32's (the median of the
    rounds' gaps)."""
    precisions = list(dict.fromkeys(run["precision"] for run in runs))
    float32 = {run["round"]: run for run in runs if run["precision"] == "float32"}
    result = {"validation_loss_before": next(
        (run["validation_loss_before"] for run in runs
         if run.get("validation_loss_before") is not None), None), "precisions": {}}
    for name in precisions:
        own = [run for run in runs if run["precision"] == name]
        entry = {"fit_seconds": statistics.median(run["fit_seconds"] for run in own),
                 "validation_loss_after": statistics.median(
                     run["validation_loss_after"] for run in own),
                 "matmul_gflops": statistics.median(run["matmul_gflops"] for run in own)}
        entry["fit_target_holds"] = entry["fit_seconds"] <= TARGET_FIT_SECONDS
        paired = [(float32[run["round"]], run) for run in own if run["round"] in float32]
        if name != "float32" and paired:
            entry["speed_over_float32"] = statistics.median(
                base["fit_seconds"] / run["fit_seconds"] for base, run in paired)
            entry["step_speed_over_float32"] = statistics.median(
                base["median_step_seconds"] / run["median_step_seconds"]
                for base, run in paired)
            entry["loss_gap_to_float32"] = statistics.median(
                loss_gap(run, base) for base, run in paired)
            entry["loss_target_holds"] = abs(entry["loss_gap_to_float32"]) <= TARGET_LOSS_GAP
        result["precisions"][name] = entry
    return result


def loss_gap(run, float32_run):
    """``run``'s validation loss after over float32's, less 1 (0.01: 1% higher)."""
    return run["validation_loss_after"] / float32_run["validation_loss_after"] - 1


# busy: the process's CPU time over the fit's wall time (of its threads' cores).
COLUMNS = (f"{'precision':<16}{'round':>5}{'fit s':>8}{'first step s':>14}{'steps':>7}"
           f"{'step ms':>9}{'busy':>6}{'tokens/s':>10}{'others':>8}{'loss before':>13}"
           f"{'loss after':>12}{'vs float32':>12}")


def report_lines(results):
    """The table of ``results`` (``benchmark_fine_tune``'s, ``summary`` in them): the
    matmul rates, a row per run, the speed ratio and the targets' verdicts."""
    runs, summed = results["runs"], results["summary"]
    float32 = {run["round"]: run for run in runs if run["precision"] == "float32"}
    rates = ", ".join(f"{name} {entry['matmul_gflops']:,.1f}"
                      for name, entry in summed["precisions"].items())
    size = runs[0].get("matmul_size", MATMUL_SIZE)
    lines = [f"matmul rate ({size}x{size}, GFLOP/s, in each run's compute dtype): {rates}",
             COLUMNS]
    for run in sorted(runs, key=lambda run: (run["round"], run["precision"] != "float32")):
        before = run.get("validation_loss_before")
        base = float32.get(run["round"])
        versus = ("-" if base is None or run["precision"] == "float32"
                  else f"{loss_gap(run, base):+.2%}")
        others = run["others_share_during_fit"]
        lines.append(
            f"{run['precision']:<16}{run['round']:>5}{run['fit_seconds']:>8.1f}"
            f"{run['first_step_seconds']:>14.2f}{run['steps']:>7}"
            f"{run['median_step_seconds'] * 1000:>9.0f}"
            f"{run['fit_cpu_seconds'] / run['fit_seconds']:>6.2f}"
            f"{run['target_tokens_per_second']:>10,.0f}"
            f"{'-' if others is None else f'{others:.0%}':>8}"
            f"{'-' if before is None else f'{before:.4f}':>13}"
            f"{run['validation_loss_after']:>12.4f}{versus:>12}")
    workload = (results.get("pairs", DEFAULT_PAIRS), results.get("epochs", 1))
    lines.append(verdict_line(summed, len({run["round"] for run in runs}), workload))
    return lines


def _held(holds):
    return "holds" if holds else "missed"


def verdict_line(summed, rounds=1, workload=(DEFAULT_PAIRS, 1)):
    """The speed of each precision over float32's, and whether each target holds (the
    fit's is set for ``DEFAULT_PAIRS`` pairs, one epoch: said where ``workload``, ``(pairs,
    epochs)``, is another)."""
    median = f", the median of {rounds} rounds" if rounds > 1 else ""
    aside = ("" if workload == (DEFAULT_PAIRS, 1)
             else f" (a target for {DEFAULT_PAIRS:,} pairs, 1 epoch)")
    parts = []
    precisions = summed["precisions"]
    for name, entry in precisions.items():
        if "speed_over_float32" in entry:
            parts.append(f"{name} / float32 speed {entry['speed_over_float32']:.2f}x{median} "
                         f"(fit {entry['fit_seconds']:.1f} s against "
                         f"{precisions['float32']['fit_seconds']:.1f} s; median step "
                         f"{entry['step_speed_over_float32']:.2f}x)")
    targets = [f"fit <= {TARGET_FIT_SECONDS} s{aside}: " + ", ".join(
        f"{name} {_held(entry['fit_target_holds'])} ({entry['fit_seconds']:.1f} s)"
        for name, entry in precisions.items())]
    gaps = [f"{name} {_held(entry['loss_target_holds'])} "
            f"({entry['loss_gap_to_float32']:+.2%})"
            for name, entry in precisions.items() if "loss_target_holds" in entry]
    if gaps:
        targets.append(f"validation loss within {TARGET_LOSS_GAP:.0%} of float32's: "
                       + ", ".join(gaps))
    return "; ".join(parts + ["targets: " + "; ".join(targets)])
