"""Whole-sequence recurrences with a hand-written backward pass (BPTT).

This is the fast path of ``zoo.layers.SimpleRNN``/``LSTM``/``GRU`` on the
TensorFlow backend. Automatic differentiation of a step-by-step loop computes
``h_{t-1}^T dz_t`` (the recurrent-weight gradient) with one small matrix product
per step and keeps every intermediate of every step alive. Here the forward loop
keeps only what the backward pass needs (the states and the gate activations),
the backward loop does one ``dz_t U^T`` product per step, and the weight gradient
is a single ``[units, time * batch] x [time * batch, gates * units]`` product after
the loop -- the same algebra, fewer and larger matrix multiplications.

Inputs are time-major: ``projected`` is ``x_t W + b`` for every step,
``[time, batch, gates * units]``; ``mask`` is ``[time, batch]`` boolean or None.
Masked steps follow Keras: the state is carried over unchanged, and the output is
the previous output (or zeros when ``zero_output_for_mask``).

The forward steps run the cells' gate functions (``zoo.layers.cells.lstm_gates`` and
the others), the same equations as ``call``, with ``tf.tanh``/``tf.sigmoid`` and the
layout's axis; only the backward steps are written here.

Under mixed precision the weights come in bfloat16 and everything else in float32, as the
cells compute (``zoo.layers.cells``): the products run in the weights' dtype (``_product``)
and the states, gates and gradients of the states stay float32. In float32 every cast is
TensorFlow's no-op (``tf.cast`` returns a tensor already of its dtype).
"""

import functools

import numpy as np
import tensorflow as tf

from zoo.layers import blocks, cells, kernel_choice


def _product(x, weight, weight_first=False):
    """``x weight`` (or ``weight x``) in the weight's dtype (bfloat16 under mixed
    precision), the result in ``x``'s (float32: the states' and the gradients')."""
    x_in = tf.cast(x, weight.dtype)
    product = tf.matmul(weight, x_in) if weight_first else tf.matmul(x_in, weight)
    return tf.cast(product, x.dtype)


def _shaped_like(joined, tensor):
    """``joined`` (a concatenation, as long as ``tensor`` when run) with ``tensor``'s static
    shape: a loop's carried tensors keep theirs."""
    joined.set_shape(tensor.shape)
    return joined


class BatchMajor:
    """States ``[batch, units]``; ``h U`` is ``matmul(h, U)`` (training path)."""

    axis = -1  # the gates' axis

    @staticmethod
    def split(tensor, parts):
        return tf.split(tensor, parts, axis=BatchMajor.axis)

    @staticmethod
    def recurrent(state, weight):
        return _product(state, weight)

    @staticmethod
    def prepare(weight):
        return weight

    @staticmethod
    def prepare_bias(bias):
        return bias

    @staticmethod
    def first_rows(tensor, count):
        """The first ``count`` rows (sequences) of a state: a view of its buffer."""
        return tensor[:count]

    @staticmethod
    def with_first_rows(first, tensor, count):
        """``tensor`` with its first ``count`` rows replaced by ``first``."""
        return _shaped_like(tf.concat([first, tensor[count:]], axis=0), tensor)


class BatchMajorInBlocks(BatchMajor):
    """``BatchMajor`` with the recurrent product ``h U`` split into column blocks of
    ``U`` (each at most ``blocks.BLOCK_BYTES``), one product each, concatenated: at
    batch 1 on two threads, TensorFlow's inter-op threads run the blocks side by side,
    each on one thread (``zoo.layers.blocks`` says why). An LSTM of 512 units on a
    2-core AMD EPYC: about 120 us a step whole, 58 us in 8 blocks. Whether it is faster
    for a layer's shapes is measured (``kernel_choice``), not assumed.
    """

    @staticmethod
    def prepare(weight):
        columns = weight.shape[-1]
        count = blocks.blocks_for(weight.shape[0], columns, tf.as_dtype(weight.dtype).size)
        return tf.split(weight, blocks.block_sizes(columns, count), axis=-1)

    @staticmethod
    def recurrent(state, weight_blocks):
        return tf.concat([_product(state, block) for block in weight_blocks], axis=-1)


