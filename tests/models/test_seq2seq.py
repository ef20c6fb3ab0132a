"""Translation models: training and inference paths agree, they learn, they save."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import MODELS, SOURCES, TARGETS, tiny_translator as _tiny
from testcase import outputs_and_gradients, run_preset_round_trip
from zoo import backend as zoo_backend
from zoo.models import AttentionSeq2Seq
from zoo.text import TranslationPreprocessor, Vocabulary


@pytest.fixture(scope="module")
def trained(toy_translators):
    return toy_translators


@pytest.mark.parametrize("name", sorted(MODELS))
def test_teacher_forcing_equals_step_by_step_decoding(name):
    model = _tiny(MODELS[name])
    source_ids = model.preprocessor.tokenize_sources(SOURCES[:3])
    decoder_in, _ = model.preprocessor.tokenize_targets(TARGETS[:3])
    # Backend-neutral (keras.ops): the teacher-forced loop is each backend's rnn.
    forced = keras.ops.convert_to_numpy(model((source_ids, decoder_in)))
    state = model.encode(keras.ops.convert_to_tensor(source_ids))
    for t in range(decoder_in.shape[1]):
        logits, state, _ = model.decode_step(keras.ops.convert_to_tensor(decoder_in[:, t]), state)
        np.testing.assert_allclose(forced[:, t], keras.ops.convert_to_numpy(logits), atol=1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fitted_model_translates_the_corpus_greedy_and_beam(trained, name):
    model = trained[name]
    assert model.translate(SOURCES) == TARGETS
    assert model.translate(SOURCES, beam_size=3) == TARGETS
    assert model.translate("你好。") == ["Hello."]
    assert model.translate([]) == []


def test_attention_has_one_row_per_output_token(trained):
    model = trained["attention"]
    translations, attentions = model.translate(SOURCES[:2], return_attention=True)
    assert [a.shape for a in attentions] == [(5, 7), (2, 3)]  # "I read a book ." x 我读了一本书。
    for weights in attentions:
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    _, beam_attentions = model.translate(SOURCES[:2], beam_size=3, return_attention=True)
    assert [a.shape for a in beam_attentions] == [(5, 7), (2, 3)]
    source, target, weights = model.align(SOURCES[0])
    assert source == list("我读了一本书。") and target == ["I", "read", "a", "book", "."]
    assert weights.shape == (5, 7)


def test_bottleneck_model_has_no_attention_to_return(trained):
    with pytest.raises(ValueError, match="BottleneckSeq2Seq has no attention"):
        trained["bottleneck"].translate(SOURCES[:1], return_attention=True)


@pytest.mark.parametrize("beam", [0, -1, 1.5, True])
def test_invalid_beam_size(trained, beam):
    with pytest.raises(ValueError, match="beam_size must be an integer from 1 to 64; received "):
        trained["attention"].translate(SOURCES[:1], beam_size=beam)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_n_best_first_is_the_translation_and_scores_are_teacher_forced_log_probabilities(
        trained, name):
    from zoo import decoding
    from zoo.text import END_ID, START_ID

    model = trained[name]
    n_best = model.translate(SOURCES, beam_size=4, num_hypotheses=3)
    assert [hypotheses[0]["text"] for hypotheses in n_best] == model.translate(SOURCES,
                                                                               beam_size=4)
    for hypotheses in n_best:
        scores = [h["score"] for h in hypotheses]
        assert len(hypotheses) == 3 and scores == sorted(scores, reverse=True)

    # Each hypothesis' score: its log-probability under teacher forcing / length penalty.
    source_ids = model.preprocessor.tokenize_sources(SOURCES)
    tokens, scores, _ = model.generate_hypotheses(tf.constant(source_ids), 4, 3)
    for n in range(3):
        ids = tokens[:, n].numpy()
        lengths = [list(row).index(END_ID) + 1 if END_ID in row else len(row) for row in ids]
        decoder_in = np.concatenate([np.full((len(ids), 1), START_ID), ids[:, :-1]], axis=1)
        log_probs = tf.nn.log_softmax(model((source_ids, decoder_in))).numpy()
        for row, length in enumerate(lengths):
            total = sum(log_probs[row, t, ids[row, t]] for t in range(length))
            penalty = decoding.length_penalty(length, model.length_penalty).numpy()
            np.testing.assert_allclose(scores[row, n], total / penalty, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_score_of_the_beams_own_output_is_its_score_without_length_penalty(trained, name):
    """A beam's score is log-probability / ((5 + length) / 6) ** alpha: with alpha 0,
    the total log-probability that ``score`` computes teacher-forced."""
    model = trained[name]
    alpha = model.length_penalty
    model.length_penalty = 0.0
    try:
        n_best = model.translate(SOURCES, beam_size=4, num_hypotheses=3)
    finally:
        model.length_penalty = alpha
    sources = [s for s, hypotheses in zip(SOURCES, n_best) for _ in hypotheses]
    hypotheses = [h for row in n_best for h in row]
    scored = model.score(sources, [h["text"] for h in hypotheses], batch_size=5)
    np.testing.assert_allclose([s["total"] for s in scored], [h["score"] for h in hypotheses],
                               atol=1e-4)
    for result, hypothesis in zip(scored, hypotheses):
        tokens = len(model.preprocessor.target_pieces(hypothesis["text"])) + 1  # and [END]
        assert result["tokens"] == tokens
        assert result["per_token"] == pytest.approx(result["total"] / tokens)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_output_rules_bound_every_translation(trained, beam_size):
    model = trained["attention"]
    preprocessor = model.preprocessor
    lengths = [len(preprocessor.source_pieces(text)) for text in SOURCES]

    def pieces(**rules):
        return [preprocessor.target_pieces(text)
                for text in model.translate(SOURCES, beam_size=beam_size, **rules)]

    for produced in pieces(no_repeat_ngram_size=1):
        assert len(set(produced)) == len(produced), produced
    for produced, length in zip(pieces(min_length_ratio=1.5), lengths):
        assert len(produced) >= int(1.5 * length)
    for produced, length in zip(pieces(max_length_ratio=0.5), lengths):
        assert len(produced) <= -(-length // 2)
    # The beam's score stays the log-probability of what it chose.
    (hypotheses,) = model.translate(SOURCES[:1], beam_size=3, num_hypotheses=2,
                                    min_length_ratio=1.2)
    penalty = ((5 + len(preprocessor.target_pieces(hypotheses[0]["text"])) + 1) / 6) \
        ** model.length_penalty
    np.testing.assert_allclose(model.score(SOURCES[:1], [hypotheses[0]["text"]])[0]["total"],
                               hypotheses[0]["score"] * penalty, atol=1e-4)


@pytest.mark.parametrize("options, message", [
    ({"no_repeat_ngram_size": -1}, r"no_repeat_ngram_size must be a positive integer, 0 \(off\) "
                                   "or None; received -1"),
    ({"no_repeat_ngram_size": 2.0}, "no_repeat_ngram_size must be a positive integer"),
    ({"min_length_ratio": -1}, r"min_length_ratio must be a positive number, 0 \(off\) or None; "
                               "received -1"),
    ({"max_length_ratio": float("nan")}, "max_length_ratio must be a positive number"),
    ({"min_length_ratio": 2, "max_length_ratio": 1},
     r"min_length_ratio \(2\) must be at most max_length_ratio \(1\)"),
])
def test_bad_output_rules_are_clear_errors(trained, options, message):
    with pytest.raises(ValueError, match=message):
        trained["attention"].translate(SOURCES[:1], **options)


def test_coverage_penalty_is_a_model_setting_for_attention_models(trained):
    model = trained["attention"]
    plain = model.translate(SOURCES, beam_size=3)
    model.coverage_penalty = 0.4
    try:
        assert model.get_config()["coverage_penalty"] == 0.4
        covered = model.translate(SOURCES, beam_size=3)
        assert model.translate(SOURCES) == trained["attention"].translate(SOURCES)  # greedy
        assert len(covered) == len(plain) and all(isinstance(t, str) for t in covered)
        _, attentions = model.translate(SOURCES[:1], beam_size=3, return_attention=True)
        assert attentions[0].shape[1] == 7
    finally:
        model.coverage_penalty = 0.0
    with pytest.raises(ValueError, match="BottleneckSeq2Seq has no attention: a coverage penalty"):
        trained["bottleneck"].coverage_penalty = 0.2
    with pytest.raises(ValueError, match="coverage_penalty must be a number >= 0; received -1"):
        model.coverage_penalty = -1


def test_output_rules_of_the_model_are_every_search_default(trained):
    model = trained["attention"]
    rules = {"no_repeat_ngram_size": 1, "min_length_ratio": 1.5}
    plain = model.translate(SOURCES, beam_size=3)
    ruled = model.translate(SOURCES, beam_size=3, **rules)
    greedy_ruled = model.translate(SOURCES, **rules)
    only_ngrams = model.translate(SOURCES, beam_size=3, no_repeat_ngram_size=1)
    assert ruled != plain  # the toy model repeats pieces and stops early without them
    model.output_rules = rules
    try:
        assert model.get_config()["output_rules"] == rules
        assert model.translate(SOURCES, beam_size=3) == ruled
        assert model.translate(SOURCES) == greedy_ruled
        # A call's rule replaces the default; 0 turns one off.
        assert model.translate(SOURCES, beam_size=3, min_length_ratio=0) == only_ngrams
        assert model.translate(SOURCES, beam_size=3, no_repeat_ngram_size=0,
                               min_length_ratio=0) == plain
        assert type(model).from_config(model.get_config()).output_rules == rules
    finally:
        model.output_rules = {}


def test_bad_model_output_rules_are_clear_errors(trained):
    model = trained["attention"]
    with pytest.raises(TypeError, match="output_rules must be a dict of translate's output "
                                        "rules; received 3"):
        model.output_rules = 3
    with pytest.raises(ValueError, match=r"Unknown output rules \['no_repeat'\]; known: "
                                         "no_repeat_ngram_size, min_length_ratio"):
        model.output_rules = {"no_repeat": 3}
    with pytest.raises(ValueError, match="min_length_ratio must be a positive number"):
        model.output_rules = {"min_length_ratio": -2}
    assert model.output_rules == {}


def test_a_batch_searched_in_parts_side_by_side_translates_as_in_one_search(trained,
                                                                             monkeypatch):
    """``translate`` splits a batch into parts searched side by side (one per inter-op
    thread, each of at least 16 sentences): every search option gives what one search
    of the whole batch gives, each text its own translation."""
    model = trained["attention"]
    texts = [a + b for a in SOURCES for b in SOURCES]  # 36 different texts
    prefixes = [["", "He", "You read"][i % 3] for i in range(len(texts))]
    parts = []
    searched = zoo_backend.map_side_by_side

    def recorded(function, items):
        parts.append([len(item) for item in items])
        return searched(function, items)

    def translations():
        return [model.translate(texts), model.translate(texts, beam_size=3, num_hypotheses=2),
                model.translate(texts, sampling=True, top_k=4, seed=5),
                model.translate(texts, prefix=prefixes),
                model.translate(texts, return_attention=True, attention_level="piece")]

    monkeypatch.setattr(zoo_backend, "map_side_by_side", recorded)
    monkeypatch.setattr(zoo_backend, "side_by_side_searches", lambda: 1)
    alone = translations()
    assert parts == [[36]] * 5
    parts.clear()
    monkeypatch.setattr(zoo_backend, "side_by_side_searches", lambda: 3)
    side_by_side = translations()
    assert parts == [[18, 18]] * 5  # 36 sentences: two parts of at least 16
    assert side_by_side[0] == alone[0] and side_by_side[2:4] == alone[2:4]
    # The beams' texts are the same; their scores to float32's rounding (a batch of 18
    # and one of 36 need not round alike: Keras 3.12, Python 3.10's, differs in the last
    # bit).
    for ours, theirs in zip(side_by_side[1], alone[1]):
        assert [h["text"] for h in ours] == [h["text"] for h in theirs]
        np.testing.assert_allclose([h["score"] for h in ours], [h["score"] for h in theirs],
                                   rtol=1e-6, atol=1e-7)
    assert side_by_side[4][0] == alone[4][0]
    for ours, theirs in zip(side_by_side[4][1], alone[4][1]):
        np.testing.assert_allclose(ours, theirs, atol=1e-6)
    parts.clear()
    model.translate(texts[:31])  # under two parts of 16: one search
    assert parts == [[31]]


def test_searches_side_by_side_fill_the_cores_with_operations_of_their_threads(monkeypatch):
    # (cores, intra-op threads, inter-op threads, searches); 0: TensorFlow's default, one
    # per core
    for cores, intra_op, inter_op, searches in [(2, 0, 0, 1), (2, 1, 0, 2), (2, 1, 2, 2),
                                                (2, 2, 2, 1), (2, 1, 1, 1), (2, 1, 8, 2),
                                                (1, 0, 0, 1), (16, 1, 4, 4), (16, 4, 0, 4)]:
        monkeypatch.setattr(zoo_backend, "usable_cores", lambda: cores)
        monkeypatch.setattr(tf.config.threading, "get_intra_op_parallelism_threads",
                            lambda: intra_op)
        monkeypatch.setattr(tf.config.threading, "get_inter_op_parallelism_threads",
                            lambda: inter_op)
        assert zoo_backend.side_by_side_searches() == searches


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_prefix_starts_the_translation_and_the_search_goes_on(trained, beam_size):
    model = trained["attention"]
    texts = ["我读了一本书。", "你好。", "他很高兴。"]
    translations = model.translate(texts, beam_size=beam_size, prefix=["You read", "", "He"])
    assert translations[0].startswith("You read") and translations[0] != "You read"
    assert translations[1:] == model.translate(texts[1:], beam_size=beam_size)
    with pytest.raises(ValueError, match="prefix needs one string per text; received 1 for 3"):
        model.translate(texts, prefix=["You"])
    if beam_size > 1:  # the score is the log-probability of the whole output, prefix included
        alpha = model.length_penalty
        model.length_penalty = 0.0
        try:
            (best,) = model.translate(texts[:1], beam_size=3, num_hypotheses=1,
                                      prefix=["You read"])[0:1]
        finally:
            model.length_penalty = alpha
        assert best[0]["text"] == translations[0]
        np.testing.assert_allclose(model.score(texts[:1], [best[0]["text"]])[0]["total"],
                                   best[0]["score"], atol=1e-4)


def test_score_by_hand():
    """With every weight 0 but the output bias, each step's distribution is
    softmax(bias), whatever was read: a target's log-probability is the sum of its
    tokens' (its pieces', then [END]'s) log_softmax(bias)."""
    from zoo.text import END_ID

    model = _tiny(AttentionSeq2Seq)
    model.set_weights([np.zeros_like(w) for w in model.get_weights()])
    bias = np.linspace(-1.0, 2.0, model.target_vocabulary_size).astype("float32")
    model.output_bias.assign(bias)
    log_softmax = bias - np.log(np.exp(bias).sum())
    target = TARGETS[0]  # "I read a book ."
    ids = [*model.preprocessor.target_vocabulary.ids_of(target.replace(".", " .").split()), END_ID]
    (result,) = model.score([SOURCES[0]], [target])
    assert result["tokens"] == 6
    np.testing.assert_allclose(result["total"], log_softmax[ids].sum(), rtol=1e-5)
    np.testing.assert_allclose(result["per_token"], log_softmax[ids].mean(), rtol=1e-5)
    (empty,) = model.score([SOURCES[0]], [""])  # [END] alone
    np.testing.assert_allclose(empty["total"], log_softmax[END_ID], rtol=1e-5)


