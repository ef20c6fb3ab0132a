"""Sequence-to-sequence presets: translators on Tatoeba pairs (or a user's TSV, or a
tensorflow-datasets corpus), and the character-level tasks whose data the project
generates (dates, addition).

Batches are bucketed by length (``batches.bucketed_dataset``); the loss is masked on
padding. After training, the beam-search length penalty is chosen on the validation
split; the shipped preset is scored on the test split, greedy and beam 5.
"""

import functools
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

import zoo.models
from zoo import _startup, evaluation, presets
from zoo.data import generated, parallel, tatoeba, written_by_hand
from zoo.models.losses import SmoothedCrossentropy
from zoo.text import END_ID, START_ID, TranslationPreprocessor, Vocabulary, tokenize
from zoo.text.vocabulary import pad_batch
from zoo.training import alignment, recipes, shipping
from zoo.training.batches import bucketed_dataset, mixed_dataset
from zoo.training.loop import Ids
from zoo.training.optimizer import adam
from zoo.training.task import Task

LENGTH_PENALTIES = (0.0, 0.6, 1.0, 1.5, 2.0)


# -- data ----------------------------------------------------------------------------------


def pair_sides(pairs, source_language):
    """(sources, targets) as strings: English is the source when source_language is 'en'."""
    english_is_source = source_language == "en"
    sources = [p.english if english_is_source else p.other for p in pairs]
    targets = [p.other if english_is_source else p.english for p in pairs]
    return sources, targets


def make_dataset(model, sources, targets, batch_size, shuffle, max_tokens=None, seed=0,
                 links=None, mix=None):
    """Batches ``((source, [START] target), target [END])``, bucketed by length; with
    ``links`` (per pair, ``(target piece, source piece)`` pairs: ``alignment``), the
    inputs also hold them as a 0/1 array ``[batch, target + 1, source]`` (the [END]
    row has none). ``mix`` (``[(pairs, weight)]``, consecutive parts of the pairs): each
    epoch draws each part by its weight (``batches.mixed_dataset``)."""
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
        if links is None:
            return (sources_ids, decoder_in), decoder_out
        linked = np.zeros(decoder_out.shape + sources_ids.shape[1:], np.int32)
        for row, i in enumerate(batch):
            for target, source in links[i]:
                linked[row, target, source] = 1
        return (sources_ids, decoder_in, linked), decoder_out

    spec = Ids()
    inputs = (spec, spec) if links is None else (spec, spec, Ids(rank=3))
    length_of = lambda i: len(target_rows[i])  # noqa: E731
    if mix:
        kept, groups, start = np.array(keep), [], 0
        for size, weight in mix:
            groups.append((kept[(kept >= start) & (kept < start + size)], weight))
            start += size
        return mixed_dataset(groups, length_of, batch_of, (inputs, spec), batch_size, seed)
    return bucketed_dataset(keep, length_of, batch_of, (inputs, spec), batch_size, shuffle, seed)


def read_pairs_file(model, path, unreadable=None):
    """A user's TSV of pairs, English first, as (sources, references) in the model's
    direction (``unreadable``: see ``zoo.data.utf8_lines``)."""
    return pair_sides(tatoeba.read_pairs(path, unreadable), model.source_language)


def tsv_dataset(model, path, batch_size=64, shuffle=True):
    """A ``fit``-ready dataset from a TSV of pairs (English first), in the model's direction.

    The model's vocabularies are kept: a word they lack is spelled in pieces (only a
    character never seen in training becomes ``[UNK]``).
    """
    sources, targets = read_pairs_file(model, path)
    return make_dataset(model, sources, targets, batch_size, shuffle=shuffle).dataset()


def compile_for_training(model, learning_rate=1e-3, clipnorm=1.0, ema_momentum=None,
                         label_smoothing=0.0):
    """Adam and the cross-entropy masked on padding (id 0), optionally label-smoothed."""
    model.compile(optimizer=adam(learning_rate, ema_momentum, clipnorm),
                  loss=SmoothedCrossentropy(label_smoothing))
    return model


# -- scores --------------------------------------------------------------------------------


def metric_of(metadata):
    """The metric a sequence-to-sequence preset is judged by: BLEU unless it says otherwise."""
    return metadata.get("metric", "bleu")


