"""The ids the zoo's vocabularies reserve (``zoo.text.vocabulary``), as ``zoo.decoding`` is
handed them: decoding knows no vocabulary, and the models are the floor that sees both."""

from zoo import decoding
from zoo.text.vocabulary import END_ID, PAD_ID, START_ID

SPECIAL_IDS = decoding.SpecialIds(start=START_ID, end=END_ID, pad=PAD_ID)