def test_score_errors(trained):
    model = trained["attention"]
    with pytest.raises(ValueError, match="score needs one target per source; received 2 "
                                         "sources and 1 targets"):
        model.score(SOURCES[:2], TARGETS[:1])
    with pytest.raises(TypeError, match="received int at position 0"):
        model.score(SOURCES[:1], [3])
    assert model.score([], []) == []


def test_n_best_with_attention_and_bad_counts(trained):
    model = trained["attention"]
    (hypotheses,) = model.translate(SOURCES[:1], beam_size=3, num_hypotheses=2,
                                    return_attention=True)
    assert hypotheses[0]["attention"].shape == (5, 7)
    with pytest.raises(ValueError, match=r"num_hypotheses must be at most beam_size \(2\): a "
                                         r"beam holds that many hypotheses; received 3"):
        model.translate(SOURCES[:1], beam_size=2, num_hypotheses=3)
    with pytest.raises(ValueError, match="num_hypotheses must be an integer from 1 to 64; "
                                         "received 0"):
        model.translate(SOURCES[:1], beam_size=2, num_hypotheses=0)


def test_sampled_translations_are_reproducible_and_independent_of_batching(trained):
    model = trained["attention"]
    texts = SOURCES * 3

    def drawn(**options):
        return model.translate(texts, sampling=True, temperature=3.0, seed=11, **options)

    first = drawn()
    assert drawn(batch_size=4) == first == drawn(batch_size=1)
    assert drawn(top_k=1) == model.translate(texts)  # top-k 1 is greedy
    assert model.translate(texts, sampling=True, temperature=0.0, seed=3) == model.translate(
        texts)
    # At this temperature the copies of a sentence (other rows) are drawn differently.
    assert len(set(first)) > len(set(SOURCES))
    assert drawn(top_p=0.5) != first or drawn(top_k=2) != first


