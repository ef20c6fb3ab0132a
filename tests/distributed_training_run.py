"""One small language-model training under a tf.distribute strategy, in its own process.

Run by tests/training/test_loop.py: ``python distributed_training_run.py STRATEGY TEXT OUT``
(``TF_CONFIG`` set for ``multi_worker``). Writes ``OUT`` (an .npz): the trained weights
of the first replica, the largest difference between replicas, and the loss history.
"""

import sys

import tensorflow as tf

strategy_name, text_path, out_path = sys.argv[1:4]
# Two replicas on this one CPU for `mirrored` (logical devices: set before TF starts).
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from zoo.training import language_model, loop  # noqa: E402
from zoo.data import shakespeare  # noqa: E402

RECIPE = {"model_config": {"cell": "lstm", "embedding_dim": 8, "units": 24}}

options = loop.Options(strategy=loop.make_strategy(strategy_name))
splits = shakespeare.split(shakespeare.read_text(text_path))
characters = sorted(set(splits["train"]))
keras.utils.set_random_seed(0)
with options.scope():
    model = language_model.build_model(characters, RECIPE["model_config"])
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
train_data = language_model.windows(model.preprocessor.tokenize(splits["train"]), 32, 8, shuffle=True)
validation_data = language_model.windows(model.preprocessor.tokenize(splits["validation"]), 32, 8, shuffle=False)
history = loop.fit(model, train_data, 2, validation_data.dataset(), options=options)

replicas = [getattr(v, "values", (v,)) for v in model.trainable_variables]
spread = max(float(np.max(np.abs(keras.ops.convert_to_numpy(copy) - keras.ops.convert_to_numpy(copies[0]))))
             for copies in replicas for copy in copies)
np.savez(out_path, spread=spread, replicas=options.strategy.num_replicas_in_sync,
         loss=history["loss"], val_loss=history["val_loss"],
         **{f"w{i}": keras.ops.convert_to_numpy(copies[0]) for i, copies in enumerate(replicas)})
