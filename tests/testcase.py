"""Checks that many tests make, written once, as keras-hub's ``TestCase`` has them
(``run_serialization_test``, ``run_preset_test``); plain functions, for pytest's plain
test functions.

Import them as ``from testcase import ...``: this folder is on ``sys.path`` (pytest puts
the folder of tests/conftest.py there). The name does not match pytest's ``test_*.py``,
so pytest collects nothing from it.

Each takes the tolerance of the test it serves (``np.testing.assert_allclose``'s
``atol``, with NumPy's default ``rtol``) and ``call``, a function of a layer or model
returning what to compare: the tests' own ``layer(inputs)``, ``model.probabilities(texts)``
and so on.
"""

import keras
import numpy as np
import tensorflow as tf

from zoo import presets


def assert_same_outputs(actual, expected, atol):
    """Equal nested outputs: every tensor within ``atol``; or, with ``atol=None``, equal
    with ``==`` (texts, such as a model's translations or generations)."""
    if atol is None:
        assert actual == expected
        return
    actual, expected = tf.nest.flatten(actual), tf.nest.flatten(expected)
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected):
        np.testing.assert_allclose(a, b, atol=atol)


def run_serialization_test(layer, call, model, model_inputs, path, atol=1e-6):
    """A layer survives both of Keras' serializations.

    1. Config: ``layer.__class__.from_config(layer.get_config())``, given ``layer``'s
       weights, computes what ``layer`` computes (``call(layer)`` against ``call(clone)``).
    2. ``.keras`` file: ``model`` (a model holding such a layer, or a function building
       one, called after step 1) saved to ``path`` and loaded with
       ``keras.saving.load_model`` computes what it computed on ``model_inputs``.
    """
    expected = call(layer)
    clone = layer.__class__.from_config(layer.get_config())
    call(clone)  # builds it
    clone.set_weights(layer.get_weights())
    assert_same_outputs(call(clone), expected, atol)

    if not isinstance(model, keras.Model):
        model = model()
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert_same_outputs(reloaded(model_inputs), model(model_inputs), atol)
    return reloaded


def run_preset_test(directory, model, call, atol):
    """The preset in ``directory``, saved from ``model``, loads (``zoo.presets.load``) as a
    model computing what ``model`` computes: ``call(loaded)`` against ``call(model)``.
    Returns the loaded model."""
    loaded = presets.load(directory)
    assert_same_outputs(call(loaded), call(model), atol)
    return loaded


def run_preset_round_trip(model, directory, call, atol, **save_arguments):
    """``zoo.presets.save(model, directory, **save_arguments)``, then
    :func:`run_preset_test` on what it wrote. Returns ``(preset directory, loaded model)``."""
    directory = presets.save(model, directory, **save_arguments)
    return directory, run_preset_test(directory, model, call, atol)
