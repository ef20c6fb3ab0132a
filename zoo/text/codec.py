"""Text <-> token ids for the zoo's models, in plain Python.

The one place that says how a source sentence becomes ids (tokenize, cut to the
model's maximum, look up, right-pad) and how output ids become text; used by the
Keras models and by the TFLite runners, which have no TensorFlow. The SavedModels do
the same in graph ops (``zoo.export.saved_model``).
"""

from zoo.text.tokenizers import detokenize, tokenize
from zoo.text.vocabulary import OOV_ID, PAD_ID, pad_batch


def text_list(texts):
    """``texts`` as a list of strings: one string is a list of one; anything else that is
    not a string (bytes, numbers, None) is refused with its position and type."""
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__"):
        raise TypeError(f"texts must be a string or a list of strings; received "
                        f"{type(texts).__name__}.")
    texts = list(texts)
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts must be strings; received {type(text).__name__} at "
                            f"position {position}: {text!r:.60}.")
    return texts


def source_tokens(text, language, max_length):
    return tokenize(text, language)[:max_length]


def encode_sources(texts, language, vocabulary, max_length):
    """Right-padded source ids ``[batch, longest]`` (int32, at least one column)."""
    return pad_batch([vocabulary.encode(source_tokens(t, language, max_length)) for t in texts])


def decode_target(ids, language, vocabulary):
    """Readable text for output ids: up to ``[END]``, without pads."""
    return detokenize(vocabulary.decode(ids), language)


def decode_translation(source_ids, ids, language, vocabulary):
    """The translation of one source row: a source without tokens (an empty or blank
    text) translates to the empty string instead of whatever the decoder would say."""
    if not any(int(i) != PAD_ID for i in source_ids):
        return ""
    return decode_target(ids, language, vocabulary)


def classifier_tokens(text, language, lowercase, max_length):
    return tokenize(text.lower() if lowercase else text, language)[:max_length]


def encode_for_classifier(texts, language, lowercase, vocabulary, max_length):
    """Right-padded word ids; a text without tokens reads as one unknown word."""
    return pad_batch([
        vocabulary.encode(classifier_tokens(t, language, lowercase, max_length)) or [OOV_ID]
        for t in texts
    ])
