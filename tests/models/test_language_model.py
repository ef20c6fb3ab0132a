"""Character language models: the three cells, scoring, generation, presets, CLI, training."""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

import zoo
from zoo import export, presets, training
from zoo.cli import main
from zoo.export import TFLiteLanguageModel
from zoo.models import CharLanguageModel

from conftest import CHARACTERS, VERSE, builtin_only, tflite_operators, tiny_language_model
from testcase import run_preset_test


@pytest.fixture(scope="module")
def fitted():
    """An LSTM that has learned the verse by heart."""
    keras.utils.set_random_seed(0)
    model = tiny_language_model("lstm", units=48)
    model.compile(optimizer=keras.optimizers.Adam(0.02),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ids = np.array([model.preprocessor.tokenize(VERSE)], np.int32)
    model.fit(ids[:, :-1], ids[:, 1:], epochs=150, verbose=0)
    return model


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_one_step_at_a_time_equals_the_whole_sequence(cell):
    model = tiny_language_model(cell, num_layers=2)
    ids = np.array([model.preprocessor.tokenize(VERSE[:40])], np.int32)
    whole = model(ids).numpy()[0]
    states, steps = model.zero_states(1), []
    for t in range(ids.shape[1]):
        logits, states = model.step(tf.constant(ids[:, t]), states)
        steps.append(logits.numpy()[0])
    np.testing.assert_allclose(np.array(steps), whole, atol=1e-5)


def test_recurrent_dropout_acts_in_training_only_and_is_kept_in_the_config():
    model = CharLanguageModel(len(CHARACTERS), cell="lstm", embedding_dim=8, units=16,
                              recurrent_dropout=0.5)
    model.build()
    plain = tiny_language_model("lstm")
    plain.set_weights(model.get_weights())
    ids = np.array([plain.preprocessor.tokenize(VERSE[:40])], np.int32)
    np.testing.assert_allclose(model(ids).numpy(), plain(ids).numpy(), atol=1e-6)
    trained_twice = [model(ids, training=True).numpy() for _ in range(2)]
    assert np.abs(trained_twice[0] - trained_twice[1]).max() > 1e-3
    assert np.abs(trained_twice[0] - plain(ids).numpy()).max() > 1e-3
    assert CharLanguageModel.from_config(model.get_config()).recurrent_dropout == 0.5


def test_scoring_carries_the_state_across_chunks():
    model = tiny_language_model("gru")
    one_pass = model.nats_per_char(VERSE, chunk_length=10_000)
    assert model.nats_per_char(VERSE, chunk_length=7) == pytest.approx(one_pass, abs=1e-5)
    # An untrained model is close to uniform over the characters.
    assert one_pass == pytest.approx(math.log(len(CHARACTERS)), abs=0.1)


@pytest.mark.slow
def test_a_fitted_model_recites_and_scores_low(fitted):
    assert fitted.generate("ROMEO:\nBut soft, ", 20, temperature=0) == "what light through y"
    assert fitted.nats_per_char(VERSE) < 0.3


@pytest.mark.slow
def test_generation_is_reproducible_with_a_seed_and_equal_in_the_graph_loop(fitted):
    first = fitted.generate("But", 60, temperature=1.5, seed=7)
    assert fitted.generate("But", 60, temperature=1.5, seed=7) == first
    assert fitted.generate("But", 60, temperature=1.5, seed=8) != first
    in_graph = fitted.generate_ids(tf.constant([fitted.preprocessor.tokenize("But")]), 60, tf.constant(1.5),
                                   tf.constant(7))
    assert fitted.preprocessor.detokenize(in_graph[0].numpy()) == first
    assert "".join(fitted.stream("But", 60, 1.5, 7)) == first
    assert len(fitted.generate("", 10, seed=1)) == 10  # an empty prompt starts a new line


def test_bad_generation_arguments_are_clear_errors():
    model = tiny_language_model("lstm")  # untrained: its arguments are checked alike
    with pytest.raises(ValueError, match=r"characters this model was not trained on: '@é'"):
        model.generate("é@", 5)
    with pytest.raises(ValueError, match="length must be an integer from 0 to 10,000; received -1"):
        model.generate("But", -1)
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0; received nan"):
        model.generate("But", 5, temperature=float("nan"))
    with pytest.raises(ValueError, match="cell must be one of rnn, lstm, gru; received 'tcn'"):
        CharLanguageModel(10, cell="tcn")
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0; "
                                         "received -0.5"):
        model.generate("But", 5, temperature=-0.5)
    with pytest.raises(ValueError, match="top_k must be a positive integer or None; received 0"):
        model.generate("But", 5, top_k=0)
    for top_p in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match=rf"top_p must be a number in \(0, 1\] or None; "
                                             rf"received {top_p}"):
            model.generate("But", 5, top_p=top_p)


