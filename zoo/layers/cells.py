"""Recurrent cells: one time step each, written as the textbook equations.

Every cell splits its step in two halves:

* ``project_inputs(x)`` -- the part that depends on the input only (``x W + b``).
  It works on one step ``[batch, features]`` or on a whole sequence
  ``[batch, time, features]``, so a sequence layer can compute it for all steps
  in one large matrix multiplication (see ``zoo.layers.recurrent``).
* ``recurrent_step(projected_x_t, states)`` -- the part that must run step by step.

``call(x_t, states)`` is the two halves composed, so a cell is also a plain Keras
RNN cell (``keras.layers.RNN(zoo.layers.LSTMCell(8))`` works).

The equations of a step are written once, in the gate functions below
(``simple_rnn_gates``, ``lstm_gates``, ``gru_reset_after_gates``,
``gru_reset_before_gates``): each returns the new states and the gate activations.
``recurrent_step`` (and so ``call``), the TensorFlow fast kernels of
``zoo.layers.sequence_kernels`` and ``model.inspect`` (``zoo.inspection``) all run
them. They use ``keras.ops`` and operators only, so they work on every backend's
tensors and on plain ``tf.Tensor``s inside the kernels' graphs; ``axis`` is the axis
the gates are concatenated along (-1 here; 0 in the kernels' feature-major layout).

Weights have the names, shapes and gate order of the Keras cells of the same name,
so ``ours.set_weights(keras_cell.get_weights())`` gives the same function.

Under mixed precision (``zoo.precision``) a cell's matrix products run in bfloat16 and
everything else in float32 (``state_dtype``): the products' results, the biases (read
uncast), the gates' arithmetic and the states, whatever dtype they come in (``__call__``
gives them back in that dtype: the zoo's loops carry float32); a bfloat16 state would
lose every update smaller than 2^-8 of it. In float32 every cast is a no-op.
"""

import keras
from keras import activations, constraints, initializers, ops, regularizers

# Keras' own mixin: it creates one dropout mask per sequence and caches it for all
# steps, and keras.layers.RNN resets it between batches only for cells that have it.
from keras.src.layers.rnn.dropout_rnn_cell import DropoutRNNCell

from zoo import backend as zoo_backend
from zoo import precision
from zoo.layers import blocks


def simple_rnn_gates(pre_activation, activation):
    """The vanilla RNN step, ``h_t = activation(x_t W + b + h_{t-1} U)``, from the
    pre-activation; it has no gates. Returns ``([h_t], {})``."""
    h = pre_activation if activation is None else activation(pre_activation)
    return [h], {}


def lstm_gates(pre_activation, c_prev, activation, recurrent_activation, axis=-1):
    """The LSTM step from ``x_t W + b + h_{t-1} U`` (gates i, f, c~, o along ``axis``).

    Returns ``([h_t, c_t], {"i", "f", "c~", "o"})``.
    """
    z_i, z_f, z_c, z_o = ops.split(pre_activation, 4, axis=axis)
    i = recurrent_activation(z_i)
    f = recurrent_activation(z_f)
    o = recurrent_activation(z_o)
    candidate = activation(z_c)
    c = f * c_prev + i * candidate
    h = o * activation(c)
    return [h, c], {"i": i, "f": f, "c~": candidate, "o": o}


def gru_reset_after_gates(projected, recurrent, h_prev, activation, recurrent_activation,
                          axis=-1):
    """The reset-after GRU step from ``x_t W + b`` and ``h_{t-1} U + b'`` (z, r, h along
    ``axis``).

    Returns ``([h_t], {"z", "r", "n", "recurrent_n"})``: n is the candidate state and
    ``recurrent_n`` its recurrent half ``U_h h_{t-1} + b'_h``, which the fast kernel's
    backward pass keeps.
    """
    x_z, x_r, x_h = ops.split(projected, 3, axis=axis)
    rec_z, rec_r, rec_h = ops.split(recurrent, 3, axis=axis)
    z = recurrent_activation(x_z + rec_z)
    r = recurrent_activation(x_r + rec_r)
    n = activation(x_h + r * rec_h)
    h = z * h_prev + (1 - z) * n
    return [h], {"z": z, "r": r, "n": n, "recurrent_n": rec_h}


