"""Checkpoint averaging (``average_last``): the mean of the last epochs' weights ships
when it validates better than the final weights."""

import json
import random

import keras
import numpy as np
import pytest

import zoo
from zoo import presets
from zoo.cli import main
from zoo.training import callbacks as training_callbacks
from zoo.training import driver, loop, recipes

WORDS = "the king and queen of a fair land where we lay our scene".split()

# A character language model small enough to train in seconds: 13 batches an epoch.
TINY_LM = {
    "name": "tiny_lm", "task": "language_model", "model": "CharLanguageModel",
    "corpus": "tinyshakespeare",
    "model_config": {"cell": "gru", "embedding_dim": 4, "units": 8, "num_layers": 1,
                     "dropout": 0.1},
    "sequence_length": 16, "batch_size": 8, "learning_rate": 0.01, "epochs": 3,
    "patience": 3, "ema_momentum": 0.9,  # what is averaged: the averaged weights
}


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    """About 2,000 characters of made-up verse (ROMEO speaks: the preset's sample's prompt)."""
    rng = random.Random(0)
    lines = []
    while sum(map(len, lines)) < 2000:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) + "."
        lines += ["ROMEO:", line] if len(lines) % 5 == 0 else [line]
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


class _Counter(keras.layers.Layer):
    """Adds a bias, and counts its calls in an integer weight (not to be averaged)."""

    def build(self, shape):
        self.bias = self.add_weight(shape=shape[-1:], initializer="zeros")
        self.calls = self.add_weight(shape=(), dtype="int32", initializer="zeros",
                                     trainable=False)

    def call(self, x):
        return x + self.bias


def _counting_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), _Counter()])
    model.compile(optimizer="adam", loss="mse")
    return model


def _epochs_of(model, count, rng):
    """``count`` epochs' end weights set into ``model`` one after the other."""
    for _ in range(count):
        weights = [rng.normal(size=w.shape).astype(w.dtype) if w.dtype.kind == "f"
                   else np.asarray(rng.integers(100), w.dtype) for w in model.get_weights()]
        model.set_weights(weights)
        yield weights


def test_the_average_is_the_mean_of_the_last_epochs_and_leaves_integers_alone():
    model, rng = _counting_model(), np.random.default_rng(0)
    averaging = training_callbacks.AverageLastEpochs(3)
    averaging.set_model(model)
    averaging.on_train_begin()
    epochs = []
    for epoch, weights in enumerate(_epochs_of(model, 5, rng)):
        averaging.on_epoch_end(epoch)
        epochs.append(weights)
    assert averaging.kept_epochs == [3, 4, 5]
    average = averaging.average()
    *floats, calls = average
    assert calls.dtype == np.int32 and calls == epochs[-1][-1]  # the last count, not a mean
    for index, value in enumerate(floats):
        expected = np.mean([weights[index] for weights in epochs[-3:]], axis=0)
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, expected, atol=1e-6)


def test_fewer_epochs_than_asked_are_averaged_and_none_is_an_error():
    model, rng = _counting_model(), np.random.default_rng(1)
    averaging = training_callbacks.AverageLastEpochs(5)
    averaging.set_model(model)
    averaging.on_train_begin()
    with pytest.raises(ValueError, match="No epoch has ended: there are no weights to average"):
        averaging.average()
    epochs = []
    for epoch, weights in enumerate(_epochs_of(model, 2, rng)):
        averaging.on_epoch_end(epoch)
        epochs.append(weights)
    assert averaging.kept_epochs == [1, 2]
    np.testing.assert_allclose(averaging.average()[0], (epochs[0][0] + epochs[1][0]) / 2,
                               atol=1e-6)


