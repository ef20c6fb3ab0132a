"""model.inspect (zoo.inspection): per-step states and gates, recomputed in numpy from the
weights, equal to the models' forward pass; the fast kernels' gates equal the cells';
``zoo inspect`` draws them; bad input is refused as the other methods refuse it."""

import keras
import numpy as np
import pytest
from keras import ops

import zoo
import zoo.layers
from zoo import inspection, presets
from zoo.cli import main
from zoo.models import CharLanguageModel
from zoo.text import codec
from zoo.text.preprocessor import CharacterPreprocessor

from conftest import MODELS, tiny_classifier, tiny_translator

VERSE = "ROMEO:\nBut soft, what light through yonder window breaks?\n"
CHARACTERS = sorted(set(VERSE))
ATOL = 1e-5
# The shipped models' wide layers (up to 430 units) sum in another order in the fused kernel than in
# the step inspect runs: float32 differences reached 1.01e-5 on one AMD EPYC (a vanilla RNN of
# 1,029 units, step 11).
SHIPPED_ATOL = 1e-4

# (cell class, constructor arguments): every gate function.
CELLS = [
    ("SimpleRNNCell", {}),
    ("LSTMCell", {}),
    ("GRUCell", {"reset_after": True}),
    ("GRUCell", {"reset_after": False}),
]
CELL_IDS = ["rnn", "lstm", "gru-reset-after", "gru-reset-before"]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_steps(cell, inputs, initial_states):
    """The cell's states and gates at every step, from its weights, in float64 numpy:
    the equations of the papers, written independently of zoo.layers.cells."""
    kernel, recurrent_kernel, bias = (np.asarray(w, np.float64) for w in cell.get_weights())
    states = [np.asarray(s, np.float64) for s in initial_states]
    units = cell.units
    steps = {name: [] for name in (*cell.state_names, *cell.gate_names)}
    for x in np.asarray(inputs, np.float64):
        h = states[0]
        if cell.kind == "rnn":
            h = np.tanh(x @ kernel + bias + h @ recurrent_kernel)
            states, gates = [h], {}
        elif cell.kind == "lstm":
            z = x @ kernel + bias + h @ recurrent_kernel
            i, f, o = (_sigmoid(z[..., k * units:(k + 1) * units]) for k in (0, 1, 3))
            candidate = np.tanh(z[..., 2 * units:3 * units])
            c = f * states[1] + i * candidate
            states, gates = [o * np.tanh(c), c], {"i": i, "f": f, "c~": candidate, "o": o}
        else:
            input_bias, recurrent_bias = (bias[0], bias[1]) if cell.reset_after else (bias, 0.0)
            x_z, x_r, x_h = np.split(x @ kernel + input_bias, 3, axis=-1)
            u_z, u_r, u_h = np.split(recurrent_kernel, 3, axis=-1)
            rec_bias = np.split(np.broadcast_to(recurrent_bias, bias.shape[-1:]), 3)
            z = _sigmoid(x_z + h @ u_z + rec_bias[0])
            r = _sigmoid(x_r + h @ u_r + rec_bias[1])
            if cell.reset_after:
                n = np.tanh(x_h + r * (h @ u_h + rec_bias[2]))
            else:
                n = np.tanh(x_h + (r * h) @ u_h)
            states, gates = [z * h + (1 - z) * n], {"z": z, "r": r, "n": n}
        for name, value in (*zip(cell.state_names, states), *gates.items()):
            steps[name].append(value)
    return {name: np.stack(values) for name, values in steps.items()}


@pytest.mark.parametrize("name, kwargs", CELLS, ids=CELL_IDS)
def test_recorded_gates_equal_the_equations_recomputed_in_numpy(name, kwargs, rng):
    cell = getattr(zoo.layers, name)(5, **kwargs)
    cell.build((None, 3))
    # Larger weights than the initializers give: gates away from 0.5 test more.
    cell.set_weights([rng.normal(size=w.shape).astype("float32") for w in cell.get_weights()])
    inputs = rng.normal(size=(7, 3)).astype("float32")
    initial = [rng.normal(size=(1, 5)).astype("float32") for _ in cell.state_names]
    record = inspection.recorded_steps(cell, ops.convert_to_tensor(inputs[None]),
                                       [ops.convert_to_tensor(s) for s in initial])
    trace = inspection.trace(cell, ops.convert_to_numpy(record), "tiny")
    expected = numpy_steps(cell, inputs[:, None], initial)
    assert set(trace["gates"]) == set(cell.gate_names)
    assert trace["cell"] == {"SimpleRNNCell": "rnn", "LSTMCell": "lstm", "GRUCell": "gru"}[name]
    for group in ("states", "gates"):
        for key, values in trace[group].items():
            assert values.shape == (7, 5) and values.dtype == np.float32
            np.testing.assert_allclose(values, expected[key][:, 0], atol=ATOL, err_msg=key)