def gru_reset_before_gates(projected, recurrent_zr, h_prev, recurrent_input, candidate_product,
                           activation, recurrent_activation, axis=-1):
    """The reset-before GRU step (Cho et al. 2014) from ``x_t W + b`` (z, r, h along
    ``axis``) and ``h_{t-1} U_zr`` (z, r).

    ``recurrent_input`` is ``h_{t-1}`` as the recurrent products read it (after
    recurrent dropout); ``candidate_product(v)`` is ``v U_h``: the reset gate acts
    between the two products, so the step needs the second one.
    Returns ``([h_t], {"z", "r", "n"})``, n the candidate state.
    """
    x_z, x_r, x_h = ops.split(projected, 3, axis=axis)
    rec_z, rec_r = ops.split(recurrent_zr, 2, axis=axis)
    z = recurrent_activation(x_z + rec_z)
    r = recurrent_activation(x_r + rec_r)
    n = activation(x_h + candidate_product(r * recurrent_input))
    h = z * h_prev + (1 - z) * n
    return [h], {"z": z, "r": r, "n": n}


def _dropout_mask_like(mask, inputs):
    """Broadcast a per-sequence ``[batch, features]`` mask over a time axis."""
    if len(inputs.shape) == 3:
        return ops.expand_dims(mask, 1)
    return mask


class _RecurrentCell(keras.layers.Layer, DropoutRNNCell):
    """Shared plumbing: arguments, weights, dropout and serialization.

    Subclasses set ``num_gates`` and implement ``recurrent_step``.
    """

    num_gates = 1

    def __init__(
        self,
        units,
        activation="tanh",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        **kwargs,
    ):
        if not isinstance(units, int) or isinstance(units, bool) or units <= 0:
            raise ValueError(
                f"`units` must be a positive integer; received units={units!r}."
            )
        # Accepted for drop-in compatibility with the Keras cells; the zoo cells
        # always compute all gates with one matrix multiplication.
        self.implementation = kwargs.pop("implementation", 2)
        super().__init__(**kwargs)
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = min(1.0, max(0.0, dropout))
        self.recurrent_dropout = min(1.0, max(0.0, recurrent_dropout))
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed=seed)
        self.state_size = self.units
        self.output_size = self.units

    # -- weights -----------------------------------------------------------------
    def _bias_shape(self):
        return (self.num_gates * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def build(self, input_shape):
        input_dim = input_shape[-1]
        self.kernel = self.add_weight(
            shape=(input_dim, self.num_gates * self.units),
            name="kernel",
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.num_gates * self.units),
            name="recurrent_kernel",
            initializer=self.recurrent_initializer,
            regularizer=self.recurrent_regularizer,
            constraint=self.recurrent_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                shape=self._bias_shape(),
                name="bias",
                initializer=self._bias_initializer(),
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
                autocast=False,  # added to the float32 results of the products
            )

    # -- the step ----------------------------------------------------------------
    @property
    def state_dtype(self):
        """The dtype of the states and the gates' arithmetic (``zoo.precision``)."""
        return precision.state_dtype(self)

    @property
    def input_dtype(self):
        """What ``__call__`` casts the floating arguments to: the states among them, so
        ``state_dtype`` (in bfloat16 under mixed precision a state would lose its small
        updates); ``project_inputs`` casts the inputs to the compute dtype itself."""
        return self.state_dtype

    def _states(self, states):
        """``states`` (a list, or one tensor) in ``state_dtype``."""
        if isinstance(states, (list, tuple)):
            return [precision.cast(state, self.state_dtype) for state in states]
        return precision.cast(states, self.state_dtype)

    def _input_bias(self):
        return self.bias

    def project_inputs(self, inputs, training=False, time_major=False):
        """``x W + b`` for one step ``[batch, in]`` or a sequence.

        A sequence is ``[batch, time, in]``, or ``[time, batch, in]`` with
        ``time_major=True``; the dropout mask is the same at every step.
        """
        inputs = precision.cast(inputs, self.compute_dtype)
        if training and 0.0 < self.dropout < 1.0:
            mask = self.get_dropout_mask(inputs)
            inputs = inputs * (mask if time_major else _dropout_mask_like(mask, inputs))
        if zoo_backend.is_tensorflow() and len(inputs.shape) == 2:
            kernel = precision.cast(ops.convert_to_tensor(self.kernel), self.compute_dtype)
            projected = precision.cast(blocks.row_product(inputs, kernel), self.state_dtype)
        else:
            projected = precision.product(self, inputs, self.kernel)
        if self.use_bias:
            projected = projected + self._input_bias()
        return projected

    def _dropped_recurrent_input(self, h_tm1, training):
        if training and 0.0 < self.recurrent_dropout < 1.0:
            mask = self.get_recurrent_dropout_mask(h_tm1)
            return h_tm1 * precision.cast(mask, h_tm1.dtype)
        return h_tm1

    def recurrent_step(self, projected_inputs, states, training=False):
        """``(h_t, new states)`` from ``x_t W + b`` and the states, as ``call``."""
        new_states, _ = self.step_with_gates(projected_inputs, states, training=training)
        if isinstance(states, (list, tuple)):
            return new_states[0], new_states
        return new_states[0], new_states[0]

    def step_with_gates(self, projected_inputs, states, training=False):
        """``(new states [h_t, ...], gate activations by name)``: the step itself, which
        ``recurrent_step`` runs; ``gate_names`` lists the gates a model's
        ``inspect`` reports."""
        raise NotImplementedError

    def _standard_activations(self):
        recurrent = getattr(self, "recurrent_activation", activations.sigmoid)
        return (
            activations.serialize(self.activation) == "tanh"
            and activations.serialize(recurrent) == "sigmoid"
        )

    def fused_recurrence(self):
        """``(kind, recurrent_bias)`` for ``zoo.layers.sequence_kernels``, or None.

        The hand-derived backward pass exists for the textbook activations only.
        """
        if not self._standard_activations():
            return None
        return self.fused_kind, None

    def call(self, inputs, states, training=False):
        return self.recurrent_step(
            self.project_inputs(inputs, training), states, training=training
        )

    def __call__(self, inputs, states, **kwargs):
        output, new_states = super().__call__(inputs, states, **kwargs)
        if self.compute_dtype == self.variable_dtype:
            return output, new_states
        # Mixed precision: each state comes back in the dtype it was given in. The zoo's
        # loops give float32 (``state_dtype``); another loop, as ``keras.layers.RNN``'s,
        # starts from the compute dtype, and its carry must keep its type (JAX's scan).
        given = [keras.backend.standardize_dtype(s.dtype) for s in keras.tree.flatten(states)]
        flat = keras.tree.flatten(new_states)
        if len(given) != len(flat):
            return output, new_states
        return output, keras.tree.pack_sequence_as(
            new_states, [precision.cast(s, dtype) for s, dtype in zip(flat, given)])

    def get_initial_state(self, batch_size=None):
        sizes = self.state_size if isinstance(self.state_size, list) else [self.state_size]
        return [ops.zeros((batch_size, size), dtype=self.state_dtype) for size in sizes]

    def get_config(self):
        config = {
            "units": self.units,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
        }
        return {**super().get_config(), **config}


