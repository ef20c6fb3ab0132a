"""zoo.layers.cells: SimpleRNNCell, LSTMCell and GRUCell against Keras' cells.

(The sequence layers built on them: tests/layers/test_recurrent.py.)
"""

import keras
import numpy as np
import pytest

import zoo.layers

from testcase import outputs_and_gradients

# The first four cases of tests/layers/test_recurrent.py, with the same ids.
CASES = [
    ("SimpleRNN", {}),
    ("LSTM", {}),
    ("GRU", {"reset_after": True}),
    ("GRU", {"reset_after": False}),
]


def _case_id(case):
    name, kwargs = case
    return name + "".join(f"-{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_cell_matches_keras_cell_one_step(case, rng):
    name, kwargs = case
    ours = getattr(zoo.layers, name + "Cell")(4, **kwargs)
    theirs = getattr(keras.layers, name + "Cell")(4, **kwargs)
    x = rng.normal(size=(2, 5)).astype("float32")
    states = [rng.normal(size=(2, 4)).astype("float32")] * (2 if name == "LSTM" else 1)
    ours(x, states)
    theirs(x, states)
    assert [w.shape for w in ours.weights] == [w.shape for w in theirs.weights]
    assert [w.path.split("/")[-1] for w in ours.weights] == [
        w.path.split("/")[-1] for w in theirs.weights
    ]
    theirs.set_weights(ours.get_weights())

    def run(cell):
        def step(x, *states):
            h, new_states = cell(x, list(states))
            loss = keras.ops.sum(keras.ops.multiply(h, np.arange(4, dtype="float32"))) + keras.ops.sum(
                new_states[-1])
            return [h, *new_states], loss

        return outputs_and_gradients(step, [x, *states], cell.weights)

    (outputs_ours, grads_ours), (outputs_theirs, grads_theirs) = run(ours), run(theirs)
    for a, b in zip(outputs_ours, outputs_theirs):
        np.testing.assert_allclose(a, b, atol=1e-5)
    for a, b in zip(grads_ours, grads_theirs):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_zoo_cells_run_inside_keras_rnn(rng):
    inputs = rng.normal(size=(2, 6, 3)).astype("float32")
    generic = keras.layers.RNN(zoo.layers.LSTMCell(4), return_sequences=True)
    fast = zoo.layers.LSTM(4, return_sequences=True)
    generic(inputs)
    fast(inputs)
    fast.set_weights(generic.get_weights())
    np.testing.assert_allclose(generic(inputs), fast(inputs), atol=1e-6)
