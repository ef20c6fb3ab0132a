"""Translation batches in a few fixed shapes (a recipe's ``length_buckets``): widths padded
up to buckets, partial batches padded with empty rows that change nothing, the same
batches in a resumed run, and on JAX one compilation per shape."""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.conftest import MODELS, SOURCES, TARGETS, tiny_translator
from testcase import outputs_and_gradients
from zoo.training import alignment, loop, recipes
from zoo.training.batches import bucket_width
from zoo.training.translation import (TranslationTask, compile_for_training, make_dataset,
                                      rows_dataset)

TESTS = Path(__file__).resolve().parents[1]  # tests/, where the helper script lives
BUCKETS = [8, 16, 24]


def random_pairs(count, longest=20, seed=0):
    """``count`` pairs of id rows (ids from 4 up: 0-3 are [PAD], [UNK], [START], [END]),
    each side of 1 to ``longest`` ids, a target about as long as its source."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, longest + 1, count)
    sources = [rng.integers(4, 30, n).tolist() for n in lengths]
    targets = [rng.integers(4, 30, max(1, n + rng.integers(-2, 3))).tolist() for n in lengths]
    return sources, targets


def all_batches(data, pass_index=0):
    return list(data.batches_of_pass(pass_index))


def test_a_batch_is_as_wide_as_the_smallest_bucket_that_holds_its_longest_row():
    data = rows_dataset(*random_pairs(100), batch_size=8, shuffle=True,
                        length_buckets=BUCKETS)
    widths = []
    for (source, decoder_in), decoder_out in all_batches(data):
        # Every id is 4 or more: a row's ids are its nonzero ones ([START] included).
        longest = max((source != 0).sum(-1).max(), (decoder_in != 0).sum(-1).max())
        expected = min(width for width in BUCKETS if width >= longest)
        assert source.shape == decoder_in.shape == decoder_out.shape == (8, expected)
        widths.append(expected)
    assert set(widths) == set(BUCKETS)  # lengths 1-20 reach every bucket


def length_spans(data, pass_index):
    """Each batch's shortest and longest pair (a pair's length: max(source, [START] target)),
    in the pass's order."""
    return [(int(lengths.min()), int(lengths.max())) for lengths in
            (np.maximum((source != 0).sum(-1), (decoder_in != 0).sum(-1))
             for (source, decoder_in), _ in all_batches(data, pass_index))]


def do_not_interleave(spans):
    ordered = sorted(spans)
    return all(high <= next_low for (_, high), (next_low, _) in zip(ordered, ordered[1:]))


def test_the_batches_of_a_dataset_are_cut_from_all_its_pairs_sorted_by_length():
    """Every pass has the same batches, cut from the whole set sorted (75 batches, more
    than the 50 of the chunks it was once sorted in): their lengths do not interleave; a
    pass shuffles their order."""
    data = rows_dataset(*random_pairs(300, longest=60), batch_size=4, shuffle=True)
    first = length_spans(data, 0)
    assert len(first) == 75 and do_not_interleave(first)
    assert length_spans(data, 1) != first and sorted(length_spans(data, 1)) == sorted(first)


def test_a_pass_of_a_mix_is_sorted_by_length_whole_and_each_pass_batches_anew():
    """A mix draws each pass anew and sorts all of it (2 x 300 pairs and a quarter of 100,
    157 batches of 4): within a pass the batches' lengths do not interleave; the next pass
    draws other pairs, so its batches differ."""
    sources, targets = random_pairs(400, longest=60)
    data = rows_dataset(sources, targets, 4, shuffle=True, mix=[(300, 2), (100, 0.25)], seed=5)

    def batch_rows(pass_index):
        return [sorted(map(tuple, source.tolist())) for (source, _), _ in
                all_batches(data, pass_index)]

    assert len(data) == 157
    for pass_index in (0, 1):
        assert do_not_interleave(length_spans(data, pass_index))
    first, second = batch_rows(0), batch_rows(1)
    assert sorted(first) != sorted(second)  # not the same batches in another order


