"""The decoding loop: a step function computes, a strategy chooses.

A step function maps ``(previous_tokens [N], state, memory) -> (logits [N, V], new_state,
attention [N, S] or None)``; ``state`` (what changes at each step) and ``memory`` (what
the step reads and never changes: an encoder's outputs) are nests of tensors whose first
dimension is N; without ``memory``, it is called ``step_fn(tokens, state)``. That is all
decoding needs from a model.

The vocabulary's ``SpecialIds`` (start, end, pad) are handed in by the caller with the
strategy, as OpenNMT-tf's ``dynamic_decode`` is handed its start and end ids: decoding
knows no vocabulary.

A strategy (``Greedy``, ``Sampling``, ``Beam``) says how many rows per sentence the
step function sees, picks each step's tokens and which rows of the state they continue,
keeps what it returns in per-sentence buffers ``[B, ..., max_length]``, and says which
sentences are finished. ``decode`` runs it in one ``ops.while_loop`` (as keras-hub's
samplers, OpenNMT-tf's ``DecodingStrategy``), on every Keras backend: every row steps
until all sentences are finished. With a static batch of one, every loop shape is
static: that is what converts to TFLite builtin ops. On TensorFlow, with a batch that is
not a static 1, the same loop drops each sentence's rows once it is finished
(``tf.while_loop`` allows shapes that change): the later steps compute only for the
sentences still open (one loop for greedy search and sampling, two nested ones for beam
search). Tested to give the same results. ``decode_stepwise`` drives the
same step from Python, yielding each step's tokens: a language model's text shown as it
is written, and the TFLite runner, whose step function is an interpreter call.

The strategy interface (duck-typed)::

    rows_per_sentence                       # N = batch_size * rows_per_sentence
    special_ids                             # SpecialIds: step 0 feeds special_ids.start
    expand(rows) -> rows                    # step 0's rows (state, memory) from one per sentence
    initial(batch_size, max_length, history_shape, max_lengths) -> search  # [B, ...] tensors
    advance(t, logits, attention, search) -> (tokens [N], search, parent_rows [N] or None)
    finished(search) -> [B] bool            # nothing more to compute for these sentences
    result(search, steps) -> a tuple of [B, ...] tensors (or None) the search returns

    full_batch_buffers                      # optional: see below

A strategy whose ``result`` reads only some ``[B, ...]`` buffers of its search, and
whose sentences each have one row (``Greedy``, ``Sampling``), names them in
``full_batch_buffers`` and writes them at ``search["sentences"]`` when that is given
(the open rows' batch positions): TensorFlow's fast path then keeps only the open rows
of the rest at each step, and never gathers the buffers.

``history_shape`` is ``(max_length, S)`` when attention is to be kept, else None (the
search then holds no attention buffer at all); ``attention`` is None then too.
``max_lengths [B]``: each sentence's most tokens (at most ``max_length``); a sequence
that reaches it ends there. ``parent_rows`` reorders the state (beam search; always
within a sentence's rows, so ``memory`` needs no reordering); None keeps it as it is.
"""

import dataclasses

import keras
from keras import ops

from zoo import backend


@dataclasses.dataclass(frozen=True)
class SpecialIds:
    """The ids decoding gives a meaning to, in the caller's vocabulary: ``start`` is fed
    at step 0, ``end`` finishes a sentence, ``pad`` fills its tokens after that (and
    right-pads an ``OutputRules`` prefix)."""

    start: int
    end: int
    pad: int

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"SpecialIds.{field.name} must be a token id (an int >= 0); "
                                 f"received {value!r}.")


def int_tensor(value):
    return ops.convert_to_tensor(value, "int32")


def write_token(buffer, position, tokens, rows=None):
    """buffer[:, ..., position] = tokens, for an int buffer ``[..., L]``; or, given
    ``rows [N]``, buffer[rows, position] = tokens in a buffer ``[B, L]``."""
    if rows is not None:
        return ops.scatter_update(buffer, _at(rows, position), tokens)
    hit = ops.equal(ops.arange(ops.shape(buffer)[-1], dtype="int32"), position)
    return ops.where(hit, ops.expand_dims(tokens, -1), buffer)


