"""Beam search with a pool of finished hypotheses, and GNMT length normalisation."""

import keras
from keras import ops

from zoo import backend
from zoo.decoding.constraints import NEG_INF as _NEG_INF
from zoo.decoding.loop import decode, write_row, write_token


def length_penalty(lengths, alpha):
    """GNMT length normalisation (Wu et al. 2016): ((5 + |Y|) / 6) ** alpha."""
    return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)


def coverage_penalty(history, beta):
    """GNMT's coverage penalty (Wu et al. 2016, eq. 14) of hypotheses whose attention rows
    are ``history [..., L, S]``: beta * sum_i log(min(sum_j attention_ji, 1)), over the
    source positions i ever attended (padding never is: it adds nothing, where its
    log 0 would make every score -inf). At most 0: a source position left unread costs."""
    return coverage_penalty_of_sums(ops.sum(history, axis=-2), beta)


def coverage_penalty_of_sums(coverage, beta):
    """``coverage_penalty`` from the attention's sums ``coverage [..., S]`` (``sum_j
    attention_ji``), which a beam search keeps step by step."""
    read = coverage > 0
    logs = ops.log(ops.where(read, ops.minimum(coverage, 1.0), 1.0))
    return beta * ops.sum(logs, axis=-1)


class Beam:
    """Beam search with GNMT length normalisation of the final scores (``alpha >= 0``).

    ``beam_size`` open hypotheses are extended at every step (the step function sees
    each sentence's K beams on consecutive rows); of the ``2 * beam_size`` best
    extensions, those that end (``[END]``) join a pool of the ``beam_size`` best
    finished hypotheses, ranked by normalised score, and the best ``beam_size`` that do
    not end stay open (as in fairseq and tensor2tensor: a finished hypothesis is never
    pushed out by open ones). The search is done when no open hypothesis can still
    reach the ``num_hypotheses`` best finished (``_nth_best_settled``): exact, and
    quick when each sentence's most tokens (``max_lengths``) are close to what it
    needs. A hypothesis that reaches its sentence's most tokens ends there, scored as it
    is; at ``max_length`` open hypotheses compete with the finished ones as they are.

    Returns ``(tokens [B, n, max_length] int32, scores [B, n], attention [B, n,
    max_length, S] or None)``, best first; a score is the hypothesis' log-probability
    divided by ``length_penalty(its length, alpha)``. ``beam_size`` and
    ``num_hypotheses`` (at most ``beam_size``) may be scalar tensors on TensorFlow.
    ``special_ids``: the vocabulary's ``SpecialIds`` (``[START]``, ``[END]``, and the
    ``[PAD]`` after a hypothesis' end).
    ``rules``: an ``OutputRules`` (repeated n-grams, length bounds) applied to each
    step's log-probabilities (a score stays the log-probability of what was chosen).
    ``beta`` > 0 adds GNMT's ``coverage_penalty`` to a finished hypothesis' score (GNMT's
    s(Y, X) = log P(Y|X) / lp(Y) + cp(X; Y)); it reads the attention, so the search must
    keep attention. As cp <= 0, the early stop stays exact.
    ``history=False``: of the attention kept, only each open hypothesis' sums over its
    steps (``[B, K, S]``, what the penalty reads), not its rows (``[B, K, L, S]``, and
    the finished pool's): the result's attention is then None. A model translating
    without returning attention searches so (the rows' writes and copies at every step
    were a tenth of a beam search of 64 sentences with the penalty).
    """

    def __init__(self, beam_size, num_hypotheses=1, alpha=0.6, rules=None, beta=0.0, *,
                 special_ids, history=True):
        self.rows_per_sentence, self.special_ids = beam_size, special_ids
        self.num_hypotheses, self.alpha, self.rules, self.beta = num_hypotheses, alpha, rules, beta
        self.history = history

    def expand(self, state):
        return keras.tree.map_structure(
            lambda s: ops.repeat(s, self.rows_per_sentence, axis=0), state)

    def initial(self, batch_size, max_length, history_shape, max_lengths):
        k, pad = self.rows_per_sentence, self.special_ids.pad
        # At the first step the K beams are copies: only the first one may be extended.
        first_only = ops.where(ops.equal(ops.arange(k, dtype="int32"), 0), 0.0, _NEG_INF)
        search = {
            "alive_tokens": ops.full((batch_size, k, max_length), pad, "int32"),
            "alive_scores": ops.tile(ops.expand_dims(first_only, 0), (batch_size, 1)),
            "finished_tokens": ops.full((batch_size, k, max_length), pad, "int32"),
            "finished_scores": ops.full((batch_size, k), _NEG_INF, "float32"),
            "max_lengths": max_lengths,
        }
        if history_shape is not None and self.beta:
            search["alive_coverage"] = ops.zeros((batch_size, k, history_shape[-1]), "float32")
        if history_shape is not None and self.history:
            search["alive_history"] = ops.zeros((batch_size, k, *history_shape), "float32")
            search["finished_history"] = ops.zeros((batch_size, k, *history_shape), "float32")
        if self.rules is not None:
            search.update(self.rules.initial())
        return search

    def advance(self, t, logits, attention, search):
        """Step ``t``'s extensions: the tokens the open beams feed the next step, the new
        open beams and finished pool, and the rows of the state the open beams continue."""
        k, doubled = self.rows_per_sentence, 2 * self.rows_per_sentence
        batch_size = ops.shape(search["alive_scores"])[0]
        batch_offsets = ops.expand_dims(ops.arange(batch_size, dtype="int32") * k, 1)  # [B, 1]
        log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
        vocab_size = ops.shape(log_probs)[-1]

        def best_extensions(log_probs, sentences):
            """The 2K best extensions ``(flat_index [B, 2K] over K x V, scores)`` of these
            sentences (None: all)."""
            alive = search["alive_scores"]
            if sentences is not None:
                alive = ops.take(alive, sentences, axis=0)
            candidates = ops.expand_dims(alive, -1) + ops.reshape(log_probs, (-1, k, vocab_size))
            scores, flat_index = top_k_by_chunks(ops.reshape(candidates, (-1, k * vocab_size)),
                                                 doubled)
            return ops.cast(flat_index, "int32"), scores

        if self.rules is None:
            flat_index, scores = best_extensions(log_probs, None)
        else:
            produced = ops.reshape(search["alive_tokens"], (batch_size * k, -1))
            flat_index, scores = self.rules.select(best_extensions, t, log_probs, produced,
                                                   search, self.special_ids, k)
        parent = ops.floor_divide(flat_index, vocab_size)  # [B, 2K]
        token = ops.mod(flat_index, vocab_size)
        # The 2K extensions, each with its parent's past.
        extended = {"tokens": write_token(_pick(search["alive_tokens"], parent), t, token)}
        coverage = None
        if attention is not None:
            rows = _pick(ops.reshape(attention, (batch_size, k, -1)), parent)
            if "alive_history" in search:
                extended["history"] = write_row(_pick(search["alive_history"], parent), t, rows)
            if "alive_coverage" in search:
                coverage = _pick(search["alive_coverage"], parent) + rows
        # A hypothesis ends with [END], or at its sentence's last allowed token.
        at_limit = ops.expand_dims(t + 1 >= search["max_lengths"], -1)
        ends = ops.logical_or(ops.equal(token, self.special_ids.end), at_limit)

        open_scores, open_pick = ops.top_k(ops.where(ends, _NEG_INF, scores), k)
        open_pick = ops.cast(open_pick, "int32")
        ended = ops.where(ends, self._final(scores, t + 1, coverage), _NEG_INF)
        pool_scores, pool_pick = ops.top_k(
            ops.concatenate([search["finished_scores"], ended], axis=1), k)
        pool_pick = ops.cast(pool_pick, "int32")
        advanced = {"alive_scores": open_scores, "finished_scores": pool_scores,
                    **{name: search[name] for name in search if name == "max_lengths"
                       or name.startswith("rule_")}}
        for name, values in extended.items():
            advanced["alive_" + name] = _pick(values, open_pick)
            advanced["finished_" + name] = _pick(
                ops.concatenate([search["finished_" + name], values], axis=1), pool_pick)
        if coverage is not None:  # a finished hypothesis' score has its penalty already
            advanced["alive_coverage"] = _pick(coverage, open_pick)
        open_rows = ops.reshape(_pick(parent, open_pick) + batch_offsets, (-1,))
        next_tokens = ops.reshape(_pick(token, open_pick), (-1,))
        return next_tokens, advanced, open_rows

    def finished(self, search):
        longest = length_penalty(search["max_lengths"], self.alpha)
        return _nth_best_settled(search["finished_scores"], search["alive_scores"], longest,
                                 self.num_hypotheses)

    def _final(self, scores, lengths, coverage):
        """A finished hypothesis' score: normalised, and with the coverage penalty of its
        attention's sums ``coverage``."""
        normalised = scores / length_penalty(lengths, self.alpha)
        if not self.beta:
            return normalised
        if coverage is None:
            raise ValueError("A coverage penalty reads the attention: decode with "
                             "return_attention=True, over a step function that returns it.")
        return normalised + coverage_penalty_of_sums(coverage, self.beta)

    def result(self, search, steps):
        # Open hypotheses (at max_length, or ones that can no longer win) compete as they are.
        open_scores = self._final(search["alive_scores"], steps, search.get("alive_coverage"))
        scores, pick = ops.top_k(ops.concatenate([search["finished_scores"], open_scores], axis=1),
                                 self.num_hypotheses)
        pick = ops.cast(pick, "int32")

        def best(name):
            both = ops.concatenate([search["finished_" + name], search["alive_" + name]], axis=1)
            return _pick(both, pick)

        return best("tokens"), scores, best("history") if "alive_history" in search else None


