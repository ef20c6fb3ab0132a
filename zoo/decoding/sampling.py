"""Drawing tokens: ``sample`` (temperature, top-k, top-p) with the random numbers of
``counter_uniform``, a hash of (seed, position, row) in integer ops: the same seed gives
the same text on every backend and runtime, where ``keras.random`` and TensorFlow's
stateless ops each have streams of their own."""

from keras import ops

from zoo import backend
from zoo.decoding.loop import int_tensor

# A temperature under this decodes greedily. Dividing by a smaller one changes nothing
# but exact ties, and a float32 subnormal (under 1.2e-38) reads as 0 where denormals are
# flushed (TensorFlow's and XLA's CPU kernels) and as itself elsewhere (PyTorch): without
# this floor, the same temperature was greedy in one runtime and a draw between tied
# tokens in another.
GREEDY_BELOW = 1e-6


def argmax(logits):
    """``[B]`` int32: the most probable token of each row."""
    if backend.is_tensorflow():
        import tensorflow as tf

        # keras.ops.argmax on TensorFlow first tests sign bits (a BitwiseAnd, which
        # TFLite's builtin ops lack) to order -0.0 below 0.0: no concern for logits.
        return tf.argmax(logits, axis=-1, output_type=tf.int32)
    return ops.cast(ops.argmax(logits, axis=-1), "int32")


def _signed(constant):
    """A 32-bit constant as the int32 with the same bits."""
    return constant - (1 << 32) if constant >= 1 << 31 else constant


def _shift_right(x, bits):
    """Logical shift of int32 bits (int32 ``>>`` is arithmetic: mask the sign copies)."""
    return ops.bitwise_and(ops.right_shift(x, bits), (1 << (32 - bits)) - 1)


def _mix(x):
    """lowbias32 (Chris Wellons' integer hash): every output bit depends on every input
    bit. int32 products wrap modulo 2**32 on every backend, as uint32 ones would."""
    x = ops.bitwise_xor(x, _shift_right(x, 16))
    x = x * _signed(0x7FEB352D)
    x = ops.bitwise_xor(x, _shift_right(x, 15))
    x = x * _signed(0x846CA68B)
    return ops.bitwise_xor(x, _shift_right(x, 16))


def counter_uniform(seed, position, rows, row_ids=None):
    """``[rows]`` float32 draws in [0, 1), a pure function of (seed, position, row); the
    rows are 0..rows-1, or ``row_ids``.

    A counter-based source (the idea of Philox, in a much smaller hash): no state to
    carry through a loop, and the same numbers in Python, a SavedModel, a TFLite app
    and on every Keras backend.
    """
    row = ops.arange(rows, dtype="int32") if row_ids is None else ops.cast(row_ids, "int32")
    # As [1] arrays, not scalars: numpy (Keras' numpy backend) warns when a scalar
    # product wraps, and here every product is meant to.
    return _uniform(ops.reshape(int_tensor(seed), (1,)), ops.reshape(int_tensor(position), (1,)),
                    row)


def step_uniforms(seed, steps, row):
    """``[steps]``: the draws ``counter_uniform`` gives row ``row`` at positions
    0..steps-1 (what a runtime without the hash's integer ops is fed)."""
    return _uniform(ops.reshape(int_tensor(seed), (1,)), ops.arange(steps, dtype="int32"),
                    ops.reshape(int_tensor(row), (1,)))


def _uniform(seed, position, row):
    """The hash of (seed, position, row), broadcast element-wise, as floats in [0, 1)."""
    key = _mix(ops.bitwise_xor(seed, _mix(position * _signed(0x9E3779B9))))
    bits = _mix(ops.bitwise_xor(key, _mix(row + _signed(0x632BE5AB))))
    # The top 24 bits: every float32 in [0, 1) with that spacing is exact.
    return ops.cast(_shift_right(bits, 8), "float32") / float(1 << 24)


def sample(logits, temperature, seed, position, top_k=0, top_p=1.0, row_ids=None,
           uniform=None):
    """Ids ``[B]`` drawn from ``softmax(logits / temperature)``; argmax at a temperature
    under ``GREEDY_BELOW`` (0 among them).

    ``top_k`` (0: off) keeps the k most probable tokens, ``top_p`` (1: off) the
    smallest set of most probable tokens whose probabilities reach p (nucleus sampling,
    Holtzman et al. 2019); with both, a token must pass both; a token tied with the
    last one kept is kept too. ``top_k=1`` is greedy. Inverse-CDF sampling with
    ``counter_uniform(seed, position, B, row_ids)``, or the ``uniform [B]`` draws given
    (a TFLite file is fed them: its builtin ops lack the hash's). Every argument may be
    a tensor.
    """
    logits = ops.cast(logits, "float32")
    greedy = argmax(logits)
    temperature = ops.cast(temperature, "float32")
    scaled = logits / ops.maximum(temperature, GREEDY_BELOW)
    probabilities = ops.softmax(scaled, axis=-1)
    probabilities = ops.where(probabilities >= _kept_from(probabilities, top_k, top_p),
                              probabilities, 0.0)
    cumulative = ops.cumsum(probabilities, axis=-1)
    if uniform is None:
        uniform = counter_uniform(seed, position, ops.shape(logits)[0], row_ids)
    threshold = uniform * cumulative[:, -1]
    # The first token whose cumulative probability passes the threshold (tokens left out
    # add nothing to the sum, so they are never the first).
    drawn = ops.sum(ops.cast(cumulative <= ops.expand_dims(threshold, -1), "int32"), axis=-1)
    drawn = ops.minimum(drawn, ops.shape(logits)[-1] - 1)
    return ops.where(temperature >= GREEDY_BELOW, drawn, greedy)


def _kept_from(probabilities, top_k, top_p):
    """``[B, 1]``: the smallest probability top-k and top-p keep (0 when both are off)."""
    descending = ops.flip(ops.sort(probabilities, axis=-1), axis=-1)
    vocab_size = ops.shape(probabilities)[-1]
    top_k = int_tensor(top_k)
    first = ops.zeros_like(descending[:, :1], "int32")
    kth = ops.take_along_axis(descending, first + ops.clip(top_k, 1, vocab_size) - 1, axis=-1)
    top_p = ops.cast(top_p, "float32")
    # The smallest prefix reaching p: the tokens whose predecessors sum to less than p.
    in_nucleus = ops.sum(ops.cast(ops.cumsum(descending, axis=-1) - descending < top_p, "int32"),
                         axis=-1, keepdims=True)
    pth = ops.take_along_axis(descending, ops.maximum(in_nucleus, 1) - 1, axis=-1)
    return ops.maximum(ops.where(top_k > 0, kth, 0.0), ops.where(top_p < 1.0, pth, 0.0))
