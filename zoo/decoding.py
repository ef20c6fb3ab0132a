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


def sampling_search(step_fn, state, batch_size, max_length, temperature, seed, top_k=0,
                    top_p=1.0, row_ids=None, source_length=None, return_attention=True,
                    uniforms=None):
    """Each token drawn by ``sample`` (``temperature``, ``top_k``, ``top_p``) with the
    random numbers of (``seed``, step, row): ``row_ids [B]`` names each row (default
    0..B-1), so that a sentence's draws do not depend on the batch it is in; or, given
    ``uniforms [max_length, B]``, with those. The loop of greedy search on fixed rows;
    ``top_k=1`` is greedy. Returns what ``greedy_search`` returns."""
    row_ids = ops.arange(batch_size, dtype="int32") if row_ids is None else row_ids

    def choose(t, logits):
        uniform = None if uniforms is None else ops.take(uniforms, t, axis=0)
        return sample(logits, temperature, seed, t, top_k, top_p, row_ids, uniform)

    return _greedy_fixed_rows(step_fn, state, batch_size, max_length, source_length,
                              return_attention, choose)


def _greedy_fixed_rows(step_fn, state, batch_size, max_length, source_length, return_attention,
                       choose=lambda t, logits: _argmax(logits)):
    """Every row steps until all have ended (a finished row is fed and given [PAD]);
    ``choose(t, logits)`` picks step t's tokens (the most probable: greedy)."""
    logits, state, attention = step_fn(ops.full((batch_size,), START_ID, "int32"), state)
    track_attention = attention is not None and return_attention

    def record(t, logits, attention, tokens, history, finished):
        token = ops.where(finished, PAD_ID, choose(t, logits))
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


def _nth_best_settled(finished_scores, alive_scores, longest_penalty, num_hypotheses):
    """Per sentence: can no open hypothesis reach the ``num_hypotheses`` best finished?

    Log-probabilities only fall as a hypothesis grows, and its length penalty grows at
    most to that of ``max_length`` (for ``alpha >= 0``): an open hypothesis can end
    with at best ``score / longest_penalty`` (the penalty of ``max_length``). Once
    the n-th best finished score is at least that, more steps cannot change the n
    returned, so the search stops instead of letting open beams wander to ``max_length``.
    """
    nth_finished = ops.top_k(finished_scores, num_hypotheses)[0][:, -1]
    best_possible = ops.max(alive_scores, axis=-1) / longest_penalty
    return nth_finished >= best_possible


def _take_rows(tensor, rows):
    return ops.take(tensor, rows, axis=0)


def _take_beams(tensor, rows, batch_size, beam_size):
    """``tensor [B, K', ...]`` -> ``[B, beam_size, ...]``: the flat rows ``rows``
    (``[B * beam_size]``, indices into the flattened ``[B * K', ...]``)."""
    inner = ops.shape(tensor)[2:]
    flat = ops.reshape(tensor, (-1, *inner))
    return ops.reshape(_take_rows(flat, rows), (batch_size, beam_size, *inner))


def _pick(tensor, positions, batch_size):
    """``tensor [B, M, ...]`` at ``positions [B, P]`` along its second axis."""
    width, picked = ops.shape(tensor)[1], ops.shape(positions)[1]
    offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * width, 1)
    return _take_beams(tensor, ops.reshape(positions + offsets, (-1,)), batch_size, picked)


def beam_search(step_fn, state, batch_size, max_length, beam_size, alpha=0.6,
                source_length=None, return_attention=True):
    """The best hypothesis of ``beam_hypotheses``: ``(tokens [B, max_length] int32,
    attention [B, max_length, S] or None)``."""
    tokens, _, attention = beam_hypotheses(step_fn, state, batch_size, max_length, beam_size,
                                           1, alpha, source_length, return_attention)
    return tokens[:, 0], (None if attention is None else attention[:, 0])


