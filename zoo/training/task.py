"""What the driver asks of each kind of preset (``zoo.training.driver`` calls these in
order): its data splits, its text pipeline and model, its datasets, how it is compiled
and described; its scores and model card are ``zoo.evaluation``'s, which it calls."""


class Task:
    """One kind of preset, trained from a typed recipe.

    Subclasses say how; the driver (seeding, strategy scope, the loop, shipping) is the
    same for all. ``monitor`` is what early stopping and the choice among seeds watch.
    """

    monitor = "val_loss"
    kind = None  # the kind of model it trains (``zoo.models.KINDS``), which keys its card
    # Train in seed_N folders, and record the seed, even for one seed (the classifier's
    # runs were always kept apart so); other tasks do when the recipe lists ``seeds``.
    seeds_apart = False
    validation_metrics = None  # {name: fn(y_true, y_pred)} beside the validation loss

    def __init__(self, recipe, data_file=None, data_dir=None, printer=print):
        self.recipe, self.data_file, self.data_dir, self.printer = (recipe, data_file, data_dir,
                                                                    printer)

    @property
    def data_name(self):
        """What the run's checkpoints record of its data."""
        return str(self.data_file or "")

    def read_splits(self):
        """``{"train", "validation", "test"}``, each the task's examples."""
        raise NotImplementedError

    @staticmethod
    def split_sizes(splits):
        """``{split: examples}`` (splits of ``(inputs, targets)``; a text's task counts
        characters)."""
        return {name: len(sides[0]) for name, sides in splits.items()}

    def build_preprocessor(self, splits):
        """The text pipeline, learned from the training split only."""
        raise NotImplementedError

    def build_model(self, preprocessor):
        """A built model holding ``preprocessor`` (called inside the strategy's scope)."""
        raise NotImplementedError

    def datasets(self, model, splits, seed):
        """``(train, validation)``: ``loop.EpochData`` each."""
        raise NotImplementedError

    def training_view(self, model):
        """What ``loop.fit`` trains (and ``compile`` compiles): ``model`` itself, or a
        view of it that shares its weights and adds a training-only loss (a translator's
        guided alignment, ``alignment.GuidedAlignmentTraining``)."""
        return model

    def compile(self, model, steps_per_epoch, epochs):
        """Optimizer and loss (called inside the strategy's scope)."""
        raise NotImplementedError

    def reduce_on_plateau(self):
        return True

    def summary(self, splits, preprocessor, model):
        """The line printed before training."""
        raise NotImplementedError

    def best_of_history(self, history):
        """The best validation figure of a run (seeds are compared by it)."""
        return round(float(min(history["val_loss"])), 4)

    def seed_line(self, seed, history):
        """The line printed after the training from ``seed``, when seeds are kept apart."""
        return f"seed {seed}: best validation loss {self.best_of_history(history)}"

    def training_summary(self, history):
        """What the metadata's training record adds from the chosen run's history."""
        return {"best_val_loss": self.best_of_history(history)}

    def describe(self, model, splits, record):
        """The preset's metadata before scoring; ``record``: how it was trained."""
        raise NotImplementedError

    def choose_decoding(self, model, splits):
        """Settings chosen on validation after training, set on ``model`` (a translator's
        length penalty and search defaults); the metadata entries that record them."""
        return {}

    def score(self, shipped, splits):
        """The scores of the shipped preset (and its ``headline``), for its metadata."""
        raise NotImplementedError

    @property
    def preprocessor_class(self):
        """The text pipeline's class (``save(dir)``, ``from_directory(dir)``): its model kind's."""
        from zoo.models import KINDS

        return KINDS[self.kind].preprocessor_class

    def card(self, metadata):
        """The model card (README.md) of its kind, from the metadata."""
        from zoo.evaluation import cards

        return cards.CARDS[self.kind](metadata)
