"""The model card (README.md) of every kind of preset, from its metadata alone: what a
preset ships with (``zoo.training``) and what re-scoring rewrites."""

from zoo.evaluation.metrics import DECODING_FAILURE_TARGETS, metric_of


def text_pipeline_line(vocabulary):
    """How the preset reads and writes text, for its model card."""
    if vocabulary.get("subwords"):
        return (f"Text: words split by `zoo.text`'s rules, then WordPiece pieces learned on the "
                f"training split (source {vocabulary['source']:,}, target "
                f"{vocabulary['target']:,} entries, every training character among them).")
    return (f"Text: whole words or characters (source {vocabulary['source']:,}, target "
            f"{vocabulary['target']:,} entries); others read as `[UNK]`.")


def translation_card(metadata):
    """The card of a translator or a generated task."""
    test, training = metadata["test"], metadata["training"]
    lines = [
        f"# {metadata['name']}",
        "",
        metadata.get("description", ""),
        "",
        f"Architecture: `{metadata['architecture']}`, {metadata['parameters']:,} parameters; "
        f"{metadata['source_language']} -> {metadata['target_language']}.",
        "",
        text_pipeline_line(metadata["vocabulary"]),
        "",
        f"## Test scores ({test['sentences']} examples never seen in training)",
        "",
    ]
    metric = metric_of(metadata)
    if metric == "bleu":
        lines += ["| decoding | BLEU | chrF |", "|---|---|---|"]
        for name in ("greedy", "beam5"):
            lines.append(f"| {name} | {test[name]['bleu']['score']} | "
                         f"{test[name]['chrf']['score']} |")
        if "unknown_outputs" in test["beam5"]:
            holes = test["beam5"]["unknown_outputs"]
            lines += ["", f"Outputs with an `[UNK]` (beam 5): {holes['count']} of "
                          f"{holes['examples']} ({holes['percent']}%)."]
        lines += _readability_lines(test["greedy"].get("attention_on_punctuation"))
        lines += ["", f"BLEU signature: `{test['beam5']['bleu']['signature']}`",
                  f"chrF signature: `{test['beam5']['chrf']['signature']}`"]
    else:
        lines += ["| decoding | exact match % | correct |", "|---|---|---|"]
        for name in ("greedy", "beam5"):
            result = test[name]["exact_match"]
            lines.append(f"| {name} | {result['score']} | "
                         f"{result['correct']} of {result['examples']} |")
    label = {"bleu": "BLEU", "exact_match": "exact match %"}[metric]
    lines += ["", f"{label} by source length (beam 5):", "",
              f"| source tokens | examples | {label} |", "|---|---|---|"]
    for bucket, values in test["beam5"][f"{metric}_by_source_length"].items():
        lines.append(f"| {bucket} | {values['sentences']} | {values[metric]} |")
    lines += _real_text_lines(metadata.get("real_text_test", {}))
    lines += _behaviour_lines(metadata.get("behaviour", {}))
    lines += _mix_lines(metadata["data"].get("mix"), training.get("validation_loss_by_epoch"),
                        metadata.get("terms"))
    lines += [""] + card_training_lines(metadata, sizes_key="pairs")
    if "decoding_retuned" in training:
        retuned = training["decoding_retuned"]
        lines.append(f"- beam length penalty re-chosen on validation from "
                     f"{retuned['length_penalties']} after training: `{retuned['command']}`")
    if "length_penalty" in metadata:
        lines.append(f"- beam length penalty: {metadata['length_penalty']}")
    if "search_defaults_validation" in metadata:
        lines += _search_defaults_lines(metadata)
    if "initial_preset" in training:
        start = training["initial_preset"]
        lines.append(f"- started from the preset `{start['name']}` (its vocabularies and "
                     f"weights, sha256 {start['weights_sha256'][:12]}...)")
    return "\n".join(lines + [""])


