"""Greedy search, beam search and sampling over a step function, on every Keras backend.

A step function maps ``(previous_tokens [N], state) -> (logits [N, V], new_state,
attention [N, S] or None)``; ``state`` is any nest of tensors whose first dimension
is N. That is all decoding needs from a model. Greedy search calls it with the B
sentences (on TensorFlow, with the N <= B still being translated); beam search with
N = B * K (each sentence's K beams on consecutive rows).

The searches are written with ``keras.ops`` (``ops.while_loop``, as keras-hub's
samplers are) and keep their outputs in fixed ``[batch, (beam,) max_length]``
buffers; they stop early once every sequence has produced ``[END]``, and pad it
with ``[PAD]`` (id 0) after it. With a static batch of one every loop shape is
static: that is what converts to TFLite builtin ops.

Random draws come from ``counter_uniform``, a hash of (seed, position, row) in
integer ops: the same seed gives the same text on every backend and runtime, where
``keras.random`` and TensorFlow's stateless ops each have streams of their own.
"""

import keras
from keras import ops

from zoo import backend
from zoo.text.vocabulary import END_ID, PAD_ID, START_ID

_NEG_INF = -1e9  # finite, so that scores never become NaN


def _int(value):
    return ops.convert_to_tensor(value, "int32")


def write_token(buffer, position, tokens):
    """buffer[:, ..., position] = tokens, for an int buffer ``[..., L]``."""
    hit = ops.equal(ops.arange(ops.shape(buffer)[-1], dtype="int32"), position)
    return ops.where(hit, ops.expand_dims(tokens, -1), buffer)


def _write_row(buffer, position, rows):
    """buffer[..., position, :] = rows, for a float buffer ``[..., L, S]``."""
    hit = ops.reshape(ops.equal(ops.arange(ops.shape(buffer)[-2], dtype="int32"), position),
                      (-1, 1))
    return ops.where(hit, ops.expand_dims(rows, -2), buffer)


def _argmax(logits):
    if backend.is_tensorflow():
        import tensorflow as tf

        # keras.ops.argmax on TensorFlow first tests sign bits (a BitwiseAnd, which
        # TFLite's builtin ops lack) to order -0.0 below 0.0: no concern for logits.
        return tf.argmax(logits, axis=-1, output_type=tf.int32)
    return ops.cast(ops.argmax(logits, axis=-1), "int32")


def _attention_buffer(track_attention, shape):
    # The loops carry a fixed structure on every backend: an empty placeholder
    # stands for "no attention".
    return ops.zeros(shape if track_attention else (0,), "float32")


def greedy_search(step_fn, state, batch_size, max_length, source_length=None,
                  return_attention=True):
    """Most probable token at every step.

    Returns ``(tokens [B, max_length] int32, attention [B, max_length, S] or None)``.
    ``source_length`` (S) is needed only when the step function returns attention;
    ``return_attention=False`` skips collecting it (faster, smaller exports).

    On TensorFlow, a batch whose size is not a static 1 drops each sentence from the
    loop once it has produced ``[END]`` (its rows of ``state`` are gathered out), so
    the later steps compute only for the sentences still being translated; the
    other backends' loops need fixed shapes, and step every row until all have ended.
    """
    static_one = isinstance(batch_size, int) and batch_size == 1
    if backend.is_tensorflow() and not static_one:
        return _greedy_dropping_finished(step_fn, state, batch_size, max_length, source_length,
                                         return_attention)
    return _greedy_fixed_rows(step_fn, state, batch_size, max_length, source_length,
                              return_attention)


def _greedy_fixed_rows(step_fn, state, batch_size, max_length, source_length, return_attention):
    """Every row steps until all have ended (a finished row is fed and given [PAD])."""
    logits, state, attention = step_fn(ops.full((batch_size,), START_ID, "int32"), state)
    track_attention = attention is not None and return_attention

    def record(t, logits, attention, tokens, history, finished):
        token = ops.where(finished, PAD_ID, _argmax(logits))
        tokens = write_token(tokens, t, token)
        if track_attention:
            history = _write_row(history, t, ops.cast(attention, "float32"))
        return token, tokens, history, ops.logical_or(finished, ops.equal(token, END_ID))

    def body(t, token, state, tokens, history, finished):
        logits, state, attention = step_fn(token, state)
        token, tokens, history, finished = record(t, logits, attention, tokens, history, finished)
        return t + 1, token, state, tokens, history, finished

    first = record(
        _int(0), logits, attention, ops.zeros((batch_size, max_length), "int32"),
        _attention_buffer(track_attention, (batch_size, max_length, source_length)),
        ops.zeros((batch_size,), "bool"),
    )
    token, tokens, history, finished = first
    _, _, _, tokens, history, _ = ops.while_loop(
        lambda t, *rest: ops.logical_and(t < max_length, ops.logical_not(ops.all(rest[-1]))),
        body,
        (_int(1), token, state, tokens, history, finished),
    )
    return tokens, (history if track_attention else None)


