"""Greedy and beam search over a step function with known probabilities."""

import re
from unittest import mock

import hypothesis
import hypothesis.strategies
import numpy as np
import pytest
import tensorflow as tf

from zoo import decoding
from zoo.decoding import beam, sampling
from zoo.decoding.constraints import NEG_INF
from zoo.text.vocabulary import END_ID, PAD_ID, START_ID

A, B, C = 4, 5, 6
VOCAB = 7
# The zoo's reserved ids, handed to decoding as the models hand them.
IDS = decoding.SpecialIds(start=START_ID, end=END_ID, pad=PAD_ID)


def _markov_step(table):
    """A step function whose next-token distribution depends on the previous token only."""
    logits = np.full((VOCAB, VOCAB), -30.0, "float32")
    for previous, distribution in table.items():
        for token, probability in distribution.items():
            logits[previous, token] = np.log(probability)
    logits = tf.constant(logits)

    def step(tokens, state):
        attention = tf.one_hot(tf.fill(tf.shape(tokens), 1), 3)  # always looks at position 1
        return tf.gather(logits, tokens), {"steps": state["steps"] + 1}, attention

    return step


# Greedy takes A (0.6) and then has to end with probability 0.5: 0.30 in all.
# B (0.4) then END (1.0) is more probable: 0.40. A beam of 2 finds it.
TRAP = {START_ID: {A: 0.6, B: 0.4}, A: {END_ID: 0.5, C: 0.5}, B: {END_ID: 1.0},
        C: {END_ID: 1.0}}


def _run(search, **kwargs):
    state = {"steps": tf.zeros([2, 1])}
    tokens, attention = search(_markov_step(TRAP), state, 2, 5, source_length=3,
                               special_ids=IDS, **kwargs)
    return tokens.numpy(), attention


def test_greedy_takes_the_locally_best_token_and_pads_after_end():
    tokens, attention = _run(decoding.greedy_search)
    np.testing.assert_array_equal(tokens, [[A, END_ID, PAD_ID, PAD_ID, PAD_ID]] * 2)
    assert attention.shape == (2, 5, 3)
    np.testing.assert_array_equal(attention[0, :2], [[0, 1, 0], [0, 1, 0]])


def _countdown_step(rows_seen):
    """Each row emits A until its state counts down to zero, then [END]; attention
    looks at position (count mod 3). Records how many rows every call computes."""

    def step(tokens, state):
        rows_seen.append(int(tf.shape(tokens)[0]))
        left = state["left"]
        logits = tf.where(tf.expand_dims(left > 0, 1), tf.one_hot(tf.fill(tf.shape(left), A), VOCAB),
                          tf.one_hot(tf.fill(tf.shape(left), END_ID), VOCAB))
        return logits, {"left": left - 1}, tf.one_hot(left % 3, 3)

    return step


def test_greedy_drops_finished_sentences_and_matches_the_fixed_batch():
    state = {"left": tf.constant([0, 3, 1])}
    rows_seen = []
    tokens, attention = decoding.greedy_search(_countdown_step(rows_seen), state, 3, 6,
                                               source_length=3, special_ids=IDS)
    np.testing.assert_array_equal(tokens, [[END_ID, 0, 0, 0, 0, 0],
                                           [A, A, A, END_ID, 0, 0],
                                           [A, END_ID, 0, 0, 0, 0]])
    assert rows_seen == [3, 2, 1, 1]  # a sentence leaves the batch after its [END]
    fixed_tokens, fixed_attention = decoding.decode(
        _countdown_step([]), state, decoding.Greedy(special_ids=IDS), 3, 6, source_length=3)
    np.testing.assert_array_equal(tokens, fixed_tokens)
    # Attention rows of the steps a sentence took are the same; later ones are zero.
    np.testing.assert_array_equal(attention * (tokens[..., None] > 0),
                                  fixed_attention * (fixed_tokens[..., None] > 0))
    np.testing.assert_array_equal(attention[0, 1:], 0.0)

    # The same in a graph, where the batch size is unknown when the loop is built.
    search = tf.function(lambda left: decoding.greedy_search(
        _countdown_step([]), {"left": left}, tf.shape(left)[0], 6, source_length=3,
        special_ids=IDS))
    graph_tokens, graph_attention = search(state["left"])
    np.testing.assert_array_equal(graph_tokens, tokens)
    np.testing.assert_array_equal(graph_attention, attention)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_search_finds_the_more_probable_sequence(alpha):
    tokens, attention = _run(decoding.beam_search, beam_size=2, alpha=alpha)
    np.testing.assert_array_equal(tokens, [[B, END_ID, PAD_ID, PAD_ID, PAD_ID]] * 2)
    assert attention.shape == (2, 5, 3)


def test_a_finished_hypothesis_is_kept_while_the_open_beam_goes_on():
    """Greedy ends after A (A then [END] or C, 0.5 each: the first index wins the tie). A
    beam of one keeps [A, END] among the finished and goes on with [A, C], which ends at
    the same probability, 0.30, one token longer: with alpha > 0 it wins, with alpha 0
    the tie goes to the one finished first."""
    greedy, _ = _run(decoding.greedy_search)
    np.testing.assert_array_equal(greedy[0, :2], [A, END_ID])
    longer, _ = _run(decoding.beam_search, beam_size=1, alpha=0.6)
    np.testing.assert_array_equal(longer[0, :3], [A, C, END_ID])
    tied, _ = _run(decoding.beam_search, beam_size=1, alpha=0.0)
    np.testing.assert_array_equal(tied, greedy)