def beam_hypotheses(step_fn, state, batch_size, max_length, beam_size, num_hypotheses=1,
                    alpha=0.6, source_length=None, return_attention=True, max_lengths=None,
                    beta=0.0, *, special_ids):
    """``decode`` with ``Beam``: the ``num_hypotheses`` best, with their scores."""
    strategy = Beam(beam_size, num_hypotheses, alpha, beta=beta, special_ids=special_ids)
    return decode(step_fn, state, strategy, batch_size, max_length, source_length,
                  return_attention, max_lengths=max_lengths)


def beam_search(step_fn, state, batch_size, max_length, beam_size, alpha=0.6,
                source_length=None, return_attention=True, max_lengths=None, *, special_ids):
    """The best hypothesis of ``beam_hypotheses``: ``(tokens [B, max_length] int32,
    attention [B, max_length, S] or None)``."""
    tokens, _, attention = beam_hypotheses(step_fn, state, batch_size, max_length, beam_size,
                                           1, alpha, source_length, return_attention,
                                           max_lengths, special_ids=special_ids)
    return tokens[:, 0], (None if attention is None else attention[:, 0])


def _nth_best_settled(finished_scores, alive_scores, longest_penalty, num_hypotheses):
    """Per sentence: can no open hypothesis reach the ``num_hypotheses`` best finished?

    Log-probabilities only fall as a hypothesis grows, and its length penalty grows at
    most to that of its sentence's most tokens (for ``alpha >= 0``): an open hypothesis
    can end with at best ``score / longest_penalty`` (``[B]``, the penalty of that
    length). Once the n-th best finished score is at least that, more steps cannot
    change the n returned, so the search stops instead of letting open beams wander to
    the limit. The tighter the limit, the sooner: with a length penalty of 1.5 and 64
    tokens at most, an open score has to fall 39 times below the finished one.
    """
    nth_finished = ops.top_k(finished_scores, num_hypotheses)[0][:, -1]
    best_possible = ops.max(alive_scores, axis=-1) / longest_penalty
    return nth_finished >= best_possible


