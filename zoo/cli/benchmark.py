"""``zoo benchmark``: speed measured side by side (``zoo.benchmarks``)."""

import json

from zoo.cli.common import UsageError

EXAMPLES = {
    "benchmark": [
        "zoo benchmark layers",
        "zoo benchmark layers --remeasure",
        "zoo benchmark translate gru_bahdanau_cmn_en --rounds 3 --json",
        "zoo benchmark decoding gru_bahdanau_cmn_en",
        "zoo benchmark decoding gru_bahdanau_cmn_en --baseline ../other-checkout",
    ],
}


def add_parsers(commands):
    bench = commands.add_parser("benchmark", help="measure speed side by side, in one run")
    bench.add_argument("what", choices=["layers", "translate", "serve", "decoding"])
    bench.add_argument("name", nargs="?", help="translate, serve, decoding: the preset to measure")
    bench.add_argument("--requests", type=int,
                       help="serve: requests per concurrency level (default 200)")
    bench.add_argument("--rounds", type=int,
                       help="alternating rounds (default 7 for layers, 9 otherwise)")
    bench.add_argument("--batch", type=int, help="layers: sequences per call (default 64)")
    bench.add_argument("--remeasure", action="store_true",
                       help="layers: measure which inference layout is faster here again, "
                            "print each batch's ratio, replace the kept choice")
    bench.add_argument("--baseline",
                       help="decoding: another checkout of the zoo to compare with (without "
                            "it: each decoding option's cost)")
    bench.add_argument("--data-dir",
                       help="translate, serve, decoding: the data folder (test sentences)")
    bench.add_argument("--json", action="store_true", help="also print the results as JSON")
    bench.set_defaults(run=_command_benchmark)


def _command_benchmark(args):
    from zoo.benchmarks import decoding, layers, serve, translate

    # Only the options given: the benchmark functions hold the defaults.
    rounds = {"rounds": args.rounds} if args.rounds else {}
    requests = {"requests": args.requests} if args.requests else {}
    if args.what == "layers":
        if args.name:
            raise UsageError("zoo benchmark layers takes no preset name.")
        if args.batch is not None and args.batch < 1:
            raise UsageError(f"--batch must be a positive number of sequences; got {args.batch}.")
        batch = {"batch": args.batch} if args.batch else {}
        results = layers.benchmark_layers(**rounds, **batch, remeasure=args.remeasure)
    elif not args.name:
        raise UsageError(f"zoo benchmark {args.what} needs a preset name.")
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