def _greedy_dropping_finished(step_fn, state, batch_size, max_length, source_length,
                              return_attention):
    """TensorFlow's fast path: only the unfinished sentences step (``rows``: their rows
    in the batch); after a sentence's [END] its tokens stay [PAD] and its attention
    rows zero. Tested to give what ``_greedy_fixed_rows`` gives."""
    import tensorflow as tf

    logits, state, attention = step_fn(tf.fill([batch_size], START_ID), state)
    track_attention = attention is not None and return_attention
    tokens = tf.zeros([batch_size, max_length], tf.int32)  # [PAD] where nothing is written
    history = tf.zeros([batch_size, max_length, source_length] if track_attention else [0])

    def record(t, rows, logits, attention, state, tokens, history):
        """Write step ``t``'s choices; keep the rows that have not produced [END]."""
        token = tf.argmax(logits, axis=-1, output_type=tf.int32)
        where = tf.stack([rows, tf.fill(tf.shape(rows), t)], axis=1)
        tokens = tf.tensor_scatter_nd_update(tokens, where, token)
        if track_attention:
            history = tf.tensor_scatter_nd_update(history, where, tf.cast(attention, tf.float32))
        open_rows = tf.reshape(tf.where(tf.not_equal(token, END_ID)), [-1])
        state = tf.nest.map_structure(lambda s: tf.gather(s, open_rows), state)
        return tf.gather(token, open_rows), tf.gather(rows, open_rows), state, tokens, history

    def body(t, token, rows, state, tokens, history):
        logits, state, attention = step_fn(token, state)
        return (t + 1, *record(t, rows, logits, attention, state, tokens, history))

    any_rows = tf.TensorShape([None])
    loop_vars = (1, *record(0, tf.range(batch_size), logits, attention, state, tokens, history))
    invariants = (tf.TensorShape([]), any_rows, any_rows,
                  tf.nest.map_structure(lambda s: any_rows.concatenate(s.shape[1:]), loop_vars[3]),
                  tokens.shape, history.shape)
    *_, tokens, history = tf.while_loop(
        lambda t, token, *_: tf.logical_and(t < max_length, tf.size(token) > 0),
        body, loop_vars, shape_invariants=invariants,
    )
    return tokens, (history if track_attention else None)


def length_penalty(lengths, alpha):
    """GNMT length normalisation (Wu et al. 2016): ((5 + |Y|) / 6) ** alpha."""
    return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)


def _settled(scores, lengths, finished, alpha, max_length):
    """Per sentence: can no unfinished hypothesis overtake the best finished one?

    Log-probabilities only fall as a hypothesis grows, and its length penalty grows
    at most to that of ``max_length`` (for ``alpha >= 0``), so an unfinished
    hypothesis can end with at best ``score / length_penalty(max_length)``. Stopping
    there instead of waiting for every beam to emit ``[END]`` saves the steps that
    low-scoring beams would spend wandering to ``max_length``.
    """
    best_finished = ops.max(
        ops.where(finished, scores / length_penalty(lengths, alpha), _NEG_INF), axis=-1)
    best_possible = ops.max(
        ops.where(finished, _NEG_INF, scores / length_penalty(max_length, alpha)), axis=-1)
    return best_finished >= best_possible


def _take_rows(tensor, rows):
    return ops.take(tensor, rows, axis=0)


def _take_beams(tensor, rows, batch_size, beam_size):
    """``tensor [B, K, ...]`` reordered by flat beam ``rows [B * K]``."""
    inner = ops.shape(tensor)[2:]
    flat = ops.reshape(tensor, (-1, *inner))
    return ops.reshape(_take_rows(flat, rows), (batch_size, beam_size, *inner))


