"""Train the character language models with Keras 3 on the JAX backend (a GPU machine).

The GPU machine lent to this project has JAX and no TensorFlow, and TensorFlow is too
large to carry there, so ``zoo train`` cannot run on it. This script trains the same
network there: the zoo's own cells (``zoo/layers/cells.py`` is pure Keras) in
``keras.layers.RNN``, between the embedding and the output layer exactly as in
``zoo.models.CharLanguageModel``, with Keras ``fit``. Its weights have the preset's
layout; ``ship`` (run here, with TensorFlow) loads them into a ``CharLanguageModel``,
scores it with the zoo's own code and writes the preset.

Here, the training and validation text as ids (the test tail never travels):

    python training/charlm_on_jax.py ids --out ids.npz

On the GPU machine (with Keras and its wheels carried there; ``--dropout``,
``--recurrent-dropout``, ``--learning-rate`` and ``--ema-momentum`` train variants of the
recipe; the best on validation ships, and the recipe is then set to it):

    KERAS_BACKEND=jax python training/charlm_on_jax.py train lstm_charlm_shakespeare \
        --data ids.npz --out OUT --seconds 470

Here again:

    python training/charlm_on_jax.py ship lstm_charlm_shakespeare \
        OUT/lstm_charlm_shakespeare_dropout0.3_recurrent0.15_lr0.002_ema0.995.npz --note "..."
"""

import argparse
import importlib.util
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import keras
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CELL_CLASSES = {"rnn": "SimpleRNNCell", "lstm": "LSTMCell", "gru": "GRUCell"}
# train's options for variants of a recipe: option -> (model_config or recipe, key).
VARIANT_OPTIONS = {
    "dropout": ("model", "dropout"),
    "recurrent_dropout": ("model", "recurrent_dropout"),
    "learning_rate": ("recipe", "learning_rate"),
    "ema_momentum": ("recipe", "ema_momentum"),
}


def read_recipe(name):
    """A recipe of zoo/recipes by name, or a recipe file (``.json``)."""
    path = Path(name) if name.endswith(".json") else ROOT / "zoo" / "recipes" / f"{name}.json"
    return {**json.loads(path.read_text()), "name": path.stem}


