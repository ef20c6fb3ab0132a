"""A translator's search as a value (keras-hub's samplers, OpenNMT-tf's decoding
strategies): ``GreedySearch()``, ``BeamSearch(5)``, ``RandomSampling(temperature=0.8,
seed=1)``, chosen once and handed to every runtime::

    model.translate(texts, search=BeamSearch(5))
    zoo.export(model, "saved_model", "exports", search=BeamSearch(5))  # its serving_default
    TFLiteTranslator("exports/NAME.tflite").translate(texts, search=BeamSearch(5))
    zoo translate NAME --search beam --beam 5 "..."

A value is checked when it is made (``arguments``: the bounds of every runtime), equals
and hashes by its fields, and is written as ``to_config()`` (a TFLite export's
``NAME.json``) and read back by ``from_config``. The options ``translate(texts,
beam_size=5)``, ``sampling=True, temperature=...`` and the command line's flags are
shorthands that ``from_options`` turns into a value.

``run`` is what a search does with a translator: it calls the translator's
graph-friendly ``generate_ids``, ``generate_hypotheses`` or ``generate_samples``
(``zoo.models.Seq2Seq``), which run this package's loop with the strategy
(``Greedy``, ``Beam``, ``Sampling``) the search names. What changes between calls
without compiling anything (a sampling's temperature and seed) is fed as tensors:
``feeds``. Plain Python: a TFLite runner, which has no TensorFlow, takes these values.
A new search is one class here, named in ``SEARCHES``.
"""

import dataclasses
import random
from typing import ClassVar

import numpy as np

from zoo.decoding import arguments


class _Search:
    """What every search shares: its config, its compiled form and the options it takes."""

    name: ClassVar[str]
    # The arguments of ``from_options`` that belong to this search.
    options: ClassVar[tuple] = ()
    # What ``feeds`` gives a compiled search, in order.
    fed: ClassVar[tuple] = ()

    def to_config(self):
        """``{"name": ..., **fields}``: JSON, read back by ``from_config``."""
        return {"name": self.name, **dataclasses.asdict(self)}

    def for_call(self):
        """The value one call runs (``RandomSampling`` draws a seed when it has none)."""
        return self

    def compiled(self):
        """What a compiled search depends on (its ``feeds`` are inputs, not constants)."""
        return self

    def feeds(self, rows):
        """The inputs fed to a compiled search for these ``rows`` (each text's index in
        the call: an int32 array or tensor ``[B]``)."""
        return []

    @property
    def returns_hypotheses(self):
        """True when a text's result is a list of hypotheses with scores (the n best)."""
        return False


@dataclasses.dataclass(frozen=True)
class GreedySearch(_Search):
    """The most probable token at every step (``decoding.Greedy``)."""

    name: ClassVar[str] = "greedy"

    def run(self, translator, source_ids, feeds, max_length, return_attention, rules):
        """``(tokens [B, L], attention [B, L, S] or None)``."""
        return translator.generate_ids(source_ids, 1, max_length, return_attention, rules)


@dataclasses.dataclass(frozen=True)
class BeamSearch(_Search):
    """The ``beam_size`` best partial translations kept at every step, ranked by
    log-probability over the translator's length penalty (``decoding.Beam``); the best
    one, or with ``num_hypotheses`` the n best, best first, with their scores. A beam of
    1 is greedy search."""

    name: ClassVar[str] = "beam"
    options: ClassVar[tuple] = ("beam_size", "num_hypotheses")
    beam_size: int = 5
    num_hypotheses: int | None = None

    def __post_init__(self):
        arguments.check_search_arguments(self.beam_size, num_hypotheses=self.num_hypotheses)

    @property
    def returns_hypotheses(self):
        return self.num_hypotheses is not None

    def run(self, translator, source_ids, feeds, max_length, return_attention, rules):
        """As ``GreedySearch.run``; with ``num_hypotheses``, ``(tokens [B, n, L], scores
        [B, n], attention [B, n, L, S] or None)``."""
        if self.num_hypotheses is None:
            return translator.generate_ids(source_ids, self.beam_size, max_length,
                                           return_attention, rules)
        return translator.generate_hypotheses(source_ids, self.beam_size, self.num_hypotheses,
                                              max_length, return_attention, rules)


