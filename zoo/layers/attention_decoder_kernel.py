"""The attention decoder's teacher-forced loop with a hand-written backward pass.

The training path of ``AttentionSeq2Seq`` on TensorFlow in float32: Bahdanau's additive
attention over the encoder's memory, then the reset-after GRU cell, step after step.
Automatic differentiation of that loop computes, at every step of its backward loop, the
gradient of each weight the step reads (the query kernel, the score vector, the cell's
context and recurrent kernels) and of the memory, each a small product added to a
running sum: ten products and ten sums a step. Here the backward loop computes only what
the step before needs (the gradients of the state, the context and the query) and the
keys' gradient, a ``[batch, source, units]`` sum with no shortcut; the weights' and the
memory's gradients are one product each after the loop, from the steps' saved states,
contexts, attention weights and gradients (as ``sequence_kernels`` does for the encoder).

The forward step runs the attention's own functions (``attention.additive_hidden``,
``masked_softmax``, ``weighted_sum``) and the GRU kernel's (``sequence_kernels``): the
same numbers as the step ``decode_teacher_forced`` differentiates otherwise.

Inputs are time-major: ``projected`` is ``[T, B, 3 units]``, the cell's input product of
the target embeddings (and the input bias); ``keys`` ``U h`` ``[B, S, attention units]``,
``memory`` ``h`` ``[B, S, memory units]`` and ``mask`` ``[B, S]`` (bool) the encoder's.
"""

import tensorflow as tf
from keras import ops

from zoo.layers import attention
from zoo.layers.sequence_kernels import (KERNELS, _loop_weights, _outer_sum, _step_reader,
                                         _tensor_array)

_GRU = KERNELS["gru_reset_after"]


def run_attention_decoder(projected, initial_state, keys, memory, mask, query_kernel,
                          score_vector, context_kernel, recurrent_kernel, recurrent_bias):
    """``(states [T, B, units], contexts [T, B, memory units])`` of the teacher-forced
    decoder, differentiable (by hand) in every argument but ``mask``."""

    @tf.custom_gradient
    def decoder(projected, initial_state, keys, memory, query_kernel, score_vector,
                context_kernel, recurrent_kernel, recurrent_bias):
        cell_weights = _loop_weights("gru_reset_after", recurrent_kernel, recurrent_bias)
        steps = tf.shape(projected)[0]
        history = _forward(projected, initial_state, keys, memory, mask, query_kernel,
                           score_vector, context_kernel, cell_weights, steps)

        def gradient(d_states, d_contexts):
            return _backward(d_states, d_contexts, history, keys, memory, query_kernel,
                             score_vector, context_kernel, cell_weights, steps)

        return (history["states"], history["contexts"]), gradient

    # The variables read out here: the loops see plain tensors.
    weights = [tf.identity(weight) for weight in (query_kernel, score_vector, context_kernel,
                                                  recurrent_kernel, recurrent_bias)]
    return decoder(projected, initial_state, keys, memory, *weights)


def _attend(state, keys, memory, mask, query_kernel, score_vector):
    """``(context [B, D], weights [B, S], hidden [B, S, units])`` of one step."""
    query = ops.expand_dims(tf.matmul(state, query_kernel), 1)
    hidden = attention.additive_hidden(query, keys)  # [B, 1, S, units]
    weights = attention.masked_softmax(ops.tensordot(hidden, score_vector, axes=1), mask)
    context = attention.weighted_sum(weights, memory)
    return context[:, 0], weights[:, 0], hidden[:, 0]