class FeatureMajor:
    """States ``[units, batch]``; ``h U`` is computed as ``matmul(U^T, h^T)``.

    Same numbers, transposed: on CPU this orientation of the small per-step product
    ran about twice as fast single-threaded (measured with ``zoo benchmark layers``),
    which is what the step-by-step loop is bound by. Used by the inference path.
    """

    axis = 0


    @staticmethod
    def recurrent(state, weight_t):
        return _product(state, weight_t, weight_first=True)

    @staticmethod
    def prepare(weight):
        return tf.transpose(weight)

    @staticmethod
    def prepare_bias(bias):
        return tf.expand_dims(bias, -1)

    @staticmethod
    def first_rows(tensor, count):
        return tensor[:, :count]

    @staticmethod
    def with_first_rows(first, tensor, count):
        return _shaped_like(tf.concat([first, tensor[:, count:]], axis=1), tensor)


class _Kernel:
    """One cell's forward step, backward step and weight gradients."""

    gates = 1  # blocks of ``units`` columns in the kernels
    states = 1
    # What the backward pass keeps of each step: these of the gate function's
    # activations, in this order.
    saved_gate_names = ()
    separate_recurrent_gradient = False  # True when dL/d(h U) differs from dL/d(x W)

    @property
    def saved_gates(self):
        """Activations kept per step for the backward pass, in units."""
        return len(self.saved_gate_names)

    def forward(self, projected_t, states, weights, layout=BatchMajor):
        """``(new states, saved activations)`` of one step: the gate function's states
        and the activations named in ``saved_gate_names``."""
        new_states, gates = self.step(projected_t, states, weights, layout)
        return new_states, [gates[name] for name in self.saved_gate_names]


class _SimpleRNNKernel(_Kernel):
    """h_t = tanh(p_t + h_{t-1} U)."""

    def step(self, projected_t, states, weights, layout):
        return cells.simple_rnn_gates(
            projected_t + layout.recurrent(states[0], weights["kernel"]), tf.tanh)

    def backward(self, d_states, saved, states_in, states_out, weights):
        h = states_out[0]
        d_pre = d_states[0] * (1.0 - h * h)
        return d_pre, [_product(d_pre, weights["kernel_t"])], None

    def weight_gradients(self, h_in, saved, d_recurrent, weights):
        return {"kernel": _outer_sum(h_in, d_recurrent, weights["kernel"])}


class _LSTMKernel(_Kernel):
    """i, f, g, o from p_t + h_{t-1} U; c_t = f c_{t-1} + i g; h_t = o tanh(c_t)."""

    gates, states = 4, 2
    saved_gate_names = ("i", "f", "c~", "o")

    def step(self, projected_t, states, weights, layout):
        h_prev, c_prev = states
        return cells.lstm_gates(projected_t + layout.recurrent(h_prev, weights["kernel"]),
                                c_prev, tf.tanh, tf.sigmoid, axis=layout.axis)

    def backward(self, d_states, saved, states_in, states_out, weights):
        d_h, d_c = d_states
        i, f, g, o = BatchMajor.split(saved[0], 4)
        tanh_c = tf.tanh(states_out[1])
        d_c = d_c + d_h * o * (1.0 - tanh_c * tanh_c)
        d_pre = tf.concat(
            [
                d_c * g * i * (1.0 - i),
                d_c * states_in[1] * f * (1.0 - f),
                d_c * i * (1.0 - g * g),
                d_h * tanh_c * o * (1.0 - o),
            ],
            axis=-1,
        )
        return d_pre, [_product(d_pre, weights["kernel_t"]), d_c * f], None

    def weight_gradients(self, h_in, saved, d_recurrent, weights):
        return {"kernel": _outer_sum(h_in, d_recurrent, weights["kernel"])}


