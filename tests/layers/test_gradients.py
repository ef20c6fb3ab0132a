"""The hand-written backward passes of zoo.layers.sequence_kernels, checked numerically.

``run_recurrence`` is a ``tf.custom_gradient`` whose gradient is ``_backward_loop``
with each kernel's ``backward``/``weight_gradients`` (BPTT derived by hand). Here:

* ``tf.test.compute_gradient``: the Jacobian the hand-written gradient gives
  (theoretical) against central finite differences (numerical), in float64, for
  every kernel, with and without a mask, with respect to every input (projected
  inputs, recurrent kernel, recurrent bias, initial states) and every output
  (all step outputs and the final states). Runs inside a ``tf.function``, the way
  ``model.fit`` runs it (custom_gradient's graph mode).
* autodiff of the plain equations, written out below step by step, in eager mode
  (custom_gradient's eager mode), including masks with masked leading, middle,
  trailing and all steps, and ``zero_output_for_mask``.

Small shapes (time 3, batch 2, units 3) keep the finite differences fast.
"""

import numpy as np
import pytest
import tensorflow as tf

from zoo.layers import sequence_kernels

TIME, BATCH, UNITS = 3, 2, 3
GATES = {"simple_rnn": 1, "lstm": 4, "gru_reset_after": 3, "gru_reset_before": 3}
KINDS = list(GATES)

MASKS = {
    "none": None,
    # batch 0: masked first and last step; batch 1: masked middle step.
    "mixed": np.array([[False, True], [True, False], [False, True]]),
    # batch 0 entirely masked: its outputs are zeros and its final state its initial one.
    "fully_masked": np.array([[False, True], [False, True], [False, False]]),
}

# float64 central differences with delta 1e-6: truncation error ~delta^2 (1e-12),
# rounding ~eps/delta (1e-10) on entries of order 1; measured differences are <5e-10.
DELTA = 1e-6
TOLERANCE = {"rtol": 1e-6, "atol": 1e-8}


def _arguments(kind, rng):
    """(projected, recurrent kernel, recurrent bias, *initial states), float64."""
    width = GATES[kind] * UNITS
    states = [rng.normal(size=(BATCH, UNITS)) for _ in range(2 if kind == "lstm" else 1)]
    return [rng.normal(size=(TIME, BATCH, width)), 0.5 * rng.normal(size=(UNITS, width)),
            rng.normal(size=(width,))] + states


# -- tf.test.compute_gradient -----------------------------------------------------------------


def _jacobians(kind, mask, zero_output_for_mask, rng):
    """Theoretical and numerical Jacobians of every output w.r.t. every input.

    All inputs are packed into one vector, so that the theoretical Jacobian costs one
    backward pass per output element instead of one per (output, input) pair.
    """
    arguments = _arguments(kind, rng)
    shapes, sizes = [a.shape for a in arguments], [a.size for a in arguments]

    @tf.function(autograph=False)
    def f(flat):
        projected, kernel, bias, *states = [
            tf.reshape(part, shape) for part, shape in zip(tf.split(flat, sizes), shapes)]
        outputs, _, final_states = sequence_kernels.run_recurrence(
            kind, projected, states, kernel, bias, mask=mask,
            zero_output_for_mask=zero_output_for_mask)
        # last_output is outputs[-1] (checked below), so it adds no rows worth their cost.
        return tf.concat([tf.reshape(t, [-1]) for t in [outputs, *final_states]], 0)

    flat = tf.constant(np.concatenate([a.ravel() for a in arguments]))
    ((theoretical,), (numerical,)) = tf.test.compute_gradient(f, [flat], delta=DELTA)
    return theoretical, numerical


@pytest.mark.parametrize(
    "kind,mask_name,zero_output_for_mask",
    # zero_output_for_mask=True only changes which output a masked step repeats; the
    # autodiff comparison below covers it for every kernel, at a fraction of the cost.
    [(kind, mask_name, False) for kind in KINDS for mask_name in ("none", "mixed")],
)
def test_hand_written_gradient_matches_finite_differences(kind, mask_name, zero_output_for_mask,
                                                          rng):
    theoretical, numerical = _jacobians(kind, MASKS[mask_name], zero_output_for_mask, rng)
    assert theoretical.dtype == np.float64
    assert np.abs(numerical).max() > 0.1  # a real, non-degenerate Jacobian
    np.testing.assert_allclose(theoretical, numerical, **TOLERANCE)


def test_finite_differences_catch_a_wrong_backward_pass(rng, monkeypatch):
    """The check above can fail: drop tanh's derivative from SimpleRNN's backward step."""

    def wrong_backward(self, d_states, saved, states_in, states_out, weights):
        d_pre = d_states[0]  # should be d_states[0] * (1 - h^2)
        return d_pre, [tf.matmul(d_pre, weights["kernel_t"])], None

    monkeypatch.setattr(sequence_kernels._SimpleRNNKernel, "backward", wrong_backward)
    theoretical, numerical = _jacobians("simple_rnn", None, False, rng)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(theoretical, numerical, **TOLERANCE)


# -- autodiff of the plain equations ------------------------------------------------------


def _sigmoid(x):
    return 1.0 / (1.0 + tf.exp(-x))


