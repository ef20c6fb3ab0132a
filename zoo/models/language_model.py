"""Character-level language models: ``P(x_t | x_<t)`` with a vanilla RNN, an LSTM or a GRU.

The model of Karpathy's char-rnn and of Graves (2013), "Generating sequences with
recurrent neural networks": embed each character, run one or more recurrent
layers from ``zoo.layers``, and project every output to logits over the
characters. Trained with teacher forcing on windows of text; scored in nats per
character over a held-out text read in one pass (the state carried from chunk
to chunk, as when generating).

Generation samples one character at a time from ``softmax(logits / temperature)``
with ``zoo.decoding.sample``, whose random numbers are a pure function of
``(seed, step)``: the same seed gives the same text in Python on every Keras
backend, in the SavedModel and through the TFLite runner.
"""


import keras
import numpy as np
from keras import ops

import zoo.layers
from zoo import backend, decoding, inspection
from zoo.decoding import arguments
from zoo.models.special_ids import SPECIAL_IDS
from zoo.models.preset_model import PresetModel
from zoo.text import codec
from zoo.text.preprocessor import CharacterPreprocessor
SEQUENCE_LAYERS = {"rnn": zoo.layers.SimpleRNN, "lstm": zoo.layers.LSTM, "gru": zoo.layers.GRU}
# Characters that ``stream`` computes in one compiled call: fewer calls (each costs more
# than a step), and still a text that appears as it is written.
STREAM_CHUNK = 8


def generation_strategy(temperature, seed, top_k, top_p):
    """The ``decoding`` strategy of every generation (the model's loops, the TFLite
    runner's): sampled, exactly ``length`` characters. A character vocabulary reserves
    no ids: the loop starts from the prompt's logits and never stops at an end, so the
    special ids it is handed never reach the text."""
    return decoding.Sampling(temperature, seed, top_k, top_p, stop_at_end=False,
                             special_ids=SPECIAL_IDS)