TOP_K_CHUNK = 64  # candidates per chunk in top_k_by_chunks


def top_k_by_chunks(values, k):
    """``ops.top_k(values [B, W], k)``, the same values and indices (equal values: the
    lower index first), found among the k chunks of ``TOP_K_CHUNK`` with the highest
    maxima: an element of the top k lies in one of those (else k chunks would each hold
    one ahead of it). On TensorFlow where ``W`` is known and at least 16 chunks per
    chosen one: its ``TopKV2`` took 2.0 ms a beam step over ``[64, 5 x 4519]`` (a
    profile, two threads), this 0.5 (a maximum per chunk is one vectorised pass).
    Elsewhere ``ops.top_k``."""
    width, chunk = values.shape[-1], TOP_K_CHUNK
    if not backend.is_tensorflow() or width is None or width < 16 * chunk * k:
        return ops.top_k(values, k)
    chunks = -(-width // chunk)
    padded = ops.pad(values, [[0, 0], [0, chunks * chunk - width]],
                     constant_values=float("-inf"))
    grouped = ops.reshape(padded, (-1, chunks, chunk))
    best_chunks = ops.sort(ops.top_k(ops.max(grouped, axis=-1), k)[1], axis=-1)  # by index
    picked = ops.reshape(_pick(grouped, best_chunks), (-1, k * chunk))
    top_values, within = ops.top_k(picked, k)
    return top_values, _pick(best_chunks, within // chunk) * chunk + within % chunk


def _pick(tensor, positions):
    """``tensor [B, M, ...]`` at ``positions [B, P]`` along its second axis: ``[B, P, ...]``."""
    if backend.is_tensorflow():
        import tensorflow as tf

        # One op: through keras.ops (take_along_axis, or the flat rows below) a dozen,
        # and a beam step picks five times.
        return tf.gather(tensor, positions, batch_dims=1)
    batch_size, width = ops.shape(tensor)[0], ops.shape(tensor)[1]
    inner = ops.shape(tensor)[2:]
    rows = ops.expand_dims(ops.arange(batch_size, dtype="int32") * width, 1) + positions
    picked = ops.take(ops.reshape(tensor, (-1, *inner)), ops.reshape(rows, (-1,)), axis=0)
    return ops.reshape(picked, (batch_size, ops.shape(positions)[1], *inner))
