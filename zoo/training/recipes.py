"""Recipes: a preset's hyper-parameters as data, one typed dataclass per kind of task.

A recipe is a JSON file in ``zoo/recipes/`` (or any path); ``load_recipe(name or path)``
reads and checks it. Each default lives here, in the dataclass of its task. An unknown
or misspelt key, or a value of the wrong type, is a one-line error naming it and the
accepted keys, raised before any data is read. ``recipe.written`` keeps the recipe as
written (with its name): it is what a preset's metadata records and what identifies a
run's checkpoints.
"""

import dataclasses
import json
import types
import typing
from pathlib import Path

from zoo.precision import PRECISIONS

RECIPES_DIR = Path(__file__).resolve().parent.parent / "recipes"


class RecipeError(ValueError):
    """A recipe that cannot be trained as written."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Recipe:
    """What every recipe says: the model, its data, and how it is optimised."""

    name: str
    task: str
    corpus: str
    model: str
    description: str = ""
    model_config: dict = dataclasses.field(default_factory=dict)
    vocabulary: dict = dataclasses.field(default_factory=dict)
    batch_size: int = 64
    learning_rate: float = 1e-3
    ema_momentum: float | None = None  # Polyak averaging of the weights (``optimizer.adam``)
    # Checkpoint averaging: the mean of the last N epochs' weights ships if it validates
    # better than the final weights (``callbacks.AverageLastEpochs``).
    average_last: int | None = None
    epochs: int = 30
    patience: int = 3  # epochs without progress before early stopping
    seed: int = 0
    seeds: list | None = None  # several trainings, the best on validation ships
    weights_dtype: str = "float32"
    # The training's: "mixed_bfloat16" computes in bfloat16 on float32 weights (Keras'
    # mixed precision, ``zoo.precision``); the preset is float32 either way.
    precision: str = "float32"
    written: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if not self.written:  # built in Python, not read: what is written is every field
            fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                      if f.name != "written"}
            object.__setattr__(self, "written", fields)

    def seeds_to_train(self):
        return list(self.seeds) if self.seeds else [self.seed]

    def replace(self, **changes):
        """This recipe with ``changes`` (they become part of what is written)."""
        return from_dict({**self.written, **changes})


@dataclasses.dataclass(frozen=True, kw_only=True)
class TranslationRecipe(Recipe):
    """A sequence-to-sequence model on Tatoeba pairs (or a user's TSV, or a tfds corpus)."""

    source_language: str
    target_language: str
    vocabulary: dict = dataclasses.field(default_factory=lambda: {"min_count": 2})
    metric: str = "bleu"
    max_train_tokens: int | None = None  # longer training pairs are left out
    label_smoothing: float = 0.0  # weight of the uniform distribution in the loss's targets
    # {"weight": W}: attention pulled towards eflomal's word alignment (training.alignment)
    guided_alignment: dict | None = None
    # A preset (name or directory) whose text pipeline and weights training starts from:
    # a fine-tune; the recipe's architecture must be the preset's.
    initial_preset: str | None = None
    # {corpus: weight}: the training data as a mix of Tatoeba ("tatoeba": the recipe's
    # corpus) and the parallel corpora (zoo.data.parallel.CORPORA); a weight is how many
    # times an epoch takes each pair (0.25: a quarter of them, another quarter each epoch).
    # Validation adds the language's real-text validation sets (parallel.EVALUATION_SETS).
    mix: dict | None = None
    # Increasing widths (in ids) that training and validation batches are padded to: each
    # batch to the smallest that holds its longest row (a source, or a target with its
    # [START] or [END]), and a partial batch to batch_size with empty rows, so that
    # batches come in a few shapes and JAX compiles the training step once per width. A
    # batch with a row past the widest keeps its natural width. None: the default,
    # ``default_length_buckets(max_train_tokens)``; []: every batch at its natural width.
    length_buckets: list | None = None

    def batch_widths(self):
        """The widths batches are padded to: ``length_buckets`` as written, or the
        default for the recipe's ``max_train_tokens``."""
        if self.length_buckets is not None:
            return list(self.length_buckets)
        return default_length_buckets(self.max_train_tokens)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GeneratedTaskRecipe(TranslationRecipe):
    """A character-level sequence-to-sequence task whose data the project generates
    (``zoo.data.generated``: dates, addition)."""

    examples: dict  # {"train": N, "validation": N, "test": N}
    metric: str = "exact_match"
    typed_share: float | None = None  # dates: the share written as people type them


@dataclasses.dataclass(frozen=True, kw_only=True)
class LanguageModelRecipe(Recipe):
    """A character language model on a text."""

    sequence_length: int = 128
    learning_rate: float = 2e-3
    learning_rate_decay: str | None = None  # "cosine": to 5% over the planned epochs
    patience: int = 2


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassificationRecipe(Recipe):
    """A text classifier on labelled sentences."""

    vocabulary: dict = dataclasses.field(default_factory=lambda: {"min_count": 1})
    templated_examples: int | None = None  # SST-2 only (``zoo.data.sentiment_templates``)
    epochs: int = 10
    patience: int = 2


# The default widths of batches: each about 1.5 times the one before, so that padding a
# batch up to its bucket adds at most about a third of its width, in a handful of shapes;
# from 8, as most Tatoeba pairs are shorter than 16 pieces.
LENGTH_LADDER = (8, 12, 16, 24, 36, 56, 84, 128, 192, 256)


def default_length_buckets(max_train_tokens):
    """The ladder's widths below the longest training row, then that row's width,
    ``max_train_tokens + 1`` (a target with its [START] or [END]): every training pair
    has its bucket and the widest is no wider than it needs to be: [8, 12, 16, 24, 36, 41]
    for 40 tokens; without ``max_train_tokens``, the whole ladder."""
    if max_train_tokens is None:
        return list(LENGTH_LADDER)
    longest = max_train_tokens + 1
    return [width for width in LENGTH_LADDER if width < longest] + [longest]


# Keyed on the kind of model a recipe trains (``zoo.models.KINDS``); the teaching tasks
# are variants of translation, named for their generated data.
RECIPE_CLASSES = {
    "translation": TranslationRecipe,
    "date_normalization": GeneratedTaskRecipe,
    "addition": GeneratedTaskRecipe,
    "language_model": LanguageModelRecipe,
    "classifier": ClassificationRecipe,
}

# What recipes and presets' metadata written before December 2026 call two kinds: read
# as the kinds they name (the shipped presets' metadata records the recipes as written).
FORMER_TASK_NAMES = {"language_modeling": "language_model", "classification": "classifier"}


def task_name(name):
    """A recipe's ``task`` as ``RECIPE_CLASSES`` names it (a former name read as its kind)."""
    return FORMER_TASK_NAMES.get(name, name)


def load_recipe(name_or_path):
    """The recipe ``NAME`` of ``zoo/recipes``, or the JSON file at a path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = RECIPES_DIR / f"{name_or_path}.json"
    if not path.is_file():
        known = sorted(p.stem for p in RECIPES_DIR.glob("*.json"))
        raise FileNotFoundError(
            f"Recipe {str(name_or_path)!r} not found. Known recipes: {', '.join(known) or 'none'}."
        )
    try:
        written = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise RecipeError(f"Recipe {path} is not valid JSON: {error}.") from None
    if not isinstance(written, dict):
        raise RecipeError(f"Recipe {path} must be a JSON object; it holds a "
                          f"{type(written).__name__}.")
    return from_dict({"name": path.stem, **written}, source=str(path))


# Values a key accepts, where not every value of its type is one.
ACCEPTED_VALUES = {
    "metric": ("bleu", "exact_match"),
    "learning_rate_decay": (None, "cosine"),
    "weights_dtype": ("float32", "float16"),
    "precision": PRECISIONS,
}


def from_dict(written, source=None):
    """The typed recipe of a dict (a recipe as written; ``task`` defaults to translation)."""
    if isinstance(written, Recipe):
        return written
    if not isinstance(written, dict):
        raise RecipeError(f"A recipe is a dict or a Recipe; received {type(written).__name__}"
                          f" {written!r} (zoo.training.load_recipe reads one by name).")
    source = source or f"recipe {written.get('name', '?')!r}"
    task = task_name(written.get("task", "translation"))
    if task not in RECIPE_CLASSES:
        raise RecipeError(f"{source}: unknown task {task!r}; known: {', '.join(RECIPE_CLASSES)}.")
    recipe_class = RECIPE_CLASSES[task]
    fields = {f.name: f for f in dataclasses.fields(recipe_class) if f.name != "written"}
    accepted = ", ".join(sorted(fields))
    types_of = typing.get_type_hints(recipe_class)
    for key, value in written.items():
        if key not in fields:
            raise RecipeError(f"{source}: unknown key {key!r} for a {task} recipe; accepted "
                              f"keys: {accepted}.")
        expected = types_of[key]
        if not _is_of(value, expected):
            raise RecipeError(f"{source}: {key!r} must be {_type_name(expected)}; received "
                              f"{value!r} ({type(value).__name__}).")
        if key in ACCEPTED_VALUES and value not in ACCEPTED_VALUES[key]:
            raise RecipeError(f"{source}: {key!r} must be one of "
                              f"{', '.join(map(json.dumps, ACCEPTED_VALUES[key]))}; received "
                              f"{json.dumps(value)}.")
    for key, check in VALUE_CHECKS.items():
        if written.get(key) is not None:
            check(written[key], f"{source}: {key!r}")
    missing = [name for name, f in fields.items() if name not in written and name != "task"
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise RecipeError(f"{source}: missing key(s) {', '.join(map(repr, missing))} for a "
                          f"{task} recipe; accepted keys: {accepted}.")
    return recipe_class(**{**written, "task": task}, written=dict(written))


def _check_guided_alignment(value, where):
    """``{"weight": W}``, W a positive number (OpenNMT-tf's ``guided_alignment_weight``)."""
    if set(value) != {"weight"}:
        raise RecipeError(f"{where} must be an object with exactly the key \"weight\" (a "
                          f"positive number, the loss's weight); received {json.dumps(value)}.")
    weight = value["weight"]
    if not _is_of(weight, float) or not weight > 0:
        raise RecipeError(f"{where} needs a positive number as \"weight\"; received "
                          f"{json.dumps(weight)}.")


def _check_mix(value, where):
    """``{corpus: weight}``: known corpora, positive weights."""
    from zoo.data import parallel

    known = ("tatoeba", *parallel.CORPORA)
    for name, weight in value.items():
        if name not in known:
            raise RecipeError(f"{where} names an unknown corpus {name!r}; known: "
                              f"{', '.join(known)}.")
        if not _is_of(weight, float) or not weight > 0:
            raise RecipeError(f"{where}: the weight of {name!r} must be a positive number; "
                              f"received {json.dumps(weight)}.")


def check_average_last(value, where):
    """A positive number of epochs (``zoo train --average-last`` is checked by it too)."""
    if value < 1:
        raise RecipeError(f"{where} must be a positive integer (how many of the last epochs' "
                          f"weights are averaged); received {json.dumps(value)}.")


def _check_length_buckets(value, where):
    """Positive integers, each wider than the one before."""
    positive = all(_is_of(width, int) and width > 0 for width in value)
    if not positive or any(a >= b for a, b in zip(value, value[1:])):
        raise RecipeError(f"{where} must be a list of increasing positive integers (the widths "
                          f"batches are padded to, such as [16, 24, 36, 56, 101]; [] for none); "
                          f"received {json.dumps(value)}.")


# Checks of values that a type and a list of accepted values cannot say.
VALUE_CHECKS = {"guided_alignment": _check_guided_alignment, "mix": _check_mix,
                "average_last": check_average_last, "length_buckets": _check_length_buckets}


def _is_of(value, expected):
    if isinstance(expected, types.UnionType):
        return any(_is_of(value, option) for option in typing.get_args(expected))
    if expected is type(None):
        return value is None
    if expected is float:  # JSON writes 1e-3 and 1 alike
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def _type_name(expected):
    if isinstance(expected, types.UnionType):
        return " or ".join(_type_name(option) for option in typing.get_args(expected))
    return {type(None): "null", dict: "an object", list: "a list", str: "a string",
            int: "an integer", float: "a number", bool: "true or false"}.get(expected,
                                                                           expected.__name__)
