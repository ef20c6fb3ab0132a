"""The fixed-length bottleneck: what attention buys as sentences get longer.

Claim tested (Cho et al. 2014; Bahdanau, Cho & Bengio 2014, Figure 2): an
encoder-decoder that passes one fixed-length vector degrades as the source grows;
with attention the decoder reads every source position and holds up.

1. Translation: BLEU by source length (characters) of ``lstm_seq2seq_cmn_en`` (no
   attention) and ``gru_bahdanau_cmn_en`` (attention), both presets trained with the
   same budget, on the same leak-free Tatoeba test split, beam 5.
2. Reversal: write a string of 5 to 100 letters backwards. Both models read every
   letter and must reproduce all of them; one model of each kind, with about the same
   number of weights, is trained on the same strings (from short to long: see
   ``CURRICULUM``), and scored by length on the same 50 test strings per length
   (exact match, and letters right in place).

Run: ``zoo experiment bottleneck --out docs/experiments``.
"""

import keras
import numpy as np

import zoo
import zoo.models
from zoo import evaluation, plots
from zoo.data import synthetic
from zoo.evaluation import splits
from zoo.evaluation import translation as scoring
from zoo.text import TranslationPreprocessor, Vocabulary
from zoo.training import translation

PRESETS = {"no attention": "lstm_seq2seq_cmn_en", "attention": "gru_bahdanau_cmn_en"}
TEST_LENGTHS = (5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100)


def run(out_dir, quick=False, printer=print):
    translation = translation_by_length(quick, printer)
    reversal = reversal_by_length(quick, printer)
    figures = [plot_translation(translation, out_dir / "bottleneck_translation.png"),
               plot_reversal(reversal, out_dir / "bottleneck_reversal.png")]
    return {"translation": translation, "reversal": reversal,
            "figures": [p.name for p in figures]}


# -- 1. translation presets ----------------------------------------------------------------


def translation_by_length(quick, printer):
    sources, references = splits.preset_splits(PRESETS["attention"])["test"]
    if quick:
        sources, references = sources[:60], references[:60]
    beam = 1 if quick else 5
    results = {"test_sentences": len(sources), "beam_size": beam, "models": {}}
    outputs = {}
    for kind, name in PRESETS.items():
        model = zoo.load(name)
        scores, outputs[kind] = scoring.score_translations(model, sources, references,
                                                               beam_size=beam)
        results["models"][kind] = {"preset": name, "bleu": scores["bleu"]["score"],
                                   "bleu_by_source_length": scores["bleu_by_source_length"]}
        printer(f"{name}: BLEU {scores['bleu']['score']} by length "
                f"{ {k: v['bleu'] for k, v in scores['bleu_by_source_length'].items()} }")
    results["gain_by_source_length"] = gain_by_source_length(
        sources, outputs["attention"], outputs["no attention"], references, model)
    printer(f"attention's gain by length (95% interval): "
            f"{ {k: (v['gain'], v['interval_95']) for k, v in results['gain_by_source_length'].items()} }")
    return results


def gain_by_source_length(sources, attention, baseline, references, model):
    """Per source-length bucket, attention's BLEU gain over the fixed-length model with a
    95% paired bootstrap interval: are the small buckets of long sentences telling?"""
    gains = {}
    for bucket, chosen in evaluation.length_buckets(sources, model.source_language).items():
        gains[bucket] = {**evaluation.bleu_gain([attention[i] for i in chosen],
                                                [baseline[i] for i in chosen],
                                                [references[i] for i in chosen],
                                                model.target_language),
                         "sentences": len(chosen)}
    return gains


def plot_translation(results, path):
    figure, axes = plots.figure(6.0, 4.0)
    for kind, result in results["models"].items():
        buckets = result["bleu_by_source_length"]
        labels = [f"{name}\n({b['sentences']})" for name, b in buckets.items()]
        axes.plot(labels, [b["bleu"] for b in buckets.values()], marker="o",
                  label=f"{result['preset']} ({kind})")
    axes.set(xlabel="source length in Chinese characters (test sentences)", ylabel="test BLEU",
             title="Chinese to English by source length (Tatoeba test)")
    return plots.save(figure, axes, path)


# -- 2. synthetic reversal -----------------------------------------------------------------


