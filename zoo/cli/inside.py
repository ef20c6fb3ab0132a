"""``zoo attention`` and ``zoo inspect``: figures of what a model does inside."""

from zoo.cli.common import UsageError, load_translator

EXAMPLES = {
    "attention": [
        'zoo attention gru_bahdanau_cmn_en "我读了一本书。" --out alignment.png',
        'zoo attention gru_bahdanau_dates "30 novembre 2026" --out dates.png --pieces',
    ],
    "inspect": [
        'zoo inspect lstm_charlm_shakespeare "ROMEO: But soft" --out gates.png --layer lstm_1',
        'zoo inspect gru_bahdanau_cmn_en "我读了一本书。" --out decoder.png --layer decoder',
    ],
}


def add_parsers(commands):
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


def _command_attention(args):
    from zoo import plots

    model = load_translator(args.name)
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
