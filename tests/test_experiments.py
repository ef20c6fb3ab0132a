"""The experiments of zoo/experiments: their tasks, their measurements, their runner."""

import importlib
import json

import keras
import numpy as np
import pytest

from zoo import experiments
from zoo.cli import main
from zoo.data import synthetic


def _load(name):
    return importlib.import_module(f"zoo.experiments.{name}")


def test_adding_problem_marks_one_number_in_each_half_and_sums_them(rng):
    inputs, targets = synthetic.adding_problem(5000, 30, rng)
    assert inputs.shape == (5000, 30, 2) and targets.shape == (5000, 1)
    markers = inputs[..., 1]
    assert np.all(markers[:, :15].sum(axis=1) == 1) and np.all(markers[:, 15:].sum(axis=1) == 1)
    np.testing.assert_allclose(targets[:, 0], (inputs[..., 0] * markers).sum(axis=1), atol=1e-6)
    # Always answering 1.0 scores the variance of the sum of two uniforms, 1/6.
    assert np.mean((targets - 1.0) ** 2) == pytest.approx(synthetic.ADDING_BASELINE_MSE, abs=0.01)
    with pytest.raises(ValueError, match="at least 2; got 1"):
        synthetic.adding_problem(2, 1, rng)


def test_delayed_copy_targets_the_token_read_lag_steps_before(rng):
    tokens, targets, weights = synthetic.delayed_copy(4, 12, 5, 8, rng)
    np.testing.assert_array_equal(targets[:, 5:], tokens[:, :-5])
    np.testing.assert_array_equal(weights, np.repeat([[0] * 5 + [1] * 7], 4, axis=0))
    assert tokens.min() >= 0 and tokens.max() < 8
    with pytest.raises(ValueError, match="between 1 and length - 1 \\(11\\); got 12"):
        synthetic.delayed_copy(4, 12, 12, 8, rng)


def test_reversal_pairs(rng):
    sources, targets = synthetic.reversal(200, 5, 9, rng)
    assert {len(s) for s in sources} == set(range(5, 10))
    assert all(t == s[::-1] and set(s) <= set(synthetic.LETTERS) for s, t in zip(sources, targets))


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_parameter_budget_counts_the_layers_real_weights(cell):
    units = experiments.units_for_budget(cell, 4600, 2)
    layer = experiments.recurrent_layer(cell, units)
    layer.build((None, None, 2))
    assert layer.count_params() == experiments.parameter_count(cell, units, 2) <= 4600
    assert experiments.parameter_count(cell, units + 1, 2) > 4600
    with pytest.raises(ValueError, match="Unknown cell 'elman'; known: rnn, lstm, gru"):
        experiments.recurrent_layer("elman", 4)


def test_hidden_state_gradients_are_the_total_derivative():
    gradients = _load("gradients")
    inputs, targets = synthetic.adding_problem(8, 20, np.random.default_rng(0))
    model = gradients.adding_model("rnn")
    norms = gradients.hidden_state_gradient_norms(model, inputs, targets)["h"]
    # At the last step the loss is mean((h_T W + b - y)^2): dL/dh_T = 2 (pred - y) W^T / B.
    predictions = model.predict(inputs, verbose=0)
    kernel = keras.ops.convert_to_numpy(model.layers[2].kernel)
    expected = 2 * (predictions - targets) @ kernel.T / len(inputs)
    assert norms[-1] == pytest.approx(np.linalg.norm(expected, axis=-1).mean(), rel=1e-4)
    # Through a contracting recurrence the gradient vanishes, through an expanding one it grows.
    gradients.set_spectral_radius(model, 0.5)
    small = gradients.hidden_state_gradient_norms(model, inputs, targets)["h"]
    gradients.set_spectral_radius(model, 1.5)
    large = gradients.hidden_state_gradient_norms(model, inputs, targets)["h"]
    assert small[0] / small[-1] < 1e-3 and large[0] / large[-1] > 1.0
    lstm = gradients.hidden_state_gradient_norms(gradients.adding_model("lstm"), inputs, targets)
    assert set(lstm) == {"h", "c"} and len(lstm["c"]) == 20


