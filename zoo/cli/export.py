"""``zoo export``: a preset written for TF Serving (SavedModel) or TFLite."""

import os
from pathlib import Path

from zoo.cli.common import UsageError, add_search_options, search_from_options

EXAMPLES = {
    "export": [
        "zoo export gru_bahdanau_cmn_en --format saved_model --out exports",
        "zoo export gru_bahdanau_cmn_en --format tflite --quantize dynamic --out exports/phone",
        "zoo export gru_bahdanau_en_fr --format saved_model --search beam --beam 5 --out exports",
    ],
}


def add_parsers(commands):
    from zoo import export  # its registry only: no TensorFlow

    exporting = commands.add_parser("export", help="export a preset for TF Serving or TFLite")
    exporting.add_argument("name")
    exporting.add_argument("--format", required=True, choices=list(export.FORMATS))
    exporting.add_argument("--out", required=True, help="folder to write into")
    exporting.add_argument("--quantize", choices=export.QUANTIZATIONS,
                           help="TFLite weights: float16, or int8 dynamic-range (default float32)")
    exporting.add_argument("--beam-size", dest="tflite_beam_size", type=int,
                           help="TFLite: the beam width of the 'beam' signature (default 5, "
                                "or --beam's)")
    add_search_options(exporting, n_best=False)
    exporting.set_defaults(run=_command_export)


def _command_export(args):
    from zoo import export

    options = {}
    search = search_from_options(args)
    if search is not None:
        # A translator's default search: its SavedModel's serving_default, its TFLite
        # runner's translate.
        options["search"] = search
    if args.format == "tflite":
        options.update(quantize=args.quantize, beam_size=args.tflite_beam_size)
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
