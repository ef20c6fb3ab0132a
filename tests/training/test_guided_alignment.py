"""Guided alignment training (zoo.training.alignment) and fine-tuning from a preset
(a recipe's ``initial_preset``)."""

import json

import keras
import numpy as np
import pytest

from tests.conftest import MODELS, SOURCES, TARGETS, tiny_translator
import zoo
from zoo import presets
from zoo.text import TranslationPreprocessor, Vocabulary
from zoo.training import alignment, recipes
from zoo.training.translation import TranslationTask, compile_for_training, make_dataset

from testcase import gradients_on

RECIPE = {"name": "tiny_guided", "model": "AttentionSeq2Seq", "corpus": "fra",
          "source_language": "en", "target_language": "fr"}


def test_the_loss_is_the_cross_entropy_of_the_normalised_links():
    links = np.array([[[1, 0, 0], [0, 1, 1]]])  # piece 0 -> source 0; piece 1 -> 1 and 2
    attention = np.array([[[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]]])
    by_hand = (-np.log(0.7) - (0.5 * np.log(0.6) + 0.5 * np.log(0.3))) / 2
    loss = keras.ops.convert_to_numpy(alignment.alignment_loss(links, attention))
    assert loss == pytest.approx(by_hand, rel=1e-6)


def test_rows_without_links_add_nothing():
    links = np.array([[[0, 1, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 0]]])
    attention = np.full((2, 2, 3), 1 / 3)
    attention[0, 0] = [0.1, 0.8, 0.1]
    loss = keras.ops.convert_to_numpy(alignment.alignment_loss(links, attention))
    assert loss == pytest.approx(-np.log(0.8), rel=1e-6)  # one linked row of four
    attention[0, 1] = attention[1, 0] = [0.0, 0.0, 1.0]  # an unlinked row may look anywhere
    assert keras.ops.convert_to_numpy(alignment.alignment_loss(links, attention)) == loss
    nothing = keras.ops.convert_to_numpy(alignment.alignment_loss(np.zeros_like(links), attention))
    assert nothing == 0.0


def _piece_preprocessor(max_source_length=64):
    source = Vocabulary(["[PAD]", "[UNK]", "[START]", "[END]", "the", "cat", "dog", "s", "##s",
                         "."])
    target = Vocabulary(["[PAD]", "[UNK]", "[START]", "[END]", "le", "chat", "##s", "chien",
                         "."])
    return TranslationPreprocessor("en", "fr", source, target, max_source_length)


def test_word_links_reach_every_piece_of_both_words():
    preprocessor = _piece_preprocessor()
    source, target = "the cats.", "les chats."
    assert preprocessor.source_pieces(source) == ["the", "cat", "##s", "."]
    assert preprocessor.target_pieces(target) == ["le", "##s", "chat", "##s", "."]
    (source_words,), (target_words,) = alignment.pair_words(preprocessor, [source], [target])
    assert (source_words, target_words) == (["the", "cats", "."], ["les", "chats", "."])
    assert preprocessor.piece_starts(source_words, preprocessor.source_vocabulary) == [0, 1, 3, 4]
    assert preprocessor.piece_starts(target_words, preprocessor.target_vocabulary) == [0, 2, 4, 5]
    links = {(0, 0), (1, 1), (2, 2)}  # the-les, cats-chats, .-.
    assert alignment.piece_links(links, source_words, target_words, preprocessor) == {
        (0, 0), (1, 0),  # le ##s -> the
        (2, 1), (2, 2), (3, 1), (3, 2),  # chat ##s -> cat ##s
        (4, 3)}
    cut = _piece_preprocessor(max_source_length=2)  # the encoder reads "the cat" only
    assert alignment.piece_links(links, source_words, target_words, cut) == {
        (0, 0), (1, 0), (2, 1), (3, 1)}


def test_grow_diag_final_and():
    forward, reverse = {(0, 0), (1, 1), (2, 1)}, {(0, 0), (1, 1), (1, 2), (3, 3)}
    # The agreed (0,0), (1,1); (2,1) and (1,2) are their neighbours and join an unaligned
    # word; (3,3) joins two unaligned words.
    assert alignment.grow_diag_final_and(forward, reverse) == {(0, 0), (1, 1), (2, 1), (1, 2),
                                                               (3, 3)}
    # Grow-diag adds a neighbour only for a word still unaligned: (1, 0) links two
    # words both already aligned, and no final step takes it either.
    assert alignment.grow_diag_final_and({(0, 0), (1, 1)}, {(0, 0), (1, 1), (1, 0)}) == {
        (0, 0), (1, 1)}


