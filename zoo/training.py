"""Training a preset: a recipe (hyper-parameters as data) in, a preset out.

A recipe is a JSON file in ``training/recipes/`` (or any path). ``train(recipe)``
reads the corpus, splits it, builds the vocabularies from the training split only,
trains the model with ``zoo.training_loop.fit`` (progress lines, TensorBoard logs,
early stopping on the validation loss with the best weights restored, checkpoints
to resume from, any ``tf.distribute`` strategy), scores the result on the test
split, and writes the preset with its metadata and model card.
"""

import importlib
import json
import os
import platform
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import zoo.models
from zoo import evaluation, presets, training_loop
from zoo.data import generated, tatoeba, written_by_hand
from zoo.text import END_ID, START_ID, TranslationPreprocessor, Vocabulary, tokenize
from zoo.text.vocabulary import pad_batch


RECIPES_DIR = presets.shipped_folder("recipes", "training/recipes")
OTHER_LOOPS = {"language_modeling": "zoo.training_lm",
               "classification": "zoo.training_classifier"}


def load_recipe(name_or_path):
    path = Path(name_or_path)
    if not path.suffix:
        path = RECIPES_DIR / f"{name_or_path}.json"
    if not path.is_file():
        known = sorted(p.stem for p in RECIPES_DIR.glob("*.json"))
        raise FileNotFoundError(
            f"Recipe {str(name_or_path)!r} not found. Known recipes: {', '.join(known) or 'none'}."
        )
    recipe = json.loads(path.read_text(encoding="utf-8"))
    recipe.setdefault("name", path.stem)
    return recipe


# -- data ----------------------------------------------------------------------------


def pair_sides(pairs, source_language):
    """(sources, targets) as strings: English is the source when source_language is 'en'."""
    english_is_source = source_language == "en"
    sources = [p.english if english_is_source else p.other for p in pairs]
    targets = [p.other if english_is_source else p.english for p in pairs]
    return sources, targets


def read_splits(recipe, data_file=None, data_dir=None):
    """Train/validation/test (sources, targets) from the recipe's corpus or a user's TSV."""
    if recipe["corpus"] in generated.TASKS:
        if data_file:
            raise ValueError(f"{recipe['name']} trains on data the project generates "
                             f"({recipe['corpus']}); it takes no --data file.")
        options = {"typed_share": recipe["typed_share"]} if "typed_share" in recipe else {}
        return generated.splits(recipe["corpus"], recipe["examples"], recipe.get("seed", 0),
                                **options)
    pairs = tatoeba.read_pairs(data_file) if data_file else tatoeba.load(recipe["corpus"], data_dir)
    return {
        name: pair_sides(subset, recipe["source_language"])
        for name, subset in tatoeba.split(pairs).items()
    }


def preset_splits(name_or_directory, data_dir=None):
    """The train/validation/test splits a preset was trained and scored on."""
    metadata = presets.describe(name_or_directory)
    # A user's TSV or a tfds corpus: its splits cannot be rebuilt from the metadata.
    rebuildable = "url" in metadata.get("data", {}) or "generator" in metadata.get("data", {})
    if not rebuildable or "recipe" not in metadata.get("training", {}):
        raise ValueError(
            f"{name_or_directory} was not trained by `zoo train` on a Tatoeba corpus or "
            "generated data; only "
            "such presets can be re-scored or benchmarked on their test split."
        )
    return read_splits(metadata["training"]["recipe"], data_dir=data_dir)


def read_tfds_splits(dataset_name):
    """Splits and languages of a tensorflow-datasets translation corpus.

    The dataset's supervised keys give the direction (``ted_hrlr_translate/pt_to_en``:
    Portuguese to English). Its own train/validation/test splits are used.
    """
    import tensorflow_datasets as tfds

    builder = tfds.builder(dataset_name)
    source_key, target_key = builder.info.supervised_keys
    splits = {}
    for ours, theirs in (("train", "train"), ("validation", "validation"), ("test", "test")):
        dataset = tfds.load(dataset_name, split=theirs, as_supervised=True)
        pairs = [(s.decode("utf-8"), t.decode("utf-8")) for s, t in tfds.as_numpy(dataset)]
        splits[ours] = ([s for s, _ in pairs], [t for _, t in pairs])
    return splits, source_key, target_key


