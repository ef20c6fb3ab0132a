"""The decoding loop: a step function computes, a strategy chooses.

A step function maps ``(previous_tokens [N], state, memory) -> (logits [N, V], new_state,
attention [N, S] or None)``; ``state`` (what changes at each step) and ``memory`` (what
the step reads and never changes: an encoder's outputs) are nests of tensors whose first
dimension is N; without ``memory``, it is called ``step_fn(tokens, state)``. That is all
decoding needs from a model.

A strategy (``Greedy``, ``Sampling``, ``Beam``) says how many rows per sentence the
step function sees, picks each step's tokens and which rows of the state they continue,
keeps what it returns in per-sentence buffers ``[B, ..., max_length]``, and says which
sentences are finished. ``decode`` runs it in one ``ops.while_loop`` (as keras-hub's
samplers, OpenNMT-tf's ``DecodingStrategy``), on every Keras backend: every row steps
until all sentences are finished. With a static batch of one, every loop shape is
static: that is what converts to TFLite builtin ops. On TensorFlow, with a batch that is
not a static 1, the same loop drops each sentence's rows once it is finished
(``tf.while_loop`` allows shapes that change): the later steps compute only for the
sentences still open. Tested to give the same results.

The strategy interface (duck-typed)::

    rows_per_sentence                       # N = batch_size * rows_per_sentence
    expand(rows) -> rows                    # step 0's rows (state, memory) from one per sentence
    initial(batch_size, max_length, history_shape, max_lengths) -> search  # [B, ...] tensors
    advance(t, logits, attention, search) -> (tokens [N], search, parent_rows [N] or None)
    finished(search) -> [B] bool            # nothing more to compute for these sentences
    result(search, steps) -> a tuple of [B, ...] tensors (or None) the search returns

``history_shape`` is ``(max_length, S)`` when attention is to be kept, else None (the
search then holds no attention buffer at all); ``attention`` is None then too.
``max_lengths [B]``: each sentence's most tokens (at most ``max_length``); a sequence
that reaches it ends there. ``parent_rows`` reorders the state (beam search; always
within a sentence's rows, so ``memory`` needs no reordering); None keeps it as it is.
"""

import keras
from keras import ops

from zoo import backend
from zoo.text.vocabulary import START_ID


def int_tensor(value):
    return ops.convert_to_tensor(value, "int32")


def write_token(buffer, position, tokens):
    """buffer[:, ..., position] = tokens, for an int buffer ``[..., L]``."""
    hit = ops.equal(ops.arange(ops.shape(buffer)[-1], dtype="int32"), position)
    return ops.where(hit, ops.expand_dims(tokens, -1), buffer)


def write_row(buffer, position, rows):
    """buffer[..., position, :] = rows, for a float buffer ``[..., L, S]``."""
    hit = ops.reshape(ops.equal(ops.arange(ops.shape(buffer)[-2], dtype="int32"), position),
                      (-1, 1))
    return ops.where(hit, ops.expand_dims(ops.cast(rows, buffer.dtype), -2), buffer)