class _GRUResetAfterKernel(_Kernel):
    """r_t applied to h_{t-1} U + b' (the cuDNN-compatible GRU)."""

    gates = 3
    saved_gate_names = ("z", "r", "n", "recurrent_n")
    separate_recurrent_gradient = True

    def step(self, projected_t, states, weights, layout):
        h_prev = states[0]
        recurrent = layout.recurrent(h_prev, weights["kernel"]) + weights["bias"]
        return cells.gru_reset_after_gates(projected_t, recurrent, h_prev, tf.tanh, tf.sigmoid,
                                           axis=layout.axis)

    def backward(self, d_states, saved, states_in, states_out, weights):
        d_h = d_states[0]
        h_prev = states_in[0]
        z, r, n, rec_h = BatchMajor.split(saved[0], 4)
        d_n = d_h * (1.0 - z) * (1.0 - n * n)
        d_z = d_h * (h_prev - n) * z * (1.0 - z)
        d_r = d_n * rec_h * r * (1.0 - r)
        d_projected = tf.concat([d_z, d_r, d_n], axis=-1)
        d_recurrent = tf.concat([d_z, d_r, d_n * r], axis=-1)
        d_h_prev = d_h * z + _product(d_recurrent, weights["kernel_t"])
        return d_projected, [d_h_prev], d_recurrent

    def weight_gradients(self, h_in, saved, d_recurrent, weights):
        return {
            "kernel": _outer_sum(h_in, d_recurrent, weights["kernel"]),
            "bias": tf.reduce_sum(d_recurrent, axis=[0, 1]),
        }


class _GRUResetBeforeKernel(_Kernel):
    """r_t applied to h_{t-1} before its product with U_h (Cho et al. 2014)."""

    gates = 3
    saved_gate_names = ("z", "r", "n")

    def step(self, projected_t, states, weights, layout):
        h_prev = states[0]
        return cells.gru_reset_before_gates(
            projected_t, layout.recurrent(h_prev, weights["kernel_zr"]), h_prev, h_prev,
            lambda reset_input: layout.recurrent(reset_input, weights["kernel_h"]),
            tf.tanh, tf.sigmoid, axis=layout.axis)

    def backward(self, d_states, saved, states_in, states_out, weights):
        d_h = d_states[0]
        h_prev = states_in[0]
        z, r, n = BatchMajor.split(saved[0], 3)
        d_n = d_h * (1.0 - z) * (1.0 - n * n)
        d_reset_h = _product(d_n, weights["kernel_h_t"])
        d_z = d_h * (h_prev - n) * z * (1.0 - z)
        d_r = d_reset_h * h_prev * r * (1.0 - r)
        d_zr = tf.concat([d_z, d_r], axis=-1)
        d_h_prev = d_h * z + d_reset_h * r + _product(d_zr, weights["kernel_zr_t"])
        d_projected = tf.concat([d_zr, d_n], axis=-1)
        return d_projected, [d_h_prev], None

    def weight_gradients(self, h_in, saved, d_recurrent, weights):
        units = h_in.shape[-1]
        reset = BatchMajor.split(saved[0], 3)[1]
        d_zr, d_n = d_recurrent[..., : 2 * units], d_recurrent[..., 2 * units :]
        return {
            "kernel": tf.concat(
                [_outer_sum(h_in, d_zr, weights["kernel_zr"]),
                 _outer_sum(reset * h_in, d_n, weights["kernel_h"])], axis=-1
            )
        }


def _outer_sum(left, right, weight):
    """sum_t left_t^T right_t for time-major ``[T, B, m]`` and ``[T, B, n]``: a gradient
    of ``weight``, in its dtype (the product in bfloat16 under mixed precision)."""
    return tf.matmul(
        tf.reshape(tf.cast(left, weight.dtype), [-1, left.shape[-1]]),
        tf.reshape(tf.cast(right, weight.dtype), [-1, right.shape[-1]]),
        transpose_a=True,
    )


