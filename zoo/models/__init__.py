"""The zoo's reference model architectures, each a ``PresetModel`` of one kind (``KINDS``)."""

from zoo.models.classifier import TextClassifier
from zoo.models.language_model import CharLanguageModel
from zoo.models.losses import SmoothedCrossentropy
from zoo.models.preset_model import KINDS, PresetModel
from zoo.models.seq2seq import AttentionSeq2Seq, BottleneckSeq2Seq, Seq2Seq

__all__ = ["PresetModel", "KINDS", "Seq2Seq", "AttentionSeq2Seq", "BottleneckSeq2Seq",
           "CharLanguageModel", "TextClassifier", "SmoothedCrossentropy"]
