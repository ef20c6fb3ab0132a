"""The trainers' Adam: Keras' update, one TensorFlow kernel a weight."""

import keras
import numpy as np
import pytest

from zoo.training.optimizer import adam

from testcase import gradients_on


def _trained_weights(optimizer, steps=12):
    """A small model with an embedding (a sparse gradient) and a dense layer, trained
    ``steps`` steps of one batch from a seeded start."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Embedding(40, 8), keras.layers.GlobalAveragePooling1D(),
                              keras.layers.Dense(3)])
    model.build((None, 5))
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    # Tokens met several times in a batch: Keras' sparse update differs there.
    inputs, labels = rng.integers(0, 10, (16, 5)), rng.integers(0, 3, 16)
    with gradients_on():
        for _ in range(steps):
            model.train_on_batch(inputs, labels)
    return [weight.numpy() for weight in model.weights]


@pytest.mark.parametrize("ema_momentum", [None, 0.9])
def test_the_zoo_adam_updates_as_keras_adam(ema_momentum):
    averaging = {"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}
    keras_weights = _trained_weights(
        keras.optimizers.Adam(3e-3, clipnorm=1.0, **averaging))
    zoo_weights = _trained_weights(adam(3e-3, ema_momentum))
    assert len(zoo_weights) == len(keras_weights)
    for ours, theirs in zip(zoo_weights, keras_weights):
        # 12 steps of 3e-3 move a weight by up to 0.036; float32's rounding apart.
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=2e-6)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's kernel")
def test_a_dense_gradient_takes_one_kernel_a_sparse_one_keras_update():
    import tensorflow as tf

    embedding, dense = keras.layers.Embedding(40, 8), keras.layers.Dense(3)
    embedding.build((None, 5))
    dense.build((None, 8))
    variables = embedding.trainable_weights + dense.trainable_weights
    optimizer = adam(1e-3)
    optimizer.build(variables)

    @tf.function
    def step(tokens):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(dense(tf.reduce_mean(embedding(tokens), axis=1)))
        optimizer.apply(tape.gradient(loss, variables), variables)

    graph = step.get_concrete_function(tf.TensorSpec([4, 5], tf.int32)).graph
    fused = [op for op in graph.get_operations() if op.type == "ResourceApplyAdam"]
    # Dense's kernel and bias; the embedding's rows (IndexedSlices) take Keras' update.
    assert len(fused) == 2


def test_clipping_scales_a_gradient_over_the_norm_as_keras_does():
    from keras import ops

    rng = np.random.default_rng(1)
    over = rng.standard_normal((6, 7)).astype("float32")  # norm about 6.5
    under = (0.05 * rng.standard_normal(9)).astype("float32")  # norm about 0.15
    gradients = [ops.convert_to_tensor(over), ops.convert_to_tensor(under)]
    ours = [ops.convert_to_numpy(g) for g in adam(1e-3)._clip_gradients(gradients)]
    theirs = [ops.convert_to_numpy(g) for g in
              keras.optimizers.Adam(1e-3, clipnorm=1.0)._clip_gradients(gradients)]
    np.testing.assert_allclose(np.linalg.norm(ours[0]), 1.0, rtol=1e-6)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(ours[1], under)  # under the norm: exactly unchanged


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's kernel")
def test_the_norm_is_one_pass_that_only_reads():
    import tensorflow as tf

    optimizer = adam(1e-3)
    clip = tf.function(lambda gradient: optimizer._clip_gradients([gradient]))
    graph = clip.get_concrete_function(tf.TensorSpec([6, 7], tf.float32)).graph
    kinds = [op.type for op in graph.get_operations()]
    # Keras' (tf.clip_by_norm) multiplies the gradient by itself into a new tensor, then
    # sums that.
    assert kinds.count("L2Loss") == 1 and "Sum" not in kinds
