"""Shared test helpers."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
# The recurrent layers' inference loop in one layout on every machine, instead of the one
# measured faster here (zoo.layers.kernel_choice, tested on its own): the same numbers in
# every run, and no measuring in every test process.
os.environ.setdefault("ZOO_RNN_LAYOUT", "feature_major")
# A test that measures the layouts keeps them in a file of this run's, never in the user's
# cache (a measurement taken while the suite loads the machine is not one to keep), and
# subprocesses inherit it. Set whatever the environment says, removed at the end.
_LAYOUT_CACHE_FOLDER = tempfile.mkdtemp(prefix="zoo-tests-")
atexit.register(shutil.rmtree, _LAYOUT_CACHE_FOLDER, ignore_errors=True)
os.environ["ZOO_RNN_LAYOUT_CACHE"] = os.path.join(_LAYOUT_CACHE_FOLDER, "rnn_layouts.json")

import zoo  # noqa: E402,F401  (first: its start-up filter quiets TensorFlow's import notices)
import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)


@pytest.fixture(autouse=True)
def _torch_without_gradients():
    """On PyTorch, outputs compared with numpy must not require gradients: tests run
    without autograd, as inference does (``testcase.outputs_and_gradients`` turns it
    on where a test differentiates)."""
    if keras.backend.backend() != "torch":
        yield
        return
    import torch

    with torch.no_grad():
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# -- a toy translation corpus and models that learn it by heart ------------------------

SOURCES = ["我读了一本书。", "你好。", "他很高兴。", "我很高兴。", "他读了一本书。", "你读书。"]
TARGETS = ["I read a book.", "Hello.", "He is happy.", "I am happy.", "He read a book.",
           "You read."]


def _model_classes():
    from zoo.models import AttentionSeq2Seq, BottleneckSeq2Seq

    return {"attention": AttentionSeq2Seq, "bottleneck": BottleneckSeq2Seq}


MODELS = _model_classes()


def tiny_translator(model_class, units=16):
    from zoo.text import TranslationPreprocessor, Vocabulary, tokenize

    # Whole words: six sentences are learned by heart in a few seconds with a vocabulary
    # of their 16 words, not with WordPiece's alphabet beside them (tests/text covers
    # subword models).
    preprocessor = TranslationPreprocessor(
        "zh", "en", Vocabulary.build([tokenize(t, "zh") for t in SOURCES], min_count=1),
        Vocabulary.build([tokenize(t, "en") for t in TARGETS], min_count=1), subwords=False)
    model = model_class("zh", "en", len(preprocessor.source_vocabulary),
                        len(preprocessor.target_vocabulary), embedding_dim=12, units=units,
                        dropout=0.0, max_output_length=12)
    model.build()
    model.set_preprocessor(preprocessor)
    return model


# -- a toy sentiment corpus and a classifier of its words --------------------------------

REVIEWS = [("a wonderful , moving film", 1), ("charming and funny", 1),
           ("the best film of the year", 1), ("i loved it", 1),
           ("a dull , tedious mess", 0), ("boring and far too long", 0),
           ("the worst film of the year", 0), ("i hated it", 0)]


def tiny_classifier():
    from zoo.models import TextClassifier
    from zoo.text.preprocessor import ClassifierPreprocessor

    preprocessor = ClassifierPreprocessor.train([t for t, _ in REVIEWS])
    model = TextClassifier(len(preprocessor.vocabulary), embedding_dim=8, units=8, dropout=0.0)
    model.build()
    model.set_preprocessor(preprocessor)
    return model


# -- a verse and a character language model of its characters ---------------------------

VERSE = "ROMEO:\nBut soft, what light through yonder window breaks?\n\n" * 3
CHARACTERS = sorted(set(VERSE))


def tiny_language_model(cell, units=16, num_layers=1):
    from zoo.models import CharLanguageModel
    from zoo.text.preprocessor import CharacterPreprocessor

    model = CharLanguageModel(len(CHARACTERS), cell=cell, embedding_dim=8, units=units,
                              num_layers=num_layers)
    model.build()
    model.set_preprocessor(CharacterPreprocessor(CHARACTERS))
    return model


@pytest.fixture(scope="session")
def toy_translators():
    """Both tiny models, fitted until they reproduce the toy corpus."""
    from zoo import training

    models = {}
    for name, model_class in MODELS.items():
        keras.utils.set_random_seed(0)
        model = tiny_translator(model_class, units=32)
        training.compile_for_training(model, learning_rate=0.05)
        source_ids = model.preprocessor.tokenize_sources(SOURCES)
        decoder_in, decoder_out = model.preprocessor.tokenize_targets(TARGETS)
        # The 150 full-batch steps of 150 epochs as one epoch of 150 copies, unshuffled:
        # the same steps without Keras' per-epoch overhead (23 s instead of 68 s here).
        steps = len(SOURCES) * 150
        copies = [np.resize(array, (steps, *array.shape[1:]))
                  for array in (source_ids, decoder_in, decoder_out)]
        model.fit(tuple(copies[:2]), copies[2], batch_size=len(SOURCES), epochs=1,
                  shuffle=False, verbose=0)
        models[name] = model
    return models


@pytest.fixture(scope="session")
def toy_preset(toy_translators, tmp_path_factory):
    """The toy attention model saved as a preset directory."""
    from zoo import presets

    directory = tmp_path_factory.mktemp("presets") / "toy_zh_en"
    return presets.save(toy_translators["attention"], directory, metadata={"task": "translation"})


@pytest.fixture(scope="session")
def exported_runtimes(tmp_path_factory):
    """``exported_runtimes(model) -> (SavedModel, LiteRT runner)``: ``model`` exported in both formats
    once per test process (the exports are the slow part of every runtime test), the SavedModel
    loaded with TensorFlow and the .tflite file opened with the runner of the model's kind
    (``zoo.export.RUNNERS``)."""
    import tensorflow as tf

    from zoo import export

    made = {}  # id(model) -> (model, SavedModel, runner); the model kept, so its id is not reused

    def exported(model):
        if id(model) not in made:
            folder = tmp_path_factory.mktemp(f"exports_{model.kind}")
            saved = tf.saved_model.load(str(export.export(model, "saved_model", folder,
                                                          name=model.kind)))
            runner = getattr(export, export.RUNNERS[model.kind])(
                export.export(model, "tflite", folder, name=model.kind))
            made[id(model)] = model, saved, runner
        return made[id(model)][1:]

    return exported


def tflite_operators(path):
    """``(builtin name, custom code)`` of every operator a .tflite file uses."""
    from pathlib import Path

    from tensorflow.lite.python import schema_py_generated as tflite_schema

    buffer = Path(path).read_bytes()
    flat = tflite_schema.ModelT.InitFromObj(tflite_schema.Model.GetRootAsModel(buffer, 0))
    names = {v: k for k, v in vars(tflite_schema.BuiltinOperator).items() if k.isupper()}
    used = {op.opcodeIndex for graph in flat.subgraphs for op in graph.operators}
    return [
        (names[flat.operatorCodes[i].builtinCode], flat.operatorCodes[i].customCode)
        for i in used
    ]


def builtin_only(operators):
    return not [op for op in operators if op[0] == "CUSTOM" or op[1] is not None]
