"""Long-range memory: the adding problem and a delayed-copy task.

Claim tested (Hochreiter & Schmidhuber 1997; Le, Jaitly & Hinton 2015): a vanilla
RNN stops remembering after some number of steps, LSTM and GRU remember much
further. Three cells with the same parameter budget learn

- the adding problem at T = 10, 25, 50, 100, 200 (target: the sum of two marked
  numbers; always answering 1.0 scores MSE 1/6 ~ 0.167), and
- a delayed copy (output the symbol read ``lag`` steps ago, 8 symbols, chance
  12.5%) at growing lags: the largest lag still recalled measures "effective memory".

Every batch is freshly drawn (no overfitting possible); test sets are drawn once
from a separate generator. Run: ``zoo experiment memory --out docs/experiments``.
"""

import keras
import numpy as np
from keras import ops

from zoo import experiments, plots
from zoo.data import synthetic

CELLS = ("rnn", "lstm", "gru")
BUDGET = experiments.WEIGHT_BUDGET
SYMBOLS = 8


def run(out_dir, quick=False, printer=print):
    lengths = (10, 25) if quick else (10, 25, 50, 100, 200)
    lags = (2, 5) if quick else (2, 5, 10, 15, 20, 30, 45, 60)
    steps = 40 if quick else 1500
    adding = {cell: {} for cell in CELLS}
    for length in lengths:
        for cell in CELLS:
            adding[cell][length] = train_adding(cell, length, steps, quick)
            printer(f"adding T={length} {cell}: test MSE {adding[cell][length]['test_mse']}")
    copy = {cell: {} for cell in ("rnn", "lstm")}
    for lag in lags:
        for cell in copy:
            copy[cell][lag] = train_delayed_copy(cell, lag, steps, quick)
            printer(f"delayed copy lag={lag} {cell}: accuracy {copy[cell][lag]['accuracy']}%")
    figures = [plot_adding(adding, out_dir / "memory_adding.png"),
               plot_copy(copy, out_dir / "memory_delayed_copy.png")]
    return {
        "budget": {cell: {"units": experiments.units_for_budget(cell, BUDGET, 2),
                          "recurrent_weights": experiments.parameter_count(
                              cell, experiments.units_for_budget(cell, BUDGET, 2), 2)}
                   for cell in CELLS},
        "adding_problem": {"baseline_mse": round(synthetic.ADDING_BASELINE_MSE, 4),
                           "steps": steps, "batch_size": 64, "results": adding},
        "delayed_copy": {"symbols": SYMBOLS, "chance_accuracy": round(100 / SYMBOLS, 2),
                         "steps": steps, "results": copy,
                         "effective_memory": {cell: effective_memory(copy[cell]) for cell in copy}},
        "figures": [p.name for p in figures],
    }


def train_adding(cell, length, steps, quick):
    keras.utils.set_random_seed(length)
    model = experiments.adding_model(cell)
    units = model.layers[1].cell.units
    train_rng, test_rng = np.random.default_rng(1), np.random.default_rng(2)
    test_inputs, test_targets = synthetic.adding_problem(256 if quick else 2000, length, test_rng)
    curve = []
    for step in range(1, steps + 1):
        model.train_on_batch(*synthetic.adding_problem(64, length, train_rng))
        if step % max(1, steps // 15) == 0 or step == steps:
            mse = float(model.evaluate(test_inputs, test_targets, batch_size=500, verbose=0))
            curve.append([step, round(mse, 5)])
    return {"units": units, "test_mse": curve[-1][1], "curve": curve}


def train_delayed_copy(cell, lag, steps, quick):
    keras.utils.set_random_seed(lag)
    units = experiments.units_for_budget(cell, BUDGET, SYMBOLS)
    length = lag + 30
    tokens = keras.Input((None,), dtype="int32")
    states = experiments.recurrent_layer(cell, units, return_sequences=True)(
        ops.one_hot(tokens, SYMBOLS))
    model = keras.Model(tokens, keras.layers.Dense(SYMBOLS)(states))
    model.compile(optimizer=keras.optimizers.Adam(1e-3, clipnorm=1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    train_rng, test_rng = np.random.default_rng(1), np.random.default_rng(2)
    for _ in range(steps):
        batch, targets, weights = synthetic.delayed_copy(64, length, lag, SYMBOLS, train_rng)
        model.train_on_batch(batch, targets, sample_weight=weights)
    batch, targets, weights = synthetic.delayed_copy(256 if quick else 1000, length, lag,
                                                     SYMBOLS, test_rng)
    predicted = model.predict(batch, batch_size=500, verbose=0).argmax(-1)
    accuracy = float(((predicted == targets) * weights).sum() / weights.sum())
    return {"units": units, "accuracy": round(100 * accuracy, 2)}


def effective_memory(results, threshold=90.0):
    """The largest lag recalled with at least ``threshold`` % accuracy (0: none)."""
    recalled = [lag for lag, result in results.items() if result["accuracy"] >= threshold]
    return max(recalled, default=0)


def plot_adding(adding, path):
    return plot_by_cell(adding, "test_mse", path, baseline=synthetic.ADDING_BASELINE_MSE,
                        baseline_label="predict 1.0 (MSE 0.167)", xscale="log", yscale="log",
                        xlabel="sequence length T", ylabel="test MSE",
                        title="Adding problem, same parameter budget")


def plot_copy(copy, path):
    return plot_by_cell(copy, "accuracy", path, baseline=100 / SYMBOLS, baseline_label="chance",
                        xlabel="lag (steps)", ylabel="recall accuracy %", ylim=(0, 102),
                        title="Delayed copy: recall the symbol read `lag` steps ago")


def plot_by_cell(results, key, path, baseline, baseline_label, **axes_settings):
    """One line per cell: ``results[cell][x][key]`` against x, and the baseline."""
    figure, axes = plots.figure(6.0, 4.0)
    for cell, by_x in results.items():
        xs = sorted(by_x)
        axes.plot(xs, [by_x[x][key] for x in xs], marker="o", label=experiments.CELL_NAMES[cell])
    axes.axhline(baseline, color="grey", linestyle="--", label=baseline_label)
    axes.set(**axes_settings)
    return plots.save(figure, axes, path)
