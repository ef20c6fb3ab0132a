"""zoo.evaluation.cards: the model card of every kind, from a preset's metadata."""

import pytest

import zoo
from zoo import presets
from zoo.evaluation import cards

@pytest.mark.parametrize("name", zoo.list_models())
def test_a_shipped_presets_card_is_the_one_its_metadata_renders(name):
    from zoo.models import preset_model

    card = cards.CARDS[preset_model.preset_kind(name)](presets.describe(name))
    assert card == (presets.resolve(name) / "README.md").read_text(encoding="utf-8")


def test_the_card_of_a_mix_lists_its_corpora_terms_curve_and_real_text_scores():
    from zoo.data import parallel

    metadata = presets.describe("gru_bahdanau_cmn_en")
    metadata["data"] = {"split": "Tatoeba's and the real-text sets", "pairs": {"train": 9},
                        "mix": {"tvsub": {**parallel.describe("tvsub"), "pairs": 1784171,
                                          "weight": 0.04}}}
    metadata["terms"] = "tvsub: " + parallel.CORPORA["tvsub"].terms
    metadata["training"]["validation_loss_by_epoch"] = [3.1, 2.9]
    bucket = {"chrf": 30.5, "bleu": 8.25, "length_ratio": 0.93, "sentences": 997}
    metadata["real_text_test"] = {"ntrex_test": {
        **bucket, "by_source_length": {"31-50": bucket},
        "made_up_words": {"percent": 2.5}, "bleu_signature": "nrefs:1|tok:13a",
        "chrf_signature": "nrefs:1|nc:6"}}
    card = cards.translation_card(metadata)
    assert "| ntrex_test | 997 | 30.5 | 8.25 | 0.93 | 2.5% |" in card
    assert "| 31-50 | 997 | 30.5 | 8.25 | 0.93 |" in card
    assert ("| [tvsub](https://github.com/longyuewangdcu/tvsub) | TV-series subtitles, everyday "
            "dialogue | 1,784,171 | x 0.04 | CC BY-NC-ND 4.0") in card
    assert ("**Terms of use**: tvsub: research and non-commercial use only (CC BY-NC-ND 4.0)."
            in card)
    assert "Validation loss by epoch: 3.1, 2.9." in card
    assert "- data: the mix above" in card


def test_the_translators_card_states_the_choice():
    metadata = presets.describe("gru_bahdanau_cmn_en")
    metadata["training"]["checkpoint_averaging"] = {
        "average_last": 5, "epochs_averaged": [8, 9, 10, 11, 12],
        "val_loss": {"final": 2.31, "average": 2.2874}, "chosen_by": "val_loss",
        "shipped": "average"}
    card = cards.translation_card(metadata)
    assert ("\n- checkpoint averaging: the mean of the weights of epochs 8, 9, 10, 11, 12 "
            "(average_last 5) against the final weights: val_loss 2.2874 averaged, 2.31 final; "
            "the average ships (chosen on val_loss)\n") in card
    assert card.count("checkpoint averaging") == 1
    del metadata["training"]["checkpoint_averaging"]
    assert "checkpoint averaging" not in cards.translation_card(metadata)


def test_a_classifiers_choice_names_its_accuracy():
    line = cards.averaging_summary({
        "average_last": 3, "epochs_averaged": [4, 5, 6],
        "val_loss": {"final": 0.41, "average": 0.43},
        "val_accuracy": {"final": 0.8, "average": 0.81}, "chosen_by": "val_accuracy",
        "shipped": "average"})
    assert line.endswith("val_loss 0.43 averaged, 0.41 final, val_accuracy 0.81 averaged, "
                         "0.8 final; the average ships (chosen on val_accuracy)")
