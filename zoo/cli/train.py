"""``zoo train``: a preset trained from its recipe."""

import shlex
from pathlib import Path

from zoo.cli.common import UsageError

EXAMPLES = {
    "train": [
        "zoo train gru_bahdanau_cmn_en --data pairs.tsv --out my_models/mine",
        "zoo train lstm_seq2seq_addition --epochs 3 --out my_models/addition",
        "zoo train gru_bahdanau_en_fr --average-last 5",
        "KERAS_BACKEND=jax zoo train gru_bahdanau_cmn_en --precision mixed_bfloat16",
    ],
}


def add_parsers(commands):
    train = commands.add_parser("train", help="train a preset from its recipe in zoo/recipes")
    train.add_argument("recipe", help="recipe name (zoo/recipes/NAME.json) or path")
    train.add_argument("--epochs", type=int, help="most epochs (early stopping may end sooner)")
    train.add_argument("--out", help="preset directory to write (default saved_models/NAME)")
    train.add_argument("--average-last", type=int, metavar="N",
                       help="checkpoint averaging: the mean of the last N epochs' weights ships "
                            "if its validation loss (a classifier's: accuracy) beats the final "
                            "weights' (the recipe's average_last; default: none)")
    train.add_argument("--precision", metavar="{float32,mixed_bfloat16}",
                       help="the training's arithmetic: mixed_bfloat16 computes in bfloat16 on "
                            "float32 weights (Keras' mixed precision; for accelerators, and on "
                            "TensorFlow for CPUs with bfloat16 instructions: avx512_bf16, "
                            "amx_bf16); the preset is float32 either way (default: the "
                            "recipe's, float32)")
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
    train.add_argument("--no-finish", action="store_true",
                       help="write the preset as trained, without choosing its decoding on "
                            "validation or scoring its test splits (translation recipes; on an "
                            "accelerator nothing slow runs): --retune-decoding finishes it")
    train.set_defaults(run=_command_train)


def _command_train(args):
    from zoo import backend, training
    from zoo.training import loop

    recipe = training.load_recipe(args.recipe)
    if args.average_last is not None:
        from zoo.training import recipes

        recipes.check_average_last(args.average_last, "--average-last")
        recipe = recipe.replace(average_last=args.average_last)
    if args.precision is not None:
        from zoo import precision

        precision.check(args.precision, "--precision")
        recipe = recipe.replace(precision=args.precision)
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
        options=options, choose_and_score=not args.no_finish,
    )
    print(f"preset written to {directory}")
    return 0