def test_an_epochs_weights_are_written_once_into_the_checkpoints(tmp_path):
    """The kept epochs travel with the checkpoints; a save inside the next epoch links
    their files rather than writing them again."""
    model = _counting_model()
    model.optimizer.build(model.trainable_variables)
    averaging = training_callbacks.AverageLastEpochs(2)
    averaging.set_model(model)
    averaging.on_train_begin()
    for epoch, _ in enumerate(_epochs_of(model, 2, np.random.default_rng(2))):
        averaging.on_epoch_end(epoch)
    checkpoint = loop._Checkpoint(tmp_path, model, {"run": 1})

    def inodes():
        return {epoch: (tmp_path / "latest" / f"0_kept_epoch_{epoch}.weights.h5").stat().st_ino
                for epoch in (1, 2)}

    checkpoint.save(2, 0, [averaging], keras.callbacks.History())
    written = inodes()
    checkpoint.save(2, 5, [averaging], keras.callbacks.History())  # inside the third epoch
    assert inodes() == written
    restored = training_callbacks.AverageLastEpochs(2)
    restored.set_model(model)
    restored.on_train_begin()
    assert checkpoint.restore([restored], keras.callbacks.History()) == (2, 5)
    assert restored.kept_epochs == [1, 2]
    for ours, theirs in zip(restored.average(), averaging.average(), strict=True):
        np.testing.assert_array_equal(ours, theirs)


# -- what ships -----------------------------------------------------------------------------


class _EpochEnds(keras.callbacks.Callback):
    """The test's own record of the weights at every epoch's end (after the standard
    callbacks: the averaged weights of EMA, as validated)."""

    def __init__(self):
        super().__init__()
        self.weights = []

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append(self.model.get_weights())


def _train(tmp_path, text_file, monkeypatch, average_validates, **changes):
    """Train the tiny model with ``average_last``; the validation loss of the weights in
    the model is ``average_validates`` when they are the mean of the last epochs'
    (``_EpochEnds``), 1.0 otherwise. Returns the preset, its metadata, the epochs' end
    weights."""
    recipe = recipes.from_dict(dict(TINY_LM, **changes))
    epoch_ends = _EpochEnds()
    real_fit = loop.fit

    def fit(model, train_data, epochs, validation_data, callbacks, *args, **kwargs):
        return real_fit(model, train_data, epochs, validation_data,
                        [*callbacks, epoch_ends], *args, **kwargs)

    def validation_figures(task, trained, validation_data):
        last = epoch_ends.weights[-recipe.average_last:]
        mean = [np.mean(values, axis=0) for values in zip(*last)]
        is_mean = all(np.allclose(a, b, atol=1e-6) for a, b in zip(trained.get_weights(), mean))
        return {"val_loss": average_validates if is_mean else 1.0}

    monkeypatch.setattr(loop, "fit", fit)
    monkeypatch.setattr(driver, "_validation_figures", validation_figures)
    out = driver.train(recipe, out_dir=tmp_path / "tiny", data_file=text_file,
                       log_dir=tmp_path / "runs", printer=lambda *_: None)
    return out, zoo.describe(out), epoch_ends.weights


def _shipped_weights(out):
    return zoo.load(out).get_weights()


def test_the_average_of_the_last_epochs_ships_when_it_validates_better(tmp_path, text_file,
                                                                         monkeypatch):
    out, metadata, epoch_ends = _train(tmp_path, text_file, monkeypatch, 0.5, average_last=2)
    assert len(epoch_ends) == 3
    for shipped, *last in zip(_shipped_weights(out), *epoch_ends[-2:], strict=True):
        np.testing.assert_allclose(shipped, np.mean(last, axis=0), atol=1e-6)
    assert metadata["training"]["checkpoint_averaging"] == {
        "average_last": 2, "epochs_averaged": [2, 3],
        "val_loss": {"final": 1.0, "average": 0.5}, "chosen_by": "val_loss",
        "shipped": "average"}
    assert ("- checkpoint averaging: the mean of the weights of epochs 2, 3 (average_last 2) "
            "against the final weights: val_loss 0.5 averaged, 1.0 final; the average ships "
            "(chosen on val_loss)\n") in (out / "README.md").read_text()


def test_the_final_weights_ship_when_they_validate_better(tmp_path, text_file, monkeypatch):
    out, metadata, epoch_ends = _train(tmp_path, text_file, monkeypatch, 2.0, average_last=5)
    final = epoch_ends[metadata["training"]["best_epoch"] - 1]  # early stopping's best
    for shipped, expected in zip(_shipped_weights(out), final, strict=True):
        np.testing.assert_array_equal(shipped, expected)
    averaging = metadata["training"]["checkpoint_averaging"]
    assert averaging["epochs_averaged"] == [1, 2, 3]  # fewer epochs ran than asked
    assert averaging["val_loss"] == {"final": 1.0, "average": 2.0}
    assert averaging["shipped"] == "final"
    assert ("(average_last 5; only 3 epochs ran) against the final weights: val_loss 2.0 "
            "averaged, 1.0 final; the final weights ship") in (out / "README.md").read_text()


