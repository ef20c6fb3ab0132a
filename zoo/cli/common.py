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