@pytest.mark.parametrize("options, message", [
    ({"beam_size": 5}, "beam_size must be 1 with sampling=True; received 5"),
    ({"temperature": -1.0}, "temperature must be a finite number >= 0; received -1.0"),
    ({"top_k": 0}, "top_k must be a positive integer or None; received 0"),
    ({"top_p": 0.0}, r"top_p must be a number in \(0, 1\] or None; received 0.0"),
    ({"top_p": 1.01}, r"top_p must be a number in \(0, 1\] or None; received 1.01"),
    ({"top_p": 2.0**-140}, r"top_p must be a number in \(0, 1\] or None, and at least "
                           r"1.1754944e-38 \(float32's smallest normal number: every runtime "
                           r"samples in float32, where a smaller one counts as 0\); received "
                           r"7.174648137343064e-43\."),
    ({"beam_size": 3, "num_hypotheses": 2}, "num_hypotheses is for beam search"),
])
def test_bad_sampling_arguments_are_clear_errors(trained, options, message):
    with pytest.raises(ValueError, match=message):
        trained["attention"].translate(SOURCES[:1], sampling=True, **options)


def test_unknown_words_become_oov_not_errors(trained):
    model = trained["attention"]
    ids = model.preprocessor.tokenize_sources(["龘龘我"])
    np.testing.assert_array_equal(ids, [[1, 1, model.preprocessor.source_vocabulary.ids_of(["我"])[0]]])
    assert isinstance(model.translate("龘龘")[0], str)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("weights_dtype", ["float32", "float16"])