def make_dataset(model, sources, targets, batch_size, shuffle, max_tokens=None, seed=0):
    """Batches ``((source, [START] target), target [END])``, bucketed by length."""
    source_rows = model.preprocessor.source_rows(sources)
    target_rows = model.preprocessor.target_rows(targets)
    keep = [
        i for i in range(len(source_rows))
        if source_rows[i] and (max_tokens is None or max(len(source_rows[i]), len(target_rows[i])) <= max_tokens)
    ]

    def batch_of(batch):
        sources_ids = pad_batch([source_rows[i] for i in batch])
        decoder_in = pad_batch([[START_ID] + target_rows[i] for i in batch])
        decoder_out = pad_batch([target_rows[i] + [END_ID] for i in batch])
        return (sources_ids, decoder_in), decoder_out

    spec = tf.TensorSpec([None, None], tf.int32)
    return bucketed_dataset(keep, lambda i: len(target_rows[i]), batch_of, ((spec, spec), spec),
                            batch_size, shuffle, seed)


def bucketed_dataset(indices, length_of, batch_of, output_signature, batch_size, shuffle, seed=0):
    """An ``EpochData`` of the examples ``indices`` in batches of similar length.

    Sorting by length inside shuffled chunks keeps padding low without making every
    epoch see the batches in the same order; ``batch_of(indices)`` builds one batch.
    """
    rng = np.random.default_rng(seed)
    order = np.array(indices)
    if shuffle:
        order = rng.permutation(order)
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=length_of)
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]

    def batches_of_pass(index):
        order = range(len(batches))
        if shuffle:  # pass k's order: the k-th draw after the chunks' (one random stream)
            replay = np.random.default_rng(seed)
            replay.permutation(len(indices))
            for _ in range(index + 1):
                order = replay.permutation(len(batches))
        for i in order:
            yield batch_of(batches[i])

    return training_loop.EpochData(batches_of_pass, len(batches), output_signature)


def tsv_dataset(model, path, batch_size=64, shuffle=True):
    """A ``fit``-ready dataset from a TSV of pairs (English first), in the model's direction.

    The model's vocabularies are kept: a word they lack is spelled in pieces (only a
    character never seen in training becomes ``[UNK]``).
    """
    sources, targets = pair_sides(tatoeba.read_pairs(path), model.source_language)
    return make_dataset(model, sources, targets, batch_size, shuffle=shuffle).dataset()


# -- model -----------------------------------------------------------------------------


def build_model(recipe, preprocessor):
    model_class = getattr(zoo.models, recipe["model"])
    model = model_class(
        recipe["source_language"],
        recipe["target_language"],
        len(preprocessor.source_vocabulary),
        len(preprocessor.target_vocabulary),
        **recipe.get("model_config", {}),
    )
    model.build()
    model.set_preprocessor(preprocessor)
    return model


def build_preprocessor(recipe, train_split):
    """The text pipeline, its vocabularies learned from the training split only: WordPiece
    pieces of the recipe's ``vocabulary`` sizes, or (``"subwords": false``) whole words
    seen at least ``min_count`` times."""
    settings = recipe.get("vocabulary", {})
    languages = recipe["source_language"], recipe["target_language"]
    max_source_length = recipe.get("model_config", {}).get("max_source_length", 64)
    task_rules = generated.TEXT_RULES.get(recipe["corpus"], {})
    if settings.get("subwords", False):
        return TranslationPreprocessor.train(*train_split, *languages, settings["source_size"],
                                             settings["target_size"], max_source_length,
                                             **task_rules)
    source, target = (
        Vocabulary.build([tokenize(t, language) for t in texts], settings.get("min_count", 2))
        for language, texts in zip(languages, train_split)
    )
    return TranslationPreprocessor(*languages, source, target, max_source_length, subwords=False,
                                   **task_rules)


