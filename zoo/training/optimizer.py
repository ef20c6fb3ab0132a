"""The optimizer every trainer uses."""

import keras
from keras import ops


def adam(learning_rate, ema_momentum=None, clipnorm=1.0):
    """Adam with gradient clipping; with ``ema_momentum`` (a recipe's key) it also keeps an
    exponential moving average of the weights (Polyak averaging), which
    ``callbacks.standard_callbacks`` swaps in for validation, early stopping and the
    shipped preset."""
    averaging = {"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}
    return Adam(learning_rate, clipnorm=clipnorm, **averaging)


@keras.saving.register_keras_serializable(package="zoo")
class Adam(keras.optimizers.Adam):
    """Keras' Adam, whose update of a weight is one kernel on TensorFlow.

    Keras writes the update as ten element-wise operations, each a pass over the weight
    and its moments; TensorFlow's ``ResourceApplyAdam`` computes the same formula (``m +=
    (g - m)(1 - beta_1)``, ``v += (g^2 - v)(1 - beta_2)``, ``w -= alpha m / (sqrt(v) +
    epsilon)``) in one. The README's fine-tune spent 11% of its operations' time in
    Keras' update (docs/benchmarks.md, "Adam in one kernel, and the decoder's backward
    pass by hand"). The weights agree with Keras' Adam to float32's rounding (its ``1 -
    beta_1`` is rounded once, TensorFlow's twice). Other backends, AMSGrad, a sparse
    gradient and a gradient of another dtype than its weight take Keras' own update: for
    a sparse one (``IndexedSlices``: an embedding's looked-up rows) Keras squares each
    row's gradient before the rows of a token met twice are summed, so ``v`` takes the
    sum of the squares, where the fused kernel would square the sum. Its gradient
    clipping takes the norm in one pass (``_clip_by_norm``).
    """

    def update_step(self, gradient, variable, learning_rate):
        if (keras.backend.backend() != "tensorflow" or self.amsgrad
                or gradient.dtype != variable.dtype or not _dense(gradient)):
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        dtype = variable.dtype
        index = self._get_variable_index(variable)
        step = ops.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = ops.cast(self.beta_1, dtype), ops.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle, m=self._momentums[index].handle,
            v=self._velocities[index].handle, beta1_power=ops.power(beta_1, step),
            beta2_power=ops.power(beta_2, step), lr=ops.cast(learning_rate, dtype),
            beta1=beta_1, beta2=beta_2, epsilon=ops.cast(self.epsilon, dtype),
            grad=gradient)

    def _clip_by_norm(self, values, axes=None):
        """Keras' ``values * clipnorm / max(norm, clipnorm)``, whose norm on TensorFlow is
        one pass that only reads (``l2_loss``), where Keras squares into a new tensor and
        then sums it; the factor is applied in one product. Unclipped gradients are
        unchanged either way (the factor is exactly 1); a clipped one differs from Keras'
        by float32's rounding. A sparse gradient keeps TensorFlow's clipping (of its rows
        as they come, before a token's rows are summed)."""
        if keras.backend.backend() != "tensorflow" or axes is not None or not _dense(values):
            return super()._clip_by_norm(values, axes)
        import tensorflow as tf

        clipnorm = ops.cast(self.clipnorm, values.dtype)
        norm = tf.sqrt(2.0 * tf.nn.l2_loss(values))
        return values * (clipnorm / tf.maximum(norm, clipnorm))


def _dense(gradient):
    """Whether ``gradient`` is a dense tensor, not ``IndexedSlices``."""
    import tensorflow as tf

    return not isinstance(gradient, tf.IndexedSlices)
