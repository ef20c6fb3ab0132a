"""What every runtime checks of the text it is given, in plain Python: used by the Keras
models and by the TFLite runners, which have no TensorFlow. (How text becomes ids:
``zoo.text.preprocessor``; the checks of a search's other arguments:
``zoo.decoding.arguments``.)
"""

# The longest input text (a sentence, a review, a prompt) in characters (Unicode code
# points), in every runtime: Python, the TFLite runners and the SavedModel signatures.
# Well beyond what the presets were trained on, and short enough that a mistaken input
# (a whole file) is refused at once instead of tying up a server.
MAX_TEXT_LENGTH = 2_000
# An empty prompt starts a generation as if after a blank line (where a speech begins).
EMPTY_PROMPT = "\n"


def check_text_length(text, position=0):
    if len(text) > MAX_TEXT_LENGTH:
        raise ValueError(f"Text {position} has {len(text):,} characters; the most is "
                         f"{MAX_TEXT_LENGTH:,} (split a longer text into sentences).")
    return text


def text_list(texts):
    """``texts`` as a list of strings: one string is a list of one; anything else that is
    not a string (bytes, numbers, None) is refused with its position and type, and so
    is a text longer than ``MAX_TEXT_LENGTH``."""
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
        check_text_length(text, position)
    return texts


def prompt_text(prompt):
    """A generation prompt: a string of at most ``MAX_TEXT_LENGTH`` characters; an empty
    one stands for ``EMPTY_PROMPT``."""
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a string; received {type(prompt).__name__}: "
                        f"{prompt!r:.60}.")
    return check_text_length(prompt) or EMPTY_PROMPT


# -- character language models ---------------------------------------------------------

def character_ids(text, index, characters):
    """Ids of the characters of ``text``; a character the model never saw is an error."""
    unknown = sorted({c for c in text if c not in index})
    if unknown:
        raise ValueError(
            f"The text contains characters this model was not trained on: "
            f"{''.join(unknown)!r}. Known characters: {''.join(characters)!r}."
        )
    return [index[c] for c in text]