def beam_search(step_fn, state, batch_size, max_length, beam_size, alpha=0.6,
                source_length=None, return_attention=True):
    """Beam search with GNMT length normalisation of the final scores (``alpha >= 0``).

    Finished hypotheses stay in the beam with their score frozen (they are
    extended by ``[PAD]`` at no cost), so every beam slot always holds a distinct
    hypothesis. Returns the best hypothesis per sentence:
    ``(tokens [B, max_length] int32, attention [B, max_length, S] or None)``.
    ``beam_size`` may be a scalar tensor on TensorFlow (a SavedModel signature input).
    """
    k = beam_size
    # Every call of step_fn sees B * K rows, each sentence's K beams consecutive; at
    # the first step the K copies are identical and only the first one is read.
    state = keras.tree.map_structure(lambda s: ops.repeat(s, k, axis=0), state)
    logits, state, attention = step_fn(ops.full((batch_size * k,), START_ID, "int32"), state)
    track_attention = attention is not None and return_attention
    log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
    vocab_size = ops.shape(log_probs)[-1]
    first_beam = ops.reshape(log_probs, (batch_size, k, vocab_size))[:, 0]
    scores, first_tokens = ops.top_k(first_beam, k)  # [B, K]
    first_tokens = ops.cast(first_tokens, "int32")
    tokens = write_token(ops.zeros((batch_size, k, max_length), "int32"), 0, first_tokens)
    finished = ops.equal(first_tokens, END_ID)
    lengths = ops.ones((batch_size, k), "int32")
    history = _attention_buffer(track_attention, (batch_size, k, max_length, source_length))
    if track_attention:
        history = _write_row(
            history, 0, ops.reshape(ops.cast(attention, "float32"), (batch_size, k, -1)))
    batch_offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * k, 1)  # [B, 1]
    # A finished beam may only be extended by [PAD], at no cost.
    pad_only = ops.where(ops.equal(ops.arange(vocab_size, dtype="int32"), PAD_ID), 0.0, _NEG_INF)

    def body(t, previous, scores, tokens, lengths, finished, state, history):
        logits, state, attention = step_fn(ops.reshape(previous, (-1,)), state)
        log_probs = ops.reshape(ops.log_softmax(ops.cast(logits, "float32"), axis=-1),
                                (batch_size, k, vocab_size))
        log_probs = ops.where(ops.expand_dims(finished, -1), pad_only, log_probs)
        candidates = ops.reshape(ops.expand_dims(scores, -1) + log_probs, (batch_size, -1))
        scores, flat_index = ops.top_k(candidates, k)
        flat_index = ops.cast(flat_index, "int32")
        parent = ops.floor_divide(flat_index, vocab_size)
        token = ops.mod(flat_index, vocab_size)
        rows = ops.reshape(parent + batch_offsets, (-1,))
        tokens = write_token(_take_beams(tokens, rows, batch_size, k), t, token)
        was_finished = _take_beams(finished, rows, batch_size, k)
        lengths = (_take_beams(lengths, rows, batch_size, k)
                   + ops.cast(ops.logical_not(was_finished), "int32"))
        finished = ops.logical_or(was_finished, ops.equal(token, END_ID))
        state = keras.tree.map_structure(lambda s: _take_rows(s, rows), state)
        if track_attention:
            history = _write_row(
                _take_beams(history, rows, batch_size, k), t,
                ops.reshape(ops.cast(_take_rows(attention, rows), "float32"), (batch_size, k, -1)),
            )
        return t + 1, token, scores, tokens, lengths, finished, state, history

    _, _, scores, tokens, lengths, finished, _, history = ops.while_loop(
        lambda t, previous, scores, tokens, lengths, finished, *_: ops.logical_and(
            t < max_length,
            ops.logical_not(ops.all(_settled(scores, lengths, finished, alpha, max_length))),
        ),
        body,
        (_int(1), first_tokens, scores, tokens, lengths, finished, state, history),
    )
    normalized = scores / length_penalty(lengths, alpha)
    best = ops.reshape(_argmax(normalized) + batch_offsets[:, 0], (-1,))
    best_tokens = _take_rows(ops.reshape(tokens, (-1, max_length)), best)
    if not track_attention:
        return best_tokens, None
    return best_tokens, _take_rows(ops.reshape(history, (-1, *ops.shape(history)[2:])), best)


# -- sampling ------------------------------------------------------------------------------
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


def counter_uniform(seed, position, rows):
    """``[rows]`` float32 draws in [0, 1), a pure function of (seed, position, row).

    A counter-based source (the idea of Philox, in a much smaller hash): no state to
    carry through a loop, and the same numbers in Python, a SavedModel, a TFLite app
    and on every Keras backend.
    """
    row = ops.arange(rows, dtype="int32")
    # As [1] arrays, not scalars: numpy (Keras' numpy backend) warns when a scalar
    # product wraps, and here every product is meant to.
    seed, position = (ops.reshape(_int(value), (1,)) for value in (seed, position))
    key = _mix(ops.bitwise_xor(seed, _mix(position * _signed(0x9E3779B9))))
    bits = _mix(ops.bitwise_xor(key, _mix(row + _signed(0x632BE5AB))))
    # The top 24 bits: every float32 in [0, 1) with that spacing is exact.
    return ops.cast(_shift_right(bits, 8), "float32") / float(1 << 24)


def sample(logits, temperature, seed, position):
    """Ids ``[B]`` drawn from ``softmax(logits / temperature)``; argmax at temperature 0.

    Inverse-CDF sampling with ``counter_uniform(seed, position, B)``.
    """
    logits = ops.cast(logits, "float32")
    greedy = _argmax(logits)
    scaled = logits / ops.maximum(ops.cast(temperature, "float32"), 1e-6)
    cumulative = ops.cumsum(ops.softmax(scaled, axis=-1), axis=-1)
    threshold = counter_uniform(seed, position, ops.shape(logits)[0]) * cumulative[:, -1]
    drawn = ops.sum(ops.cast(cumulative <= ops.expand_dims(threshold, -1), "int32"), axis=-1)
    drawn = ops.minimum(drawn, ops.shape(logits)[-1] - 1)
    return ops.where(ops.cast(temperature, "float32") > 0, drawn, greedy)