def score_translations(model, sources, references, beam_size=1, metric="bleu"):
    # Greedy translations of an attention model keep their alignments: how readable they
    # are is part of the score (the model card's "attention on punctuation").
    with_attention = beam_size == 1 and metric == "bleu" and model.has_attention
    hypotheses = model.translate(sources, beam_size=beam_size, check_outputs=False,
                                 return_attention=with_attention)
    readability = {}
    if with_attention:
        hypotheses, attentions = hypotheses
        readability = {"attention_on_punctuation": evaluation.attention_on_punctuation(
            sources, hypotheses, attentions, model.source_language, model.target_language)}
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
        **readability,
    }, hypotheses


def score_real_text(model, sources, references, known_words, printer, name, beam_size=5):
    """``evaluation.real_text_scores`` of a real-text test set (beam 5), and the outputs
    with a word found in no training text (``known_words``)."""
    hypotheses = model.translate(sources, beam_size=beam_size, check_outputs=False)
    result = evaluation.real_text_scores(sources, hypotheses, references, model.source_language,
                                         model.target_language)
    result["made_up_words"] = evaluation.made_up_words(hypotheses, known_words,
                                                       model.target_language)
    printer(f"test {name}, beam {beam_size}: chrF {result['chrf']}, BLEU {result['bleu']}, "
            f"length ratio {result['length_ratio']}, made-up words in "
            f"{result['made_up_words']['percent']}% of outputs")
    return result


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


# The search defaults a preset may ship with (issue 41), tried on validation: output
# rules (no repeated 3-gram of pieces; a floor on the length, a share of the source's
# pieces) and GNMT's coverage penalty (beam search, attention models), alone and together.
SEARCH_DEFAULT_CANDIDATES = (
    {}, {"no_repeat_ngram_size": 3}, {"min_length_ratio": 0.5},
    {"no_repeat_ngram_size": 3, "min_length_ratio": 0.5},
    {"no_repeat_ngram_size": 3, "min_length_ratio": 0.8},
    {"coverage_penalty": 0.2},
    {"no_repeat_ngram_size": 3, "min_length_ratio": 0.5, "coverage_penalty": 0.2})
# Sentences of each real-text validation set the defaults are tried on (``spread_sample``).
RULES_SAMPLE = 300


def spread_sample(sources, references, count):
    """``count`` pairs (all, when there are fewer) spread evenly over the set, first and
    last included: Tatoeba's files run from short sentences to long."""
    if len(sources) <= count:
        return list(sources), list(references)
    positions = np.linspace(0, len(sources) - 1, count).round().astype(int)
    return [sources[i] for i in positions], [references[i] for i in positions]


def _set_search_defaults(model, candidate):
    model.output_rules = {k: v for k, v in candidate.items() if k != "coverage_penalty"}
    model.coverage_penalty = candidate.get("coverage_penalty", 0.0)


def choose_search_defaults(model, textbook, real_text, metric="bleu", beam_size=5,
                           candidates=SEARCH_DEFAULT_CANDIDATES, printer=print):
    """Set the model's ``output_rules`` and ``coverage_penalty`` to the candidate with the
    best chrF on the real-text validation sets (``real_text``: ``{name: (sources,
    references)}``, long sentences among them) whose beam-5 ``metric`` on the textbook
    validation pairs (``textbook``: ``(sources, references)``) is not below that of no
    option; returns each candidate's figures (chrF, the metric,
    ``evaluation.decoding_failures``). A coverage penalty is tried on attention models
    only."""
    language = model.target_language
    sources = [s for pairs in real_text.values() for s in pairs[0]]
    references = [r for pairs in real_text.values() for r in pairs[1]]

    def translated(texts):
        return model.translate(texts, beam_size=beam_size, check_outputs=False)

    results = []
    for candidate in candidates:
        if candidate.get("coverage_penalty") and not model.has_attention:
            continue
        _set_search_defaults(model, candidate)  # the candidate alone, whatever was set before
        hypotheses = translated(sources)
        result = {"options": candidate,
                  "chrf": evaluation.chrf(hypotheses, references)["score"],
                  metric: evaluation.sequence_score(metric, translated(textbook[0]),
                                                    textbook[1], language),
                  **evaluation.decoding_failures(hypotheses, references, language)}
        printer(f"search options {candidate or 'none'}: real-text chrF {result['chrf']}, "
                f"textbook {metric} {result[metric]}, stutter {result['stutter']}%, repeated "
                f"phrase {result['repeated_phrase']}%, short {result['short']}%")
        results.append(result)
    floor = results[0][metric]  # no option: the textbook score the defaults may not lower
    allowed = [r for r in results if r[metric] >= floor]
    chosen = max(allowed, key=lambda r: r["chrf"])["options"]  # the first on ties
    _set_search_defaults(model, chosen)
    printer(f"search defaults chosen: {chosen or 'none'}")
    return results