def _search_defaults_lines(metadata):
    """The card's search defaults and the validation figures they were chosen on."""
    validation = metadata["search_defaults_validation"]
    sizes = ", ".join(f"{name} {count}" for name, count in validation["sentences"].items())
    metric = metric_of(metadata)
    label = "BLEU" if metric == "bleu" else metric

    def named(options):
        return ", ".join(f"{k}={v}" for k, v in options.items()) or "none"

    chosen = {**metadata["output_rules"], **({"coverage_penalty": metadata["coverage_penalty"]}
                                             if metadata["coverage_penalty"] else {})}
    targets = ", ".join(f"{name.replace('_', ' ')} {target:g}%"
                        for name, target in DECODING_FAILURE_TARGETS.items())
    lines = [f"- search defaults (`translate`'s output rules and coverage penalty, issue 51): "
             f"{named(chosen)}; of the options below, those whose Tatoeba validation {label} "
             f"is within noise of none's (the 95% paired bootstrap interval of the gain "
             f"reaches 0), then those least beyond the failure targets ({targets}), then "
             f"those that keep none's {label} (else those that lose least), then the best "
             f"chrF on real text (beam 5; validation sentences: {sizes}; stutter: a word "
             f"or phrase three times in a row; repeated phrase: three words said twice where "
             f"the reference does not; short: under half the reference's words):", "",
             f"  | options | real-text chrF | Tatoeba {label} | gain on none (95%) | stutter "
             f"| repeated phrase | short |", "  |---|---|---|---|---|---|---|"]
    for result in validation["candidates"]:
        gain = result.get(f"{metric}_gain")
        interval = "{:+.2f} [{:+.2f}, {:+.2f}]".format(gain["gain"], *gain["interval_95"]) \
            if gain else ""
        lines.append(f"  | {named(result['options'])} | {result['chrf']} | {result[metric]} | "
                     f"{interval} | {result['stutter']}% | {result['repeated_phrase']}% | "
                     f"{result['short']}% |")
    return lines + [""]


def _real_text_lines(sets):
    """The card's scores on real text (news, chat), beam 5, and by source length."""
    if not sets:
        return []
    lines = ["", "## Real text (beam 5; sets never used in training or validation)", "",
             "| test set | sentences | chrF | BLEU | length ratio | outputs with a made-up word |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {name} | {result['sentences']} | {result['chrf']} | {result['bleu']} | "
              f"{result['length_ratio']} | {result['made_up_words']['percent']}% |"
              for name, result in sets.items()]
    for name, result in sets.items():
        lines += ["", f"{name} by source length (tokens):", "",
                  "| source tokens | sentences | chrF | BLEU | length ratio |",
                  "|---|---|---|---|---|"]
        lines += [f"| {bucket} | {values['sentences']} | {values['chrf']} | {values['bleu']} | "
                  f"{values['length_ratio']} |" for bucket, values in result["by_source_length"].items()]
    signatures = next(iter(sets.values()))
    return lines + ["", f"Signatures: `{signatures['bleu_signature']}`, "
                        f"`{signatures['chrf_signature']}`"]


def _mix_lines(mix, curve, terms):
    """The card's training data: each corpus of the mix with its licence, the terms of
    use they set, and the validation curve."""
    if not mix:
        return []
    lines = ["", "## Training data", "",
             "| corpus | domain | pairs kept | taken per epoch | licence |", "|---|---|---|---|---|"]
    lines += [f"| [{name}]({corpus['url']}) | {corpus['domain']} | {corpus['pairs']:,}"
              f"{_pool_note(corpus.get('pool'))} | x {corpus['weight']} | {corpus['licence']} |"
              for name, corpus in mix.items()]
    if terms:
        lines += ["", f"**Terms of use**: {terms}."]
    if curve:
        lines += ["", "Validation loss by epoch: " + ", ".join(map(str, curve)) + "."]
    return lines


def _pool_note(pool):
    """A corpus trained from a subsample (a pack's budget): each epoch drew its share of
    the corpus from this pool."""
    if not pool:
        return ""
    return f" (trained from a pool of {pool['pairs']:,} of them, drawn with seed {pool['seed']})"


def _readability_lines(on_punctuation):
    """The card's line on how often the attention cannot be read as an alignment."""
    if on_punctuation is None:
        return []
    return ["", f"Attention on punctuation (greedy, word level): of the {on_punctuation['words']:,} "
                f"produced words that are not punctuation, {on_punctuation['percent']}% have their "
                f"strongest attention weight on a source word made only of punctuation (first "
                f"words: {on_punctuation['first_word_percent']}%); such rows do not read as "
                f"alignments (`zoo.evaluation.attention_on_punctuation`)."]


def _behaviour_lines(behaviour):
    """The card's section on input written by hand (teaching tasks)."""
    if not behaviour:
        return []
    lines = ["", "## Input written by hand", "",
             "Typed one by one the way people write, never generated, in no training data "
             "(`zoo.data.written_by_hand`; beam 5):", "",
             "| check | passed | of | % |", "|---|---|---|---|"]
    for check, result in behaviour.items():
        passed = result["refused"] if check.endswith("refused") else result["correct"]
        lines.append(f"| {check} | {passed} | {result['examples']} | {result['percent']} |")
    misses = [(check, miss) for check, result in behaviour.items()
              for miss in result.get("wrong", []) + result.get("answered", [])]
    lines += [""] if misses else []
    for check, (text, answer, *expected) in misses:
        lines.append(f"- {check}: `{text}` gave `{answer}`"
                     + (f", not `{expected[0]}`" if expected else ""))
    return lines


