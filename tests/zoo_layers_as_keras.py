"""A pytest plugin: in the tests it runs, Keras' ``LSTM``, ``GRU`` and ``SimpleRNN``
are the zoo's. ``tests/layers/test_keras_suite.py`` runs Keras' own test files of
those layers under it (``python -m pytest -p zoo_layers_as_keras FILES``)."""

from keras.src import layers

import zoo.layers

for _name in ("LSTM", "GRU", "SimpleRNN"):
    setattr(layers, _name, getattr(zoo.layers, _name))


def pytest_report_header():
    return "keras.src.layers LSTM, GRU, SimpleRNN: " + ", ".join(
        f"{getattr(layers, n).__module__}.{n}" for n in ("LSTM", "GRU", "SimpleRNN"))
