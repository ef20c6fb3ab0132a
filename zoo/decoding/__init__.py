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

What a user chooses is a search value (``searches.py``: ``GreedySearch``, ``BeamSearch``,
``RandomSampling``), checked by the rules every runtime shares (``arguments.py``). Those
two modules are plain Python, and this package loads the others (Keras) only when one of
their names is used: a TFLite runner, which has no TensorFlow, takes the same values.
"""

import importlib

from zoo.decoding import arguments, searches
from zoo.decoding.searches import SEARCHES, BeamSearch, GreedySearch, RandomSampling

# The loop's names, each loaded from its module on first use (PEP 562).
_LAZY = {
    "Beam": "beam", "beam_hypotheses": "beam", "beam_search": "beam",
    "coverage_penalty": "beam", "length_penalty": "beam",
    "OutputRules": "constraints", "repeated_ngram_tokens": "constraints",
    "SpecialIds": "loop", "decode": "loop", "decode_stepwise": "loop", "loop_step": "loop",
    "loop_steps": "loop", "write_token": "loop",
    "counter_uniform": "sampling", "sample": "sampling", "step_uniforms": "sampling",
    "Greedy": "token_choice", "Sampling": "token_choice", "greedy_search": "token_choice",
    "sampling_search": "token_choice",
}

__all__ = sorted([*_LAZY, "SEARCHES", "BeamSearch", "GreedySearch", "RandomSampling",
                  "arguments", "searches"])


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f"zoo.decoding.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'zoo.decoding' has no attribute {name!r}")


def __dir__():
    return __all__
