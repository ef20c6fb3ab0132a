"""``zoo benchmark``: speed measured side by side (``zoo.benchmarks``)."""

import json
import subprocess
import sys

from zoo.cli.common import UsageError

EXAMPLES = {
    "benchmark": [
        "zoo benchmark layers",
        "zoo benchmark layers --remeasure",
        "zoo benchmark layers --against torch --threads 1 2",
        "zoo benchmark translate gru_bahdanau_cmn_en --rounds 3 --json",
        "zoo benchmark decoding gru_bahdanau_cmn_en",
        "zoo benchmark decoding gru_bahdanau_cmn_en --baseline ../other-checkout",
        "zoo benchmark decoding gru_bahdanau_cmn_en --threads 1 2 1/2",
        "zoo benchmark training",
        "zoo benchmark training gru_bahdanau_cmn_en --backends tensorflow jax --threads 1 2",
        "zoo benchmark training --backends jax --batches 512 --batches-file mix.npz",
        "zoo benchmark training --backends jax --batches 512 --precision float32 mixed_bfloat16",
        "zoo benchmark fine-tune",
        "zoo benchmark fine-tune gru_bahdanau_en_fr --threads 2 --rounds 3 --json",
        "zoo benchmark fine-tune --pairs 2000 --precision mixed_bfloat16 --epochs 2 --seed 1",
    ],
}


def add_parsers(commands):
    bench = commands.add_parser("benchmark", help="measure speed side by side, in one run")
    bench.add_argument("what", choices=["layers", "translate", "serve", "decoding", "training",
                                        "fine-tune"])
    bench.add_argument("name", nargs="?",
                       help="translate, serve, decoding: the preset to measure; training: the "
                            "recipe (default gru_bahdanau_cmn_en); fine-tune: the translator "
                            "to fine-tune as the README does, in float32 and mixed precision "
                            "(default gru_bahdanau_cmn_en)")
    bench.add_argument("--requests", type=int,
                       help="serve: requests per concurrency level (default 200)")
    bench.add_argument("--rounds", type=int,
                       help="alternating rounds (default 7 for layers, 1 for fine-tune: "
                            "each precision once, 9 otherwise)")
    bench.add_argument("--batch", type=int, help="layers: sequences per call (default 64)")
    bench.add_argument("--remeasure", action="store_true",
                       help="layers: measure which inference layout is faster here again, "
                            "print each batch's ratio, replace the kept choice")
    bench.add_argument("--against", choices=["torch"],
                       help="layers: also torch.nn.LSTM and GRU with the same weights, at "
                            "batch 1 and 64 (or --batch), 100 steps, 256 inputs, 512 units "
                            '(needs PyTorch: pip install "keras-sequence-zoo[torch]")')
    bench.add_argument("--threads", nargs="+", metavar="N[/M]",
                       help="layers, decoding, fine-tune: compute on N threads "
                            "(TensorFlow's intra- and inter-op pools, PyTorch's), or N/M: N "
                            "intra-op and M inter-op; layers: several: one run of the "
                            "benchmark each, in a process of its own; decoding: a process for "
                            "each, timed side by side; fine-tune: one setting (default: "
                            "TensorFlow's)")
    bench.add_argument("--backends", nargs="+", metavar="BACKEND",
                       help="training: the Keras backends, a process each (default: those "
                            "installed of tensorflow, jax, torch)")
    bench.add_argument("--batches", nargs="+", type=int, metavar="ROWS",
                       help="training: the fixed shapes' batch sizes (default 64 256 512)")
    bench.add_argument("--width", nargs="+", type=int, metavar="TOKENS",
                       help="training: the fixed shapes' tokens each side (default 32; several: "
                            "each batch size at each width)")
    bench.add_argument("--real-batches", type=int, metavar="COUNT",
                       help="training: batches of the recipe's mix as zoo train makes them "
                            "(default 8; 0: fixed shapes only)")
    bench.add_argument("--batches-file", metavar="FILE.npz",
                       help="training: the real batches: read from FILE if it exists, else made "
                            "from the corpora and written there (to carry to a machine "
                            "without them)")
    bench.add_argument("--precision", nargs="+", metavar="{float32,mixed_bfloat16}",
                       help="training, fine-tune: the step's arithmetic, a process each "
                            "(mixed_bfloat16: bfloat16 on float32 weights, Keras' mixed "
                            "precision; default float32 for training, float32 mixed_bfloat16 "
                            "for fine-tune)")
    bench.add_argument("--pairs", type=int,
                       help="fine-tune: training pairs (default 20000: 40%% Tatoeba, 50%% "
                            "subtitles, 10%% news)")
    bench.add_argument("--epochs", type=int, help="fine-tune: epochs of the fit (default 1)")
    bench.add_argument("--seed", type=int,
                       help="fine-tune: the seed of the pairs' draw and of Keras (default 0)")
    bench.add_argument("--units", type=int, help="training: the recurrent units (default: "
                                                 "the recipe's)")
    bench.add_argument("--embedding-dim", type=int,
                       help="training: the embedding size (default: the recipe's)")
    bench.add_argument("--vocabulary", nargs=2, type=int, metavar=("SOURCE", "TARGET"),
                       help="training: vocabulary sizes (default: the shipped preset's)")
    bench.add_argument("--baseline",
                       help="decoding: another checkout of the zoo to compare with (without "
                            "it: each decoding option's cost)")
    bench.add_argument("--data-dir",
                       help="translate, serve, decoding: the data folder (test sentences); "
                            "training, fine-tune: the corpora's")
    bench.add_argument("--json", action="store_true", help="also print the results as JSON")
    bench.set_defaults(run=_command_benchmark)