def test_the_trace_of_a_backward_layer_is_in_input_order(rng):
    layer = zoo.layers.GRU(4, go_backwards=True, return_sequences=True)
    inputs = rng.normal(size=(1, 6, 3)).astype("float32")
    outputs = ops.convert_to_numpy(layer(inputs))  # Keras: in processing order (last first)
    record = inspection.layer_steps(layer, ops.convert_to_tensor(inputs))
    trace = inspection.trace(layer.cell, ops.convert_to_numpy(record), "backward")
    np.testing.assert_allclose(trace["states"]["h"], outputs[0, ::-1], atol=ATOL)
    expected = numpy_steps(layer.cell, inputs[0, ::-1, None], [np.zeros((1, 4))])
    np.testing.assert_allclose(trace["gates"]["z"], expected["z"][::-1, 0], atol=ATOL)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="the fast kernels are TensorFlow's")
@pytest.mark.parametrize("name, kwargs", CELLS, ids=CELL_IDS)
def test_the_fast_kernels_step_gives_the_cells_states_and_gates(name, kwargs, rng):
    import tensorflow as tf

    from zoo.layers import sequence_kernels

    cell = getattr(zoo.layers, name)(5, **kwargs)
    cell.build((None, 3))
    cell.set_weights([rng.normal(size=w.shape).astype("float32") for w in cell.get_weights()])
    kind, recurrent_bias = cell.fused_recurrence()
    if recurrent_bias is None:
        recurrent_bias = tf.zeros([cell.recurrent_kernel.shape[-1]])
    projected = cell.project_inputs(rng.normal(size=(2, 3)).astype("float32"))
    states = [tf.constant(rng.normal(size=(2, 5)).astype("float32")) for _ in cell.state_names]
    expected_states, expected_gates = cell.step_with_gates(projected, states)
    kernel = sequence_kernels.KERNELS[kind]
    for layout in (sequence_kernels.BatchMajor, sequence_kernels.FeatureMajor):
        weights = sequence_kernels._loop_weights(
            kind, tf.identity(cell.recurrent_kernel), tf.identity(recurrent_bias), layout)
        # Feature-major tensors are the batch-major ones transposed.
        orient = tf.transpose if layout is sequence_kernels.FeatureMajor else tf.identity
        new_states, gates = kernel.step(orient(projected), [orient(s) for s in states],
                                        weights, layout)
        for actual, expected in zip(new_states, expected_states):
            np.testing.assert_allclose(orient(actual), expected, atol=1e-6)
        for gate in cell.gate_names:
            np.testing.assert_allclose(orient(gates[gate]), expected_gates[gate], atol=1e-6)
        saved = kernel.forward(orient(projected), [orient(s) for s in states], weights, layout)[1]
        assert len(saved) == kernel.saved_gates


def tiny_language_model(cell, num_layers=2):
    model = CharLanguageModel(len(CHARACTERS), cell=cell, embedding_dim=6, units=8,
                              num_layers=num_layers)
    model.build()
    model.set_preprocessor(CharacterPreprocessor(CHARACTERS))
    return model


def assert_states_equal_the_forward_pass(model, text, atol=ATOL):
    """Each layer's h (and an LSTM's last c) from inspect equal the layer's own call."""
    result = model.inspect(text)
    assert result["tokens"] == list(text)
    assert [t["name"] for t in result["layers"]] == [layer.name for layer in model.recurrent_layers]
    features = model.embedding(np.asarray([model.preprocessor.tokenize(text)], np.int32))
    for trace, layer in zip(result["layers"], model.recurrent_layers):
        outputs, *final_states = layer(features)
        assert trace["cell"] == model.cell_kind
        np.testing.assert_allclose(trace["states"]["h"], ops.convert_to_numpy(outputs)[0],
                                   atol=atol)
        if model.cell_kind == "lstm":
            np.testing.assert_allclose(trace["states"]["c"][-1],
                                       ops.convert_to_numpy(final_states[1])[0], atol=atol)
        for gate in trace["gates"].values():
            assert gate.shape == (len(text), model.units) and gate.dtype == np.float32
        features = outputs
    return result


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_language_model_inspect_equals_its_forward_pass_and_the_numpy_gates(cell):
    model = tiny_language_model(cell)
    result = assert_states_equal_the_forward_pass(model, VERSE)
    first = model.recurrent_layers[0].cell
    embedded = ops.convert_to_numpy(model.embedding(np.asarray(
        [model.preprocessor.tokenize(VERSE)], np.int32)))[0]
    expected = numpy_steps(first, embedded[:, None], [np.zeros((1, 8))] * len(first.state_names))
    for gate, values in result["layers"][0]["gates"].items():
        np.testing.assert_allclose(values, expected[gate][:, 0], atol=ATOL, err_msg=gate)
    assert set(result["layers"][0]["gates"]) == {"rnn": set(), "lstm": {"i", "f", "c~", "o"},
                                                 "gru": {"z", "r", "n"}}[cell]


