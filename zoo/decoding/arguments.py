"""What every runtime checks of a search's arguments, in plain Python (no Keras): the
widths, lengths, temperatures, seeds, filters and output rules that ``model.translate``,
``model.generate``, the command line, the SavedModel's signatures (in graph ops, with the
same bounds) and the TFLite runners accept. The text a runtime accepts: ``zoo.text.codec``.
"""

import math
import random


# The widest beam in every runtime (Python, CLI, SavedModel signatures, demo). Beam search
# keeps beam_size rows per sentence and compares beam_size * vocabulary scores each step:
# 64 is many times what translation quality gains from (the presets' length penalties are
# tuned at 5, docs/benchmarks.md) and keeps one call's memory bounded (docs/bad_input.md).
MAX_BEAM_SIZE = 64
# The most tokens a translation may have (``translate(max_length=...)``, ``--max-length``)
# and the most a translator's config may set as its ``max_output_length``: the decoding
# buffers are [batch * beam, max_length] and a translation stops at 2 * source tokens + 10
# anyway (zoo.models.seq2seq.output_limits), so more than 1,024 only costs memory.
MAX_OUTPUT_LENGTH = 1_024



def _is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def check_count(name, value, most=None):
    """``value`` if it is an integer from 1 to ``most`` (no bound for None), else a
    ValueError saying what was received and what is accepted."""
    if not _is_integer(value) or value < 1 or (most is not None and value > most):
        accepted = "a positive integer" if most is None else f"an integer from 1 to {most:,}"
        raise ValueError(f"{name} must be {accepted}; received {value!r}.")
    return value


def check_search_arguments(beam_size=1, max_length=None, num_hypotheses=None, batch_size=1):
    """The arguments of a translation's search, or a clear error for a bad one (the same
    rule in every runtime: the SavedModel's signatures check the same bounds in graph
    ops)."""
    check_count("beam_size", beam_size, MAX_BEAM_SIZE)
    if max_length is not None:
        check_count("max_length", max_length, MAX_OUTPUT_LENGTH)
    if num_hypotheses is not None:
        check_count("num_hypotheses", num_hypotheses, MAX_BEAM_SIZE)
        if num_hypotheses > beam_size:
            raise ValueError(f"num_hypotheses must be at most beam_size ({beam_size}): a beam "
                             f"holds that many hypotheses; received {num_hypotheses}.")
    check_count("batch_size", batch_size)


# -- generation and sampling -----------------------------------------------------------

# The most characters one generation call writes: a few pages, under 40 s for the
# shipped language models on one core of an AMD EPYC (docs/bad_input.md); 100,000 took
# over 4 minutes, which a server's request should not.
MAX_GENERATION_LENGTH = 10_000


def check_generation_arguments(length, temperature, seed):
    """``(length, float temperature, seed)`` (a random seed for None), or a clear error
    for a bad argument."""
    if not _is_integer(length) or not 0 <= length <= MAX_GENERATION_LENGTH:
        raise ValueError(f"length must be an integer from 0 to {MAX_GENERATION_LENGTH:,}; "
                         f"received {length!r}.")
    return (length, *check_temperature_and_seed(temperature, seed))


def check_temperature_and_seed(temperature, seed):
    """``(float temperature, seed)`` (a random seed for None), or a clear error."""
    if (not isinstance(temperature, (int, float)) or isinstance(temperature, bool)
            or not math.isfinite(temperature) or temperature < 0):
        raise ValueError(f"temperature must be a finite number >= 0; received {temperature!r}.")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)
                             or not 0 <= seed < 2**31):
        raise ValueError(f"seed must be an integer from 0 to 2**31 - 1 or None; received {seed!r}.")
    return float(temperature), random.randrange(2**31) if seed is None else seed


def check_translation_sampling(beam_size, temperature, seed, top_k, top_p):
    """``(temperature, seed, top_k, top_p)`` for a translator that samples (every runtime's
    ``translate(..., sampling=True)``), or a clear error."""
    if beam_size != 1:
        raise ValueError(f"sampling draws one translation token by token: beam_size must be "
                         f"1 with sampling=True; received {beam_size!r}.")
    return (*check_temperature_and_seed(temperature, seed), *check_sampling_filters(top_k, top_p))


def check_output_rules(no_repeat_ngram_size=None, min_length_ratio=None, max_length_ratio=None):
    """The decoding rules of every runtime's ``translate`` as a dict of the options set
    (empty when none is: the preset's defaults, ``output_rules``), or a clear error for a
    bad value. 0 turns a rule off (a preset's default too)."""
    if no_repeat_ngram_size is not None and (
            not isinstance(no_repeat_ngram_size, int) or isinstance(no_repeat_ngram_size, bool)
            or no_repeat_ngram_size < 0):
        raise ValueError(f"no_repeat_ngram_size must be a positive integer, 0 (off) or None; "
                         f"received {no_repeat_ngram_size!r}.")
    for name, ratio in (("min_length_ratio", min_length_ratio),
                        ("max_length_ratio", max_length_ratio)):
        if ratio is not None and (not isinstance(ratio, (int, float)) or isinstance(ratio, bool)
                                  or not 0 <= ratio < float("inf")):
            raise ValueError(f"{name} must be a positive number, 0 (off) or None; received "
                             f"{ratio!r}.")
    if min_length_ratio and max_length_ratio and min_length_ratio > max_length_ratio:
        raise ValueError(f"min_length_ratio ({min_length_ratio}) must be at most "
                         f"max_length_ratio ({max_length_ratio}).")
    options = {"no_repeat_ngram_size": no_repeat_ngram_size,
               "min_length_ratio": min_length_ratio, "max_length_ratio": max_length_ratio}
    return {name: value for name, value in options.items() if value is not None}


# float32's smallest normal number: TensorFlow's CPU kernels flush smaller (subnormal)
# ones to 0, so a SavedModel would read such a top_p as 0 and refuse it.
SMALLEST_TOP_P = 2.0**-126


def check_sampling_filters(top_k, top_p):
    """``(top_k, top_p)`` as the samplers take them (0 and 1.0: off) from None or a value,
    or a clear error for a bad one."""
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool)
                              or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None; received {top_k!r}.")
    if top_p is not None and (not isinstance(top_p, (int, float)) or isinstance(top_p, bool)
                              or not 0 < top_p <= 1):
        raise ValueError(f"top_p must be a number in (0, 1] or None; received {top_p!r}.")
    if top_p is not None and top_p < SMALLEST_TOP_P:
        raise ValueError(f"top_p must be a number in (0, 1] or None, and at least "
                         f"{SMALLEST_TOP_P:.8g} (float32's smallest normal number: every "
                         f"runtime samples in float32, where a smaller one counts as 0); "
                         f"received {top_p!r}.")
    return (top_k or 0), (1.0 if top_p is None else float(top_p))
