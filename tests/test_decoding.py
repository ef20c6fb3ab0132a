"""Greedy and beam search over a step function with known probabilities."""

import numpy as np
import pytest
import tensorflow as tf

from zoo import decoding
from zoo.text.vocabulary import END_ID, PAD_ID, START_ID

A, B, C = 4, 5, 6
VOCAB = 7


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
    tokens, attention = search(_markov_step(TRAP), state, 2, 5, source_length=3, **kwargs)
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
                                               source_length=3)
    np.testing.assert_array_equal(tokens, [[END_ID, 0, 0, 0, 0, 0],
                                           [A, A, A, END_ID, 0, 0],
                                           [A, END_ID, 0, 0, 0, 0]])
    assert rows_seen == [3, 2, 1, 1]  # a sentence leaves the batch after its [END]
    fixed_tokens, fixed_attention = decoding._greedy_fixed_rows(
        _countdown_step([]), state, 3, 6, 3, return_attention=True)
    np.testing.assert_array_equal(tokens, fixed_tokens)
    # Attention rows of the steps a sentence took are the same; later ones are zero.
    np.testing.assert_array_equal(attention * (tokens[..., None] > 0),
                                  fixed_attention * (fixed_tokens[..., None] > 0))
    np.testing.assert_array_equal(attention[0, 1:], 0.0)

    # The same in a graph, where the batch size is unknown when the loop is built.
    search = tf.function(lambda left: decoding.greedy_search(
        _countdown_step([]), {"left": left}, tf.shape(left)[0], 6, source_length=3))
    graph_tokens, graph_attention = search(state["left"])
    np.testing.assert_array_equal(graph_tokens, tokens)
    np.testing.assert_array_equal(graph_attention, attention)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_search_finds_the_more_probable_sequence(alpha):
    tokens, attention = _run(decoding.beam_search, beam_size=2, alpha=alpha)
    np.testing.assert_array_equal(tokens, [[B, END_ID, PAD_ID, PAD_ID, PAD_ID]] * 2)
    assert attention.shape == (2, 5, 3)


def test_beam_of_one_equals_greedy():
    greedy, _ = _run(decoding.greedy_search)
    beam, _ = _run(decoding.beam_search, beam_size=1)
    np.testing.assert_array_equal(greedy, beam)


def test_length_penalty_prefers_longer_hypotheses_as_alpha_grows():
    # Short: END at once (0.5). Long: A A A A END (0.5 * 0.99^4 ~ 0.48).
    table = {START_ID: {END_ID: 0.5, A: 0.5}, A: {A: 0.99, END_ID: 0.01}}
    state = {"steps": tf.zeros([1, 1])}
    short, _ = decoding.beam_search(_markov_step(table), state, 1, 6, beam_size=3, alpha=0.0,
                                    source_length=3)
    assert short.numpy()[0, 0] == END_ID
    long, _ = decoding.beam_search(_markov_step(table), state, 1, 6, beam_size=3, alpha=2.0,
                                   source_length=3)
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
                                     beam_size=2, alpha=1.0, source_length=3)
    assert tokens.numpy()[0, :3].tolist() == [A, END_ID, PAD_ID]
    assert len(calls) == 2


def test_fixed_maximum_length_is_respected():
    loop = {START_ID: {A: 1.0}, A: {A: 1.0}}
    state = {"steps": tf.zeros([1, 1])}
    for search, kwargs in ((decoding.greedy_search, {}), (decoding.beam_search, {"beam_size": 2})):
        tokens, _ = search(_markov_step(loop), state, 1, 4, source_length=3, **kwargs)
        np.testing.assert_array_equal(tokens.numpy(), [[A, A, A, A]])


def test_gnmt_length_penalty_values():
    np.testing.assert_allclose(decoding.length_penalty(tf.constant([1, 7]), 1.0), [1.0, 2.0])
