"""The ``zoo`` command line (also ``python -m zoo``)."""

import argparse
import json
import sys


def _command_list(args):
    from zoo import presets

    names = presets.list_models()
    if not names:
        print(f"no presets in {presets.presets_root()}")
        return 0
    width = max(len(n) for n in names)
    for name in names:
        metadata = presets.describe(name)
        headline = metadata.get("headline", "")
        print(f"{name:<{width}}  {metadata.get('task', ''):<22} {headline}".rstrip())
    return 0


def _command_info(args):
    from zoo import presets

    metadata = presets.describe(args.name)
    print(json.dumps(metadata, indent=2, ensure_ascii=False))
    return 0


def _command_benchmark(args):
    from zoo import benchmark

    if args.what == "layers":
        results = benchmark.benchmark_layers(rounds=args.rounds)
        if args.json:
            print(json.dumps(results))
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="zoo", description="Classic sequence models for Keras 3: pretrained, exportable."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="list the pretrained presets")
    listing.set_defaults(run=_command_list)

    info = commands.add_parser("info", help="show a preset's metadata (JSON)")
    info.add_argument("name")
    info.set_defaults(run=_command_info)

    bench = commands.add_parser("benchmark", help="measure speed, zoo against Keras, in one run")
    bench.add_argument("what", choices=["layers"])
    bench.add_argument("--rounds", type=int, default=7, help="alternating rounds (default 7)")
    bench.add_argument("--json", action="store_true", help="also print the results as JSON")
    bench.set_defaults(run=_command_benchmark)
    return parser


# Commands that need no TensorFlow start faster without it.
_COMMANDS_WITHOUT_TENSORFLOW = {"list", "info"}


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.command not in _COMMANDS_WITHOUT_TENSORFLOW:
        from zoo._startup import import_tensorflow_quietly

        import_tensorflow_quietly()
    from zoo.presets import PresetError

    try:
        return args.run(args)
    except PresetError as error:
        print(f"zoo: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("zoo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