@dataclasses.dataclass(frozen=True)
class RandomSampling(_Search):
    """Each token drawn from ``softmax(logits / temperature)`` cut to the ``top_k`` most
    probable and to the smallest set of them whose probability reaches ``top_p``
    (``decoding.sample``; None: no cut). The same ``seed`` gives the same translations in
    every runtime (a text's draws depend on its index in the call); None draws a seed per
    call. ``temperature=0`` or ``top_k=1`` is greedy."""

    name: ClassVar[str] = "sampling"
    options: ClassVar[tuple] = ("temperature", "top_k", "top_p", "seed")
    fed: ClassVar[tuple] = ("row_ids", "temperature", "seed", "top_k", "top_p")
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | None = None

    def __post_init__(self):
        temperature, _ = arguments.check_temperature_and_seed(self.temperature, self.seed)
        arguments.check_sampling_filters(self.top_k, self.top_p)
        object.__setattr__(self, "temperature", temperature)

    def for_call(self):
        if self.seed is not None:
            return self
        return dataclasses.replace(self, seed=random.randrange(2**31))

    def compiled(self):
        return RandomSampling()

    def filters(self):
        """``(top_k, top_p)`` as the samplers take them: 0 and 1.0 for no cut."""
        return arguments.check_sampling_filters(self.top_k, self.top_p)

    def feeds(self, rows):
        top_k, top_p = self.filters()
        return [rows, np.float32(self.temperature), np.int32(self.seed), np.int32(top_k),
                np.float32(top_p)]

    def run(self, translator, source_ids, feeds, max_length, return_attention, rules):
        """As ``GreedySearch.run``, with ``feeds``' rows, temperature, seed, top_k, top_p."""
        row_ids, temperature, seed, top_k, top_p = feeds
        return translator.generate_samples(source_ids, temperature, seed, top_k, top_p, row_ids,
                                           max_length, return_attention, rules=rules)


SEARCHES = {search.name: search for search in (GreedySearch, BeamSearch, RandomSampling)}


def from_config(config):
    """The search ``to_config`` wrote, or a clear error."""
    if not isinstance(config, dict) or config.get("name") not in SEARCHES:
        raise ValueError(f"A search's config is {{'name': one of {', '.join(SEARCHES)}, ...}}; "
                         f"received {config!r}.")
    search = SEARCHES[config["name"]]
    fields = {key: value for key, value in config.items() if key != "name"}
    unknown = sorted(set(fields) - {field.name for field in dataclasses.fields(search)})
    if unknown:
        raise ValueError(f"{search.__name__} has no {', '.join(unknown)}; received {config!r}.")
    return search(**fields)


def from_options(beam_size=None, num_hypotheses=None, sampling=False, temperature=None,
                 top_k=None, top_p=None, seed=None):
    """The search that ``translate``'s shorthand options ask for, or None when they ask for
    none (the caller's default then): ``sampling`` -> ``RandomSampling``; a
    ``beam_size`` over 1 or ``num_hypotheses`` -> ``BeamSearch``; ``beam_size=1`` ->
    ``GreedySearch``."""
    if sampling:
        if num_hypotheses is not None:
            raise ValueError("num_hypotheses is for beam search; sampling draws one "
                             "translation per text.")
        if beam_size not in (None, 1):
            raise ValueError(f"sampling draws one translation token by token: beam_size must "
                             f"be 1 with sampling=True; received {beam_size!r}.")
        return RandomSampling(1.0 if temperature is None else temperature, top_k, top_p, seed)
    if num_hypotheses is not None:
        return BeamSearch(1 if beam_size is None else beam_size, num_hypotheses)
    if beam_size is None:
        return None
    arguments.check_search_arguments(beam_size)
    return GreedySearch() if beam_size == 1 else BeamSearch(beam_size)


def chosen(search, default, **options):
    """The search a call runs: ``search`` (a value or a name in ``SEARCHES``), else the one
    its shorthand ``options`` ask for (``from_options``), else ``default``."""
    given = {name: value for name, value in options.items() if value not in (None, False)}
    if search is None:
        return from_options(**options) or default
    if given:
        raise ValueError(f"Give search={search!r} or its options ({', '.join(sorted(given))}), "
                         "not both: a search value holds its own options.")
    if isinstance(search, str) and search in SEARCHES:
        return SEARCHES[search]()
    if not isinstance(search, _Search):
        raise TypeError(f"search must be one of {', '.join(s.__name__ for s in SEARCHES.values())} "
                        f"(zoo.decoding) or its name ({', '.join(SEARCHES)}); received {search!r}.")
    return search
