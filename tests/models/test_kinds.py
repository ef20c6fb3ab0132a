"""One shared test per kind of preset (``zoo.models.KINDS``), as keras-hub's ``TestCase``
runs one preset test per task: a kind's small case, as data, in ``CASES``.

Each case is a tiny model of its kind (conftest's), a few inputs, the network's outputs
on them, and the same call in each runtime: the model in Python, its SavedModel's
signatures, its LiteRT runner. The tests check that a preset saved from the model loads
(``from_preset`` and ``zoo.load``) as a model computing the same outputs (the network's:
the decoding loops' compilations would make the default suite slower by half a minute),
and that the three runtimes give the same answers (slow: the exports). A new kind without
a case fails ``test_every_kind_has_a_case``.
"""

import dataclasses
from typing import Callable

import numpy as np
import pytest
import tensorflow as tf

from zoo.models import KINDS

from conftest import SOURCES, TARGETS, tiny_classifier, tiny_language_model
from testcase import assert_same_outputs, run_preset_test

BEAM = 5  # the width a TFLite export compiles into its "beam" signature by default


@dataclasses.dataclass(frozen=True)
class KindCase:
    """A kind's model, its inputs, and what to compare (``testcase.assert_same_outputs``):
    the network's outputs on them, and one call per runtime."""

    model: Callable  # (request) -> a tiny model of the kind
    inputs: object
    network: Callable  # (model, inputs) -> the network's outputs, the inputs encoded
    python: Callable  # (model, inputs)
    saved_model: Callable  # (tf.saved_model.load(...), inputs)
    tflite: Callable  # (the kind's LiteRT runner, inputs)
    atol: object  # between runtimes; None: equal texts
    lacks: str  # what a model without its preprocessor lacks, in the error


# -- translation: greedy and beam texts -------------------------------------------------------

def _translations(saved, texts):
    texts = tf.constant(texts, tf.string)

    def decoded(result):
        return [t.decode() for t in result["translations"].numpy()]

    return {"greedy": decoded(saved.signatures["serving_default"](texts=texts)),
            "beam": decoded(saved.signatures["translate_beam"](
                texts=texts, beam_size=tf.constant(BEAM)))}


TRANSLATION = KindCase(
    # Trained (the session's toy model, which the default suite fits anyway): an untrained
    # one ends most sentences at once, which would compare empty texts.
    model=lambda request: request.getfixturevalue("toy_translators")["attention"],
    inputs=[SOURCES[0], SOURCES[2], "你好 🙂"],
    network=lambda model, texts: model((
        model.preprocessor.tokenize_sources(texts),
        model.preprocessor.tokenize_targets(TARGETS[:len(texts)])[0])),
    python=lambda model, texts: {"greedy": model.translate(texts),
                                 "beam": model.translate(texts, beam_size=BEAM)},
    saved_model=_translations,
    tflite=lambda runner, texts: {"greedy": runner.translate(texts),
                                  "beam": runner.translate(texts, beam_size=BEAM)},
    atol=None, lacks="vocabularies",
)

# -- language model: the text at temperature 0, and a sampled one with a seed -----------------

LENGTH, TEMPERATURE, SEED = 20, 1.0, 3


def _generations(generate, prompts):
    """Both generations of each prompt, with ``generate(prompt, temperature, seed)``."""
    return {"greedy": [generate(p, 0.0, 0) for p in prompts],
            "sampled": [generate(p, TEMPERATURE, SEED) for p in prompts]}


def _served_generation(saved, prompts):
    def generate(prompt, temperature, seed):
        return saved.signatures["serving_default"](
            prompt=tf.constant(prompt), length=tf.constant(LENGTH),
            temperature=tf.constant(temperature), seed=tf.constant(seed),
            top_k=tf.constant(0), top_p=tf.constant(1.0))["text"].numpy().decode()

    return _generations(generate, prompts)


LANGUAGE_MODEL = KindCase(
    model=lambda request: tiny_language_model("gru"),
    inputs=["ROMEO:", "But soft"],
    network=lambda model, prompts: [model(np.array([model.preprocessor.tokenize(p)], np.int32))
                                    for p in prompts],
    python=lambda model, prompts: _generations(
        lambda p, t, s: model.generate(p, LENGTH, temperature=t, seed=s), prompts),
    saved_model=_served_generation,
    tflite=lambda runner, prompts: _generations(
        lambda p, t, s: runner.generate(p, LENGTH, temperature=t, seed=s), prompts),
    atol=None, lacks="characters",
)

# -- classifier: the probabilities of every label ---------------------------------------------

CLASSIFIER = KindCase(
    model=lambda request: tiny_classifier(),
    inputs=["i loved it", "a dull , tedious mess", "zzz"],
    network=lambda model, texts: model(model.preprocessor.tokenize(texts)),
    python=lambda model, texts: model.probabilities(texts),
    saved_model=lambda saved, texts: saved.signatures["serving_default"](
        texts=tf.constant(texts, tf.string))["probabilities"].numpy(),
    tflite=lambda runner, texts: np.stack([runner.probabilities(t) for t in texts]),
    atol=1e-5,  # test_bad_input.test_classifier_runtimes_agree's and test_classifier's
    lacks="vocabulary",
)

CASES = {"translation": TRANSLATION, "language_model": LANGUAGE_MODEL, "classifier": CLASSIFIER}


def test_every_kind_has_a_case():
    assert set(CASES) == set(KINDS), "give each kind of zoo.models.KINDS a case in CASES"


@pytest.fixture(params=sorted(KINDS))
def kind(request):
    if request.param not in CASES:
        pytest.fail(f"kind {request.param!r} has no case in CASES")
    return request.param


def test_a_preset_loads_as_the_model_it_was_saved_from(kind, request, tmp_path):
    case = CASES[kind]
    model = case.model(request)
    assert model.kind == kind
    directory = model.save_to_preset(tmp_path / kind)

    def network(loaded):
        return case.network(loaded, case.inputs)

    by_zoo_load = run_preset_test(directory, model, network, atol=0)
    by_class = type(model).from_preset(directory)
    assert_same_outputs(network(by_class), network(model), atol=0)
    for loaded in (by_zoo_load, by_class):
        assert type(loaded) is type(model) and loaded.kind == kind
        assert loaded.get_config() == model.get_config()  # the decoding settings among them
        assert isinstance(loaded.require_preprocessor(), type(model).preprocessor_class)


def test_a_model_without_its_preprocessor_says_what_it_lacks(kind, request):
    model = CASES[kind].model(request)
    bare = type(model).from_config(model.get_config())
    with pytest.raises(ValueError) as error:
        bare.require_preprocessor()
    assert str(error.value) == (f"This model has no {CASES[kind].lacks}; call "
                                "set_preprocessor() or load a preset.")


@pytest.mark.slow
def test_python_saved_model_and_tflite_agree(kind, request, exported_runtimes):
    case = CASES[kind]
    model = case.model(request)
    saved, runner = exported_runtimes(model)
    expected = case.python(model, case.inputs)
    assert_same_outputs(case.saved_model(saved, case.inputs), expected, case.atol)
    assert_same_outputs(case.tflite(runner, case.inputs), expected, case.atol)