def _single_state(states):
    return states[0] if isinstance(states, (list, tuple)) else states


@keras.saving.register_keras_serializable(package="zoo")
class SimpleRNNCell(_RecurrentCell):
    """The vanilla (Elman) recurrent cell, one time step.

        h_t = tanh(W x_t + U h_{t-1} + b)

    Weights: ``kernel`` W ``[input_dim, units]``, ``recurrent_kernel`` U
    ``[units, units]``, ``bias`` b ``[units]``, as ``keras.layers.SimpleRNNCell``.

    Args:
        units: size of the hidden state h.
        activation: the nonlinearity (default ``tanh``); ``None`` for linear.
        dropout, recurrent_dropout: fraction of x and of h_{t-1} dropped during
            training; one mask per sequence, reused at every step (variational
            dropout, as Keras).
        The initializer, regularizer and constraint arguments, ``use_bias`` and
        ``seed`` are those of ``keras.layers.SimpleRNNCell``.

    Call arguments:
        inputs: ``[batch, input_dim]``; states: ``[h_{t-1}]``; training: bool.
        Returns ``(h_t, [h_t])``.
    """

    fused_kind = "simple_rnn"
    kind = "rnn"
    state_names, gate_names = ("h",), ()

    def step_with_gates(self, projected_inputs, states, training=False):
        recurrent_input = self._dropped_recurrent_input(self._states(_single_state(states)),
                                                        training)
        return simple_rnn_gates(
            precision.cast(projected_inputs, self.state_dtype)
            + precision.product(self, recurrent_input, self.recurrent_kernel),
            self.activation)


