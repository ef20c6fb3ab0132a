"""The training loop: a recipe and data in, a scored preset out."""

import json

import pytest

import zoo
from zoo import training
from zoo.evaluation import translation as scoring
from zoo.training import recipes, translation
from zoo.cli import main

TINY = {
    "description": "tiny test model",
    "model": "AttentionSeq2Seq",
    "corpus": "fra",
    "source_language": "en",
    "target_language": "fr",
    "model_config": {"embedding_dim": 8, "units": 8, "max_output_length": 8},
    "vocabulary": {"subwords": True, "source_size": 80, "target_size": 80},
    "batch_size": 8,
    "epochs": 2,
}

PAIRS = [("Hello.", "Bonjour."), ("Thanks.", "Merci."), ("I see.", "Je vois."),
         ("Come here.", "Viens ici."), ("Good night.", "Bonne nuit."), ("I'm here.", "Je suis là.")]


@pytest.fixture
def recipe_file(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    return path


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.tsv"
    # Enough distinct pairs that every split gets some.
    lines = [f"{en} ({i})\t{fr} ({i})" for i in range(12) for en, fr in PAIRS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_train_on_a_users_tsv_writes_a_scored_preset(recipe_file, pairs_file, tmp_path):
    out = tmp_path / "mine"
    code = main(["train", str(recipe_file), "--data", str(pairs_file), "--out", str(out),
                 "--epochs", "1", "--log-dir", str(tmp_path / "logs")])
    assert code == 0
    metadata = zoo.describe(out)
    assert metadata["training"]["command"] == (
        f"zoo train {recipe_file} --data {pairs_file} --out {out} --epochs 1 "
        f"--log-dir {tmp_path / 'logs'}")
    assert metadata["training"]["epochs_run"] == 1
    assert metadata["data"]["file"] == str(pairs_file)
    assert sum(metadata["data"]["pairs"].values()) == 72
    scores = {"bleu", "chrf", "unknown_outputs", "bleu_by_source_length"}
    # Greedy keeps the alignments, and the card says how many look at punctuation.
    assert set(metadata["test"]["greedy"]) == scores | {"attention_on_punctuation"}
    assert set(metadata["test"]["beam5"]) == scores
    for decoding in ("greedy", "beam5"):
        assert metadata["test"][decoding]["bleu"]["signature"].startswith("nrefs:1|case:mixed")
    on_punctuation = metadata["test"]["greedy"]["attention_on_punctuation"]
    assert 0 <= on_punctuation["on_punctuation"] <= on_punctuation["words"]
    card = (out / "README.md").read_text()
    assert card.startswith("# mine\n")
    assert (f"of the {on_punctuation['words']:,} produced words that are not punctuation, "
            f"{on_punctuation['percent']}% have their strongest attention weight") in card
    assert list((tmp_path / "logs" / "train").iterdir())  # TensorBoard events
    assert isinstance(zoo.load(out).translate(["Hello."])[0], str)


def test_other_data_needs_an_output_directory(recipe_file, pairs_file, capsys):
    assert main(["train", str(recipe_file), "--data", str(pairs_file)]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: Training on other data needs an output directory (--out DIR).\n")


def test_unknown_recipe_lists_the_known_ones(capsys):
    assert main(["train", "no_such_recipe"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("zoo: error: Recipe 'no_such_recipe' not found. Known recipes: ")
    assert "gru_bahdanau_cmn_en, gru_bahdanau_dates" in error


@pytest.mark.slow
def test_train_on_a_tensorflow_datasets_corpus(recipe_file, tmp_path):
    import tensorflow_datasets as tfds

    out = tmp_path / "pt_en"
    with tfds.testing.mock_data(num_examples=16):
        directory = training.train(training.load_recipe(recipe_file), out_dir=out, epochs=1,
                                   tfds_name="ted_hrlr_translate/pt_to_en",
                                   log_dir=tmp_path / "logs")
    metadata = zoo.describe(directory)
    assert (metadata["source_language"], metadata["target_language"]) == ("pt", "en")
    assert metadata["data"]["file"] == "tfds:ted_hrlr_translate/pt_to_en"
    assert metadata["data"]["pairs"] == {"train": 16, "validation": 16, "test": 16}


@pytest.mark.slow
def test_retune_decoding_rescores_without_touching_the_weights(recipe_file, pairs_file,
                                                               tmp_path):
    data_dir = tmp_path / "data"
    (data_dir / "tatoeba").mkdir(parents=True)
    (data_dir / "tatoeba" / "fra-eng.tsv").write_bytes(pairs_file.read_bytes())
    out = tmp_path / "tiny_fra"
    assert main(["train", str(recipe_file), "--data-dir", str(data_dir), "--out", str(out),
                 "--epochs", "1", "--log-dir", str(tmp_path / "logs")]) == 0
    weights_bytes = (out / "model.weights.h5").read_bytes()
    assert main(["train", str(recipe_file), "--retune-decoding", "--data-dir", str(data_dir),
                 "--out", str(out)]) == 0
    metadata = zoo.describe(out)
    assert metadata["training"]["decoding_retuned"]["length_penalties"] == list(
        scoring.LENGTH_PENALTIES)
    assert metadata["length_penalty"] in scoring.LENGTH_PENALTIES
    assert zoo.load(out).length_penalty == metadata["length_penalty"]
    assert metadata["training"]["epochs_run"] == 1  # the training record is kept
    assert (out / "model.weights.h5").read_bytes() == weights_bytes  # not even re-saved
    assert "re-chosen on validation" in (out / "README.md").read_text()
    # No real-text validation set in this data folder: no search default is chosen.
    assert "output_rules" not in metadata and zoo.load(out).output_rules == {}


def test_retune_decoding_needs_a_tatoeba_preset(toy_preset, capsys):
    with pytest.raises(ValueError, match="was not trained by `zoo train` on a Tatoeba corpus"):
        translation.retune_decoding(toy_preset)


@pytest.mark.slow
def test_a_generated_task_trains_and_is_scored_by_exact_match(tmp_path, capsys):
    recipe = training.load_recipe("lstm_seq2seq_addition").replace(
        name="tiny_addition", examples={"train": 256, "validation": 32, "test": 40},
                  model_config={"embedding_dim": 8, "units": 8, "max_output_length": 5},
                  batch_size=64)
    out = training.train(recipe, out_dir=tmp_path / "tiny_addition", epochs=1,
                         log_dir=tmp_path / "logs")
    metadata = zoo.describe(out)
    assert metadata["metric"] == "exact_match" and metadata["task"] == "addition"
    assert metadata["data"]["generator"] == "zoo.data.generated.additions"
    for decoding in ("greedy", "beam5"):
        result = metadata["test"][decoding]["exact_match"]
        assert result["examples"] == 40 and result["score"] == round(100 * result["correct"] / 40, 2)
    assert set(metadata["validation_exact_match"]) == {"greedy", "beam5"}
    assert "| greedy | " in (out / "README.md").read_text()
    # zoo evaluate scores a TSV of (input, expected) pairs the same way.
    data = tmp_path / "sums.tsv"
    data.write_text("1+1\t2\n20+22\t42\n", encoding="utf-8")
    assert main(["evaluate", str(out), "--data", str(data), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["metric"] == "exact_match" and result["examples"] == 2
    model = zoo.load(out)
    assert result["value"] == 50.0 * sum(
        h == r for h, r in zip(model.translate(["1+1", "20+22"]), ["2", "42"]))


def test_generated_tasks_take_no_data_file(tmp_path, pairs_file):
    recipe = training.load_recipe("gru_bahdanau_dates")
    with pytest.raises(ValueError, match="generates \\(dates\\); it takes no --data file"):
        training.train(recipe, out_dir=tmp_path / "x", data_file=pairs_file)


def test_a_misspelt_recipe_key_is_a_one_line_error_before_any_data_is_read(tmp_path, capsys):
    path = tmp_path / "my_recipe.json"
    path.write_text(json.dumps(dict(TINY, learning_rat=0.01)))
    # No --data-dir with the corpus: reading data would fail otherwise.
    assert main(["train", str(path), "--out", str(tmp_path / "out"),
                 "--data-dir", str(tmp_path / "nowhere")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"zoo: error: {path}: unknown key 'learning_rat' for a translation "
                           "recipe; accepted keys: average_last, batch_size, corpus, ")
    assert "learning_rate" in line and not (tmp_path / "out").exists()


@pytest.mark.parametrize("key, value, expected", [
    ("batch_size", "64", "'batch_size' must be an integer; received '64' (str)."),
    ("batch_size", True, "'batch_size' must be an integer; received True (bool)."),
    ("ema_momentum", "high", "'ema_momentum' must be a number or null; received 'high' (str)."),
    ("model_config", [], "'model_config' must be an object; received [] (list)."),
])
def test_a_value_of_the_wrong_type_is_named(key, value, expected):
    with pytest.raises(recipes.RecipeError) as error:
        recipes.from_dict(dict(TINY, name="tiny", **{key: value}))
    assert str(error.value) == f"recipe 'tiny': {expected}"


def test_each_task_has_its_defaults_in_its_recipe_class():
    common = {"name": "r", "corpus": "c", "model": "m"}
    translation_recipe = recipes.from_dict(dict(common, source_language="en",
                                                target_language="fr"))
    language_model = recipes.from_dict(dict(common, task="language_model"))
    classifier = recipes.from_dict(dict(common, task="classifier"))
    assert (translation_recipe.learning_rate, translation_recipe.epochs,
            translation_recipe.patience) == (1e-3, 30, 3)
    assert (language_model.learning_rate, language_model.sequence_length,
            language_model.patience) == (2e-3, 128, 2)
    assert (classifier.epochs, classifier.patience, classifier.vocabulary) == (10, 2,
                                                                               {"min_count": 1})
    assert translation_recipe.written == dict(common, source_language="en", target_language="fr")
    with pytest.raises(recipes.RecipeError, match="missing key.*'examples' for a addition"):
        recipes.from_dict(dict(common, task="addition", source_language="char",
                               target_language="char"))
    with pytest.raises(recipes.RecipeError, match="unknown task 'poetry'; known: translation"):
        recipes.from_dict(dict(common, task="poetry"))


def test_every_shipped_recipe_reads_as_its_task():
    for path in sorted(recipes.RECIPES_DIR.glob("*.json")):
        recipe = recipes.load_recipe(path.stem)
        assert type(recipe) is recipes.RECIPE_CLASSES[recipe.task]
        assert recipe.written == {"name": path.stem, **json.loads(path.read_text())}


def test_a_resumed_run_reads_text_with_the_vocabulary_it_trained_on(pairs_file, tmp_path):
    """The WordPiece trainer can learn other pieces from the same words in another process
    (huggingface/tokenizers#1794): the vocabulary is kept beside the checkpoints."""
    from zoo.training import driver, loop

    options = loop.Options(checkpoint_dir=tmp_path / "checkpoints")
    recipe = recipes.from_dict(dict(TINY, name="tiny"))
    task = translation.TranslationTask(recipe, data_file=pairs_file)
    splits = task.read_splits()
    first = driver._text_pipeline(task, splits, options)
    learned_again = []
    task.build_preprocessor = lambda splits: learned_again.append(1)  # must not be called
    resumed = driver._text_pipeline(task, splits, options)
    assert not learned_again
    assert resumed.source_vocabulary.tokens == first.source_vocabulary.tokens
    assert resumed.target_vocabulary.tokens == first.target_vocabulary.tokens
    # Another run's checkpoints are refused, their vocabulary kept (the run may come back).
    other = translation.TranslationTask(recipe.replace(batch_size=4), data_file=pairs_file)
    with pytest.raises(loop.CheckpointMismatch, match="holds the checkpoint of another run"):
        driver._text_pipeline(other, splits, options)
    assert not learned_again
    assert driver._text_pipeline(task, splits, options).source_vocabulary.tokens == (
        first.source_vocabulary.tokens)


@pytest.mark.parametrize("key, value", [("metric", "blue"), ("weights_dtype", "int8")])
def test_a_value_outside_those_a_key_accepts_is_named(key, value):
    with pytest.raises(recipes.RecipeError, match=f"'{key}' must be one of .*; received "
                                                  f'"{value}"'):
        recipes.from_dict(dict(TINY, name="tiny", **{key: value}))


def test_a_recipe_built_in_python_writes_every_field():
    recipe = recipes.TranslationRecipe(name="mine", task="translation", corpus="fra",
                                       model="AttentionSeq2Seq", source_language="en",
                                       target_language="fr")
    assert recipe.written["batch_size"] == 64 and recipes.from_dict(recipe.written) == recipe
    with pytest.raises(recipes.RecipeError, match="A recipe is a dict or a Recipe; received str"):
        recipes.from_dict("gru_bahdanau_dates")


def test_a_recipes_task_is_its_kind_and_the_former_names_are_read_as_kinds():
    from zoo.models import KINDS
    from zoo.training import driver

    assert set(KINDS) <= set(recipes.RECIPE_CLASSES) == set(driver.TASKS)
    assert {driver.TASKS[task].kind for task in ("date_normalization", "addition")} == {
        "translation"}
    common = {"name": "r", "corpus": "c", "model": "m"}
    former = recipes.from_dict({**common, "task": "language_modeling"})
    assert former.task == "language_model" and former.written["task"] == "language_modeling"
    assert driver.task_of({"task": "classification"}) is driver.TASKS["classifier"]
    with pytest.raises(recipes.RecipeError, match="unknown task 'language'; known: "
                                                  "translation, date_normalization"):
        recipes.from_dict({**common, "task": "language"})


@pytest.mark.slow
def test_no_finish_writes_the_preset_as_trained_and_retune_decoding_finishes_it(
        recipe_file, pairs_file, tmp_path, capsys):
    data_dir = tmp_path / "data"
    (data_dir / "tatoeba").mkdir(parents=True)
    (data_dir / "tatoeba" / "fra-eng.tsv").write_bytes(pairs_file.read_bytes())
    out = tmp_path / "tiny_fra"
    assert main(["train", str(recipe_file), "--data-dir", str(data_dir), "--out", str(out),
                 "--epochs", "1", "--log-dir", str(tmp_path / "logs"), "--no-finish"]) == 0
    metadata = zoo.describe(out)
    assert metadata["unfinished"] == (
        f"trained, not yet judged: `zoo train tiny --retune-decoding --out {out}` chooses "
        f"its decoding on validation and scores its test splits")
    assert "test" not in metadata and "length_penalty" not in metadata
    assert metadata["training"]["epochs_run"] == 1 and metadata["data"]["pairs"]["train"]
    assert f"This preset is {metadata['unfinished']}." in (out / "README.md").read_text()
    assert "search options" not in capsys.readouterr().out  # nothing translated
    weights_bytes = (out / "model.weights.h5").read_bytes()
    assert main(["train", str(recipe_file), "--retune-decoding", "--data-dir", str(data_dir),
                 "--out", str(out)]) == 0
    finished = zoo.describe(out)
    assert "unfinished" not in finished and finished["test"]["beam5"]["bleu"]["score"] >= 0
    assert finished["length_penalty"] in scoring.LENGTH_PENALTIES
    assert (out / "model.weights.h5").read_bytes() == weights_bytes


def test_no_finish_is_for_translators(capsys):
    assert main(["train", "lstm_charlm_shakespeare", "--no-finish", "--out", "x"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: --no-finish applies to translation recipes (their decoding is chosen and "
        "scored by translating); lstm_charlm_shakespeare is a language_model recipe, scored "
        "in moments as it ships.\n")
