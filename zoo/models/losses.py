"""The translators' training loss (registered with Keras: a model saved after
``zoo.training.compile_for_training`` loads with its loss)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="zoo")
class SmoothedCrossentropy(keras.losses.Loss):
    """Cross-entropy of logits against the targets smoothed towards the uniform
    distribution (label smoothing, Szegedy et al. 2016: weight ``label_smoothing`` on the
    uniform), averaged over the tokens that are not padding (id 0).

    With ``label_smoothing=0`` it is Keras' ``SparseCategoricalCrossentropy(from_logits=True,
    ignore_class=0)``, which has no smoothing. ``call`` returns the batch's token mean, so
    every token counts the same whatever the length of its sentence.
    """

    def __init__(self, label_smoothing=0.0, name="smoothed_crossentropy", **kwargs):
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1); got {label_smoothing!r}.")
        super().__init__(name=name, **kwargs)
        self.label_smoothing = label_smoothing

    def call(self, targets, logits):
        targets = ops.cast(targets, "int32")
        log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
        target_log_prob = ops.squeeze(ops.take_along_axis(log_probs, targets[..., None], axis=-1), -1)
        smoothing = self.label_smoothing
        per_token = -((1.0 - smoothing) * target_log_prob + smoothing * ops.mean(log_probs, axis=-1))
        counted = ops.cast(ops.not_equal(targets, 0), "float32")
        return ops.sum(per_token * counted) / ops.maximum(ops.sum(counted), 1.0)

    def get_config(self):
        return {**super().get_config(), "label_smoothing": self.label_smoothing}