def test_bucket_width_past_the_widest_is_the_rows_own():
    assert [bucket_width(n, BUCKETS) for n in (1, 8, 9, 24, 25, 40)] == [8, 8, 16, 24, 25, 40]


def test_a_row_longer_than_the_widest_bucket_keeps_its_batch_at_its_natural_width():
    sources, targets = [[5] * 3, [6] * 40], [[7] * 2, [8] * 30]
    (batch,) = all_batches(rows_dataset(sources, targets, 4, shuffle=False,
                                        length_buckets=BUCKETS))
    (source, decoder_in), decoder_out = batch
    assert source.shape == decoder_in.shape == decoder_out.shape == (4, 40)
    assert (source[1] == 6).sum() == 40 and (decoder_out[1] == 8).sum() == 30


def test_pairs_are_batched_with_pairs_of_like_width():
    """The width a pair needs is its longer side's (the source, or the target with its
    [START]): a long source with a short target is batched with the long pairs."""
    sources, targets = [[5] * 10, [5], [5], [5] * 2], [[6], [6], [6] * 9, [6] * 2]
    data = rows_dataset(sources, targets, 2, shuffle=False)
    assert [(x[0].shape[1], y.shape[1]) for x, y in all_batches(data)] == [(2, 3), (10, 10)]


def test_every_pass_has_the_same_number_of_full_batches_and_one_partial_batch_padded():
    sources, targets = random_pairs(60)
    # A mix draws anew each pass: 40 pairs twice and a quarter of 20, 85 pairs a pass.
    data = rows_dataset(sources, targets, 8, shuffle=True, length_buckets=BUCKETS,
                        mix=[(40, 2), (20, 0.25)], seed=3)
    assert len(data) == 11
    for pass_index in range(3):
        batches = all_batches(data, pass_index)
        assert len(batches) == len(data)
        assert {y.shape[0] for _, y in batches} == {8}
        examples = [data.examples_in(y) for _, y in batches]
        assert sorted(examples) == [5] + [8] * 10
        (x, y), = [batch for batch, count in zip(batches, examples) if count == 5]
        for array in (*x, y):  # the empty rows come last and are all padding
            assert array[:5].any(-1).all() and not array[5:].any()


def test_a_resumed_run_sees_the_batches_an_uninterrupted_run_sees():
    """A resumed process builds its data again and starts at the pass it stopped in."""
    def build():
        return rows_dataset(*random_pairs(60), 8, shuffle=True, length_buckets=BUCKETS,
                            mix=[(40, 2), (20, 0.25)], seed=3)

    uninterrupted, resumed = build(), build().py_dataset(first_pass=2)
    expected = all_batches(uninterrupted, 2)
    assert len(resumed) == len(expected)
    for index, ((x, y), (x_resumed, y_resumed)) in enumerate(
            zip(expected, (resumed[i] for i in range(len(resumed))))):
        for array, again in zip((*x, y), (*x_resumed, y_resumed)):
            np.testing.assert_array_equal(again, array, err_msg=f"batch {index}")


def _padded(array, rows, width):
    """``array`` padded with zeros to ``rows`` and to ``width`` in every other dimension."""
    padded = np.zeros((rows,) + (width,) * (array.ndim - 1), array.dtype)
    padded[tuple(slice(0, n) for n in array.shape)] = array
    return padded


def _linked(decoder_out, source):
    """Each produced piece linked to the source piece under it: rows with a link, rows
    without (the [END] rows), and no link onto padding."""
    links = np.zeros(decoder_out.shape + source.shape[1:], np.int32)
    for row, position in zip(*np.nonzero(decoder_out > 3)):
        if source[row, min(position, source.shape[1] - 1)]:
            links[row, position, min(position, source.shape[1] - 1)] = 1
    return links