def tune_decoding(model, sources, references, metric, printer):
    """Pick the beam-search length penalty on validation; the metric of greedy and beam 5 there."""
    alpha_results = choose_length_penalty(model, sources, references, metric=metric)
    printer(f"length penalty on validation {metric}: {alpha_results} -> {model.length_penalty}")
    greedy = evaluation.sequence_score(metric, model.translate(sources, check_outputs=False),
                                       references, model.target_language)
    return {"greedy": greedy, "beam5": alpha_results[model.length_penalty]}


# -- the tasks -----------------------------------------------------------------------------


class TranslationTask(Task):
    """A translator on a Tatoeba corpus, a user's TSV of pairs, or a tfds corpus."""

    preprocessor_class = TranslationPreprocessor
    model_method = "translate"

    def __init__(self, recipe, data_file=None, data_dir=None, printer=print, tfds_name=None):
        super().__init__(recipe, data_file, data_dir, printer)
        self.tfds_name = tfds_name

    @classmethod
    def on_tfds(cls, recipe, tfds_name, printer=print):
        """The task on a tensorflow-datasets translation corpus: its supervised keys give
        the direction (``ted_hrlr_translate/pt_to_en``), its own splits are used."""
        import tensorflow_datasets as tfds

        source_key, target_key = tfds.builder(tfds_name).info.supervised_keys
        return cls(recipe.replace(source_language=source_key, target_language=target_key,
                                  corpus=f"tfds:{tfds_name}"), printer=printer,
                   tfds_name=tfds_name)

    @property
    def data_name(self):
        return str(self.data_file or self.tfds_name or "")

    def read_splits(self):
        if self.tfds_name:
            return _tfds_splits(self.tfds_name)
        if self.recipe.mix and not self.data_file:
            return {"train": self.mixed_training_pairs(), **self.evaluation_splits()}
        if self.data_file:
            pairs = tatoeba.read_pairs(self.data_file)
        else:
            pairs = tatoeba.load(self.recipe.corpus, self.data_dir)
        return {name: pair_sides(subset, self.recipe.source_language)
                for name, subset in tatoeba.split(pairs).items()}

    # -- a mix of corpora (``recipe.mix``) ----------------------------------------------
    @property
    def other_language(self):
        """The language paired with English."""
        recipe = self.recipe
        return recipe.target_language if recipe.source_language == "en" else recipe.source_language

    @functools.cached_property
    def _tatoeba_splits(self):
        return tatoeba.split(tatoeba.load(self.recipe.corpus, self.data_dir))

    def _real_text_sets(self, role):
        return parallel.evaluation_sets(self.other_language, role, self.data_dir)

    def evaluation_splits(self):
        """Validation and test without the training corpora: for a mix, validation adds
        the language's real-text validation sets to Tatoeba's; the test stays Tatoeba's
        (the real-text tests are scored apart: ``real_text_tests``)."""
        if not self.recipe.mix or self.data_file:
            splits = self.read_splits()
            return {name: splits[name] for name in ("validation", "test")}
        validation = self._tatoeba_splits["validation"] + [
            pair for pairs in self._real_text_sets("validation").values() for pair in pairs]
        return {"validation": pair_sides(validation, self.recipe.source_language),
                "test": pair_sides(self._tatoeba_splits["test"], self.recipe.source_language)}

    def real_text_tests(self):
        """``{name: (sources, references)}``: the real-text test sets of the language."""
        return {name: pair_sides(pairs, self.recipe.source_language)
                for name, pairs in self._real_text_sets("test").items()}

    def mixed_training_pairs(self):
        """The training pairs of the mix, corpus after corpus in the recipe's order; none
        shares a sentence with Tatoeba's validation and test splits or a real-text set.
        ``mix_sizes`` records each corpus's share."""
        held_out = self._tatoeba_splits["validation"] + self._tatoeba_splits["test"] + [
            pair for role in ("validation", "test")
            for pairs in self._real_text_sets(role).values() for pair in pairs]
        corpora = parallel.training_pairs([n for n in self.recipe.mix if n != "tatoeba"],
                                          self.other_language, held_out, self.data_dir)
        corpora["tatoeba"] = self._tatoeba_splits["train"]
        self.mix_sizes = {name: len(corpora[name]) for name in self.recipe.mix}
        self.printer("training mix: " + ", ".join(
            f"{name} {size:,} pairs x {self.recipe.mix[name]}" for name, size in self.mix_sizes.items()))
        pairs = [pair for name in self.recipe.mix for pair in corpora[name]]
        return pair_sides(pairs, self.recipe.source_language)

    def _mix_parts(self):
        """``[(pairs, weight)]`` of the training split, for ``make_dataset``."""
        if not self.recipe.mix or self.data_file:
            return None
        return [(self.mix_sizes[name], weight) for name, weight in self.recipe.mix.items()]

    @functools.cached_property
    def initial_preset(self):
        """The preset a fine-tune starts from (``recipe.initial_preset``), or None."""
        name = self.recipe.initial_preset
        if name is None:
            return None
        model = zoo.load(name)
        metadata = model.preset_metadata
        expected = (self.recipe.model, self.recipe.source_language, self.recipe.target_language)
        found = (type(model).__name__, model.source_language, model.target_language)
        if found != expected:
            raise recipes.RecipeError(
                f"{self.recipe.name}: initial_preset {name!r} is {found[0]}, {found[1]} -> "
                f"{found[2]}; the recipe trains {expected[0]}, {expected[1]} -> "
                f"{expected[2]}.")
        self.printer(f"starting from the preset {name} ({metadata.get('headline', '')})")
        return model

    def build_preprocessor(self, splits):
        """WordPiece pieces of the recipe's ``vocabulary`` sizes, or (``"subwords": false``)
        whole words seen at least ``min_count`` times; a fine-tune keeps its preset's (a
        vocabulary learned again would differ: the WordPiece trainer is not
        deterministic, and the weights were trained on the preset's ids)."""
        if self.initial_preset is not None:
            return self.initial_preset.preprocessor
        recipe, settings = self.recipe, self.recipe.vocabulary
        languages = recipe.source_language, recipe.target_language
        max_source_length = recipe.model_config.get("max_source_length", 64)
        task_rules = generated.TEXT_RULES.get(recipe.corpus, {})
        if settings.get("subwords", False):
            return TranslationPreprocessor.train(
                *splits["train"], *languages, settings["source_size"], settings["target_size"],
                max_source_length, settings.get("min_character_count", 1), **task_rules)
        source, target = (
            Vocabulary.build([tokenize(t, language) for t in texts], settings.get("min_count", 2))
            for language, texts in zip(languages, splits["train"])
        )
        return TranslationPreprocessor(*languages, source, target, max_source_length,
                                       subwords=False, **task_rules)

    def build_model(self, preprocessor):
        recipe = self.recipe
        model = getattr(zoo.models, recipe.model)(
            recipe.source_language, recipe.target_language, len(preprocessor.source_vocabulary),
            len(preprocessor.target_vocabulary), **recipe.model_config)
        model.build()
        model.set_preprocessor(preprocessor)
        if self.initial_preset is not None:
            _copy_weights(self.initial_preset, model, recipe.initial_preset)
        return model

    def datasets(self, model, splits, seed):
        batch_size = self.recipe.batch_size
        links = (alignment.training_links(model.preprocessor, *splits["train"], self.printer)
                 if self.recipe.guided_alignment else None)
        return (make_dataset(model, *splits["train"], batch_size, shuffle=True,
                             max_tokens=self.recipe.max_train_tokens, seed=seed, links=links,
                             mix=self._mix_parts()),
                make_dataset(model, *splits["validation"], batch_size, shuffle=False))

    def training_view(self, model):
        if not self.recipe.guided_alignment:
            return model
        return alignment.GuidedAlignmentTraining(model, self.recipe.guided_alignment["weight"])

    def compile(self, model, steps_per_epoch, epochs):
        compile_for_training(model, self.recipe.learning_rate,
                             ema_momentum=self.recipe.ema_momentum,
                             label_smoothing=self.recipe.label_smoothing)

    def summary(self, splits, preprocessor, model):
        return (f"{self.recipe.name}: {len(splits['train'][0])} training pairs, vocabularies "
                f"{len(preprocessor.source_vocabulary)} / {len(preprocessor.target_vocabulary)}, "
                f"{model.count_params():,} parameters")

    def describe(self, model, splits, record):
        recipe, metric, preprocessor = self.recipe, self.recipe.metric, model.preprocessor
        return {
            "task": recipe.task,
            "metric": metric,
            "description": recipe.description,
            "architecture": recipe.model,
            "source_language": recipe.source_language,
            "target_language": recipe.target_language,
            "data": self.data_description(splits),
            "vocabulary": {"source": len(preprocessor.source_vocabulary),
                           "target": len(preprocessor.target_vocabulary), **recipe.vocabulary,
                           "pieces": "WordPiece (zoo.text.wordpiece)" if preprocessor.subwords
                           else "whole words"},
            "training": {**record, **self.initial_preset_record()},
            **self.choose_decoding(model, splits, metric),
            "weights_dtype": recipe.weights_dtype,
            **self.terms(),
        }

    def choose_decoding(self, model, splits, metric):
        """The decoding settings a preset ships with, chosen on validation: the length
        penalty, then (where the language has real-text validation sets) the default
        output rules and coverage penalty (``choose_search_defaults``); the metadata entries
        that record them. A preset re-tuned starts from none, so that its choice does not
        depend on the previous one."""
        _set_search_defaults(model, {})
        choices = {f"validation_{metric}": tune_decoding(model, *splits["validation"], metric,
                                                         self.printer),
                   "length_penalty": model.length_penalty}
        validation = self.search_defaults_validation()
        if validation:
            choices["search_defaults_validation"] = {
                "sentences": {"tatoeba_validation": len(validation[0][0]),
                              **{name: len(pairs[0]) for name, pairs in validation[1].items()}},
                "candidates": choose_search_defaults(model, *validation, metric,
                                                     printer=self.printer)}
            choices["output_rules"] = model.output_rules
            choices["coverage_penalty"] = model.coverage_penalty
        return choices

    def search_defaults_validation(self):
        """What the search defaults are chosen on: about 1,000 of Tatoeba's validation
        pairs and ``RULES_SAMPLE`` of each real-text validation set of the language (long
        sentences among them); None for a language with no such sets, or where they are
        not in the data folder (a mix needs them; a Tatoeba preset then keeps no rules)."""
        if self.data_file or self.tfds_name:
            return None
        try:
            real_text = self._real_text_sets("validation")
        except FileNotFoundError as missing:
            self.printer(f"search options left off: no real-text validation set to choose "
                         f"them on ({missing})")
            return None
        if not real_text:
            return None
        source = self.recipe.source_language
        textbook = pair_sides(self._tatoeba_splits["validation"], source)
        return (spread_sample(*textbook, 1000),
                {name: spread_sample(*pair_sides(pairs, source), RULES_SAMPLE)
                 for name, pairs in real_text.items()})

    def terms(self):
        """``{"terms": ...}`` where a corpus of the mix restricts the preset's use (TVsub:
        CC BY-NC-ND 4.0, non-commercial); ``zoo list``, ``zoo info`` and the card say it."""
        restrictions = [f"{name}: {parallel.CORPORA[name].terms}" for name in self.recipe.mix or ()
                        if name in parallel.CORPORA and parallel.CORPORA[name].terms]
        return {"terms": "; ".join(restrictions)} if restrictions else {}

    def initial_preset_record(self):
        """What the metadata's training record says of the preset a fine-tune started
        from: its name and the checksum of the weights it started from."""
        if self.initial_preset is None:
            return {}
        files = self.initial_preset.preset_metadata["files"]
        return {"initial_preset": {"name": self.recipe.initial_preset,
                                   "weights_sha256": files[presets.WEIGHTS_FILE]}}

    def data_description(self, splits):
        if self.recipe.mix and not self.data_file:
            return self.mix_description(splits)
        if self.recipe.corpus.startswith("tfds:"):
            source = {"file": self.recipe.corpus, "split": "the dataset's own splits"}
        elif self.data_file:
            source = {"file": str(self.data_file), "sha256": presets.sha256(self.data_file)}
        else:
            info = tatoeba.CORPORA[self.recipe.corpus]
            source = {"file": f"tatoeba/{info['file']}", "url": info["url"],
                      "sha256": info["sha256"],
                      "licence": "CC-BY 2.0 (France), Tatoeba contributors"}
        return {
            "split": "groups of pairs sharing a sentence on either side, 90/5/5 by hash "
                     "(zoo.data.tatoeba.split)",
            **source,
            "pairs": self.split_sizes(splits),
        }

    def training_summary(self, history):
        return {**super().training_summary(history),
                "validation_loss_by_epoch": [round(float(v), 4) for v in history["val_loss"]]}

    def mix_description(self, splits):
        """The metadata's ``data`` of a mix: each corpus with its source, licence, pairs
        kept and weight; the validation and test sets."""
        info = tatoeba.CORPORA[self.recipe.corpus]
        tatoeba_source = {"file": f"tatoeba/{info['file']}", "url": info["url"],
                          "sha256": info["sha256"], "domain": "textbook sentences (Tatoeba)",
                          "licence": "CC-BY 2.0 (France), Tatoeba contributors"}
        corpora = {name: {**(tatoeba_source if name == "tatoeba" else parallel.describe(name)),
                          "pairs": self.mix_sizes[name], "weight": weight}
                   for name, weight in self.recipe.mix.items()}
        real_text = {name: {"corpus": corpus, "lines": [start, end]} for name, (corpus, start, end)
                     in parallel.EVALUATION_SETS.get(self.other_language, {}).items()}
        return {
            "mix": corpora,
            "filters": {"max_english_words": parallel.MAX_WORDS,
                        "length_ratio": [parallel.LENGTH_RATIO, parallel.LENGTH_SLACK],
                        "rule": "zoo.data.parallel.keep_pair; duplicates and pairs sharing a "
                                "sentence with a validation or test set dropped"},
            "split": "Tatoeba: groups of pairs sharing a sentence on either side, 90/5/5 by "
                     "hash (zoo.data.tatoeba.split); validation adds the real-text validation "
                     "sets; test: Tatoeba's, and the real-text test sets scored apart",
            "real_text_sets": real_text,
            "pairs": self.split_sizes(splits),
        }

    def score(self, shipped, splits):
        """The test split, greedy and beam 5; for a mix, also each real-text test set
        (beam 5)."""
        scores = self._score_tatoeba(shipped, splits)
        if self.recipe.mix and not self.data_file:
            _, train_targets = splits["train"] if "train" in splits else self.mixed_training_pairs()
            known_words = {word for text in train_targets
                           for word in tokenize(text, self.recipe.target_language)}
            scores["real_text_test"] = {
                name: score_real_text(shipped, sources, references, known_words, self.printer,
                                      name)
                for name, (sources, references) in self.real_text_tests().items()}
        return scores

    def _score_tatoeba(self, shipped, splits):
        """The test split, greedy and beam 5."""
        test_sources, test_references = splits["test"]
        metric = self.recipe.metric
        metrics = {}
        for name, beam in (("greedy", 1), ("beam5", 5)):
            result, _ = score_translations(shipped, test_sources, test_references,
                                           beam_size=beam, metric=metric)
            metrics[name] = result
            self.printer(f"test {name}: " + ", ".join(
                f"{key} {value['score']}" for key, value in result.items() if "score" in value))
        label = "BLEU" if metric == "bleu" else "exact match %"
        return {"test": {"sentences": len(test_sources), **metrics},
                "headline": f"test {label} {metrics['beam5'][metric]['score']} (beam 5), "
                            f"{metrics['greedy'][metric]['score']} (greedy)"}

    def card(self, metadata):
        return model_card(metadata)

    @staticmethod
    def evaluate_file(model, metadata, path, beam_size=1, batch_size=64):
        """BLEU and chrF of a TSV of pairs, English first; or, for a preset judged by
        exact match, of (input, expected answer) pairs."""
        exact = metric_of(metadata) == "exact_match"
        unreadable = []
        sources, references = (generated.read_tsv(path, unreadable) if exact
                               else read_pairs_file(model, path, unreadable))
        if not sources:
            raise ValueError(f"{path} holds no sentence pairs.")
        hypotheses = _translate_with_progress(model, sources, beam_size, batch_size)
        if exact:
            result = evaluation.exact_match(hypotheses, references)
            return ({"metric": "exact_match", "value": result["score"],
                     "examples": len(sources), "beam_size": beam_size,
                     "unreadable_lines": len(unreadable)},
                    [f"exact match {result['score']}% ({result['correct']} of {len(sources)})"])
        scores = evaluation.real_text_scores(sources, hypotheses, references,
                                             model.source_language, model.target_language)
        holes = evaluation.unknown_outputs(hypotheses)
        failures = evaluation.decoding_failures(hypotheses, references, model.target_language)
        buckets = [f"  {bucket:>6} source tokens: {values['sentences']:5} sentences, chrF "
                   f"{values['chrf']}, BLEU {values['bleu']}, length ratio {values['length_ratio']}"
                   for bucket, values in scores["by_source_length"].items()]
        return ({"metric": "bleu", "value": scores["bleu"], "examples": len(sources),
                 "signature": scores["bleu_signature"], "chrf": scores["chrf"],
                 "length_ratio": scores["length_ratio"], "beam_size": beam_size,
                 "unknown_outputs": holes["count"], "by_source_length": scores["by_source_length"],
                 "decoding_failures": failures, "unreadable_lines": len(unreadable)},
                [f"BLEU {scores['bleu']}  ({scores['bleu_signature']})",
                 f"chrF {scores['chrf']}  ({scores['chrf_signature']})",
                 f"length ratio {scores['length_ratio']} (output / reference tokens)",
                 f"[UNK] in {holes['count']} of {holes['examples']} outputs ({holes['percent']}%)",
                 f"outputs that stutter {failures['stutter']}%, repeat a phrase the reference "
                 f"does not {failures['repeated_phrase']}%, have under half the reference's "
                 f"words {failures['short']}%",
                 "by source length:", *buckets])


