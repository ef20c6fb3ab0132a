"""The translators' training loss (registered with Keras: a model saved after
``zoo.training.compile_for_training`` loads with its loss)."""

import keras
from keras import ops

from zoo import backend as zoo_backend


@keras.saving.register_keras_serializable(package="zoo")
class SmoothedCrossentropy(keras.losses.Loss):
    """Cross-entropy of logits against the targets smoothed towards the uniform
    distribution (label smoothing, Szegedy et al. 2016: weight ``label_smoothing`` on the
    uniform), averaged over the tokens that are not padding (id 0).

    With ``label_smoothing=0`` it is Keras' ``SparseCategoricalCrossentropy(from_logits=True,
    ignore_class=0)``, which has no smoothing. ``call`` returns the batch's token mean, so
    every token counts the same whatever the length of its sentence.

    Logits ``[..., V]`` for targets ``[...]``; or *packed* logits ``[N, V]`` of the real
    tokens only (``Seq2Seq.decode_teacher_forced(real_only=True)``), the targets' tokens
    that are not padding, in their row-major order, the targets ``[B, T]`` as ever.

    The loss is one fused softmax cross-entropy against the smoothed distribution ``q``
    (``ops.categorical_crossentropy``: TensorFlow's kernel returns the gradient ``softmax
    - q`` with the loss), the same sum as ``-(1 - s) log p_t - s mean(log p)`` in another
    order: picking ``log p_t`` out of ``[tokens, V]`` had a gradient that scattered into
    a tensor of that size (TensorFlow's ``UnsortedSegmentSum``: 155 ms of a 1.3 s step of
    the zh->en recipe, docs/benchmarks.md).
    """

    def __init__(self, label_smoothing=0.0, name="smoothed_crossentropy", **kwargs):
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1); got {label_smoothing!r}.")
        super().__init__(name=name, **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, targets, logits):
        targets = ops.cast(targets, "int32")
        logits = ops.cast(logits, "float32")
        if len(logits.shape) == len(targets.shape):  # packed: the real tokens' logits only
            targets = real_tokens(targets)
            counted = None
        else:
            counted = ops.cast(ops.not_equal(targets, 0), "float32")
        per_token = self._per_token(targets, logits)
        if counted is None:
            return ops.sum(per_token) / ops.maximum(ops.cast(ops.shape(per_token)[0], "float32"),
                                                    1.0)
        return ops.sum(per_token * counted) / ops.maximum(ops.sum(counted), 1.0)

    def _per_token(self, targets, logits):
        """``-sum_v q_v log softmax(logits)_v`` at every position, ``q`` the smoothed
        one-hot distribution of its target."""
        smoothing, classes = self.label_smoothing, logits.shape[-1]
        if not smoothing:
            return ops.sparse_categorical_crossentropy(targets, logits, from_logits=True)
        on, off = 1.0 - smoothing + smoothing / classes, smoothing / classes
        if zoo_backend.is_tensorflow():
            import tensorflow as tf

            smoothed = tf.one_hot(targets, classes, on_value=on, off_value=off)
        else:
            smoothed = ops.one_hot(targets, classes) * (on - off) + off
        return ops.categorical_crossentropy(smoothed, logits, from_logits=True)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


def real_tokens(ids):
    """The ids of ``[B, T]`` that are not padding (0), in row-major order, ``[N]``
    (TensorFlow: a shape known when run)."""
    import tensorflow as tf

    zoo_backend.require_tensorflow("Packed logits (the real tokens only)")
    return tf.boolean_mask(ids, tf.not_equal(ids, 0))
