"""``zoo benchmark decoding``: this checkout's decoding against another checkout's, and what
each decoding option costs."""

import json
import statistics
import subprocess
import sys
from pathlib import Path

from zoo.layers.timing import alternate_rounds, paired_speed_ratio

_HERE = Path(__file__).resolve().parents[2]  # this checkout (zoo/benchmarks/decoding.py)

# Runs in a process of its own, importing zoo from the checkout named first: only calls
# every version of the zoo has (load, translate), so that any commit can be measured.
# The third argument: [intra-op, inter-op] threads, or null for TensorFlow's default.
_DECODING_WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import zoo
threads = json.loads(sys.argv[3])
if threads:  # only for this checkout (benchmark_decoding_threads), before TensorFlow runs
    from zoo.benchmarks.timing import use_threads
    use_threads(*threads)
model = zoo.load(sys.argv[2])
print(json.dumps({"zoo": zoo.__file__}), flush=True)
texts = json.loads(sys.stdin.readline())
for line in sys.stdin:
    case = json.loads(line)
    if case.get("matmul_gflops"):
        from zoo.benchmarks.timing import matmul_gflops
        print(json.dumps({"gflops": matmul_gflops()}), flush=True)
        continue
    if case.get("warm_up"):  # the timed call right after another: back to back
        model.translate(texts[case["texts"]], beam_size=case["beam_size"])
    start = time.perf_counter()
    for _ in range(case["calls"]):
        model.translate(texts[case["texts"]], beam_size=case["beam_size"])
    print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)
"""


class _DecodingWorker:
    """A process that translates with the zoo of ``checkout``; timed from inside it."""

    def __init__(self, checkout, preset_directory, texts, threads=None):
        self._process = subprocess.Popen(
            [sys.executable, "-c", _DECODING_WORKER, str(checkout), str(preset_directory),
             json.dumps(threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
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

    def seconds(self, texts, beam_size, calls, warm_up=False):
        """Seconds for ``calls`` translations in a row; ``warm_up``: right after an untimed
        one."""
        self._send({"texts": texts, "beam_size": beam_size, "calls": calls, "warm_up": warm_up})
        return self._reply()["seconds"]

    def matmul_gflops(self):
        """This process's float32 rate on a large matrix product, on its threads."""
        self._send({"matmul_gflops": True})
        return self._reply()["gflops"]

    def close(self):
        self._process.stdin.close()
        self._process.wait()


