"""Rules an output must keep, applied to each step's scores before a strategy chooses:
``OutputRules`` (no repeated n-gram; an output length bounded per sentence; a given
start)."""

from keras import ops

from zoo import backend

NEG_INF = -1e9  # finite, so that scores never become NaN


class OutputRules:
    """What ``Greedy``, ``Sampling`` and ``Beam`` may not choose at a step.

    - ``no_repeat_ngram_size`` n (0: off): a token that would repeat an n-gram the row
      has already produced (fairseq's, OpenNMT's ``no_repeat_ngram_size``);
    - ``min_lengths [B]``: ``[END]`` before a sentence's output has that many tokens;
    - ``end_lengths [B]``: anything but ``[END]`` once it has that many (a length at or
      past the search's most tokens: never);
    - ``prefix [B, P]`` (right-padded with ``[PAD]``): anything but ``prefix[:, t]`` at
      step ``t`` of the sentence's prefix (it overrides the other rules: the output
      starts as given, then the search goes on).

    ``[END]`` and ``[PAD]`` are the ids of the strategy's ``SpecialIds``. Each rule may
    be a tensor (a SavedModel's or a TFLite file's inputs); a rule left None costs
    nothing. The per-sentence lengths are kept in the search, so that they follow a
    sentence's rows when the loop drops the finished ones.
    """

    def __init__(self, no_repeat_ngram_size=None, min_lengths=None, end_lengths=None,
                 prefix=None):
        self.no_repeat_ngram_size = no_repeat_ngram_size
        self.per_sentence = {"min_lengths": min_lengths, "end_lengths": end_lengths,
                             "prefix": prefix}

    def initial(self):
        """The search's per-sentence entries ``{name: [B, ...] int32}``."""
        return {"rule_" + name: ops.cast(values, "int32")
                for name, values in self.per_sentence.items() if values is not None}

    def apply(self, t, scores, history, search, special_ids, rows_per_sentence=1, bans=True):
        """``scores [N, V]`` with what step ``t`` may not choose set to ``NEG_INF``;
        ``history [N, max_length]``: each row's tokens, its first ``t`` written;
        ``special_ids``: the strategy's ``SpecialIds`` (its end, and the prefix's pad).
        ``bans=False``: without the bans that ``select`` writes afterwards, where it
        does."""
        unruled, vocabulary = scores, ops.arange(ops.shape(scores)[-1])
        n = self.no_repeat_ngram_size
        in_place = self._bans_in_place
        if in_place:
            if bans:
                scores = self._ban_in_place(t, scores, history, search, special_ids,
                                            rows_per_sentence)
        elif n is not None:
            scores = ops.where(repeated_ngram_tokens(history, t, n, ops.shape(scores)[-1]),
                               NEG_INF, scores)
        is_end = ops.expand_dims(ops.equal(vocabulary, special_ids.end), 0)
        if "rule_min_lengths" in search and not in_place:
            too_short = ops.expand_dims(t < _per_row(search["rule_min_lengths"],
                                                     rows_per_sentence), 1)
            scores = ops.where(ops.logical_and(too_short, is_end), NEG_INF, scores)
        if "rule_end_lengths" in search:
            at_end = ops.expand_dims(t >= _per_row(search["rule_end_lengths"],
                                                   rows_per_sentence), 1)
            scores = ops.where(ops.logical_and(at_end, ops.logical_not(is_end)), NEG_INF, scores)
        if "rule_prefix" in search:
            given, forcing = _given_token(t, _per_row(search["rule_prefix"], rows_per_sentence),
                                          special_ids)
            only_given = ops.where(ops.equal(ops.expand_dims(vocabulary, 0),
                                             ops.expand_dims(given, 1)), unruled, NEG_INF)
            scores = ops.where(ops.expand_dims(forcing, 1), only_given, scores)
        return scores

    def select(self, pick, t, scores, history, search, special_ids, rows_per_sentence=1):
        """``pick(apply(...), None)``: a strategy's picks under the rules.

        ``pick(scores [N, V], sentences) -> (chosen, *rest)``, all ``[B, ...]`` per
        sentence; ``chosen [B, C]``: the scores each sentence picked, as indices into its
        rows' scores laid end to end (row within the sentence * V + token).
        ``sentences``: None for all, else ``[M]``, the sentences of ``scores``' rows.

        On TensorFlow with a Python int n, ``pick`` first sees the scores without the
        n-gram and least-length bans; the sentences that picked a banned token pick again
        from their rows' scores with the bans written. The same choice, the same
        scores: writing ``NEG_INF`` over scores left unpicked (scores above it, as a
        model's logits and log-probabilities are) changes no pick. It spares copying
        every row's scores: ``tensor_scatter_nd_update`` copies its input on the CPU (it
        asks for host memory, which a CPU op's output is not marked as), and that copy
        of the logits was a tenth of a greedy search of 64 sentences.
        """
        # A static number of rows (one sentence's search) copies little, and its steps
        # are short: the picks in two passes made one sentence's greedy and beam 5
        # search 0.90x and 0.83x as fast (zoo benchmark decoding --baseline).
        if not self._bans_in_place or scores.shape[0] is not None:
            return pick(self.apply(t, scores, history, search, special_ids,
                                   rows_per_sentence), None)
        import tensorflow as tf

        k, vocab_size = rows_per_sentence, tf.shape(scores)[1]
        ruled = self.apply(t, scores, history, search, special_ids, k, bans=False)
        picked = pick(ruled, None)
        tokens, banned = self._banned_pairs(t, history, search, special_ids, k)
        rows, chosen = picked[0] // vocab_size, picked[0] % vocab_size  # [B, C]
        picked_tokens, picked_banned = [  # [B, C, P]: the bans of each pick's row
            tf.gather(tf.reshape(x, [-1, k, tf.shape(x)[1]]), rows, batch_dims=1)
            for x in (tokens, banned)]
        hits = tf.reduce_any(tf.logical_and(tf.equal(picked_tokens, chosen[:, :, None]),
                                            picked_banned), [1, 2])
        if "rule_prefix" in search:  # a given token is picked whatever the bans
            hits = tf.logical_and(hits, tf.logical_not(
                _given_token(t, search["rule_prefix"], special_ids)[1]))
        again = tf.cast(tf.reshape(tf.where(hits), [-1]), tf.int32)
        rows = tf.reshape(again[:, None] * k + tf.range(k), [-1])
        # Their rows as ``apply`` makes them: the bans and the length rules both write
        # NEG_INF, in either order.
        written = _write_banned(*[tf.gather(x, rows) for x in (ruled, tokens, banned)])
        return tuple(tf.tensor_scatter_nd_update(first, again[:, None], second)
                     for first, second in zip(picked, pick(written, again)))

    @property
    def _bans_in_place(self):
        """The n-gram rule of a Python int n on TensorFlow: ``_ban_in_place``."""
        return backend.is_tensorflow() and isinstance(self.no_repeat_ngram_size, int)

    def _ban_in_place(self, t, scores, history, search, special_ids, rows_per_sentence):
        """The n-gram rule of a Python int n, and the least length, on TensorFlow eagerly
        or in ``translate``'s graph: the few banned (row, token) pairs written into
        ``scores`` by one ``tensor_scatter_nd_update`` (a copy of ``scores`` on the CPU:
        see ``select``), instead of a scatter into zeros over ``[N, V]``, two masks and
        two selects (beam 5 over 64 sentences: 1.06x, 1.02-1.09, on a 2-core AMD EPYC).
        Not for an export: TFLite's builtins have no ``TensorScatterNdUpdate`` (an
        export's n is a tensor)."""
        return _write_banned(scores, *self._banned_pairs(t, history, search, special_ids,
                                                         rows_per_sentence))

    def _banned_pairs(self, t, history, search, special_ids, rows_per_sentence):
        """``(tokens, banned)``, both ``[N, P]``: the tokens the n-gram rule of a Python
        int n and the least length may ban at step ``t``, and whether each row does."""
        import tensorflow as tf

        following, repeats = repeated_ngrams(history, t, self.no_repeat_ngram_size)
        tokens, banned = [following], [repeats]
        if "rule_min_lengths" in search:
            too_short = t < _per_row(search["rule_min_lengths"], rows_per_sentence)
            tokens.append(tf.fill([tf.shape(history)[0], 1], special_ids.end))
            banned.append(too_short[:, None])
        return tf.concat(tokens, 1), tf.concat(banned, 1)


