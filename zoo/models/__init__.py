"""The zoo's reference model architectures."""

from zoo.models.seq2seq import AttentionSeq2Seq, BottleneckSeq2Seq, Seq2Seq

__all__ = ["Seq2Seq", "AttentionSeq2Seq", "BottleneckSeq2Seq"]
