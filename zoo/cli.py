"""The ``zoo`` command line (also ``python -m zoo``)."""

import argparse
import contextlib
import json
import os
import shlex
import sys
from pathlib import Path


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
        if "terms" in metadata:  # a corpus's licence restricts the preset's use
            headline += f" [terms: {metadata['terms']}]"
        print(f"{name:<{width}}  {metadata.get('task', ''):<22} {headline}".rstrip())
    return 0


def _command_info(args):
    from zoo import presets

    metadata = presets.describe(args.name)
    print(json.dumps(metadata, indent=2, ensure_ascii=False))
    return 0


def _command_benchmark(args):
    from zoo import benchmark

    # Only the options given: the benchmark functions hold the defaults.
    rounds = {"rounds": args.rounds} if args.rounds else {}
    requests = {"requests": args.requests} if args.requests else {}
    if args.what == "layers":
        if args.name:
            raise UsageError("zoo benchmark layers takes no preset name.")
        if args.batch is not None and args.batch < 1:
            raise UsageError(f"--batch must be a positive number of sequences; got {args.batch}.")
        batch = {"batch": args.batch} if args.batch else {}
        results = benchmark.benchmark_layers(**rounds, **batch, remeasure=args.remeasure)
    elif not args.name:
        raise UsageError(f"zoo benchmark {args.what} needs a preset name.")
    elif args.what == "serve":
        results = benchmark.benchmark_serve(args.name, data_dir=args.data_dir, **requests)
    elif args.what == "decoding" and args.baseline:
        results = benchmark.benchmark_decoding(args.name, args.baseline, data_dir=args.data_dir,
                                               **rounds)
    elif args.what == "decoding":
        results = benchmark.benchmark_decoding_options(args.name, data_dir=args.data_dir,
                                                       **rounds)
    else:
        results = benchmark.benchmark_translate(args.name, data_dir=args.data_dir, **rounds)
    if args.json:
        print(json.dumps(results))
    return 0


def _load_for(name, method, what):
    """A preset whose model can ``method`` (translate, generate, classify)."""
    import zoo

    model = zoo.load(name)
    if not hasattr(model, method):
        kinds = [n for n in zoo.list_models() if zoo.describe(n).get("task") == what]
        raise UsageError(f"{name!r} is a {zoo.describe(name).get('task', 'other')} model, not "
                         f"a {what} model; {what} presets: {', '.join(kinds) or 'none'}.")
    return model


def _load_translator(name):
    return _load_for(name, "translate", "translation")


def _command_translate(args):
    if args.texts and args.input:
        raise UsageError("give texts or --input FILE, not both.")
    if args.n_best is not None and not args.texts:
        raise UsageError("--n-best takes the texts on the command line (a file is "
                         "translated one line per line).")
    _check_search_options(beam_size=args.beam, max_length=args.max_length,
                          num_hypotheses=args.n_best, batch_size=args.batch_size)
    args.rules = _output_rules(args)
    model = _load_translator(args.name)
    if args.n_best is not None:
        return _print_n_best(model, args)
    if args.texts:
        for translation in model.translate(args.texts, beam_size=args.beam,
                                           max_length=args.max_length,
                                           batch_size=args.batch_size, **args.rules):
            print(translation)
        return 0
    return _translate_file(model, args)


# The options of `zoo translate` and `zoo evaluate` by the arguments of model.translate
# they set, to name them as the user typed them in an error.
_SEARCH_OPTIONS = {"beam_size": "--beam", "max_length": "--max-length",
                   "num_hypotheses": "--n-best", "batch_size": "--batch-size"}


def _check_search_options(**arguments):
    """The shared rule of zoo.text.codec.check_search_arguments (the limits of every
    runtime), checked before a model loads, its errors naming the options."""
    from zoo.text import codec

    try:
        codec.check_search_arguments(**arguments)
    except ValueError as error:
        message = str(error)
        for argument, option in _SEARCH_OPTIONS.items():
            message = message.replace(argument, option)
        raise UsageError(message) from None