def _write_banned(scores, tokens, banned):
    """``scores [N, V]`` with ``NEG_INF`` at each row's ``tokens [N, P]`` where ``banned
    [N, P]``: one ``tensor_scatter_nd_update`` (TensorFlow)."""
    import tensorflow as tf

    rows = tf.broadcast_to(tf.range(tf.shape(tokens)[0])[:, None], tf.shape(tokens))
    pairs = tf.boolean_mask(tf.stack([rows, tokens], -1), banned)
    # a pair may come twice (one token after two n-grams): both write the same value
    return tf.tensor_scatter_nd_update(
        scores, pairs, tf.fill(tf.shape(pairs)[:1], tf.constant(NEG_INF, scores.dtype)))


def _given_token(t, prefix, special_ids):
    """``(given, forcing)``, both ``[N]``: each row's prefix token at step ``t`` of
    ``prefix [N, P]``, and whether it is one (not past the prefix, not its ``[PAD]``)."""
    width = ops.shape(prefix)[1]
    given = ops.take(prefix, ops.minimum(t, width - 1), axis=1)
    return given, ops.logical_and(t < width, ops.not_equal(given, special_ids.pad))


def _per_row(values, rows_per_sentence):
    """``[B]`` per sentence as ``[B * rows_per_sentence]`` (which may be a tensor) per row."""
    if isinstance(rows_per_sentence, int) and rows_per_sentence == 1:
        return values
    return ops.repeat(values, rows_per_sentence, axis=0)


