"""The bidirectional-LSTM classifier: tokens, learning, presets, CLI, training, SST-2 files."""

import json

import keras
import numpy as np
import pytest

import zoo
import tensorflow as tf

from zoo import export, presets, training
from zoo.cli import main
from zoo.export import TFLiteClassifier

from conftest import REVIEWS, builtin_only, tflite_operators, tiny_classifier
from testcase import run_preset_test
from zoo.data import sst2
from zoo.models import TextClassifier
from zoo.text import Vocabulary
from zoo.text.preprocessor import CharacterPreprocessor, ClassifierPreprocessor

@pytest.fixture(scope="module")
def fitted():
    keras.utils.set_random_seed(0)
    model = tiny_classifier()
    model.compile(optimizer=keras.optimizers.Adam(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(model.preprocessor.tokenize([t for t, _ in REVIEWS]), np.array([y for _, y in REVIEWS]),
              epochs=60, verbose=0)
    return model


def test_text_is_lower_cased_and_split_as_sst2_writes_it():
    preprocessor = ClassifierPreprocessor(Vocabulary([]))
    assert preprocessor.words("It's GREAT, isn't it?") == [
        "it", "'s", "great", ",", "is", "n't", "it", "?"]


@pytest.mark.slow
def test_a_fitted_classifier_labels_reviews(fitted):
    results = fitted.classify([t for t, _ in REVIEWS] + ["I LOVED it!"])
    assert [r["label"] for r in results] == ["positive"] * 4 + ["negative"] * 4 + ["positive"]
    assert all(0.5 < r["probability"] <= 1 for r in results)
    probabilities = fitted.probabilities(["charming", "dull"])
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, atol=1e-6)


@pytest.mark.slow
def test_text_without_known_words_reads_as_one_unknown_word(fitted):
    unknown = fitted.probabilities(["zzz"])
    np.testing.assert_allclose(fitted.probabilities([""]), unknown, atol=1e-6)
    np.testing.assert_allclose(fitted.probabilities(["   "]), unknown, atol=1e-6)
    assert fitted.classify([]) == []


@pytest.fixture(scope="module")
def classifier_preset(fitted, tmp_path_factory):
    directory = tmp_path_factory.mktemp("presets") / "toy_sentiment"
    return presets.save(fitted, directory, metadata={"task": "classifier"})


@pytest.mark.slow
def test_preset_round_trip(fitted, classifier_preset):
    texts = [t for t, _ in REVIEWS]
    run_preset_test(classifier_preset, fitted, lambda m: m.probabilities(texts), atol=1e-6)


@pytest.mark.slow
def test_cli_classify_and_evaluate(classifier_preset, tmp_path, capsys):
    assert main(["classify", str(classifier_preset), "i loved it", "a dull mess"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["positive", "negative"]
    assert lines[0].endswith("\ti loved it")
    path = tmp_path / "dev.tsv"
    path.write_text("label\tsentence\n" + "".join(f"{y}\t{t}\n" for t, y in REVIEWS))
    assert main(["evaluate", str(classifier_preset), "--data", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result == {"metric": "accuracy", "value": 100.0, "examples": 8, "unreadable_lines": 0}
    path.write_bytes(path.read_bytes() + b"1\tgood \xe9 film\n")  # Latin-1, not UTF-8
    assert main(["evaluate", str(classifier_preset), "--data", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert (result["examples"], result["unreadable_lines"]) == (8, 1)
    assert captured.err.startswith(f"{path}, line 10: not UTF-8 (invalid continuation byte at "
                                   "byte 7); left out\n")


@pytest.mark.slow
def test_sst2_files_are_read_and_checked(tmp_path):
    splits = sst2.read()
    assert len(splits["test"][0]) == 872 and set(splits["test"][1]) == {0, 1}
    validation, train = splits["validation"][0], splits["train"][0]
    assert 700 <= len(validation) <= 850 and len(train) > 55_000
    assert min(len(s.split()) for s in validation) >= 6
    # No phrase of three words or more of a validation sentence was trained on.
    validation_text = "\n".join(f" {s} " for s in validation)
    assert not [line for line in train if len(line.split()) > 2 and f" {line} " in validation_text]
    path = tmp_path / "bad.tsv"
    path.write_text("sentence\tlabel\nfine\t1\n")
    with pytest.raises(ValueError, match="expected the header 'label<TAB>sentence'"):
        sst2.read_tsv(path)
    path.write_text("label\tsentence\n2\tfine\n")
    with pytest.raises(ValueError, match="line 2: expected 'label<TAB>sentence' with label 0 or 1"):
        sst2.read_tsv(path)


def test_validation_takes_whole_sentences_and_leaves_their_phrases_out():
    lines = ["a fine and moving film about grief", "fine and moving", "moving", "fine",
             "a dull film", "dull film", "a fine and moving film"]
    train, validation = sst2.split_sentences_from_phrases(lines, share=1, min_words=3)
    assert [lines[i] for i in validation] == ["a fine and moving film about grief", "a dull film"]
    # Phrases of 3+ words inside a validation sentence go; words and word pairs stay.
    assert [lines[i] for i in train] == ["moving", "fine", "dull film"]


@pytest.mark.slow
def test_train_writes_a_scored_classifier_preset(tmp_path):
    path = tmp_path / "reviews.tsv"
    lines = [f"{y}\t{t} ({i})\n" for i in range(12) for t, y in REVIEWS]
    path.write_text("label\tsentence\n" + "".join(lines))
    recipe = training.load_recipe("bilstm_sst2").replace(
        name="tiny_sentiment", model_config={"embedding_dim": 8, "units": 8})
    out = training.train(recipe, out_dir=tmp_path / "tiny", epochs=2, data_file=path,
                         log_dir=tmp_path / "logs")
    metadata = zoo.describe(out)
    assert metadata["task"] == "classifier" and metadata["training"]["epochs_run"] == 2
    assert metadata["test"]["sentences"] == 10 and 0 <= metadata["test"]["accuracy"] <= 100
    assert f"| test | 10 | {metadata['test']['accuracy']} |" in (out / "README.md").read_text()


TEXTS = [t for t, _ in REVIEWS] + ["I LOVED it!", "", "zzz qqq", "it's dull"]


@pytest.mark.slow
def test_saved_model_classifies_as_the_model_does(fitted, tmp_path):
    served = tf.saved_model.load(str(export.export(fitted, "saved_model", tmp_path, name="s")))
    result = served.signatures["serving_default"](texts=tf.constant(TEXTS))
    np.testing.assert_allclose(result["probabilities"].numpy(), fitted.probabilities(TEXTS),
                               atol=1e-5)
    assert [label.decode() for label in result["labels"].numpy()] == [
        r["label"] for r in fitted.classify(TEXTS)]


@pytest.mark.slow
def test_tflite_classifier_is_builtin_only_and_matches_keras(fitted, tmp_path):
    path = export.export(fitted, "tflite", tmp_path, name="s")
    assert builtin_only(tflite_operators(path))
    runner = TFLiteClassifier(path)
    for text, expected in zip(TEXTS, fitted.probabilities(TEXTS)):
        np.testing.assert_allclose(runner.probabilities(text), expected, atol=1e-5)
    assert [r["label"] for r in runner.classify(TEXTS)] == [
        r["label"] for r in fitted.classify(TEXTS)]
