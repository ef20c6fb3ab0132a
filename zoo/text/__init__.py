"""Text processing shared by training, inference, SavedModel and TFLite."""

from zoo.text.preprocessor import Alignment, TranslationPreprocessor, UnreadableTextError
from zoo.text.tokenizers import LANGUAGES, detokenize, tf_detokenize, tf_tokenize, tokenize
from zoo.text.vocabulary import END_ID, OOV_ID, PAD_ID, START_ID, Vocabulary

__all__ = [
    "LANGUAGES", "tokenize", "detokenize", "tf_tokenize", "tf_detokenize",
    "Vocabulary", "PAD_ID", "OOV_ID", "START_ID", "END_ID", "TranslationPreprocessor",
    "Alignment", "UnreadableTextError",
]
