"""zoo.evaluation.splits: a preset's validation and test splits, rebuilt from the recipe
its metadata records, are those its training task built."""

import pytest

from zoo import evaluation
from zoo.data.tatoeba import Pair
from zoo.evaluation import splits
from zoo.training import recipes
from zoo.training.translation import GeneratedTask, TranslationTask

PAIRS = [("Hello.", "Bonjour."), ("Thanks.", "Merci."), ("I see.", "Je vois."),
         ("Come here.", "Viens ici."), ("Good night.", "Bonne nuit."), ("I'm here.", "Je suis là.")]
TATOEBA = {"name": "tiny_fra", "model": "AttentionSeq2Seq", "corpus": "fra",
           "source_language": "fr", "target_language": "en"}


@pytest.fixture
def data_dir(tmp_path):
    """A data folder whose Tatoeba fra-eng file holds 72 distinct pairs."""
    (tmp_path / "tatoeba").mkdir()
    lines = [f"{en} ({i})\t{fr} ({i})" for i in range(12) for en, fr in PAIRS]
    (tmp_path / "tatoeba" / "fra-eng.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


def test_a_tatoeba_recipe_as_written_gives_its_tasks_splits(data_dir):
    rebuilt = splits.evaluation_splits(TATOEBA, data_dir)
    task = TranslationTask(recipes.from_dict(TATOEBA), data_dir=data_dir)
    assert rebuilt == task.evaluation_splits()
    assert set(rebuilt) == {"validation", "test"}
    french = {f"{fr} ({i})" for i in range(12) for _, fr in PAIRS}
    sources, references = rebuilt["test"]
    assert sources and set(sources) <= french and not set(references) & french
    # French first: the recipe's direction, not the file's.
    assert splits.pair_sides([Pair("Hello.", "Bonjour.")], "fr") == (["Bonjour."], ["Hello."])


@pytest.mark.parametrize("written", [
    {"seed": 3},
    {},  # no seed written: the recipe's default
])
def test_a_generated_recipe_as_written_gives_its_tasks_splits(written):
    recipe = {"name": "tiny_addition", "task": "addition", "model": "BottleneckSeq2Seq",
              "corpus": "addition", "source_language": "char", "target_language": "char",
              "examples": {"train": 8, "validation": 20, "test": 30}, **written}
    rebuilt = splits.evaluation_splits(recipe)
    task = GeneratedTask(recipes.from_dict(recipe))
    assert rebuilt == task.evaluation_splits()
    assert [len(rebuilt[name][0]) for name in ("validation", "test")] == [20, 30]


def test_a_mix_validates_on_tatoeba_and_the_real_text_sets_and_tests_on_tatoeba():
    tatoeba = {"train": [Pair("a", "A")], "validation": [Pair("b", "B")],
               "test": [Pair("c", "C")]}
    real_text = {"ntrex_validation": [Pair("d", "D"), Pair("e", "E")]}
    assert splits.mix_evaluation_splits(tatoeba, real_text, "en") == {
        "validation": (["b", "d", "e"], ["B", "D", "E"]), "test": (["c"], ["C"])}


def test_the_other_kinds_splits_come_from_their_corpus(monkeypatch):
    text = "".join(chr(ord("a") + i % 26) for i in range(1000))
    monkeypatch.setattr(splits.shakespeare, "read", lambda directory=None: text)
    rebuilt = splits.evaluation_splits({"corpus": "tinyshakespeare", "task": "language_model"})
    assert rebuilt["test"] == splits.shakespeare.split(text)["test"] == text[950:]
    with pytest.raises(ValueError, match="Unknown text corpus 'poems'; known: tinyshakespeare."):
        splits.text_splits("poems")


def test_only_a_preset_trained_on_data_that_can_be_fetched_again_is_rebuilt(toy_preset):
    with pytest.raises(ValueError, match="was not trained by `zoo train` on a Tatoeba corpus"):
        splits.preset_splits(toy_preset)


def test_the_shipped_teaching_task_is_rebuilt_from_its_metadata():
    recipe = splits.rebuildable_recipe("gru_bahdanau_dates")
    assert recipe["corpus"] == "dates" and recipe["typed_share"] == 0.5


def test_each_kind_has_a_scoring_module_named_after_it_for_zoo_evaluate():
    from zoo.models import KINDS

    modules = {kind: evaluation.scoring_of(kind) for kind in KINDS}
    assert {kind: module.__name__ for kind, module in modules.items()} == {
        "translation": "zoo.evaluation.translation",
        "language_model": "zoo.evaluation.language_model",
        "classifier": "zoo.evaluation.classifier"}
    assert all(callable(module.evaluate_file) for module in modules.values())
    with pytest.raises(ValueError, match="No kind 'poetry' in zoo.models; known: "
                                         "classifier, language_model, translation"):
        evaluation.scoring_of("poetry")