def write_row(buffer, position, values, rows=None):
    """buffer[..., position, :] = values, for a float buffer ``[..., L, S]``; or, given
    ``rows [N]``, buffer[rows, position, :] = values in a buffer ``[B, L, S]``."""
    values = ops.cast(values, buffer.dtype)
    if rows is not None:
        return ops.scatter_update(buffer, _at(rows, position), values)
    hit = ops.reshape(ops.equal(ops.arange(ops.shape(buffer)[-2], dtype="int32"), position),
                      (-1, 1))
    return ops.where(hit, ops.expand_dims(values, -2), buffer)


def _at(rows, position):
    """``[N, 2]`` scatter indices: (row, position) for each of ``rows``."""
    return ops.stack([rows, ops.full(ops.shape(rows), position, "int32")], axis=1)


def decode(step_fn, state, strategy, batch_size, max_length, source_length=None,
           return_attention=True, first_logits=None, max_lengths=None, memory=None,
           memory_per_sentence=False):
    """Run ``strategy`` over ``step_fn`` for at most ``max_length`` steps.

    Step 0 feeds ``strategy.special_ids.start`` to every row; or, given ``first_logits
    [B, V]`` (a language model's prompt, already read), it starts from those, with
    ``state`` the state after them. ``source_length`` (S) is needed only when the step
    function returns attention; ``return_attention=False`` skips collecting it.
    ``max_lengths [B]`` (default: all ``max_length``) ends each sentence at its own
    length. ``memory``: a nest the step function reads and never changes, one row per
    sentence (expanded to the strategy's rows, never reordered); with
    ``memory_per_sentence``, not expanded: the step function reads each sentence's row
    for its ``rows_per_sentence`` consecutive rows (a beam's attention reads a source
    once for its beams, and the loop drops a finished sentence's memory row, not K
    copies of it). Returns ``strategy.result``.
    """
    step, tokens, search, state, memory = _first_step(
        step_fn, state, strategy, batch_size, max_length, source_length, return_attention,
        first_logits, max_lengths, memory, memory_per_sentence)
    static_one = isinstance(batch_size, int) and batch_size == 1
    if backend.is_tensorflow() and not static_one:
        if hasattr(strategy, "full_batch_buffers"):  # one row per sentence
            return _decode_dropping_finished_rows(step, strategy, max_length, batch_size,
                                                  tokens, search, state, memory)
        return _decode_dropping_finished(step, strategy, max_length, batch_size, tokens, search,
                                         state, memory, memory_per_sentence)

    def body(t, tokens, search, state):
        return t + 1, *step(t, tokens, search, state, memory)

    steps, _, search, _ = ops.while_loop(
        lambda t, tokens, search, state: ops.logical_and(
            t < max_length, ops.logical_not(ops.all(strategy.finished(search)))),
        body,
        (int_tensor(1), tokens, search, state),
    )
    return strategy.result(search, steps)


def decode_stepwise(step_fn, state, strategy, batch_size, max_length, first_logits=None,
                    compiled_steps=None):
    """``decode``'s loop driven from Python: yields each step's tokens ``[N]`` (a numpy
    array) as soon as they are chosen, until ``strategy`` says every sentence is finished
    or ``max_length`` steps. For a text shown as it is written, and for a step function
    that is no graph (a TFLite interpreter's signature).

    ``compiled_steps``: what ``loop_steps(step_fn, strategy, count)`` computes, compiled
    (called with and returning numpy arrays), ``count`` steps a call; without it, one step
    a call, the strategy's choice run eagerly (tens of milliseconds a step on TensorFlow).
    ``max_length`` 0 yields nothing, as ``decode`` returns no token.
    """
    if max_length < 1:
        return
    step, tokens, search, state, memory = _first_step(
        step_fn, state, strategy, batch_size, max_length, None, False, first_logits, None, None)
    steps = compiled_steps or _several(step, strategy, 1)
    yield ops.convert_to_numpy(tokens)
    t = 1
    if ops.convert_to_numpy(ops.all(strategy.finished(search))):
        return
    while t < max_length:
        chosen, done, search, state = steps(int_tensor(t), tokens, search, state, memory)
        chosen, done = ops.convert_to_numpy(chosen), ops.convert_to_numpy(done)
        for tokens, all_finished in zip(chosen, done):  # the last one feeds the next call
            yield tokens
            t += 1
            if all_finished or t >= max_length:
                return