def test_length_penalty_prefers_longer_hypotheses_as_alpha_grows():
    # Short: END at once (0.5). Long: A A A A END (0.5 * 0.99^4 ~ 0.48).
    table = {START_ID: {END_ID: 0.5, A: 0.5}, A: {A: 0.99, END_ID: 0.01}}
    state = {"steps": tf.zeros([1, 1])}
    short, _ = decoding.beam_search(_markov_step(table), state, 1, 6, beam_size=3, alpha=0.0,
                                    source_length=3, special_ids=IDS)
    assert short.numpy()[0, 0] == END_ID
    long, _ = decoding.beam_search(_markov_step(table), state, 1, 6, beam_size=3, alpha=2.0,
                                   source_length=3, special_ids=IDS)
    assert long.numpy()[0, 0] == A


def test_beam_search_stops_once_no_open_beam_can_win():
    # A ends at once (0.9); B (0.1) loops without ever ending. Even with the length
    # penalty's largest reward, B cannot catch up with [A, END]: stop, don't run to 50.
    table = {START_ID: {A: 0.9, B: 0.1}, A: {END_ID: 1.0}, B: {B: 1.0}}
    markov, calls = _markov_step(table), []

    def counting_step(tokens, state):
        calls.append(1)  # eager: the while loop runs the Python body once per step
        return markov(tokens, state)

    tokens, _ = decoding.beam_search(counting_step, {"steps": tf.zeros([1, 1])}, 1, 50,
                                     beam_size=2, alpha=1.0, source_length=3, special_ids=IDS)
    assert tokens.numpy()[0, :3].tolist() == [A, END_ID, PAD_ID]
    assert len(calls) == 2


# Another vocabulary's special ids: decoding uses those it is handed, in the loop (step 0's
# start, the pad after an end, on TensorFlow's row-dropping path and in the fixed-rows loop of
# a static batch of one) and in the output rules (the end a length rule allows, a prefix's pad).
OTHER_IDS = decoding.SpecialIds(start=0, end=1, pad=2)


@pytest.mark.parametrize("batch_size", [1, 2])
@pytest.mark.parametrize("strategy", ["greedy", "beam"])
def test_decoding_uses_the_special_ids_it_is_handed(strategy, batch_size):
    end, pad = OTHER_IDS.end, OTHER_IDS.pad
    # The TRAP in these ids: greedy takes A then ends; a beam finds B then the end.
    trap = {OTHER_IDS.start: {A: 0.6, B: 0.4}, A: {end: 0.5, C: 0.5}, B: {end: 1.0},
            C: {end: 1.0}}
    state = {"steps": tf.zeros([batch_size, 1])}

    def search(table, rules=None):
        chosen = (decoding.Greedy(rules=rules, special_ids=OTHER_IDS) if strategy == "greedy"
                  else decoding.Beam(2, rules=rules, special_ids=OTHER_IDS))
        tokens = decoding.decode(_markov_step(table), state, chosen, batch_size, 5,
                                 source_length=3)[0].numpy()
        return tokens if strategy == "greedy" else tokens[:, 0]

    best = A if strategy == "greedy" else B
    np.testing.assert_array_equal(search(trap), [[best, end, pad, pad, pad]] * batch_size)
    loop = {OTHER_IDS.start: {A: 1.0}, A: {A: 1.0}}
    ends_after_two = decoding.OutputRules(end_lengths=tf.fill([batch_size], 2))
    np.testing.assert_array_equal(search(loop, ends_after_two),
                                  [[A, A, end, pad, pad]] * batch_size)
    # The prefix [B, pad]: B is forced, then the search goes on (B is followed by the end).
    forced_b = decoding.OutputRules(prefix=tf.constant([[B, pad]] * batch_size))
    np.testing.assert_array_equal(search(trap, forced_b), [[B, end, pad, pad, pad]] * batch_size)


@pytest.mark.parametrize("ids", [{"start": -1, "end": 3, "pad": 0},
                                 {"start": 2, "end": "3", "pad": 0},
                                 {"start": 2, "end": 3, "pad": True}])
def test_special_ids_must_be_token_ids(ids):
    name, value = next((n, v) for n, v in ids.items() if not (type(v) is int and v >= 0))
    with pytest.raises(ValueError, match=rf"SpecialIds.{name} must be a token id \(an int >= 0\); "
                                         rf"received {re.escape(repr(value))}"):
        decoding.SpecialIds(**ids)


def test_fixed_maximum_length_is_respected():
    loop = {START_ID: {A: 1.0}, A: {A: 1.0}}
    state = {"steps": tf.zeros([1, 1])}
    for search, kwargs in ((decoding.greedy_search, {}), (decoding.beam_search, {"beam_size": 2})):
        tokens, _ = search(_markov_step(loop), state, 1, 4, source_length=3, special_ids=IDS,
                           **kwargs)
        np.testing.assert_array_equal(tokens.numpy(), [[A, A, A, A]])


def test_gnmt_length_penalty_values():
    np.testing.assert_allclose(decoding.length_penalty(tf.constant([1, 7]), 1.0), [1.0, 2.0])


