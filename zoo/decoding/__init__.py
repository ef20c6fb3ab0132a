"""Greedy search, beam search and sampling over a step function, on every Keras backend.

``decode`` (``loop.py``) is the one loop (``decode_stepwise`` drives it from Python);
``Greedy``, ``Sampling`` (``token_choice.py``) and ``Beam`` (``beam.py``) are the
strategies it runs, each keeping the ``OutputRules`` (``constraints.py``) it is
given; ``sample`` and the counter-based random numbers every runtime reproduces are in
``sampling.py``. Greedy search calls the step function with the B
sentences (on TensorFlow, with the N <= B still being translated); beam search with
N = B * K (each sentence's K beams on consecutive rows).
The searches stop early once every sequence has produced ``[END]``, and pad it with
``[PAD]`` after it: the ids of the ``SpecialIds`` the caller hands each strategy
(``loop.py``).
"""

from zoo.decoding.beam import (Beam, beam_hypotheses, beam_search, coverage_penalty,
                               length_penalty)
from zoo.decoding.constraints import OutputRules, repeated_ngram_tokens
from zoo.decoding.loop import (SpecialIds, decode, decode_stepwise, loop_step, loop_steps,
                               write_token)
from zoo.decoding.sampling import counter_uniform, sample, step_uniforms
from zoo.decoding.token_choice import Greedy, Sampling, greedy_search, sampling_search

__all__ = ["Beam", "Greedy", "OutputRules", "Sampling", "SpecialIds", "beam_hypotheses",
           "beam_search", "counter_uniform", "coverage_penalty", "decode", "decode_stepwise",
           "greedy_search", "length_penalty", "loop_step", "loop_steps", "repeated_ngram_tokens",
           "sample", "sampling_search", "step_uniforms", "write_token"]
