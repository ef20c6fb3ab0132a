"""Sequence layers: run a zoo cell over time.

Drop-in replacements for ``keras.layers.SimpleRNN``, ``LSTM`` and ``GRU``: the same
constructor arguments, weights, masking, ``go_backwards``, ``initial_state``,
``return_sequences``/``return_state``, ``stateful``, dropout, and
``keras.layers.Bidirectional`` support. ``LSTM`` and ``GRU`` subclass Keras' ``LSTM``
and ``GRU`` (with the zoo's cells and loops): code that recognises Keras' layers by
class, as ``Bidirectional``'s fused cuDNN path does, takes the zoo's too. All keep
``keras.layers.RNN``'s loop (and so its exact masking semantics); what differs is the
work per step:

* the input half of every gate, ``x_t W + b``, is computed for all time steps in
  one ``[batch * time, in] x [in, gates * units]`` matrix multiplication before the
  loop, and its gradient is one matmul too, instead of one small one per step;
* inside the loop only ``h_{t-1} U`` and the elementwise gate equations remain.

On a GPU, ``LSTM`` and ``GRU`` use cuDNN under the same conditions as Keras
(``use_cudnn="auto"``), in float32 (under mixed precision the zoo's loops keep the states
float32, which cuDNN's would not: ``_try_cudnn``). On TensorFlow the whole recurrence runs in
``zoo.layers.sequence_kernels`` (hand-written gradient, transposed inference
layout); on PyTorch the projected inputs go through Keras' own recurrent loop
(``backend.rnn``); on JAX that loop runs the cell step by step, as
``keras.layers.RNN`` does (XLA ran it faster than the hoisted projection).
"""

import functools
import inspect

import keras
from keras import ops, regularizers
from keras.src import backend, tree

from zoo import backend as zoo_backend
from zoo import precision
from zoo.layers.cells import GRUCell, LSTMCell, SimpleRNNCell

# Constructor arguments that belong to keras.layers.RNN / Layer, not to the cell.
_CELL_SHARED_LAYER_ARGS = ("dtype", "trainable")


@functools.cache
def _cell_argument_names(cell_class):
    names = set()
    for klass in cell_class.__mro__:
        if klass is keras.layers.Layer:
            break
        if "__init__" in vars(klass):
            signature = inspect.signature(klass.__init__)
            names.update(
                name
                for name, parameter in signature.parameters.items()
                if parameter.kind is parameter.POSITIONAL_OR_KEYWORD and name != "self"
            )
    return names | {"implementation"}


