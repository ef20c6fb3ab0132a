"""Run the shipped presets on the Keras backend of this process; write what they give.

``python tests/backends/shipped_outputs.py INPUTS.json OUTPUTS.json`` (with
``KERAS_BACKEND`` set): ``tests/backends/test_shipped_parity.py`` runs it on JAX and
PyTorch and compares with TensorFlow. Inputs: ``{"translation": {NAME: {"sources",
"reference_texts"}}, "language_model": {NAME: {"text", "prompts"}}, "classifier":
{NAME: {"texts"}}}``. Where a translation differs from the reference text, the
output also holds the token ids this backend produced, for the near-tie check.
"""

import json
import sys

import keras
import numpy as np

import zoo


def translations(model, sources, reference_texts):
    result = {}
    for beam_size in (1, 5):
        texts = model.translate(sources, beam_size=beam_size, check_outputs=False)
        differing = {}
        for index, (text, reference) in enumerate(zip(texts, reference_texts[str(beam_size)])):
            if text != reference:
                source_ids = model.preprocessor.tokenize_sources([sources[index]])
                ids, _ = model.generate_ids(keras.ops.convert_to_tensor(source_ids), beam_size)
                differing[index] = keras.ops.convert_to_numpy(ids)[0].tolist()
        result[str(beam_size)] = {"texts": texts, "differing_ids": differing}
    return result


def language_model(model, text, prompts):
    return {
        "nats_per_char": model.nats_per_char(text),
        "generations": [model.generate(p["prompt"], p["length"], p["temperature"], p["seed"])
                        for p in prompts],
    }


def main(inputs_path, outputs_path):
    with open(inputs_path, encoding="utf-8") as file:
        inputs = json.load(file)
    outputs = {"backend": keras.backend.backend(), "translation": {}, "language_model": {},
               "classifier": {}}
    for name, case in inputs["translation"].items():
        outputs["translation"][name] = translations(
            zoo.load(name), case["sources"], case["reference_texts"])
    for name, case in inputs["language_model"].items():
        outputs["language_model"][name] = language_model(zoo.load(name), case["text"],
                                                         case["prompts"])
    for name, case in inputs["classifier"].items():
        probabilities = zoo.load(name).probabilities(case["texts"])
        outputs["classifier"][name] = np.asarray(probabilities, float).tolist()
    with open(outputs_path, "w", encoding="utf-8") as file:
        json.dump(outputs, file, ensure_ascii=False)


if __name__ == "__main__":
    main(*sys.argv[1:])
