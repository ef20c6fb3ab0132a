"""What the commands share: the one-line error, a preset of the kind a command needs, the
search options' limits."""


class UsageError(Exception):
    """A command that cannot run as asked; reported as one line."""


def load_for(name, method, what):
    """A preset whose model can ``method`` (translate, generate, classify)."""
    import zoo

    model = zoo.load(name)
    if not hasattr(model, method):
        kinds = [n for n in zoo.list_models() if zoo.describe(n).get("task") == what]
        raise UsageError(f"{name!r} is a {zoo.describe(name).get('task', 'other')} model, not "
                         f"a {what} model; {what} presets: {', '.join(kinds) or 'none'}.")
    return model


def load_translator(name):
    return load_for(name, "translate", "translation")


# The options of `zoo translate` and `zoo evaluate` by the arguments of model.translate
# they set, to name them as the user typed them in an error.
_SEARCH_OPTIONS = {"beam_size": "--beam", "max_length": "--max-length",
                   "num_hypotheses": "--n-best", "batch_size": "--batch-size"}


def check_search_options(**arguments):
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
