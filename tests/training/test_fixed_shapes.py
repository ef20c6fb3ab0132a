"""Translation batches in a few fixed shapes: a recipe's ``length_buckets``."""

import pytest

from zoo.training import recipes


# -- the recipe key -----------------------------------------------------------------------

RECIPE = {"name": "tiny", "model": "AttentionSeq2Seq", "corpus": "fra",
          "source_language": "en", "target_language": "fr"}


NOT_WIDTHS = ("'length_buckets' must be a list of increasing positive integers (the widths "
              "batches are padded to, such as [16, 24, 36, 56, 101]; [] for none); received "
              "{}.")


@pytest.mark.parametrize("value, expected", [
    ("16, 24", "'length_buckets' must be a list or null; received '16, 24' (str)."),
    ([24, 16], NOT_WIDTHS.format("[24, 16]")),  # not increasing
    ([16, 16], NOT_WIDTHS.format("[16, 16]")),
    ([0, 16], NOT_WIDTHS.format("[0, 16]")),  # not positive
    ([16, 24.5], NOT_WIDTHS.format("[16, 24.5]")),  # not an integer
    ([8, True], NOT_WIDTHS.format("[8, true]")),
])
def test_a_bad_length_buckets_is_named(value, expected):
    with pytest.raises(recipes.RecipeError) as error:
        recipes.from_dict(dict(RECIPE, length_buckets=value))
    assert str(error.value) == f"recipe 'tiny': {expected}"


@pytest.mark.parametrize("written, widths", [
    ({"max_train_tokens": 100}, [8, 12, 16, 24, 36, 56, 84, 101]),
    ({"max_train_tokens": 40}, [8, 12, 16, 24, 36, 41]),
    ({"max_train_tokens": 7}, [8]),
    ({}, list(recipes.LENGTH_LADDER)),
    ({"max_train_tokens": 40, "length_buckets": [10, 20]}, [10, 20]),
    ({"length_buckets": []}, []),
])
def test_the_default_widths_end_at_the_longest_training_row(written, widths):
    assert recipes.from_dict(dict(RECIPE, **written)).batch_widths() == widths


def test_every_shipped_translation_recipes_training_pairs_fit_its_widest_bucket():
    for path in sorted(recipes.RECIPES_DIR.glob("*.json")):
        recipe = recipes.load_recipe(path.stem)
        if isinstance(recipe, recipes.TranslationRecipe) and recipe.max_train_tokens:
            assert recipe.batch_widths()[-1] >= recipe.max_train_tokens + 1, path.stem
