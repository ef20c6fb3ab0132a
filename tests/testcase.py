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

import contextlib

import keras
import numpy as np

import zoo
from zoo import presets


def assert_same_outputs(actual, expected, atol):
    """Equal nested outputs: every tensor within ``atol``; or, with ``atol=None``, equal
    with ``==`` (texts, such as a model's translations or generations)."""
    if atol is None:
        assert actual == expected
        return
    actual, expected = keras.tree.flatten(actual), keras.tree.flatten(expected)
    assert len(actual) == len(expected)
    for a, b in zip(actual, expected):
        np.testing.assert_allclose(a, b, atol=atol)


def gradients_on():
    """A context for training on PyTorch, whose autograd the suite turns off (conftest);
    elsewhere nothing."""
    if keras.backend.backend() != "torch":
        return contextlib.nullcontext()
    import torch

    return torch.enable_grad()


def outputs_and_gradients(function, inputs, variables):
    """``function(*inputs) -> (outputs, loss)`` run with this Keras backend's autodiff.

    Returns ``(outputs, gradients)`` as numpy arrays: the gradients of ``loss`` with
    respect to each of ``inputs`` (numpy arrays) and then each of ``variables``
    (Keras variables). One helper, so that a test compares the zoo with Keras on
    TensorFlow, JAX and PyTorch alike.
    """
    backend = keras.backend.backend()
    numpy = keras.ops.convert_to_numpy
    if backend == "tensorflow":
        import tensorflow as tf

        tensors = [tf.constant(x) for x in inputs]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            outputs, loss = function(*tensors)
        gradients = tape.gradient(loss, tensors + [v.value for v in variables])
    elif backend == "jax":
        import jax

        def pure(tensors, values):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                outputs, loss = function(*tensors)
            return loss, outputs

        (_, outputs), (input_grads, variable_grads) = jax.value_and_grad(
            pure, argnums=(0, 1), has_aux=True)([jax.numpy.asarray(x) for x in inputs],
                                                [v.value for v in variables])
        gradients = list(input_grads) + list(variable_grads)
    else:
        import torch

        tensors = [torch.tensor(x, requires_grad=True) for x in inputs]
        with torch.enable_grad():
            outputs, loss = function(*tensors)
        gradients = torch.autograd.grad(loss, tensors + [v.value for v in variables])
        outputs = keras.tree.map_structure(lambda t: t.detach(), outputs)
    return keras.tree.map_structure(numpy, outputs), [numpy(g) for g in gradients]


def preset_weights(preset):
    """``{path in the file: array}`` of a preset folder's ``model.weights.h5``."""
    import h5py

    with h5py.File(preset / "model.weights.h5") as weights:
        arrays = []
        weights.visititems(lambda name, item: arrays.append((name, item[()]))
                           if isinstance(item, h5py.Dataset) else None)
    return dict(arrays)


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
    """The preset in ``directory``, saved from ``model``, loads (``zoo.load``) as a
    model computing what ``model`` computes: ``call(loaded)`` against ``call(model)``.
    Returns the loaded model."""
    loaded = zoo.load(directory)
    assert_same_outputs(call(loaded), call(model), atol)
    return loaded


def run_preset_round_trip(model, directory, call, atol, **save_arguments):
    """``zoo.presets.save(model, directory, **save_arguments)``, then
    :func:`run_preset_test` on what it wrote. Returns ``(preset directory, loaded model)``."""
    directory = presets.save(model, directory, **save_arguments)
    return directory, run_preset_test(directory, model, call, atol)
