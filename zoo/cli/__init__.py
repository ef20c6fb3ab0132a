"""The ``zoo`` command line (also ``python -m zoo``).

One module per command group adds its commands' parsers (``add_parsers``) and holds their
examples (``EXAMPLES``), shown at the end of each command's --help; ``common`` holds what
they share. Here: the parser they make together, and running a command line.
"""

import argparse
import os
import sys

from zoo.cli import (benchmark, classify, demo, evaluate, experiment, export, generate, inside,
                     presets, train, translate)
from zoo.cli.common import UsageError

# In the order `zoo --help` lists their commands.
COMMAND_GROUPS = (presets, translate, inside, generate, classify, evaluate, train, export,
                  experiment, demo, benchmark)

# Each command's examples, shown at the end of its --help (a test parses every one).
EXAMPLES = {command: examples for group in COMMAND_GROUPS
            for command, examples in group.EXAMPLES.items()}


def build_parser():
    import zoo
    parser = argparse.ArgumentParser(
        prog="zoo", description="Classic sequence models for Keras 3: pretrained, exportable."
    )
    parser.add_argument("--version", action="version", version=f"zoo {zoo.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMAND_GROUPS:
        group.add_parsers(commands)
    for name, command in commands.choices.items():
        _explain(command, name)
    return parser


NAME_HELP = "a preset: one of those `zoo list` names, or a preset folder"


def _explain(command, name):
    """A command's help ends with its examples; its preset ``name`` says where names are."""
    command.formatter_class = argparse.RawDescriptionHelpFormatter
    command.epilog = "examples:\n" + "\n".join(f"  {example}" for example in EXAMPLES[name])
    for action in command._actions:
        if action.dest == "name" and action.help is None:
            action.help = NAME_HELP


# Commands that need no TensorFlow start faster without it.
_COMMANDS_WITHOUT_TENSORFLOW = {"list", "info"}


def parse(argv):
    """Parse a command line; options may come before or after a command's texts."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if argv and argv[0] in commands.choices:
        # argparse cannot mix options with a variable number of positionals after a
        # sub-command (`zoo translate NAME --beam 5 TEXT ...`); the sub-command's own
        # parser can, with parse_intermixed_args.
        args = commands.choices[argv[0]].parse_intermixed_args(argv[1:])
        args.command = argv[0]
        return args
    return parser.parse_args(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(argv)
    args.argv = argv
    if args.command in _COMMANDS_WITHOUT_TENSORFLOW:
        return _run(args)
    from zoo._startup import STARTUP_NOISE, import_tensorflow_quietly, live_stderr_without

    with live_stderr_without(STARTUP_NOISE):
        import_tensorflow_quietly()
        return _run(args)


def _run(args):
    from zoo.backend import BackendError
    from zoo.presets import PresetError

    try:
        status = args.run(args)
        sys.stdout.flush()  # output still buffered meets a closed pipe here, not at exit
        return status
    except (PresetError, UsageError, FileNotFoundError, ValueError, BackendError) as error:
        print(f"zoo: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("zoo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`zoo list | head`): stop quietly, as
        # Python's documentation advises (stdout pointed at devnull: nothing left to flush)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