def _command_benchmark(args):
    from zoo.benchmarks import decoding, serve, translate

    # Only the options given: the benchmark functions hold the defaults.
    rounds = {"rounds": args.rounds} if args.rounds else {}
    requests = {"requests": args.requests} if args.requests else {}
    if args.what == "training":
        return _benchmark_training(args, rounds)
    if args.what == "fine-tune":
        return _benchmark_fine_tune(args)
    _refuse_other_benchmarks_options(args)
    args.threads = _thread_settings(args.threads)
    if args.what == "layers":
        results = _benchmark_layers(args, rounds)
    elif args.against or (args.threads and args.what != "decoding"):
        raise UsageError(f"--{'against' if args.against else 'threads'} is an option of zoo "
                         f"benchmark layers{'' if args.against else ' and decoding'}, not of "
                         f"zoo benchmark {args.what}.")
    elif not args.name:
        raise UsageError(f"zoo benchmark {args.what} needs a preset name.")
    elif args.what == "decoding" and args.threads:
        if args.baseline:
            raise UsageError("--threads compares thread settings of this checkout: run it "
                             "without --baseline.")
        results = decoding.benchmark_decoding_threads(args.name, args.threads,
                                                      data_dir=args.data_dir, **rounds)
    elif args.what == "serve":
        results = serve.benchmark_serve(args.name, data_dir=args.data_dir, **requests)
    elif args.what == "decoding" and args.baseline:
        results = decoding.benchmark_decoding(args.name, args.baseline, data_dir=args.data_dir,
                                              **rounds)
    elif args.what == "decoding":
        results = decoding.benchmark_decoding_options(args.name, data_dir=args.data_dir,
                                                      **rounds)
    else:
        results = translate.benchmark_translate(args.name, data_dir=args.data_dir, **rounds)
    if args.json:
        print(json.dumps(results))
    return 0


_TRAINING_OPTIONS = ("backends", "batches", "width", "real_batches", "batches_file", "units",
                     "embedding_dim", "vocabulary", "precision")
_FINE_TUNE_OPTIONS = ("pairs", "epochs", "seed")


def _refuse_other_benchmarks_options(args):
    _refuse(args, _TRAINING_OPTIONS, "zoo benchmark training")
    _refuse(args, _FINE_TUNE_OPTIONS, "zoo benchmark fine-tune")


def _refuse(args, options, owner):
    given = [option for option in options if getattr(args, option) is not None]
    if given:
        names = ", ".join("--" + option.replace("_", "-") for option in given)
        raise UsageError(f"{names}: option{'s' if len(given) > 1 else ''} of {owner}, not of "
                         f"zoo benchmark {args.what}.")


def _benchmark_training(args, rounds):
    """``zoo benchmark training [NAME]``: each backend (and thread count) in a process of
    its own (``zoo.benchmarks.training``)."""
    from zoo.benchmarks import training

    for option in ("against", "baseline", "batch", "requests"):
        if getattr(args, option):
            raise UsageError(f"--{option} is not an option of zoo benchmark training.")
    if args.remeasure:
        raise UsageError("--remeasure is not an option of zoo benchmark training.")
    _refuse(args, _FINE_TUNE_OPTIONS, "zoo benchmark fine-tune")
    threads = [None]
    if args.threads:
        if not all(text.isdigit() and int(text) > 0 for text in args.threads):
            raise UsageError(f"--threads for training takes positive numbers of cores (N, "
                             f"each run pinned to N cores); got {' '.join(args.threads)}.")
        threads = [int(text) for text in args.threads]
    options = {"backends": args.backends, "batches_file": args.batches_file,
               "embedding_dim": args.embedding_dim, "units": args.units,
               "vocabulary": tuple(args.vocabulary) if args.vocabulary else None,
               "data_dir": args.data_dir, **rounds}
    for option, key in (("batches", "batches"), ("width", "widths"),
                        ("real_batches", "real_batches"), ("precision", "precisions")):
        if getattr(args, option) is not None:
            options[key] = getattr(args, option)
    results = training.benchmark_training(args.name or training.DEFAULT_RECIPE, threads=threads,
                                          **options)
    if args.json:
        print(json.dumps(results))
    return 0


