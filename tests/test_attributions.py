"""The experiment "attention against attributions" (zoo/experiments/attributions.py):
its deletion and gradient x input attributions, its attention replacements, its numbers."""

import json

import keras
import numpy as np
import pytest
from keras import ops

from zoo import backend, experiments
from zoo.experiments import attributions
from zoo.models import AttentionSeq2Seq
from zoo.text import TranslationPreprocessor, Vocabulary, wordpiece
from zoo.text.vocabulary import PAD_ID

pytestmark = pytest.mark.skipif(not backend.is_tensorflow(),
                                reason="the gradients are taken with tf.GradientTape")

# Whole words and words cut into pieces: "unbelievable" is un ##believ ##able.
TEXTS = ["I read unbelievable books.", "He read a book.", "I read.", "Books!"]
SOURCE_PIECES = ["I", "He", "read", "a", "book", "Book", "##s", ".", "!", "un", "##believ",
                 "##able"]
TARGET_PIECES = ["Je", "Il", "lis", "un", "des", "livre", "##s", "in", "##croy", "##able", ".",
                 "!"]


@pytest.fixture(scope="module")
def model():
    """A tiny random model over subword vocabularies, its source embeddings (x 20) and
    attention scores (x 10) scaled up so that it looks at some source pieces much more
    than at others (random weights spread it almost evenly)."""
    keras.utils.set_random_seed(3)
    preprocessor = TranslationPreprocessor("en", "fr", Vocabulary(SOURCE_PIECES),
                                           Vocabulary(TARGET_PIECES))
    translator = AttentionSeq2Seq("en", "fr", len(SOURCE_PIECES) + 4, len(TARGET_PIECES) + 4,
                                  embedding_dim=12, units=16, dropout=0.0, max_output_length=8)
    translator.build()
    translator.set_preprocessor(preprocessor)
    for weights, factor in ((translator.source_embedding.embeddings, 20),
                            (translator.attention.score_vector, 10)):
        weights.assign(factor * ops.convert_to_numpy(weights))
    return translator


@pytest.fixture(scope="module")
def batch(model):
    return attributions.Batch(model, TEXTS)


def identity(weights, memory, step):
    return weights


def log_prob_of_targets(model, source_ids, target_inputs, targets, encoded=None):
    encoded = model.encode(source_ids) if encoded is None else encoded
    return attributions.log_probs_of(
        ops.log_softmax(model.decode_teacher_forced(target_inputs, encoded), axis=-1), targets)


def test_the_source_words_pieces_are_the_ones_alignment_groups(model):
    preprocessor = model.preprocessor
    assert preprocessor.source_pieces(TEXTS[0]) == ["I", "read", "un", "##believ", "##able",
                                                     "book", "##s", "."]
    assert attributions.source_word_pieces(preprocessor, TEXTS[0]) == [[0], [1], [2, 3, 4],
                                                                       [5, 6], [7]]
    columns = attributions.first_piece_columns(preprocessor, TEXTS[0])
    # A value per word put on its first piece comes back whole at word level.
    per_word = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    words = preprocessor.alignment(TEXTS[0], [5], per_word @ columns).weights  # one produced piece
    np.testing.assert_allclose(words, per_word)


def test_step_function_without_replacement_is_the_models_decoder(model, batch):
    """The teacher-forced pass step by step is the model's own ``decode_teacher_forced``,
    and recomputing the step with the weights left as they are changes nothing."""
    expected = log_prob_of_targets(model, batch.source_ids, batch.target_inputs, batch.targets)
    np.testing.assert_allclose(attributions.log_probs_of(batch.log_probs, batch.targets),
                               expected, atol=1e-5)
    same, weights = attributions.teacher_forced(model, batch.source_ids, batch.target_inputs,
                                                attributions.Replacement(identity))
    np.testing.assert_allclose(same, batch.log_probs, atol=1e-5)
    np.testing.assert_allclose(weights, batch.attention, atol=1e-6)
    # Greedy through the recomputed step gives what translate gives.
    assert batch.greedy_texts(attributions.Replacement(identity)) == model.translate(
        TEXTS, check_outputs=False) == batch.outputs
    # The attention is a distribution over the real source pieces, and not a flat one.
    real = batch.source_ids != PAD_ID
    np.testing.assert_allclose(batch.attention.sum(axis=-1)[batch.target_inputs != PAD_ID], 1,
                               atol=1e-5)
    assert np.all(batch.attention[~np.broadcast_to(real[:, None], batch.attention.shape)] == 0)
    assert batch.attention[0, 0].max() > 2 / real[0].sum()