def _copy_weights(source, model, name):
    """The weights of the preset ``source`` into ``model``, built alike from the recipe."""
    weights = source.get_weights()
    shapes = [w.shape for w in weights], [tuple(v.shape) for v in model.weights]
    if shapes[0] != shapes[1]:
        raise recipes.RecipeError(f"initial_preset {name!r} has weights of other shapes than "
                                  f"the recipe's model (its model_config differs).")
    model.set_weights(weights)


def _translate_with_progress(model, sources, beam_size, batch_size):
    """A progress bar on stderr, only where the user sees it on a terminal: stdout stays
    for results (``zoo evaluate --json > out.json``), a log file gets no bar."""
    hypotheses = []
    with tqdm(total=len(sources), unit="sentence", file=sys.stderr,
              disable=not _startup.stderr_is_terminal()) as progress:
        for start in range(0, len(sources), batch_size):
            chunk = sources[start : start + batch_size]
            hypotheses += model.translate(chunk, beam_size=beam_size, check_outputs=False)
            progress.update(len(chunk))
    return hypotheses


class GeneratedTask(TranslationTask):
    """A character-level task whose data the project generates (``zoo.data.generated``);
    it is also scored on input written by hand (``zoo.data.written_by_hand``)."""

    def read_splits(self):
        recipe = self.recipe
        if self.data_file:
            raise ValueError(f"{recipe.name} trains on data the project generates "
                             f"({recipe.corpus}); it takes no --data file.")
        options = {"typed_share": recipe.typed_share} if recipe.typed_share is not None else {}
        return generated.splits(recipe.corpus, recipe.examples, recipe.seed, **options)

    def data_description(self, splits):
        corpus = self.recipe.corpus
        return {"generator": f"zoo.data.generated.{generated.TASKS[corpus].__name__}",
                "split": generated.SPLIT_RULE[corpus],
                "pairs": self.split_sizes(splits)}

    def score(self, shipped, splits):
        return {**super().score(shipped, splits),
                **behaviour_of(shipped, self.recipe.corpus, self.printer)}


