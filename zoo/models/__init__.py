"""The zoo's reference model architectures."""

from zoo.models.classifier import TextClassifier
from zoo.models.language_model import CharLanguageModel
from zoo.models.losses import SmoothedCrossentropy
from zoo.models.seq2seq import AttentionSeq2Seq, BottleneckSeq2Seq, Seq2Seq

__all__ = ["Seq2Seq", "AttentionSeq2Seq", "BottleneckSeq2Seq", "CharLanguageModel",
           "TextClassifier", "SmoothedCrossentropy"]