def test_batches_carry_the_links_of_each_target_piece():
    model = tiny_translator(MODELS["attention"])
    links = [{(0, 1), (1, 0)}, {(0, 0)}]  # (target piece, source piece)
    data = make_dataset(model, SOURCES[:2], TARGETS[:2], batch_size=2, shuffle=False,
                        links=links)
    (source_ids, decoder_in, linked), decoder_out = next(data.batches_of_pass(0))
    assert linked.shape == decoder_out.shape + (source_ids.shape[1],)
    rows = {len(model.preprocessor.target_rows([t])[0]): i for i, t in enumerate(TARGETS[:2])}
    for row in range(2):  # the batch is sorted by length: find each pair's row
        pair = rows[int((decoder_out[row] != 0).sum()) - 1]
        assert {tuple(p) for p in np.argwhere(linked[row])} == links[pair]
    assert linked[:, -1].sum() == 0  # the [END] row (of the longer target) has no link


def _attention_on_links(model, source_ids, decoder_in, linked):
    state = model.encode(source_ids)
    _, attention = model.decode_teacher_forced(decoder_in, state, return_attention=True)
    attention = keras.ops.convert_to_numpy(attention)
    rows = linked.sum(-1) > 0
    return float((attention * linked).sum(-1)[rows].mean())


@pytest.mark.slow
def test_training_with_the_loss_moves_attention_towards_the_links():
    keras.utils.set_random_seed(0)
    model = tiny_translator(MODELS["attention"])
    source_ids = model.preprocessor.tokenize_sources(SOURCES)
    decoder_in, decoder_out = model.preprocessor.tokenize_targets(TARGETS)
    # Every produced piece linked to the first source piece: far from where an untrained
    # attention looks (about uniformly).
    linked = np.zeros(decoder_out.shape + (source_ids.shape[1],), np.int32)
    linked[:, :, 0] = decoder_out != 0
    linked[decoder_out == 3] = 0  # the [END] rows: no link
    before = _attention_on_links(model, source_ids, decoder_in, linked)
    view = alignment.GuidedAlignmentTraining(model, weight=1.0)
    compile_for_training(view, learning_rate=0.05)
    with gradients_on():
        history = view.fit((source_ids, decoder_in, linked), decoder_out, epochs=8, verbose=0)
    after = _attention_on_links(model, source_ids, decoder_in, linked)
    assert before < 0.3 and after > 0.8, (before, after)
    assert np.isfinite(history.history["loss"]).all()
    # The view's weights are the translator's: nothing else was created or trained.
    assert {id(v) for v in view.trainable_variables} == {id(v) for v in model.trainable_variables}


def test_a_model_without_attention_cannot_be_guided():
    with pytest.raises(ValueError, match="needs a model with attention; BottleneckSeq2Seq"):
        alignment.GuidedAlignmentTraining(tiny_translator(MODELS["bottleneck"]), weight=1.0)


@pytest.mark.parametrize("value, message", [
    ({"weight": 0}, "needs a positive number as \"weight\"; received 0"),
    ({"weight": -1.0}, "positive number"),
    ({"weight": "1"}, "positive number"),
    ({"weight": True}, "positive number"),
    ({}, "exactly the key \"weight\""),
    ({"weight": 1, "type": "ce"}, "exactly the key \"weight\""),
    ([1.0], "'guided_alignment' must be an object or null"),
])
def test_the_recipe_field_is_checked(value, message):
    with pytest.raises(recipes.RecipeError, match=message):
        recipes.from_dict({**RECIPE, "guided_alignment": value})


def test_the_recipe_field_reads():
    recipe = recipes.from_dict({**RECIPE, "guided_alignment": {"weight": 1},
                                "initial_preset": "gru_bahdanau_en_fr"})
    assert recipe.guided_alignment == {"weight": 1}
    assert recipe.initial_preset == "gru_bahdanau_en_fr"
    assert recipes.from_dict(RECIPE).guided_alignment is None