def loop_step(step_fn, strategy, keep_attention=False):
    """The loop's step, whatever drives the loop: ``step(t, tokens, search, state,
    memory) -> (tokens, search, state)`` runs ``step_fn`` on step ``t - 1``'s tokens and
    lets ``strategy`` choose step ``t``'s (``keep_attention``: its attention goes to the
    strategy)."""

    def step(t, tokens, search, state, memory):
        logits, state, attention = step_fn(tokens, state, memory)
        return _advance(strategy, keep_attention, t, logits, attention, search, state)

    return step


def loop_steps(step_fn, strategy, count):
    """``count`` of the loop's steps in one function, to compile for ``decode_stepwise``
    (one call, not one per token: a compiled call's own cost is several times a small
    model's step): ``steps(t, tokens, search, state, memory) -> (tokens [count, N],
    done [count], search, state)``, ``done[i]``: every sentence finished after step
    ``t + i`` (the steps after that, or past ``max_length``, are computed and not read).
    """
    return _several(loop_step(step_fn, strategy), strategy, count)


def _several(step, strategy, count):
    def steps(t, tokens, search, state, memory):
        chosen, done = [], []
        for i in range(count):
            tokens, search, state = step(t + i, tokens, search, state, memory)
            chosen.append(tokens)
            done.append(ops.all(strategy.finished(search)))
        return ops.stack(chosen), ops.stack(done), search, state

    return steps


def _advance(strategy, keep_attention, t, logits, attention, search, state):
    tokens, search, parent_rows = strategy.advance(
        t, logits, attention if keep_attention else None, search)
    if parent_rows is not None:
        state = _take(state, parent_rows)
    return tokens, search, state


def _first_step(step_fn, state, strategy, batch_size, max_length, source_length,
                return_attention, first_logits, max_lengths, memory, memory_per_sentence=False):
    """Step 0 (the start id, or the prompt's ``first_logits``) and the loop's step.

    Returns ``(loop_step(...), tokens, search, state, memory)`` after step 0.
    """
    if memory is None:  # an empty nest: the loops carry the same structure either way
        step_fn, memory = _without_memory(step_fn), {}
    if first_logits is None:
        if memory_per_sentence:
            state = strategy.expand(state)
        else:
            state, memory = strategy.expand((state, memory))
        start = ops.full((batch_size * strategy.rows_per_sentence,), strategy.special_ids.start,
                         "int32")
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
    tokens, search, state = _advance(strategy, keep_attention, int_tensor(0), logits, attention,
                                     search, state)
    return loop_step(step_fn, strategy, keep_attention), tokens, search, state, memory


def _without_memory(step_fn):
    def step(tokens, state, memory):
        return step_fn(tokens, state)

    return step


def _take(nest, rows):
    """The rows ``rows`` of every tensor in ``nest``."""
    if backend.is_tensorflow():
        import tensorflow as tf

        # One op a tensor: keras.ops.take adds five to wrap negative indices, which rows
        # never are, and the loops take the rows of every tensor they carry at each step.
        return tf.nest.map_structure(lambda tensor: tf.gather(tensor, rows), nest)
    return keras.tree.map_structure(lambda tensor: ops.take(tensor, rows, axis=0), nest)


def _any_rows(nest):
    """Shape invariants for a loop that drops rows: any first dimension, the rest kept."""
    import tensorflow as tf

    return tf.nest.map_structure(lambda x: tf.TensorShape([None]).concatenate(x.shape[1:]), nest)


