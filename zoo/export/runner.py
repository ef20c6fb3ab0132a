"""Run exported .tflite models with LiteRT alone (no TensorFlow), as an app would."""

import json
from pathlib import Path

import numpy as np

from zoo.export import TFLITE_FORMATS
from zoo.decoding import arguments, searches
from zoo.text import codec
from zoo.text.preprocessor import (CharacterPreprocessor, ClassifierPreprocessor,
                                   TranslationPreprocessor)


def _open(path, kind, num_threads):
    """``(config, interpreter)`` for ``path`` and the ``.json`` beside it, which must be
    the config of a model of ``kind``."""
    from ai_edge_litert.interpreter import Interpreter

    path = Path(path)
    config_path = path.with_suffix(".json")
    if not path.is_file() or not config_path.is_file():
        raise FileNotFoundError(
            f"A zoo TFLite model needs {path.name} and {config_path.name} in "
            f"{path.parent}; missing: "
            + ", ".join(str(p) for p in (path, config_path) if not p.is_file())
        )
    config = json.loads(config_path.read_text(encoding="utf-8"))
    expected_format = TFLITE_FORMATS[kind]
    if config.get("format") != expected_format:
        raise ValueError(
            f"{config_path} is not the config of this kind of zoo TFLite model "
            f"(format {config.get('format')!r}; expected {expected_format!r})."
        )
    return config, Interpreter(model_path=str(path), num_threads=num_threads)