def _benchmark_fine_tune(args):
    """``zoo benchmark fine-tune [PRESET]``: the README's fine-tune, each precision in a
    process of its own (``zoo.benchmarks.fine_tune``)."""
    from zoo.benchmarks import fine_tune

    for option in ("against", "baseline", "batch", "requests", "remeasure"):
        if getattr(args, option):
            raise UsageError(f"--{option} is not an option of zoo benchmark fine-tune.")
    _refuse(args, [option for option in _TRAINING_OPTIONS if option != "precision"],
            "zoo benchmark training")
    threads = _thread_settings(args.threads)
    if threads and len(threads) > 1:
        raise UsageError(f"--threads for fine-tune takes one setting, N or N/M (intra-op/"
                         f"inter-op); got {' '.join(args.threads)}.")
    options = {"threads": threads[0] if threads else None, "data_dir": args.data_dir}
    for option, key in (("pairs", "pairs"), ("precision", "precisions"), ("rounds", "rounds"),
                        ("epochs", "epochs"), ("seed", "seed")):
        if getattr(args, option) is not None:
            options[key] = getattr(args, option)
    results = fine_tune.benchmark_fine_tune(args.name or fine_tune.DEFAULT_PRESET, **options)
    if args.json:
        print(json.dumps(results))
    return 0


def _benchmark_layers(args, rounds):
    from zoo.benchmarks import layers
    from zoo.benchmarks.timing import use_threads

    if args.name:
        raise UsageError("zoo benchmark layers takes no preset name.")
    if args.batch is not None and args.batch < 1:
        raise UsageError(f"--batch must be a positive number of sequences; got {args.batch}.")
    if args.against and args.remeasure:
        raise UsageError("--remeasure measures the layouts of zoo benchmark layers' own "
                         "shapes: run it without --against.")
    if args.against:
        try:
            layers.import_torch()
        except ImportError as error:
            raise UsageError(str(error)) from None
    if args.threads and len(args.threads) > 1:
        return _each_thread_count(args)
    if args.threads:
        use_threads(*args.threads[0])
    if args.against:
        batches = {"batches": (args.batch,)} if args.batch else {}
        return layers.benchmark_layers_against_torch(**rounds, **batches)
    batch = {"batch": args.batch} if args.batch else {}
    return layers.benchmark_layers(**rounds, **batch, remeasure=args.remeasure)


def _each_thread_count(args):
    """``--threads N M ...``: TensorFlow sets its thread pools once a process, so each
    count runs in a ``zoo benchmark layers --threads N`` of its own, one after the
    other; their tables printed as they come; their results joined."""
    results = []
    for count in map(_setting_text, args.threads):
        command = [sys.executable, "-m", "zoo", "benchmark", "layers", "--threads", count,
                   "--json", *_layer_options(args)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as child:
            lines = list(_printed_but_last(child.stdout))
        if child.returncode != 0:  # its own error is on stderr already
            raise UsageError(f"zoo benchmark layers --threads {count} stopped (exit status "
                             f"{child.returncode}).")
        results += json.loads(lines[-1])
    return results


def _layer_options(args):
    """The options of ``zoo benchmark layers`` given, but ``--threads`` and ``--json``."""
    options = ["--remeasure"] if args.remeasure else []
    for option in ("against", "rounds", "batch"):
        value = getattr(args, option)
        if value is not None:
            options += [f"--{option}", str(value)]
    return options


def _printed_but_last(lines):
    """Print each line as it comes but the last one (the JSON, held back); yield all."""
    previous = None
    for line in lines:
        if previous is not None:
            print(previous, end="", flush=True)
        previous = line
        yield line


def _thread_settings(texts):
    """``--threads``' values as ``(intra-op, inter-op)`` pairs (None when not given)."""
    from zoo.benchmarks.timing import thread_setting

    try:
        return texts and [thread_setting(text) for text in texts]
    except ValueError:
        raise UsageError(f"--threads must be positive numbers of threads, N or N/M (intra-op/"
                         f"inter-op); got {' '.join(texts)}.") from None


def _setting_text(setting):
    intra_op, inter_op = setting
    return str(intra_op) if intra_op == inter_op else f"{intra_op}/{inter_op}"
