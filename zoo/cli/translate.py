"""``zoo translate``: texts from the command line, or the lines of a file or stdin."""

import argparse
import contextlib
import sys
from pathlib import Path

from zoo.cli.common import (UsageError, add_search_options, check_search_options,
                            load_translator, search_from_options)

EXAMPLES = {
    "translate": [
        'zoo translate gru_bahdanau_en_fr "I read a book." --beam 5',
        'echo "Where is the station?" | zoo translate gru_bahdanau_en_cmn',
        'zoo translate gru_bahdanau_en_fr --beam 5 --n-best 3 "Try again."',
        "zoo translate gru_bahdanau_en_fr --input book.txt --output livre.txt",
        'zoo translate gru_bahdanau_cmn_en --beam 5 --no-repeat-ngram 3 "将烤箱预热至180度。"',
        'zoo translate gru_bahdanau_en_fr --search sampling --temperature 0.8 --seed 1 "Hello."',
    ],
}


def add_parsers(commands):
    translate = commands.add_parser("translate", help="translate text with a preset")
    translate.add_argument("name")
    translate.add_argument("texts", nargs="*", help="texts to translate (default: lines of "
                           "--input, or of stdin)")
    add_search_options(translate)
    translate.add_argument("--max-length", type=int, help="most output tokens")
    translate.add_argument("--no-repeat-ngram", type=int, metavar="N",
                           help="never say an N-gram of pieces twice (0: off; default: the "
                                "preset's output rules, zoo info NAME)")
    translate.add_argument("--min-length-ratio", type=float, metavar="R",
                           help="at least R x the source's pieces before the end (0: off; "
                                "default: the preset's)")
    translate.add_argument("--max-length-ratio", type=float, metavar="R",
                           help="end after at most R x the source's pieces (0: off; default: "
                                "the preset's)")
    translate.add_argument("--input", help="a UTF-8 file: one sentence per line")
    translate.add_argument("--output", help="where the translations go, one line per input "
                           "line (default: stdout)")
    translate.add_argument("--batch-size", type=int, default=64,
                           help="sentences per batch (default 64)")
    translate.add_argument("--progress", action=argparse.BooleanOptionalAction,
                           help="a progress bar on stderr (default: when stderr is a terminal)")
    translate.set_defaults(run=_command_translate)


def _command_translate(args):
    if args.texts and args.input:
        raise UsageError("give texts or --input FILE, not both.")
    if args.num_hypotheses is not None and not args.texts:
        raise UsageError("--n-best takes the texts on the command line (a file is "
                         "translated one line per line).")
    from zoo.decoding import GreedySearch

    args.search = search_from_options(args, GreedySearch())
    check_search_options(max_length=args.max_length, batch_size=args.batch_size)
    args.rules = _output_rules(args)
    from zoo import backend

    # One thread per operation, the batch's parts searched side by side: faster than
    # TensorFlow's default for one text and for a batch, greedy and beam alike
    # (docs/benchmarks.md, "... and two searches side by side").
    backend.use_one_thread_per_operation()
    model = load_translator(args.name)
    if args.search.returns_hypotheses:
        return _print_n_best(model, args)
    if args.texts:
        for translation in model.translate(args.texts, search=args.search,
                                           max_length=args.max_length,
                                           batch_size=args.batch_size, **args.rules):
            print(translation)
        return 0
    return _translate_file(model, args)


def _output_rules(args):
    """``translate``'s output rules from --no-repeat-ngram, --min/--max-length-ratio, with
    the options' names in the errors."""
    from zoo.decoding import arguments

    try:
        return arguments.check_output_rules(args.no_repeat_ngram, args.min_length_ratio,
                                        args.max_length_ratio)
    except ValueError as error:
        message = str(error)
        for option, name in (("--no-repeat-ngram", "no_repeat_ngram_size"),
                             ("--min-length-ratio", "min_length_ratio"),
                             ("--max-length-ratio", "max_length_ratio")):
            message = message.replace(name, option)
        raise UsageError(message) from None


def _print_n_best(model, args):
    """Per text, its hypotheses best first as ``score<TAB>translation``; a blank line
    between texts."""
    results = model.translate(args.texts, search=args.search, max_length=args.max_length,
                              batch_size=args.batch_size, **args.rules)
    for position, hypotheses in enumerate(results):
        if position:
            print()
        for hypothesis in hypotheses:
            print(f"{hypothesis['score']:.4f}\t{hypothesis['text']}")
    return 0


def _translate_file(model, args):
    """Lines of --input (or stdin) to --output (or stdout); see zoo.file_translation."""
    from zoo import file_translation

    source = _opened_input(args.input)
    total = _count_lines(args.input) if args.input else None
    from zoo._startup import stderr_is_terminal

    progress = stderr_is_terminal() if args.progress is None else args.progress
    with source as lines, _output_file(args.output, args.input) as output:
        refused = file_translation.translate_lines(
            model, lines, lambda text: output.write(text + "\n"), search=args.search,
            batch_size=args.batch_size, max_length=args.max_length, progress=progress,
            total=total, rules=args.rules)
    if refused:
        print(f"{refused} line(s) could not be translated and were written empty "
              "(reported above).", file=sys.stderr)
        return 1
    return 0


def _opened_input(path):
    if path is None:
        return contextlib.nullcontext(sys.stdin.buffer)
    try:
        return open(path, "rb")
    except OSError as error:
        raise UsageError(f"cannot read --input {path}: {error.strerror}.") from None


def _count_lines(path):
    with open(path, "rb") as handle:
        return sum(1 for _ in handle)


@contextlib.contextmanager
def _output_file(path, input_path):
    """stdout, or a file written beside ``path`` and renamed over it once complete
    (``zoo.files.replacing``: a run that fails or gets SIGTERM leaves an existing file as
    it was; its mode and a symbolic link are kept)."""
    from zoo import files

    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    target = Path(path)
    if input_path and target.exists() and target.samefile(input_path):
        raise UsageError(f"--output {path} is the input file; write to another file.")
    with contextlib.ExitStack() as stack:
        try:
            handle = stack.enter_context(files.replacing(target))
        except OSError as error:
            raise UsageError(f"cannot write --output {path}: {error.strerror}.") from None
        yield handle