def test_coverage_penalty_prefers_the_hypothesis_that_reads_the_whole_source():
    """[B, END] is likelier (0.55 against 0.45), but while writing it the attention
    looks at source position 1 only 0.1 in all; [A, END] reads both positions fully.
    GNMT's cp = beta * sum_i log(min(coverage_i, 1)) = beta * log(0.1) for [B, END]."""
    table = {START_ID: {A: 0.45, B: 0.55}, A: {END_ID: 1.0}, B: {END_ID: 1.0}}
    markov = _markov_step(table)
    looks_at = np.zeros((VOCAB, 2), "float32")
    looks_at[:, 0] = 1.0  # [START], and [END] (after which nothing is kept)
    looks_at[A], looks_at[B] = [0.0, 1.0], [0.9, 0.1]
    looks_at = tf.constant(looks_at)

    def step(tokens, state):
        logits, state, _ = markov(tokens, state)
        return logits, state, tf.gather(looks_at, tokens)

    def search(beta):
        return decoding.beam_hypotheses(step, {"steps": tf.zeros([1, 1])}, 1, 4, beam_size=2,
                                        num_hypotheses=2, alpha=0.0, source_length=2, beta=beta,
                                        special_ids=IDS)

    tokens, scores, _ = search(0.0)
    assert tokens.numpy()[0, 0, :2].tolist() == [B, END_ID]
    tokens, scores, _ = search(0.5)
    assert tokens.numpy()[0, :, :2].tolist() == [[A, END_ID], [B, END_ID]]
    np.testing.assert_allclose(scores.numpy()[0], [np.log(0.45), np.log(0.55) + 0.5 * np.log(0.1)],
                               rtol=1e-5)
    with pytest.raises(ValueError, match="A coverage penalty reads the attention"):
        decoding.beam_hypotheses(step, {"steps": tf.zeros([1, 1])}, 1, 4, beam_size=2,
                                 source_length=2, beta=0.5, return_attention=False, special_ids=IDS)


def test_a_beam_that_returns_no_attention_keeps_only_the_sums_the_penalty_reads():
    """``Beam(history=False)`` (what a model translating without attention runs) finds the
    hypotheses and scores that the search keeping every attention row finds, on both of
    TensorFlow's loops (fixed rows for a static batch of one, dropped rows else), and
    carries ``[B, K, S]`` sums instead of ``[B, K, L, S]`` rows."""
    rng = np.random.default_rng(7)
    vocabulary, source_length = 40, 6
    logits = tf.constant(rng.normal(scale=2.0, size=(vocabulary, vocabulary)), tf.float32)
    looks_at = tf.nn.softmax(tf.constant(rng.normal(scale=3.0, size=(vocabulary, source_length)),
                                         tf.float32))

    def step(tokens, state):
        return tf.gather(logits, tokens), {"steps": state["steps"] + 1}, tf.gather(looks_at, tokens)

    def search(batch_size, history):
        strategy = decoding.Beam(4, num_hypotheses=3, alpha=0.6, beta=0.4, special_ids=IDS,
                                 history=history)
        searched = strategy.initial
        carried = {}

        def initial(*args):
            carried.update(searched(*args))
            return carried

        strategy.initial = initial
        tokens, scores, attention = decoding.decode(
            step, {"steps": tf.zeros([batch_size, 1])}, strategy, batch_size, 12, source_length,
            max_lengths=tf.constant([12, 7, 10][:batch_size]))
        return tokens.numpy(), scores.numpy(), attention, carried

    def score_by_hand(tokens, most):
        """log P / ((5 + |Y|) / 6) ** 0.6 + 0.4 * sum_i log(min(coverage_i, 1)), each step's
        attention that of the token it was fed."""
        length = list(tokens).index(END_ID) + 1 if END_ID in tokens else most
        fed = [START_ID, *tokens[: length - 1]]
        log_p = sum(tf.nn.log_softmax(logits[f])[y].numpy() for f, y in zip(fed, tokens))
        coverage = tf.reduce_sum(tf.gather(looks_at, fed), axis=0).numpy()
        return (log_p / ((5 + length) / 6) ** 0.6
                + 0.4 * np.log(np.minimum(coverage, 1.0)).sum())

    for batch_size in (1, 3):
        rows, rows_scores, rows_attention, rows_search = search(batch_size, True)
        sums, sums_scores, sums_attention, sums_search = search(batch_size, False)
        np.testing.assert_array_equal(sums, rows)
        np.testing.assert_allclose(sums_scores, rows_scores, rtol=1e-6)
        expected = [[score_by_hand(hypothesis, most) for hypothesis in sentence]
                    for sentence, most in zip(rows, [12, 7, 10])]
        np.testing.assert_allclose(sums_scores, expected, rtol=1e-5)
        assert rows_attention.shape == (batch_size, 3, 12, source_length)
        assert sums_attention is None
        assert tuple(sums_search["alive_coverage"].shape) == (batch_size, 4, source_length)
        assert not {"alive_history", "finished_history"} & set(sums_search)
        assert tuple(rows_search["alive_history"].shape) == (batch_size, 4, 12, source_length)


def test_coverage_penalty_values():
    history = tf.constant([[[0.5, 0.25, 0.0], [0.7, 0.25, 0.0]]])  # 2 steps, 3rd position: padding
    np.testing.assert_allclose(decoding.coverage_penalty(history, 0.2),
                               [0.2 * np.log(0.5)], rtol=1e-6)


@hypothesis.settings(max_examples=40, deadline=None)
@hypothesis.given(seed=hypothesis.strategies.integers(0, 2**16),
                  rows=hypothesis.strategies.integers(1, 3),
                  width=hypothesis.strategies.integers(1, 3000),
                  k=hypothesis.strategies.integers(1, 3),
                  levels=hypothesis.strategies.sampled_from([2, 5, 1000]))