def test_empty_rows_and_wider_padding_change_neither_the_loss_nor_the_gradients():
    """The loss (label-smoothed, with guided alignment) averages over the tokens that are
    not padding; an empty row's attention looks at no position."""
    model = tiny_translator(MODELS["attention"])
    view = alignment.GuidedAlignmentTraining(model, weight=0.5)
    compile_for_training(view, label_smoothing=0.1)
    source = model.preprocessor.tokenize_sources(SOURCES)
    decoder_in, decoder_out = model.preprocessor.tokenize_targets(TARGETS)
    links = _linked(decoder_out, source)

    def loss_and_gradients(source, decoder_in, decoder_out, links):
        def loss():
            logits = view((source, decoder_in, links), training=True)
            value = view.compute_loss((source, decoder_in, links), decoder_out, logits)
            return value, value

        value, gradients = outputs_and_gradients(loss, [], view.trainable_variables)
        return float(value), gradients

    loss, gradients = loss_and_gradients(source, decoder_in, decoder_out, links)
    rows, width = len(SOURCES) + 5, 16
    padded_loss, padded_gradients = loss_and_gradients(
        _padded(source, rows, width), _padded(decoder_in, rows, width),
        _padded(decoder_out, rows, width), _padded(links, rows, width))
    assert links.sum() > 0 and loss > 0
    assert padded_loss == pytest.approx(loss, abs=1e-6)
    for gradient, padded in zip(gradients, padded_gradients, strict=True):
        np.testing.assert_allclose(padded, gradient, atol=1e-6)


def test_validation_is_the_same_with_buckets_and_without():
    """A validation batch weighs by its pairs: its empty rows count for nothing."""
    model = tiny_translator(MODELS["attention"])
    compile_for_training(model)
    sources, targets = SOURCES * 3, TARGETS * 3  # 18 pairs: batches of 8, 8 and 2
    evaluate = loop.evaluator(model, {})
    natural = evaluate(make_dataset(model, sources, targets, 8, shuffle=False))
    bucketed_data = make_dataset(model, sources, targets, 8, shuffle=False,
                                 length_buckets=BUCKETS)
    assert [y.shape for _, y in all_batches(bucketed_data)] == [(8, 8)] * 3
    assert evaluate(bucketed_data)["loss"] == pytest.approx(natural["loss"], abs=1e-6)


def test_links_are_padded_with_the_batch():
    sources, targets = [[5, 6, 7], [8] * 10, [9]], [[10, 11], [12] * 9, [13]]
    links = [{(0, 2), (1, 0)}, {(8, 9)}, {(0, 0)}]
    data = rows_dataset(sources, targets, 4, shuffle=False, length_buckets=BUCKETS, links=links)
    ((source, decoder_in, linked), decoder_out), = all_batches(data)
    assert linked.shape == (4, 16, 16)
    found = {}
    for row, target, source_piece in np.argwhere(linked):
        pair = sources.index(source[row][source[row] != 0].tolist())
        found.setdefault(pair, set()).add((int(target), int(source_piece)))
    assert found == dict(enumerate(links))
    assert not linked[3].any()  # the empty row


def test_seeded_training_on_bucketed_batches_is_deterministic():
    def train():
        keras.utils.set_random_seed(0)
        model = tiny_translator(MODELS["attention"])
        compile_for_training(model, learning_rate=0.01)
        data = make_dataset(model, SOURCES * 4, TARGETS * 4, 5, shuffle=True, seed=1,
                            length_buckets=BUCKETS)
        loop.fit(model, data, epochs=2)
        return model.get_weights()

    first, second = train(), train()
    for ours, again in zip(first, second, strict=True):
        np.testing.assert_allclose(again, ours, atol=1e-7)


# -- the recipe key -----------------------------------------------------------------------

RECIPE = {"name": "tiny", "model": "AttentionSeq2Seq", "corpus": "fra",
          "source_language": "en", "target_language": "fr"}


NOT_WIDTHS = ("'length_buckets' must be a list of increasing positive integers (the widths "
              "batches are padded to, such as [16, 24, 36, 56, 101]; [] for none); received "
              "{}.")