def test_deletion_drop_is_a_direct_recomputation(model, batch):
    drops = batch.deletion_drops()
    original = attributions.log_probs_of(batch.log_probs, batch.targets)
    preprocessor = model.preprocessor
    for b in (0, 2):
        pieces = preprocessor.source_pieces(TEXTS[b])
        words = attributions.source_word_pieces(preprocessor, TEXTS[b])
        assert drops[b].shape == (batch.targets.shape[1], len(words))
        for w, deleted in enumerate(words):
            kept = [p for i, p in enumerate(pieces) if i not in deleted]
            source = np.array([preprocessor.source_vocabulary.ids_of(kept)], np.int32)
            direct = log_prob_of_targets(model, source, batch.target_inputs[b:b + 1],
                                         batch.targets[b:b + 1])[0]
            np.testing.assert_allclose(drops[b][:, w], original[b] - direct, atol=1e-5)
    # Some deletion matters, and not all equally.
    assert np.ptp(drops[0][0]) > 1e-3


@pytest.mark.slow
def test_gradient_x_input_matches_finite_differences(model, batch):
    """``d log p / d e_s . e_s`` is the derivative of log p as the embedding of piece s is
    scaled by (1 + h), at h = 0: a central difference gives it."""
    gradients = batch.gradient_x_input()
    assert gradients.shape == batch.targets.shape + (batch.source_ids.shape[1],)
    embedded = ops.convert_to_numpy(model.source_embedding(batch.source_ids))
    step = 1e-2

    def log_p(b, s, scale):
        scaled = embedded[b:b + 1].copy()
        scaled[0, s] *= scale
        encoded = model.encode_embedded(ops.convert_to_tensor(scaled),
                                        batch.source_ids[b:b + 1] != PAD_ID)
        return log_prob_of_targets(model, batch.source_ids[b:b + 1], batch.target_inputs[b:b + 1],
                                   batch.targets[b:b + 1], encoded)[0]

    for b, s in ((0, 0), (0, 3), (1, 2)):
        central = (log_p(b, s, 1 + step) - log_p(b, s, 1 - step)) / (2 * step)
        np.testing.assert_allclose(gradients[b, :, s], central, rtol=2e-2, atol=2e-3)
    # Pads get no gradient.
    assert np.all(gradients[2][:, batch.source_ids[2] == PAD_ID] == 0)


@pytest.mark.slow
def test_word_level_measures_are_brought_to_words_as_attention_is(model, batch):
    found = batch.word_level()
    assert set(found) == set(attributions.MEASURES)
    for b, text in enumerate(TEXTS):
        alignment = model.preprocessor.alignment(text, batch.targets[b], batch.attention[b])
        np.testing.assert_allclose(found["attention"][b], alignment.weights)
        for matrix in found.values():
            assert matrix[b].shape == (len(alignment.produced), len(alignment.source))
        assert np.all(found["gradient"][b] >= 0)  # the absolute value
    # Deletion at word level: a produced word's pieces' drops averaged.
    drops = batch.deletion_drops()[0]
    produced = model.preprocessor.output_pieces(batch.targets[0])
    first_word = [i for i, word in enumerate(wordpiece.word_indices(produced)) if word == 0]
    np.testing.assert_allclose(found["deletion"][0][0], drops[first_word].mean(axis=0), atol=1e-6)


def test_uniform_replacement_is_uniform_over_the_real_positions(model, batch):
    _, weights = attributions.teacher_forced(model, batch.source_ids, batch.target_inputs,
                                             attributions.uniform)
    lengths = (batch.source_ids != PAD_ID).sum(axis=1)
    for b, length in enumerate(lengths):
        np.testing.assert_allclose(weights[b, :, :length], 1 / length, atol=1e-7)
        assert np.all(weights[b, :, length:] == 0)


