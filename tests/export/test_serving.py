"""Serving under load: many threads give exactly what sequential calls give."""

import pytest
import tensorflow as tf

import zoo
from zoo import export
from zoo.benchmarks import serve as serve_benchmark
from zoo.cli import main

pytestmark = pytest.mark.slow  # exports and conversions: run by .ci/run after the default suite

DATES = ["30 novembre 2026", "Nov 30, 2026", "2026年11月30日", "30.11.26", "1 janvier 1999",
         "Tuesday, March 4, 1980", "4 марта 1980 г.", "2049-12-31"]


def test_saved_model_signature_from_8_threads_matches_sequential_calls(tmp_path):
    signature = tf.saved_model.load(str(export.export("gru_bahdanau_dates", "saved_model",
                                                      tmp_path))).signatures["serving_default"]

    def serve(text):
        return signature(texts=tf.constant([text]))["translations"].numpy()[0].decode()

    sequential = [serve(text) for text in DATES]
    answers, latencies, _ = serve_benchmark.concurrent_requests(serve, DATES, 8, 400)
    assert answers == [sequential[i % len(DATES)] for i in range(400)]
    assert len(latencies) == 400 and min(latencies) > 0
    assert sequential[:4] == ["2026-11-30"] * 4


def test_translate_is_thread_safe():
    model = zoo.load("gru_bahdanau_dates")  # fresh: the searches are traced under the threads
    sequential = zoo.load("gru_bahdanau_dates").translate(DATES)
    answers, _, _ = serve_benchmark.concurrent_requests(lambda t: model.translate([t])[0],
                                                        DATES, 8, 80)
    assert answers == [sequential[i % len(DATES)] for i in range(80)]


def test_serve_benchmark_refuses_a_language_model_preset(tmp_path, capsys, monkeypatch):
    from zoo.models import preset_model

    monkeypatch.setattr(preset_model, "preset_kind", lambda name: "language_model")
    assert main(["benchmark", "serve", "some_lm"]) == 2
    assert "measures presets served with texts in (translators, classifiers); some_lm is a " \
        "language model" in capsys.readouterr().err