LAYOUT_CLASSES = {"feature_major": FeatureMajor, "batch_major": BatchMajor,
                  "batch_major_in_blocks": BatchMajorInBlocks}

KERNELS = {
    "simple_rnn": _SimpleRNNKernel(),
    "lstm": _LSTMKernel(),
    "gru_reset_after": _GRUResetAfterKernel(),
    "gru_reset_before": _GRUResetBeforeKernel(),
}


def _loop_weights(kind, kernel, bias, layout=BatchMajor):
    """The recurrent weights a kind's loops use, in the layout's orientation.

    The batch-major (training) weights also carry the transposes that the backward
    loop multiplies by, made once instead of at every step.
    """
    if kind == "gru_reset_before":
        units = kernel.shape[0]
        kernel_zr, kernel_h = kernel[:, : 2 * units], kernel[:, 2 * units :]
        weights = {"kernel_zr": layout.prepare(kernel_zr), "kernel_h": layout.prepare(kernel_h)}
        if layout is BatchMajor:
            weights.update(kernel_zr_t=tf.transpose(kernel_zr), kernel_h_t=tf.transpose(kernel_h))
        return weights
    weights = {"kernel": layout.prepare(kernel), "bias": layout.prepare_bias(bias)}
    if layout is BatchMajor:
        weights["kernel_t"] = tf.transpose(kernel)
    return weights


def _tensor_array(dtype, size, like):
    return tf.TensorArray(dtype, size=size, element_shape=like.shape)


def _step_reader(sequence):
    """``t -> sequence[t]`` for a time-major ``sequence``: a slice along the first axis
    shares the sequence's buffer (TensorFlow's ``StridedSlice``), where a TensorArray's
    ``unstack`` copies the whole sequence first (2% of the README's fine-tune, for its
    three loops)."""
    return lambda t: sequence[t]


def _forward_loop(cell, step_input, steps, states, weights, mask_steps, zero_output_for_mask,
                  record_history, record_outputs=True, layout=BatchMajor, active_counts=None):
    """The forward recurrence; ``step_input(t)`` gives the projected input of step t.

    Returns ``(outputs [T, ...], last_output, final_states, states_after, saved)``.
    ``outputs`` is None unless ``record_outputs``; the last two (every step's
    states and saved gate activations, for the backward pass) are empty unless
    ``record_history``. Without a mask the output is the first state, so that
    state is not recorded twice.

    ``active_counts [T]`` (inference, instead of ``mask_steps``): step t computes the
    first ``active_counts[t]`` rows only, ``step_input(t, count)`` their projected
    input; the other rows are masked (``_in_packed_rows``).
    """
    dtype = states[0].dtype
    zero_output = tf.zeros_like(states[0])
    recorded_states = range(0 if mask_steps is not None else 1, len(states))
    if not record_history:
        recorded_states = range(0)
    num_saved = int(record_history and cell.saved_gates > 0)
    record_outputs = record_outputs or record_history
    saved_tas = ()
    if num_saved:  # batch-major training path: [batch, saved_gates * units] per step
        saved_like = tf.zeros([tf.shape(states[0])[0], cell.saved_gates * states[0].shape[-1]],
                              dtype)
        saved_tas = (_tensor_array(dtype, steps, saved_like),)

    def body(t, previous_output, states, outputs_ta, states_tas, saved_tas):
        # ``masked(new, old)``: the step's values where it computed, ``old`` elsewhere.
        if active_counts is not None:
            count = active_counts[t]
            candidate, saved = cell.forward(step_input(t, count),
                                            [layout.first_rows(s, count) for s in states],
                                            weights, layout)
            masked = functools.partial(layout.with_first_rows, count=count)
        else:
            candidate, saved = cell.forward(step_input(t), list(states), weights, layout)
            masked = None if mask_steps is None else functools.partial(tf.where, mask_steps[t])
        if masked is None:
            new_states, output = candidate, candidate[0]
        else:
            new_states = [masked(c, s) for c, s in zip(candidate, states)]
            output = masked(candidate[0], zero_output if zero_output_for_mask else previous_output)
        if record_outputs:
            outputs_ta = outputs_ta.write(t, output)
        states_tas = tuple(ta.write(t, new_states[i]) for ta, i in zip(states_tas, recorded_states))
        if num_saved:
            saved_tas = (saved_tas[0].write(t, tf.concat(saved, axis=-1)),)
        return t + 1, output, tuple(new_states), outputs_ta, states_tas, saved_tas

    _, last_output, final_states, outputs_ta, states_tas, saved_tas = tf.while_loop(
        lambda t, *_: t < steps,
        body,
        (
            0,
            zero_output,
            tuple(states),
            _tensor_array(dtype, steps, states[0]),
            tuple(_tensor_array(dtype, steps, states[i]) for i in recorded_states),
            saved_tas,
        ),
        # Lets the input projection of later steps run ahead, on an idle core,
        # while the step-by-step chain of recurrent products proceeds.
        parallel_iterations=32,
    )
    outputs = outputs_ta.stack() if record_outputs else None
    states_after = [ta.stack() for ta in states_tas]
    if record_history and mask_steps is None:
        states_after = [outputs] + states_after
    saved = [ta.stack() for ta in saved_tas]
    return outputs, last_output, list(final_states), states_after, saved