def adam(learning_rate, ema_momentum=None, clipnorm=1.0):
    """Adam with gradient clipping; with ``ema_momentum`` (a recipe's key) it also keeps an
    exponential moving average of the weights (Polyak averaging), which
    ``standard_callbacks`` swaps in for validation, early stopping and the shipped preset."""
    averaging = {"use_ema": True, "ema_momentum": ema_momentum} if ema_momentum else {}
    return keras.optimizers.Adam(learning_rate, clipnorm=clipnorm, **averaging)


def compile_for_training(model, learning_rate=1e-3, clipnorm=1.0, ema_momentum=None):
    """Adam and the masked loss: padding positions (id 0) do not count."""
    model.compile(
        optimizer=adam(learning_rate, ema_momentum, clipnorm),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    return model


# -- evaluation ----------------------------------------------------------------------------


def metric_of(metadata_or_recipe):
    """The metric a sequence-to-sequence preset is judged by: BLEU unless it says otherwise."""
    return metadata_or_recipe.get("metric", "bleu")


def score_translations(model, sources, references, beam_size=1, metric="bleu"):
    hypotheses = model.translate(sources, beam_size=beam_size, check_outputs=False)
    target = model.target_language
    if metric == "exact_match":
        return {
            "exact_match": evaluation.exact_match(hypotheses, references),
            "exact_match_by_source_length": evaluation.by_source_length(
                sources, hypotheses, references, model.source_language,
                lambda h, r: evaluation.exact_match(h, r)["score"], "exact_match"),
        }, hypotheses
    return {
        "bleu": evaluation.bleu(hypotheses, references, target),
        "chrf": evaluation.chrf(hypotheses, references),
        "unknown_outputs": evaluation.unknown_outputs(hypotheses),
        "bleu_by_source_length": evaluation.bleu_by_source_length(
            sources, hypotheses, references, model.source_language, target
        ),
    }, hypotheses


LENGTH_PENALTIES = (0.0, 0.6, 1.0, 1.5, 2.0)


def choose_length_penalty(model, sources, references, candidates=LENGTH_PENALTIES, beam_size=5,
                          metric="bleu"):
    """The GNMT alpha that scores best on the validation split (never the test split)."""
    results = {}
    for alpha in candidates:
        model.length_penalty = alpha
        hypotheses = model.translate(sources, beam_size=beam_size, check_outputs=False)
        results[alpha] = evaluation.sequence_score(metric, hypotheses, references,
                                                   model.target_language)
    model.length_penalty = max(results, key=results.get)
    return results


# -- the loop --------------------------------------------------------------------------------


def train(recipe, out_dir=None, epochs=None, data_file=None, data_dir=None, log_dir=None,
          command=None, tfds_name=None, printer=print, options=None):
    """Train a preset from a recipe; returns the preset directory.

    By default on the recipe's corpus into ``saved_models/NAME``; with ``data_file``
    (a TSV of pairs) or ``tfds_name`` (a tensorflow-datasets translation corpus) the
    same architecture is trained on other data and ``out_dir`` is required.
    ``options`` (``training_loop.Options``): the ``tf.distribute`` strategy and the
    checkpoints to resume from. Language models and classifiers have their own
    recipes-to-presets code (``zoo.training_lm``, ``zoo.training_classifier``); all
    three train with ``zoo.training_loop.fit``.
    """
    options = options or training_loop.Options()
    if recipe.get("task") in OTHER_LOOPS:
        loop = importlib.import_module(OTHER_LOOPS[recipe["task"]])
        if tfds_name:
            raise ValueError(f"--tfds applies to translation recipes; {recipe['name']} is "
                             f"a {recipe['task']} recipe.")
        directory = loop.train(recipe, out_dir=out_dir, epochs=epochs, data_file=data_file,
                               data_dir=data_dir, log_dir=log_dir, command=command,
                               printer=printer, options=options)
    else:
        directory = _train_seq2seq(recipe, out_dir, epochs, data_file, data_dir, log_dir, command,
                                   tfds_name, printer, options)
    options.remove_checkpoints()  # the preset is written: a new run starts afresh
    return directory


def _train_seq2seq(recipe, out_dir, epochs, data_file, data_dir, log_dir, command, tfds_name,
                   printer, options):
    started = time.time()
    if (data_file or tfds_name) and not out_dir:
        raise ValueError("Training on other data needs an output directory (--out DIR).")
    if tfds_name:
        splits, source_language, target_language = read_tfds_splits(tfds_name)
        recipe = dict(recipe, source_language=source_language, target_language=target_language,
                      corpus=f"tfds:{tfds_name}")
    else:
        splits = read_splits(recipe, data_file, data_dir)
    preprocessor = build_preprocessor(recipe, splits["train"])
    source_vocabulary, target_vocabulary = (preprocessor.source_vocabulary,
                                            preprocessor.target_vocabulary)
    keras.utils.set_random_seed(recipe.get("seed", 0))
    with options.scope():
        model = build_model(recipe, preprocessor)
        compile_for_training(model, recipe.get("learning_rate", 1e-3),
                             ema_momentum=recipe.get("ema_momentum"))
    printer(
        f"{recipe['name']}: {len(splits['train'][0])} training pairs, vocabularies "
        f"{len(source_vocabulary)} / {len(target_vocabulary)}, {model.count_params():,} parameters"
    )
    val_losses = _fit(model, recipe, splits, epochs, log_dir, options,
                      run={"epochs": epochs, "data": str(data_file or tfds_name or "")})
    metric = metric_of(recipe)
    metadata = {
        "task": recipe.get("task", "translation"),
        "metric": metric,
        "description": recipe.get("description", ""),
        "architecture": recipe["model"],
        "source_language": recipe["source_language"],
        "target_language": recipe["target_language"],
        "data": _data_description(recipe, data_file, splits),
        "vocabulary": {"source": len(source_vocabulary), "target": len(target_vocabulary),
                       **recipe.get("vocabulary", {"min_count": 2}),
                       "pieces": "WordPiece (zoo.text.wordpiece)" if preprocessor.subwords
                       else "whole words"},
        "training": {
            **training_record(recipe, command, started, len(val_losses),
                              int(np.argmin(val_losses)) + 1),
            "best_val_loss": round(float(min(val_losses)), 4),
        },
        f"validation_{metric}": _tune_decoding(model, *splits["validation"], metric, printer),
        "length_penalty": model.length_penalty,
        "weights_dtype": recipe.get("weights_dtype", "float32"),
    }
    out_dir = Path(out_dir or presets.presets_root() / recipe["name"])
    return _score_and_ship(model, out_dir, metadata, splits["test"], printer)


def retune_decoding(directory, data_dir=None, printer=print):
    """Re-choose the length penalty of a trained preset on its validation split and
    re-score its test split; the weights and the training record stay as they are."""
    directory = Path(directory)
    splits = preset_splits(directory, data_dir)
    metadata = presets.describe(directory)
    recipe = metadata["training"]["recipe"]
    model = presets.load(directory)
    metric = metric_of(metadata)
    metadata[f"validation_{metric}"] = _tune_decoding(model, *splits["validation"], metric,
                                                      printer)
    metadata["length_penalty"] = model.length_penalty
    metadata["training"]["decoding_retuned"] = {
        "command": f"zoo train {recipe['name']} --retune-decoding",
        "length_penalties": list(LENGTH_PENALTIES),
    }
    return _score_and_ship(model, directory, metadata, splits["test"], printer)


def _fit(model, recipe, splits, epochs, log_dir, options, run):
    """Training with early stopping (best weights kept); returns the validation losses."""
    batch_size = recipe.get("batch_size", 64)
    train_data = make_dataset(model, *splits["train"], batch_size, shuffle=True,
                              max_tokens=recipe.get("max_train_tokens"), seed=recipe.get("seed", 0))
    validation_data = make_dataset(model, *splits["validation"], batch_size, shuffle=False)
    callbacks = standard_callbacks(recipe, log_dir, patience=3)
    history = training_loop.fit(model, train_data, epochs or recipe.get("epochs", 30),
                                validation_data.dataset(), callbacks, {"recipe": recipe, **run},
                                options)
    return history["val_loss"]


def standard_callbacks(recipe, log_dir, patience, monitor="val_loss", reduce_on_plateau=True):
    """The trainers' Keras callbacks: early stopping on ``monitor`` with the best weights
    restored (after the recipe's ``patience`` epochs without progress), the learning rate
    halved after one such epoch (unless the recipe schedules it), and TensorBoard logs.
    With the recipe's ``ema_momentum`` (see ``adam``), the averaged weights are validated,
    and they are the weights that early stopping keeps: they are swapped in at the end
    of every epoch, before the callbacks after them see the model."""
    mode = "max" if monitor.endswith("accuracy") else "min"
    averaging = bool(recipe.get("ema_momentum"))
    callbacks = [keras.callbacks.SwapEMAWeights(swap_on_epoch=True)] if averaging else []
    callbacks.append(keras.callbacks.EarlyStopping(monitor=monitor, mode=mode, restore_best_weights=True,
                                                   patience=recipe.get("patience", patience)))
    if reduce_on_plateau:
        callbacks.append(keras.callbacks.ReduceLROnPlateau(monitor=monitor, mode=mode, factor=0.5,
                                                           patience=1))
    log_dir = log_dir or Path("runs") / recipe["name"]
    return callbacks + [keras.callbacks.TensorBoard(log_dir=str(log_dir))]


def _tune_decoding(model, sources, references, metric, printer):
    """Pick the beam-search length penalty on validation; the metric of greedy and beam 5 there."""
    alpha_results = choose_length_penalty(model, sources, references, metric=metric)
    printer(f"length penalty on validation {metric}: {alpha_results} -> {model.length_penalty}")
    greedy = evaluation.sequence_score(metric, model.translate(sources, check_outputs=False),
                                       references, model.target_language)
    return {"greedy": greedy, "beam5": alpha_results[model.length_penalty]}


def training_record(recipe, command, started, epochs_run, best_epoch):
    """How a preset was trained, for its metadata."""
    return {
        "recipe": recipe,
        "command": command or "zoo train " + recipe["name"],
        "epochs_run": epochs_run,
        "best_epoch": best_epoch,
        "wall_time_seconds": round(time.time() - started),
        "machine": machine(),
    }


def card_training_lines(metadata, sizes_key):
    """The model card's "Training" section (every kind of preset)."""
    training, data = metadata["training"], metadata["data"]
    return [
        "## Training",
        "",
        f"- command: `{training['command']}`",
        f"- data: {data.get('file') or data['generator']} ({data[sizes_key]}); split "
        f"{data['split']}",
        f"- epochs: {training['epochs_run']} (best {training['best_epoch']}), wall time "
        f"{training['wall_time_seconds'] / 60:.0f} min on {training['machine']}",
        f"- weights stored as {metadata['weights_dtype']}; file size "
        f"{metadata.get('size_bytes', 0) / 1e6:.1f} MB",
    ]


def machine():
    gpu = "GPU" if tf.config.list_physical_devices("GPU") else "no GPU"
    return (f"{platform.machine()}, {os.cpu_count()} CPU cores, {platform.system()}; "
            f"TensorFlow {tf.__version__}, Keras {keras.__version__}; {gpu}")


def ship(model, out_dir, metadata, score, card):
    """Save a preset, score what ships, and save it again with its scores and card.

    What ships is scored -- the preset loaded back, its weights in the dtype they are
    stored in -- not the model in memory. ``score(shipped)`` returns the metadata to
    add (scores and ``headline``); ``card(metadata)`` writes the model card.
    """
    weights_dtype = metadata["weights_dtype"]
    directory = presets.save(model, out_dir, metadata=metadata, weights_dtype=weights_dtype)
    shipped = presets.load(directory)
    metadata = {**presets.describe(directory), **score(shipped)}
    presets.save(shipped, directory, metadata=metadata, card=card(metadata),
                 weights_dtype=weights_dtype)
    return directory


def _score_and_ship(model, out_dir, metadata, test_split, printer):
    """Ship the preset scored on the test split, greedy and beam 5."""
    test_sources, test_references = test_split
    metric = metric_of(metadata)

    def score(shipped):
        metrics = {}
        for name, beam in (("greedy", 1), ("beam5", 5)):
            result, _ = score_translations(shipped, test_sources, test_references,
                                           beam_size=beam, metric=metric)
            metrics[name] = result
            printer(f"test {name}: " + ", ".join(
                f"{key} {value['score']}" for key, value in result.items() if "score" in value))
        label = "BLEU" if metric == "bleu" else "exact match %"
        behaviour = _behaviour_of(shipped, metadata, printer)
        return {"test": {"sentences": len(test_sources), **metrics}, **behaviour,
                "headline": f"test {label} {metrics['beam5'][metric]['score']} (beam 5), "
                            f"{metrics['greedy'][metric]['score']} (greedy)"}

    return ship(model, out_dir, metadata, score, model_card)


def _behaviour_of(shipped, metadata, printer):
    """``{"behaviour": ...}`` on the input written by hand for a teaching task
    (``zoo.data.written_by_hand``), ``{}`` for the others."""
    task = metadata["training"]["recipe"]["corpus"]
    if task not in written_by_hand.TASKS:
        return {}
    behaviour = written_by_hand.score(shipped, task)
    printer(f"written by hand: {({k: v['percent'] for k, v in behaviour.items()})}")
    return {"behaviour": behaviour}


def record_behaviour(directory, printer=print):
    """Score a shipped teaching preset on the input written by hand and write the result
    into its metadata and card (for presets trained before the check existed); the
    weights are not touched."""
    metadata = presets.describe(directory)
    metadata.update(_behaviour_of(presets.load(directory), metadata, printer))
    return presets.rewrite_description(directory, metadata, model_card(metadata))


def _data_description(recipe, data_file, splits):
    if recipe["corpus"] in generated.TASKS:
        return {"generator": f"zoo.data.generated.{generated.TASKS[recipe['corpus']].__name__}",
                "split": generated.SPLIT_RULE[recipe["corpus"]],
                "pairs": {name: len(sides[0]) for name, sides in splits.items()}}
    if recipe["corpus"].startswith("tfds:"):
        source = {"file": recipe["corpus"], "split": "the dataset's own splits"}
    elif data_file:
        source = {"file": str(data_file), "sha256": presets.sha256(data_file)}
    else:
        info = tatoeba.CORPORA[recipe["corpus"]]
        source = {"file": f"tatoeba/{info['file']}", "url": info["url"], "sha256": info["sha256"],
                  "licence": "CC-BY 2.0 (France), Tatoeba contributors"}
    return {
        "split": "groups of pairs sharing a sentence on either side, 90/5/5 by hash "
                 "(zoo.data.tatoeba.split)",
        **source,
        "pairs": {name: len(sides[0]) for name, sides in splits.items()},
    }


def text_pipeline_line(vocabulary):
    """How the preset reads and writes text, for its model card."""
    if vocabulary.get("subwords"):
        return (f"Text: words split by `zoo.text`'s rules, then WordPiece pieces learned on the "
                f"training split (source {vocabulary['source']:,}, target "
                f"{vocabulary['target']:,} entries, every training character among them).")
    return (f"Text: whole words or characters (source {vocabulary['source']:,}, target "
            f"{vocabulary['target']:,} entries); others read as `[UNK]`.")


def model_card(metadata):
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
    lines += _behaviour_lines(metadata.get("behaviour", {}))
    lines += [""] + card_training_lines(metadata, sizes_key="pairs")
    if "decoding_retuned" in training:
        retuned = training["decoding_retuned"]
        lines.append(f"- beam length penalty re-chosen on validation from "
                     f"{retuned['length_penalties']} after training: `{retuned['command']}`")
    if "length_penalty" in metadata:
        lines.append(f"- beam length penalty: {metadata['length_penalty']}")
    return "\n".join(lines + [""])


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
    for check, result in behaviour.items():
        for text, answer, *expected in result.get("wrong", []) + result.get("answered", []):
            lines.append(f"- {check}: `{text}` gave `{answer}`"
                         + (f", not `{expected[0]}`" if expected else ""))
    return lines

