"""`zoo --version`, and every command's --help: where preset names come from, examples."""

import shlex
from importlib import metadata

import pytest

from zoo import cli

COMMANDS = sorted(cli.EXAMPLES)
SHELL_OPERATORS = {"|", "<", ">", "&&"}


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main(["--version"])
    assert exit.value.code == 0
    assert capsys.readouterr().out == f"zoo {metadata.version('keras-sequence-zoo')}\n"


def _help(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    return capsys.readouterr().out


def test_every_command_has_examples():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    assert sorted(commands.choices) == COMMANDS


@pytest.mark.parametrize("command", COMMANDS)
def test_help_ends_with_examples_that_parse(command, capsys):
    text = _help(command, capsys)
    examples = text.split("\nexamples:\n")[1].splitlines()
    assert examples == [f"  {example}" for example in cli.EXAMPLES[command]]
    for example in cli.EXAMPLES[command]:
        words = shlex.split(example)
        if "zoo" not in words:  # a line that makes the example's data
            continue
        words = words[words.index("zoo") + 1:]
        argv = words[: next((i for i, w in enumerate(words) if w in SHELL_OPERATORS), len(words))]
        assert cli.parse(argv).command == command


@pytest.mark.parametrize("command", ["info", "translate", "attention", "inspect", "generate",
                                     "classify", "evaluate", "export"])
def test_the_preset_name_says_where_names_are_listed(command, capsys):
    text = _help(command, capsys)
    positional = text.split("positional arguments:\n")[1]
    assert " ".join(positional.split()).startswith(
        "name a preset: one of those `zoo list` names, or a preset folder")
