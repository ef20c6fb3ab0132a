"""The training loop: tf.distribute strategies, resuming after SIGKILL, epoch data."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest

from zoo.training import callbacks as training_callbacks
from zoo.training import language_model, loop, recipes
from zoo.training.optimizer import adam
from zoo.cli import main

from testcase import preset_weights

TESTS = Path(__file__).resolve().parents[1]  # tests/, where the helper script lives
WORDS = ("the king and queen of a fair land where we lay our scene from ancient grudge "
         "break to new mutiny").split()


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    """About 24,000 characters of made-up verse (ROMEO speaks: the shipped sample's
    prompt): 87 batches of 8 windows of 32."""
    rng = random.Random(0)
    lines = []
    while sum(map(len, lines)) < 24000:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))).capitalize() + "."
        lines += ["ROMEO:", line] if len(lines) % 5 == 0 else [line]
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _clean_env():
    return {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"}


def _distributed_run(strategy, text_file, out, tf_config=None):
    env = _clean_env()
    if tf_config:
        env["TF_CONFIG"] = json.dumps(tf_config)
    return subprocess.Popen(
        [sys.executable, str(TESTS / "distributed_training_run.py"), strategy, str(text_file),
         str(out)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(process, timeout=300):
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-3000:]
    return output


def _weights(npz):
    return [npz[k] for k in sorted(npz.files, key=lambda k: (len(k), k)) if k.startswith("w")]


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.fixture(scope="module")
def single_device(text_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("single") / "default.npz"
    _finish(_distributed_run("default", text_file, out))
    return np.load(out)


# Same global batch of 8, split 4 + 4 across the replicas: the same gradient up to
# float32 summation order. After 174 Adam steps the weights (largest about 2.6)
# differ from single-device training by about 1e-5.
DISTRIBUTED_TOLERANCE = 1e-4


@pytest.mark.slow
def test_mirrored_on_two_cpu_devices_equals_single_device(single_device, text_file, tmp_path):
    out = tmp_path / "mirrored.npz"
    _finish(_distributed_run("mirrored", text_file, out))
    mirrored = np.load(out)
    assert int(mirrored["replicas"]) == 2
    assert float(mirrored["spread"]) == 0.0  # the two replicas hold identical weights
    assert mirrored["loss"][1] < mirrored["loss"][0] and mirrored["val_loss"][1] < mirrored["val_loss"][0]
    np.testing.assert_allclose(mirrored["loss"], single_device["loss"], rtol=1e-4)
    for ours, reference in zip(_weights(mirrored), _weights(single_device)):
        np.testing.assert_allclose(ours, reference, atol=DISTRIBUTED_TOLERANCE)


@pytest.mark.slow
def test_multi_worker_on_two_processes_equals_single_device(single_device, text_file, tmp_path):
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = [
        _distributed_run("multi_worker", text_file, tmp_path / f"worker{index}.npz",
                         {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
        for index in range(2)
    ]
    for process in processes:
        _finish(process)
    first, second = (np.load(tmp_path / f"worker{index}.npz") for index in range(2))
    assert int(first["replicas"]) == 2
    assert first["loss"][1] < first["loss"][0]
    for a, b, reference in zip(_weights(first), _weights(second), _weights(single_device)):
        np.testing.assert_array_equal(a, b)  # the workers end with identical weights
        np.testing.assert_allclose(a, reference, atol=DISTRIBUTED_TOLERANCE)


@pytest.mark.slow
def test_zoo_train_multi_worker_writes_the_same_preset_on_every_worker(text_file, tmp_path):
    recipe = tmp_path / "tiny_lm.json"
    recipe.write_text(json.dumps(dict(RECIPE, epochs=1)))
    workers = [f"127.0.0.1:{port}" for port in _free_ports(2)]
    processes = []
    for index in range(2):
        env = _clean_env()
        env["TF_CONFIG"] = json.dumps({"cluster": {"worker": workers},
                                       "task": {"type": "worker", "index": index}})
        command = _train_command(recipe, text_file, tmp_path / f"worker{index}",
                                 tmp_path / f"checkpoints{index}") + ["--strategy", "multi_worker"]
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    for process in processes:
        _finish(process)
    first, second = (preset_weights(tmp_path / f"worker{index}") for index in range(2))
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])


def test_multi_worker_without_tf_config_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="needs the TF_CONFIG environment variable"):
        loop.make_strategy("multi_worker")


def test_cli_strategies_are_the_loops():
    from zoo.cli import build_parser

    train = build_parser()._subparsers._group_actions[0].choices["train"]
    strategy = next(a for a in train._actions if a.dest == "strategy")
    assert tuple(strategy.choices) == loop.STRATEGIES


# -- resuming -------------------------------------------------------------------------------

RECIPE = {
    "task": "language_model", "model": "CharLanguageModel", "corpus": "tinyshakespeare",
    "model_config": {"cell": "lstm", "embedding_dim": 8, "units": 48, "num_layers": 1,
                     "dropout": 0.1},  # dropout: its random state must resume too
    "sequence_length": 32, "batch_size": 8, "learning_rate": 0.01, "epochs": 3,
    "patience": 3, "seed": 0,
}


def _train_command(recipe, text_file, out, checkpoints):
    return [sys.executable, "-m", "zoo", "train", str(recipe), "--data", str(text_file),
            "--out", str(out), "--checkpoint-dir", str(checkpoints), "--checkpoint-every", "5",
            "--log-dir", str(out.parent / "runs")]


def _state(checkpoints):
    try:
        return json.loads((checkpoints / "latest" / "state.json").read_text())
    except (OSError, ValueError):
        return None


@pytest.mark.slow
def test_sigkilled_training_resumes_and_matches_an_uninterrupted_run(text_file, tmp_path):
    recipe = tmp_path / "tiny_lm.json"
    recipe.write_text(json.dumps(RECIPE))
    uninterrupted = tmp_path / "uninterrupted"
    subprocess.run(_train_command(recipe, text_file, uninterrupted, tmp_path / "ck_a"),
                   env=_clean_env(), check=True, capture_output=True, timeout=300)
    assert not (tmp_path / "ck_a").exists()  # a finished run leaves no checkpoint

    resumed, checkpoints = tmp_path / "resumed", tmp_path / "ck_b"
    command = _train_command(recipe, text_file, resumed, checkpoints)
    process = subprocess.Popen(command, env=_clean_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline:  # kill it in the middle of its second epoch
        state = _state(checkpoints)
        if state and state["epoch"] == 1 and state["step"] >= 10:
            process.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    killed_at = _state(checkpoints)
    assert killed_at["epoch"] == 1 and 0 < killed_at["step"] < 87
    assert not resumed.exists()  # no half-written preset

    result = subprocess.run(command, env=_clean_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"epoch 2, step {killed_at['step']}" in result.stdout
    expected, actual = preset_weights(uninterrupted), preset_weights(resumed)
    assert expected.keys() == actual.keys()
    for name in expected:  # the same computation replayed: equal up to float32 rounding
        np.testing.assert_allclose(actual[name], expected[name], atol=1e-5, err_msg=name)
    metadata = [json.loads((p / "metadata.json").read_text()) for p in (uninterrupted, resumed)]
    assert metadata[0]["training"]["best_val_loss"] == metadata[1]["training"]["best_val_loss"]
    assert metadata[0]["test"] == metadata[1]["test"]


def test_checkpoint_of_another_run_is_refused(text_file, tmp_path, capsys):
    recipe = dict(RECIPE, epochs=1)
    path = tmp_path / "tiny_lm.json"
    path.write_text(json.dumps(recipe))
    checkpoints = tmp_path / "checkpoints"
    arguments = ["train", str(path), "--data", str(text_file), "--out", str(tmp_path / "a"),
                 "--checkpoint-dir", str(checkpoints), "--log-dir", str(tmp_path / "runs")]
    # A leftover checkpoint of the same recipe with another learning rate.
    characters = sorted(set(text_file.read_text()[: int(0.9 * len(text_file.read_text()))]))
    model = language_model.build_model(characters, recipe["model_config"])
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    model.optimizer.build(model.trainable_variables)
    other = dict(recipe, learning_rate=0.5, name="tiny_lm")
    loop._Checkpoint(checkpoints, model, {"recipe": other, "epochs": None,
                                                   "data": str(text_file)}).save(0, 5, [], keras.callbacks.History())
    assert main(arguments) == 2
    assert "holds the checkpoint of another run" in capsys.readouterr().err


def test_resuming_removes_the_staging_folders_of_killed_saves(text_file, tmp_path):
    characters = sorted(set(text_file.read_text()))
    model = language_model.build_model(characters, RECIPE["model_config"])
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    model.optimizer.build(model.trainable_variables)
    checkpoint = loop._Checkpoint(tmp_path, model, {"run": 1})
    checkpoint.save(0, 5, [], keras.callbacks.History())
    stale = tmp_path / ".saving-999999"  # a save killed before its rename
    stale.mkdir()
    (stale / loop.VARIABLES_FILE).write_bytes(b"half written")
    assert checkpoint.restore([], keras.callbacks.History()) == (0, 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest"]


def _tiny_lm(text, ema_momentum=None):
    keras.utils.set_random_seed(0)
    recipe = {"model_config": {"cell": "gru", "embedding_dim": 8, "units": 16, "dropout": 0.1}}
    model = language_model.build_model(sorted(set(text)), recipe["model_config"])
    model.compile(optimizer=adam(0.01, ema_momentum),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    train = language_model.windows(model.preprocessor.tokenize(text[:20000]), 32, 8, shuffle=True)
    validation = language_model.windows(model.preprocessor.tokenize(text[20000:]), 32, 8, shuffle=False)
    return model, train, validation


@pytest.mark.slow
@pytest.mark.parametrize("ema_momentum", [None, 0.9])
def test_the_loop_trains_as_keras_fit_does(text_file, ema_momentum):
    """Same model, data and callbacks: the same losses, per epoch, and the same weights.
    With weight averaging, both validate the averaged weights and end with them."""
    text = text_file.read_text()
    results = []
    for use_keras_fit in (True, False):
        model, train, validation = _tiny_lm(text, ema_momentum)
        callbacks = [keras.callbacks.ReduceLROnPlateau(monitor="val_loss", patience=0)]
        if ema_momentum:
            callbacks.insert(0, keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
        if use_keras_fit:
            history = model.fit(train.dataset().repeat(), steps_per_epoch=len(train), epochs=3,
                                validation_data=validation.dataset(), callbacks=callbacks,
                                verbose=0).history
        else:
            history = loop.fit(model, train, 3, validation.dataset(), callbacks)
        results.append((history, model.get_weights()))
    (expected, expected_weights), (history, weights) = results
    for key in ("loss", "val_loss", "learning_rate"):
        np.testing.assert_allclose(history[key], expected[key], rtol=1e-5, err_msg=key)
    for ours, theirs in zip(weights, expected_weights):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


class _Killed(Exception):
    pass


class _KillAtEpoch(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise _Killed


@pytest.mark.slow
def test_averaged_weights_resume_from_an_epoch_end_checkpoint(text_file, tmp_path):
    """At an epoch's end the averaged weights are in the model (swapped for validation
    and early stopping): a run resumed from there trains on as an uninterrupted one."""
    text = text_file.read_text()
    recipe = recipes.from_dict({"name": "tiny", "task": "language_model", "corpus": "text",
                                "model": "CharLanguageModel", "ema_momentum": 0.9, "patience": 5})

    def run(extra_callbacks=(), checkpoints=None):
        model, train, validation = _tiny_lm(text, recipe.ema_momentum)
        callbacks = training_callbacks.standard_callbacks(recipe, tmp_path / "runs",
                                                          reduce_on_plateau=False)
        history = loop.fit(
            model, train, 3, validation.dataset(), callbacks + list(extra_callbacks),
            {"run": 1}, loop.Options(checkpoint_dir=checkpoints))
        return history, model.get_weights()

    expected_history, expected = run()
    with pytest.raises(_Killed):
        run([_KillAtEpoch(1)], tmp_path / "checkpoints")
    assert _state(tmp_path / "checkpoints")["callbacks"][0] == {"_ema_weights_in_model": True}
    history, weights = run(checkpoints=tmp_path / "checkpoints")
    np.testing.assert_allclose(history["val_loss"], expected_history["val_loss"], rtol=1e-5)
    for ours, theirs in zip(weights, expected):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_epoch_data_is_a_function_of_the_epoch():
    data = language_model.windows(np.arange(2000) % 50, 16, 4, shuffle=True, seed=3)
    first = [x.numpy() for x, _ in data.dataset(2)]
    again = [x.numpy() for x, _ in data.dataset(2)]
    other = [x.numpy() for x, _ in data.dataset(3)]
    assert len(first) == len(data)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    # Repeated, a dataset moves on to the next passes (what `fit(dataset.repeat())` sees).
    repeated = [x.numpy() for x, _ in data.dataset(2).repeat(2)]
    assert all(np.array_equal(a, b) for a, b in zip(repeated[len(first):], other))


def test_epoch_data_runs_without_tf_data_autotuning():
    """Its autotuning thread held up the deletion of an epoch's iterator (up to 25 s idle
    after a fine-tune's last step, EpochData.dataset); the pipeline has nothing to tune."""
    data = language_model.windows(np.arange(2000) % 50, 16, 4, shuffle=True, seed=3)
    dataset = data.dataset(0)
    assert dataset.options().autotune.enabled is False
    assert len([x for x, _ in dataset]) == len(data)