def test_effective_memory_is_the_longest_lag_recalled():
    memory = _load("memory")
    results = {2: {"accuracy": 100.0}, 5: {"accuracy": 95.0}, 10: {"accuracy": 40.0},
               15: {"accuracy": 91.0}}
    assert memory.effective_memory(results) == 15
    assert memory.effective_memory({2: {"accuracy": 12.5}}) == 0


@pytest.mark.slow
def test_experiment_command_writes_figures_and_numbers(tmp_path, capsys):
    assert main(["experiment", "alignments", "--quick", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "alignments.json").read_text())
    assert results["command"] == f"zoo experiment alignments --out {tmp_path} --quick"
    first = results["alignments"][0]
    assert (first["text"], first["translation"]) == ("I read a book.", "我读了一本书。")
    weights = np.array(first["weights"])
    assert weights.shape == (len(first["target_tokens"]), len(first["source_tokens"]))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=0.01)
    for name in results["figures"]:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "2 figures and alignments.json written" in capsys.readouterr().out
    assert main(["experiment", "nope", "--out", str(tmp_path)]) == 2
    assert ("Unknown experiment 'nope'; known: alignments, attributions, bottleneck, "
            "gradients, memory, units") in capsys.readouterr().err


PASSAGE = "ROMEO:\nHe is. Go!\n\nKING HENRY VI:\nAy me:\n"


def test_units_features_on_a_hand_made_passage():
    features = _load("units").text_features(PASSAGE)
    assert set(features) == set(_load("units").FEATURES)
    for values in features.values():
        assert values.shape == (len(PASSAGE),)
    expected = {  # per character of PASSAGE
        "position_in_line": [*range(6), 0, *range(10), 0, 0, *range(14), 0, *range(6), 0],
        # The capitals lines ending with ':', their newline included; not "Ay me:".
        "speaker_line": [1] * 7 + [0] * 12 + [1] * 15 + [0] * 7,
        "after_newline": [1] + [0] * 6 + [1] + [0] * 10 + [1, 1] + [0] * 14 + [1] + [0] * 6,
        "inside_word": [1] * 5 + [0, 0] + [1, 1, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0] + [1] * 4 + [0]
        + [1] * 5 + [0] + [1, 1, 0, 0] + [1, 1, 0, 1, 1, 0, 0],
        "end_of_sentence": [0] * 12 + [1, 0, 0, 0, 1] + [0] * 24,
    }
    for name, values in expected.items():
        np.testing.assert_array_equal(features[name], values, err_msg=name)


def test_units_passages_cut_after_blank_lines_and_cover_the_text():
    units = _load("units")
    pieces = units.passages(PASSAGE * 5, most=45)
    assert "".join(pieces) == PASSAGE * 5
    assert all(len(p) <= 45 for p in pieces)
    assert all(p.endswith("\n\n") for p in pieces[:-1])


def test_units_best_unit_is_the_one_that_tracks_the_feature(rng):
    units = _load("units")
    feature = (rng.random(200) > 0.5).astype(np.float32)
    hidden = {"lstm_0": rng.normal(size=(200, 8)), "lstm_1": rng.normal(size=(200, 8))}
    hidden["lstm_1"][:, 5] = -0.8 * feature + 0.05 * rng.normal(size=200)
    np.testing.assert_allclose(units.correlations(feature[:, None] * [1.0, -2.0], feature),
                               [1.0, -1.0], atol=1e-12)
    best = units.best_units(hidden, {"word": feature})["word"]
    assert (best["layer"], best["unit"]) == ("lstm_1", 5) and best["correlation"] < -0.99
    # A feature that never changes correlates with nothing (not NaN).
    assert units.best_units(hidden, {"flat": np.ones(200)})["flat"]["correlation"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["memory", "gradients", "bottleneck", "units"])
def test_quick_experiments_run_end_to_end(name, tmp_path):
    results = experiments.run(name, tmp_path, quick=True, printer=lambda *_: None)
    saved = json.loads((tmp_path / f"{name}.json").read_text())
    assert saved["quick"] and saved["experiment"] == name
    assert all((tmp_path / figure).stat().st_size > 10_000 for figure in results["figures"])
