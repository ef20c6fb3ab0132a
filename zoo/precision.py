"""Training precision: float32, or Keras' mixed precision with bfloat16.

``mixed_bfloat16`` is Keras' own dtype policy (``keras.mixed_precision.DTypePolicy``):
the layers keep float32 variables (the master weights the optimizer updates) and
compute in bfloat16, each variable cast where a layer reads it (Keras' autocast scope);
the loss is float32 (Keras' losses compute in ``floatx``). bfloat16 has float32's range,
so no loss scaling is needed (Keras wraps the optimizer in a ``LossScaleOptimizer`` for
``mixed_float16`` only).

Recurrent layers go further than Keras' own (``state_dtype``, ``product``): only their
matrix products run in bfloat16; the states they carry from step to step and the gates'
element-wise arithmetic stay float32, as is usual for RNNs in mixed precision. A GRU's
``h = z h + (1 - z) n`` with z near 1 moves h by less than bfloat16's step (2^-8 of h),
so a bfloat16 state would lose those updates, step after step.

A model is built under the policy (``policy``), or a loaded one copied into it
(``copy_in``), for training only: what ships is float32 (``copy_in(model, "float32")``),
as every preset loads.
"""

import contextlib

# (Keras is imported where it is used: recipes read this module's names without it.)
PRECISIONS = ("float32", "mixed_bfloat16")


def check(precision, where="precision"):
    """``precision`` if it is one of ``PRECISIONS``, else a ValueError naming it."""
    if precision not in PRECISIONS:
        raise ValueError(f"{where} must be one of {', '.join(PRECISIONS)}; received "
                         f"{precision!r}.")
    return precision


@contextlib.contextmanager
def policy(precision):
    """Keras' global dtype policy set to ``precision`` while the block runs (the layers
    made inside take it), and the one before restored after."""
    import keras

    check(precision)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(precision)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def autocasting(layer):
    """The autocast scope ``Layer.__call__`` opens for a mixed ``layer`` (its variables
    read in its compute dtype), or no scope for one that is not mixed."""
    if layer.compute_dtype == layer.variable_dtype:
        return contextlib.nullcontext()
    from keras.src.backend import AutocastScope

    return AutocastScope(layer.compute_dtype)


def cast(x, dtype):
    """``x`` in ``dtype``; ``x`` itself where it is in ``dtype`` already, so that a float32
    model's computation (and a graph traced or exported from it) has no added step."""
    from keras import backend, ops

    if backend.standardize_dtype(x.dtype) == backend.standardize_dtype(dtype):
        return x
    return ops.cast(x, dtype)


def state_dtype(layer):
    """The dtype a recurrent ``layer`` keeps its states and its gates' element-wise
    arithmetic in: its variables' (float32 under ``mixed_bfloat16``; under float32 the
    compute dtype too, and every cast to it does nothing)."""
    return layer.variable_dtype


def product(layer, x, weight):
    """``x weight`` as a recurrent ``layer`` (or an additive attention) computes it: both
    cast to its compute dtype (bfloat16 under mixed precision: the products are where its
    speed is), the result in ``state_dtype`` (what the bias, the gates and the states, or
    the additive score, are added in)."""
    from keras import ops

    compute = layer.compute_dtype
    return cast(ops.matmul(cast(x, compute), cast(weight, compute)), state_dtype(layer))


class StatelessAutocast:
    """A model mixin: ``stateless_call`` (JAX's training and evaluation steps) runs
    ``call`` directly, without the autocast scope ``__call__`` opens, so the variables a
    model reads itself, not through a layer's call (a tied output embedding, a decoder
    cell's kernels in a loop), would stay float32 and promote the bfloat16 around them
    to float32. This opens that scope there too."""

    def stateless_call(self, *args, **kwargs):
        with autocasting(self):
            return super().stateless_call(*args, **kwargs)


def copy_in(model, precision):
    """``model`` itself if it computes in ``precision`` already, else the same model
    (config, weights, text pipeline) built under that policy: ``"mixed_bfloat16"`` to
    train a loaded preset in mixed precision, ``"float32"`` for what a preset saves and
    loads (``presets.save`` saves a mixed model's float32 copy)."""
    check(precision)
    if model.dtype_policy.name == precision:
        return model
    with policy(precision):
        copy = type(model).from_config({**model.get_config(), "dtype": precision})
    copy.set_weights(model.get_weights())  # float32 both: the master weights as they are
    if getattr(model, "preprocessor", None) is not None:
        copy.set_preprocessor(model.preprocessor)
    return copy
