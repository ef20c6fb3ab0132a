"""Run an exported .tflite translator with LiteRT alone (no TensorFlow), as an app would."""

import json
from pathlib import Path

from zoo.export import TFLITE_CONFIG_FORMAT
from zoo.text import codec
from zoo.text.vocabulary import Vocabulary


class TFLiteTranslator:
    """``TFLiteTranslator("DIR/NAME.tflite").translate(texts, beam_size=1) -> list[str]``.

    Reads ``NAME.json`` beside the model for the languages and vocabularies, and
    tokenizes with ``zoo.text`` -- the code that tokenized the training data.
    ``beam_size`` is 1 (the ``greedy`` signature) or the width the file was exported
    with (the ``beam`` signature). One sentence per call: the model is batch 1.
    """

    def __init__(self, path, num_threads=None):
        from ai_edge_litert.interpreter import Interpreter

        path = Path(path)
        config_path = path.with_suffix(".json")
        if not path.is_file() or not config_path.is_file():
            raise FileNotFoundError(
                f"A TFLite translator needs {path.name} and {config_path.name} in "
                f"{path.parent}; missing: "
                + ", ".join(str(p) for p in (path, config_path) if not p.is_file())
            )
        self.config = json.loads(config_path.read_text(encoding="utf-8"))
        if self.config.get("format") != TFLITE_CONFIG_FORMAT:
            raise ValueError(
                f"{config_path} is not a zoo TFLite translator config "
                f"(format {self.config.get('format')!r}; expected {TFLITE_CONFIG_FORMAT!r})."
            )
        self.source_vocabulary = Vocabulary(self.config["source_vocabulary"])
        self.target_vocabulary = Vocabulary(self.config["target_vocabulary"])
        self.beam_size = self.config["beam_size"]
        self.interpreter = Interpreter(model_path=str(path), num_threads=num_threads)
        self._runners = {
            1: self.interpreter.get_signature_runner("greedy"),
            self.beam_size: self.interpreter.get_signature_runner("beam"),
        }

    def encode(self, text):
        return codec.encode_sources([text], self.config["source_language"],
                                    self.source_vocabulary, self.config["max_source_length"])

    def translate_ids(self, source_ids, beam_size=1):
        """Output ids ``[max_output_length]`` for source ids ``[1, S]``."""
        if beam_size not in self._runners:
            raise ValueError(
                f"This file decodes with beam_size 1 or {self.beam_size}; received "
                f"{beam_size!r} (export again with --beam-size for another width)."
            )
        return self._runners[beam_size](source_ids=source_ids)["tokens"][0]

    def translate(self, texts, beam_size=1):
        texts = [texts] if isinstance(texts, str) else list(texts)
        return [
            codec.decode_target(self.translate_ids(self.encode(t), beam_size),
                                self.config["target_language"], self.target_vocabulary)
            for t in texts
        ]