def decode(step_fn, state, strategy, batch_size, max_length, source_length=None,
           return_attention=True, first_logits=None, max_lengths=None, memory=None):
    """Run ``strategy`` over ``step_fn`` for at most ``max_length`` steps.

    Step 0 feeds ``[START]`` to every row; or, given ``first_logits [B, V]`` (a language
    model's prompt, already read), it starts from those, with ``state`` the state after
    them. ``source_length`` (S) is needed only when the step function returns attention;
    ``return_attention=False`` skips collecting it. ``max_lengths [B]`` (default: all
    ``max_length``) ends each sentence at its own length. ``memory``: a nest the step
    function reads and never changes, one row per sentence (expanded to the strategy's
    rows, never reordered). Returns ``strategy.result``.
    """
    if memory is None:  # an empty nest: the loops carry the same structure either way
        step_fn, memory = _without_memory(step_fn), {}
    if first_logits is None:
        state, memory = strategy.expand((state, memory))
        start = ops.full((batch_size * strategy.rows_per_sentence,), START_ID, "int32")
        logits, state, attention = step_fn(start, state, memory)
    else:
        logits, attention = first_logits, None
    # Whether the model returns attention is known once it has taken a step.
    keep_attention = attention is not None and return_attention
    if max_lengths is None:
        max_lengths = ops.full((batch_size,), max_length, "int32")
    search = strategy.initial(batch_size, max_length,
                              (max_length, source_length) if keep_attention else None,
                              ops.cast(max_lengths, "int32"))

    def advance(t, logits, attention, search, state):
        tokens, search, parent_rows = strategy.advance(
            t, logits, attention if keep_attention else None, search)
        if parent_rows is not None:
            state = _take(state, parent_rows)
        return tokens, search, state

    tokens, search, state = advance(int_tensor(0), logits, attention, search, state)
    static_one = isinstance(batch_size, int) and batch_size == 1
    if backend.is_tensorflow() and not static_one:
        return _decode_dropping_finished(step_fn, strategy, max_length, batch_size, tokens,
                                         search, state, memory, advance)

    def body(t, tokens, search, state):
        logits, state, attention = step_fn(tokens, state, memory)
        return t + 1, *advance(t, logits, attention, search, state)

    steps, _, search, _ = ops.while_loop(
        lambda t, tokens, search, state: ops.logical_and(
            t < max_length, ops.logical_not(ops.all(strategy.finished(search)))),
        body,
        (int_tensor(1), tokens, search, state),
    )
    return strategy.result(search, steps)


def _without_memory(step_fn):
    def step(tokens, state, memory):
        return step_fn(tokens, state)

    return step


def _take(nest, rows):
    return keras.tree.map_structure(lambda tensor: ops.take(tensor, rows, axis=0), nest)


def _decode_dropping_finished(step_fn, strategy, max_length, batch_size, tokens, search, state,
                              memory, advance):
    """``decode``'s loop on TensorFlow, from step 1, for the open sentences only.

    ``sentences`` holds the batch positions of the open sentences; their results are
    written into full-batch outputs when they finish (and at ``max_length``). Rows are
    gathered out only on a step where some sentence finished.
    """
    import tensorflow as tf

    rows_per_sentence = strategy.rows_per_sentence
    # The results that are tensors (not None), by position, as the loop carries them.
    first_results = strategy.result(search, 1)
    outputs = {i: tf.zeros_like(r) for i, r in enumerate(first_results) if r is not None}

    def keep_open(t, sentences, tokens, search, state, memory, outputs):
        finished = tf.logical_or(strategy.finished(search), t + 1 >= max_length)

        def drop():
            done = tf.cast(tf.reshape(tf.where(finished), [-1]), tf.int32)
            results = strategy.result(_take(search, done), t + 1)
            where = tf.expand_dims(tf.gather(sentences, done), 1)
            written = {i: tf.tensor_scatter_nd_update(o, where, results[i])
                       for i, o in outputs.items()}
            open_sentences = tf.cast(tf.reshape(tf.where(tf.logical_not(finished)), [-1]),
                                     tf.int32)
            rows = tf.reshape(tf.expand_dims(open_sentences, 1) * rows_per_sentence
                              + tf.range(rows_per_sentence), [-1])
            return (tf.gather(sentences, open_sentences), tf.gather(tokens, rows),
                    _take(search, open_sentences), _take(state, rows), _take(memory, rows),
                    written)

        return tf.cond(tf.reduce_any(finished), drop,
                       lambda: (sentences, tokens, search, state, memory, outputs))

    def body(t, sentences, tokens, search, state, memory, outputs):
        logits, state, attention = step_fn(tokens, state, memory)
        tokens, search, state = advance(t, logits, attention, search, state)
        return (t + 1, *keep_open(t, sentences, tokens, search, state, memory, outputs))

    any_first = (lambda nest: tf.nest.map_structure(
        lambda x: tf.TensorShape([None]).concatenate(x.shape[1:]), nest))
    loop_vars = (int_tensor(1), *keep_open(int_tensor(0), tf.range(batch_size), tokens, search,
                                           state, memory, outputs))
    invariants = (tf.TensorShape([]), *[any_first(v) for v in loop_vars[1:6]],
                  {i: o.shape for i, o in outputs.items()})
    *_, outputs = tf.while_loop(lambda t, sentences, *_: tf.size(sentences) > 0, body,
                                loop_vars, shape_invariants=invariants)
    return tuple(outputs.get(i) for i in range(len(first_results)))