def run_recurrence(kind, projected, initial_states, recurrent_kernel, recurrent_bias=None,
                   mask=None, zero_output_for_mask=False):
    """Run a recurrence over time with an exact hand-written gradient (training).

    Args:
        kind: one of ``KERNELS``.
        projected: ``[T, B, gates * units]``, the input half of every gate.
        initial_states: list of ``[B, units]`` tensors.
        recurrent_kernel: ``[units, gates * units]``.
        recurrent_bias: ``[gates * units]`` (reset-after GRU only) or None.
        mask: ``[T, B]`` boolean or None.

    Returns:
        ``(outputs [T, B, units], last_output, final_states)``.
    """
    cell = KERNELS[kind]
    mask_steps = None if mask is None else tf.expand_dims(tf.cast(mask, tf.bool), -1)
    if recurrent_bias is None:
        recurrent_bias = tf.zeros([recurrent_kernel.shape[-1]], projected.dtype)

    @tf.custom_gradient
    def recurrence(projected, kernel, bias, *states):
        weights = _loop_weights(kind, kernel, bias)
        steps = tf.shape(projected)[0]
        outputs, _, final_states, states_after, saved_all = _forward_loop(
            cell, _step_reader(projected), steps, list(states), weights, mask_steps,
            zero_output_for_mask, record_history=True,
        )

        def gradient(d_outputs, *d_final_states):
            d_initial_states, d_projected, d_weights = _backward_loop(
                cell, d_outputs, d_final_states, states, states_after, saved_all,
                weights, mask_steps, zero_output_for_mask, projected.shape[-1],
            )
            d_bias = d_weights.get("bias", tf.zeros_like(bias))
            return (d_projected, d_weights["kernel"], d_bias, *d_initial_states)

        return (outputs, *final_states), gradient

    outputs, *final_states = recurrence(projected, recurrent_kernel, recurrent_bias, *initial_states)
    return outputs, outputs[-1], final_states