def test_preset_round_trip(trained, name, weights_dtype, tmp_path):
    model = trained[name]
    source_ids = model.preprocessor.tokenize_sources(SOURCES)
    decoder_in, _ = model.preprocessor.tokenize_targets(TARGETS)
    tolerance = 0 if weights_dtype == "float32" else 0.05
    directory, loaded = run_preset_round_trip(
        model, tmp_path / "toy", lambda m: m((source_ids, decoder_in)), atol=tolerance,
        metadata={"task": "translation"}, weights_dtype=weights_dtype)
    assert sorted(p.name for p in (directory / "assets").iterdir()) == [
        "preprocessor.json", "source_vocabulary.txt", "target_vocabulary.txt"]
    assert type(loaded) is type(model)
    assert loaded.preprocessor.source_vocabulary == model.preprocessor.source_vocabulary
    assert loaded.translate(SOURCES, beam_size=3) == model.translate(SOURCES, beam_size=3)


def test_vocabulary_size_must_match_the_config():
    model = _tiny(AttentionSeq2Seq)
    small = TranslationPreprocessor("zh", "en", Vocabulary(["a"]),
                                    model.preprocessor.target_vocabulary)
    with pytest.raises(ValueError, match=r"The source vocabulary has 5 tokens but the model was built for"):
        model.set_preprocessor(small)


