"""``zoo demo``: the page in a browser (the demo extra)."""

from zoo.cli.common import UsageError

EXAMPLES = {
    "demo": ["zoo demo", "zoo demo --port 8080"],
}


def add_parsers(commands):
    demo_page = commands.add_parser(
        "demo", help="serve a page to translate, sample, classify and look inside the presets "
                     "(needs the demo extra)")
    demo_page.add_argument("--port", type=int, default=7860, help="default 7860")
    demo_page.add_argument("--host", default="127.0.0.1",
                           help="address to listen on (default 127.0.0.1: this machine only)")
    demo_page.set_defaults(run=_command_demo)


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
    from zoo import backend

    # The page translates one text per request: one thread per operation is faster then.
    backend.use_one_thread_per_operation()
    try:
        demo.serve(args.host, args.port)
    except OSError as error:  # the port taken, or an address this machine does not have
        raise UsageError(f"cannot serve on {args.host}:{args.port}: {error}") from None
    return 0
