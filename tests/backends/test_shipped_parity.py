"""The shipped presets on JAX and PyTorch give TensorFlow's numbers.

This process runs Keras on TensorFlow; ``shipped_outputs.py`` runs the same presets in
a subprocess on each other backend (the translators: one of each model class,
``TRANSLATORS``). For 100 test sentences per translator, greedy
and beam 5 must give the same translations; a sentence may differ (at most 2 of 100)
only after a step where TensorFlow's log-probabilities of the two backends' tokens
lie within 1e-4 (float32 sums in another order flip a near tie), and the test shows
that step. Seeded generations are identical (``zoo.decoding.counter_uniform`` draws
the same numbers on every backend), nats per character within 1e-4, classifier
probabilities within 1e-5.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import zoo
from zoo import export, presets
from zoo.data import shakespeare, sst2
from zoo.evaluation import splits
from zoo.text.vocabulary import START_ID

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                       reason="the reference numbers are TensorFlow's"),
]

HERE = Path(__file__).resolve().parent
# Every shipped language model (a cell each) and classifier, and one translator of each
# model class: the translators of a class share every line of code and differ in weights
# and vocabularies, and JAX compiles each search again for each preset (all six took 3 of
# the slow suite's 31 minutes in December 2026's .ci/run).
TRANSLATORS = {"AttentionSeq2Seq": "gru_bahdanau_cmn_en",
               "BottleneckSeq2Seq": "lstm_seq2seq_cmn_en"}
SHIPPED = [name for name in zoo.list_models()
           if name in TRANSLATORS.values() or presets.model_class_name(name) not in TRANSLATORS]
SENTENCES = 100
NEAR_TIE = 1e-4
MAX_DIFFERING = 2
PROMPTS = [
    {"prompt": "ROMEO:", "length": 200, "temperature": 0.8, "seed": 7},
    {"prompt": "First Citizen:\n", "length": 120, "temperature": 1.0, "seed": 2026},
    {"prompt": "KING", "length": 80, "temperature": 0.0, "seed": 0},
]


def _available(backend):
    module = {"jax": "jax", "torch": "torch"}[backend]
    return subprocess.run([sys.executable, "-c", f"import {module}"],
                          capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def reference():
    """TensorFlow's outputs, and the inputs the other backends get."""
    inputs = {"translation": {}, "language_model": {}, "classifier": {}}
    outputs = {"translation": {}, "language_model": {}, "classifier": {}}
    for name in SHIPPED:
        model = zoo.load(name)
        kind = export.model_kind(model)
        if kind == "translation":
            sources = splits.preset_splits(name)["test"][0][:SENTENCES]
            texts = {str(k): model.translate(sources, beam_size=k, check_outputs=False)
                     for k in (1, 5)}
            inputs["translation"][name] = {"sources": sources, "reference_texts": texts}
            outputs["translation"][name] = texts
        elif kind == "language_model":
            text = shakespeare.split(shakespeare.read())["test"][:3000]
            inputs["language_model"][name] = {"text": text, "prompts": PROMPTS}
            outputs["language_model"][name] = {
                "nats_per_char": model.nats_per_char(text),
                "generations": [model.generate(p["prompt"], p["length"], p["temperature"],
                                               p["seed"]) for p in PROMPTS]}
        else:
            texts = sst2.read()["validation"][0][:SENTENCES]
            inputs["classifier"][name] = {"texts": texts}
            outputs["classifier"][name] = model.probabilities(texts)
    return inputs, outputs


def _run_on(backend, inputs, tmp_path):
    inputs_path, outputs_path = tmp_path / "inputs.json", tmp_path / f"{backend}.json"
    inputs_path.write_text(json.dumps(inputs, ensure_ascii=False), encoding="utf-8")
    environment = {**os.environ, "KERAS_BACKEND": backend}
    run = subprocess.run(
        [sys.executable, str(HERE / "shipped_outputs.py"), str(inputs_path), str(outputs_path)],
        env=environment, capture_output=True, text=True, timeout=3000)
    assert run.returncode == 0, run.stderr[-3000:]
    outputs = json.loads(outputs_path.read_text(encoding="utf-8"))
    assert outputs["backend"] == backend
    return outputs


def _gap_at_divergence(model, source, ours, theirs):
    """Where two token sequences first differ: TensorFlow's log-probabilities of the
    two tokens there, given the common prefix, and their difference."""
    position = next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)
    source_ids = model.preprocessor.tokenize_sources([source])
    prefix = np.asarray([[START_ID, *ours[:position]]], np.int32)
    logits = keras.ops.convert_to_numpy(model((source_ids, prefix)))[0, -1]
    log_probs = logits - np.logaddexp.reduce(logits.astype(np.float64))
    return position, abs(log_probs[ours[position]] - log_probs[theirs[position]])


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_shipped_presets_give_tensorflow_numbers(backend, reference, tmp_path):
    if not _available(backend):
        assert not os.environ.get("CI"), f"CI installs {backend}; it is missing"
        pytest.skip(f"{backend} is not installed (pip install '.[{backend}]')")
    inputs, expected = reference
    outputs = _run_on(backend, inputs, tmp_path)

    for name, by_beam in expected["translation"].items():
        model = zoo.load(name)
        for beam, texts in by_beam.items():
            got = outputs["translation"][name][beam]
            differing = [i for i, (a, b) in enumerate(zip(texts, got["texts"])) if a != b]
            assert len(differing) <= MAX_DIFFERING, (name, beam, differing)
            for index in differing:
                source = inputs["translation"][name]["sources"][index]
                source_ids = keras.ops.convert_to_tensor(
                    model.preprocessor.tokenize_sources([source]))
                ours = keras.ops.convert_to_numpy(model.generate_ids(source_ids, int(beam))[0])
                position, gap = _gap_at_divergence(
                    model, source, ours[0].tolist(), got["differing_ids"][str(index)])
                print(f"{name} beam {beam}: {source!r} differs on {backend} from piece "
                      f"{position}, after a near tie (log-probabilities {gap:.2e} apart)")
                assert gap <= NEAR_TIE, (name, beam, source, position, gap)

    for name, values in expected["language_model"].items():
        got = outputs["language_model"][name]
        assert got["generations"] == values["generations"], name
        assert got["nats_per_char"] == pytest.approx(values["nats_per_char"], abs=1e-4)

    for name, probabilities in expected["classifier"].items():
        np.testing.assert_allclose(outputs["classifier"][name], probabilities, atol=1e-5)