def _tfds_splits(dataset_name):
    import tensorflow_datasets as tfds

    splits = {}
    for split in ("train", "validation", "test"):
        dataset = tfds.load(dataset_name, split=split, as_supervised=True)
        pairs = [(s.decode("utf-8"), t.decode("utf-8")) for s, t in tfds.as_numpy(dataset)]
        splits[split] = ([s for s, _ in pairs], [t for _, t in pairs])
    return splits


def behaviour_of(shipped, corpus, printer):
    """``{"behaviour": ...}`` on the input written by hand for a generated task."""
    behaviour = written_by_hand.score(shipped, corpus)
    printer(f"written by hand: {({k: v['percent'] for k, v in behaviour.items()})}")
    return {"behaviour": behaviour}


# -- presets already trained ---------------------------------------------------------------


def preset_task(name_or_directory, data_dir=None, printer=print):
    """The task a preset was trained as, to rebuild its splits (Tatoeba and generated
    data only: a user's TSV or a tfds corpus cannot be rebuilt from the metadata)."""
    metadata = presets.describe(name_or_directory)
    data = metadata.get("data", {})
    rebuildable = "url" in data or "generator" in data or "mix" in data
    if not rebuildable or "recipe" not in metadata.get("training", {}):
        raise ValueError(
            f"{name_or_directory} was not trained by `zoo train` on a Tatoeba corpus or "
            "generated data; only such presets can be re-scored or benchmarked on their test "
            "split.")
    recipe = recipes.from_dict(metadata["training"]["recipe"])
    task_class = {recipes.TranslationRecipe: TranslationTask,
                  recipes.GeneratedTaskRecipe: GeneratedTask}.get(type(recipe))
    if task_class is None:
        raise ValueError(f"{name_or_directory} is a {recipe.task} preset; re-scoring its "
                         "decoding and translation benchmarks apply to sequence-to-sequence "
                         "presets.")
    return task_class(recipe, data_dir=data_dir, printer=printer)