def repeated_ngram_tokens(history, t, n, vocab_size):
    """``[N, V]`` bool: the tokens that would make a row's n-gram ending at position
    ``t`` one it already has (``history [N, L]``, positions ``0..t-1`` written).

    The n-grams already there start at ``j <= t - n``; one is repeated when its first
    n-1 tokens are the row's last n-1: then its last token is banned. In index ops
    over the static ``L`` (any ``n``, a tensor too, in one graph: SavedModel, TFLite).
    The offsets ``k`` compared are the n-1 of a Python int ``n``, else all ``L`` (those
    from n-1 on masked): ``[N, L, L]`` gathered and compared at every step took a fifth
    of a batch's greedy search (64 sentences, ``max_length`` 64, n = 3).
    """
    following, repeats = repeated_ngrams(history, t, n)
    rows, length = ops.shape(history)[0], ops.shape(history)[1]
    row_index = ops.repeat(ops.arange(rows, dtype="int32"), length)
    indices = ops.stack([row_index, ops.reshape(following, (-1,))], axis=1)
    hits = ops.scatter(indices, ops.reshape(ops.cast(repeats, "float32"), (-1,)),
                       (rows, vocab_size))
    return hits > 0


def repeated_ngrams(history, t, n):
    """``(following, repeats)``, both ``[N, L]``: the token after the n-gram starting at
    each position ``j`` of a row, and whether that n-gram's first n-1 tokens are the
    row's last n-1 (then ``following`` is banned at step ``t``)."""
    length = ops.shape(history)[1]
    width = max(n - 1, 1) if isinstance(n, int) else length
    n = ops.cast(n, "int32")
    positions = ops.arange(length, dtype="int32")
    offsets = ops.arange(width, dtype="int32")
    last = offsets + t - n + 1  # the row's last n-1 tokens: offsets k < n - 1
    starts = ops.reshape(ops.expand_dims(positions, 1) + offsets, (-1,))  # (j, k) -> j + k
    earlier = ops.reshape(ops.take(history, ops.clip(starts, 0, length - 1), axis=1),
                          (-1, length, width))
    own = ops.expand_dims(ops.take(history, ops.clip(last, 0, length - 1), axis=1), 1)
    compared = ops.expand_dims(offsets < n - 1, 0)  # [1, k]
    same = ops.all(ops.logical_or(ops.equal(earlier, own), ops.logical_not(compared)), axis=-1)
    seen = ops.logical_and(positions <= t - n, n > 0)  # the n-grams already written
    repeats = ops.logical_and(same, ops.expand_dims(seen, 0))  # [N, j]
    following = ops.take(history, ops.clip(positions + n - 1, 0, length - 1), axis=1)
    return following, repeats