def _test_texts(name, batch, data_dir):
    """``{"batch": batch test sentences spread over the split, "one": the first of them}``."""
    from zoo.evaluation import splits

    sources, _ = splits.preset_splits(name, data_dir)["test"]
    stride = max(len(sources) // batch, 1)
    texts = {"batch": sources[::stride][:batch]}
    texts["one"] = texts["batch"][:1]
    return texts


def _time_cases(workers, latency_sentences, rounds, back_to_back=False):
    """Greedy and beam 5, over the batch and one sentence per call (``latency_sentences``
    calls), in every worker, rounds alternating: ``(cases, {(side, case): seconds per
    round})``, a case ``(texts, beam size, calls, warm_up)``. Each call on the batch comes
    after the process has waited for the others' cases; ``back_to_back`` also times it
    right after an untimed call of its own (as a file's batches run)."""
    cases = [("batch", beam, 1, False) for beam in (1, 5)] + [
        ("one", beam, latency_sentences, False) for beam in (1, 5)]
    if back_to_back:
        cases += [("batch", beam, 1, True) for beam in (1, 5)]
    try:
        seconds = alternate_rounds(
            {(side, case): (lambda w=worker, c=case: w.seconds(*c))
             for case in cases for side, worker in workers.items()}, rounds, 1, reported=True)
    finally:
        for worker in workers.values():
            worker.close()
    return cases, seconds


def _case_label(texts, texts_name, beam, calls, warm_up=False):
    count = len(texts[texts_name]) * calls
    return (f"{'greedy' if beam == 1 else 'beam 5'}, "
            f"{'batch of ' + str(count) if texts_name == 'batch' else 'one per call'}"
            f"{', back to back' if warm_up else ''}")


def benchmark_decoding(name, baseline, batch=64, latency_sentences=16, rounds=9, data_dir=None,
                       printer=print):
    """This checkout's decoding against ``baseline`` (another checkout of the zoo, e.g. a
    ``git worktree`` of an earlier commit), the same preset weights for both: greedy and
    beam 5, one batch of ``batch`` test sentences and one sentence per call, Keras
    ``model.translate``. Each side runs in its own process, one call at a time, rounds
    alternating. Returns the sentences/s of each side (medians) and, per case, the
    median of the rounds' ratios with its 95% bootstrap interval (``paired_speed_ratio``)."""
    from zoo import presets

    baseline = Path(baseline)
    if not (baseline / "zoo" / "__init__.py").is_file():
        raise ValueError(f"--baseline must be a checkout of the zoo (a folder with "
                         f"zoo/__init__.py); received {str(baseline)!r}.")
    texts = _test_texts(name, batch, data_dir)
    preset_directory = presets.resolve(name)
    workers = {"this checkout": _DecodingWorker(_HERE, preset_directory, texts),
               "baseline": _DecodingWorker(baseline, preset_directory, texts)}
    cases, rounds_seconds = _time_cases(workers, latency_sentences, rounds)
    printer(f"zoo benchmark decoding {name}: this checkout against {baseline}, the same "
            f"weights, Keras translate; {rounds} alternating rounds (times measured inside each "
            "process): medians, and the median of each round's ratio with its 95% bootstrap "
            "interval")
    printer(f"{'case':<28}{'this checkout':>15}{'baseline':>12}{'ratio':>8}  95% interval")
    results = {"preset": name, "baseline": str(baseline), "rounds": rounds, "cases": []}
    for case in cases:
        texts_name, beam, calls, _ = case
        count = len(texts[texts_name]) * calls
        seconds = {side: rounds_seconds[side, case] for side in workers}
        speeds = {side: count / statistics.median(seconds[side]) for side in workers}
        paired = paired_speed_ratio(seconds["this checkout"], seconds["baseline"])
        low, high = paired["interval_95"]
        label = _case_label(texts, *case)
        printer(f"{label:<28}{speeds['this checkout']:>11.0f} s/s{speeds['baseline']:>8.0f} s/s"
                f"{paired['ratio']:>8.2f}  {low:.2f}-{high:.2f}")
        results["cases"].append({"beam_size": beam, "batch": len(texts[texts_name]),
                                 "sentences_per_second": speeds["this checkout"],
                                 "baseline_sentences_per_second": speeds["baseline"],
                                 **paired})
    return results


def benchmark_decoding_threads(name, settings, batch=64, latency_sentences=16, rounds=9,
                               data_dir=None, printer=print):
    """Decoding on each of TensorFlow's thread ``settings`` (``(intra_op, inter_op)``
    pairs, ``timing.thread_setting``), one process each, rounds alternating: Keras
    ``model.translate`` greedy and beam 5, one batch of ``batch`` test sentences and one
    sentence per call. Per case and setting: the speed (one per call: milliseconds a
    sentence) and its speed ratio to the first setting (the median of the rounds' ratios,
    95% bootstrap interval); per setting: beam 5's speed over greedy's on the batch, and
    the share of what the arithmetic allows that greedy on the batch reaches
    (``model.decoding_flops`` of each sentence over the setting's matmul rate, measured in
    its process before the rounds, on products back to back), for the call after a wait
    and for the call back to back (docs/benchmarks.md, "The call after a wait")."""
    import zoo
    from zoo import presets
    from zoo.benchmarks.translate import greedy_work

    if len(set(settings)) != len(settings) or not settings:
        raise ValueError(f"--threads takes different settings to compare; received "
                         f"{list(settings)}.")
    labels = [f"{i}/{o}" if i != o else str(i) for i, o in settings]
    texts = _test_texts(name, batch, data_dir)
    flops = greedy_work(zoo.load(name), texts["batch"])["flops_per_sentence"]
    preset_directory = presets.resolve(name)
    workers = {label: _DecodingWorker(_HERE, preset_directory, texts, list(setting))
               for label, setting in zip(labels, settings)}
    rates = {label: worker.matmul_gflops() for label, worker in workers.items()}
    cases, rounds_seconds = _time_cases(workers, latency_sentences, rounds, back_to_back=True)
    printer(f"zoo benchmark decoding {name} --threads {' '.join(labels)}: Keras translate, "
            f"TensorFlow intra-op/inter-op threads (N: N/N), a process each; {rounds} "
            "alternating rounds: medians, and each setting's speed over the first one's (the "
            "median of the rounds' ratios, 95% bootstrap interval); back to back: the call "
            "right after another, not after a wait")
    printer(f"{'case':<34}" + "".join(f"{label:>24}" for label in labels))
    results = {"preset": name, "rounds": rounds, "settings": labels, "cases": [],
               "greedy_flops_per_sentence": flops, "matmul_gflops": rates}
    speeds = {}
    for case in cases:
        texts_name, beam, calls, warm_up = case
        count = len(texts[texts_name]) * calls
        seconds = {label: rounds_seconds[label, case] for label in labels}
        row = f"{_case_label(texts, *case):<34}"
        for label in labels:
            speed = count / statistics.median(seconds[label])
            speeds[label, texts_name, beam, warm_up] = speed
            paired = paired_speed_ratio(seconds[label], seconds[labels[0]])
            low, high = paired["interval_95"]
            shown = f"{1000 / speed:.1f} ms" if texts_name == "one" else f"{speed:.0f} s/s"
            row += f"{shown:>10} {paired['ratio']:.2f} {low:.2f}-{high:.2f}"
            results["cases"].append({"threads": label, "beam_size": beam,
                                     "batch": len(texts[texts_name]), "back_to_back": warm_up,
                                     "sentences_per_second": speed, **paired})
        printer(row)
    settings_by_label = dict(zip(labels, settings))
    for label, setting in settings_by_label.items():
        limit_label = _limit_label(setting, settings_by_label)
        figures = []
        for warm_up, suffix in ((False, ""), (True, "_back_to_back")):
            greedy = speeds[label, "batch", 1, warm_up]
            share = flops * greedy / 1e9 / rates[limit_label]
            beam_over_greedy = speeds[label, "batch", 5, warm_up] / greedy
            results.setdefault("greedy_share_of_matmul_rate" + suffix, {})[label] = share
            results.setdefault("beam_over_greedy" + suffix, {})[label] = beam_over_greedy
            figures.append(f"{flops * greedy / 1e9:.1f} GFLOP/s, {share:.0%} of the matmul "
                           f"rate, beam 5 / greedy {beam_over_greedy:.2f}")
        printer(f"threads {label} (matmul rate on threads {limit_label}: "
                f"{rates[limit_label]:.0f} GFLOP/s): greedy on the batch computes {figures[0]}; "
                f"back to back {figures[1]}")
    return results


def _limit_label(setting, settings):
    """The setting whose matmul rate bounds ``setting``: one with as many intra-op threads
    as ``setting`` has threads in all (1/2 computes on two cores: its bound is the rate
    of 2, where the run has it), else ``setting`` itself."""
    cores = max(setting)
    for label, (intra_op, inter_op) in settings.items():
        if intra_op == inter_op == cores:
            return label
    return next(label for label, other in settings.items() if other == setting)


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
