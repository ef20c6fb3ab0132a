"""Training a preset: a recipe (hyper-parameters as data) in, a scored preset out.

    recipes.py         typed recipes, one dataclass per kind of task (``load_recipe``)
    driver.py          the steps every task shares: seed, scope, fit, score, ship (``train``)
    task.py            what the driver asks of a task
    translation.py     translators, and the character-level tasks of generated data
    language_model.py  character language models
    classification.py  text classifiers
    loop.py            one resumable training loop for every ``tf.distribute`` strategy
    batches.py, callbacks.py, optimizer.py, shipping.py: the parts the tasks share

Fine-tuning a translator on your own pairs with Keras ``fit`` needs two of them::

    from zoo import training
    data = training.tsv_dataset(model, "my_pairs.tsv")
    training.compile_for_training(model, learning_rate=3e-4)
    model.fit(data, epochs=3)
"""

from zoo.training.driver import train
from zoo.training.recipes import load_recipe
from zoo.training.translation import compile_for_training, tsv_dataset

__all__ = ["compile_for_training", "load_recipe", "train", "tsv_dataset"]