def _forward(projected, initial_state, keys, memory, mask, query_kernel, score_vector,
             context_kernel, cell_weights, steps):
    """The loop; returns every step's state before and after, context, gates, weights
    and the score's hidden layer (time-major), for the backward pass."""
    dtype = projected.dtype
    step_input = _step_reader(projected)

    def body(t, state, tas):
        context, weights, hidden = _attend(state, keys, memory, mask, query_kernel,
                                           score_vector)
        cell_input = step_input(t) + tf.matmul(context, context_kernel)
        (new_state,), gates = _GRU.forward(cell_input, [state], cell_weights)
        saved = (new_state, context, tf.concat(gates, axis=-1), weights, hidden)
        return t + 1, new_state, tuple(ta.write(t, value) for ta, value in zip(tas, saved))

    batch = tf.shape(initial_state)[0]
    width = 4 * initial_state.shape[-1]  # the GRU's saved gates: z, r, n, U_h h + b'_h
    likes = (initial_state, memory[:, 0], tf.zeros([batch, width], dtype), keys[..., 0],
             keys)
    _, _, tas = tf.while_loop(lambda t, *_: t < steps, body,
                              (0, initial_state,
                               tuple(_tensor_array(dtype, steps, like) for like in likes)))
    states, contexts, gates, weights = (ta.stack() for ta in tas[:4])
    return {"states": states, "contexts": contexts, "gates": gates, "weights": weights,
            "hidden": tas[4],  # read step by step, never stacked: [T, B, S, units]
            "states_before": tf.concat([initial_state[None], states[:-1]], axis=0)}


def _backward(d_states, d_contexts, history, keys, memory, query_kernel, score_vector,
              context_kernel, cell_weights, steps):
    """Backpropagation through the steps, then the weights' and the memory's gradients
    as one product each; the gradients of ``decoder``'s arguments, in order."""
    dtype = d_states.dtype
    context_kernel_t = tf.transpose(context_kernel)
    query_kernel_t = tf.transpose(query_kernel)

    def body(t, d_state, d_keys, d_vector, tas):
        d_input, (d_state_before,), d_recurrent = _GRU.backward(
            [d_states[t] + d_state], [history["gates"][t]], [history["states_before"][t]],
            None, cell_weights)
        d_context = d_contexts[t] + tf.matmul(d_input, context_kernel_t)
        weights = history["weights"][t]
        d_weights = tf.linalg.matvec(memory, d_context)
        # The softmax's gradient; 0 at a masked position, whose weight is exactly 0.
        d_scores = weights * (d_weights - tf.reduce_sum(weights * d_weights, -1, keepdims=True))
        hidden = history["hidden"].read(t)
        d_vector += tf.tensordot(d_scores, hidden, axes=[[0, 1], [0, 1]])
        d_pre = d_scores[..., None] * score_vector * (1.0 - hidden * hidden)
        d_query = tf.reduce_sum(d_pre, axis=1)
        d_state_before += tf.matmul(d_query, query_kernel_t)
        saved = (d_input, d_recurrent, d_query, d_context)
        return (t - 1, d_state_before, d_keys + d_pre, d_vector,
                tuple(ta.write(t, value) for ta, value in zip(tas, saved)))

    widths = (cell_weights["kernel"].shape[-1], cell_weights["kernel"].shape[-1],
              query_kernel.shape[-1], memory.shape[-1])
    tas = tuple(tf.TensorArray(dtype, size=steps, element_shape=[None, width])
                for width in widths)
    _, d_initial_state, d_keys, d_vector, tas = tf.while_loop(
        lambda t, *_: t >= 0, body,
        (steps - 1, tf.zeros_like(d_states[0]), tf.zeros_like(keys),
         tf.zeros_like(score_vector), tas))
    d_projected, d_recurrent, d_query, d_context = (ta.stack() for ta in tas)
    states_before = history["states_before"]
    cell_gradients = _GRU.weight_gradients(states_before, history["gates"], d_recurrent,
                                           cell_weights)
    # sum_t a_t^T dc_t for each sentence: [B, S, T] x [B, T, D]
    d_memory = tf.matmul(tf.transpose(history["weights"], [1, 2, 0]),
                         tf.transpose(d_context, [1, 0, 2]))
    return (d_projected, d_initial_state, d_keys, d_memory,
            _outer_sum(states_before, d_query, query_kernel), d_vector,
            _outer_sum(history["contexts"], d_projected, context_kernel),
            cell_gradients["kernel"], cell_gradients["bias"])
