"""The splits a preset is judged on, rebuilt from its metadata: which corpus, which
direction, which seed and sizes, as the recipe it was trained from says
(``metadata["training"]["recipe"]``, the recipe as written).

The trainer (``zoo.training``'s tasks) builds its splits with these same functions, so
that a preset is judged on the very sentences it was validated and tested on. Only data
that can be fetched again is rebuilt: Tatoeba, the project's generated data, a mix of
corpora, tiny-shakespeare and SST-2; a user's file or a tensorflow-datasets corpus is not.
"""

from zoo import presets
from zoo.data import generated, parallel, shakespeare, sst2, tatoeba

# The text corpora a character language model is trained on, by the recipe's "corpus".
TEXT_CORPORA = {"tinyshakespeare": shakespeare}


def pair_sides(pairs, source_language):
    """(sources, targets) as strings: English is the source when source_language is 'en'."""
    english_is_source = source_language == "en"
    sources = [p.english if english_is_source else p.other for p in pairs]
    targets = [p.other if english_is_source else p.english for p in pairs]
    return sources, targets


def other_language(source_language, target_language):
    """The language a translator pairs with English."""
    return target_language if source_language == "en" else source_language


def tatoeba_pairs(corpus, data_dir=None):
    """``{"train", "validation", "test"}`` -> ``[tatoeba.Pair]`` of a Tatoeba corpus."""
    return tatoeba.split(tatoeba.read(corpus, data_dir))


def in_direction(pair_splits, source_language):
    """``{split: (sources, targets)}`` of ``{split: [Pair]}``, in the translator's direction."""
    return {name: pair_sides(pairs, source_language) for name, pairs in pair_splits.items()}


def mix_evaluation_splits(tatoeba_splits, real_text_validation, source_language):
    """Validation and test of a translator trained on a mix: validation adds the
    language's real-text validation sets (``{name: [Pair]}``) to Tatoeba's; the test
    stays Tatoeba's (the real-text tests are scored apart)."""
    validation = tatoeba_splits["validation"] + [
        pair for pairs in real_text_validation.values() for pair in pairs]
    return {"validation": pair_sides(validation, source_language),
            "test": pair_sides(tatoeba_splits["test"], source_language)}


def generated_splits(corpus, examples, seed=0, typed_share=None):
    """``{split: (sources, targets)}`` of a generated task (``zoo.data.generated``)."""
    options = {"typed_share": typed_share} if typed_share is not None else {}
    return generated.splits(corpus, examples, seed, **options)


def text_splits(corpus, data_dir=None):
    """``{split: text}`` of a text corpus of ``TEXT_CORPORA``."""
    if corpus not in TEXT_CORPORA:
        raise ValueError(f"Unknown text corpus {corpus!r}; known: {', '.join(TEXT_CORPORA)}.")
    return TEXT_CORPORA[corpus].split(TEXT_CORPORA[corpus].read(data_dir))


def evaluation_splits(recipe, data_dir=None):
    """``{"validation", "test"}`` of a recipe as written (a dict): pairs ``(sources,
    references)`` of a translator or a generated task, the text of a language model,
    ``(sentences, labels)`` of a classifier."""
    corpus = recipe["corpus"]
    if corpus in generated.TASKS:
        # The seed and typed share as written; absent, generated.splits' defaults are the
        # recipe's (zoo.training.recipes).
        splits = generated_splits(corpus, recipe["examples"], **{
            key: recipe[key] for key in ("seed", "typed_share") if key in recipe})
    elif corpus in TEXT_CORPORA:
        splits = text_splits(corpus, data_dir)
    elif corpus == "sst2":
        splits = sst2.read(data_dir)
    elif recipe.get("mix"):
        languages = recipe["source_language"], recipe["target_language"]
        return mix_evaluation_splits(
            tatoeba_pairs(corpus, data_dir),
            parallel.evaluation_sets(other_language(*languages), "validation", data_dir),
            recipe["source_language"])
    else:
        splits = in_direction(tatoeba_pairs(corpus, data_dir), recipe["source_language"])
    return {name: splits[name] for name in ("validation", "test")}


def rebuildable_recipe(name_or_directory):
    """The recipe (as written) a preset was trained from by ``zoo train``, on data that
    can be rebuilt; a ``ValueError`` for any other preset."""
    metadata = presets.describe(name_or_directory)
    data = metadata.get("data", {})
    rebuildable = "url" in data or "generator" in data or "mix" in data
    if not rebuildable or "recipe" not in metadata.get("training", {}):
        raise ValueError(
            f"{name_or_directory} was not trained by `zoo train` on a Tatoeba corpus or "
            "generated data; only such presets can be re-scored or benchmarked on their test "
            "split.")
    return metadata["training"]["recipe"]


def preset_splits(name_or_directory, data_dir=None):
    """The validation and test splits a preset was trained and scored on."""
    return evaluation_splits(rebuildable_recipe(name_or_directory), data_dir)