def beam_hypotheses(step_fn, state, batch_size, max_length, beam_size, num_hypotheses=1,
                    alpha=0.6, source_length=None, return_attention=True):
    """Beam search with GNMT length normalisation of the final scores (``alpha >= 0``).

    ``beam_size`` open hypotheses are extended at every step; of the ``2 * beam_size``
    best extensions, those that end (``[END]``) join a pool of the ``beam_size`` best
    finished hypotheses, ranked by normalised score, and the best ``beam_size`` that do
    not end stay open (as in fairseq and tensor2tensor: a finished hypothesis is never
    pushed out by open ones). The search stops when no open hypothesis can still
    reach the ``num_hypotheses`` best finished (``_nth_best_settled``), or at
    ``max_length``, where open hypotheses compete with the finished ones as they are.

    Returns ``(tokens [B, n, max_length] int32, scores [B, n], attention [B, n,
    max_length, S] or None)``, best first; a score is the hypothesis' log-probability
    divided by ``length_penalty(its length, alpha)``. ``beam_size`` and
    ``num_hypotheses`` (at most ``beam_size``) may be scalar tensors on TensorFlow.
    """
    k, doubled = beam_size, 2 * beam_size
    # Every call of step_fn sees B * K rows, each sentence's K beams consecutive.
    state = keras.tree.map_structure(lambda s: ops.repeat(s, k, axis=0), state)
    logits, state, attention = step_fn(ops.full((batch_size * k,), START_ID, "int32"), state)
    track_attention = attention is not None and return_attention
    history_shape = (batch_size, k, max_length, source_length)
    # At the first step the K beams are copies: only the first one may be extended.
    first_only = ops.where(ops.equal(ops.arange(k, dtype="int32"), 0), 0.0, _NEG_INF)
    beams = {
        "alive_tokens": ops.zeros((batch_size, k, max_length), "int32"),
        "alive_scores": ops.tile(ops.expand_dims(first_only, 0), (batch_size, 1)),
        "alive_history": _attention_buffer(track_attention, history_shape),
        "finished_tokens": ops.zeros((batch_size, k, max_length), "int32"),
        "finished_scores": ops.full((batch_size, k), _NEG_INF, "float32"),
        "finished_history": _attention_buffer(track_attention, history_shape),
    }
    batch_offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * k, 1)  # [B, 1]

    def advance(t, logits, attention, beams, state):
        """Step ``t``'s extensions: the new open beams and finished pool, the state of
        the open beams, and the tokens they feed the next step."""
        log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
        vocab_size = ops.shape(log_probs)[-1]
        candidates = ops.expand_dims(beams["alive_scores"], -1) + ops.reshape(
            log_probs, (batch_size, k, vocab_size))
        scores, flat_index = ops.top_k(ops.reshape(candidates, (batch_size, -1)), doubled)
        flat_index = ops.cast(flat_index, "int32")
        parent = ops.floor_divide(flat_index, vocab_size)  # [B, 2K]
        token = ops.mod(flat_index, vocab_size)
        parent_rows = ops.reshape(parent + batch_offsets, (-1,))
        tokens = write_token(_take_beams(beams["alive_tokens"], parent_rows, batch_size, doubled),
                             t, token)
        history = beams["alive_history"]
        if track_attention:
            rows = ops.reshape(ops.cast(_take_rows(attention, parent_rows), "float32"),
                               (batch_size, doubled, -1))
            history = _write_row(_take_beams(history, parent_rows, batch_size, doubled), t, rows)
        ends = ops.equal(token, END_ID)

        open_scores, open_pick = ops.top_k(ops.where(ends, _NEG_INF, scores), k)
        open_pick = ops.cast(open_pick, "int32")
        open_rows = ops.reshape(_pick(parent, open_pick, batch_size) + batch_offsets, (-1,))
        ended = ops.where(ends, scores / length_penalty(t + 1, alpha), _NEG_INF)
        pool_scores, pool_pick = ops.top_k(
            ops.concatenate([beams["finished_scores"], ended], axis=1), k)
        pool_pick = ops.cast(pool_pick, "int32")
        beams = {
            "alive_tokens": _pick(tokens, open_pick, batch_size),
            "alive_scores": open_scores,
            "alive_history": _pick(history, open_pick, batch_size) if track_attention else history,
            "finished_tokens": _pick(
                ops.concatenate([beams["finished_tokens"], tokens], axis=1), pool_pick, batch_size),
            "finished_scores": pool_scores,
            "finished_history": _pick(
                ops.concatenate([beams["finished_history"], history], axis=1), pool_pick,
                batch_size) if track_attention else beams["finished_history"],
        }
        state = keras.tree.map_structure(lambda s: _take_rows(s, open_rows), state)
        return _pick(ops.expand_dims(token, -1), open_pick, batch_size)[..., 0], beams, state

    def body(t, previous, beams, state):
        logits, state, attention = step_fn(ops.reshape(previous, (-1,)), state)
        previous, beams, state = advance(t, logits, attention, beams, state)
        return t + 1, previous, beams, state

    longest = length_penalty(max_length, alpha)
    previous, beams, state = advance(_int(0), logits, attention, beams, state)
    steps, _, beams, _ = ops.while_loop(
        lambda t, previous, beams, state: ops.logical_and(t < max_length, ops.logical_not(ops.all(
            _nth_best_settled(beams["finished_scores"], beams["alive_scores"], longest,
                              num_hypotheses)))),
        body,
        (_int(1), previous, beams, state),
    )
    # Open hypotheses (at max_length, or ones that can no longer win) compete as they are.
    open_scores = beams["alive_scores"] / length_penalty(steps, alpha)
    scores, pick = ops.top_k(ops.concatenate([beams["finished_scores"], open_scores], axis=1),
                             num_hypotheses)
    pick = ops.cast(pick, "int32")
    tokens = _pick(ops.concatenate([beams["finished_tokens"], beams["alive_tokens"]], axis=1),
                   pick, batch_size)
    if not track_attention:
        return tokens, scores, None
    history = ops.concatenate([beams["finished_history"], beams["alive_history"]], axis=1)
    return tokens, scores, _pick(history, pick, batch_size)


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
    return _uniform(ops.reshape(_int(seed), (1,)), ops.reshape(_int(position), (1,)), row)


