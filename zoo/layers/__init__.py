"""The zoo's Keras layers: recurrent cells, sequence layers and attention."""

from zoo.layers.attention import BahdanauAttention, LuongAttention
from zoo.layers.cells import GRUCell, LSTMCell, SimpleRNNCell
from zoo.layers.recurrent import GRU, LSTM, SimpleRNN

__all__ = [
    "SimpleRNNCell",
    "LSTMCell",
    "GRUCell",
    "SimpleRNN",
    "LSTM",
    "GRU",
    "BahdanauAttention",
    "LuongAttention",
]
