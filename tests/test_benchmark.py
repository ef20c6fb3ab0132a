import keras
import numpy as np
import pytest
import tensorflow as tf

from zoo import benchmark
from zoo.text.vocabulary import PAD_ID


def _tutorial(end_id=3):
    keras.utils.set_random_seed(0)
    return benchmark.tutorial_translator(7, 9, units=4, end_id=end_id)


def test_tutorial_translator_has_the_tutorials_layers():
    _, parameters = _tutorial()
    embeddings = 7 * 4 + 9 * 4
    gru = 4 * 12 + 4 * 12 + 2 * 12  # kernel, recurrent kernel, reset-after biases
    attention = 3 * (4 * 4 + 4) + (4 * 4 + 4)  # query, key, value; output
    normalization = 2 * 4
    output = 4 * 9 + 9
    assert parameters == embeddings + 3 * gru + attention + normalization + output


@pytest.mark.slow
def test_tutorial_translator_decodes_greedily_and_stops_at_end():
    source_ids = tf.constant([[4, 5, 6], [6, 5, 0]], tf.int32)
    decode, _ = _tutorial()
    unrolled = decode(source_ids)
    assert unrolled.shape == (2, benchmark.TUTORIAL_MAX_LENGTH)
    np.testing.assert_array_equal(decode(source_ids, 6), unrolled[:, :6])
    # The same weights, told that the last token of sentence 0 ends a translation:
    # as in the tutorial, sentence 0 is padded from where that token first appears.
    end = int(unrolled[0, -1])
    assert end != PAD_ID
    first = int(np.argmax(unrolled[0] == end))
    decode, _ = _tutorial(end_id=end)
    stopped = decode(source_ids)
    np.testing.assert_array_equal(stopped[0, :first], unrolled[0, :first])
    assert (stopped[0, first:] == PAD_ID).all()
    np.testing.assert_array_equal(stopped[1], np.where(np.cumsum(unrolled[1] == end) > 0,
                                                       PAD_ID, unrolled[1]))


def test_translation_ratios_compare_with_the_rebuilt_tutorial():
    speed = [{"runtime": r, "beam_size": b, "latency_ms": 2.0 * b, "sentences_per_second": 600.0}
             for r in ("keras", "saved_model", "tflite_float32", "tflite_dynamic") for b in (1, 5)]
    results = {"speed": speed, "tutorial": {"tutorial_exported": 150.0, "tutorial_loop": 400.0}}
    lines = []
    benchmark._print_speed_ratios(results, 64, lines.append)
    assert lines[-1] == (
        "greedy batch-64 throughput, best of Keras/SavedModel: 600 sentences/s = 1.50x the TF "
        "tutorial's translator rebuilt here (400)")