def step_uniforms(seed, steps, row):
    """``[steps]``: the draws ``counter_uniform`` gives row ``row`` at positions
    0..steps-1 (what a runtime without the hash's integer ops is fed)."""
    return _uniform(ops.reshape(_int(seed), (1,)), ops.arange(steps, dtype="int32"),
                    ops.reshape(_int(row), (1,)))


def _uniform(seed, position, row):
    """The hash of (seed, position, row), broadcast element-wise, as floats in [0, 1)."""
    key = _mix(ops.bitwise_xor(seed, _mix(position * _signed(0x9E3779B9))))
    bits = _mix(ops.bitwise_xor(key, _mix(row + _signed(0x632BE5AB))))
    # The top 24 bits: every float32 in [0, 1) with that spacing is exact.
    return ops.cast(_shift_right(bits, 8), "float32") / float(1 << 24)


def sample(logits, temperature, seed, position, top_k=0, top_p=1.0, row_ids=None,
           uniform=None):
    """Ids ``[B]`` drawn from ``softmax(logits / temperature)``; argmax at temperature 0.

    ``top_k`` (0: off) keeps the k most probable tokens, ``top_p`` (1: off) the
    smallest set of most probable tokens whose probabilities reach p (nucleus sampling,
    Holtzman et al. 2019); with both, a token must pass both; a token tied with the
    last one kept is kept too. ``top_k=1`` is greedy. Inverse-CDF sampling with
    ``counter_uniform(seed, position, B, row_ids)``, or the ``uniform [B]`` draws given
    (a TFLite file is fed them: its builtin ops lack the hash's). Every argument may be
    a tensor.
    """
    logits = ops.cast(logits, "float32")
    greedy = _argmax(logits)
    scaled = logits / ops.maximum(ops.cast(temperature, "float32"), 1e-6)
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
    return ops.where(ops.cast(temperature, "float32") > 0, drawn, greedy)


def _kept_from(probabilities, top_k, top_p):
    """``[B, 1]``: the smallest probability top-k and top-p keep (0 when both are off)."""
    descending = ops.flip(ops.sort(probabilities, axis=-1), axis=-1)
    vocab_size = ops.shape(probabilities)[-1]
    top_k = _int(top_k)
    first = ops.zeros_like(descending[:, :1], "int32")
    kth = ops.take_along_axis(descending, first + ops.clip(top_k, 1, vocab_size) - 1, axis=-1)
    top_p = ops.cast(top_p, "float32")
    # The smallest prefix reaching p: the tokens whose predecessors sum to less than p.
    in_nucleus = ops.sum(ops.cast(ops.cumsum(descending, axis=-1) - descending < top_p, "int32"),
                         axis=-1, keepdims=True)
    pth = ops.take_along_axis(descending, ops.maximum(in_nucleus, 1) - 1, axis=-1)
    return ops.maximum(ops.where(top_k > 0, kth, 0.0), ops.where(top_p < 1.0, pth, 0.0))