def test_inputs_that_are_not_strings_are_refused_clearly(toy_translators):
    model = toy_translators["attention"]
    with pytest.raises(TypeError, match="texts must be strings; received int at position 1: 5"):
        model.translate(["你好。", 5])
    with pytest.raises(TypeError, match="texts must be a string or a list of strings; received bytes"):
        model.translate(b"\xe4\xbd\xa0")
    with pytest.raises(TypeError, match="received NoneType"):
        model.translate(None)
    with pytest.raises(ValueError, match="max_length must be an integer from 1 to 1,024; received -3"):
        model.translate(["你好。"], max_length=-3)
    assert model.translate([]) == []
    assert model.translate(("你好。",)) == model.translate("你好。")


def _former_teacher_forced(model, target_input_ids, state):
    """AttentionSeq2Seq's teacher forcing as it was written before the cell's embedding
    product left the loop: the cell's whole product inside every step."""
    from keras import ops
    from keras.src import backend

    embedded = model.target_embedding(target_input_ids)

    def step(embedded_t, states):
        decoder_state, context, _ = model._cell_step(embedded_t, {**state, "decoder": states[0]})
        return ops.concatenate([decoder_state, context], axis=-1), [decoder_state]

    _, outputs, _ = backend.rnn(step, embedded, [state["decoder"]])
    return model.logits(ops.concatenate([outputs, embedded], axis=-1))