def _decode_dropping_finished_rows(step, strategy, max_length, batch_size, tokens, search,
                                   state, memory):
    """``decode``'s loop on TensorFlow, from step 1, for a strategy whose result is its
    ``full_batch_buffers`` (``Greedy``, ``Sampling``: one row per sentence): one loop
    that keeps only the open rows of everything else after each step, the buffers
    written at each row's sentence (``search["sentences"]``), read once at the end.
    Faster than ``_decode_dropping_finished``'s nested loops, which gather every
    per-sentence buffer at each drop (measured side by side: docs/benchmarks.md).
    """
    import tensorflow as tf

    buffer_names = [name for name in strategy.full_batch_buffers if name in search]

    def keep_open(tokens, search, state, memory):
        """The open rows of all but the buffers: ``(tokens, rows, buffers, state, memory)``."""
        rows = {name: value for name, value in search.items() if name not in buffer_names}
        open_rows = tf.reshape(tf.where(tf.logical_not(strategy.finished(rows))), [-1])
        tokens, rows, state, memory = _take((tokens, rows, state, memory), open_rows)
        return tokens, rows, {name: search[name] for name in buffer_names}, state, memory

    def body(t, tokens, rows, buffers, state, memory):
        return (t + 1, *keep_open(*step(t, tokens, {**rows, **buffers}, state, memory), memory))

    search = {**search, "sentences": tf.range(batch_size)}
    loop_vars = (int_tensor(1), *keep_open(tokens, search, state, memory))
    # The rows' first dimension shrinks as sentences finish; the buffers keep theirs.
    invariants = (tf.TensorShape([]), *[_any_rows(v) for v in loop_vars[1:3]],
                  tf.nest.map_structure(lambda x: x.shape, loop_vars[3]),
                  *[_any_rows(v) for v in loop_vars[4:]])
    steps, _, _, buffer_values, _, _ = tf.while_loop(
        lambda t, tokens, *_: tf.logical_and(t < max_length, tf.size(tokens) > 0), body,
        loop_vars, shape_invariants=invariants)
    return strategy.result(buffer_values, steps)


def _decode_dropping_finished(step, strategy, max_length, batch_size, tokens, search, state,
                              memory, memory_per_sentence=False):
    """``decode``'s loop on TensorFlow, from step 1, for the open sentences only, for
    a strategy whose result reads more than full-batch buffers (``Beam``).

    Two nested loops: the inner one steps the open sentences until one of them is
    finished (or ``max_length``); the outer one then writes the finished sentences'
    results into full-batch outputs and gathers them out (``sentences``: the batch
    positions still open). The inner loop carries only what changes at every step and
    reads ``memory`` as a loop constant, with no per-step ``tf.cond``: its body is 138
    graph nodes, against 161 and a cond for one loop that dropped sentences behind a
    ``tf.cond``; measured side by side, as fast (0.95-1.06x, docs/benchmarks.md).
    """
    import tensorflow as tf

    rows_per_sentence = strategy.rows_per_sentence
    # The results that are tensors (not None), by position, as the loop carries them.
    first_results = strategy.result(search, 1)
    outputs = {i: tf.zeros_like(r) for i, r in enumerate(first_results) if r is not None}

    def until_one_finishes(t, tokens, search, state, memory):
        def body(t, tokens, search, state):
            return (t + 1, *step(t, tokens, search, state, memory))

        def none_finished(t, tokens, search, state):
            return tf.logical_and(t < max_length,
                                  tf.logical_not(tf.reduce_any(strategy.finished(search))))

        return tf.while_loop(none_finished, body, (t, tokens, search, state))

    def drop_finished(steps, sentences, tokens, search, state, memory, outputs):
        finished = tf.logical_or(strategy.finished(search), steps >= max_length)
        done = tf.cast(tf.reshape(tf.where(finished), [-1]), tf.int32)
        results = strategy.result(_take(search, done), steps)
        where = tf.expand_dims(tf.gather(sentences, done), 1)
        outputs = {i: tf.tensor_scatter_nd_update(o, where, results[i])
                   for i, o in outputs.items()}
        open_sentences = tf.cast(tf.reshape(tf.where(tf.logical_not(finished)), [-1]), tf.int32)
        rows = tf.reshape(tf.expand_dims(open_sentences, 1) * rows_per_sentence
                          + tf.range(rows_per_sentence), [-1])
        memory = _take(memory, open_sentences if memory_per_sentence else rows)
        return (tf.gather(sentences, open_sentences), tf.gather(tokens, rows),
                _take(search, open_sentences), _take(state, rows), memory, outputs)

    def body(t, sentences, tokens, search, state, memory, outputs):
        t, tokens, search, state = until_one_finishes(t, tokens, search, state, memory)
        return (t, *drop_finished(t, sentences, tokens, search, state, memory, outputs))

    loop_vars = (int_tensor(1), *drop_finished(int_tensor(1), tf.range(batch_size), tokens,
                                                search, state, memory, outputs))
    invariants = (tf.TensorShape([]), *[_any_rows(v) for v in loop_vars[1:6]],
                  {i: o.shape for i, o in outputs.items()})
    *_, outputs = tf.while_loop(lambda t, sentences, *_: tf.size(sentences) > 0, body,
                                loop_vars, shape_invariants=invariants)
    return tuple(outputs.get(i) for i in range(len(first_results)))
