"""Fine-tuning a shipped preset on a user's own pairs, as the README shows."""

import keras
import numpy as np
import pytest

import zoo
from tests.conftest import MODELS, SOURCES, TARGETS, tiny_translator
from zoo import training
from zoo.text import tokenize
from zoo.training.translation import make_dataset

# A user's pairs: everyday sentences about a topic the corpus rarely covers.
USER_PAIRS = [
    ("The robot reads a book.", "机器人读一本书。"),
    ("The robot is happy.", "机器人很高兴。"),
    ("The robot eats an apple.", "机器人吃一个苹果。"),
    ("The robot goes to school.", "机器人去学校。"),
    ("The robot likes music.", "机器人喜欢音乐。"),
    ("The robot is my friend.", "机器人是我的朋友。"),
    ("The robot drinks water.", "机器人喝水。"),
    ("The robot can swim.", "机器人会游泳。"),
]
USER_VALIDATION = [
    ("The robot is tired.", "机器人很累。"),
    ("The robot likes apples.", "机器人喜欢苹果。"),
]


def _write_tsv(path, pairs):
    path.write_text("".join(f"{en}\t{zh}\tmine\n" for en, zh in pairs), encoding="utf-8")
    return path


@pytest.mark.slow
def test_fine_tune_a_preset_on_a_users_tsv(tmp_path):
    train_file = _write_tsv(tmp_path / "mine.tsv", USER_PAIRS)
    validation_file = _write_tsv(tmp_path / "mine_val.tsv", USER_VALIDATION)
    model = zoo.load("gru_bahdanau_cmn_en")
    vocabulary_before = list(model.preprocessor.target_vocabulary.tokens)
    train = training.tsv_dataset(model, train_file, batch_size=4)
    validation = training.tsv_dataset(model, validation_file, shuffle=False)
    training.compile_for_training(model, learning_rate=1e-3)
    loss_before = model.evaluate(validation, verbose=0)
    history = model.fit(train, validation_data=validation, epochs=4, verbose=0)
    # Relative, not absolute: the H200-trained preset already knows most of these words
    # (validation loss 0.27 before, 0.05 after four epochs in December 2026's CI).
    assert history.history["val_loss"][-1] < 0.5 * loss_before
    assert model.preprocessor.target_vocabulary.tokens == vocabulary_before  # vocabulary kept
    # "robot" is in the English vocabulary; 机器人 characters may map to [UNK].
    directory = zoo.presets.save(model, tmp_path / "cmn_en_mine", metadata={"task": "translation"})
    reloaded = zoo.load(directory)
    sentences = [zh for _, zh in USER_VALIDATION] + ["我读了一本书。"]
    assert reloaded.translate(sentences) == model.translate(sentences)
    assert reloaded.translate(sentences, beam_size=5) == model.translate(sentences, beam_size=5)
    assert np.isfinite(history.history["loss"]).all()
    assert "robot" in model.translate([USER_VALIDATION[0][1]])[0].lower()


def test_a_word_the_preset_never_saw_is_spelled_in_pieces():
    preprocessor = zoo.load("gru_bahdanau_cmn_en").preprocessor
    english = "The cyborg photosynthesizes quixotically."
    assert not {"cyborg", "photosynthesizes", "quixotically"} & set(
        preprocessor.target_vocabulary.tokens)
    pieces = preprocessor.target_pieces(english)
    assert "[UNK]" not in pieces and len(pieces) > len(tokenize(english, "en"))
    _, decoder_out = preprocessor.tokenize_targets([english])
    assert preprocessor.detokenize_target(decoder_out[0]) == english


def test_user_tsv_is_read_in_the_models_direction(tmp_path):
    model = zoo.load("gru_bahdanau_cmn_en")
    data = training.tsv_dataset(model, _write_tsv(tmp_path / "x.tsv", USER_PAIRS[:1]),
                                shuffle=False)
    (source, decoder_in), decoder_out = next(iter(data))
    english, chinese = USER_PAIRS[0]

    preprocessor = model.preprocessor
    assert [preprocessor.source_vocabulary.tokens[i] for i in source.numpy()[0]] == (
        preprocessor.source_pieces(chinese))
    assert preprocessor.output_pieces(decoder_out.numpy()[0]) == preprocessor.target_pieces(english)
    assert preprocessor.output_words(decoder_out.numpy()[0]) == tokenize(english, "en")
    assert decoder_in.numpy()[0][0] == 2  # [START]


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="tf.function's tracing (JAX compiles once per shape anyway)")
def test_the_readme_fine_tune_traces_its_step_once():
    """``compile_for_training`` makes Adam's state before ``fit``: made inside the first
    step, its variables had TensorFlow trace the step twice (2 s of the fine-tune's
    first step). Two epochs of batches of several widths: one trace."""
    model = tiny_translator(MODELS["attention"])
    traces = []
    step = model.train_step

    def counted(data):  # Python runs a tf.function's body only when tracing it
        traces.append(len(traces) + 1)
        return step(data)

    model.train_step = counted
    training.compile_for_training(model, learning_rate=1e-3)
    data = make_dataset(model, SOURCES * 4, TARGETS * 4, batch_size=4, shuffle=True).dataset()
    assert len({tuple(target.shape) for _, target in data}) > 1
    model.fit(data, epochs=2, verbose=0, shuffle=False)  # the dataset is shuffled: no warning
    assert len(traces) == 1