def run_inference(kind, sequences, input_kernel, input_bias, recurrent_kernel,
                  recurrent_bias=None, initial_states=(), mask=None,
                  zero_output_for_mask=False, return_sequences=True):
    """The forward pass alone, for inference, in the layout that ``kernel_choice``
    measured faster on this machine for these shapes and this batch size.

    Args:
        sequences: time-major inputs ``[T, B, features]``.
        input_kernel, input_bias: W ``[features, gates * units]`` and b (or None).
        The rest as ``run_recurrence``.

    Records nothing for a backward pass (TensorFlow can still differentiate it,
    through its generic while-loop gradient). Returns ``(outputs [T, B, units] or
    None, last_output, final_states)``, batch-major like ``run_recurrence``. Where the
    batch size is known while tracing the layout is decided then, else by a ``tf.cond``
    on it.
    """
    arguments = (kind, sequences, input_kernel, input_bias, recurrent_kernel, recurrent_bias,
                 initial_states, mask, zero_output_for_mask, return_sequences)

    def run(layout_name):
        return inference_in_layout(LAYOUT_CLASSES[layout_name], *arguments)

    forced = kernel_choice.forced_layout()
    if forced:
        return run(forced)
    choice = kernel_choice.chosen(
        kind, input_kernel.shape[0], recurrent_kernel.shape[0], sequences.dtype.name,
        layout_calls)
    threshold = choice["feature_major_from"]
    batch = sequences.shape[1]
    if batch is not None or threshold in (kernel_choice.NEVER, 1):
        return run(kernel_choice.layout_for_batch(choice, batch or 1))

    return _loop_cond(tf.shape(sequences)[1] >= threshold, lambda: run("feature_major"),
                      lambda: run(kernel_choice.layout_for_batch(choice, 1)))


def _loop_cond(predicate, run_if_true, run_if_false):
    """``tf.cond`` between two inference runs, each returning ``(outputs or None,
    last_output, states)``."""

    def with_tensors(run):  # tf.cond wants tensors: no outputs becomes ()
        outputs, last_output, states = run()
        return (() if outputs is None else outputs), last_output, states

    outputs, last_output, states = tf.cond(predicate, lambda: with_tensors(run_if_true),
                                           lambda: with_tensors(run_if_false))
    return (None if isinstance(outputs, tuple) else outputs), last_output, list(states)


def layout_calls(kind, features, units, dtype, batch, steps):
    """``inference_in_layout`` in each layout (``{layout name: call}``), compiled, on
    random inputs and weights of these shapes: what ``kernel_choice.measure`` times.
    ``batch_major_in_blocks`` only where its recurrent weight makes at least
    ``blocks.FROM_BLOCKS`` blocks."""
    cell = KERNELS[kind]
    rng = np.random.default_rng(0)

    def weights(*shape):
        return tf.constant(rng.normal(scale=0.05, size=shape).astype(dtype))

    input_kernel = weights(features, cell.gates * units)
    recurrent_kernel = weights(units, cell.gates * units)
    recurrent_bias = weights(cell.gates * units) if kind == "gru_reset_after" else None
    sequences = weights(steps, batch, features)
    states = [tf.zeros([batch, units], dtype)] * cell.states
    count = blocks.blocks_for(units, cell.gates * units, np.dtype(dtype).itemsize)
    names = [name for name in kernel_choice.LAYOUTS if name != "batch_major_in_blocks"
             or count >= blocks.FROM_BLOCKS]
    return {name: tf.function(functools.partial(
                inference_in_layout, LAYOUT_CLASSES[name], kind, sequences, input_kernel, None,
                recurrent_kernel, recurrent_bias, states))
            for name in names}


def inference_in_layout(layout, kind, sequences, input_kernel, input_bias, recurrent_kernel,
                        recurrent_bias=None, initial_states=(), mask=None,
                        zero_output_for_mask=False, return_sequences=True):
    """``run_inference`` in a given layout: ``FeatureMajor`` (states ``[units, batch]``,
    each step's input projection inside the loop) or ``BatchMajor`` and
    ``BatchMajorInBlocks`` (states ``[batch, units]``, the projection of every step done
    first, as one product). A batch of padded sequences computes their real steps only
    (``_in_packed_rows``)."""
    loop = functools.partial(_inference_loop, layout, kind, input_kernel, input_bias,
                             recurrent_kernel, recurrent_bias, zero_output_for_mask,
                             return_sequences)
    # Every loop shape static where a static batch of one is traced (TFLite) and where
    # XLA compiles (Keras' jit_compile): it needs them so.
    if mask is None or sequences.shape[1] == 1 or _compiled_by_xla():
        return loop(sequences, initial_states, mask)
    return _in_packed_rows(loop, sequences, initial_states, mask)