def language_model_card(metadata):
    """The card of a character language model."""
    lines = [
        f"# {metadata['name']}", "", metadata.get("description", ""), "",
        f"Architecture: `{metadata['architecture']}`, {metadata['parameters']:,} parameters, "
        f"{metadata['vocabulary']['characters']} characters.", "",
        "## Scores (text read in one pass, state carried)", "",
        "| split | characters | nats/char | bits/char |", "|---|---|---|---|",
    ]
    for split in ("validation", "test"):
        result = metadata[split]
        lines.append(f"| {split} | {result['characters']:,} | {result['nats_per_char']} | "
                     f"{result['bits_per_char']} |")
    lines += [
        "", "Sample (`model.generate(\"ROMEO:\", 300, temperature=0.8, seed=0)`):", "", "```",
        "ROMEO:" + metadata["sample"], "```", "",
    ] + card_training_lines(metadata, sizes_key="characters")
    return "\n".join(lines + [""])


def classifier_card(metadata):
    """The card of a text classifier."""
    lines = [
        f"# {metadata['name']}", "", metadata.get("description", ""), "",
        f"Architecture: `{metadata['architecture']}`, {metadata['parameters']:,} parameters, "
        f"labels {', '.join(metadata['labels'])}.", "",
        "## Scores", "", "| split | sentences | accuracy % |", "|---|---|---|",
    ]
    for split in ("validation", "test"):
        lines.append(f"| {split} | {metadata[split]['sentences']} | {metadata[split]['accuracy']} |")
    by_seed = metadata["training"].get("best_val_accuracy_by_seed", {})
    if len(by_seed) > 1:
        lines += ["", f"Seeds trained (best validation accuracy %): "
                      f"{', '.join(f'{s}: {a}' for s, a in by_seed.items())}; the best on "
                      f"validation, seed {metadata['training']['seed']}, ships."]
    if "behaviour" in metadata:
        lines += ["", "## Behaviour", "",
                  "Short sentences built from templates, one capability each "
                  "(`zoo.data.sentiment_behaviour`, after CheckList; none is in the training "
                  "data, nor are their words in the templated training examples):", "",
                  "| capability | passed | of | % |", "|---|---|---|---|"]
        for capability, result in metadata["behaviour"].items():
            lines.append(f"| {capability} | {result['passed']} | {result['cases']} | "
                         f"{result['percent']} |")
    lines += [""] + card_training_lines(metadata, sizes_key="sentences")
    return "\n".join(lines + [""])


# -- what every card says -----------------------------------------------------------------


def card_training_lines(metadata, sizes_key):
    """The model card's "Training" section (every kind of preset)."""
    training, data = metadata["training"], metadata["data"]
    return [
        "## Training",
        "",
        f"- command: `{training['command']}`",
        f"- data: {data.get('file') or data.get('generator') or 'the mix above'} "
        f"({data[sizes_key]}); split {data['split']}",
        f"- epochs: {training['epochs_run']} (best {training['best_epoch']}), wall time "
        f"{training['wall_time_seconds'] / 60:.0f} min on {training['machine']}",
        f"- weights stored as {metadata['weights_dtype']}; file size "
        f"{metadata.get('size_bytes', 0) / 1e6:.1f} MB",
    ] + ([f"- checkpoint averaging: {averaging_summary(training['checkpoint_averaging'])}"]
         if "checkpoint_averaging" in training else []) + (
        [f"- stopped at its deadline in epoch {training['stopped_at_deadline']['epoch']}, after "
         f"{training['stopped_at_deadline']['steps']} of its steps"]
        if "stopped_at_deadline" in training else []) + (
        [f"- note: {training['note']}"] if "note" in training else [])


def averaging_summary(averaging):
    """Checkpoint averaging's choice in one line (``driver._average_if_better``'s record)."""
    epochs, count = averaging["epochs_averaged"], averaging["average_last"]
    ran = f"; only {len(epochs)} epochs ran" if len(epochs) < count else ""
    figures = ", ".join(f"{name} {values['average']} averaged, {values['final']} final"
                        for name, values in averaging.items() if name.startswith("val_"))
    ships = {"average": "the average ships", "final": "the final weights ship"}[
        averaging["shipped"]]
    return (f"the mean of the weights of epochs {', '.join(map(str, epochs))} (average_last "
            f"{count}{ran}) against the final weights: {figures}; {ships} (chosen on "
            f"{averaging['chosen_by']})")


# The card of each kind of model (``zoo.models.KINDS``), from a preset's metadata.
CARDS = {"translation": translation_card, "language_model": language_model_card,
         "classifier": classifier_card}
