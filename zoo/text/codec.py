"""Text <-> token ids for a translation model, in plain Python.

The one place that says how a source sentence becomes ids (tokenize, cut to the
model's maximum, look up, right-pad) and how output ids become text; used by the
Keras model and by the TFLite runner, which has no TensorFlow. The SavedModel does
the same in graph ops (``zoo.export.saved_model.GraphTextCodec``).
"""

from zoo.text.tokenizers import detokenize, tokenize
from zoo.text.vocabulary import pad_batch


def source_tokens(text, language, max_length):
    return tokenize(text, language)[:max_length]


def encode_sources(texts, language, vocabulary, max_length):
    """Right-padded source ids ``[batch, longest]`` (int32, at least one column)."""
    return pad_batch([vocabulary.encode(source_tokens(t, language, max_length)) for t in texts])


def decode_target(ids, language, vocabulary):
    """Readable text for output ids: up to ``[END]``, without pads."""
    return detokenize(vocabulary.decode(ids), language)