@keras.saving.register_keras_serializable(package="zoo")
class CharLanguageModel(PresetModel):
    """A character-level recurrent language model.

    Args:
        vocabulary_size: number of distinct characters (of the
            ``zoo.text.CharacterPreprocessor`` given to ``set_preprocessor`` or loaded
            from a preset's assets).
        cell: ``"rnn"`` (Elman), ``"lstm"`` or ``"gru"``.
        embedding_dim: size of the character embeddings.
        units: size of each recurrent layer's state.
        num_layers: stacked recurrent layers.
        dropout: between layers and before the output layer, during training.
        recurrent_dropout: fraction of each layer's state ``h_{t-1}`` dropped in its
            recurrent step during training, one mask per sequence (Gal and Ghahramani, 2016).

    Call: ``model(ids [B, T])`` gives logits ``[B, T, V]`` for the next character
    at every position.
    """

    kind = "language_model"
    preprocessor_class = CharacterPreprocessor
    preprocessor_holds = "characters"

    def __init__(self, vocabulary_size, cell="lstm", embedding_dim=64, units=512, num_layers=1,
                 dropout=0.0, recurrent_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        if cell not in SEQUENCE_LAYERS:
            raise ValueError(f"cell must be one of {', '.join(SEQUENCE_LAYERS)}; received {cell!r}.")
        self.vocabulary_size = vocabulary_size
        self.cell_kind = cell
        self.embedding_dim = embedding_dim
        self.units = units
        self.num_layers = num_layers
        self.dropout_rate = dropout
        self.recurrent_dropout = recurrent_dropout
        self.embedding = keras.layers.Embedding(vocabulary_size, embedding_dim, name="embedding")
        self.recurrent_layers = [
            SEQUENCE_LAYERS[cell](units, return_sequences=True, return_state=True,
                                  recurrent_dropout=recurrent_dropout, name=f"{cell}_{i}")
            for i in range(num_layers)
        ]
        self.dropout = keras.layers.Dropout(dropout)
        self.head = keras.layers.Dense(vocabulary_size, name="head")

    @property
    def states_per_layer(self):
        return 2 if self.cell_kind == "lstm" else 1  # LSTM: (h, c); RNN, GRU: h

    def build(self, input_shape=None):
        if self.built:
            return
        self.embedding.build((None, None))
        features = self.embedding_dim
        for layer in self.recurrent_layers:
            layer.build((None, None, features))
            features = self.units
        self.head.build((None, self.units))
        self.built = True

    def get_config(self):
        return {
            **super().get_config(),
            "vocabulary_size": self.vocabulary_size,
            "cell": self.cell_kind,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "num_layers": self.num_layers,
            "dropout": self.dropout_rate,
            "recurrent_dropout": self.recurrent_dropout,
        }

    @classmethod
    def from_config(cls, config):
        model = cls(**config)
        model.build()
        return model

    # -- the text pipeline (preset assets) ----------------------------------------------------
    def check_preprocessor(self, preprocessor):
        if len(preprocessor) != self.vocabulary_size:
            raise ValueError(
                f"The model was built for {self.vocabulary_size} distinct characters; "
                f"received {len(preprocessor)}."
            )

    # -- the network ----------------------------------------------------------------------------
    def zero_states(self, batch_size):
        return [ops.zeros((batch_size, self.units)) for _ in range(self.num_layers)
                for _ in range(self.states_per_layer)]

    def run(self, ids, states=None, training=False):
        """Logits ``[B, T, V]`` and the final states, from ``states`` (zeros if None)."""
        features = self.embedding(ids)
        states = states if states is not None else self.zero_states(ops.shape(ids)[0])
        final_states = []
        n = self.states_per_layer
        for i, layer in enumerate(self.recurrent_layers):
            features = self.dropout(features, training=training) if i else features
            outputs = layer(features, initial_state=states[i * n:(i + 1) * n], training=training)
            features, layer_states = outputs[0], outputs[1:]
            final_states += list(layer_states)
        return self.head(self.dropout(features, training=training)), final_states

    def call(self, ids, training=False):
        return self.run(ids, training=training)[0]

    def step(self, token_ids, states):
        """One character: ``(logits [B, V], new states)`` for ids ``[B]`` (the generation step)."""
        features = self.embedding(token_ids)
        n = self.states_per_layer
        new_states = []
        for i, layer in enumerate(self.recurrent_layers):
            features, layer_states = layer.cell(features, list(states[i * n:(i + 1) * n]))
            new_states += list(layer_states) if isinstance(layer_states, (list, tuple)) else [layer_states]
        return self.head(features), new_states

    # -- scoring -----------------------------------------------------------------------------------
    def nats_per_char(self, text, chunk_length=1024):
        """Mean ``-ln P(x_t | x_<t)`` over ``text[1:]``, read in one pass (state carried)."""
        ids = np.asarray(self.require_preprocessor().tokenize(text), np.int32)
        if len(ids) < 2:
            raise ValueError(f"Scoring needs at least 2 characters; received {len(ids)}.")
        score = self._function("score", self._score_chunk)
        states, total = self.zero_states(1), 0.0
        for start in range(0, len(ids) - 1, chunk_length):
            chunk = ids[start : start + chunk_length + 1]
            loss, states = score(chunk[None, :-1], chunk[None, 1:], states)
            total += float(loss)
        return total / (len(ids) - 1)

    def _score_chunk(self, inputs, targets, states):
        logits, states = self.run(inputs, states)
        losses = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
        return ops.sum(losses), states

    # -- inside --------------------------------------------------------------------------------
    def inspect(self, text):
        """Every recurrent layer's states and gate activations at each character of
        ``text``, read from the zero state (``zoo.inspection``).

        Returns ``{"tokens": list of the characters, "layers": [trace per layer]}``, a
        trace ``{"name", "cell", "states": {"h", "c" (LSTM)}, "gates": {...}}`` of
        ``[characters, units]`` float32 arrays.

        Raises:
            TypeError: ``text`` is not a string.
            ValueError: it is empty, longer than ``zoo.text.codec.MAX_TEXT_LENGTH``, or
                has characters the model was not trained on.
        """
        text = inspection.checked_text(text)
        ids = inspection.require_tokens(text, self.require_preprocessor().tokenize(text))
        records = inspection.compiled(self, self._inspected_steps)(np.asarray([ids], np.int32))
        return {"tokens": list(text),
                "layers": [inspection.trace(layer.cell, record, layer.name)
                           for layer, record in zip(self.recurrent_layers, records)]}

    def _inspected_steps(self, ids):
        """``inspection.recorded_steps`` of every layer, each reading the one below."""
        features, records = self.embedding(ids), []
        for layer in self.recurrent_layers:
            records.append(inspection.layer_steps(layer, features))
            features = inspection.hidden_states(records[-1], self.units)
        return records

    # -- generation ------------------------------------------------------------------------------
    def stream(self, prompt, length, temperature=1.0, seed=None, top_k=None, top_p=None):
        """Yield ``length`` generated characters one at a time (after the prompt): the
        loop of ``generate_ids``, driven from Python (``decoding.decode_stepwise``)."""
        length, temperature, seed = arguments.check_generation_arguments(length, temperature, seed)
        top_k, top_p = arguments.check_sampling_filters(top_k, top_p)
        preprocessor = self.require_preprocessor()
        prompt_ids = np.asarray([preprocessor.tokenize(codec.prompt_text(prompt))], np.int32)
        logits, states = self._function("prime", self._prime)(prompt_ids)
        strategy = generation_strategy(temperature, seed, top_k, top_p)
        # Compiled once, with the sampling arguments as inputs: a new seed traces nothing.
        compiled = self._function("stream_steps", self._stream_steps)
        fed = (np.float32(temperature), np.int32(seed), np.int32(top_k), np.float32(top_p))
        for tokens in decoding.decode_stepwise(
                self._step_without_attention, states, strategy, 1, length, first_logits=logits,
                compiled_steps=lambda *loop_values: compiled(*loop_values, *fed)):
            yield preprocessor.characters[int(tokens[0])]

    def generate(self, prompt, length, temperature=1.0, seed=None, top_k=None, top_p=None):
        """``length`` characters that follow ``prompt``, sampled at ``temperature``
        (0: always the most likely character) from the ``top_k`` most likely characters
        and the smallest set of them whose probability reaches ``top_p`` (None: no such
        cut; ``zoo.decoding.sample``). A seed makes the text reproducible."""
        return "".join(self.stream(prompt, length, temperature, seed, top_k, top_p))

    def generate_ids(self, prompt_ids, length, temperature, seed, top_k=0, top_p=1.0):
        """The generation loop in one graph (SavedModel): ids ``[1, length]`` for one
        prompt. Samples exactly as ``stream`` does, so the same seed gives the same text
        (``top_k`` 0 and ``top_p`` 1: no cut).
        """
        logits, states = self._prime(prompt_ids)
        strategy = generation_strategy(temperature, seed, top_k, top_p)
        tokens, _ = decoding.decode(self._step_without_attention, states, strategy, 1, length,
                                    first_logits=logits)
        return tokens

    def _step_without_attention(self, token_ids, states, memory=None):
        # The step function decoding expects: (logits, states, attention); no memory.
        return (*self.step(token_ids, states), None)

    def _prime(self, prompt_ids):
        logits, states = self.run(prompt_ids)
        return logits[:, -1], states

    def _stream_steps(self, t, tokens, search, states, memory, temperature, seed, top_k, top_p):
        strategy = generation_strategy(temperature, seed, top_k, top_p)
        steps = decoding.loop_steps(self._step_without_attention, strategy, STREAM_CHUNK)
        return steps(t, tokens, search, states, memory)

    def _function(self, name, python_function):
        return backend.model_function(self, name, python_function)
