"""``zoo list`` and ``zoo info``: the presets there are, and one's metadata."""

import json

EXAMPLES = {
    "list": ["zoo list"],
    "info": ["zoo info gru_bahdanau_cmn_en"],
}


def add_parsers(commands):
    listing = commands.add_parser("list", help="list the pretrained presets")
    listing.set_defaults(run=_command_list)

    info = commands.add_parser("info", help="show a preset's metadata (JSON)")
    info.add_argument("name")
    info.set_defaults(run=_command_info)


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