def _plain_step(kind, p, states, kernel, bias):
    """One step, written from the textbook equations (gate order as Keras)."""
    h = states[0]
    if kind == "simple_rnn":
        h = tf.tanh(p + h @ kernel)
        return [h]
    if kind == "lstm":
        z_i, z_f, z_g, z_o = tf.split(p + h @ kernel, 4, axis=-1)
        c = _sigmoid(z_f) * states[1] + _sigmoid(z_i) * tf.tanh(z_g)
        return [_sigmoid(z_o) * tf.tanh(c), c]
    x_z, x_r, x_h = tf.split(p, 3, axis=-1)
    u_z, u_r, u_h = tf.split(kernel, 3, axis=-1)
    b_z, b_r, b_h = tf.split(bias, 3)
    if kind == "gru_reset_after":
        z = _sigmoid(x_z + h @ u_z + b_z)
        r = _sigmoid(x_r + h @ u_r + b_r)
        n = tf.tanh(x_h + r * (h @ u_h + b_h))
    else:  # reset before: no recurrent bias
        z = _sigmoid(x_z + h @ u_z)
        r = _sigmoid(x_r + h @ u_r)
        n = tf.tanh(x_h + (r * h) @ u_h)
    return [z * h + (1.0 - z) * n]


def _plain_recurrence(kind, projected, states, kernel, bias, mask, zero_output_for_mask):
    """Keras' masking: a masked step keeps the state, outputs the previous output (or 0)."""
    outputs, previous = [], tf.zeros_like(states[0])
    for t in range(projected.shape[0]):
        candidate = _plain_step(kind, projected[t], states, kernel, bias)
        if mask is None:
            states, output = candidate, candidate[0]
        else:
            keep = mask[t][:, None]
            states = [tf.where(keep, c, s) for c, s in zip(candidate, states)]
            output = tf.where(keep, candidate[0],
                              tf.zeros_like(previous) if zero_output_for_mask else previous)
        outputs.append(output)
        previous = output
    return tf.stack(outputs), outputs[-1], states


def _values_and_gradients(recurrence, arguments, weights, use_final_states):
    arguments = [tf.constant(a) for a in arguments]
    with tf.GradientTape() as tape:
        tape.watch(arguments)
        outputs, last_output, final_states = recurrence(*arguments)
        loss = tf.reduce_sum(weights[0] * outputs)
        if use_final_states:
            loss += sum(tf.reduce_sum(w * s) for w, s in zip(weights[1:], final_states))
    return [outputs, last_output, *final_states], tape.gradient(loss, arguments)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mask_name,zero_output_for_mask",
                         [("none", False), ("mixed", False), ("mixed", True),
                          ("fully_masked", False), ("fully_masked", True)])
@pytest.mark.parametrize("use_final_states", [True, False],
                         ids=["outputs_and_states", "outputs_only"])
def test_hand_written_gradient_matches_autodiff_of_the_equations(
        kind, mask_name, zero_output_for_mask, use_final_states, rng):
    mask = MASKS[mask_name]
    arguments = _arguments(kind, rng)
    # Weight every element differently, so no gradient term can cancel out.
    weights = [rng.normal(size=(TIME, BATCH, UNITS))] + [
        rng.normal(size=(BATCH, UNITS)) for _ in arguments[3:]]

    def fused(projected, kernel, bias, *states):
        return sequence_kernels.run_recurrence(
            kind, projected, list(states), kernel, bias, mask=mask,
            zero_output_for_mask=zero_output_for_mask)

    def plain(projected, kernel, bias, *states):
        return _plain_recurrence(kind, projected, list(states), kernel, bias,
                                 None if mask is None else tf.constant(mask),
                                 zero_output_for_mask)

    ours, our_gradients = _values_and_gradients(fused, arguments, weights, use_final_states)
    expected, expected_gradients = _values_and_gradients(plain, arguments, weights,
                                                         use_final_states)
    for a, b in zip(ours, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    names = ["projected", "kernel", "bias"] + [f"state {i}" for i in range(len(arguments) - 3)]
    for name, a, b in zip(names, our_gradients, expected_gradients):
        if b is None:  # the bias of kinds that have none: the kernel reports zeros
            assert name == "bias" and kind != "gru_reset_after"
            np.testing.assert_array_equal(a, 0.0)
            continue
        assert a is not None, name
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)


def test_fully_masked_sequence_passes_its_state_gradient_straight_through(rng):
    """A sequence with every step masked: d final state == d initial state, exactly."""
    arguments = [tf.constant(a) for a in _arguments("lstm", rng)]
    projected, kernel, bias, h0, c0 = arguments
    mask = np.zeros((TIME, BATCH), bool)
    with tf.GradientTape() as tape:
        tape.watch(arguments)
        outputs, _, (h, c) = sequence_kernels.run_recurrence(
            "lstm", projected, [h0, c0], kernel, bias, mask=mask)
        loss = tf.reduce_sum(3.0 * h) + tf.reduce_sum(5.0 * c) + tf.reduce_sum(outputs)
    d_projected, d_kernel, _, d_h0, d_c0 = tape.gradient(loss, arguments)
    np.testing.assert_array_equal(outputs, 0.0)
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_array_equal(c, c0)
    np.testing.assert_array_equal(d_h0, 3.0)
    np.testing.assert_array_equal(d_c0, 5.0)
    np.testing.assert_array_equal(d_projected, 0.0)
    np.testing.assert_array_equal(d_kernel, 0.0)