def reversal_models(vocabulary_size, quick):
    """An attention model and a fixed-length-vector model of about the same size."""
    common = dict(embedding_dim=32, dropout=0.0, max_source_length=100, max_output_length=101)
    attention_units = 32 if quick else 64
    attention = zoo.models.AttentionSeq2Seq("char", "char", vocabulary_size, vocabulary_size,
                                            units=attention_units, **common)
    attention.build()
    units = attention_units
    while True:  # the bottleneck LSTM as large as the attention model allows
        bottleneck = zoo.models.BottleneckSeq2Seq("char", "char", vocabulary_size,
                                                  vocabulary_size, units=units + 8, **common)
        bottleneck.build()
        if bottleneck.count_params() > attention.count_params():
            break
        units += 8
    bottleneck = zoo.models.BottleneckSeq2Seq("char", "char", vocabulary_size, vocabulary_size,
                                              units=units, **common)
    bottleneck.build()
    return {"attention": attention, "no attention": bottleneck}


# (longest string, training steps) per stage: a curriculum (Zaremba & Sutskever 2014).
# Trained on lengths 5-100 from the start, neither model left chance level (5% of the
# letters in place) within 470 steps. From short strings up, the attention model finds
# its alignment within 300 steps; the fixed-length model needs about 1,500 steps on
# strings of at most 12 letters before its loss moves at all, hence the long first stage.
CURRICULUM = ((12, 3000), (25, 1000), (50, 400), (100, 600))
QUICK_CURRICULUM = ((10, 10), (30, 10))


def reversal_by_length(quick, printer):
    curriculum = QUICK_CURRICULUM if quick else CURRICULUM
    longest = curriculum[-1][0]
    lengths = [n for n in TEST_LENGTHS if n <= longest]
    vocabulary = Vocabulary.build([list(synthetic.LETTERS)], min_count=1)
    test_rng = np.random.default_rng(1)
    tests = {n: synthetic.reversal(20 if quick else 50, n, n, test_rng) for n in lengths}
    results = {"curriculum": [{"longest": n, "steps": k} for n, k in curriculum],
               "batch_size": 64, "alphabet": len(synthetic.LETTERS), "models": {}}
    keras.utils.set_random_seed(0)
    for kind, model in reversal_models(len(vocabulary), quick).items():
        model.set_preprocessor(TranslationPreprocessor("char", "char", vocabulary, vocabulary,
                                                       model.max_source_length, subwords=False))
        translation.compile_for_training(model, learning_rate=3e-3)
        train_rng = np.random.default_rng(0)  # both models see the same strings
        for stage_longest, steps in curriculum:
            pairs = synthetic.reversal(steps * 64, 5, stage_longest, train_rng)
            data = translation.make_dataset(model, *pairs, 64, shuffle=True).dataset()
            loss = model.fit(data, epochs=1, verbose=0).history["loss"][-1]
        by_length = {}
        for length, (sources, references) in tests.items():
            hypotheses = model.translate(sources, batch_size=100)
            by_length[length] = {
                "exact_match": round(100 * float(np.mean(
                    [h == r for h, r in zip(hypotheses, references)])), 2),
                "letters_in_place": round(100 * float(np.mean(
                    [letters_in_place(h, r) for h, r in zip(hypotheses, references)])), 2),
            }
        results["models"][kind] = {
            "architecture": type(model).__name__, "units": model.units,
            "parameters": model.count_params(), "final_train_loss": round(float(loss), 4),
            "by_length": by_length}
        printer(f"reversal, {kind}: "
                f"{ {n: r['letters_in_place'] for n, r in by_length.items()} }")
    return results


def letters_in_place(hypothesis, reference):
    """Share of the reference's positions that the hypothesis gets right."""
    return sum(h == r for h, r in zip(hypothesis, reference)) / len(reference)


def plot_reversal(results, path):
    figure, axes = plots.figure(6.0, 4.0)
    for kind, result in results["models"].items():
        lengths = sorted(result["by_length"])
        axes.plot(lengths, [result["by_length"][n]["letters_in_place"] for n in lengths],
                  marker="o", label=f"{result['architecture']} ({kind}), "
                                    f"{result['parameters']:,} weights")
    axes.set(xlabel="string length (letters)", ylabel="letters right in place %", ylim=(0, 102),
             title="Reversing a string: fixed-length vector vs attention")
    return plots.save(figure, axes, path)
