"""Greedy and beam search over a step function.

A step function maps ``(previous_tokens [N], state) -> (logits [N, V], new_state,
attention [N, S] or None)``; ``state`` is any nest of tensors whose first dimension
is N. That is all decoding needs from a model. Greedy search calls it with the N <= B
sentences still being translated; beam search with N = B * K (each sentence's K
beams on consecutive rows).

Both searches keep their outputs in fixed ``[batch, (beam,) max_length]`` buffers
(no growing concatenations) and stop early once every sequence has produced
``[END]``; after ``[END]`` a sequence is padded with ``[PAD]`` (id 0). With a static
batch of one, every loop shape is static: that is what converts to TFLite builtin ops.
"""

import tensorflow as tf

from zoo.text.vocabulary import END_ID, PAD_ID, START_ID

_NEG_INF = -1e9  # finite, so that scores never become NaN


def _write_token(buffer, position, tokens):
    """buffer[:, ..., position] = tokens, for an int buffer ``[..., L]``."""
    hit = tf.equal(tf.range(tf.shape(buffer)[-1]), position)
    return tf.where(hit, tf.expand_dims(tokens, -1), buffer)


def _write_row(buffer, position, rows):
    """buffer[..., position, :] = rows, for a float buffer ``[..., L, S]``."""
    hit = tf.reshape(tf.equal(tf.range(tf.shape(buffer)[-2]), position), [-1, 1])
    return tf.where(hit, tf.expand_dims(rows, -2), buffer)


def greedy_search(step_fn, state, batch_size, max_length, source_length=None,
                  return_attention=True):
    """Most probable token at every step.

    Returns ``(tokens [B, max_length] int32, attention [B, max_length, S] or None)``.
    ``source_length`` (S) is needed only when the step function returns attention;
    ``return_attention=False`` skips collecting it (faster, smaller exports).

    A batch whose size is not a static 1 drops each sentence from the loop once it
    has produced ``[END]`` (its rows of ``state`` are gathered out), so the later
    steps compute only for the sentences still being translated. A static batch of
    one (TFLite) keeps static loop shapes instead.
    """
    if isinstance(batch_size, int) and batch_size == 1:
        return _greedy_fixed_rows(step_fn, state, batch_size, max_length, source_length,
                                  return_attention)
    return _greedy_dropping_finished(step_fn, state, batch_size, max_length, source_length,
                                     return_attention)


def _greedy_fixed_rows(step_fn, state, batch_size, max_length, source_length, return_attention):
    """Every row steps until all have ended (a finished row is fed and given [PAD])."""
    tokens = tf.zeros([batch_size, max_length], tf.int32)
    previous = tf.fill([batch_size], START_ID)
    logits, state, attention = step_fn(previous, state)
    track_attention = attention is not None and return_attention
    history = (
        tf.zeros([batch_size, max_length, source_length], tf.float32) if track_attention else None
    )

    def choose(logits, finished):
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return tf.where(finished, PAD_ID, best)

    finished = tf.zeros([batch_size], tf.bool)
    token = choose(logits, finished)
    tokens = _write_token(tokens, 0, token)
    if track_attention:
        history = _write_row(history, 0, tf.cast(attention, tf.float32))
    finished = tf.equal(token, END_ID)

    def body(t, token, state, tokens, history, finished):
        logits, state, attention = step_fn(token, state)
        token = choose(logits, finished)
        tokens = _write_token(tokens, t, token)
        if track_attention:
            history = _write_row(history, t, tf.cast(attention, tf.float32))
        return t + 1, token, state, tokens, history, finished | tf.equal(token, END_ID)

    loop_vars = (1, token, state, tokens, history if track_attention else tf.zeros([0]), finished)
    _, _, _, tokens, history, _ = tf.while_loop(
        lambda t, *rest: tf.logical_and(t < max_length, tf.logical_not(tf.reduce_all(rest[-1]))),
        body,
        loop_vars,
    )
    return tokens, (history if track_attention else None)


def _greedy_dropping_finished(step_fn, state, batch_size, max_length, source_length,
                              return_attention):
    """Only the unfinished sentences step (``rows``: their rows in the batch); after a
    sentence's [END] its tokens stay [PAD] and its attention rows zero."""
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


def _tile_beams(tensor, beam_size):
    """[B, ...] -> [B * K, ...], each row repeated K times consecutively."""
    return tf.repeat(tensor, beam_size, axis=0)


def length_penalty(lengths, alpha):
    """GNMT length normalisation (Wu et al. 2016): ((5 + |Y|) / 6) ** alpha."""
    return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