class TFLiteTranslator:
    """``TFLiteTranslator("DIR/NAME.tflite").translate(texts, search=None) -> list[str]``.

    Reads ``NAME.json`` beside the model for the word rules, the WordPiece settings and
    the vocabularies, and runs them with ``zoo.text``'s preprocessor -- the code that
    tokenized the training data.
    A beam is 1 wide (the ``greedy`` signature) or as wide as the file was exported
    with (the ``beam`` signature). One sentence per call: the model is batch 1.
    """

    kind = "translation"

    def __init__(self, path, num_threads=None):
        self.config, self.interpreter = _open(path, self.kind, num_threads)
        self.preprocessor = TranslationPreprocessor.from_runner_config(self.config)
        self.beam_size = self.config["beam_size"]
        # What translate runs when a call names no search (the export's; files written
        # before searches were values have none: greedy).
        self.search = searches.from_config(self.config.get("search", {"name": "greedy"}))
        self._runners = {
            1: self.interpreter.get_signature_runner("greedy"),
            self.beam_size: self.interpreter.get_signature_runner("beam"),
        }

    def tokenize(self, text):
        return self.preprocessor.tokenize_sources([text])

    def translate_ids(self, source_ids, beam_size=1):
        """Output ids ``[max_output_length]`` for source ids ``[1, S]``."""
        if beam_size not in self._runners:
            raise ValueError(
                f"This file decodes with beam_size 1 or {self.beam_size}; received "
                f"{beam_size!r} (export again with --beam-size for another width)."
            )
        return self._runners[beam_size](source_ids=source_ids)["tokens"][0]

    def translate_ids_with_rules(self, source_ids, beam_size=1, no_repeat_ngram_size=None,
                                 min_length_ratio=None, max_length_ratio=None):
        """``translate_ids`` with these output rules (None and 0: off; the file's
        defaults do not apply: ``translate`` adds them)."""
        if beam_size not in self._runners:
            raise ValueError(
                f"This file decodes with beam_size 1 or {self.beam_size}; received "
                f"{beam_size!r} (export again with --beam-size for another width)."
            )
        signature = "greedy_with_rules" if beam_size == 1 else "beam_with_rules"
        if signature not in self.interpreter.get_signature_list():
            raise ValueError(f"This file has no {signature} signature: it was exported before "
                             "output rules existed; export it again.")
        return self.interpreter.get_signature_runner(signature)(
            source_ids=source_ids, no_repeat_ngram_size=np.int32(no_repeat_ngram_size or 0),
            min_length_ratio=np.float32(min_length_ratio or 0),
            max_length_ratio=np.float32(max_length_ratio or 0))["tokens"][0]

    def sample_ids(self, source_ids, uniforms, temperature=1.0, top_k=0, top_p=1.0):
        """Output ids drawn with ``uniforms [max_output_length]`` (one per step)."""
        return self.interpreter.get_signature_runner("sample")(
            source_ids=source_ids, uniforms=np.asarray(uniforms, np.float32),
            temperature=np.float32(temperature), top_k=np.int32(top_k),
            top_p=np.float32(top_p))["tokens"][0]

    def translate(self, texts, beam_size=None, sampling=False, temperature=None, top_k=None,
                  top_p=None, seed=None, no_repeat_ngram_size=None, min_length_ratio=None,
                  max_length_ratio=None, search=None):
        """As ``model.translate``: ``search`` (a ``zoo.decoding`` search value, or the
        shorthand options) defaults to the export's (``search`` in ``NAME.json``; else
        greedy); a ``BeamSearch`` of 1 or of the file's width, without ``num_hypotheses``.
        With sampling, the same seed gives the same texts (the draws of
        ``zoo.decoding.step_uniforms``, computed with Keras on any backend;
        ``KERAS_BACKEND=numpy`` is enough); the output rules run in the file's
        ``*_with_rules`` signatures (not with sampling), over the preset's defaults
        (``output_rules`` in ``NAME.json``, compiled into the other signatures)."""
        texts = codec.text_list(texts)
        search = searches.chosen(search, self.search, beam_size=beam_size, sampling=sampling,
                                 temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        rules = arguments.check_output_rules(no_repeat_ngram_size, min_length_ratio, max_length_ratio)
        if rules:
            rules = {**self.config.get("output_rules", {}), **rules}
        sampled = isinstance(search, searches.RandomSampling)
        if sampled and rules:
            raise ValueError("This file's sampling signature keeps no output rules; "
                             "use them with beam_size 1 or the file's beam.")
        width = self._width(search)
        search = search.for_call()
        translations = []
        for position, text in enumerate(texts):
            source_ids = self.tokenize(self.preprocessor.accepted_source(text, position))
            if sampled:
                top_k, top_p = search.filters()
                ids = self.sample_ids(source_ids, self._uniforms(search.seed, position),
                                      search.temperature, top_k, top_p)
            elif rules:
                ids = self.translate_ids_with_rules(source_ids, width, **rules)
            else:
                ids = self.translate_ids(source_ids, width)
            translations.append(self.preprocessor.detokenize_translation(source_ids[0], ids))
        return self.preprocessor.check_outputs(texts, translations)

    def _width(self, search):
        """The beam width a search runs with in this file: 1 (greedy) or the file's."""
        if not isinstance(search, searches.BeamSearch):
            return 1
        if search.returns_hypotheses:
            raise ValueError(f"This file's beam returns the best translation only; received "
                             f"{search!r} (the n best: model.translate or the SavedModel's "
                             "translate_n_best).")
        return search.beam_size  # translate_ids refuses a width the file lacks

    def _uniforms(self, seed, row):
        import keras

        from zoo import decoding

        return keras.ops.convert_to_numpy(
            decoding.step_uniforms(seed, self.config["max_output_length"], row))


class TFLiteLanguageModel:
    """``TFLiteLanguageModel("DIR/NAME.tflite").generate(prompt, length, temperature, seed,
    top_k, top_p)``.

    The file holds one step of the network; this runner feeds the prompt through it,
    then runs the Keras model's generation loop over it (``zoo.decoding.decode_stepwise``,
    sampling with ``zoo.decoding.sample``; a phone app would port its few integer
    operations): the same seed gives the Keras model's text.
    Sampling uses Keras on any backend; without TensorFlow, JAX or PyTorch installed,
    ``KERAS_BACKEND=numpy`` is enough.
    """

    kind = "language_model"

    def __init__(self, path, num_threads=None):
        self.config, self.interpreter = _open(path, self.kind, num_threads)
        self.preprocessor = CharacterPreprocessor(self.config["characters"])
        self._step = self.interpreter.get_signature_runner("step")

    def step(self, token, states):
        result = self._step(token=np.array([token], np.int32), states=states)
        return result["logits"][0], result["states"]

    def generate(self, prompt, length, temperature=1.0, seed=None, top_k=None, top_p=None):
        from zoo import decoding
        from zoo.models.language_model import generation_strategy

        length, temperature, seed = arguments.check_generation_arguments(length, temperature, seed)
        top_k, top_p = arguments.check_sampling_filters(top_k, top_p)
        prompt_ids = self.preprocessor.tokenize(codec.prompt_text(prompt))
        states = np.zeros(self.config["states"], np.float32)
        for token in prompt_ids:
            logits, states = self.step(token, states)
        strategy = generation_strategy(temperature, seed, top_k, top_p)
        steps = decoding.decode_stepwise(self._decoding_step, states, strategy, 1, length,
                                         first_logits=logits[None])
        return "".join(self.preprocessor.characters[int(tokens[0])] for tokens in steps)

    def _decoding_step(self, tokens, states):
        # The step function zoo.decoding drives: Keras tensors in, (logits, states, None) out.
        import keras

        logits, states = self.step(int(keras.ops.convert_to_numpy(tokens)[0]),
                                   keras.ops.convert_to_numpy(states))
        return logits[None], states, None


class TFLiteClassifier:
    """``TFLiteClassifier("DIR/NAME.tflite").classify(texts) -> [{"label", "probability"}]``."""

    kind = "classifier"

    def __init__(self, path, num_threads=None):
        self.config, self.interpreter = _open(path, self.kind, num_threads)
        self.preprocessor = ClassifierPreprocessor.from_runner_config(self.config)
        self.labels = self.config["labels"]
        self._classify = self.interpreter.get_signature_runner("classify")

    def probabilities(self, text):
        ids = self.preprocessor.tokenize([text])
        return self._classify(ids=ids)["probabilities"][0]

    def classify(self, texts):
        texts = codec.text_list(texts)
        results = []
        for text in texts:
            probabilities = self.probabilities(text)
            best = int(np.argmax(probabilities))
            results.append({"label": self.labels[best], "probability": float(probabilities[best])})
        return results