# -- on the GPU machine: Keras on JAX, no TensorFlow ---------------------------------------------
def load_cells():
    # Importing the package would import TensorFlow (zoo/__init__.py); the cells need only Keras.
    spec = importlib.util.spec_from_file_location("zoo_cells", ROOT / "zoo" / "layers" / "cells.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_network(config, vocabulary_size):
    """CharLanguageModel's network as a functional model: same layers, order and weights."""
    cells = load_cells()
    cell_class = getattr(cells, CELL_CLASSES[config["cell"]])
    ids = keras.Input((None,), dtype="int32")
    features = keras.layers.Embedding(vocabulary_size, config["embedding_dim"], name="embedding")(ids)
    dropout = keras.layers.Dropout(config["dropout"])
    for i in range(config["num_layers"]):
        features = dropout(features) if i else features
        cell = cell_class(config["units"], recurrent_dropout=config.get("recurrent_dropout", 0.0))
        features = keras.layers.RNN(cell, return_sequences=True, name=f"{config['cell']}_{i}")(features)
    logits = keras.layers.Dense(vocabulary_size, name="head")(dropout(features))
    return keras.Model(ids, logits)


def window_batches(ids, sequence_length, batch_size, shuffle, seed):
    """A Keras PyDataset of (ids, next ids) windows, cut at a new random offset each epoch
    when shuffling (the scheme of zoo.training.language_model.windows)."""
    class Windows(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.count = (len(ids) - 1) // sequence_length - 1
            self.rng = np.random.default_rng(seed)
            self.on_epoch_end()

        def on_epoch_end(self):
            starts = sequence_length * np.arange(self.count)
            if shuffle:
                starts = int(self.rng.integers(sequence_length)) + starts[self.rng.permutation(self.count)]
            self.starts = starts

        def __len__(self):
            return self.count // batch_size if shuffle else math.ceil(self.count / batch_size)

        def __getitem__(self, index):
            chosen = self.starts[index * batch_size:(index + 1) * batch_size, None]
            rows = ids[chosen + np.arange(sequence_length + 1)]
            return rows[:, :-1], rows[:, 1:]

    return Windows()


def train(args):
    started = time.time()
    recipe = read_recipe(args.recipe)
    # Variants of the recipe; the one with the best validation loss ships.
    for option, (section, key) in VARIANT_OPTIONS.items():
        if getattr(args, option) is not None:
            (recipe["model_config"] if section == "model" else recipe)[key] = getattr(args, option)
    epochs, learning_rate = recipe.get("epochs", 30), recipe.get("learning_rate", 2e-3)
    ema_momentum = recipe.get("ema_momentum")
    config = recipe["model_config"]
    name = (f"{recipe['name']}_dropout{config['dropout']}"
            f"_recurrent{config.get('recurrent_dropout', 0.0)}_lr{learning_rate}_ema{ema_momentum}")
    data = np.load(args.data)
    characters = json.loads(str(data["characters"]))
    keras.utils.set_random_seed(recipe.get("seed", 0))
    model = build_network(recipe["model_config"], len(characters))
    length, batch_size = recipe.get("sequence_length", 128), recipe.get("batch_size", 64)
    train_data = window_batches(data["train"], length, batch_size, True, recipe.get("seed", 0))
    validation_data = window_batches(data["validation"], length, batch_size, False, 0)
    # As zoo.training.optimizer.adam: with ema_momentum, the moving average of the weights is what is
    # validated and kept (SwapEMAWeights puts it in the model around validation and at each
    # epoch's end, before BestWeights reads the weights).
    averaging = {"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}
    model.compile(optimizer=keras.optimizers.Adam(learning_rate, clipnorm=1.0, **averaging),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    print(f"{name}: {model.count_params():,} parameters, {len(train_data)} steps per epoch",
          flush=True)
    budget = TimeBudget(started, args.seconds, epochs, learning_rate)
    keeper = BestWeights(Path(args.out) / f"{name}.npz", recipe, characters, started)
    swap = [keras.callbacks.SwapEMAWeights(swap_on_epoch=True)] if ema_momentum else []
    model.fit(train_data, epochs=epochs, validation_data=validation_data, verbose=2,
              callbacks=[budget, *swap, keeper])
    print(f"{name}: best val_loss {keeper.best:.4f} at epoch {keeper.best_epoch}, "
          f"{time.time() - started:.0f} s", flush=True)


class TimeBudget(keras.callbacks.Callback):
    """Cosine learning-rate decay (to 5%) over the epochs that fit in the time budget.

    The number of epochs is planned after epoch 2 (epoch 1 includes compilation) from
    its duration, capped at the recipe's epochs; training stops when the plan is done,
    or in the middle of an epoch when the time is up (that epoch is still validated).
    """

    def __init__(self, started, seconds, max_epochs, learning_rate):
        super().__init__()
        self.started, self.seconds = started, seconds
        self.planned, self.learning_rate = max_epochs, learning_rate
        self.epoch_started = None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch_started = time.time()
        progress = min(1.0, epoch / max(1, self.planned - 1))
        rate = self.learning_rate * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))
        self.model.optimizer.learning_rate.assign(rate)

    def on_train_batch_end(self, batch, logs=None):
        if time.time() - self.started > self.seconds:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        if epoch == 1:
            seconds_per_epoch = time.time() - self.epoch_started
            remaining = self.seconds - (time.time() - self.started)
            self.planned = min(self.planned, 2 + int(remaining / seconds_per_epoch))
            print(f"planned epochs: {self.planned} ({seconds_per_epoch:.1f} s each)", flush=True)
        if epoch + 1 >= self.planned:
            self.model.stop_training = True


class BestWeights(keras.callbacks.Callback):
    """After every epoch, writes the weights of the best validation loss so far, with the
    whole history, to one .npz (so a run stopped at any time leaves its result)."""

    def __init__(self, path, recipe, characters, started):
        super().__init__()
        self.path, self.recipe, self.characters, self.started = path, recipe, characters, started
        self.best, self.best_epoch, self.history, self.weights = math.inf, 0, [], None

    def on_epoch_end(self, epoch, logs=None):
        self.history.append({key: float(value) for key, value in logs.items()}
                            | {"learning_rate": float(self.model.optimizer.learning_rate)})
        if logs["val_loss"] < self.best:
            self.best, self.best_epoch = float(logs["val_loss"]), epoch + 1
            # Stored as the preset stores them (its weights_dtype), which also halves the transfer.
            dtype = self.recipe.get("weights_dtype", "float32")
            self.weights = [np.asarray(w).astype(dtype) for w in self.model.get_weights()]
        record = {
            "recipe": self.recipe, "characters": self.characters,
            "history": self.history, "best_epoch": self.best_epoch,
            "best_val_loss": self.best, "wall_time_seconds": round(time.time() - self.started),
            "machine": machine_description(),
        }
        temporary = self.path.with_name(self.path.stem + ".partial.npz")
        np.savez(temporary, record=np.array(json.dumps(record)),
                 **{f"w{i:02d}": w for i, w in enumerate(self.weights)})
        os.replace(temporary, self.path)


def machine_description():
    backend = keras.backend.backend()
    if backend != "jax":
        return f"{platform.machine()}, {os.cpu_count()} CPU cores; Keras {keras.__version__} on {backend}"
    import jax

    devices = ", ".join(sorted({d.device_kind for d in jax.devices()}))
    return (f"{platform.machine()}, {os.cpu_count()} CPU cores, {devices}; "
            f"Keras {keras.__version__} on JAX {jax.__version__} (no TensorFlow)")


# -- here, with TensorFlow ------------------------------------------------------------------------
def _task(args):
    from zoo.training import recipes
    from zoo.training.language_model import LanguageModelTask

    return LanguageModelTask(recipes.from_dict(read_recipe(args.recipe)), data_dir=args.data_dir)


def write_ids(args):
    """The training and validation text as character ids, for the GPU machine."""
    splits = _task(args).read_splits()
    characters = sorted(set(splits["train"]))
    index = {c: i for i, c in enumerate(characters)}
    np.savez(args.out, characters=np.array(json.dumps(characters)),
             **{split: np.array([index[c] for c in splits[split]], np.int32)
                for split in ("train", "validation")})


def ship(args):
    """Load the trained weights into a CharLanguageModel, score it and write the preset."""
    from zoo import presets
    from zoo.training import shipping

    arrays = np.load(args.weights)
    record = json.loads(str(arrays["record"]))
    task = _task(args)
    recipe = task.recipe.written
    if record["recipe"] != recipe:
        sys.exit(f"{args.weights} was trained from another recipe than {recipe['name']} "
                 f"(model_config {record['recipe']['model_config']}).")
    splits = task.read_splits()
    preprocessor = task.build_preprocessor(splits)
    if record["characters"] != preprocessor.characters:
        sys.exit(f"{args.weights} was trained on other characters than {recipe['name']}'s corpus.")
    model = task.build_model(preprocessor)
    model.set_weights([arrays[f"w{i:02d}"] for i in range(len(model.get_weights()))])
    note = args.note or record.get("note")
    metadata = task.describe(model, splits, {
        "recipe": recipe,
        "command": f"python training/charlm_on_jax.py train {args.recipe} (GPU machine), then "
                   f"python training/charlm_on_jax.py ship {args.recipe} WEIGHTS (here)",
        "epochs_run": len(record["history"]), "best_epoch": record["best_epoch"],
        "wall_time_seconds": record["wall_time_seconds"], "machine": record["machine"],
        "best_val_loss": round(record["best_val_loss"], 4),
        "final_train_loss": round(record["history"][-1]["loss"], 4),
        **({"note": note} if note else {})})
    out_dir = Path(args.out or presets.presets_root() / recipe["name"])
    shipping.ship(model, out_dir, metadata, lambda shipped: task.score(shipped, splits), task.card)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("train", help="train on the GPU machine (Keras on JAX)")
    command.add_argument("recipe")
    command.add_argument("--data", required=True, help="the .npz written by `ids`")
    command.add_argument("--out", required=True, help="folder for RECIPE.npz")
    command.add_argument("--seconds", type=float, default=400, help="time budget, start to end")
    for option in VARIANT_OPTIONS:
        command.add_argument(f"--{option.replace('_', '-')}", type=float, help="instead of the recipe's")
    command = commands.add_parser("ids", help="write the training and validation ids (here)")
    command.add_argument("--recipe", default="lstm_charlm_shakespeare")
    command.add_argument("--data-dir")
    command.add_argument("--out", required=True)
    command = commands.add_parser("ship", help="score the trained weights and write the preset (here)")
    command.add_argument("recipe")
    command.add_argument("weights")
    command.add_argument("--note", help="how the run was chosen, for the metadata")
    command.add_argument("--data-dir")
    command.add_argument("--out")
    args = parser.parse_args(argv)
    {"train": train, "ids": write_ids, "ship": ship}[args.command](args)


if __name__ == "__main__":
    main()
