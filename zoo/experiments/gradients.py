"""Vanishing and exploding gradients: how much of the loss's gradient reaches step t.

Claim tested (Bengio, Simard & Frasconi 1994; Hochreiter 1991; Pascanu, Mikolov &
Bengio 2013): in a vanilla RNN the gradient of the loss with respect to an early
hidden state, ``dL/dh_t``, shrinks (or grows) geometrically with the distance
``T - t``, at a rate set by the recurrent weights; the LSTM's additive cell state and
the GRU's update gate let it pass with far less decay.

Measured on the adding problem (T = 100, loss at the last step only), with the same
parameter budget as the memory experiment:

1. ``||dL/dh_t||`` (mean over a batch of 256) for t = T .. 1, for the three cells at
   initialisation and after 600 training steps, and for the LSTM also ``||dL/dc_t||``
   of its cell state, the path the constant error carousel keeps open;
2. the vanilla RNN at initialisation with its recurrent matrix an orthogonal matrix
   scaled to spectral radius 0.5, 0.9, 1.0, 1.1 and 1.5.

``dL/dh_t`` is the total derivative: the cell is stepped in Python under a gradient
tape, so the loss reaches ``h_t`` only through steps t+1 .. T.
Run: ``zoo experiment gradients --out docs/experiments``.
"""

import keras
import numpy as np
import tensorflow as tf

from zoo import experiments, plots
from zoo.data import synthetic

CELLS = ("rnn", "lstm", "gru")
LENGTH = 100
RADII = (0.5, 0.9, 1.0, 1.1, 1.5)


def run(out_dir, quick=False, printer=print):
    length = 20 if quick else LENGTH
    steps = 20 if quick else 600
    inputs, targets = synthetic.adding_problem(256, length, np.random.default_rng(2))
    by_cell = {}
    for cell in CELLS:
        model = adding_model(cell)
        before = hidden_state_gradient_norms(model, inputs, targets)
        train(model, length, steps)
        after = hidden_state_gradient_norms(model, inputs, targets)
        by_cell[cell] = {"initialisation": summary(before["h"]), "trained": summary(after["h"]),
                         "norms_initialisation": rounded(before["h"]),
                         "norms_trained": rounded(after["h"])}
        if "c" in before:  # the LSTM's cell state: the path its gates keep open
            by_cell[cell]["cell_state"] = {
                "initialisation": summary(before["c"]), "trained": summary(after["c"]),
                "norms_initialisation": rounded(before["c"]), "norms_trained": rounded(after["c"])}
        printer(f"{cell}: ||dL/dh_1|| / ||dL/dh_T|| = {by_cell[cell]['initialisation']['ratio']:.3g}"
                f" at initialisation, {by_cell[cell]['trained']['ratio']:.3g} trained")
    by_radius = {}
    for radius in RADII:
        model = adding_model("rnn")
        set_spectral_radius(model, radius)
        norms = hidden_state_gradient_norms(model, inputs, targets)["h"]
        by_radius[str(radius)] = {**summary(norms), "norms": rounded(norms)}
        printer(f"rnn, spectral radius {radius}: ratio {by_radius[str(radius)]['ratio']:.3g}")
    figures = [plot_cells(by_cell, out_dir / "gradients_cells.png"),
               plot_radii(by_radius, out_dir / "gradients_spectral_radius.png")]
    return {"sequence_length": length, "training_steps": steps, "batch": 256,
            "cells": by_cell, "rnn_spectral_radius": by_radius,
            "figures": [p.name for p in figures]}


def adding_model(cell, seed=0):
    keras.utils.set_random_seed(seed)
    return experiments.adding_model(cell)


def train(model, length, steps):
    rng = np.random.default_rng(1)
    for _ in range(steps):
        model.train_on_batch(*synthetic.adding_problem(64, length, rng))


def hidden_state_gradient_norms(model, inputs, targets):
    """``{"h": [T], "c": [T] (LSTM only)}``: the batch mean of ``||dL/dh_t||`` (and of
    ``||dL/dc_t||``, the LSTM's cell state), t = 1 .. T."""
    layer, head = model.layers[1], model.layers[2]
    cell = layer.cell
    inputs = tf.constant(inputs)
    states = cell.get_initial_state(inputs.shape[0])
    watched = {"h": [], "c": []}
    with tf.GradientTape() as tape:
        for t in range(inputs.shape[1]):
            output, states = cell(inputs[:, t], states)
            tape.watch(states)
            watched["h"].append(states[0])
            if len(states) == 2:
                watched["c"].append(states[1])
        loss = tf.reduce_mean(tf.square(head(output) - targets))
    watched = {k: v for k, v in watched.items() if v}
    gradients = tape.gradient(loss, watched)
    return {k: np.array([float(tf.reduce_mean(tf.norm(g, axis=-1))) for g in v])
            for k, v in gradients.items()}


def set_spectral_radius(model, radius):
    """Make the recurrent matrix an orthogonal matrix times ``radius``."""
    cell = model.layers[1].cell
    units = cell.units
    orthogonal = np.linalg.qr(np.random.default_rng(0).normal(size=(units, units)))[0]
    cell.recurrent_kernel.assign((radius * orthogonal).astype("float32"))


def summary(norms):
    return {"last_step": float(norms[-1]), "first_step": float(norms[0]),
            "ratio": float(norms[0] / norms[-1])}


def rounded(norms):
    return [float(f"{n:.4g}") for n in norms]


def plot_cells(by_cell, path):
    figure, axes = plots.figure(6.5, 4.2)
    for index, (cell, result) in enumerate(by_cell.items()):
        color = f"C{index}"
        for key, style, when in (("norms_initialisation", "--", "initialisation"),
                                 ("norms_trained", "-", "trained")):
            norms = result[key]
            axes.plot(range(1, len(norms) + 1), norms, style, color=color,
                      label=f"{experiments.CELL_NAMES[cell]} h, {when}")
            if "cell_state" in result:
                cell_norms = result["cell_state"][key]
                axes.plot(range(1, len(cell_norms) + 1), cell_norms, style, color=color,
                          alpha=0.45, label=f"LSTM cell state c, {when}")
    axes.set(yscale="log", xlabel="time step t (loss at t = T)", ylabel="||dL/dh_t||",
             title="Gradient reaching each step (adding problem, T = %d)" % len(norms))
    return plots.save(figure, axes, path)


def plot_radii(by_radius, path):
    figure, axes = plots.figure(6.5, 4.2)
    for radius, result in by_radius.items():
        norms = result["norms"]
        axes.plot(range(1, len(norms) + 1), norms, label=f"spectral radius {radius}")
    axes.set(yscale="log", xlabel="time step t (loss at t = T)", ylabel="||dL/dh_t||",
             title="Vanilla RNN at initialisation: recurrent weight scale")
    return plots.save(figure, axes, path)