@pytest.mark.parametrize("value, expected", [
    ("16, 24", "'length_buckets' must be a list or null; received '16, 24' (str)."),
    ([24, 16], NOT_WIDTHS.format("[24, 16]")),  # not increasing
    ([16, 16], NOT_WIDTHS.format("[16, 16]")),
    ([0, 16], NOT_WIDTHS.format("[0, 16]")),  # not positive
    ([16, 24.5], NOT_WIDTHS.format("[16, 24.5]")),  # not an integer
    ([8, True], NOT_WIDTHS.format("[8, true]")),
])
def test_a_bad_length_buckets_is_named(value, expected):
    with pytest.raises(recipes.RecipeError) as error:
        recipes.from_dict(dict(RECIPE, length_buckets=value))
    assert str(error.value) == f"recipe 'tiny': {expected}"


@pytest.mark.parametrize("written, widths", [
    ({"max_train_tokens": 100}, [8, 12, 16, 24, 36, 56, 84, 101]),
    ({"max_train_tokens": 40}, [8, 12, 16, 24, 36, 41]),
    ({"max_train_tokens": 7}, [8]),
    ({}, list(recipes.LENGTH_LADDER)),
    ({"max_train_tokens": 40, "length_buckets": [10, 20]}, [10, 20]),
    ({"length_buckets": []}, []),
])
def test_the_default_widths_end_at_the_longest_training_row(written, widths):
    assert recipes.from_dict(dict(RECIPE, **written)).batch_widths() == widths


def test_a_translation_task_pads_its_batches_to_the_recipes_widths(tmp_path):
    # Words: 3 and 4 with [START] ("hello . 7", "bonjour . 7"); 7 and 8.
    pairs = [("Hello.", "Bonjour."), ("Come here, my friend.", "Viens ici, mon ami.")]
    data_file = tmp_path / "pairs.tsv"
    data_file.write_text("".join(f"{en} {i}\t{fr} {i}\n" for i in range(30) for en, fr in pairs),
                         encoding="utf-8")
    recipe = recipes.from_dict(dict(RECIPE, batch_size=8, length_buckets=[5, 8],
                                    model_config={"embedding_dim": 4, "units": 4}))
    task = TranslationTask(recipe, data_file=data_file, printer=lambda *_: None)
    splits = task.read_splits()
    model = task.build_model(task.build_preprocessor(splits))
    train, validation = task.datasets(model, splits, seed=0)
    assert {array.shape for x, y in all_batches(train) for array in (*x, y)} == {(8, 5), (8, 8)}
    assert {y.shape for _, y in all_batches(validation)} <= {(8, 5), (8, 8)}


def test_every_shipped_translation_recipes_training_pairs_fit_its_widest_bucket():
    for path in sorted(recipes.RECIPES_DIR.glob("*.json")):
        recipe = recipes.load_recipe(path.stem)
        if isinstance(recipe, recipes.TranslationRecipe) and recipe.max_train_tokens:
            assert recipe.batch_widths()[-1] >= recipe.max_train_tokens + 1, path.stem


# -- JAX -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_jax_compiles_the_training_step_once_per_bucket():
    """92 pairs of 1-30 ids in 12 batches of 8 and 20 validation pairs: without buckets
    12 and 3 shapes, with four buckets 4 and 2, each compiled once (the epoch took 31 s
    here without buckets, 9 s with them: compiling is most of it)."""
    if subprocess.run([sys.executable, "-c", "import jax"], capture_output=True).returncode:
        assert not os.environ.get("CI"), "CI installs jax; it is missing"
        pytest.skip("jax is not installed (pip install '.[jax]')")
    result = subprocess.run(
        [sys.executable, str(TESTS / "jax_compilations_run.py"), json.dumps([8, 16, 24, 32])],
        env={**os.environ, "KERAS_BACKEND": "jax", "CUDA_VISIBLE_DEVICES": ""},
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    counts = json.loads(result.stdout.splitlines()[-1])
    assert counts["traces"] == counts["shapes"] == {"train": 4, "validation": 2}
    assert counts["shapes_without_buckets"] == {"train": 12, "validation": 3}
