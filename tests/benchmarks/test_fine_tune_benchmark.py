"""`zoo benchmark fine-tune`: the pairs are drawn by their shares, deterministically, and no
validation or test sentence is among them; the table's figures and verdicts follow from
the measurements; bad options say what they received and what is accepted; a run
fine-tunes a tiny preset from its TSVs, in this process and in processes of their own."""

import gzip
import json
import math

import pytest

from tests.conftest import MODELS, SOURCES, TARGETS, tiny_translator
from zoo.backend import usable_cores
from zoo.benchmarks import fine_tune, training
from zoo.data import parallel, tatoeba
from zoo.data.tatoeba import Pair

# -- a data folder of small corpora, with sentences of the held-out sets among them ----------

TATOEBA_PAIRS = 300
NTREX_LINES = 1_006  # the first 1,000 validate, the other 6 test
SUBTITLES, NEWS = 40, 20


def _ntrex(i):
    return Pair(f"News sentence number {i} of the test.", f"新闻第{i}句话在这里。")


@pytest.fixture(scope="module")
def data_folder(tmp_path_factory):
    """``../shared/data``'s layout for zh, small: Tatoeba's cmn (its own pairs, and five
    that share an English sentence with NTREX), TVsub (gzip) and WMT news with clean pairs
    and pairs that share a sentence with a Tatoeba validation or test pair or an NTREX
    line, and NTREX. Returns ``(folder, leaks)``: the leaking pairs."""
    folder = tmp_path_factory.mktemp("data")
    (folder / "tatoeba").mkdir()
    (folder / "parallel").mkdir()
    own = [Pair(f"Tom has {i} red apples.", f"汤姆有{i}个红苹果。")
           for i in range(TATOEBA_PAIRS)]
    sharing_ntrex = [Pair(_ntrex(k).english, f"另一个翻译{k}。")
                     for k in (3, 1001, 17, 500, 1004)]
    (folder / "tatoeba" / "cmn-eng.tsv").write_text("".join(
        f"{p.english}\t{p.other}\tCC-BY 2.0 (France) Attribution: tatoeba.org\n"
        for p in own + sharing_ntrex), encoding="utf-8")
    splits = tatoeba.split(own)
    validation, test = splits["validation"], splits["test"]
    assert validation and test
    subtitles = [Pair(f"I saw subtitle line {i} tonight.", f"我今晚看到字幕{i}行")
                 for i in range(SUBTITLES)]
    news = [Pair(f"The market rose by {i} points.", f"市场上涨了{i}点。")
            for i in range(NEWS)]
    leaks = {
        # The same sentence, its case, spaces and final mark aside (parallel.sentence_key)
        "subtitles": [Pair(test[0].english.upper().rstrip("."), "完全不同的字幕"),
                      Pair("Something else entirely", validation[0].other),
                      Pair("A subtitle line of the news", _ntrex(2).other),
                      Pair(_ntrex(1003).english + "  ", "又一个字幕")],
        "news": [Pair(validation[1].english, "完全不同的新闻。"),
                 Pair("Another news line here.", _ntrex(1005).other)],
    }
    with gzip.open(folder / "parallel" / "tvsub.en-zh.tsv.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(f"{p.english}\t{p.other}\n" for p in subtitles + leaks["subtitles"])
    (folder / "parallel" / "wmt17-20.en-zh.tsv").write_text(
        "".join(f"{p.english}\t{p.other}\n" for p in news + leaks["news"]), encoding="utf-8")
    (folder / "parallel" / "ntrex128.en-zh.tsv").write_text(
        "".join(f"{p.english}\t{p.other}\n" for p in map(_ntrex, range(NTREX_LINES))),
        encoding="utf-8")
    return folder, leaks


def _keys(pairs):
    return {parallel.sentence_key(text) for pair in pairs for text in (pair.english, pair.other)}


def test_no_validation_or_test_sentence_is_among_the_training_pairs(data_folder):
    folder, leaks = data_folder
    corpora = fine_tune.read_corpora("zh", folder)
    assert corpora["names"] == {"tatoeba": "Tatoeba cmn", "subtitles": "tvsub",
                                "news": "wmt_news_zh"}
    splits = tatoeba.split(tatoeba.read("cmn", folder))
    ntrex = [_ntrex(i) for i in range(NTREX_LINES)]
    held_out = _keys(splits["validation"] + splits["test"] + ntrex)
    for part in ("tatoeba", "subtitles", "news"):
        assert not _keys(corpora[part]) & held_out, part
    # Every clean pair kept, every leaking one left out (TVsub's Chinese cleaned: a final
    # mark after a line whose English ends with one).
    assert len(corpora["subtitles"]) == SUBTITLES and len(corpora["news"]) == NEWS
    assert not {(p.english, p.other) for p in leaks["subtitles"] + leaks["news"]} & {
        (p.english, p.other) for p in corpora["subtitles"] + corpora["news"]}
    # Tatoeba's training split less the pairs of an NTREX sentence that fell in it.
    dropped = [p for p in splits["train"] if p.english.startswith("News sentence")]
    assert dropped and len(corpora["tatoeba"]) == len(splits["train"]) - len(dropped)
    assert corpora["tatoeba_validation"] == splits["validation"]
    assert corpora["real_text_validation"] == {"ntrex_validation": ntrex[:1000]}


def test_the_shares_are_four_five_and_one_tenth_summing_to_the_pairs():
    assert fine_tune.part_counts(20_000) == {"tatoeba": 8_000, "subtitles": 10_000, "news": 2_000}
    assert fine_tune.part_counts(15) == {"tatoeba": 6, "subtitles": 8, "news": 1}
    for pairs in range(1, 60):
        counts = fine_tune.part_counts(pairs)
        assert sum(counts.values()) == pairs and min(counts.values()) >= 0
        assert all(abs(count - pairs * fine_tune.SHARES[part] / 10) <= 1
                   for part, count in counts.items())


def _small_corpora():
    return {"tatoeba": [Pair(f"t{i}", f"T{i}") for i in range(50)],
            "subtitles": [Pair(f"s{i}", f"S{i}") for i in range(60)],
            "news": [Pair(f"n{i}", f"N{i}") for i in range(20)],
            "tatoeba_validation": [Pair(f"v{i}", f"V{i}") for i in range(30)],
            "real_text_validation": {"ntrex_validation": [Pair(f"r{i}", f"R{i}")
                                                          for i in range(5)]},
            "names": {"tatoeba": "Tatoeba cmn", "subtitles": "tvsub", "news": "wmt_news_zh"}}


def test_the_pairs_are_drawn_by_their_shares_the_same_for_a_seed(monkeypatch):
    corpora = _small_corpora()
    train, validation, drawn = fine_tune.draw_pairs(corpora, 100, seed=3)
    assert len(train) == len(set(train)) == 100
    assert {prefix: sum(p.english.startswith(prefix) for p in train) for prefix in "tsn"} == {
        "t": 40, "s": 50, "n": 10}
    assert "".join(p.english[0] for p in train) != "t" * 40 + "s" * 50 + "n" * 10  # shuffled
    # Tatoeba's validation (all 30: fewer than 1,000), then the real-text validation sets
    assert sorted(validation[:30], key=str) == sorted(corpora["tatoeba_validation"], key=str)
    assert validation[30:] == corpora["real_text_validation"]["ntrex_validation"]
    assert drawn == {"train": {"Tatoeba cmn": 40, "tvsub": 50, "wmt_news_zh": 10},
                     "validation": {"Tatoeba cmn validation": 30, "ntrex_validation": 5}}
    assert fine_tune.draw_pairs(corpora, 100, seed=3) == (train, validation, drawn)
    other_seed = fine_tune.draw_pairs(corpora, 100, seed=4)
    assert other_seed[0] != train and other_seed[1][:30] != validation[:30]
    # The validation pairs are the same for any number of training pairs.
    assert fine_tune.draw_pairs(corpora, 20, seed=3)[1] == validation
    monkeypatch.setattr(fine_tune, "VALIDATION_TATOEBA", 10)
    fewer = fine_tune.draw_pairs(corpora, 20, seed=3)[1]
    assert len(fewer) == 15 and len(set(fewer[:10]) & set(corpora["tatoeba_validation"])) == 10


def test_too_many_pairs_say_how_many_the_corpora_hold():
    with pytest.raises(ValueError) as error:
        fine_tune.draw_pairs(_small_corpora(), 300, seed=0)
    # Tatoeba's 50 hold 125 pairs' 40%, the subtitles' 60 hold 120 pairs' 50%.
    assert str(error.value) == (
        "--pairs 300 takes 120 pairs of Tatoeba cmn (40%), which has 50 (its pairs that share "
        "no sentence with a validation or test set): at most --pairs 120.")
    assert len(fine_tune.draw_pairs(_small_corpora(), 120, seed=0)[0]) == 120


def test_the_tsv_files_hold_english_first_a_pair_a_line(tmp_path):
    pairs = [Pair("Hello\tthere.", "你好。"), Pair(" Two  spaces\nand a break ", "两个")]
    fine_tune.write_tsv(tmp_path / "pairs.tsv", pairs)
    assert (tmp_path / "pairs.tsv").read_text(encoding="utf-8") == (
        "Hello there.\t你好。\nTwo spaces and a break\t两个\n")
    assert tatoeba.read_pairs(tmp_path / "pairs.tsv") == [
        Pair("Hello there.", "你好。"), Pair("Two spaces and a break", "两个")]


# -- the preset and the options -------------------------------------------------------------------


def test_bad_options_name_what_was_received_and_what_is_accepted(monkeypatch):
    def measured(*_, **__):
        raise AssertionError("read or measured despite a bad option")

    monkeypatch.setattr(fine_tune, "read_corpora", measured)
    monkeypatch.setattr(training, "_run_worker", measured)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    translators = ("gru_bahdanau_cmn_en, gru_bahdanau_en_cmn, gru_bahdanau_en_fr, "
                   "lstm_seq2seq_cmn_en")
    cases = [
        ({"pairs": 0}, "--pairs takes a positive whole number; received 0."),
        ({"pairs": 2.5}, "--pairs takes a positive whole number; received 2.5."),
        ({"rounds": 0}, "--rounds takes a positive whole number; received 0."),
        ({"epochs": -1}, "--epochs takes a positive whole number; received -1."),
        ({"seed": -1}, "--seed takes a whole number from 0 to 4294967295; received -1."),
        ({"seed": 2**32}, ("--seed takes a whole number from 0 to 4294967295; received "
                           "4294967296.")),
        ({"threads": (0, 1)}, ("--threads takes one setting, N or N/M (intra-op/inter-op "
                               "threads); received (0, 1).")),
        ({"precisions": ["bfloat16"]}, ("--precision must be one of float32, mixed_bfloat16; "
                                        "received 'bfloat16'.")),
        ({"precisions": ["float32", "float32"]},
         "--precision takes each precision once; received float32 float32."),
        ({"precisions": []}, "--precision needs at least one of float32, mixed_bfloat16."),
        ({"preset": "bilstm_sst2"}, (f"zoo benchmark fine-tune fine-tunes a translator; "
                                     f"'bilstm_sst2' is a TextClassifier, not a translator. "
                                     f"Translators: {translators}.")),
        ({"preset": "gru_bahdanau_dates"}, (
            f"zoo benchmark fine-tune gru_bahdanau_dates: it translates char -> char; the "
            f"fine-tuning pairs are English with zh or fr, the languages with the corpora. "
            f"Translators: {translators}.")),
    ]
    for options, message in cases:
        with pytest.raises(ValueError) as error:
            fine_tune.benchmark_fine_tune(**options)
        assert str(error.value) == message
    with pytest.raises(ValueError, match=r"^Unknown preset 'gru_bahdanau_cmn_de'\. Known "):
        fine_tune.benchmark_fine_tune("gru_bahdanau_cmn_de")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    with pytest.raises(ValueError) as error:
        fine_tune.benchmark_fine_tune()
    assert str(error.value) == (
        "zoo benchmark fine-tune runs on TensorFlow (the README's fit of a translator takes "
        "its real-tokens step there); KERAS_BACKEND is 'jax': set it to tensorflow, or unset it.")
    assert fine_tune.translator_languages("gru_bahdanau_en_fr") == ("en", "fr", "fr")
    assert fine_tune.translator_languages("lstm_seq2seq_cmn_en") == ("zh", "en", "zh")


def test_the_subtitles_and_news_are_the_languages_corpora_in_the_recipes_mixes():
    from zoo.training import recipes

    for language, names in fine_tune.LANGUAGES.items():
        assert tatoeba.CORPORA[names["tatoeba"]]["language"] == language
        for part in ("subtitles", "news"):
            assert parallel.CORPORA[names[part]].language == language
        assert "subtitles" in parallel.CORPORA[names["subtitles"]].domain
        assert parallel.CORPORA[names["news"]].domain.startswith("news (WMT")
    for name in fine_tune.shipped_translators():
        recipe = recipes.load_recipe(name)
        other = fine_tune.translator_languages(name)[2]
        names = fine_tune.LANGUAGES[other]
        assert recipe.corpus == names["tatoeba"]
        assert {names["subtitles"], names["news"]} <= set(recipe.mix), name


# -- what is printed -------------------------------------------------------------------------------


def test_the_machine_names_its_bfloat16_instructions(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9R14\n"
                       "flags\t\t: fpu avx2 avx512f amx_bf16 avx512_bf16 amx_tile\n")
    assert training.machine(cpuinfo) == {"cpu": "AMD EPYC 9R14", "avx512": True,
                                         "bfloat16": ["avx512_bf16", "amx_bf16"],
                                         "usable_cores": usable_cores()}
    results = {"machine": training.machine(cpuinfo), "preset": "gru_bahdanau_cmn_en",
               "pairs": 20_000, "epochs": 1, "threads": [2, 2], "rounds": 1,
               "precisions": ["float32", "mixed_bfloat16"]}
    assert fine_tune.header(results) == (
        "zoo benchmark fine-tune gru_bahdanau_cmn_en: 20,000 pairs, 1 epoch, 2 threads, "
        "TensorFlow, 1 round of float32, mixed_bfloat16, a process each; CPU AMD EPYC 9R14, "
        "AVX-512, bfloat16 instructions: avx512_bf16, amx_bf16")
    cpuinfo.write_text("model name\t: Intel Xeon\nflags\t\t: fpu avx2\n")
    results.update(machine=training.machine(cpuinfo), threads=[2, 1], epochs=3, rounds=2,
                   pairs=500, precisions=["mixed_bfloat16"])
    assert fine_tune.header(results) == (
        "zoo benchmark fine-tune gru_bahdanau_cmn_en: 500 pairs, 3 epochs, 2 intra-op / 1 "
        "inter-op threads, TensorFlow, 2 rounds of mixed_bfloat16, a process each; CPU Intel "
        "Xeon, no AVX-512, no bfloat16 instructions (avx512_bf16, amx_bf16)")
    results["threads"] = None
    assert f"1 epoch, TensorFlow's default threads ({usable_cores()} usable cores)" in \
        fine_tune.header({**results, "epochs": 1})


def _run(precision, round_number, fit, after, before=None, others=0.01, step=None):
    return {"precision": precision, "round": round_number, "fit_seconds": fit,
            "fit_cpu_seconds": 1.75 * fit, "median_step_seconds": step or fit / 500,
            "first_step_seconds": 4.25, "steps": 313, "target_tokens_per_second": 270_000 / fit,
            "others_share_during_fit": others, "validation_loss_before": before,
            "validation_loss_after": after, "matmul_size": 2048,
            "matmul_gflops": 100.0 if precision == "float32" else 200.0}


def test_the_table_and_the_verdicts_follow_from_the_measurements():
    runs = [_run("float32", 1, 78.7, 2.6609, before=2.9012),
            _run("mixed_bfloat16", 1, 64.6, 2.6619),
            _run("mixed_bfloat16", 2, 60.0, 2.6650, others=None, step=0.1),
            _run("float32", 2, 80.0, 2.66, step=0.14)]
    summed = fine_tune.summary(runs)
    mixed = summed["precisions"]["mixed_bfloat16"]
    assert summed["validation_loss_before"] == 2.9012
    assert summed["precisions"]["float32"]["fit_seconds"] == pytest.approx(79.35)
    assert mixed["fit_seconds"] == pytest.approx(62.3)
    assert mixed["speed_over_float32"] == pytest.approx((78.7 / 64.6 + 80 / 60) / 2)
    assert mixed["step_speed_over_float32"] == pytest.approx((78.7 / 64.6 + 1.4) / 2)
    assert mixed["loss_gap_to_float32"] == pytest.approx((2.6619 / 2.6609 + 2.665 / 2.66) / 2 - 1)
    assert (mixed["fit_target_holds"], mixed["loss_target_holds"]) == (False, True)
    assert "speed_over_float32" not in summed["precisions"]["float32"]
    lines = fine_tune.report_lines({"runs": runs, "summary": summed})
    assert lines == [
        ("matmul rate (2048x2048, GFLOP/s, in each run's compute dtype): float32 100.0, "
         "mixed_bfloat16 200.0"),
        ("precision       round   fit s  first step s  steps  step ms  busy  tokens/s  others"
         "  loss before  loss after  vs float32"),
        ("float32             1    78.7          4.25    313      157  1.75     3,431      1%"
         "       2.9012      2.6609           -"),
        ("mixed_bfloat16      1    64.6          4.25    313      129  1.75     4,180      1%"
         "            -      2.6619      +0.04%"),
        ("float32             2    80.0          4.25    313      140  1.75     3,375      1%"
         "            -      2.6600           -"),
        ("mixed_bfloat16      2    60.0          4.25    313      100  1.75     4,500       -"
         "            -      2.6650      +0.19%"),
        ("mixed_bfloat16 / float32 speed 1.28x, the median of 2 rounds (fit 62.3 s against "
         "79.3 s; median step 1.31x); targets: fit <= 60 s: float32 missed (79.3 s), "
         "mixed_bfloat16 missed (62.3 s); validation loss within 1% of float32's: "
         "mixed_bfloat16 holds (+0.11%)")]
    # One round: the fit within the minute, the loss 1.5% above float32's.
    runs = [_run("float32", 1, 61.0, 2.0, before=2.5), _run("mixed_bfloat16", 1, 59.0, 2.03)]
    assert fine_tune.report_lines({"runs": runs, "summary": fine_tune.summary(runs)})[-1] == (
        "mixed_bfloat16 / float32 speed 1.03x (fit 59.0 s against 61.0 s; median step 1.03x); "
        "targets: fit <= 60 s: float32 missed (61.0 s), mixed_bfloat16 holds (59.0 s); "
        "validation loss within 1% of float32's: mixed_bfloat16 missed (+1.50%)")
    # Without float32 there is nothing to compare with: the fit's target only.
    runs = [_run("mixed_bfloat16", 1, 50.0, 2.03, before=2.5)]
    lines = fine_tune.report_lines({"runs": runs, "summary": fine_tune.summary(runs),
                                    "pairs": 20_000, "epochs": 1})
    assert lines[-1] == "targets: fit <= 60 s: mixed_bfloat16 holds (50.0 s)"
    # The minute is the target of 20,000 pairs' one epoch: said where the run was another.
    for pairs, epochs in ((2_000, 1), (20_000, 2)):
        assert fine_tune.report_lines({"runs": runs, "summary": fine_tune.summary(runs),
                                       "pairs": pairs, "epochs": epochs})[-1] == (
            "targets: fit <= 60 s (a target for 20,000 pairs, 1 epoch): mixed_bfloat16 holds "
            "(50.0 s)")
    assert lines[2].endswith("2.5000      2.0300           -")


# -- the runs --------------------------------------------------------------------------------------


def test_the_rounds_alternate_the_order_and_each_run_reads_the_written_pairs(
        monkeypatch, data_folder):
    """The orchestration, each run's process faked: the specs it is given and the TSVs they
    name, the order of the rounds, the preset's own loss taken once, what is printed."""
    folder, _ = data_folder
    specs, files = [], []

    def fake_worker(spec, backend, module, command):
        assert (backend, module, command) == ("tensorflow", "zoo.benchmarks.fine_tune",
                                              "zoo benchmark fine-tune")
        specs.append(spec)
        files.append({part: tatoeba.read_pairs(spec[part]) for part in ("train", "validation")})
        fit = {"float32": 80.0, "mixed_bfloat16": 64.0}[spec["precision"]] + len(specs)
        return {**_run(spec["precision"], spec["round"], fit, 2.5 + len(specs) / 1000,
                       before=2.9 if spec["loss_before"] else None)}

    monkeypatch.setattr(training, "_run_worker", fake_worker)
    waits = []
    monkeypatch.setattr(training, "_wait_for_quiet", waits.append)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    lines = []
    results = fine_tune.benchmark_fine_tune(pairs=30, rounds=3, threads=(2, 1), seed=5,
                                            data_dir=folder, printer=lines.append)
    assert [(s["round"], s["precision"], s["loss_before"]) for s in specs] == [
        (1, "float32", True), (1, "mixed_bfloat16", False), (2, "mixed_bfloat16", False),
        (2, "float32", False), (3, "float32", False), (3, "mixed_bfloat16", False)]
    assert len(waits) == 6
    assert all((s["preset"], s["seed"], s["epochs"], s["threads"]) == (
        "gru_bahdanau_cmn_en", 5, 1, [2, 1]) for s in specs)
    corpora = fine_tune.read_corpora("zh", folder)
    train, validation, drawn = fine_tune.draw_pairs(corpora, 30, 5)
    assert all(f == {"train": train, "validation": validation} for f in files)
    assert (results["pairs"], results["validation_pairs"], results["drawn"]) == (
        30, 1_000 + len(corpora["tatoeba_validation"]), drawn)
    assert results["drawn"]["train"] == {"Tatoeba cmn": 12, "tvsub": 15, "wmt_news_zh": 3}
    assert [run["round"] for run in results["runs"]] == [1, 1, 2, 2, 3, 3]
    assert results["summary"] == fine_tune.summary(results["runs"])
    assert lines[0] == fine_tune.header(results)
    assert lines[1].startswith(
        f"pairs: 12 Tatoeba cmn, 15 tvsub, 3 wmt_news_zh; validation "
        f"{results['validation_pairs']:,}: {len(corpora['tatoeba_validation'])} Tatoeba cmn "
        f"validation, 1,000 ntrex_validation (read and drawn in ")
    assert lines[2:8] == [
        f"round {s['round']}, {s['precision']}: fit {run['fit_seconds']:.1f} s, validation "
        f"loss {run['validation_loss_after']:.4f}" for s, run in zip(specs, results["runs"])]
    assert lines[8:] == fine_tune.report_lines(results)
    assert json.loads(json.dumps(results)) == results


def _tiny_preset(folder):
    from zoo import presets

    return presets.save(tiny_translator(MODELS["attention"]), folder / "tiny_zh_en",
                        metadata={"task": "translation"})


def _pairs_tsv(path, copies):
    fine_tune.write_tsv(path, [Pair(target, source) for _ in range(copies)
                               for source, target in zip(SOURCES, TARGETS)])


def test_a_run_fine_tunes_a_tiny_preset_from_its_files(tmp_path, monkeypatch):
    """``measure`` in this process (float32): two epochs of 120 pairs, two batches of 64 an
    epoch; the first step traces the step; the loss after is the fine-tuned one's."""
    monkeypatch.setattr(fine_tune, "MATMUL_SIZE", 256)
    preset = _tiny_preset(tmp_path)
    _pairs_tsv(tmp_path / "train.tsv", 20)
    _pairs_tsv(tmp_path / "validation.tsv", 1)
    spec = {"preset": str(preset), "train": str(tmp_path / "train.tsv"),
            "validation": str(tmp_path / "validation.tsv"), "precision": "float32",
            "seed": 0, "epochs": 2, "threads": None, "round": 1, "loss_before": True}
    run = fine_tune.measure(spec)
    # Every target's tokens and its [END]: "I read a book." is 5 words and 1.
    model = tiny_translator(MODELS["attention"])
    tokens = sum(len(row) + 1 for row in model.preprocessor.target_rows(TARGETS)) * 20
    assert (run["precision"], run["compute_dtype"], run["steps"], run["epochs"]) == (
        "float32", "float32", 4, 2)
    assert run["target_tokens_per_epoch"] == tokens
    assert run["target_tokens_per_second"] == pytest.approx(2 * tokens / run["fit_seconds"])
    assert run["first_step_seconds"] > 3 * run["median_step_seconds"] > 0
    assert run["fit_seconds"] > run["first_step_seconds"]
    assert 0 <= run["others_share_during_fit"] <= 1
    assert run["validation_loss_after"] < run["validation_loss_before"]
    assert math.log(len(model.preprocessor.target_vocabulary)) == pytest.approx(
        run["validation_loss_before"], rel=0.1)  # an untrained model: about uniform
    assert run["matmul_size"] == 256 and run["matmul_gflops"] > 0
    assert json.loads(json.dumps(run)) == run


@pytest.mark.slow
def test_both_precisions_fine_tune_in_processes_of_their_own(tmp_path, data_folder):
    """The whole command on a tiny preset and the small corpora: a process each, one
    thread, each run's figures in the table."""
    folder, _ = data_folder
    preset = _tiny_preset(tmp_path)
    lines = []
    results = fine_tune.benchmark_fine_tune(str(preset), pairs=60, threads=(1, 1), seed=1,
                                            data_dir=folder, wait_for_quiet=False,
                                            printer=lines.append)
    float32, mixed = results["runs"]
    assert (float32["precision"], mixed["precision"]) == ("float32", "mixed_bfloat16")
    assert (float32["compute_dtype"], mixed["compute_dtype"]) == ("float32", "bfloat16")
    assert float32["tensorflow_threads"] == mixed["tensorflow_threads"] == 1
    assert float32["steps"] == mixed["steps"] == 1  # 60 pairs, batches of 64
    assert float32["target_tokens_per_epoch"] == mixed["target_tokens_per_epoch"] > 60
    assert float32["validation_loss_before"] > 0 and mixed["validation_loss_before"] is None
    # One step of 3e-4 from the same weights: the same loss after, to bfloat16's rounding.
    assert mixed["validation_loss_after"] == pytest.approx(float32["validation_loss_after"],
                                                           rel=0.01)
    assert lines[-1].startswith("mixed_bfloat16 / float32 speed ")
    assert lines[-4] == fine_tune.COLUMNS
    assert lines[-3].startswith("float32             1") and lines[-2].startswith(
        "mixed_bfloat16      1")