def test_permuted_replacement_permutes_the_models_weights_over_the_real_positions(model, batch):
    replace = attributions.permuted(batch.source_ids, model, np.random.default_rng(0))
    orders = ops.convert_to_numpy(replace.memory["orders"])
    assert orders.shape == (len(TEXTS), model.max_output_length + 1, batch.source_ids.shape[1])
    np.testing.assert_array_equal(orders, attributions.permutation_orders(  # seeded
        batch.source_ids, model.max_output_length + 1, np.random.default_rng(0)))
    lengths = (batch.source_ids != PAD_ID).sum(axis=1)
    width = batch.source_ids.shape[1]
    for b, length in enumerate(lengths):
        for order in orders[b]:
            assert sorted(order[:length]) == list(range(length))
            np.testing.assert_array_equal(order[length:], np.arange(length, width))  # pads stay
    assert not np.array_equal(orders[0, 0], orders[0, 1])  # a new order at every step
    weights = batch.attention[:, 2]  # the model's weights at step 2
    shuffled = ops.convert_to_numpy(replace(ops.convert_to_tensor(weights), replace.memory,
                                            ops.full((len(TEXTS),), 2, "int32")))
    np.testing.assert_allclose(shuffled, np.take_along_axis(weights, orders[:, 2], axis=-1))
    for b, length in enumerate(lengths):
        np.testing.assert_allclose(np.sort(shuffled[b, :length]), np.sort(weights[b, :length]))
        assert np.all(shuffled[b, length:] == 0)


def test_total_variation(model, batch):
    assert attributions.total_variation([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0)
    assert attributions.total_variation([0.5, 0.5], [0.75, 0.25]) == pytest.approx(0.25)
    unchanged = batch.total_variation(attributions.Replacement(identity))
    assert [len(d) for d in unchanged] == [len(row) + 1 for row in batch.produced]
    assert max(max(d) for d in unchanged) < 1e-5
    uniform = batch.total_variation(attributions.uniform)
    assert max(max(d) for d in uniform) > 1e-3 and all(0 <= x <= 1 for d in uniform for x in d)


def test_agreement_counts_produced_words_of_sources_with_two_words_or_more():
    rows = {
        # Sentence 1: 2 produced words over 3 source words; sentence 2: one source word.
        "attention": [np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]), np.array([[1.0]])],
        "deletion": [np.array([[2.0, 0.0, 1.0], [0.5, 0.1, 0.2]]), np.array([[3.0]])],
        "gradient": [np.array([[0.1, 0.9, 0.0], [0.0, 0.1, 0.9]]), np.array([[1.0]])],
    }
    assert attributions.agreement(rows) == {
        "produced_words": 2, "attention_deletion": 50.0, "attention_gradient": 50.0,
        "deletion_gradient": 0.0, "chance": 33.3}


@pytest.mark.slow
def test_measure_on_a_tiny_model(model):
    measured = attributions.measure(model, TEXTS, ["Je lis des livres incroyables.",
                                                   "Il lit un livre.", "Je lis.", "Des livres !"],
                                    printer=lambda *_: None)
    assert measured["sentences"] == 4
    agreement = measured["agreement"]
    assert agreement["produced_words"] > 0
    assert all(0 <= agreement[key] <= 100 for key in agreement if key != "produced_words")
    assert set(measured["on_punctuation"]) == set(attributions.MEASURES)
    for kind in attributions.REPLACEMENTS:
        replaced = measured["replacement"][kind]
        assert replaced["steps"] == len(replaced["per_step"]) > 0
        assert 0 < replaced["mean_total_variation"] <= 1 and 0 <= replaced["bleu"] <= 100


@pytest.mark.slow
def test_quick_experiment_on_the_presets(tmp_path):
    results = experiments.run("attributions", tmp_path, quick=True, printer=lambda *_: None)
    saved = json.loads((tmp_path / "attributions.json").read_text())
    assert saved["quick"] and saved["experiment"] == "attributions"
    assert set(saved["presets"]) == set(attributions.PRESETS)
    for measured in saved["presets"].values():
        assert measured["sentences"] == attributions.QUICK_SENTENCES
        agreement = measured["agreement"]
        assert 0 < agreement["chance"] <= 50 and agreement["produced_words"] > 0
        assert all(0 <= agreement[f"{a}_{b}"] <= 100 for a, b in attributions.PAIRS)
        for kind in attributions.REPLACEMENTS:
            replaced = measured["replacement"][kind]
            assert "per_step" not in replaced  # figure only
            assert 0 <= replaced["mean_total_variation"] <= 1 and 0 <= replaced["bleu"] <= 100
    assert all((tmp_path / figure).stat().st_size > 10_000 for figure in results["figures"])