def preset_splits(name_or_directory, data_dir=None):
    """The train/validation/test splits a preset was trained and scored on."""
    return preset_task(name_or_directory, data_dir).evaluation_splits()


def retune_decoding(directory, data_dir=None, printer=print):
    """Re-choose the length penalty and the search defaults of a trained preset on
    validation (``TranslationTask.choose_decoding``) and re-score its test split (after a
    change in decoding); the weights (their very bytes) and the training record stay as
    they are."""
    task = preset_task(directory, data_dir, printer)
    splits = task.evaluation_splits()
    metadata = presets.describe(directory)
    model = zoo.load(directory)
    metric = metric_of(metadata)
    metadata.update(task.choose_decoding(model, splits, metric))
    metadata["training"]["decoding_retuned"] = {
        "command": f"zoo train {task.recipe.name} --retune-decoding",
        "length_penalties": list(LENGTH_PENALTIES),
    }
    metadata.update(task.score(model, splits))
    presets.rewrite_description(directory, metadata, task.card(metadata), config_changes={
        "length_penalty": model.length_penalty, "output_rules": model.output_rules,
        "coverage_penalty": model.coverage_penalty})
    return Path(directory)


def record_behaviour(directory, printer=print):
    """Score a shipped generated-task preset on the input written by hand and write the
    result into its metadata and card (for presets trained before the check existed);
    the weights are not touched."""
    directory = presets.resolve(directory)
    metadata = presets.describe(directory)
    corpus = metadata["training"]["recipe"]["corpus"]
    metadata.update(behaviour_of(zoo.load(directory), corpus, printer))
    return presets.rewrite_description(directory, metadata, model_card(metadata))