def test_a_fine_tune_starts_from_its_presets_vocabulary_and_weights(tmp_path):
    preset = tiny_translator(MODELS["attention"])
    directory = presets.save(preset, tmp_path / "toy", metadata={"task": "translation"})
    recipe = recipes.from_dict({
        **RECIPE, "source_language": "zh", "target_language": "en",
        "model_config": {"embedding_dim": 12, "units": 16, "max_output_length": 12},
        "initial_preset": str(directory)})
    task = TranslationTask(recipe, printer=lambda line: None)
    preprocessor = task.build_preprocessor(splits=None)  # nothing learned from the data
    assert preprocessor.target_vocabulary.tokens == preset.preprocessor.target_vocabulary.tokens
    model = task.build_model(preprocessor)
    for mine, theirs in zip(model.get_weights(), preset.get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    record = task.initial_preset_record()["initial_preset"]
    assert record == {"name": str(directory),
                      "weights_sha256": presets.describe(directory)["files"]["model.weights.h5"]}

    wider = recipe.replace(model_config={"embedding_dim": 12, "units": 24})
    with pytest.raises(recipes.RecipeError, match="weights of other shapes"):
        TranslationTask(wider, printer=lambda line: None).build_model(preprocessor)
    other_way = recipe.replace(source_language="en", target_language="zh")
    with pytest.raises(recipes.RecipeError, match="is AttentionSeq2Seq, zh -> en; the recipe "
                                                  "trains AttentionSeq2Seq, en -> zh"):
        TranslationTask(other_way, printer=lambda line: None).build_preprocessor(None)


@pytest.mark.slow  # with the slow tests: CI installs the extra align (eflomal) for them
def test_eflomal_links_words_of_a_small_corpus():
    pytest.importorskip("eflomal")
    # Word-by-word pairs, repeated so that the aligner learns them; words shuffled
    # between sentences so that position alone does not tell.
    rng = np.random.default_rng(0)
    lexicon = {"cat": "chat", "dog": "chien", "eats": "mange", "sees": "voit", "big": "gros",
               "small": "petit", "the": "le", ".": "."}
    sources, targets = [], []
    for _ in range(300):
        words = list(rng.choice(list(lexicon)[:-1], size=4, replace=False)) + ["."]
        order = list(rng.permutation(4)) + [4]
        sources.append(words)
        targets.append([lexicon[words[i]] for i in order])
    links = alignment.word_links(sources, targets, printer=lambda line: None)
    right = sum((i, j) in pair_links for pair_links, order_source, target in
                zip(links, sources, targets) for i, word in enumerate(order_source)
                for j, translated in enumerate(target) if lexicon[word] == translated)
    found = sum(map(len, links))
    assert right / (5 * len(sources)) > 0.9 and right / found > 0.9, (right, found)
    assert alignment.word_links([["a"], []], [[], ["b"]], printer=lambda line: None) == [
        set(), set()]


@pytest.mark.slow
def test_zoo_train_fine_tunes_a_preset_with_guided_alignment(toy_preset, tmp_path):
    pytest.importorskip("eflomal")
    from zoo.cli import main

    recipe = tmp_path / "toy_guided.json"
    recipe.write_text(json.dumps({
        **{k: v for k, v in RECIPE.items() if k != "name"},
        "source_language": "zh", "target_language": "en", "batch_size": 4,
        "model_config": {"embedding_dim": 12, "units": 32, "dropout": 0.0,
                         "max_output_length": 12},
        "initial_preset": str(toy_preset), "guided_alignment": {"weight": 1.0}}))
    # Pairs of the toy sentences one after the other: distinct pairs (so that every split
    # gets some) in words the toy preset knows.
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{en} {en2}\t{zh}{zh2}\n" for zh, en in zip(SOURCES, TARGETS)
                             for zh2, en2 in zip(SOURCES, TARGETS)), encoding="utf-8")
    out = tmp_path / "guided"
    assert main(["train", str(recipe), "--data", str(pairs), "--out", str(out), "--epochs", "1",
                 "--log-dir", str(tmp_path / "logs"),
                 "--checkpoint-dir", str(tmp_path / "checkpoints")]) == 0
    metadata = presets.describe(out)
    assert metadata["training"]["initial_preset"]["name"] == str(toy_preset)
    assert metadata["training"]["recipe"]["guided_alignment"] == {"weight": 1.0}
    toy = zoo.load(toy_preset).preprocessor
    assert zoo.load(out).preprocessor.source_vocabulary.tokens == toy.source_vocabulary.tokens
    assert "attention_on_punctuation" in metadata["test"]["greedy"]