@pytest.mark.parametrize("name", ["lstm_charlm_shakespeare", "gru_charlm_shakespeare",
                                  "rnn_charlm_shakespeare"])
def test_shipped_language_models_inspect_equals_their_forward_pass(name):
    assert_states_equal_the_forward_pass(zoo.load(name), "KING:\nWhat say you, sir?",
                                         atol=SHIPPED_ATOL)


@pytest.mark.parametrize("name", list(MODELS))
def test_translator_inspect_equals_its_encoder_and_decoder(name):
    keras.utils.set_random_seed(0)
    model = tiny_translator(MODELS[name])
    text = "我读了一本书。"
    result = model.inspect(text)
    assert result["translation"] == model.translate([text])[0]
    assert result["source_tokens"] == model.preprocessor.source_pieces(text)
    assert result["target_tokens"][0] == "[START]"
    assert_translator_states_equal_the_forward_pass(model, result)


def assert_translator_states_equal_the_forward_pass(model, result):
    vocabulary = model.preprocessor.target_vocabulary
    source_ids = np.asarray([model.preprocessor.source_vocabulary.ids_of(result["source_tokens"])],
                            np.int32)
    target_ids = np.asarray([vocabulary.ids_of(result["target_tokens"])], np.int32)
    encoded = {k: ops.convert_to_numpy(v) for k, v in model.encode(source_ids).items()}
    steps = (source_ids.shape[1], target_ids.shape[1])
    for trace, count in zip(result["encoder"] + result["decoder"],
                            [steps[0]] * len(result["encoder"]) + [steps[1]]):
        assert trace["states"]["h"].shape == (count, model.units)
    if "memory" in encoded:  # the encoder's outputs: [forward h; backward h] per token
        assert [t["name"] for t in result["encoder"]] == ["encoder/forward", "encoder/backward"]
        both = np.concatenate([t["states"]["h"] for t in result["encoder"]], axis=-1)
        np.testing.assert_allclose(both, encoded["memory"][0], atol=ATOL)
        decoder_h = _attention_decoder_states(model, source_ids, target_ids)
    else:  # the encoder reads the source reversed: its final state is that of token 0
        (encoder,) = result["encoder"]
        np.testing.assert_allclose(encoder["states"]["h"][0], encoded["h"][0], atol=ATOL)
        np.testing.assert_allclose(encoder["states"]["c"][0], encoded["c"][0], atol=ATOL)
        decoder_h = ops.convert_to_numpy(model.decoder(
            model.target_embedding(target_ids), initial_state=[encoded["h"], encoded["c"]])[0])[0]
    np.testing.assert_allclose(result["decoder"][0]["states"]["h"], decoder_h, atol=ATOL)


def _attention_decoder_states(model, source_ids, target_ids):
    """The decoder's states as decoding computes them: ``decode_step`` after step."""
    state, states = model.encode(source_ids), []
    for t in range(target_ids.shape[1]):
        _, state, _ = model.decode_step(ops.convert_to_tensor(target_ids[:, t]), state)
        states.append(ops.convert_to_numpy(state["decoder"])[0])
    return np.stack(states)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gru_bahdanau_cmn_en", "lstm_seq2seq_cmn_en"])
def test_shipped_translators_inspect_equals_their_encoder_and_decoder(name):
    model = zoo.load(name)
    result = model.inspect("我们明天去北京。")
    assert result["translation"] == model.translate(["我们明天去北京。"])[0]
    assert_translator_states_equal_the_forward_pass(model, result)


@pytest.mark.parametrize("text, error, message", [
    (3, TypeError, "text must be a string; received int"),
    (None, TypeError, "text must be a string; received NoneType"),
    ("", ValueError, "Nothing to inspect: '' has no tokens"),
    ("x" * (codec.MAX_TEXT_LENGTH + 1), ValueError, "characters; the most is 2,000"),
    ("ROMEO Ж", ValueError, "characters this model was not trained on: 'Ж'"),
])
def test_language_model_refuses_bad_input_as_generate_does(text, error, message):
    with pytest.raises(error, match=message):
        tiny_language_model("lstm", num_layers=1).inspect(text)


