"""``zoo classify``: a label and its probability per text."""

import sys

from zoo.cli.common import load_kind

EXAMPLES = {
    "classify": [
        'zoo classify bilstm_sst2 "a charming, funny film" "I didn\'t like it."',
        "zoo classify bilstm_sst2 < reviews.txt",
    ],
}


def add_parsers(commands):
    classify = commands.add_parser("classify", help="classify text with a classifier preset")
    classify.add_argument("name")
    classify.add_argument("texts", nargs="*", help="texts to classify (default: lines of stdin)")
    classify.set_defaults(run=_command_classify)


def _command_classify(args):
    """One line per text; from stdin, a line that cannot be read (not UTF-8, too long) is
    reported on stderr by its number and printed empty, as `zoo translate --input` does."""
    model = load_kind(args.name, "classifier")
    if args.texts:
        for text, result in zip(args.texts, model.classify(args.texts)):
            print(f"{result['label']}\t{result['probability']:.3f}\t{text}")
        return 0
    from zoo import file_translation

    texts, problems = {}, 0
    for number, line in enumerate(sys.stdin.buffer, 1):
        text, problem = file_translation.readable_line(line)
        if problem:
            print(f"line {number}: {problem}; written as an empty line", file=sys.stderr)
            problems += 1
        texts[number] = text
    results = iter(model.classify([t for t in texts.values() if t is not None]))
    for text in texts.values():
        if text is None:
            print()
        else:
            result = next(results)
            print(f"{result['label']}\t{result['probability']:.3f}\t{text}")
    if problems:
        print(f"{problems} line(s) could not be classified and were written empty "
              "(reported above).", file=sys.stderr)
        return 1
    return 0
