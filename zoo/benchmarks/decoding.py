"""``zoo benchmark decoding``: this checkout's decoding against another checkout's, and what
each decoding option costs."""

import json
import statistics
import subprocess
import sys
from pathlib import Path

from zoo.layers.timing import alternate_rounds, paired_speed_ratio

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
    here = Path(__file__).resolve().parents[2]  # zoo/benchmarks/decoding.py
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