@pytest.mark.parametrize("text, error, message", [
    (b"bytes", TypeError, "text must be a string; received bytes"),
    ("", ValueError, "Nothing to inspect: '' has no tokens"),
    ("   ", ValueError, "Nothing to inspect: '   ' has no tokens"),
    ("我" * (codec.MAX_TEXT_LENGTH + 1), ValueError, "characters; the most is 2,000"),
])
def test_translator_refuses_bad_input(text, error, message):
    with pytest.raises(error, match=message):
        tiny_translator(MODELS["attention"]).inspect(text)


@pytest.fixture(scope="module")
def language_model_preset(tmp_path_factory):
    directory = tmp_path_factory.mktemp("presets") / "tiny_charlm"
    return presets.save(tiny_language_model("gru"), directory,
                        metadata={"task": "language-modeling"})


def test_cli_inspect_draws_a_png_of_the_chosen_layer(language_model_preset, tmp_path, capsys):
    out = tmp_path / "gates.png"
    status = main(["inspect", str(language_model_preset), "ROMEO:\nBut soft", "--out", str(out),
                   "--layer", "gru_1", "--units", "4"])
    assert status == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "gru_1: states and gates of 15 steps" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_inspect_draws_a_translators_encoder_over_the_source(tmp_path, capsys):
    preset = presets.save(tiny_translator(MODELS["attention"]), tmp_path / "tiny_zh_en",
                          metadata={"task": "translation"})
    out = tmp_path / "encoder.png"
    assert main(["inspect", str(preset), "我读了一本书。", "--layer", "encoder/backward",
                 "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "encoder/backward: states and gates of 7 steps" in printed
    assert "(layers: encoder/forward, encoder/backward, decoder)" in printed


@pytest.mark.parametrize("arguments, message", [
    (["Ж"], "characters this model was not trained on"),
    (["ROMEO", "--layer", "lstm_7"], "has no layer 'lstm_7'; its layers: gru_0, gru_1."),
    (["ROMEO", "--units", "0"], "--units must be a positive number of units; got 0."),
])
def test_cli_inspect_reports_bad_input_in_one_line(language_model_preset, tmp_path, capsys,
                                                   arguments, message):
    out = tmp_path / "gates.png"
    status = main(["inspect", str(language_model_preset), *arguments, "--out", str(out)])
    error = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert error.startswith("zoo: error: ") and message in error
    assert error.count("\n") == 1


def test_classifier_inspect_equals_both_directions_of_its_encoder():
    keras.utils.set_random_seed(0)
    model = tiny_classifier()
    result = model.inspect("A charming, SPLENDID film")
    # lower-cased and split as the model reads it; a word it never saw read as [UNK]
    assert result["tokens"] == ["a", "charming", ",", "[UNK]", "film"]
    assert [t["name"] for t in result["layers"]] == ["encoder/forward", "encoder/backward"]
    ids = np.asarray([model.preprocessor.vocabulary.ids_of(result["tokens"])], np.int32)
    outputs = ops.convert_to_numpy(model.encoder(model.embedding(ids)))[0]  # [words, 2 units]
    both = np.concatenate([t["states"]["h"] for t in result["layers"]], axis=-1)
    np.testing.assert_allclose(both, outputs, atol=ATOL)
    backward = result["layers"][1]
    expected = numpy_steps(model.encoder.backward_layer.cell,
                           ops.convert_to_numpy(model.embedding(ids))[0, ::-1, None],
                           [np.zeros((1, 8))] * 2)
    np.testing.assert_allclose(backward["gates"]["f"], expected["f"][::-1, 0], atol=ATOL)


@pytest.mark.parametrize("text, error, message", [
    (["a list"], TypeError, "text must be a string; received list"),
    ("  ", ValueError, "Nothing to inspect: '  ' has no tokens"),
])
def test_classifier_inspect_refuses_bad_input(text, error, message):
    with pytest.raises(error, match=message):
        tiny_classifier().inspect(text)


def test_cli_inspect_draws_the_classifiers_backward_direction(tmp_path, capsys):
    out = tmp_path / "sst2.png"
    assert main(["inspect", "bilstm_sst2", "a charming, funny film", "--layer",
                 "encoder/backward", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ("encoder/backward: states and gates of 5 steps written to "
            f"{out} (layers: encoder/forward, encoder/backward)") in capsys.readouterr().out
