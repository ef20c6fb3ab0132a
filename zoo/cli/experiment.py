"""``zoo experiment``: one experiment of ``zoo/experiments``, its figures and JSON."""

EXAMPLES = {
    "experiment": ["zoo experiment bottleneck --quick --out bottleneck"],
}


def add_parsers(commands):
    experiment = commands.add_parser(
        "experiment", help="run an experiment of zoo/experiments (figures and JSON)")
    experiment.add_argument("name", help="memory, gradients, bottleneck, alignments, units or attributions")
    experiment.add_argument("--out", default="docs/experiments",
                            help="folder for the figures and NAME.json (default docs/experiments)")
    experiment.add_argument("--quick", action="store_true",
                            help="a small version of the same code (seconds to minutes)")
    experiment.set_defaults(run=_command_experiment)


def _command_experiment(args):
    from zoo import experiments

    results = experiments.run(args.name, args.out, quick=args.quick)
    print(f"experiment {args.name}: {len(results['figures'])} figures and {args.name}.json "
          f"written to {args.out} in {results['wall_time_seconds']} s")
    return 0