class _ProjectedInputRNN(keras.layers.RNN):
    """An RNN over a zoo cell that hoists the input projection out of the loop."""

    cell_class = None
    cell_name = None
    cudnn_function = None  # backend.lstm / backend.gru, where cuDNN applies

    def __init__(self, units, activity_regularizer=None, **kwargs):
        cell_arg_names = _cell_argument_names(self.cell_class)
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in cell_arg_names}
        for shared in _CELL_SHARED_LAYER_ARGS:
            if shared in kwargs:
                cell_kwargs[shared] = kwargs[shared]
        # As Keras' SimpleRNN, the zoo's takes no use_cudnn (Keras refuses it as an
        # unknown argument); LSTM and GRU do.
        use_cudnn = kwargs.pop("use_cudnn", "auto") if self.cudnn_function else None
        cell = self.cell_class(units, name=self.cell_name, **cell_kwargs)
        # keras.layers.RNN's constructor, not that of Keras' LSTM or GRU (the zoo's
        # subclass those, for isinstance checks, but build their own cell).
        keras.layers.RNN.__init__(
            self, cell, activity_regularizer=activity_regularizer, **kwargs)
        self.input_spec = keras.layers.InputSpec(ndim=3)
        if self.cudnn_function is None:
            return
        if use_cudnn not in ("auto", True, False):
            raise ValueError(
                "`use_cudnn` must be one of 'auto', True, False; "
                f"received use_cudnn={use_cudnn!r}."
            )
        self.use_cudnn = use_cudnn

    def __getattr__(self, name):
        # The Keras layers expose their cell's hyper-parameters (layer.units,
        # layer.dropout, ...); so do these. Only reached for missing attributes. On
        # PyTorch a layer is a torch.nn.Module, whose __getattr__ finds sub-layers
        # (the cell among them): ask it first.
        parent = getattr(super(), "__getattr__", None)
        if parent is not None:
            try:
                return parent(name)
            except AttributeError:
                pass
        if name != "cell" and name in _cell_argument_names(self.cell_class):
            return getattr(self.cell, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _try_cudnn(self, sequences, initial_state, mask, training):
        if self.cudnn_function is None or self.use_cudnn is False or self.cell.recurrent_dropout:
            return None
        if self.compute_dtype != self.cell.state_dtype:
            # Mixed precision: cuDNN (and Keras' own JAX GRU, which this also reaches)
            # would carry the states in bfloat16, losing their small updates (``cells``);
            # the zoo's loops carry them in float32.
            return None
        if training and self.cell.dropout:
            step_mask = self.cell.get_dropout_mask(sequences[:, 0, :])
            sequences = sequences * ops.expand_dims(step_mask, 1)
        extra = {"reset_after": self.cell.reset_after} if self.cell_class is GRUCell else {}
        try:
            result = self.cudnn_function(
                sequences,
                *initial_state,
                mask,
                kernel=self.cell.kernel,
                recurrent_kernel=self.cell.recurrent_kernel,
                bias=self.cell.bias,
                activation=self.cell.activation,
                recurrent_activation=self.cell.recurrent_activation,
                return_sequences=self.return_sequences,
                go_backwards=self.go_backwards,
                unroll=self.unroll,
                **extra,
            )
        except NotImplementedError:
            if self.use_cudnn is True:
                raise ValueError(
                    "use_cudnn=True was specified, but cuDNN cannot run this layer "
                    "configuration on this machine; use use_cudnn='auto'."
                ) from None
            return None
        self.supports_jit = False
        return result

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if tree.is_nested(mask):
            mask = mask[0]
        # Integer sequences are read as numbers, as Keras' layers read them.
        sequences = ops.cast(sequences, self.compute_dtype)
        cudnn_result = self._try_cudnn(sequences, initial_state, mask, training)
        if cudnn_result is not None:
            return cudnn_result
        # The zoo's loops carry the states in the cell's state dtype (float32 under mixed
        # precision, where ``call`` gave them in bfloat16: ``cells``); ``call`` casts what
        # the layer returns to the compute dtype again.
        initial_state = [precision.cast(state, self.cell.state_dtype) for state in initial_state]
        fused = self._fused_recurrence(training)
        if fused is not None:
            return self._fused_loop(*fused, sequences, initial_state, mask, training)
        if backend.backend() == "jax":
            # XLA ran the whole-sequence input projection slower here than x_t W inside
            # the step, which is how keras.layers.RNN runs the cell (LSTM inference
            # 66 ms against 50 on one core, batch 64 x 50 steps x 256 units).
            # (keras.layers.RNN's loop itself: Keras' LSTM and GRU would try backend.lstm
            # and backend.gru again, which ``_try_cudnn`` tried or, under mixed precision,
            # left out.)
            return keras.layers.RNN.inner_loop(self, sequences, initial_state, mask,
                                               training=training)

        projected = self.cell.project_inputs(sequences, training=training)

        def step(projected_inputs, states):
            output, new_states = self.cell.recurrent_step(
                projected_inputs, states, training=training
            )
            if not tree.is_nested(new_states):
                new_states = [new_states]
            return output, new_states

        return backend.rnn(
            step,
            projected,
            list(initial_state),
            go_backwards=self.go_backwards,
            mask=mask,
            unroll=self.unroll,
            input_length=sequences.shape[1],
            zero_output_for_mask=self.zero_output_for_mask,
            return_all_outputs=self.return_sequences,
        )

    def _fused_recurrence(self, training):
        """The hand-differentiated loop, where it computes exactly what Keras does
        (TensorFlow's while loops and custom gradients: that backend only)."""
        if not zoo_backend.is_tensorflow():
            return None
        if self.unroll or (training and self.cell.recurrent_dropout):
            return None
        return self.cell.fused_recurrence()

    def _fused_loop(self, kind, recurrent_bias, sequences, initial_state, mask, training):
        import tensorflow as tf

        from zoo.layers import sequence_kernels

        time_major = ops.transpose(sequences, (1, 0, 2))
        if mask is not None:
            mask = ops.transpose(mask, (1, 0))
        if self.go_backwards:
            # Keras returns the outputs of a backward layer in processing order.
            time_major = ops.flip(time_major, axis=0)
            mask = None if mask is None else ops.flip(mask, axis=0)
        # Read the variables out here: the loops see plain tensors.
        recurrent_kernel = tf.identity(self.cell.recurrent_kernel)
        recurrent_bias = None if recurrent_bias is None else tf.identity(recurrent_bias)
        if training:
            projected = self.cell.project_inputs(time_major, training=True, time_major=True)
            outputs, last_output, states = sequence_kernels.run_recurrence(
                kind, projected, list(initial_state), recurrent_kernel, recurrent_bias,
                mask=mask, zero_output_for_mask=self.zero_output_for_mask,
            )
        else:
            input_bias = self.cell._input_bias() if self.cell.use_bias else None
            outputs, last_output, states = sequence_kernels.run_inference(
                kind, time_major, tf.identity(self.cell.kernel),
                None if input_bias is None else tf.identity(input_bias),
                recurrent_kernel, recurrent_bias, list(initial_state), mask=mask,
                zero_output_for_mask=self.zero_output_for_mask,
                return_sequences=self.return_sequences,
            )
        if self.return_sequences:
            outputs = ops.transpose(outputs, (1, 0, 2))
        else:
            outputs = ops.expand_dims(last_output, 1)
        return last_output, outputs, states

    def call(self, sequences, initial_state=None, mask=None, training=False):
        return super().call(
            sequences, mask=mask, training=training, initial_state=initial_state
        )

    def get_config(self):
        config = keras.layers.RNN.get_config(self)
        del config["cell"]
        cell_config = self.cell.get_config()
        for layer_key in ("name", "trainable", "dtype"):
            cell_config.pop(layer_key, None)
        return {
            **config,
            **cell_config,
            "activity_regularizer": regularizers.serialize(self.activity_regularizer),
            **({"use_cudnn": self.use_cudnn} if self.cudnn_function else {}),
        }

    @classmethod
    def from_config(cls, config):
        if cls.cudnn_function is None:  # a SimpleRNN config written when it took use_cudnn
            config = {k: v for k, v in config.items() if k != "use_cudnn"}
        return cls(**config)


@keras.saving.register_keras_serializable(package="zoo")
class SimpleRNN(_ProjectedInputRNN):
    """Fully connected RNN, ``h_t = tanh(W x_t + U h_{t-1} + b)`` over a sequence.

    Drop-in for ``keras.layers.SimpleRNN``: takes all of its arguments (those of
    ``zoo.layers.SimpleRNNCell`` plus ``return_sequences``, ``return_state``,
    ``go_backwards``, ``stateful``, ``unroll``, ``activity_regularizer``).

    Call arguments:
        sequences: ``[batch, time, features]``.
        initial_state: optional ``[h_0]``.
        mask: optional boolean ``[batch, time]``; a masked step keeps the previous
            state (and output), as in Keras.
        training: enables dropout.
    """

    cell_class = SimpleRNNCell
    cell_name = "simple_rnn_cell"


@keras.saving.register_keras_serializable(package="zoo")
class LSTM(_ProjectedInputRNN, keras.layers.LSTM):
    """Long short-term memory layer (``zoo.layers.LSTMCell`` over time).

    Drop-in for ``keras.layers.LSTM``: same arguments and weights, same results.
    ``initial_state`` is ``[h_0, c_0]``; with ``return_state=True`` the layer
    returns ``output, h_T, c_T``.

    Example:
        >>> layer = zoo.layers.LSTM(32, return_sequences=True)
        >>> layer(np.zeros((4, 10, 8), "float32")).shape
        (4, 10, 32)
    """

    cell_class = LSTMCell
    cell_name = "lstm_cell"
    cudnn_function = staticmethod(backend.lstm)


@keras.saving.register_keras_serializable(package="zoo")
class GRU(_ProjectedInputRNN, keras.layers.GRU):
    """Gated recurrent unit layer (``zoo.layers.GRUCell`` over time).

    Drop-in for ``keras.layers.GRU`` (both ``reset_after`` variants): same
    arguments and weights, same results. ``initial_state`` is ``[h_0]``.
    """

    cell_class = GRUCell
    cell_name = "gru_cell"
    cudnn_function = staticmethod(backend.gru)
