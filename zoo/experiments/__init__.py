"""The experiments that ship with zoo, one module each (``zoo experiment NAME``), and
running them.

An experiment is a module ``zoo/experiments/NAME.py`` with a function
``run(out_dir, quick=False) -> dict``: it writes its figures (PNG) and returns its
numbers, which are saved next to them as ``NAME.json``. ``quick`` runs a smaller
version of the same code, for the tests.

The helpers below are shared by the experiments: recurrent layers of a given kind sized
to one parameter budget, so that comparisons between cells mean something.
"""

import importlib
import json
import time
from pathlib import Path

import keras

import zoo.layers
from zoo.training import shipping

EXPERIMENTS_DIR = Path(__file__).resolve().parent
CELLS = {"rnn": zoo.layers.SimpleRNN, "lstm": zoo.layers.LSTM, "gru": zoo.layers.GRU}
CELL_NAMES = {"rnn": "vanilla RNN", "lstm": "LSTM", "gru": "GRU"}


def names():
    """The experiments that ship with zoo."""
    return sorted(p.stem for p in EXPERIMENTS_DIR.glob("*.py") if not p.stem.startswith("_"))


def run(name, out_dir, quick=False, printer=print):
    """Run one experiment; returns its results (also written to ``out_dir/NAME.json``)."""
    if name not in names():
        raise ValueError(f"Unknown experiment {name!r}; known: {', '.join(names())}.")
    module = importlib.import_module(f"zoo.experiments.{name}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    results = module.run(out_dir, quick=quick, printer=printer)
    results = {
        "experiment": name,
        "command": f"zoo experiment {name} --out {out_dir}" + (" --quick" if quick else ""),
        "quick": quick,
        "wall_time_seconds": round(time.time() - started),
        "machine": shipping.machine(),
        **results,
    }
    (out_dir / f"{name}.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def parameter_count(cell, units, input_size):
    """Weights of one recurrent layer of ``units`` reading ``input_size`` features."""
    gates = {"rnn": 1, "lstm": 4, "gru": 3}[cell]
    biases = 2 if cell == "gru" else 1  # Keras' GRU (reset_after) has two bias vectors
    return gates * units * (units + input_size + biases)


def units_for_budget(cell, budget, input_size):
    """The most units whose layer stays within ``budget`` weights."""
    units = 1
    while parameter_count(cell, units + 1, input_size) <= budget:
        units += 1
    return units


def recurrent_layer(cell, units, **options):
    """A ``zoo.layers`` recurrent layer: ``cell`` is ``"rnn"``, ``"lstm"`` or ``"gru"``."""
    if cell not in CELLS:
        raise ValueError(f"Unknown cell {cell!r}; known: {', '.join(CELLS)}.")
    return CELLS[cell](units, **options)


# Recurrent weights per model in the memory and gradient experiments: LSTM 32 units,
# GRU 37, vanilla RNN 66 on the adding problem's two inputs.
WEIGHT_BUDGET = 4600


def adding_model(cell, budget=WEIGHT_BUDGET):
    """The adding-problem regressor: one recurrent layer of ``budget`` weights and a
    linear output, compiled with Adam (1e-3, gradients clipped at norm 1) on MSE."""
    units = units_for_budget(cell, budget, 2)
    inputs = keras.Input((None, 2))
    outputs = keras.layers.Dense(1)(recurrent_layer(cell, units)(inputs))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(1e-3, clipnorm=1.0), loss="mse")
    return model
