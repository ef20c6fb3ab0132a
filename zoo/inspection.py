"""What a recurrent model computes inside: every step's states and gate activations.

``recorded_steps`` runs a zoo cell over a sequence through ``cell.step_with_gates`` --
the step that ``call`` runs, whose equations (``zoo.layers.cells.lstm_gates`` and the
others) the TensorFlow fast kernels run too -- and records each step's states and
gates; ``trace`` turns that record into numpy arrays by name. The models' ``inspect``
methods trace their own layers with their own weights, in one function compiled per
model (``compiled``); the states recorded are those their forward pass computes
(tested).

A trace is a dict::

    {"name": "lstm_0", "cell": "lstm" | "gru" | "rnn",
     "states": {"h": [steps, units], "c": [steps, units] (LSTM)},
     "gates": {"i", "f", "c~", "o"} (LSTM) | {"z", "r", "n"} (GRU) | {} (vanilla RNN)}

every array float32 numpy; step k is token k, also for a layer that reads backwards.
"""

import numpy as np
from keras import ops
from keras.src import backend

from zoo import backend as zoo_backend
from zoo.text import codec


def checked_text(text):
    """``text`` if it is a string of at most ``codec.MAX_TEXT_LENGTH`` characters; the
    errors the models' other methods give otherwise."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string; received {type(text).__name__}: {text!r:.60}.")
    return codec.check_text_length(text)


def require_tokens(text, tokens):
    """Refuse a text that gives no step to show (empty, or blank for a translator)."""
    if not tokens:
        raise ValueError(f"Nothing to inspect: {text!r} has no tokens.")
    return tokens


def compiled(model, function):
    """``function`` (of numpy arrays) compiled once per model for this backend
    (``zoo.backend.model_function``): TensorFlow runs the step loop as one graph
    instead of op by op (a 2,000-character text: under a second, not minutes)."""
    return zoo_backend.model_function(model, ("inspect", function.__name__), function)


def recorded_steps(cell, sequence, initial_states=None, cell_inputs=None, go_backwards=False):
    """Every step of ``cell`` over ``sequence [1, steps, features]`` from
    ``initial_states`` (zeros when None): ``[1, steps, (states + gates) * units]``, the
    states in ``cell.state_names`` order (h first), then the gates of
    ``cell.gate_names``.

    ``cell_inputs(x_t, states)``: the cell's input at a step, when it is more than the
    sequence's ``x_t`` (an attention decoder adds the context it computes from the
    previous state). ``go_backwards``: run over the reversed sequence, as a backward
    layer does, and give the record back in the input's order.
    """
    if initial_states is None:  # the batch size as the sequence has it (None in a graph)
        initial_states = cell.get_initial_state(ops.shape(sequence)[0])
    states = list(initial_states)

    def step(x_t, states):
        inputs = x_t if cell_inputs is None else cell_inputs(x_t, states)
        new_states, gates = cell.step_with_gates(cell.project_inputs(inputs), states)
        # One output per step: backend.rnn stacks a single tensor on every backend.
        return ops.concatenate([*new_states, *(gates[g] for g in cell.gate_names)], -1), new_states

    _, outputs, _ = backend.rnn(step, sequence, states, go_backwards=go_backwards)
    return ops.flip(outputs, axis=1) if go_backwards else outputs


def layer_steps(layer, sequence, initial_states=None):
    """``recorded_steps`` of a ``zoo.layers`` sequence layer, read as it reads."""
    return recorded_steps(layer.cell, sequence, initial_states, go_backwards=layer.go_backwards)


def hidden_states(steps, units):
    """The ``h`` of a record of ``recorded_steps``: ``[1, steps, units]``."""
    return steps[..., :units]


def trace(cell, steps, name):
    """The trace (see the module's docstring) of a record of ``recorded_steps``."""
    names = (*cell.state_names, *cell.gate_names)
    per_step = np.asarray(steps, np.float32)[0]
    arrays = dict(zip(names, np.split(per_step, len(names), axis=-1)))
    return {
        "name": name,
        "cell": cell.kind,
        "states": {s: arrays[s] for s in cell.state_names},
        "gates": {g: arrays[g] for g in cell.gate_names},
    }


def traces_by_layer(result):
    """``{layer name: (trace, tokens)}`` of a model's ``inspect`` result, in its layers'
    order: each trace with the tokens along its steps (a translator's encoder reads the
    source pieces, its decoder the pieces fed back to it)."""
    traces = {t["name"]: (t, result["tokens"]) for t in result.get("layers", [])}
    traces.update({t["name"]: (t, result["source_tokens"]) for t in result.get("encoder", [])})
    traces.update({t["name"]: (t, result["target_tokens"]) for t in result.get("decoder", [])})
    return traces
