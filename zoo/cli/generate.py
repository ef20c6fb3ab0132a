"""``zoo generate``: text from a language model, printed as it is sampled."""

from zoo.cli.common import load_kind

EXAMPLES = {
    "generate": [
        'zoo generate lstm_charlm_shakespeare "ROMEO:" --length 500 --seed 1',
        'zoo generate gru_charlm_shakespeare "JULIET:" --top-k 10 --top-p 0.9',
    ],
}


def add_parsers(commands):
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


def _command_generate(args):
    model = load_kind(args.name, "language_model")
    characters = model.stream(args.prompt, args.length, args.temperature, args.seed,
                              args.top_k, args.top_p)
    first = next(characters, "")  # a bad prompt or argument fails before anything is printed
    print(args.prompt + first, end="", flush=True)
    for character in characters:
        print(character, end="", flush=True)  # as it is produced
    print()
    return 0