# -- the model card ------------------------------------------------------------------------


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
    lines += [""] + shipping.card_training_lines(metadata, sizes_key="pairs")
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
    lines = [f"- search defaults (`translate`'s output rules and coverage penalty, issue 41): "
             f"{named(chosen)}; of the options below, the best chrF on real text among those "
             f"that keep the Tatoeba validation {label} of none (beam 5; validation sentences: "
             f"{sizes}; stutter: a word or phrase three times in a row; repeated phrase: "
             f"three words said twice where the reference does not; short: under half the "
             f"reference's words):", "",
             f"  | options | real-text chrF | Tatoeba {label} | stutter | repeated phrase "
             f"| short |", "  |---|---|---|---|---|---|"]
    for result in validation["candidates"]:
        lines.append(f"  | {named(result['options'])} | {result['chrf']} | {result[metric]} | "
                     f"{result['stutter']}% | {result['repeated_phrase']}% | {result['short']}% |")
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
    lines += [f"| [{name}]({corpus['url']}) | {corpus['domain']} | {corpus['pairs']:,} | "
              f"x {corpus['weight']} | {corpus['licence']} |" for name, corpus in mix.items()]
    if terms:
        lines += ["", f"**Terms of use**: {terms}."]
    if curve:
        lines += ["", "Validation loss by epoch: " + ", ".join(map(str, curve)) + "."]
    return lines


