"""What the commands share: the one-line error, a preset of the kind a command needs, the
search options' limits."""


class UsageError(Exception):
    """A command that cannot run as asked; reported as one line."""


def load_kind(name, kind):
    """A preset whose model is of ``kind`` (``zoo.models.KINDS``)."""
    import zoo
    from zoo.models import preset_model

    model = zoo.load(name)
    held = getattr(model, "kind", None)  # None: a .keras file of another Keras model
    if held != kind:
        fitting = [n for n in zoo.list_models() if preset_model.preset_kind(n) == kind]
        raise UsageError(f"{name!r} holds a model of kind {held or 'none (not a zoo model)'}, "
                         f"not {kind}; {kind} presets: {', '.join(fitting) or 'none'}.")
    return model


def load_translator(name):
    return load_kind(name, "translation")


# The options of `zoo translate`, `zoo evaluate` and `zoo export` by the arguments of
# model.translate (and the fields of zoo.decoding's search values) they set, to name them
# as the user typed them in an error.
_SEARCH_OPTIONS = {"beam_size": "--beam", "max_length": "--max-length",
                   "num_hypotheses": "--n-best", "batch_size": "--batch-size",
                   "temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p",
                   "seed": "--seed"}
# The options that set a search value's fields (zoo.decoding.searches).
_SEARCH_FIELDS = ("beam_size", "num_hypotheses", "temperature", "top_k", "top_p", "seed")


def _as_options(message):
    for argument, option in _SEARCH_OPTIONS.items():
        message = message.replace(argument, option)
    return message


def check_search_options(**options):
    """The shared rule of zoo.decoding.arguments.check_search_arguments (the limits of every
    runtime), checked before a model loads, its errors naming the options."""
    from zoo.decoding import arguments

    try:
        arguments.check_search_arguments(**options)
    except ValueError as error:
        raise UsageError(_as_options(str(error))) from None


def add_search_options(parser, n_best=True):
    """``--search`` and the options of the search values (``zoo.decoding.SEARCHES``)."""
    from zoo.decoding import searches

    parser.add_argument("--search", choices=list(searches.SEARCHES),
                        help="how to search: greedy (the default), beam (the default with "
                             "--beam or --n-best) or sampling")
    parser.add_argument("--beam", dest="beam_size", type=int, metavar="N",
                        help="beam search's width (1: greedy)")
    if n_best:
        parser.add_argument("--n-best", dest="num_hypotheses", type=int, metavar="N",
                            help="print the N best hypotheses of the beam with their scores "
                                 "(length-normalised log-probabilities)")
    parser.add_argument("--temperature", type=float,
                        help="sampling: divides the logits (default 1; 0: greedy)")
    parser.add_argument("--top-k", type=int, help="sampling: only the K most probable tokens")
    parser.add_argument("--top-p", type=float,
                        help="sampling: only the most probable tokens whose probability "
                             "reaches P")
    parser.add_argument("--seed", type=int,
                        help="sampling: the same seed gives the same translations")


def search_from_options(args, default=None):
    """The search value that ``--search`` and its options ask for (``zoo.decoding``);
    ``default`` when they ask for none."""
    from zoo.decoding import searches

    given = {field: getattr(args, field) for field in _SEARCH_FIELDS
             if getattr(args, field, None) is not None}
    if args.search is None and not given:
        return default
    name = args.search or ("beam" if set(given) & set(searches.BeamSearch.options) else "greedy")
    search = searches.SEARCHES[name]
    stray = [_SEARCH_OPTIONS[field] for field in given if field not in search.options]
    if stray:
        own = ", ".join(_SEARCH_OPTIONS[field] for field in search.options) or "none"
        raise UsageError(f"{', '.join(stray)}: not an option of --search {name} (its options: "
                         f"{own}).")
    try:
        return search(**given)
    except ValueError as error:
        raise UsageError(_as_options(str(error))) from None