@pytest.mark.slow
def test_top_k_of_one_generates_the_greedy_text_and_filters_hold_in_the_graph_loop(fitted):
    assert fitted.generate("But", 40, temperature=1.3, seed=4, top_k=1) == \
        fitted.generate("But", 40, temperature=0)
    filtered = fitted.generate("But", 60, temperature=1.5, seed=7, top_k=5, top_p=0.9)
    in_graph = fitted.generate_ids(tf.constant([fitted.preprocessor.tokenize("But")]), 60,
                                   tf.constant(1.5), tf.constant(7), tf.constant(5),
                                   tf.constant(0.9))
    assert fitted.preprocessor.detokenize(in_graph[0].numpy()) == filtered


@pytest.fixture(scope="module")
def lm_preset(fitted, tmp_path_factory):
    directory = tmp_path_factory.mktemp("presets") / "toy_charlm"
    return presets.save(fitted, directory, metadata={"task": "language_model"})


@pytest.mark.slow
def test_preset_round_trip_and_fine_tuning(fitted, lm_preset):
    loaded = run_preset_test(lm_preset, fitted,
                             lambda m: m.generate("But", 40, temperature=1.0, seed=3), atol=None)
    text = "ROMEO:\nbut soft, her window breaks with light?\n" * 2
    ids = np.array([loaded.preprocessor.tokenize(text)], np.int32)
    loaded.compile(optimizer=keras.optimizers.Adam(0.01),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = loaded.evaluate(ids[:, :-1], ids[:, 1:], verbose=0)
    loaded.fit(ids[:, :-1], ids[:, 1:], epochs=20, verbose=0)
    assert loaded.evaluate(ids[:, :-1], ids[:, 1:], verbose=0) < before - 0.5


@pytest.mark.slow
def test_cli_generate_streams_the_prompt_and_its_continuation(lm_preset, capsys):
    assert main(["generate", str(lm_preset), "ROMEO:\nBut", "--length", "25",
                 "--temperature", "0"]) == 0
    assert capsys.readouterr().out == "ROMEO:\nBut soft, what light through\n"
    assert main(["generate", str(lm_preset), "x", "--length", "5"]) == 2
    assert "not trained on: 'x'" in capsys.readouterr().err
    assert main(["generate", str(lm_preset), "ROMEO:\nBut", "--length", "25",
                 "--temperature", "1.5", "--seed", "3", "--top-k", "1"]) == 0
    assert capsys.readouterr().out == "ROMEO:\nBut soft, what light through\n"
    assert main(["generate", str(lm_preset), "But", "--top-p", "2"]) == 2
    assert capsys.readouterr().err == ("zoo: error: top_p must be a number in (0, 1] or None; "
                                       "received 2.0.\n")


@pytest.mark.slow
def test_cli_evaluate_reports_nats_per_char(lm_preset, tmp_path, capsys):
    path = tmp_path / "verse.txt"
    path.write_text(VERSE, encoding="utf-8")
    assert main(["evaluate", str(lm_preset), "--data", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["metric"] == "nats_per_char" and result["examples"] == len(VERSE) - 1
    assert result["value"] < 0.3
    assert result["bits_per_char"] == pytest.approx(result["value"] / math.log(2), abs=1e-3)


@pytest.mark.slow
def test_cli_refuses_a_model_of_another_task(lm_preset, toy_preset, capsys):
    assert main(["translate", str(lm_preset), "hello"]) == 2
    assert "holds a model of kind language_model, not translation; translation presets: " in capsys.readouterr().err
    assert main(["generate", str(toy_preset), "x"]) == 2
    assert "holds a model of kind translation, not language_model; language_model presets: " in capsys.readouterr().err


@pytest.mark.slow
def test_train_writes_a_scored_language_model_preset(tmp_path):
    text_file = tmp_path / "plays.txt"
    text_file.write_text(VERSE * 40, encoding="utf-8")
    recipe = training.load_recipe("gru_charlm_shakespeare").replace(
        name="tiny_lm", model_config={"cell": "gru", "embedding_dim": 8, "units": 16},
                  sequence_length=32, batch_size=8)
    out = training.train(recipe, out_dir=tmp_path / "tiny_lm", epochs=2, data_file=text_file,
                         log_dir=tmp_path / "logs")
    metadata = zoo.describe(out)
    assert metadata["task"] == "language_model" and metadata["metric"] == "nats_per_char"
    assert metadata["training"]["epochs_run"] == 2
    for split in ("validation", "test"):
        result = metadata[split]
        assert result["bits_per_char"] == pytest.approx(result["nats_per_char"] / math.log(2),
                                                        abs=1e-3)
    assert metadata["test"]["nats_per_char"] < math.log(len(set(VERSE)))  # it learned something
    card = (out / "README.md").read_text()
    assert f"| test | {metadata['test']['characters']:,} | {metadata['test']['nats_per_char']} |" in card


@pytest.mark.slow
def test_saved_model_generates_what_the_model_generates(fitted, tmp_path):
    served = tf.saved_model.load(str(export.export(fitted, "saved_model", tmp_path, name="lm")))
    generate = served.signatures["serving_default"]

    def text(prompt, length, temperature, seed, top_k=0, top_p=1.0):
        result = generate(prompt=tf.constant(prompt), length=tf.constant(length),
                          temperature=tf.constant(temperature), seed=tf.constant(seed),
                          top_k=tf.constant(top_k), top_p=tf.constant(top_p))
        return result["text"].numpy().decode()

    assert text("But", 60, 1.5, 7) == fitted.generate("But", 60, temperature=1.5, seed=7)
    assert text("But", 60, 1.5, 7, 3, 0.9) == fitted.generate("But", 60, temperature=1.5,
                                                                seed=7, top_k=3, top_p=0.9)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"top_p must be in \(0, 1\]"):
        text("But", 5, 1.0, 0, 0, 1.5)
    assert text("", 12, 0.0, 0) == fitted.generate("", 12, temperature=0)
    assert text("But", 0, 1.0, 0) == ""
    with pytest.raises(tf.errors.InvalidArgumentError, match="not trained on"):
        text("But é", 5, 1.0, 0)


@pytest.mark.slow
def test_tflite_step_model_is_builtin_only_and_matches_keras(fitted, tmp_path):
    path = export.export(fitted, "tflite", tmp_path, name="lm")
    assert builtin_only(tflite_operators(path))
    runner = TFLiteLanguageModel(path)
    assert runner.config["states"] == [2, 1, 48]  # an LSTM's (h, c)
    assert runner.generate("ROMEO:\nBut", 25, temperature=0) == \
        fitted.generate("ROMEO:\nBut", 25, temperature=0)
    assert runner.generate("But", 40, temperature=1.2, seed=5, top_k=4, top_p=0.8) == \
        fitted.generate("But", 40, temperature=1.2, seed=5, top_k=4, top_p=0.8)
    # One step's logits against Keras's, from the same state.
    states = np.random.default_rng(0).normal(size=(2, 1, 48)).astype(np.float32)
    logits, new_states = runner.step(5, states)
    keras_logits, keras_states = fitted.step(tf.constant([5]), list(states))
    np.testing.assert_allclose(logits, keras_logits.numpy()[0], atol=1e-4)
    np.testing.assert_allclose(new_states, np.stack(keras_states), atol=1e-5)
    # The runner draws from zoo.decoding's counter-based source: the Keras model's text.
    sampled = runner.generate("But", 40, temperature=1.0, seed=3)
    assert len(sampled) == 40 and sampled == fitted.generate("But", 40, temperature=1.0, seed=3)
    with pytest.raises(ValueError, match="not trained on: 'é'"):
        runner.generate("é", 3)