def _compiled_by_xla():
    """Whether the graph being traced is compiled by XLA (``jit_compile=True``)."""
    from tensorflow.python.ops import control_flow_util  # what tf.while_loop asks too

    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def _in_packed_rows(loop, sequences, initial_states, mask):
    """``loop(sequences, initial_states, mask)`` (``_inference_loop``), each step computing
    only the sequences that are real at that step, as PyTorch's packed sequences do.

    Ordered by their number of real steps, most first, padded sequences (at their end,
    or at their start: a backward layer's reversed ones) are real at every step in a
    first block of rows: the loop computes those (``active_counts``) and carries the
    rest as the mask would. Where that order does not make each step's real sequences
    a first block (some masks with gaps), the loop runs masked, as before. The same
    numbers, to float32's rounding (tested against Keras' layers). For 64 of the zh->en
    test sentences (4 to 19 pieces) the encoder's steps compute 49% of the rows they
    did (docs/benchmarks.md).
    """
    mask = tf.cast(mask, tf.bool)
    order = tf.argsort(tf.reduce_sum(tf.cast(mask, tf.int32), axis=0), direction="DESCENDING",
                       stable=True)
    ordered_mask = tf.gather(mask, order, axis=1)
    counts = tf.reduce_sum(tf.cast(ordered_mask, tf.int32), axis=1)
    first_rows = tf.range(tf.shape(mask)[1]) < tf.expand_dims(counts, 1)
    packable = tf.reduce_all(tf.equal(ordered_mask, first_rows))

    def packed():
        outputs, last_output, states = loop(
            tf.gather(sequences, order, axis=1), [tf.gather(s, order) for s in initial_states],
            None, counts)
        back = tf.math.invert_permutation(order)
        return (None if outputs is None else tf.gather(outputs, back, axis=1),
                tf.gather(last_output, back), [tf.gather(s, back) for s in states])

    return _loop_cond(packable, packed, lambda: loop(sequences, initial_states, mask))


def _inference_loop(layout, kind, input_kernel, input_bias, recurrent_kernel, recurrent_bias,
                    zero_output_for_mask, return_sequences, sequences, initial_states, mask,
                    active_counts=None):
    """``inference_in_layout``'s loop; with ``active_counts`` (``_in_packed_rows``) instead
    of ``mask``."""
    cell = KERNELS[kind]
    dtype = initial_states[0].dtype  # the states' and the gates' (float32 under mixed precision)
    steps = tf.shape(sequences)[0]
    if recurrent_bias is None:
        recurrent_bias = tf.zeros([recurrent_kernel.shape[-1]], dtype)
    weights = _loop_weights(kind, recurrent_kernel, recurrent_bias, layout)
    mask_steps = None
    if layout is FeatureMajor:
        step_input = _projection_in_loop(sequences, input_kernel, input_bias, dtype,
                                         first_rows=active_counts is not None)
        initial_states = [tf.transpose(s) for s in initial_states]
        if mask is not None:
            mask_steps = tf.expand_dims(tf.cast(mask, tf.bool), 1)  # [T, 1, B]
    else:
        projected = tf.cast(tf.matmul(sequences, input_kernel), dtype)
        projected = projected if input_bias is None else projected + input_bias
        if active_counts is None:
            step_input = _step_reader(projected)
        else:
            def step_input(t, count):
                return projected[t][:count]  # a view, as ``_step_reader``'s
        if mask is not None:
            mask_steps = tf.expand_dims(tf.cast(mask, tf.bool), -1)
    outputs, last_output, final_states, _, _ = _forward_loop(
        cell, step_input, steps, list(initial_states), weights, mask_steps,
        zero_output_for_mask, record_history=False, record_outputs=return_sequences,
        layout=layout, active_counts=active_counts,
    )
    if layout is not FeatureMajor:
        return outputs, last_output, final_states
    if outputs is not None:
        outputs = tf.transpose(outputs, (0, 2, 1))
    return outputs, tf.transpose(last_output), [tf.transpose(s) for s in final_states]