@keras.saving.register_keras_serializable(package="zoo")
class LSTMCell(_RecurrentCell):
    """Long short-term memory cell (Hochreiter & Schmidhuber 1997; Gers et al. 2000), one step.

        i_t = sigmoid(W_i x_t + U_i h_{t-1} + b_i)        input gate
        f_t = sigmoid(W_f x_t + U_f h_{t-1} + b_f)        forget gate
        g_t = tanh(W_c x_t + U_c h_{t-1} + b_c)           candidate cell
        o_t = sigmoid(W_o x_t + U_o h_{t-1} + b_o)        output gate
        c_t = f_t * c_{t-1} + i_t * g_t                   additive cell state
        h_t = o_t * tanh(c_t)

    Weights as ``keras.layers.LSTMCell``: ``kernel`` ``[input_dim, 4 units]``,
    ``recurrent_kernel`` ``[units, 4 units]``, ``bias`` ``[4 units]``, gates
    concatenated in the order i, f, c, o. ``unit_forget_bias=True`` starts b_f at 1
    (Jozefowicz et al. 2015), so the cell remembers by default.

    Args:
        units: size of h and c.
        activation: the nonlinearity of g and of the output (default ``tanh``).
        recurrent_activation: the gate nonlinearity (default ``sigmoid``).
        unit_forget_bias: add 1 to the forget-gate bias at initialisation.
        Everything else as ``keras.layers.LSTMCell``; ``implementation`` is accepted
        and ignored (all gates are always one matrix multiplication).

    Call arguments:
        inputs: ``[batch, input_dim]``; states: ``[h_{t-1}, c_{t-1}]``.
        Returns ``(h_t, [h_t, c_t])``.
    """

    num_gates = 4
    fused_kind = "lstm"
    kind = "lstm"
    state_names, gate_names = ("h", "c"), ("i", "f", "c~", "o")

    def __init__(self, units, recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias
        self.state_size = [self.units, self.units]

    def _bias_initializer(self):
        if not self.unit_forget_bias:
            return self.bias_initializer
        base, units = self.bias_initializer, self.units

        def forget_gate_ones(_, *args, **kwargs):
            return ops.concatenate(
                [
                    base((units,), *args, **kwargs),
                    initializers.get("ones")((units,), *args, **kwargs),
                    base((2 * units,), *args, **kwargs),
                ]
            )

        return forget_gate_ones

    def step_with_gates(self, projected_inputs, states, training=False):
        h_tm1, c_tm1 = self._states(states[:2])
        recurrent_input = self._dropped_recurrent_input(h_tm1, training)
        return lstm_gates(
            precision.cast(projected_inputs, self.state_dtype)
            + precision.product(self, recurrent_input, self.recurrent_kernel),
            c_tm1, self.activation, self.recurrent_activation)

    def get_config(self):
        return {
            **super().get_config(),
            "recurrent_activation": activations.serialize(self.recurrent_activation),
            "unit_forget_bias": self.unit_forget_bias,
        }


@keras.saving.register_keras_serializable(package="zoo")
class GRUCell(_RecurrentCell):
    """Gated recurrent unit (Cho et al. 2014), one step.

        z_t = sigmoid(W_z x_t + U_z h_{t-1} + b_z)                update gate
        r_t = sigmoid(W_r x_t + U_r h_{t-1} + b_r)                reset gate
        reset_after=False (Cho 2014):
            n_t = tanh(W_h x_t + U_h (r_t * h_{t-1}) + b_h)
        reset_after=True (default; the cuDNN variant):
            n_t = tanh(W_h x_t + b_h + r_t * (U_h h_{t-1} + b'_h))
        h_t = z_t * h_{t-1} + (1 - z_t) * n_t

    Weights as ``keras.layers.GRUCell``: ``kernel`` ``[input_dim, 3 units]`` and
    ``recurrent_kernel`` ``[units, 3 units]`` with gates in the order z, r, h;
    ``bias`` is ``[3 units]``, or ``[2, 3 units]`` (input bias, recurrent bias)
    when ``reset_after=True``.

    Args:
        units: size of h.
        reset_after: where the reset gate is applied (see above).
        Everything else as ``keras.layers.GRUCell``.

    Call arguments:
        inputs: ``[batch, input_dim]``; states: ``[h_{t-1}]``.
        Returns ``(h_t, [h_t])``.
    """

    num_gates = 3
    kind = "gru"
    state_names, gate_names = ("h",), ("z", "r", "n")

    def __init__(self, units, recurrent_activation="sigmoid", reset_after=True, **kwargs):
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = reset_after

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self):
        return self.bias[0] if self.reset_after else self.bias

    def fused_recurrence(self):
        if not self._standard_activations():
            return None
        if self.reset_after:
            return "gru_reset_after", (self.bias[1] if self.use_bias else None)
        return "gru_reset_before", None

    def step_with_gates(self, projected_inputs, states, training=False):
        h_tm1 = self._states(_single_state(states))
        projected_inputs = precision.cast(projected_inputs, self.state_dtype)
        recurrent_input = self._dropped_recurrent_input(h_tm1, training)
        nonlinearities = (self.activation, self.recurrent_activation)
        if self.reset_after:
            recurrent = precision.product(self, recurrent_input, self.recurrent_kernel)
            if self.use_bias:
                recurrent = recurrent + self.bias[1]
            return gru_reset_after_gates(projected_inputs, recurrent, h_tm1, *nonlinearities)
        units = self.units
        return gru_reset_before_gates(
            projected_inputs,
            precision.product(self, recurrent_input, self.recurrent_kernel[:, : 2 * units]),
            h_tm1,
            recurrent_input,
            lambda reset_input: precision.product(self, reset_input,
                                                  self.recurrent_kernel[:, 2 * units :]),
            *nonlinearities,
        )

    def get_config(self):
        return {
            **super().get_config(),
            "recurrent_activation": activations.serialize(self.recurrent_activation),
            "reset_after": self.reset_after,
        }
