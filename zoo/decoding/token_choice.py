"""Strategies that choose each sentence's next token on its own: ``Greedy`` (the most
probable) and ``Sampling`` (drawn by ``sample``)."""

from keras import ops

from zoo.decoding.loop import decode, write_row, write_token
from zoo.decoding.sampling import argmax, sample


class Greedy:
    """The most probable token at every step. A sentence is finished once it has
    produced ``[END]`` or reached its most tokens (only the latter with
    ``stop_at_end=False``: a language model writes exactly ``max_length`` tokens); in
    the fixed-rows loop it goes on being fed and is given ``[PAD]``.

    ``special_ids``: the vocabulary's ``SpecialIds`` (its ``[START]``, ``[END]`` and
    ``[PAD]``); ``rules``: an ``OutputRules`` (repeated n-grams, length bounds), or None.

    Returns ``(tokens [B, max_length] int32, attention [B, max_length, S] or None)``.
    """

    rows_per_sentence = 1
    # What ``result`` returns, written at each row's sentence (``search["sentences"]``,
    # given on TensorFlow's fast path): only the other entries follow the open rows.
    full_batch_buffers = ("tokens", "history")

    def __init__(self, stop_at_end=True, rules=None, *, special_ids):
        self.stop_at_end, self.rules, self.special_ids = stop_at_end, rules, special_ids

    def choose(self, t, logits, search):
        """``[N]`` int32: each row's token, under the rules when there are some."""
        if self.rules is None:
            return argmax(logits)
        chosen, = self.rules.select(lambda scores, sentences: (argmax(scores)[:, None],), t,
                                    ops.cast(logits, "float32"), self._produced(search), search,
                                    self.special_ids)
        return chosen[:, 0]

    def expand(self, state):
        return state

    def initial(self, batch_size, max_length, history_shape, max_lengths):
        # [PAD] where nothing is written: after each sentence's end on TensorFlow's fast path.
        search = {"tokens": ops.full((batch_size, max_length), self.special_ids.pad, "int32"),
                  "finished": ops.zeros((batch_size,), "bool"), "max_lengths": max_lengths}
        if history_shape is not None:
            search["history"] = ops.zeros((batch_size, *history_shape), "float32")
        if self.rules is not None:
            search.update(self.rules.initial())
        return search

    def advance(self, t, logits, attention, search):
        tokens = ops.where(search["finished"], self.special_ids.pad, self.choose(t, logits, search))
        finished = ops.logical_or(search["finished"], t + 1 >= search["max_lengths"])
        if self.stop_at_end:
            finished = ops.logical_or(finished, ops.equal(tokens, self.special_ids.end))
        sentences = search.get("sentences")
        advanced = {**search, "tokens": write_token(search["tokens"], t, tokens, sentences),
                    "finished": finished}
        if "history" in search:
            advanced["history"] = write_row(search["history"], t, attention, sentences)
        return tokens, advanced, None

    def finished(self, search):
        return search["finished"]

    @staticmethod
    def _produced(search):
        """``[N, max_length]``: each row's tokens so far (its sentence's buffer row)."""
        if "sentences" in search:
            return ops.take(search["tokens"], search["sentences"], axis=0)
        return search["tokens"]

    def result(self, search, steps):
        return search["tokens"], search.get("history")


class Sampling(Greedy):
    """Each token drawn by ``sample`` (``temperature``, ``top_k``, ``top_p``) with the
    random numbers of (``seed``, step, row): ``row_ids [B]`` names each row (default
    0..B-1), so that a sentence's draws do not depend on the batch it is in; or, given
    ``uniforms [max_length, B]``, with those. ``top_k=1`` is greedy."""

    def __init__(self, temperature, seed, top_k=0, top_p=1.0, row_ids=None, uniforms=None,
                 stop_at_end=True, rules=None, *, special_ids):
        super().__init__(stop_at_end, rules, special_ids=special_ids)
        self.temperature, self.seed, self.top_k, self.top_p = temperature, seed, top_k, top_p
        self.row_ids, self.uniforms = row_ids, uniforms

    def initial(self, batch_size, max_length, history_shape, max_lengths):
        # Kept per sentence in the search, so that they follow a sentence's row.
        search = super().initial(batch_size, max_length, history_shape, max_lengths)
        search["row_ids"] = (ops.arange(batch_size, dtype="int32") if self.row_ids is None
                             else ops.cast(self.row_ids, "int32"))
        if self.uniforms is not None:
            search["uniforms"] = ops.transpose(self.uniforms)  # [B, max_length]
        return search

    def choose(self, t, logits, search):
        if self.rules is not None:
            logits = self.rules.apply(t, ops.cast(logits, "float32"), self._produced(search),
                                      search, self.special_ids)
        uniform = None if self.uniforms is None else ops.take(search["uniforms"], t, axis=1)
        return sample(logits, self.temperature, self.seed, t, self.top_k, self.top_p,
                      search["row_ids"], uniform)


def greedy_search(step_fn, state, batch_size, max_length, source_length=None,
                  return_attention=True, max_lengths=None, *, special_ids):
    """``decode`` with ``Greedy``: ``(tokens [B, max_length] int32, attention [B,
    max_length, S] or None)``."""
    return decode(step_fn, state, Greedy(special_ids=special_ids), batch_size, max_length,
                  source_length, return_attention, max_lengths=max_lengths)


def sampling_search(step_fn, state, batch_size, max_length, temperature, seed, top_k=0,
                    top_p=1.0, row_ids=None, source_length=None, return_attention=True,
                    uniforms=None, max_lengths=None, *, special_ids):
    """``decode`` with ``Sampling``; returns what ``greedy_search`` returns."""
    strategy = Sampling(temperature, seed, top_k, top_p, row_ids, uniforms,
                        special_ids=special_ids)
    return decode(step_fn, state, strategy, batch_size, max_length, source_length,
                  return_attention, max_lengths=max_lengths)