def test_a_checkpoint_restores_into_a_model_built_again_and_refuses_another_shape(tmp_path):
    """Keras' own saving keys the variables by their place in the model, not by their
    names (which a second model built in one process changes): a new build of the same
    architecture resumes; another architecture is refused."""
    characters = list("abcdef")

    def compiled(units):
        model = language_model.build_model(characters, {"cell": "lstm", "embedding_dim": 4,
                                                        "units": units, "dropout": 0.1})
        model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
        model.optimizer.build(model.trainable_variables)
        return model

    first = compiled(8)
    for variable in first.trainable_variables:
        variable.assign(np.random.default_rng(0).normal(size=variable.shape))
    loop._Checkpoint(tmp_path, first, {"run": 1}).save(0, 3, [], keras.callbacks.History())
    again = compiled(8)
    assert [v.path for v in again.weights] != [v.path for v in first.weights]
    assert loop._Checkpoint(tmp_path, again, {"run": 1}).restore(
        [], keras.callbacks.History()) == (0, 3)
    for ours, theirs in zip(again.variables + again.optimizer.variables,
                            first.variables + first.optimizer.variables, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(ours),
                                      keras.ops.convert_to_numpy(theirs))
    with pytest.raises(loop.CheckpointMismatch, match="does not match this model's variables"):
        loop._Checkpoint(tmp_path, compiled(6), {"run": 1}).restore([], keras.callbacks.History())