@hypothesis.example(seed=1, rows=2, width=2999, k=2, levels=5)  # chunked: 47 chunks, 2 chosen
@hypothesis.example(seed=2, rows=1, width=1100, k=1, levels=2)  # chunked: all -inf and NEG_INF
def test_top_k_by_chunks_is_top_k_ties_and_all(seed, rows, width, k, levels):
    """The same values and indices as tf.math.top_k (equal values: the lower index first),
    over widths below and above the chunked form's least, with few distinct values (many
    ties), NEG_INF and -inf among them."""
    rng = np.random.default_rng(seed)
    choices = np.concatenate([rng.normal(size=levels - 2), [NEG_INF, -np.inf]])
    values = tf.constant(rng.choice(choices, size=(rows, width)), tf.float32)
    k = min(k, width)
    expected = tf.math.top_k(values, k)
    found = beam.top_k_by_chunks(values, k)
    np.testing.assert_array_equal(found[0], expected[0])
    np.testing.assert_array_equal(found[1], expected[1])


def test_top_k_by_chunks_puts_equal_values_in_index_order_across_chunks():
    """A tie between a chunk's second value and a later-ranked chunk's maximum: the lower
    index first, as tf.math.top_k (the chosen chunks are gathered in index order)."""
    chunk = beam.TOP_K_CHUNK
    values = np.full((1, 32 * chunk), -5.0, np.float32)
    values[0, [5 * chunk, 5 * chunk + 1, 2 * chunk]] = [3.0, 1.0, 1.0]
    found_values, found_indices = beam.top_k_by_chunks(tf.constant(values), 2)
    assert found_values.numpy().tolist() == [[3.0, 1.0]]
    assert found_indices.numpy().tolist() == [[5 * chunk, 2 * chunk]]


# -- n-best ----------------------------------------------------------------------------

# Three ways to end, each with a probability known in advance:
# [B, END] 0.40, [A, END] 0.30, [A, C, END] 0.30 (the TRAP above), nothing else.
def _log_probability(*probabilities):
    return float(np.sum(np.log(probabilities)))


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_n_best_are_ranked_by_length_normalised_log_probability(alpha):
    state = {"steps": tf.zeros([2, 1])}
    tokens, scores, attention = decoding.beam_hypotheses(
        _markov_step(TRAP), state, 2, 5, beam_size=3, num_hypotheses=3, alpha=alpha,
        source_length=3, special_ids=IDS)
    expected = sorted([
        ([B, END_ID], _log_probability(0.4, 1.0) / (7 / 6) ** alpha),
        ([A, END_ID], _log_probability(0.6, 0.5) / (7 / 6) ** alpha),
        ([A, C, END_ID], _log_probability(0.6, 0.5, 1.0) / (8 / 6) ** alpha),
    ], key=lambda hypothesis: -hypothesis[1])  # a stable sort: ties keep this order
    for sentence in range(2):
        assert [t[: len(e)].tolist() for t, (e, _) in zip(tokens[sentence].numpy(), expected)] \
            == [e for e, _ in expected]
        np.testing.assert_allclose(scores[sentence], [s for _, s in expected], rtol=1e-5)
    assert attention.shape == (2, 3, 5, 3)


def test_the_best_of_the_n_best_is_the_one_best():
    state = {"steps": tf.zeros([2, 1])}
    best, _ = decoding.beam_search(_markov_step(TRAP), state, 2, 5, beam_size=3,
                                   source_length=3, special_ids=IDS)
    n_best, _, _ = decoding.beam_hypotheses(_markov_step(TRAP), state, 2, 5, beam_size=3,
                                            num_hypotheses=3, source_length=3, special_ids=IDS)
    np.testing.assert_array_equal(n_best[:, 0], best)


@hypothesis.settings(max_examples=10, deadline=None)
@hypothesis.given(seed=hypothesis.strategies.integers(0, 2**31 - 1),
                  beam_size=hypothesis.strategies.integers(1, 3),
                  alpha=hypothesis.strategies.sampled_from([0.0, 0.6, 1.5]))
def test_stopping_early_returns_what_running_to_the_end_returns(seed, beam_size, alpha):
    """On random next-token tables, the n-best found with the early stop are those of a
    search that runs every step to max_length (the stop disabled)."""
    rng = np.random.default_rng(seed)
    table = {previous: dict(zip(range(VOCAB), rng.dirichlet(np.full(VOCAB, 0.3))))
             for previous in range(VOCAB)}
    num_hypotheses = int(rng.integers(1, beam_size + 1))

    def search():
        return decoding.beam_hypotheses(_markov_step(table), {"steps": tf.zeros([1, 1])}, 1, 6,
                                        beam_size=beam_size, num_hypotheses=num_hypotheses,
                                        alpha=alpha, source_length=3, special_ids=IDS)

    early = search()
    with mock.patch.object(decoding.beam, "_nth_best_settled",
                           lambda finished, *_: tf.zeros(tf.shape(finished)[:1], tf.bool)):
        full = search()
    np.testing.assert_array_equal(early[0], full[0])
    np.testing.assert_allclose(early[1], full[1], rtol=1e-6)


# -- the loop: dropping finished sentences, per-sentence limits, memory -------------------

