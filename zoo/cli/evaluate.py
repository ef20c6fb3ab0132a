"""``zoo evaluate`` and ``zoo score``: a preset judged on a file of its task."""

import json
import sys

from zoo.cli.common import UsageError, check_search_options, load_translator

EXAMPLES = {
    "evaluate": [
        "zoo evaluate gru_bahdanau_cmn_en --data my_pairs.tsv --beam 5 --json > scores.json",
        "python -m zoo.data.generated addition test 5000 > addition_test.tsv",
        "zoo evaluate lstm_seq2seq_addition --data addition_test.tsv",
    ],
    "score": [
        "zoo score gru_bahdanau_en_fr --data my_pairs.tsv",
        "zoo score gru_bahdanau_cmn_en --data my_pairs.tsv --json > log_probabilities.jsonl",
    ],
}


def add_parsers(commands):
    evaluate = commands.add_parser("evaluate", help="score a preset on a file of its task")
    evaluate.add_argument("name")
    evaluate.add_argument("--data", required=True,
                          help="translation: TSV (English, other language); dates, addition: "
                               "TSV (input, expected); language models: plain text; "
                               "classifiers: TSV 'label<TAB>sentence' with that header")
    evaluate.add_argument("--beam", type=int, default=1)
    evaluate.add_argument("--batch-size", type=int, default=64)
    evaluate.add_argument("--json", action="store_true",
                          help="print one JSON object on stdout, the scores' lines on stderr")
    evaluate.set_defaults(run=_command_evaluate)

    scoring = commands.add_parser(
        "score", help="log-probability of given translations under a translator (teacher forced)")
    scoring.add_argument("name")
    scoring.add_argument("--data", required=True,
                         help="TSV (English, other language), as zoo evaluate reads; each "
                              "pair's translation is scored given its source")
    scoring.add_argument("--batch-size", type=int, default=64)
    scoring.add_argument("--json", action="store_true",
                         help="one JSON object a line: source, target, total, per_token, tokens")
    scoring.set_defaults(run=_command_score)


def _command_evaluate(args):
    import zoo
    from zoo import evaluation
    from zoo.models import preset_model

    check_search_options(beam_size=args.beam, batch_size=args.batch_size)
    metadata = zoo.describe(args.name)
    model = zoo.load(args.name)
    scoring = evaluation.scoring_of(preset_model.kind_of(model))
    result, lines = scoring.evaluate_file(model, metadata, args.data, beam_size=args.beam,
                                          batch_size=args.batch_size)
    # With --json, stdout holds the JSON object alone (`> out.json`), the lines go to stderr.
    print("\n".join(lines), file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    if result["unreadable_lines"]:  # each reported on stderr as it was read
        print(f"{result['unreadable_lines']} line(s) could not be read and were left out "
              "(reported above).", file=sys.stderr)
        return 1
    return 0


def _command_score(args):
    """Per pair of --data, ``total<TAB>per_token<TAB>source<TAB>target``: its
    log-probability under teacher forcing (``Seq2Seq.score``), or a JSON object a line."""
    from zoo.evaluation.translation import read_pairs_file

    if args.batch_size < 1:
        raise UsageError(f"--batch-size must be a positive number of pairs; got {args.batch_size}.")
    model = load_translator(args.name)
    sources, targets = read_pairs_file(model, args.data)
    if not sources:
        raise UsageError(f"{args.data} holds no sentence pairs.")
    for source, target, result in zip(sources, targets,
                                      model.score(sources, targets, args.batch_size)):
        if args.json:
            print(json.dumps({"source": source, "target": target, **result}, ensure_ascii=False))
        else:
            print(f"{result['total']:.4f}\t{result['per_token']:.4f}\t{source}\t{target}")
    return 0