def test_the_embedding_product_outside_the_loop_gives_the_former_logits_and_gradients():
    from keras import ops

    model = _tiny(AttentionSeq2Seq, units=24)
    rng = np.random.default_rng(0)  # biases too, which start at 0
    model.set_weights([rng.normal(scale=0.3, size=w.shape).astype("float32")
                       for w in model.get_weights()])
    source_ids = model.preprocessor.tokenize_sources(SOURCES)
    decoder_in, _ = model.preprocessor.tokenize_targets(TARGETS)

    def logits_and_loss(teacher_forced):
        def run():
            logits = teacher_forced(decoder_in, model.encode(source_ids))
            return logits, ops.sum(logits * logits)
        return outputs_and_gradients(run, [], model.trainable_variables)

    new, new_gradients = logits_and_loss(model.decode_teacher_forced)
    old, old_gradients = logits_and_loss(
        lambda ids, state: _former_teacher_forced(model, ids, state))
    np.testing.assert_allclose(new, old, rtol=1e-5, atol=1e-6)
    assert len(new_gradients) == len(model.trainable_variables)
    for new_gradient, old_gradient in zip(new_gradients, old_gradients, strict=True):
        np.testing.assert_allclose(new_gradient, old_gradient, rtol=1e-4, atol=1e-5)