def _biased_markov_step(table, rng):
    """A Markov step whose logits a sentence's memory shifts (``bias [N, VOCAB]``), so that
    the sentences of a batch end at different steps, and the step number too (so that two
    sequences with the same transitions do not tie); the state counts steps."""
    markov = _markov_step(table)
    by_step = tf.constant(rng.normal(0, 0.5, (20, VOCAB)), tf.float32)

    def step(tokens, state, memory):
        logits, new_state, attention = markov(tokens, state)
        at_step = tf.gather(by_step, tf.cast(state["steps"][:, 0], tf.int32))
        # one memory row per row, or per sentence for its consecutive rows
        bias = tf.repeat(memory["bias"], tf.shape(logits)[0] // tf.shape(memory["bias"])[0], 0)
        return logits + bias + at_step, new_state, attention

    return step


def _random_table(rng):
    return {previous: dict(zip(range(VOCAB), rng.dirichlet(np.full(VOCAB, 0.3))))
            for previous in range(VOCAB)}


def _rules():
    return decoding.OutputRules(2, min_lengths=tf.constant([2, 1, 3, 0]),
                                end_lengths=tf.constant([6, 1, 9, 3]),
                                prefix=tf.constant([[A, B], [C, PAD_ID], [PAD_ID] * 2, [B, B]]))


STRATEGIES = {
    "greedy": lambda: decoding.Greedy(special_ids=IDS),
    "greedy with rules": lambda: decoding.Greedy(rules=_rules(), special_ids=IDS),
    "beam": lambda: decoding.Beam(3, num_hypotheses=2, alpha=0.6, special_ids=IDS),
    "beam with rules": lambda: decoding.Beam(3, num_hypotheses=2, alpha=0.6, rules=_rules(),
                                             special_ids=IDS),
    "sampling": lambda: decoding.Sampling(1.0, 5, top_k=4, top_p=0.9,
                                          row_ids=tf.constant([10, 11, 12, 13]), special_ids=IDS),
}


@pytest.mark.parametrize("memory_per_sentence", [False, True])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_batch_gives_what_each_sentence_gives_alone(strategy, memory_per_sentence):
    """On TensorFlow a batch drops its finished sentences from the loop; one sentence at a
    time (a static batch of one) runs the fixed-rows loop of every other backend. The
    memory expanded to the rows or kept per sentence (then dropped by sentence)."""
    rng = np.random.default_rng(3)
    table = _random_table(rng)
    bias = tf.constant(rng.normal(0, 2, (4, VOCAB)), tf.float32)
    limits = tf.constant([9, 3, 9, 5])
    step = _biased_markov_step(table, rng)

    def run(rows):
        chosen = STRATEGIES[strategy]()
        if strategy == "sampling":
            chosen.row_ids = tf.gather(chosen.row_ids, rows)
        if getattr(chosen, "rules", None) is not None:
            chosen.rules.per_sentence = {name: tf.gather(values, rows)
                                    for name, values in chosen.rules.per_sentence.items()}
        return decoding.decode(
            step, {"steps": tf.zeros([len(rows), 1])}, chosen, len(rows),
            9, source_length=3, max_lengths=tf.gather(limits, rows),
            memory={"bias": tf.gather(bias, rows)}, memory_per_sentence=memory_per_sentence)

    batch = run([0, 1, 2, 3])
    alone = [run([row]) for row in range(4)]
    for output, part in enumerate(batch):
        np.testing.assert_allclose(part, np.concatenate([a[output] for a in alone]), rtol=1e-6)
    tokens = batch[0].numpy().reshape(4, -1, 9)
    assert (tokens[1, :, 3:] == PAD_ID).all() and (tokens[3, :, 5:] == PAD_ID).all()


# -- output rules: repeated n-grams, length bounds ------------------------------------------

def test_the_tokens_that_would_repeat_an_ngram():
    history = tf.constant([[A, B, A, 0, 0, 0], [A, B, C, A, B, 0]])
    banned = decoding.repeated_ngram_tokens(history, tf.constant(3), 2, VOCAB).numpy()
    assert np.flatnonzero(banned[0]).tolist() == [B]  # (A, B) is there: A B A -> not B
    assert not banned[1].any()  # its last token, C, starts no bigram yet
    banned = decoding.repeated_ngram_tokens(history, tf.constant(5), 2, VOCAB).numpy()
    assert np.flatnonzero(banned[1]).tolist() == [C]  # ... A B -> (B, C) is there
    banned = decoding.repeated_ngram_tokens(history, tf.constant(5), 3, VOCAB).numpy()
    assert np.flatnonzero(banned[1]).tolist() == [C]  # (A, B, C)
    banned = decoding.repeated_ngram_tokens(history, tf.constant(5), 1, VOCAB).numpy()
    assert np.flatnonzero(banned[1]).tolist() == [A, B, C]  # every token once
    assert not decoding.repeated_ngram_tokens(history, tf.constant(5), 0, VOCAB).numpy().any()


def _banned_by_hand(row, t, n):
    """The tokens that would repeat an n-gram of ``row[:t]`` at position ``t``."""
    if n < 1 or t < n - 1:
        return set()
    own = tuple(row[t - n + 1 : t])
    return {row[j + n - 1] for j in range(t - n + 1) if tuple(row[j : j + n - 1]) == own}


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(rows=hypothesis.strategies.lists(
                      hypothesis.strategies.lists(hypothesis.strategies.sampled_from([A, B, C]),
                                                  min_size=7, max_size=7), min_size=1, max_size=3),
                  t=hypothesis.strategies.integers(0, 7), n=hypothesis.strategies.integers(0, 4))
def test_repeated_ngrams_agree_with_a_count_by_hand_for_an_int_or_a_tensor_n(rows, t, n):
    """A Python int n compares n-1 offsets, a tensor n (a SavedModel's input) all of them:
    the same tokens banned, the ones a count by hand finds."""
    history = tf.constant(rows)
    expected = [sorted(_banned_by_hand(row, t, n)) for row in rows]
    for size in (n, tf.constant(n)):
        banned = decoding.repeated_ngram_tokens(history, tf.constant(t), size, VOCAB).numpy()
        assert [np.flatnonzero(row).tolist() for row in banned] == expected


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(rows=hypothesis.strategies.lists(
                      hypothesis.strategies.lists(hypothesis.strategies.sampled_from([A, B, C]),
                                                  min_size=7, max_size=7), min_size=2, max_size=4),
                  t=hypothesis.strategies.integers(0, 7), n=hypothesis.strategies.integers(0, 4),
                  least=hypothesis.strategies.one_of(hypothesis.strategies.none(),
                                                     hypothesis.strategies.integers(0, 8)),
                  most=hypothesis.strategies.one_of(hypothesis.strategies.none(),
                                                    hypothesis.strategies.integers(0, 8)),
                  prefixed=hypothesis.strategies.booleans(),
                  rows_per_sentence=hypothesis.strategies.sampled_from([1, 2]))
def test_rules_written_in_place_equal_the_masked_rules(rows, t, n, least, most, prefixed,
                                                       rows_per_sentence):
    """A Python int n bans its tokens (and the least length its [END]) by writing them
    into the scores on TensorFlow; a tensor n (an export's) masks: the same scores. What
    ``select`` picks from them (greedy's best token, beam's best extensions; a Python int
    n writes its bans only where a pick is banned) is what a pick from these scores is,
    the first of equal scores first."""
    rows = rows[: len(rows) // rows_per_sentence * rows_per_sentence]
    sentences = len(rows) // rows_per_sentence
    # whole numbers: equal scores in most rows, the first of them is the argmax
    scores = tf.constant(np.round(np.random.default_rng(t).normal(size=(len(rows), VOCAB))),
                         tf.float32)

    def per_sentence(value):
        return None if value is None else tf.fill([sentences], value)

    # forced tokens that the n-gram rule may ban (a prefix overrides it), then none
    prefix = tf.constant([[B, A, B, A, B, A, PAD_ID]] * sentences) if prefixed else None
    applied = []
    for size in (n, tf.constant(n)):
        rules = decoding.OutputRules(size, per_sentence(least), per_sentence(most), prefix)
        applied.append(rules.apply(tf.constant(t), scores, tf.constant(rows), rules.initial(),
                                   IDS, rows_per_sentence).numpy())
        picks = _top_picks(rows_per_sentence, 2 * rows_per_sentence - 1)
        selected = _select_over_rows_unknown(rules, picks, t, scores, tf.constant(rows),
                                             rows_per_sentence)
        for got, expected in zip(selected, picks(tf.constant(applied[-1]), None)):
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_array_equal(*applied)
    if n and not prefixed and least is None and most is None:  # the n-gram rule alone
        banned = [sorted(_banned_by_hand(row, t, n)) for row in rows]
        assert [np.flatnonzero(row == NEG_INF).tolist() for row in applied[0]] == banned


def _top_picks(rows_per_sentence, count):
    """A strategy's ``pick`` for ``OutputRules.select``: each sentence's ``count`` best
    scores over its rows, ``(indices, values)``."""
    def picks(scores, sentences):
        by_sentence = tf.reshape(scores, [-1, rows_per_sentence * tf.shape(scores)[1]])
        values, indices = tf.math.top_k(by_sentence, count)
        return indices, values

    return picks


def _select_over_rows_unknown(rules, picks, t, scores, history, rows_per_sentence=1):
    """``rules.select`` in a graph that does not know the number of rows (a batch's
    search: a Python int n picks in two passes there)."""
    unknown = [tf.TensorSpec([None, None], scores.dtype), tf.TensorSpec([None, None], tf.int32)]

    @tf.function(input_signature=unknown)
    def select(scores, history):
        return rules.select(picks, tf.constant(t), scores, history, rules.initial(), IDS,
                            rows_per_sentence)

    return select(scores, history)


def test_a_pick_is_the_first_token_when_the_rules_ban_every_token():
    """A vocabulary of two tokens, both already written: no repeated 1-gram bans both,
    every score is NEG_INF, and greedy's pick is the first, as their argmax is."""
    rules = decoding.OutputRules(1)
    history = tf.constant([[1, 0, PAD_ID], [1, PAD_ID, PAD_ID]])
    scores = tf.constant([[0.3, 0.9], [0.3, 0.9]])
    applied = rules.apply(tf.constant(2), scores, history, {}, IDS)
    assert applied.numpy().tolist()[0] == [NEG_INF, NEG_INF]
    picked, values = _select_over_rows_unknown(rules, _top_picks(1, 1), 2, scores, history)
    assert picked.numpy().tolist() == [[0], [0]] == np.argmax(applied.numpy(), 1)[:, None].tolist()
    assert values.numpy().tolist() == [[NEG_INF], [NEG_INF]]


def _ngrams(tokens, n):
    tokens = [t for t in tokens if t != PAD_ID]
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


# A loop that stutters: A B A B ... and [END] only ever 1% likely; C is the way out.
STUTTER = {START_ID: {A: 0.9, END_ID: 0.1}, A: {B: 0.9, C: 0.05, END_ID: 0.05},
           B: {A: 0.9, C: 0.09, END_ID: 0.01}, C: {END_ID: 1.0}}
SEARCHES = {"greedy": lambda rules: decoding.Greedy(rules=rules, special_ids=IDS),
            "beam": lambda rules: decoding.Beam(3, alpha=0.0, rules=rules, special_ids=IDS)}


def _decode_rows(search, table, rules, rows=1, max_length=8):
    tokens, *_ = decoding.decode(_markov_step(table), {"steps": tf.zeros([rows, 1])},
                                 SEARCHES[search](rules), rows, max_length, source_length=3)
    return tokens.numpy().reshape(rows, max_length)


@pytest.mark.parametrize("search", SEARCHES)
def test_no_repeat_ngram_size_stops_a_stutter(search):
    stutter = _decode_rows(search, STUTTER, None)[0]
    assert len(set(_ngrams(stutter, 2))) < len(_ngrams(stutter, 2))  # A B A B ...
    for n in (2, 3):
        tokens = _decode_rows(search, STUTTER, decoding.OutputRules(n))[0]
        assert len(set(_ngrams(tokens, n))) == len(_ngrams(tokens, n)), tokens
        assert END_ID in tokens


# [END] at once is likeliest (0.6); else A, which ends at once.
QUICK_END = {START_ID: {END_ID: 0.6, A: 0.3, B: 0.1}, A: {END_ID: 0.9, C: 0.1},
             B: {END_ID: 0.5, C: 0.5}, C: {C: 0.5, END_ID: 0.5}}


@pytest.mark.parametrize("search", SEARCHES)
def test_a_minimum_length_masks_the_end_and_a_maximum_forces_it(search):
    assert _decode_rows(search, QUICK_END, None)[0, 0] == END_ID
    lengths = tf.constant([0, 2, 3])
    tokens = _decode_rows(search, QUICK_END, decoding.OutputRules(min_lengths=lengths), rows=3)
    ends = [list(row).index(END_ID) for row in tokens]
    assert ends[0] == 0 and ends[1] >= 2 and ends[2] >= 3
    # A loop that ends, unlikely, at any step, runs to the most tokens (8) without the
    # rule; with it, it ends with [END] at the latest at its sentence's bound (greedy:
    # there; beam search may find an earlier end more probable).
    loop = {START_ID: {A: 1.0}, A: {A: 0.99, END_ID: 0.01}}
    np.testing.assert_array_equal(_decode_rows(search, loop, None), [[A] * 8])
    tokens = _decode_rows(search, loop, decoding.OutputRules(end_lengths=tf.constant([2, 5, 9])),
                          rows=3)
    ends = [list(row).index(END_ID) for row in tokens[:2]]
    assert ends == [2, 5] if search == "greedy" else ends[0] <= 2 and ends[1] <= 5
    np.testing.assert_array_equal(tokens[2], [A] * 8)  # a bound past the most tokens


@pytest.mark.parametrize("search", SEARCHES)
def test_a_prefix_is_kept_and_the_search_goes_on_from_it(search):
    """STUTTER's search starts A B; given B C (C: 5%, then [END]) or B B (a repeated
    bigram would be banned by the rule; the prefix overrides it), it keeps them."""
    prefix = tf.constant([[B, C, PAD_ID], [B, B, B], [PAD_ID] * 3])
    tokens = _decode_rows(search, STUTTER, decoding.OutputRules(2, prefix=prefix), rows=3)
    assert tokens[0, :3].tolist() == [B, C, END_ID]
    assert tokens[1, :3].tolist() == [B, B, B]
    np.testing.assert_array_equal(tokens[2], _decode_rows(search, STUTTER,
                                                          decoding.OutputRules(2))[0])


def test_a_sentence_ends_at_its_own_limit():
    loop = {START_ID: {A: 1.0}, A: {A: 1.0}}
    state = {"steps": tf.zeros([2, 1])}
    for search, kwargs in ((decoding.greedy_search, {}), (decoding.beam_search, {"beam_size": 2})):
        tokens, _ = search(_markov_step(loop), state, 2, 5, source_length=3,
                           max_lengths=tf.constant([2, 4]), special_ids=IDS, **kwargs)
        np.testing.assert_array_equal(tokens.numpy(), [[A, A, 0, 0, 0], [A, A, A, A, 0]])


def test_a_tighter_limit_lets_beam_search_stop_sooner():
    # [A, END] at once (0.9 * 0.9); the beams of B go on, each step 0.9 as likely. With
    # alpha 1.5 the exact stop waits until no open beam could catch up at the longest
    # length allowed: the nearer that is, the sooner.
    table = {START_ID: {A: 0.9, B: 0.1}, A: {END_ID: 0.9, B: 0.1}, B: {B: 0.9, C: 0.1},
             C: {END_ID: 1.0}}
    markov = _markov_step(table)

    def steps_taken(max_lengths):
        calls = []

        def counting_step(tokens, state):
            calls.append(1)
            return markov(tokens, state)

        tokens, _ = decoding.beam_search(counting_step, {"steps": tf.zeros([1, 1])}, 1, 60,
                                         beam_size=2, alpha=1.5, source_length=3,
                                         max_lengths=max_lengths, special_ids=IDS)
        assert tokens.numpy()[0, :2].tolist() == [A, END_ID]
        return len(calls)

    # At most 8 tokens: B's best possible, -ln(0.1) / ((5 + 8) / 6) ** 1.5, is already lost.
    assert steps_taken(tf.constant([8])) == 2
    assert 8 < steps_taken(None) < 60


def test_translation_limits_follow_the_source_length():
    from zoo.models.seq2seq import output_limits

    source_ids = tf.constant([[5, 6, 7, 0, 0], [5, 0, 0, 0, 0], [5] * 5])
    np.testing.assert_array_equal(output_limits(source_ids, 18), [16, 12, 18])


def test_a_language_model_prompt_starts_the_loop():
    """``first_logits``: step 0's logits are given (a prompt already read); with
    ``stop_at_end=False`` exactly ``max_length`` tokens are written, [END] or not."""
    logits = tf.math.log(tf.constant([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]]) + 1e-9)
    step = _markov_step({END_ID: {A: 1.0}, A: {END_ID: 1.0}})
    tokens, _ = decoding.decode(step, {"steps": tf.zeros([1, 1])},
                                decoding.Greedy(stop_at_end=False, special_ids=IDS), 1, 4,
                                first_logits=logits)
    np.testing.assert_array_equal(tokens.numpy(), [[END_ID, A, END_ID, A]])


@pytest.mark.parametrize("strategy",
                         ["greedy", pytest.param("sampling", marks=pytest.mark.slow)])
def test_decoding_step_by_step_yields_what_the_loop_returns(strategy):
    """``decode_stepwise`` (a text shown as it is written; the TFLite runner) drives the
    loop's own step from Python: the same tokens, one step at a time, and it stops where
    the loop stops (every sentence finished, or the most steps), whether it runs one
    eager step a call or several compiled steps (``loop_steps``) a call."""
    rng = np.random.default_rng(5)
    step = _markov_step(_random_table(rng))
    state = {"steps": tf.zeros([3, 1])}

    def chosen():
        return (decoding.Greedy(special_ids=IDS) if strategy == "greedy"
                else decoding.Sampling(0.9, 11, top_k=5, top_p=0.95, special_ids=IDS))

    def with_memory(tokens, state, memory):
        return step(tokens, state)

    for max_length in (12, 3):
        tokens, _ = decoding.decode(step, state, chosen(), 3, max_length, return_attention=False)
        expected = tokens.numpy()
        ended = (expected == END_ID).any(axis=1)
        steps_taken = (np.argmax(expected == END_ID, axis=1).max() + 1 if ended.all()
                       else max_length)
        for count in (None, 1, 5):
            compiled = None if count is None else tf.function(
                decoding.loop_steps(with_memory, chosen(), count))
            steps = np.stack(list(decoding.decode_stepwise(
                step, state, chosen(), 3, max_length, compiled_steps=compiled)), axis=1)
            np.testing.assert_array_equal(steps, expected[:, :steps_taken])


# -- sampling --------------------------------------------------------------------------

# One row, six tokens with probabilities known in advance.
PROBABILITIES = np.array([0.05, 0.4, 0.1, 0.25, 0.15, 0.05], "float32")
LOGITS = np.log(PROBABILITIES)[None]


def _draws(rows=400, **filters):
    """One draw for each of ``rows`` copies of the row (each its own random number)."""
    return np.asarray(decoding.sample(np.repeat(LOGITS, rows, 0), 1.0, 7, 0, **filters))


def test_sampling_follows_the_distribution():
    counts = np.bincount(_draws(2000), minlength=6) / 2000
    np.testing.assert_allclose(counts, PROBABILITIES, atol=0.03)


@pytest.mark.parametrize("top_k, kept", [(1, {1}), (2, {1, 3}), (3, {1, 3, 4})])
def test_top_k_never_samples_outside_the_k_most_likely(top_k, kept):
    draws = _draws(top_k=top_k)
    assert set(draws) == kept  # and every one of them is drawn


@pytest.mark.parametrize("top_p, kept", [
    (0.3, {1}),            # 0.4 alone reaches 0.3
    (0.39, {1}),
    (0.5, {1, 3}),         # 0.4 + 0.25 = 0.65 is the smallest prefix reaching 0.5
    (0.7, {1, 3, 4}),      # 0.65 + 0.15 = 0.80
    (0.85, {1, 3, 4, 2}),  # 0.90
])
def test_top_p_keeps_the_smallest_set_whose_probability_reaches_p(top_p, kept):
    assert set(_draws(top_p=top_p)) == kept


def test_top_k_and_top_p_together_keep_what_both_keep():
    assert set(_draws(top_k=2, top_p=0.85)) == {1, 3}
    assert set(_draws(top_k=4, top_p=0.5)) == {1, 3}


def test_top_k_of_one_is_greedy_at_any_temperature():
    logits = np.random.default_rng(0).normal(size=(16, 50)).astype("float32")
    for seed in range(20):
        np.testing.assert_array_equal(decoding.sample(logits, 1.7, seed, 3, top_k=1),
                                      np.argmax(logits, -1))


@pytest.mark.parametrize("temperature", [0.0, 1e-40, 1e-7])
def test_a_temperature_under_the_floor_takes_the_first_of_tied_tokens(temperature):
    """1e-40 is a float32 subnormal: 0 where denormals are flushed (TensorFlow's and
    XLA's CPU kernels), itself on PyTorch; under ``GREEDY_BELOW`` every backend decodes
    greedily, the first of two tied tokens, as argmax."""
    logits = np.zeros((64, 5), "float32")
    logits[:, 1:3] = 2.0
    for seed in range(5):
        np.testing.assert_array_equal(decoding.sample(logits, temperature, seed, 0),
                                      np.ones(64))


def test_at_the_floor_tied_tokens_are_drawn_both():
    logits = np.zeros((64, 5), "float32")
    logits[:, 1:3] = 2.0
    draws = np.asarray(decoding.sample(logits, sampling.GREEDY_BELOW, 3, 0))
    assert set(draws) == {1, 2}


def test_without_filters_the_draws_are_those_of_inverse_cdf_sampling():
    """top_k=0 and top_p=1 change nothing: the same seed gives the same draws as the
    plain inverse CDF on counter_uniform (what every earlier seeded text was made of)."""
    logits = np.random.default_rng(1).normal(size=(8, 40)).astype("float32")
    for seed in range(10):
        probabilities = np.exp(logits / 0.8) / np.exp(logits / 0.8).sum(-1, keepdims=True)
        cumulative = np.cumsum(probabilities.astype("float32"), -1)
        u = np.asarray(decoding.counter_uniform(seed, 5, 8))
        expected = (cumulative <= (u * cumulative[:, -1])[:, None]).sum(-1)
        np.testing.assert_array_equal(decoding.sample(logits, 0.8, seed, 5), expected)
