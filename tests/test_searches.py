"""A translator's search as a value (``zoo.decoding.searches``): checked when made, the same
translations as the shorthand options, and passed through the exports, the runner and the
command line."""

import json
import subprocess
import sys

import pytest

from zoo.decoding import SEARCHES, BeamSearch, GreedySearch, RandomSampling, searches

from conftest import SOURCES


def test_a_search_is_a_value_written_and_read_as_json():
    assert BeamSearch(5) == BeamSearch(beam_size=5) and hash(BeamSearch(5)) == hash(BeamSearch(5))
    assert RandomSampling(1) == RandomSampling(1.0)  # the temperature is kept as a float
    for search in (GreedySearch(), BeamSearch(3, 2), RandomSampling(0.7, 10, 0.9, 4)):
        config = json.loads(json.dumps(search.to_config()))
        assert config["name"] in SEARCHES and searches.from_config(config) == search
    assert BeamSearch(3).to_config() == {"name": "beam", "beam_size": 3, "num_hypotheses": None}


@pytest.mark.parametrize("make, error", [
    (lambda: BeamSearch(0), "beam_size must be an integer from 1 to 64; received 0."),
    (lambda: BeamSearch(65), "beam_size must be an integer from 1 to 64; received 65."),
    (lambda: BeamSearch(2, 3), "num_hypotheses must be at most beam_size (2)"),
    (lambda: RandomSampling(-1.0), "temperature must be a finite number >= 0; received -1.0."),
    (lambda: RandomSampling(top_k=0), "top_k must be a positive integer or None; received 0."),
    (lambda: RandomSampling(top_p=1.5), "top_p must be a number in (0, 1] or None"),
    (lambda: RandomSampling(seed=-3), "seed must be an integer from 0 to 2**31 - 1 or None"),
    (lambda: searches.from_config({"name": "viterbi"}),
     "A search's config is {'name': one of greedy, beam, sampling, ...}"),
    (lambda: searches.from_config({"name": "beam", "width": 3}), "BeamSearch has no width"),
    (lambda: searches.chosen(BeamSearch(3), None, beam_size=3),
     "Give search=BeamSearch(beam_size=3, num_hypotheses=None) or its options (beam_size), "
     "not both"),
])
def test_a_bad_search_is_refused_when_made(make, error):
    with pytest.raises(ValueError) as raised:
        make()
    assert error in str(raised.value)


def test_the_shorthand_options_and_names_make_the_values():
    assert searches.from_options() is None
    assert searches.from_options(beam_size=1) == GreedySearch()
    assert searches.from_options(beam_size=4) == BeamSearch(4)
    assert searches.from_options(beam_size=4, num_hypotheses=2) == BeamSearch(4, 2)
    assert searches.from_options(sampling=True, seed=3) == RandomSampling(seed=3)
    assert searches.chosen("beam", None) == BeamSearch(5)
    assert searches.chosen(None, GreedySearch()) == GreedySearch()
    with pytest.raises(TypeError, match="search must be one of GreedySearch, BeamSearch, "
                                        "RandomSampling .* received 'viterbi'"):
        searches.chosen("viterbi", None)
    sampling = RandomSampling(temperature=0.5)
    drawn = sampling.for_call()
    assert drawn.seed is not None and drawn.temperature == 0.5 and sampling.seed is None


def test_the_values_need_neither_tensorflow_nor_keras():
    """A TFLite runner, which has no TensorFlow, takes the same values."""
    code = ("import sys; sys.modules['tensorflow'] = None\n"
            "from zoo.decoding import BeamSearch, arguments\n"
            "print(BeamSearch(3).beam_size, arguments.MAX_BEAM_SIZE, 'keras' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "64", "False"]


@pytest.fixture(scope="module")
def model(toy_translators):
    return toy_translators["attention"]


def test_translate_with_a_search_value_is_translate_with_its_options(model):
    assert model.translate(SOURCES, search=BeamSearch(3)) == model.translate(SOURCES, beam_size=3)
    assert model.translate(SOURCES, search="greedy") == model.translate(SOURCES)
    assert (model.translate(SOURCES, search=BeamSearch(3, 2))
            == model.translate(SOURCES, beam_size=3, num_hypotheses=2))
    sampling = dict(temperature=1.5, top_k=5, top_p=0.9, seed=11)
    sampled = model.translate(SOURCES, search=RandomSampling(**sampling))
    assert sampled == model.translate(SOURCES, sampling=True, **sampling)
    assert sampled == model.translate(SOURCES, search=RandomSampling(**sampling), batch_size=2)
    with pytest.raises(ValueError, match="Give search=.* or its options"):
        model.translate(SOURCES, search=BeamSearch(3), sampling=True)


@pytest.mark.slow
def test_an_exports_search_is_its_default_in_every_runtime(model, tmp_path):
    import tensorflow as tf

    from zoo import export

    sampling = RandomSampling(temperature=1.5, top_k=5, seed=7)
    saved = tf.saved_model.load(str(export.export(model, "saved_model", tmp_path, name="s",
                                                  search=sampling)))
    served = saved.signatures["serving_default"](texts=tf.constant(SOURCES))["translations"]
    assert [t.decode() for t in served.numpy()] == model.translate(SOURCES, search=sampling)
    runner = export.TFLiteTranslator(export.export(model, "tflite", tmp_path, name="t",
                                                   search=BeamSearch(3)))
    assert runner.beam_size == 3 and runner.search == BeamSearch(3)
    assert runner.translate(SOURCES) == model.translate(SOURCES, search=BeamSearch(3))
    assert runner.translate(SOURCES, search=sampling) == model.translate(SOURCES, search=sampling)
    with pytest.raises(ValueError, match="This file's beam returns the best translation only"):
        runner.translate(SOURCES, search=BeamSearch(3, 2))
    with pytest.raises(ValueError, match="give the sampling a seed"):
        export.export(model, "saved_model", tmp_path, name="u", search=RandomSampling())
    with pytest.raises(ValueError, match="beam_size 4 and BeamSearch.* disagree"):
        export.export(model, "tflite", tmp_path, name="v", beam_size=4, search=BeamSearch(3))


def test_the_command_line_makes_the_search_from_its_options(toy_preset, capsys):
    import zoo
    from zoo.cli import main

    model = zoo.load(toy_preset)
    options = ["--search", "sampling", "--temperature", "1.5", "--top-k", "5", "--seed", "3"]
    assert main(["translate", str(toy_preset), *options, *SOURCES]) == 0
    expected = model.translate(SOURCES, search=RandomSampling(1.5, top_k=5, seed=3))
    assert capsys.readouterr().out.splitlines() == expected
    assert main(["translate", str(toy_preset), "--temperature", "0.5", "你好。"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: --temperature: not an option of --search greedy (its options: none).\n")
    assert main(["translate", str(toy_preset), "--search", "sampling", "--beam", "3",
                 "你好。"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: --beam: not an option of --search sampling (its options: --temperature, "
        "--top-k, --top-p, --seed).\n")
    assert main(["translate", str(toy_preset), "--search", "sampling", "--top-p", "2",
                 "你好。"]) == 2
    assert capsys.readouterr().err == (
        "zoo: error: --top-p must be a number in (0, 1] or None; received 2.0.\n")