@pytest.mark.parametrize("backend_loop", ["tensorflow", "keras"])
def test_a_deadline_ends_the_epoch_after_the_step_in_flight_and_validates_it(backend_loop,
                                                                           monkeypatch):
    """The TensorFlow loop and Keras' fit (JAX, PyTorch) stop alike: the epoch ends after
    the step that reached the deadline, is validated, and the callback says where."""
    if backend_loop == "keras":
        monkeypatch.setattr(loop.backend, "is_tensorflow", lambda: False)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,), dtype="int32"), keras.layers.Embedding(10, 2),
                              keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss=keras.losses.MeanSquaredError())
    x = np.random.default_rng(0).integers(0, 10, size=(40, 4)).astype("int32")
    data = loop.EpochData(lambda _: ((x[i:i + 4], x[i:i + 4, :1]) for i in range(0, 40, 4)),
                          10, (loop.Ids(width=4), loop.Ids(width=1)))
    steps = []

    class Count(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            steps.append(batch)
            if batch == 2:  # the deadline passes during the third step
                stop.deadline = time.time()

    stop = training_callbacks.StopAtDeadline(time.time() + 3600)
    history = loop.fit(model, data, 5, data, [Count(), stop])
    assert steps == [0, 1, 2] and stop.stopped_at == {"epoch": 1, "steps": 3}
    assert len(history["val_loss"]) == 1