def _projection_in_loop(sequences, input_kernel, input_bias, dtype, first_rows=False):
    """``step_input(t)``: step t's input projection, feature-major ``[gates * units, B]``,
    in ``dtype`` (the states'); with ``first_rows``, ``step_input(t, count)``: that of
    the first ``count`` rows (``[gates * units, count]``)."""
    input_kernel_t = tf.transpose(input_kernel)
    input_bias = None if input_bias is None else FeatureMajor.prepare_bias(input_bias)

    def projection(product):
        projected = tf.cast(product, dtype)
        return projected if input_bias is None else projected + input_bias

    if first_rows:
        return lambda t, count: projection(
            tf.matmul(input_kernel_t, sequences[t][:count], transpose_b=True))
    inputs_ta = _tensor_array(sequences.dtype, tf.shape(sequences)[0],
                              tf.transpose(sequences[0])).unstack(tf.transpose(sequences, (0, 2, 1)))
    return lambda t: projection(tf.matmul(input_kernel_t, inputs_ta.read(t)))


def _backward_loop(cell, d_outputs, d_final_states, states, states_after, saved_all, weights,
                   mask_steps, zero_output_for_mask, projected_width):
    """Backpropagation through time; returns (d initial states, d projected, d weights)."""
    dtype = d_outputs.dtype
    steps = tf.shape(d_outputs)[0]
    separate = int(cell.separate_recurrent_gradient)
    states_before = [
        tf.concat([tf.expand_dims(s0, 0), s_after[:-1]], axis=0)
        for s0, s_after in zip(states, states_after)
    ]
    d_states0 = [tf.zeros_like(s) if d is None else d for s, d in zip(states, d_final_states)]
    projected_like = tf.zeros([tf.shape(states[0])[0], projected_width], dtype)

    def body(t, carried_output_grad, d_states, d_projected_ta, d_recurrent_ta):
        d_output = d_outputs[t] + carried_output_grad
        if mask_steps is None:
            d_candidate = [d_states[0] + d_output] + list(d_states[1:])
            passed_through = [tf.zeros_like(d) for d in d_states]
            carried = carried_output_grad
        else:
            # A masked step copied its state and the previous output: their
            # gradients pass through it untouched.
            keep = mask_steps[t]
            zeros = tf.zeros_like(d_output)
            d_candidate = [tf.where(keep, d, zeros) for d in d_states]
            d_candidate[0] += tf.where(keep, d_output, zeros)
            passed_through = [tf.where(keep, zeros, d) for d in d_states]
            carried = zeros if zero_output_for_mask else tf.where(keep, zeros, d_output)
        d_projected, d_previous, d_recurrent = cell.backward(
            d_candidate,
            [s[t] for s in saved_all],
            [s[t] for s in states_before],
            [s[t] for s in states_after],
            weights,
        )
        d_states = tuple(p + q for p, q in zip(d_previous, passed_through))
        d_projected_ta = d_projected_ta.write(t, d_projected)
        if d_recurrent is not None:
            d_recurrent_ta = tuple(ta.write(t, d_recurrent) for ta in d_recurrent_ta)
        return t - 1, carried, d_states, d_projected_ta, d_recurrent_ta

    _, _, d_initial_states, d_projected_ta, d_recurrent_ta = tf.while_loop(
        lambda t, *_: t >= 0,
        body,
        (
            steps - 1,
            tf.zeros_like(states[0]),
            tuple(d_states0),
            _tensor_array(dtype, steps, projected_like),
            tuple(_tensor_array(dtype, steps, projected_like) for _ in range(separate)),
        ),
    )
    d_projected = d_projected_ta.stack()
    d_recurrent = d_recurrent_ta[0].stack() if separate else d_projected
    d_weights = cell.weight_gradients(states_before[0], saved_all, d_recurrent, weights)
    return list(d_initial_states), d_projected, d_weights