def _readability_lines(on_punctuation):
    """The card's line on how often the attention cannot be read as an alignment."""
    if on_punctuation is None:
        return []
    return ["", f"Attention on punctuation (greedy, word level): of the {on_punctuation['words']:,} "
                f"produced words that are not punctuation, {on_punctuation['percent']}% have their "
                f"strongest attention weight on a source word made only of punctuation (first "
                f"words: {on_punctuation['first_word_percent']}%); such rows do not read as "
                f"alignments (`zoo.evaluation.attention_on_punctuation`)."]


def record_attention_on_punctuation(directory, data_dir=None, printer=print):
    """Measure a shipped attention translator's attention on punctuation (greedy, test
    split) and write it into its metadata and card (for presets trained before the
    measurement existed); the weights are not touched."""
    directory = presets.resolve(directory)
    test_sources, _ = preset_splits(directory, data_dir)["test"]
    model, metadata = zoo.load(directory), presets.describe(directory)
    outputs, attentions = model.translate(test_sources, check_outputs=False,
                                          return_attention=True)
    measured = evaluation.attention_on_punctuation(
        test_sources, outputs, attentions, model.source_language, model.target_language)
    printer(f"{directory.name}: attention on punctuation {measured}")
    metadata["test"]["greedy"]["attention_on_punctuation"] = measured
    return presets.rewrite_description(directory, metadata, model_card(metadata))


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