def _settled(scores, lengths, finished, alpha, max_length):
    """Per sentence: can no unfinished hypothesis overtake the best finished one?

    Log-probabilities only fall as a hypothesis grows, and its length penalty grows
    at most to that of ``max_length`` (for ``alpha >= 0``), so an unfinished
    hypothesis can end with at best ``score / length_penalty(max_length)``. Stopping
    there instead of waiting for every beam to emit ``[END]`` saves the steps that
    low-scoring beams would spend wandering to ``max_length``.
    """
    best_finished = tf.reduce_max(
        tf.where(finished, scores / length_penalty(lengths, alpha), _NEG_INF), axis=-1)
    best_possible = tf.reduce_max(
        tf.where(finished, _NEG_INF, scores / length_penalty(max_length, alpha)), axis=-1)
    return best_finished >= best_possible


def beam_search(step_fn, state, batch_size, max_length, beam_size, alpha=0.6,
                source_length=None, return_attention=True):
    """Beam search with GNMT length normalisation of the final scores (``alpha >= 0``).

    Finished hypotheses stay in the beam with their score frozen (they are
    extended by ``[PAD]`` at no cost), so every beam slot always holds a distinct
    hypothesis. Returns the best hypothesis per sentence:
    ``(tokens [B, max_length] int32, attention [B, max_length, S] or None)``.
    ``beam_size`` may be a scalar tensor (a SavedModel signature input).
    """
    k = beam_size
    # Every call of step_fn sees B * K rows, each sentence's K beams consecutive; at
    # the first step the K copies are identical and only the first one is read.
    state = tf.nest.map_structure(lambda s: _tile_beams(s, k), state)
    logits, state, attention = step_fn(tf.fill([batch_size * k], START_ID), state)
    track_attention = attention is not None and return_attention
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
    vocab_size = tf.shape(log_probs)[-1]
    first_beam = tf.reshape(log_probs, [batch_size, k, vocab_size])[:, 0]
    scores, first_tokens = tf.math.top_k(first_beam, k=k)  # [B, K]
    tokens = _write_token(tf.zeros([batch_size, k, max_length], tf.int32), 0, first_tokens)
    finished = tf.equal(first_tokens, END_ID)
    lengths = tf.ones([batch_size, k], tf.int32)
    history = tf.zeros([batch_size, k, max_length, source_length if track_attention else 0])
    if track_attention:
        history = _write_row(
            history, 0, tf.reshape(tf.cast(attention, tf.float32), [batch_size, k, -1])
        )
    batch_offsets = tf.expand_dims(tf.range(batch_size) * k, 1)  # [B, 1]
    # A finished beam may only be extended by [PAD], at no cost.
    pad_only = tf.where(tf.equal(tf.range(vocab_size), PAD_ID), 0.0, _NEG_INF)

    def body(t, previous, scores, tokens, lengths, finished, state, history):
        logits, state, attention = step_fn(tf.reshape(previous, [-1]), state)
        log_probs = tf.reshape(tf.nn.log_softmax(tf.cast(logits, tf.float32)),
                               [batch_size, k, vocab_size])
        log_probs = tf.where(tf.expand_dims(finished, -1), pad_only, log_probs)
        candidates = tf.reshape(tf.expand_dims(scores, -1) + log_probs, [batch_size, -1])
        scores, flat_index = tf.math.top_k(candidates, k=k)
        parent = flat_index // vocab_size
        token = flat_index % vocab_size
        tokens = _write_token(tf.gather(tokens, parent, batch_dims=1), t, token)
        was_finished = tf.gather(finished, parent, batch_dims=1)
        lengths = tf.gather(lengths, parent, batch_dims=1) + tf.cast(~was_finished, tf.int32)
        finished = was_finished | tf.equal(token, END_ID)
        rows = tf.reshape(parent + batch_offsets, [-1])
        state = tf.nest.map_structure(lambda s: tf.gather(s, rows), state)
        if track_attention:
            history = _write_row(
                tf.gather(history, parent, batch_dims=1), t,
                tf.reshape(tf.cast(tf.gather(attention, rows), tf.float32), [batch_size, k, -1]),
            )
        return t + 1, token, scores, tokens, lengths, finished, state, history

    _, _, scores, tokens, lengths, finished, _, history = tf.while_loop(
        lambda t, previous, scores, tokens, lengths, finished, *_: tf.logical_and(
            t < max_length,
            tf.logical_not(tf.reduce_all(_settled(scores, lengths, finished, alpha, max_length))),
        ),
        body,
        (1, first_tokens, scores, tokens, lengths, finished, state, history),
    )
    normalized = scores / length_penalty(lengths, alpha)
    best = tf.argmax(normalized, axis=-1, output_type=tf.int32)
    best_tokens = tf.gather(tokens, best, batch_dims=1)
    best_history = tf.gather(history, best, batch_dims=1) if track_attention else None
    return best_tokens, best_history