def test_the_choice_is_on_what_training_validates(tmp_path, text_file, monkeypatch):
    """Unpatched: the figures recorded are those the loop's validation gives."""
    recipe = recipes.from_dict(dict(TINY_LM, average_last=3, epochs=2))
    out = driver.train(recipe, out_dir=tmp_path / "tiny", data_file=text_file,
                       log_dir=tmp_path / "runs", printer=lambda *_: None)
    training = zoo.describe(out)["training"]
    averaging = training["checkpoint_averaging"]
    # The final weights are early stopping's best: validated as during training.
    assert averaging["val_loss"]["final"] == training["best_val_loss"]
    shipped = averaging["shipped"]
    assert averaging["val_loss"][shipped] == min(averaging["val_loss"].values())


# -- resuming -------------------------------------------------------------------------------


class _Killed(Exception):
    pass


class _KillAtEpoch(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 2:
            raise _Killed


def test_a_resumed_run_keeps_the_epochs_an_uninterrupted_run_keeps(tmp_path, text_file):
    from zoo.training import language_model

    recipe = recipes.from_dict(dict(TINY_LM, average_last=2))
    text = text_file.read_text()

    def run(extra=(), checkpoints=None):
        keras.utils.set_random_seed(0)
        model = language_model.build_model(sorted(set(text)), recipe.model_config)
        task = language_model.LanguageModelTask(recipe)
        task.compile(model, 0, recipe.epochs)
        train, validation = task.datasets(model, {"train": text[:1800],
                                                  "validation": text[1800:]}, 0)
        fit_callbacks = training_callbacks.standard_callbacks(recipe, tmp_path / "runs")
        loop.fit(model, train, recipe.epochs, validation, fit_callbacks + list(extra),
                 {"run": 1}, loop.Options(checkpoint_dir=checkpoints))
        return next(c for c in fit_callbacks if isinstance(c, training_callbacks.AverageLastEpochs))

    expected = run()
    checkpoints = tmp_path / "checkpoints"
    with pytest.raises(_Killed):
        run([_KillAtEpoch()], checkpoints)
    state = json.loads((checkpoints / "latest" / loop.STATE_FILE).read_text())
    assert {"kept_epochs": [1, 2]} in state["callbacks"]
    resumed = run(checkpoints=checkpoints)
    assert resumed.kept_epochs == expected.kept_epochs == [2, 3]
    for ours, theirs in zip(resumed.average(), expected.average(), strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


# -- the recipe key, the flag and the card --------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("3", "'average_last' must be an integer or null; received '3' (str)."),
    (2.5, "'average_last' must be an integer or null; received 2.5 (float)."),
    (True, "'average_last' must be an integer or null; received True (bool)."),
    (0, "'average_last' must be a positive integer (how many of the last epochs' weights "
        "are averaged); received 0."),
    (-2, "'average_last' must be a positive integer (how many of the last epochs' weights "
         "are averaged); received -2."),
])
def test_a_bad_average_last_is_named(value, expected):
    with pytest.raises(recipes.RecipeError) as error:
        recipes.from_dict(dict(TINY_LM, average_last=value))
    assert str(error.value) == f"recipe 'tiny_lm': {expected}"


def test_the_flag_reaches_the_recipe(tmp_path, monkeypatch, capsys):
    path = tmp_path / "tiny_lm.json"
    path.write_text(json.dumps({k: v for k, v in TINY_LM.items() if k != "name"}))
    trained = []
    monkeypatch.setattr(zoo.training, "train", lambda recipe, **_: trained.append(recipe) or "x")
    assert main(["train", str(path), "--average-last", "4", "--out", str(tmp_path / "o")]) == 0
    assert trained[0].average_last == 4 and trained[0].written["average_last"] == 4
    assert main(["train", str(path), "--average-last", "0"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: --average-last must be a positive integer (how many of the last epochs' "
        "weights are averaged); received 0.\n")
    assert len(trained) == 1
