"""The base of the zoo's task models, as keras-hub's ``Task`` is of its models.

A ``PresetModel`` declares its **kind** once, on the class (``Seq2Seq.kind ==
"translation"``, ``CharLanguageModel.kind == "language_model"``, ``TextClassifier.kind ==
"classifier"``): the registries above the models -- training tasks, export formats, LiteRT
runners, the command line, the demo's panels -- are keyed on it (``KINDS`` maps each kind
to the class that declares it). The teaching tasks (dates, sums) are translators, a
variant of the translation kind.

It holds its text pipeline (``preprocessor``, a ``zoo.text`` preprocessor, saved as the
preset's assets) and loads and saves presets: ``from_preset`` and ``save_to_preset``
here, the files, checksums and limits in ``zoo.presets``.
"""

import contextlib

import keras

from zoo import _startup, precision, presets

KINDS = {}  # kind -> the PresetModel subclass that declares it


class PresetModel(precision.StatelessAutocast, keras.Model):
    """A model with a kind, a preprocessor, and presets (not used directly).

    Subclasses set ``kind`` (once, on the class that introduces it), ``preprocessor_class``
    and ``preprocessor_holds`` (what a model without its preprocessor lacks, for the
    error), and override ``check_preprocessor`` and ``preprocessor_options``.
    """

    kind = None
    preprocessor_class = None
    preprocessor_holds = "vocabulary"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "kind" in vars(cls):
            KINDS[cls.kind] = cls

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.preprocessor = None

    # -- the text pipeline (preset assets) -----------------------------------------------------
    def set_preprocessor(self, preprocessor):
        """Attach the ``preprocessor_class`` instance the embeddings were built for."""
        self.check_preprocessor(preprocessor)
        self.preprocessor = preprocessor

    def check_preprocessor(self, preprocessor):
        """Raise ``ValueError`` when ``preprocessor`` does not fit this model's sizes."""

    def require_preprocessor(self):
        """The preprocessor, or a clear error when the model has none yet."""
        if self.preprocessor is None:
            raise ValueError(f"This model has no {self.preprocessor_holds}; call "
                             "set_preprocessor() or load a preset.")
        return self.preprocessor

    def preprocessor_options(self):
        """What ``preprocessor_class.from_directory`` takes besides the folder (from the
        config)."""
        return {}

    def save_assets(self, directory):
        self.require_preprocessor().save(directory)

    def load_assets(self, directory):
        self.set_preprocessor(self.preprocessor_class.from_directory(
            directory, **self.preprocessor_options()))

    # -- presets ---------------------------------------------------------------------------------
    @classmethod
    def from_preset(cls, preset):
        """Load ``preset`` (a name, as ``zoo list`` shows, or a preset folder): ``zoo.load``
        for a preset that holds this class (or a subclass), and a clear error for a preset
        of another class."""
        model = load(preset)
        if not isinstance(model, cls):
            held = type(model).__name__
            fitting = [name for name in presets.list_models() if presets.model_class_name(name)
                       in {klass.__name__ for klass in _with_subclasses(cls)}]
            raise presets.PresetError(
                f"{cls.__name__}.from_preset({str(preset)!r}): that preset holds a model of "
                f"class {held}, not {cls.__name__}; load it with {held}.from_preset or zoo.load. "
                f"{cls.__name__} presets: {', '.join(fitting) or 'none'}."
            )
        return model

    def save_to_preset(self, directory, metadata=None, card=None, weights_dtype="float32"):
        """``zoo.presets.save``: this model, its preprocessor and ``metadata`` as a preset
        folder, atomically; returns the folder."""
        return presets.save(self, directory, metadata, card, weights_dtype)


def kind_of(model):
    """The kind of a model (``KINDS``), or a clear error for a model that is no zoo model
    (a ``.keras`` file of another Keras model, say)."""
    if not isinstance(model, PresetModel):
        raise ValueError(f"{type(model).__name__} is not a zoo model: zoo's models are of the "
                         f"kinds {', '.join(KINDS)} (zoo.models).")
    return model.kind


def preset_kind(name_or_directory):
    """The kind of model a preset holds, read from its config (nothing is built)."""
    class_name = presets.model_class_name(name_or_directory)
    for cls in _with_subclasses(PresetModel):
        if cls.__name__ == class_name:
            return cls.kind
    raise presets.PresetError(f"Preset {str(name_or_directory)!r} holds a {class_name}, which "
                              f"is no zoo model: zoo's kinds are {', '.join(KINDS)}.")


def _with_subclasses(cls):
    return [cls, *(sub for child in cls.__subclasses__() for sub in _with_subclasses(child))]


def load(name_or_directory):
    """Load a preset (by name or directory), or a ``.keras`` file, as a built Keras model
    with its weights."""
    if str(name_or_directory).endswith(".keras"):
        return load_keras_file(name_or_directory)
    directory, metadata, config = presets.read_verified(name_or_directory)
    _startup.log_onednn_dtype_notice_quietly()
    model = deserialize_safely(config, source=directory / presets.CONFIG_FILE)
    assets = directory / presets.ASSETS_DIR
    if isinstance(model, PresetModel) and assets.is_dir():
        model.load_assets(str(assets))
    _load_weights(model, directory / presets.WEIGHTS_FILE)
    model.preset_metadata = metadata
    return model


def deserialize_safely(config, source):
    """Rebuild a model from its config with Keras safe mode, with clear errors."""
    with _refusing_unsafe_configs(source):
        return keras.saving.deserialize_keras_object(config, safe_mode=True)


def load_keras_file(path):
    """A model saved with ``model.save("x.keras")``, read with Keras safe mode on, after
    the checks of ``presets.check_keras_file``."""
    presets.check_keras_file(path)
    with _refusing_unsafe_configs(path):
        return keras.saving.load_model(path, safe_mode=True)


@contextlib.contextmanager
def _refusing_unsafe_configs(source):
    """Keras' deserialization errors as one-line ``PresetError``s that say what was refused.

    The zoo's classes are registered with Keras: this module is imported with the
    ``zoo.models`` package, which imports every model class and ``zoo.layers``."""
    try:
        yield
    except (TypeError, ValueError) as error:
        message = str(error)
        if "Lambda" in message or "safe_mode" in message:
            raise presets.PresetError(
                f"{source} contains a Lambda layer (arbitrary Python code); zoo loads "
                "with Keras safe mode on and refuses it."
            ) from None
        if "Could not locate" in message or "Unknown" in message:
            raise presets.PresetError(
                f"{source} refers to a class that is not registered with Keras "
                f"(only keras.* and zoo.* classes load): {message.splitlines()[0]}"
            ) from None
        raise presets.PresetError(
            f"{source} cannot be deserialized: {message.splitlines()[0]}") from None


def _load_weights(model, path):
    try:
        model.load_weights(path)
    except (OSError, ValueError, KeyError) as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise presets.PresetError(
            f"Cannot read the weights in {path}: the file is truncated, corrupt or does "
            f"not match the model's config ({first_line})."
        ) from None