def _output_rules(args):
    """``translate``'s output rules from --no-repeat-ngram, --min/--max-length-ratio, with
    the options' names in the errors."""
    from zoo.text import codec

    try:
        return codec.check_output_rules(args.no_repeat_ngram, args.min_length_ratio,
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
    results = model.translate(args.texts, beam_size=args.beam, max_length=args.max_length,
                              batch_size=args.batch_size, num_hypotheses=args.n_best,
                              **args.rules)
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
            model, lines, lambda text: output.write(text + "\n"), beam_size=args.beam,
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


def _command_generate(args):
    model = _load_for(args.name, "generate", "language_modeling")
    characters = model.stream(args.prompt, args.length, args.temperature, args.seed,
                              args.top_k, args.top_p)
    first = next(characters, "")  # a bad prompt or argument fails before anything is printed
    print(args.prompt + first, end="", flush=True)
    for character in characters:
        print(character, end="", flush=True)  # as it is produced
    print()
    return 0


def _command_classify(args):
    """One line per text; from stdin, a line that cannot be read (not UTF-8, too long) is
    reported on stderr by its number and printed empty, as `zoo translate --input` does."""
    model = _load_for(args.name, "classify", "classification")
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


def _command_attention(args):
    from zoo import plots

    model = _load_translator(args.name)
    source, target, weights = model.align(args.text, beam_size=args.beam,
                                          attention_level="piece" if args.pieces else "word")
    plots.attention_heatmap(weights, source, target, args.out,
                            title=f"{args.name}: {args.text}")
    print(model.translate([args.text], beam_size=args.beam)[0])
    print(f"attention heatmap written to {args.out}")
    return 0


def _command_inspect(args):
    import zoo
    from zoo import inspection, plots

    if args.units < 1:
        raise UsageError(f"--units must be a positive number of units; got {args.units}.")
    model = zoo.load(args.name)
    if not hasattr(model, "inspect"):
        raise UsageError(f"{args.name!r} has no recurrent layers to inspect (a "
                         f"{zoo.describe(args.name).get('task', 'other')} model).")
    result = model.inspect(args.text)
    traces = inspection.traces_by_layer(result)
    name = args.layer or next(iter(traces))
    if name not in traces:
        raise UsageError(f"{args.name} has no layer {name!r}; its layers: {', '.join(traces)}.")
    trace, tokens = traces[name]
    plots.gates_heatmap(trace, tokens, args.out, units=args.units, pick=args.pick,
                        title=f"{args.name}: {args.text!r:.80}")
    if "translation" in result:
        print(result["translation"])
    print(f"{name}: states and gates of {len(tokens)} steps written to {args.out} "
          f"(layers: {', '.join(traces)})")
    return 0


def _command_evaluate(args):
    import zoo
    from zoo import evaluation

    _check_search_options(beam_size=args.beam, batch_size=args.batch_size)
    metadata = zoo.describe(args.name)
    task = evaluation.task_of(metadata)
    model = _load_for(args.name, task.model_method, metadata.get("task", "translation"))
    result, lines = task.evaluate_file(model, metadata, args.data, beam_size=args.beam,
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
    model = _load_translator(args.name)
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


def _command_train(args):
    from zoo import backend, training
    from zoo.training import loop

    recipe = training.load_recipe(args.recipe)
    if args.average_last is not None:
        from zoo.training import recipes

        recipes.check_average_last(args.average_last, "--average-last")
        recipe = recipe.replace(average_last=args.average_last)
    if args.retune_decoding:
        from zoo import presets
        from zoo.training import translation

        directory = translation.retune_decoding(
            args.out or presets.presets_root() / recipe.name, data_dir=args.data_dir)
        print(f"preset re-scored in {directory}")
        return 0
    command = "zoo " + shlex.join(args.argv)
    checkpoint_every = args.checkpoint_every
    if checkpoint_every is not None and checkpoint_every < 1:
        raise UsageError(f"--checkpoint-every must be at least 1; received {checkpoint_every}.")
    if checkpoint_every is None and backend.is_tensorflow():
        checkpoint_every = 200
    options = loop.Options(
        strategy=loop.make_strategy(args.strategy),
        checkpoint_dir=Path(args.checkpoint_dir
                            or Path("checkpoints") / Path(args.out or recipe.name).name),
        checkpoint_every=checkpoint_every)
    directory = training.train(
        recipe, out_dir=args.out, epochs=args.epochs, data_file=args.data,
        data_dir=args.data_dir, log_dir=args.log_dir, command=command, tfds_name=args.tfds,
        options=options,
    )
    print(f"preset written to {directory}")
    return 0


def _command_export(args):
    from zoo import export

    options = {}
    if args.format == "tflite":
        options = {"quantize": args.quantize, "beam_size": args.beam_size}
    elif args.quantize is not None:
        raise UsageError("--quantize applies to --format tflite only.")
    out = Path(args.out)
    try:  # checked before the model loads: TensorFlow would fail minutes later, deep inside
        out.mkdir(parents=True, exist_ok=True)
        if not os.access(out, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as error:
        raise UsageError(f"cannot write into --out {args.out}: {error.strerror}.") from None
    try:
        path = export.export(args.name, args.format, out, **options)
    except FileExistsError as error:
        raise UsageError(str(error)) from None
    print(f"{args.format} export of {args.name} written to {path}")
    return 0


def _command_experiment(args):
    from zoo import experiment

    results = experiment.run(args.name, args.out, quick=args.quick)
    print(f"experiment {args.name}: {len(results['figures'])} figures and {args.name}.json "
          f"written to {args.out} in {results['wall_time_seconds']} s")
    return 0


# What `zoo demo` imports that only the demo extra installs.
_DEMO_PACKAGES = {"gradio", "plotly"}


def _command_demo(args):
    try:
        from zoo import demo
    except ImportError as error:
        if error.name not in _DEMO_PACKAGES:
            raise
        raise UsageError(f'zoo demo needs {error.name} (the demo extra): pip install -e ".[demo]" '
                         "in a checkout, or pip install 'keras-sequence-zoo[demo]'.") from None
    try:
        demo.serve(args.host, args.port)
    except OSError as error:  # the port taken, or an address this machine does not have
        raise UsageError(f"cannot serve on {args.host}:{args.port}: {error}") from None
    return 0


class UsageError(Exception):
    """A command that cannot run as asked; reported as one line."""


def build_parser():
    import zoo
    from zoo import export  # its registry only: no TensorFlow
    parser = argparse.ArgumentParser(
        prog="zoo", description="Classic sequence models for Keras 3: pretrained, exportable."
    )
    parser.add_argument("--version", action="version", version=f"zoo {zoo.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="list the pretrained presets")
    listing.set_defaults(run=_command_list)

    info = commands.add_parser("info", help="show a preset's metadata (JSON)")
    info.add_argument("name")
    info.set_defaults(run=_command_info)

    translate = commands.add_parser("translate", help="translate text with a preset")
    translate.add_argument("name")
    translate.add_argument("texts", nargs="*", help="texts to translate (default: lines of "
                           "--input, or of stdin)")
    translate.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    translate.add_argument("--max-length", type=int, help="most output tokens")
    translate.add_argument("--n-best", type=int, help="print the N best hypotheses of the "
                           "beam with their scores (length-normalised log-probabilities)")
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

    attention = commands.add_parser("attention", help="plot the attention of one translation")
    attention.add_argument("name")
    attention.add_argument("text")
    attention.add_argument("--out", required=True, help="PNG file to write")
    attention.add_argument("--beam", type=int, default=1)
    attention.add_argument("--pieces", action="store_true",
                           help="draw the subword pieces the model reads and writes "
                                "(default: words)")
    attention.set_defaults(run=_command_attention)

    inspecting = commands.add_parser(
        "inspect", help="plot a recurrent layer's states and gates over a text")
    inspecting.add_argument("name")
    inspecting.add_argument("text")
    inspecting.add_argument("--out", required=True, help="PNG file to write")
    inspecting.add_argument("--layer", help="the layer to draw (default: the first; "
                            "e.g. lstm_1, encoder/backward, decoder)")
    inspecting.add_argument("--units", type=int, default=32, help="units to draw (default 32)")
    inspecting.add_argument("--pick", choices=("varying", "first"), default="varying",
                            help="which units: those whose state varies most over the text "
                            "(default) or the first ones")
    inspecting.set_defaults(run=_command_inspect)

    generate = commands.add_parser("generate", help="generate text with a language model")
    generate.add_argument("name")
    generate.add_argument("prompt", help="text to continue (may be empty)")
    generate.add_argument("--length", type=int, default=500, help="characters to generate")
    generate.add_argument("--temperature", type=float, default=0.8,
                          help="sampling temperature (0: always the likeliest character)")
    generate.add_argument("--seed", type=int, help="makes the text reproducible")
    generate.add_argument("--top-k", type=int, help="sample from the K likeliest characters")
    generate.add_argument("--top-p", type=float,
                          help="sample from the smallest set of likeliest characters whose "
                               "probability reaches P (nucleus sampling)")
    generate.set_defaults(run=_command_generate)

    classify = commands.add_parser("classify", help="classify text with a classifier preset")
    classify.add_argument("name")
    classify.add_argument("texts", nargs="*", help="texts to classify (default: lines of stdin)")
    classify.set_defaults(run=_command_classify)

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

    train = commands.add_parser("train", help="train a preset from its recipe in zoo/recipes")
    train.add_argument("recipe", help="recipe name (zoo/recipes/NAME.json) or path")
    train.add_argument("--epochs", type=int, help="most epochs (early stopping may end sooner)")
    train.add_argument("--out", help="preset directory to write (default saved_models/NAME)")
    train.add_argument("--average-last", type=int, metavar="N",
                       help="checkpoint averaging: the mean of the last N epochs' weights ships "
                            "if its validation loss (a classifier's: accuracy) beats the final "
                            "weights' (the recipe's average_last; default: none)")
    train.add_argument("--data", help="other data instead of the corpus: translation: a TSV of "
                                      "pairs (English, other language); language models: plain "
                                      "text; classifiers: TSV 'label<TAB>sentence' with that "
                                      "header (dates and addition take none)")
    train.add_argument("--tfds", metavar="NAME",
                       help="a tensorflow-datasets translation corpus, e.g. ted_hrlr_translate/pt_to_en")
    train.add_argument("--data-dir", help="folder holding tatoeba/ (default $ZOO_DATA_DIR or ../shared/data)")
    train.add_argument("--log-dir", help="TensorBoard log folder (default runs/NAME)")
    train.add_argument("--strategy", choices=("default", "mirrored", "multi_worker"), default="default",
                       help="tf.distribute strategy: mirrored (the devices of this host) or "
                            "multi_worker (the hosts in TF_CONFIG)")
    train.add_argument("--checkpoint-dir",
                       help="checkpoints to resume from (default checkpoints/NAME); removed "
                            "once the preset is written")
    train.add_argument("--checkpoint-every", type=int, metavar="STEPS",
                       help="also checkpoint every STEPS steps inside an epoch (default 200; "
                            "TensorFlow only: JAX and PyTorch checkpoint after every epoch)")
    train.add_argument("--retune-decoding", action="store_true",
                       help="do not train: re-choose the beam length penalty and the search "
                            "defaults (output rules, coverage penalty) of the trained preset on "
                            "validation and re-score its test split")
    train.set_defaults(run=_command_train)

    exporting = commands.add_parser("export", help="export a preset for TF Serving or TFLite")
    exporting.add_argument("name")
    exporting.add_argument("--format", required=True, choices=list(export.FORMATS))
    exporting.add_argument("--out", required=True, help="folder to write into")
    exporting.add_argument("--quantize", choices=export.QUANTIZATIONS,
                           help="TFLite weights: float16, or int8 dynamic-range (default float32)")
    exporting.add_argument("--beam-size", type=int, default=5,
                           help="TFLite: the beam width of the 'beam' signature (default 5)")
    exporting.set_defaults(run=_command_export)

    experiment = commands.add_parser(
        "experiment", help="run an experiment of zoo/experiments (figures and JSON)")
    experiment.add_argument("name", help="memory, gradients, bottleneck, alignments, units or attributions")
    experiment.add_argument("--out", default="docs/experiments",
                            help="folder for the figures and NAME.json (default docs/experiments)")
    experiment.add_argument("--quick", action="store_true",
                            help="a small version of the same code (seconds to minutes)")
    experiment.set_defaults(run=_command_experiment)

    demo_page = commands.add_parser(
        "demo", help="serve a page to translate, sample, classify and look inside the presets "
                     "(needs the demo extra)")
    demo_page.add_argument("--port", type=int, default=7860, help="default 7860")
    demo_page.add_argument("--host", default="127.0.0.1",
                           help="address to listen on (default 127.0.0.1: this machine only)")
    demo_page.set_defaults(run=_command_demo)

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
    for name, command in commands.choices.items():
        _explain(command, name)
    return parser


# Each command's examples, shown at the end of its --help (a test parses every one).
EXAMPLES = {
    "list": ["zoo list"],
    "info": ["zoo info gru_bahdanau_cmn_en"],
    "translate": [
        'zoo translate gru_bahdanau_en_fr "I read a book." --beam 5',
        'echo "Where is the station?" | zoo translate gru_bahdanau_en_cmn',
        'zoo translate gru_bahdanau_en_fr --beam 5 --n-best 3 "Try again."',
        "zoo translate gru_bahdanau_en_fr --input book.txt --output livre.txt",
        'zoo translate gru_bahdanau_cmn_en --beam 5 --no-repeat-ngram 3 "将烤箱预热至180度。"',
    ],
    "attention": [
        'zoo attention gru_bahdanau_cmn_en "我读了一本书。" --out alignment.png',
        'zoo attention gru_bahdanau_dates "30 novembre 2026" --out dates.png --pieces',
    ],
    "inspect": [
        'zoo inspect lstm_charlm_shakespeare "ROMEO: But soft" --out gates.png --layer lstm_1',
        'zoo inspect gru_bahdanau_cmn_en "我读了一本书。" --out decoder.png --layer decoder',
    ],
    "generate": [
        'zoo generate lstm_charlm_shakespeare "ROMEO:" --length 500 --seed 1',
        'zoo generate gru_charlm_shakespeare "JULIET:" --top-k 10 --top-p 0.9',
    ],
    "classify": [
        'zoo classify bilstm_sst2 "a charming, funny film" "I didn\'t like it."',
        "zoo classify bilstm_sst2 < reviews.txt",
    ],
    "evaluate": [
        "zoo evaluate gru_bahdanau_cmn_en --data my_pairs.tsv --beam 5 --json > scores.json",
        "python -m zoo.data.generated addition test 5000 > addition_test.tsv",
        "zoo evaluate lstm_seq2seq_addition --data addition_test.tsv",
    ],
    "score": [
        "zoo score gru_bahdanau_en_fr --data my_pairs.tsv",
        "zoo score gru_bahdanau_cmn_en --data my_pairs.tsv --json > log_probabilities.jsonl",
    ],
    "train": [
        "zoo train gru_bahdanau_cmn_en --data pairs.tsv --out my_models/mine",
        "zoo train lstm_seq2seq_addition --epochs 3 --out my_models/addition",
        "zoo train gru_bahdanau_en_fr --average-last 5",
    ],
    "export": [
        "zoo export gru_bahdanau_cmn_en --format saved_model --out exports",
        "zoo export gru_bahdanau_cmn_en --format tflite --quantize dynamic --out exports/phone",
    ],
    "experiment": ["zoo experiment bottleneck --quick --out bottleneck"],
    "demo": ["zoo demo", "zoo demo --port 8080"],
    "benchmark": [
        "zoo benchmark layers",
        "zoo benchmark layers --remeasure",
        "zoo benchmark translate gru_bahdanau_cmn_en --rounds 3 --json",
        "zoo benchmark decoding gru_bahdanau_cmn_en",
        "zoo benchmark decoding gru_bahdanau_cmn_en --baseline ../other-checkout",
    ],
}

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


if __name__ == "__main__":
    sys.exit(main())
