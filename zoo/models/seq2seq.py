"""Sequence-to-sequence translation models.

``AttentionSeq2Seq`` is the RNNsearch model of Bahdanau, Cho & Bengio (2014): a
bidirectional GRU encoder writes one annotation per source token; at every target
step the decoder looks back at all of them through additive attention computed
from its previous state, and feeds the context to its GRU cell.

``BottleneckSeq2Seq`` is the encoder-decoder of Sutskever, Vinyals & Le (2014): an
LSTM reads the reversed source and its final state -- one fixed-length vector -- is
all the decoder sees.

Both share ``Seq2Seq``: teacher-forced training through ``call((source_ids,
target_input_ids))`` (ids only), and ``translate()``, which runs ``zoo.decoding`` over
the model's ``decode_step`` between its ``zoo.text.TranslationPreprocessor`` (the text
pipeline and vocabularies, saved as preset assets) on either side.
"""


import functools

import keras
import numpy as np
from keras import ops
from keras.src import backend

import zoo.layers
from zoo import backend as zoo_backend
from zoo import decoding, inspection, precision
from zoo.decoding import arguments, searches
from zoo.layers import blocks
from zoo.models.special_ids import SPECIAL_IDS
from zoo.models.preset_model import PresetModel
from zoo.text import codec, tokenizers
from zoo.text.preprocessor import TranslationPreprocessor
from zoo.text.vocabulary import PAD_ID, START, START_ID, pad_batch



# A translation has at most 2 * (source tokens) + 10 tokens ([END] included), and at
# most max_length: no pair of the training splits needs more (their largest excess over
# twice the source is 8 tokens), as in fairseq's max_len_a * source + max_len_b. The
# limit is what lets beam search stop early (decoding.Beam): its exact stop bounds an
# open hypothesis by the length penalty of the longest it may become.
OUTPUT_LENGTH_FACTOR, OUTPUT_LENGTH_SLACK = 2, 10


def output_limits(source_ids, max_length):
    """``[B]`` int32: the most tokens each sentence's translation may have."""
    source_lengths = ops.sum(ops.cast(ops.not_equal(source_ids, PAD_ID), "int32"), axis=1)
    return ops.minimum(OUTPUT_LENGTH_FACTOR * source_lengths + OUTPUT_LENGTH_SLACK, max_length)


def output_rules(source_ids, limits, max_length, no_repeat_ngram_size=None,
                 min_length_ratio=None, max_length_ratio=None, prefix=None):
    """``decoding.OutputRules`` for these sources (``limits [B]``: ``output_limits``).

    A translation has at least ``floor(min_length_ratio * source tokens)`` tokens before
    ``[END]`` and ends with ``[END]`` after at most ``ceil(max_length_ratio * source
    tokens)`` (and before its limit); ``prefix [B, P]``: target ids each translation
    starts with (right-padded). The options may be tensors (a SavedModel's inputs: a
    ratio <= 0 and n <= 0 are off there); one left None costs nothing.
    """
    source_lengths = ops.cast(ops.sum(ops.cast(ops.not_equal(source_ids, PAD_ID), "int32"),
                                      axis=1), "float32")
    end_lengths = min_lengths = None
    if max_length_ratio is not None:
        ratio = ops.cast(max_length_ratio, "float32")
        end_lengths = ops.where(
            ratio > 0, ops.minimum(ops.cast(ops.ceil(ratio * source_lengths), "int32"), limits - 1),
            max_length)
    if min_length_ratio is not None:
        min_lengths = ops.cast(ops.floor(ops.cast(min_length_ratio, "float32") * source_lengths),
                               "int32")
        min_lengths = ops.minimum(min_lengths, limits - 1 if end_lengths is None else end_lengths)
    return decoding.OutputRules(no_repeat_ngram_size, min_lengths, end_lengths, prefix)


def _without_offs(rules):
    """Output rules without those a Python 0 turns off (a tensor's 0 is off in the graph)."""
    return {name: value for name, value in rules.items()
            if not (isinstance(value, (int, float)) and value == 0)}


# The fewest sentences a search run side by side with another gets: below, a step's
# products are too small for two searches to gain (zoo.backend.side_by_side_searches).
_SIDE_BY_SIDE_ROWS = 16


def _pad_for_compilation(source_ids):
    """JAX compiles a search once per input shape: padding the source to a multiple of
    8 positions bounds the shapes it sees (the padding is masked, so the numbers are
    the same). TensorFlow's one graph takes every shape as it is."""
    if zoo_backend.is_tensorflow():
        return source_ids
    width = -(-source_ids.shape[1] // 8) * 8
    return np.pad(source_ids, ((0, 0), (0, width - source_ids.shape[1])))


def _trim_padding(real, *tensors):
    """``tensors [B, T, ...]`` cut to the first ``W`` positions, ``W`` the last position
    where ``real [B, T]`` is True, plus one (at least 1): what follows is padding in every
    row. On TensorFlow only (training, ``train_step``: shapes known when run); elsewhere
    the tensors as they are. After dropout: its masks are drawn for the whole batch, as
    before. Recurrences and attention give the same values at the real positions (the
    padding was masked, and it comes after them), the 24% of the zh->en recipe's
    positions after the last real one in each batch of its length buckets are not
    computed (docs/benchmarks.md)."""
    if not zoo_backend.is_tensorflow():
        return tensors
    import tensorflow as tf

    positions = tf.range(1, tf.shape(real)[1] + 1)
    width = tf.maximum(tf.reduce_max(tf.where(real, positions, 0)), 1)
    return tuple(tensor[:, :width] for tensor in tensors)


class Seq2Seq(PresetModel):
    """Shared machinery of the translation models (not used directly).

    Args:
        source_language, target_language: ``"en"``, ``"fr"`` or ``"zh"`` (the
            preprocessor's; kept here for scoring and for presets written before it).
        source_vocabulary_size, target_vocabulary_size: sizes of the vocabularies
            (of the preprocessor given to ``set_preprocessor`` or loaded from a
            preset's assets).
        embedding_dim: size of the token embeddings. The output layer shares the
            target embedding matrix (Press & Wolf 2017).
        units: size of the recurrent states.
        dropout: on embeddings and before the output layer, during training.
        max_source_length: longer inputs are cut to this many tokens.
        max_output_length: default decoding limit, in tokens.
        length_penalty: alpha of the GNMT length normalisation in beam search.
        coverage_penalty: beta of GNMT's coverage penalty in beam search (models with
            attention; 0: off), ``decoding.coverage_penalty``.
        output_rules: the rules every search keeps unless a call says otherwise
            (``translate``'s ``no_repeat_ngram_size``, ``min_length_ratio``,
            ``max_length_ratio``; a preset's are chosen on validation).
    """

    kind = "translation"
    preprocessor_class = TranslationPreprocessor
    preprocessor_holds = "vocabularies"

    def __init__(self, source_language, target_language, source_vocabulary_size,
                 target_vocabulary_size, embedding_dim=256, units=256, dropout=0.2,
                 max_source_length=64, max_output_length=64, length_penalty=0.6,
                 coverage_penalty=0.0, output_rules=None, **kwargs):
        super().__init__(**kwargs)
        for language in (source_language, target_language):
            tokenizers._check_language(language)
        self.source_language = source_language
        self.target_language = target_language
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.dropout_rate = dropout
        self.max_source_length = max_source_length
        self.max_output_length = max_output_length
        self.length_penalty = length_penalty
        self.coverage_penalty = coverage_penalty
        self.output_rules = output_rules or {}

        self.source_embedding = keras.layers.Embedding(
            source_vocabulary_size, embedding_dim, mask_zero=True, name="source_embedding"
        )
        self.target_embedding = keras.layers.Embedding(
            target_vocabulary_size, embedding_dim, name="target_embedding"
        )
        self.dropout = keras.layers.Dropout(dropout)
        self.output_projection = keras.layers.Dense(
            embedding_dim, activation="tanh", name="output_projection"
        )

    # -- construction ------------------------------------------------------------------
    def build(self, input_shape=None):
        """Create every weight from the config alone (no data needed)."""
        if self.built:
            return
        self.source_embedding.build((None, None))
        self.target_embedding.build((None, None))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.target_vocabulary_size,), initializer="zeros",
            autocast=False,  # added to float32 logits (``logits``)
        )
        self.build_encoder_decoder()
        self.built = True

    def build_encoder_decoder(self):
        raise NotImplementedError

    def get_config(self):
        return {
            **super().get_config(),
            "source_language": self.source_language,
            "target_language": self.target_language,
            "source_vocabulary_size": self.source_vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "dropout": self.dropout_rate,
            "max_source_length": self.max_source_length,
            "max_output_length": self.max_output_length,
            "length_penalty": self.length_penalty,
            "coverage_penalty": self.coverage_penalty,
            "output_rules": self.output_rules,
        }

    @classmethod
    def from_config(cls, config):
        model = cls(**config)
        model.build()
        return model

    # -- the text pipeline (preset assets) -------------------------------------------
    def check_preprocessor(self, preprocessor):
        for name, vocabulary, size in (
            ("source", preprocessor.source_vocabulary, self.source_vocabulary_size),
            ("target", preprocessor.target_vocabulary, self.target_vocabulary_size),
        ):
            if len(vocabulary) != size:
                raise ValueError(
                    f"The {name} vocabulary has {len(vocabulary)} tokens but the model was "
                    f"built for {size}."
                )

    def preprocessor_options(self):
        return {"source_language": self.source_language, "target_language": self.target_language,
                "max_source_length": self.max_source_length}

    # -- the network -----------------------------------------------------------------------
    def logits(self, features, training=False, output_product=None, real=None):
        """Deep output: tanh projection to the embedding size, then the tied embedding.

        ``output_product``: ``hidden -> hidden E^T``, when the caller prepared it once for
        many steps (decoding, ``_output_product``) instead of once per call. ``real``
        (TensorFlow): a boolean mask ``[B, T]`` of the positions whose logits are wanted;
        they come packed, ``[N, V]`` in row-major order. ``features`` may be cut to the
        first ``W <= T`` positions (``_trim_padding``), the mask's later positions all
        False. The projection and the product over the vocabulary are then made for those
        alone (``_packed_hidden``); dropout draws what it draws for the whole batch.
        """
        if real is not None:
            hidden = self._packed_hidden(features, real, training)
        else:
            hidden = self.dropout(self.output_projection(features), training=training)
        embeddings = self.target_embedding.embeddings
        if output_product is not None:
            product = output_product(hidden)
        elif real is not None and hidden.dtype == "float32":
            # TensorFlow's packed rows: the product reads E as stored, and E's gradient
            # comes out in E's layout, where E^T and its gradient were each a copy. The
            # same numbers in float32; oneDNN's bfloat16 product rounds otherwise, so
            # mixed precision keeps E^T (and the weights of a seeded training).
            import tensorflow as tf

            product = tf.matmul(hidden, ops.convert_to_tensor(embeddings), transpose_b=True)
        else:
            product = ops.matmul(hidden, ops.transpose(embeddings))
        # Mixed precision: the product in bfloat16, the logits float32 (the bias is never
        # cast: ``build``), as Keras advises for the layer before a softmax and a loss.
        return ops.cast(product, "float32") + self.output_bias

    def _packed_hidden(self, features, real, training):
        """The projection of the positions ``real [B, T]`` of ``features [B, W, F]``
        (``W <= T``), packed ``[N, E]``, with dropout. The padding's share of the projection
        is not computed (41% of the zh->en recipe's target positions, docs/benchmarks.md);
        dropout's mask is drawn for the whole ``[B, T, E]``, as the dense path draws it,
        and its real positions picked: the same masks, so a seeded training gives the same
        weights."""
        import tensorflow as tf

        packed = tf.boolean_mask(features, real[:, : tf.shape(features)[1]])
        hidden = self.output_projection(packed)
        if training and self.dropout.rate > 0:
            batch, width = tf.unstack(tf.shape(real))
            kept = self.dropout(tf.ones([batch, width, self.embedding_dim], hidden.dtype),
                                training=training)
            hidden = hidden * tf.boolean_mask(kept, real)
        return hidden

    def _output_product(self, rows):
        """``hidden -> hidden E^T`` for a search over ``rows`` rows (a static int, or None).

        For many rows, ``E^T`` is made once per search (a product with the transpose
        inside the loop was measured 1.6x slower at 64 rows and 4.8x at 5 rows (a
        beam)). For one row (one sentence, greedy: TFLite's trace, ``translate`` of one
        text) the product reads ``E`` as it is stored (TensorFlow's ``transpose_b``):
        the transpose, a copy of ``E`` at every search, took a tenth of a sentence's
        translation; measured side by side on gru_bahdanau_cmn_en, 1.42x on one thread
        and 1.19-1.26x on two (the search with a static batch of one, on TensorFlow).
        On several threads it runs in blocks of ``E``'s rows (``blocks.row_product``).
        """
        embeddings = self.target_embedding.embeddings
        if rows == 1 and zoo_backend.is_tensorflow():
            return lambda hidden: blocks.row_product(hidden, ops.convert_to_tensor(embeddings),
                                                     transpose_weight=True)
        transposed = ops.transpose(embeddings)
        return lambda hidden: ops.matmul(hidden, transposed)

    def encode(self, source_ids, training=False, trim_padding=False):
        """The decoder's initial state (a dict of tensors, batch first): the keys in
        ``recurrent_state`` change at every step, the others are read-only memory.
        ``trim_padding`` (training on TensorFlow, ``train_step``): the encoder reads the
        source only up to its batch's last real position (``_trim_padding``); the same
        state, less work."""
        raise NotImplementedError

    def decode_step(self, tokens, state, output_product=None):
        """One decoder step: ``(logits [N, V], new_state, attention [N, S] or None)``;
        ``output_product`` as ``logits`` takes it."""
        raise NotImplementedError

    def decode_teacher_forced(self, target_input_ids, state, training=False,
                              return_attention=False, real_only=False):
        """Logits ``[B, T, V]`` for every position, given the reference prefix; with
        ``return_attention`` (models with attention), ``(logits, attention [B, T, S])``,
        what a training-only loss on the alignment reads (guided alignment); with
        ``real_only`` on TensorFlow, the logits of the positions that are not padding
        only, packed ``[N, V]`` in row-major order (``SmoothedCrossentropy`` takes them:
        ``_output_logits``)."""
        raise NotImplementedError

    def _output_logits(self, features, target_input_ids, training, real_only):
        """``logits`` of the teacher-forced ``features [B, T, F]``: of every position, or
        with ``real_only`` on TensorFlow of those where ``target_input_ids`` is not
        padding (the output layer and the loss over the vocabulary were half of the
        zh->en recipe's training step, and 41% of its target positions padding:
        docs/benchmarks.md); ``features`` may then stop at the batch's last real position
        (``_trim_padding``). Other backends compile fixed shapes: every position."""
        real = None
        if real_only and zoo_backend.is_tensorflow():
            real = ops.not_equal(target_input_ids, PAD_ID)
        return self.logits(features, training=training, real=real)

    # -- fit on TensorFlow: the real tokens only -------------------------------------------
    def _trains_real_tokens(self, data):
        """Whether ``fit``'s and ``evaluate``'s step on this batch computes the real target
        tokens only (as ``zoo train``'s ``RealTokensTraining``): on TensorFlow, not
        compiled to XLA, compiled with ``SmoothedCrossentropy`` (``compile_for_training``)
        and no metrics (they would read every position's logits), no sample weights."""
        from zoo.models.losses import SmoothedCrossentropy

        if not zoo_backend.is_tensorflow() or self.jit_compile:
            return False
        if not isinstance(getattr(self, "loss", None), SmoothedCrossentropy):
            return False
        _, targets, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        return self._compile_metrics is None and targets is not None and sample_weight is None

    def train_step(self, *args, **kwargs):
        """Keras' step; on TensorFlow, where ``_trains_real_tokens``, with the logits of the
        real target tokens only, packed (``decode_teacher_forced(real_only=True)``), the
        source and target read up to their batch's last real position: the loss and
        gradients of every position's, within float rounding, for less work (the
        README's fine-tune, 20,000 pairs of zh->en on two cores: docs/benchmarks.md)."""
        return self._step_on_real_tokens(super().train_step, *args, **kwargs)

    def test_step(self, *args, **kwargs):
        return self._step_on_real_tokens(super().test_step, *args, **kwargs)

    def _step_on_real_tokens(self, step, *args, **kwargs):
        if not (len(args) == 1 and not kwargs and self._trains_real_tokens(args[0])):
            return step(*args, **kwargs)
        self._real_tokens_call = True  # read by call() while the step is traced
        try:
            return step(*args)
        finally:
            self._real_tokens_call = False

    def decoding_flops(self, source_length, steps):
        """Floating-point operations to encode a source of ``source_length`` pieces and
        run ``steps`` decoder steps: 2 per multiply-add of the matrix products (the
        element-wise gate arithmetic, a few per unit, is left out)."""
        return self._encoder_multiply_adds(source_length) * 2 + steps * 2 * (
            self._step_multiply_adds(source_length)
            + self._output_features() * self.embedding_dim
            + self.embedding_dim * self.target_vocabulary_size)

    def _encoder_multiply_adds(self, source_length):
        raise NotImplementedError

    def _step_multiply_adds(self, source_length):
        """A decoder step's products before the deep output layer."""
        raise NotImplementedError

    def _output_features(self):
        """The width of what the deep output layer reads."""
        raise NotImplementedError

    def call(self, inputs, training=False):
        source_ids, target_input_ids = inputs
        if getattr(self, "_real_tokens_call", False):  # train_step's, on TensorFlow
            return self.real_token_logits(inputs, training=training)
        state = self.encode(source_ids, training=training)
        return self.decode_teacher_forced(target_input_ids, state, training=training)

    def real_token_logits(self, inputs, training=False):
        """``call``'s logits for the real target tokens only, packed ``[N, V]``, the source
        and target read up to their batch's last real position (TensorFlow; elsewhere every
        position's): what training computes (``train_step``, ``RealTokensTraining``)."""
        source_ids, target_input_ids = inputs
        state = self.encode(source_ids, training=training, trim_padding=True)
        return self.decode_teacher_forced(target_input_ids, state, training=training,
                                          real_only=True)

    # -- translation ---------------------------------------------------------------------
    @property
    def length_penalty(self):
        return self._length_penalty

    @length_penalty.setter
    def length_penalty(self, alpha):
        self._length_penalty = alpha
        zoo_backend.forget_model_functions(self)  # the searches captured the old value

    @property
    def coverage_penalty(self):
        return self._coverage_penalty

    @coverage_penalty.setter
    def coverage_penalty(self, beta):
        if not isinstance(beta, (int, float)) or isinstance(beta, bool) or not 0 <= beta < 1e9:
            raise ValueError(f"coverage_penalty must be a number >= 0; received {beta!r}.")
        if beta and not self.has_attention:
            raise ValueError(f"{type(self).__name__} has no attention: a coverage penalty "
                             "(which sums the attention each source token received) needs it.")
        self._coverage_penalty = float(beta)
        zoo_backend.forget_model_functions(self)

    @property
    def output_rules(self):
        """The output rules every search keeps unless a call sets them (``translate``)."""
        return dict(self._output_rules)

    @output_rules.setter
    def output_rules(self, rules):
        if not isinstance(rules, dict):
            raise TypeError(f"output_rules must be a dict of translate's output rules; "
                            f"received {rules!r}.")
        known = ("no_repeat_ngram_size", "min_length_ratio", "max_length_ratio")
        unknown = sorted(set(rules) - set(known))
        if unknown:
            raise ValueError(f"Unknown output rules {unknown}; known: {', '.join(known)}.")
        self._output_rules = _without_offs(arguments.check_output_rules(**rules))
        zoo_backend.forget_model_functions(self)  # the searches compiled the old rules in

    def _beam(self, beam_size, num_hypotheses, return_attention):
        # Without attention to return, a coverage penalty's search keeps the sums it reads.
        return decoding.Beam(beam_size, num_hypotheses, self.length_penalty,
                             beta=self.coverage_penalty, special_ids=SPECIAL_IDS,
                             history=return_attention)

    def generate_ids(self, source_ids, beam_size=1, max_length=None, return_attention=False,
                     rules=None):
        """Decode a batch of padded source ids (graph-friendly; used by every runtime).

        ``rules``: ``output_rules``' options (``no_repeat_ngram_size``,
        ``min_length_ratio``, ``max_length_ratio``), Python values or tensors.
        Returns ``(tokens [B, max_length] int32, attention [B, max_length, S] or None)``;
        a translation ends at its first ``[END]`` and is padded with ``[PAD]`` after it.
        """
        if isinstance(beam_size, int) and beam_size == 1:
            return self._decode_with(decoding.Greedy(special_ids=SPECIAL_IDS), source_ids,
                                     max_length, return_attention, rules)
        tokens, _, attention = self._decode_with(self._beam(beam_size, 1, return_attention),
                                                 source_ids, max_length, return_attention, rules)
        return tokens[:, 0], (None if attention is None else attention[:, 0])

    def generate_hypotheses(self, source_ids, beam_size, num_hypotheses, max_length=None,
                            return_attention=False, rules=None):
        """The ``num_hypotheses`` best of a beam search, best first (graph-friendly).

        Returns ``(tokens [B, n, max_length] int32, scores [B, n], attention [B, n,
        max_length, S] or None)``; a score is the log-probability divided by the length
        penalty, what the beam ranks by (``decoding.Beam``).
        """
        return self._decode_with(self._beam(beam_size, num_hypotheses, return_attention),
                                 source_ids, max_length, return_attention, rules)

    def generate_samples(self, source_ids, temperature, seed, top_k=0, top_p=1.0, row_ids=None,
                         max_length=None, return_attention=False, uniforms=None, rules=None):
        """Translations drawn token by token (``decoding.Sampling``; ``top_k`` 0 and
        ``top_p`` 1: no cut; ``uniforms [max_length, B]``: the random numbers fed in),
        graph-friendly; returns what ``generate_ids`` returns."""
        strategy = decoding.Sampling(temperature, seed, top_k, top_p, row_ids, uniforms,
                                     special_ids=SPECIAL_IDS)
        return self._decode_with(strategy, source_ids, max_length, return_attention, rules)

    def _decode_with(self, strategy, source_ids, max_length, return_attention, rules=None):
        """``decoding.decode`` with ``strategy`` over the decoder, for these sources, keeping
        ``output_rules(**rules)`` when rules are given."""
        max_length = max_length or self.max_output_length
        # A static batch size (TFLite traces at batch 1) keeps the loop shapes static.
        batch = source_ids.shape[0] or ops.shape(source_ids)[0]
        limits = output_limits(source_ids, max_length)
        rules = _without_offs({**self._output_rules, **(rules or {})})
        if rules:
            strategy.rules = output_rules(source_ids, limits, max_length, **rules)
        per_sentence = strategy.rows_per_sentence
        rows = (batch * per_sentence if isinstance(batch, int) and isinstance(per_sentence, int)
                else None)
        step, state, memory = self._step_function(source_ids, rows)
        # A coverage penalty reads the attention, returned or not (a Beam that returns
        # none keeps its sums only, and its result's attention is None).
        reads_attention = bool(getattr(strategy, "beta", 0))
        return decoding.decode(step, state, strategy, batch, max_length,
                               ops.shape(source_ids)[1], return_attention or reads_attention,
                               max_lengths=limits, memory=memory, memory_per_sentence=True)

    def _step_function(self, source_ids, rows=None):
        """The decoding step function, its state and its memory (``zoo.decoding``), for
        a search over ``rows`` rows (``_output_product``'s).

        The state is what changes at each step (``recurrent_state``); the encoder's
        outputs (attention memory, keys, mask), the same at every step and for every
        beam of a sentence, are the memory: one row per sentence, which the attention
        reads for each of the sentence's rows (``memory_per_sentence``), never reordered.
        """
        output_product = self._output_product(rows)
        encoded = self.encode(source_ids, training=False)
        state = {k: encoded[k] for k in self.recurrent_state}
        memory = {k: v for k, v in encoded.items() if k not in state}

        def step(tokens, state, memory):
            logits, new_state, attention = self.decode_step(tokens, {**memory, **state},
                                                            output_product)
            return logits, {k: new_state[k] for k in self.recurrent_state}, attention

        return step, state, memory

    def _compiled_search(self, search, max_length, return_attention, rules=None,
                         prefixed=False, one_sentence=False):
        """The compiled ``search.run`` (a ``zoo.decoding`` search value): source ids, then
        the search's ``feeds`` (a sampling's temperature and seed: a new one compiles
        nothing), then, when ``prefixed``, the prefix ids ``[B, P]``; with the ``rules``
        (``arguments.check_output_rules``' dict) compiled in; ``one_sentence``: for
        source ids ``[1, S]`` only (a graph of its own, that knows it: the loop's shapes
        static, ``_output_product``'s one row)."""
        search, rules = search.compiled(), dict(rules or {})
        feed_count = len(search.fed)

        def run(source_ids, *inputs):
            feeds, prefix = inputs[:feed_count], inputs[feed_count:]
            with_prefix = {**rules, "prefix": prefix[0]} if prefix else rules
            return search.run(self, source_ids, feeds, max_length, return_attention, with_prefix)

        key = ("search", search, max_length, return_attention, tuple(sorted(rules.items())),
               prefixed, one_sentence)
        return zoo_backend.model_function(self, key, run, one_row=one_sentence)

    def _decode(self, texts, search, max_length, batch_size, return_attention=False,
                rules=None, prefixes=None):
        """Yield ``(index, token ids, attention [L, S] or None, source ids)`` per text, as
        ``search`` (a ``zoo.decoding`` search value) finds them; when it returns hypotheses,
        ``(index, token ids [n, L], attention [n, L, S] or None, source ids, scores [n])``.
        A sampling's draws for a text depend on its index in ``texts``, not on the batch
        it falls in; ``rules``: checked output rules; ``prefixes``: per text, the target
        ids its translation starts with."""
        texts = codec.text_list(texts)
        # max_length None: the model's max_output_length (the search checked its own options)
        arguments.check_search_arguments(max_length=max_length, batch_size=batch_size)
        preprocessor = self.require_preprocessor()
        texts = [preprocessor.accepted_source(text, position) for position, text in enumerate(texts)]
        search = search.for_call()

        @functools.cache  # looked up once per call, not once per chunk
        def compiled(one_sentence):
            return self._compiled_search(search, max_length or self.max_output_length,
                                         return_attention, rules, prefixes is not None,
                                         one_sentence)

        def searched(part):
            source_ids = preprocessor.tokenize_sources([texts[i] for i in part])
            inputs = [_pad_for_compilation(source_ids), *search.feeds(np.asarray(part, np.int32))]
            if prefixes is not None:
                inputs.append(_pad_for_compilation(pad_batch([prefixes[i] for i in part])))
            tokens, *scores, attention = compiled(len(part) == 1)(*inputs)
            if attention is not None:
                attention = attention[..., : source_ids.shape[1]]
            return source_ids, tokens, scores, attention

        # Similar lengths together: less padding, and the batch stops sooner.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        searches_side_by_side = zoo_backend.side_by_side_searches()
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            # A batch's parts searched side by side, each of every n-th sentence (similar
            # lengths, the parts as long); a sentence's translation does not depend on
            # the sentences beside it (tested).
            count = max(1, min(searches_side_by_side, len(chunk) // _SIDE_BY_SIDE_ROWS))
            parts = [chunk[i::count] for i in range(count)]
            for part, found in zip(parts, zoo_backend.map_side_by_side(searched, parts)):
                source_ids, tokens, scores, attention = found
                for row, index in enumerate(part):
                    yield (index, tokens[row], None if attention is None else attention[row],
                           source_ids[row], *(s[row] for s in scores))

    def translate(self, texts, beam_size=None, max_length=None, return_attention=False,
                  batch_size=64, attention_level="word", check_outputs=True,
                  num_hypotheses=None, sampling=False, temperature=None, top_k=None, top_p=None,
                  seed=None, no_repeat_ngram_size=None, min_length_ratio=None,
                  max_length_ratio=None, prefix=None, search=None):
        """Translate a list of strings.

        Args:
            texts: list of strings (a single string is treated as a list of one).
            search: how to search, a value of ``zoo.decoding`` (``GreedySearch()``,
                ``BeamSearch(beam_size, num_hypotheses)``, ``RandomSampling(temperature,
                top_k, top_p, seed)``) or its name; default: greedy search.
                ``beam_size``, ``num_hypotheses`` and ``sampling`` with its options
                below are shorthands for one (``zoo.decoding.searches.from_options``):
                give one or the other.
            beam_size: 1 for greedy search, more for beam search.
            max_length: most pieces to produce (default ``max_output_length``).
            return_attention: also return, per text, an array of attention weights
                ``(produced words, source words)``, words as ``zoo.text.tokenize``
                splits them: the weights of a source word's pieces summed, the rows of
                a produced word's pieces averaged.
            attention_level: ``"word"``, or ``"piece"`` for the weights the decoder
                computed, ``(produced pieces, source pieces)``.
            check_outputs: refuse answers outside the task's format (the dates model's
                non-dates) with ``zoo.text.UnreadableTextError``; False returns them
                (scoring counts them as wrong).
            num_hypotheses: return, per text, the ``num_hypotheses`` (at most
                ``beam_size``) best hypotheses of the beam, best first, as
                ``{"text": str, "score": float}`` (the score is the log-probability
                divided by the length penalty, what the beam ranks by; with
                ``return_attention`` each also has its ``"attention"``). The first is
                what ``translate(texts, beam_size)`` returns.
            sampling: draw each token from ``softmax(logits / temperature)`` cut to the
                ``top_k`` most probable and to the smallest set of them whose
                probability reaches ``top_p`` (``zoo.decoding.sample``), instead of
                searching; ``seed`` makes the draws reproducible (the same seed and
                texts give the same translations, also through the SavedModel's
                ``translate_sample``); ``top_k=1`` or ``temperature=0`` is greedy.
            no_repeat_ngram_size: n; no translation says an n-gram of pieces twice (a
                token that would is never chosen). Greedy, beam search and sampling.
            min_length_ratio, max_length_ratio: a translation has at least
                ``floor(min_length_ratio * S)`` pieces and at most ``ceil(max_length_ratio
                * S)`` (then ``[END]`` is forced), S the source's pieces: a long sentence
                cannot end after a word, nor run on. None (the default) for each: off
                (``max_length`` and ``2 * S + 10`` still bound every translation).
            prefix: per text, the start of its translation (a string, whole words; ""
                for none): the translation begins with its pieces, and the search goes
                on from there (interactive translation). A beam's score includes them.

        Raises:
            ValueError: a text is not a string, too long, or outside the model's input
                domain (the addition model: two numbers of at most three digits).

        Returns:
            ``list[str]``, or ``(list[str], list[np.ndarray])`` with ``return_attention``;
            with ``num_hypotheses``, ``list[list[dict]]``.

        Thread-safe: serving threads may share one model (tested: 8 threads give what
        sequential calls give).
        """
        texts = codec.text_list(texts)
        if return_attention:
            self._check_attention_level(attention_level)
        search = searches.chosen(search, searches.GreedySearch(), beam_size=beam_size,
                                 num_hypotheses=num_hypotheses, sampling=sampling,
                                 temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
        rules = arguments.check_output_rules(no_repeat_ngram_size, min_length_ratio, max_length_ratio)
        prefixes = self._prefix_ids(prefix, len(texts))
        decoded = self._decode(texts, search, max_length, batch_size, return_attention, rules,
                               prefixes)
        if search.returns_hypotheses:
            return self._n_best(texts, decoded, return_attention, attention_level, check_outputs)
        translations, attentions = [None] * len(texts), [None] * len(texts)
        for index, ids, attention, source_ids in decoded:
            translations[index] = self.preprocessor.detokenize_translation(source_ids, ids)
            if return_attention:
                if not translations[index]:
                    ids = ids[:0]  # nothing was translated: no rows
                alignment = self.preprocessor.alignment(texts[index], ids, attention, attention_level)
                attentions[index] = alignment.weights
        if check_outputs:
            self.preprocessor.check_outputs(texts, translations)
        return (translations, attentions) if return_attention else translations

    def _prefix_ids(self, prefix, count):
        """Per text, the target ids of its ``prefix`` (None: no prefix)."""
        if prefix is None:
            return None
        prefix = codec.text_list(prefix)
        if len(prefix) != count:
            raise ValueError(f"prefix needs one string per text; received {len(prefix)} for "
                             f"{count} texts.")
        return self.require_preprocessor().target_rows(prefix)

    def _n_best(self, texts, decoded, return_attention, attention_level, check_outputs):
        """Per text, its hypotheses as ``translate(num_hypotheses=...)`` returns them."""
        results = [None] * len(texts)
        for index, hypotheses, attentions, source_ids, scores in decoded:
            results[index] = []
            for n, ids in enumerate(hypotheses):
                text = self.preprocessor.detokenize_translation(source_ids, ids)
                result = {"text": text, "score": float(scores[n])}
                if return_attention:
                    ids = ids if text else ids[:0]  # nothing was translated: no rows
                    result["attention"] = self.preprocessor.alignment(
                        texts[index], ids, attentions[n], attention_level).weights
                results[index].append(result)
        if check_outputs:
            self.preprocessor.check_outputs(texts, [r[0]["text"] for r in results])
        return results

    def score(self, sources, targets, batch_size=64):
        """Each pair's log-probability under teacher forcing (OpenNMT's ``score``): how
        likely the model finds ``targets[i]`` as the translation of ``sources[i]``.

        A target is read as the model reads a reference in training: its pieces, then
        ``[END]``. Returns one ``{"total": float, "per_token": float, "tokens": int}``
        per pair: the summed natural-log probability of those ``tokens`` (``[END]``
        counted) and its mean. For a beam's own output, ``total`` is the beam's score
        with a length penalty of 0 (``decoding.Beam`` ranks by total / length penalty).

        Raises:
            ValueError: the lists differ in length, or a source is not a string, too
                long, or outside the model's input domain.
        """
        sources, targets = codec.text_list(sources), codec.text_list(targets)
        if len(sources) != len(targets):
            raise ValueError(f"score needs one target per source; received {len(sources)} "
                             f"sources and {len(targets)} targets.")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer; received {batch_size!r}.")
        preprocessor = self.require_preprocessor()
        sources = [preprocessor.accepted_source(text, position)
                   for position, text in enumerate(sources)]
        scorer = zoo_backend.model_function(self, ("score",), self._target_log_probabilities)
        results = []
        for start in range(0, len(sources), batch_size):
            batch = slice(start, start + batch_size)
            source_ids = preprocessor.tokenize_sources(sources[batch])
            decoder_in, decoder_out = preprocessor.tokenize_targets(targets[batch])
            log_probabilities = np.asarray(scorer(
                *map(_pad_for_compilation, (source_ids, decoder_in, decoder_out))))
            counts = (decoder_out != PAD_ID).sum(axis=1)
            for total, count in zip(log_probabilities.sum(axis=1), counts):
                results.append({"total": float(total), "per_token": float(total / count),
                                "tokens": int(count)})
        return results

    def _target_log_probabilities(self, source_ids, decoder_in, decoder_out):
        """``[B, T]``: the log-probability of each reference token (0 at padding)."""
        log_probabilities = ops.log_softmax(
            ops.cast(self((source_ids, decoder_in)), "float32"), axis=-1)
        picked = ops.take_along_axis(log_probabilities, ops.expand_dims(decoder_out, -1),
                                     axis=-1)[..., 0]
        return ops.where(ops.not_equal(decoder_out, PAD_ID), picked, 0.0)

    def align(self, text, beam_size=None, max_length=None, attention_level="word",
              search=None):
        """A ``zoo.text.Alignment`` (source units, produced units, weights
        ``[produced, source]``) for one text, at word or piece level, of the translation
        ``search`` finds (as ``translate``'s; default: greedy)."""
        self._check_attention_level(attention_level)
        search = searches.chosen(search, searches.GreedySearch(), beam_size=beam_size)
        if search.returns_hypotheses:
            raise ValueError(f"align draws one translation; received {search!r}.")
        if not self.require_preprocessor().source_pieces(text):
            raise ValueError(f"Nothing to align: {text!r} has no tokens.")
        ((_, ids, attention, _),) = self._decode([text], search, max_length, 1, True)
        return self.preprocessor.alignment(text, ids, attention, attention_level)

    # -- inside ------------------------------------------------------------------------------
    def inspect(self, text, max_length=None):
        """The encoder's and the decoder's states and gate activations at every token of
        one text and of its greedy translation (``zoo.inspection``).

        The decoder is run teacher-forced on what greedy search produced: its step k
        reads ``target_tokens[k]`` (``[START]``, then the produced pieces) and predicts
        the next piece (the last step, ``[END]``).

        Returns ``{"translation": str (as translate gives it), "source_tokens": the
        pieces the encoder reads, "target_tokens": the pieces the decoder reads,
        "encoder": [trace, ...], "decoder": [trace, ...]}``; a trace is ``{"name",
        "cell", "states": {"h", "c" (LSTM)}, "gates": {...}}`` of ``[tokens, units]``
        float32 arrays, an encoder that reads backwards given in source order.

        Raises:
            TypeError: ``text`` is not a string.
            ValueError: it is longer than ``zoo.text.codec.MAX_TEXT_LENGTH``, outside
                the model's input domain, or has no tokens (empty or blank).
        """
        text = inspection.checked_text(text)
        preprocessor = self.require_preprocessor()
        source_tokens = inspection.require_tokens(text, preprocessor.source_pieces(text))
        ((_, ids, _, source_row),) = self._decode([text], searches.GreedySearch(), max_length, 1)
        produced = preprocessor.output_pieces(ids)
        target_ids = [START_ID, *preprocessor.target_vocabulary.ids_of(produced)]
        encoder, decoder = inspection.compiled(self, self._inspected_steps)(
            np.asarray([source_row], np.int32), np.asarray([target_ids], np.int32))
        return {
            "translation": preprocessor.detokenize_translation(source_row, ids),
            "source_tokens": source_tokens,
            "target_tokens": [START, *produced],
            "encoder": [inspection.trace(cell, record, name)
                        for (name, cell), record in zip(self._inspected_encoder_cells(), encoder)],
            "decoder": [inspection.trace(cell, record, name)
                        for (name, cell), record in zip(self._inspected_decoder_cells(), decoder)],
        }

    def _inspected_steps(self, source_ids, target_input_ids):
        """``(encoder records, decoder records)`` of ``inspection.recorded_steps``, in the
        order of ``_inspected_encoder_cells`` and ``_inspected_decoder_cells``."""
        raise NotImplementedError

    def _inspected_encoder_cells(self):
        """``[(trace name, cell)]`` of the encoder."""
        raise NotImplementedError

    def _inspected_decoder_cells(self):
        raise NotImplementedError

    def _check_attention_level(self, attention_level):
        if not self.has_attention:
            raise ValueError(
                f"{type(self).__name__} has no attention (the decoder sees only the "
                "encoder's final state)."
            )
        if attention_level not in ("word", "piece"):
            raise ValueError(f"attention_level must be 'word' or 'piece'; received "
                             f"{attention_level!r}.")


@keras.saving.register_keras_serializable(package="zoo")
class AttentionSeq2Seq(Seq2Seq):
    """RNNsearch (Bahdanau et al. 2014): bidirectional GRU encoder, additive attention.

    Encoder: ``h_i = [h_i_forward; h_i_backward]`` from a bidirectional
    ``zoo.layers.GRU``; decoder start ``s_0 = tanh(W_s h_1_backward)``.
    Decoder step ``t``: ``c_t, a_t = BahdanauAttention(s_{t-1}, h)`` (keys ``U h_i``
    projected once per sentence), ``s_t = GRUCell([E y_{t-1}; c_t], s_{t-1})``,
    output from ``[s_t; c_t; E y_{t-1}]``.
    """

    has_attention = True
    recurrent_state = ("decoder",)  # the rest of encode()'s state is read-only memory

    def __init__(self, *args, attention_units=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.attention_units = attention_units or self.units
        self.encoder = keras.layers.Bidirectional(
            zoo.layers.GRU(self.units, return_sequences=True, return_state=True), name="encoder"
        )
        self.bridge = keras.layers.Dense(self.units, activation="tanh", name="bridge")
        self.attention = zoo.layers.BahdanauAttention(self.attention_units, name="attention")
        self.decoder_cell = zoo.layers.GRUCell(self.units, name="decoder_cell")

    def build_encoder_decoder(self):
        e, u = self.embedding_dim, self.units
        self.encoder.build((None, None, e))
        self.bridge.build((None, u))
        self.attention.build((None, u), (None, None, 2 * u))
        self.decoder_cell.build((None, e + 2 * u))
        self.output_projection.build((None, u + 2 * u + e))

    def get_config(self):
        return {**super().get_config(), "attention_units": self.attention_units}

    def _encoder_multiply_adds(self, source_length):
        e, u, a = self.embedding_dim, self.units, self.attention_units
        bidirectional_gru = 2 * source_length * (e + u) * 3 * u
        keys = source_length * 2 * u * a
        return bidirectional_gru + keys + u * u  # and the bridge

    def _step_multiply_adds(self, source_length):
        e, u, a = self.embedding_dim, self.units, self.attention_units
        attention = u * a + source_length * a + source_length * 2 * u  # query, scores, context
        return attention + (e + 2 * u + u) * 3 * u  # and the GRU cell

    def _output_features(self):
        return self.units + 2 * self.units + self.embedding_dim

    def encode(self, source_ids, training=False, trim_padding=False):
        embedded = self.dropout(self.source_embedding(source_ids), training=training)
        mask = ops.not_equal(source_ids, PAD_ID)
        if trim_padding:
            embedded, mask = _trim_padding(mask, embedded, mask)
        return self.encode_embedded(embedded, mask, training)

    def encode_embedded(self, embedded, mask, training=False):
        """``encode`` from the source embeddings ``[batch, source_len, embedding_dim]``
        (to take gradients with respect to them) and the mask of real positions."""
        memory, _, backward_state = self.encoder(embedded, mask=mask, training=training)
        return {
            # float32 under mixed precision, as the decoder cell carries it (``cells``)
            "decoder": precision.cast(self.bridge(backward_state), self.decoder_cell.state_dtype),
            "memory": memory,
            "keys": self.attention.project_keys(memory),
            "mask": mask,
        }

    def _cell_step(self, embedded, state, training=False, reweight=None):
        cell_input, context, weights = self._decoder_cell_input(embedded, state, reweight)
        decoder_state, _ = self.decoder_cell(cell_input, [state["decoder"]], training=training)
        return decoder_state, context, weights

    def _decoder_cell_input(self, embedded, state, reweight=None):
        """``([E y_{t-1}; c_t], c_t, a_t)``: what the decoder cell reads at a step."""
        context, weights = self.attention(
            state["decoder"], state["memory"], keys=state["keys"], memory_mask=state["mask"],
            reweight=reweight
        )
        return ops.concatenate([embedded, context], axis=-1), context, weights

    def _inspected_encoder_cells(self):
        return [("encoder/forward", self.encoder.forward_layer.cell),
                ("encoder/backward", self.encoder.backward_layer.cell)]

    def _inspected_decoder_cells(self):
        return [("decoder", self.decoder_cell)]

    def _inspected_steps(self, source_ids, target_input_ids):
        embedded = self.source_embedding(source_ids)
        encoder = [inspection.layer_steps(self.encoder.forward_layer, embedded),
                   inspection.layer_steps(self.encoder.backward_layer, embedded)]
        encoded = self.encode(source_ids)

        def cell_input(embedded_t, states):
            return self._decoder_cell_input(embedded_t, {**encoded, "decoder": states[0]})[0]

        decoder = inspection.recorded_steps(self.decoder_cell,
                                            self.target_embedding(target_input_ids),
                                            [encoded["decoder"]], cell_input)
        return encoder, [decoder]

    def decode_step(self, tokens, state, output_product=None, reweight=None):
        """``reweight``: replaces the attention weights before the context is formed
        from them (``BahdanauAttention``; ``zoo.experiments.attributions``)."""
        embedded = self.target_embedding(tokens)
        decoder_state, context, weights = self._cell_step(embedded, state, reweight=reweight)
        logits = self.logits(ops.concatenate([decoder_state, context, embedded], axis=-1),
                             output_product=output_product)
        return logits, {**state, "decoder": decoder_state}, weights

    def decode_teacher_forced(self, target_input_ids, state, training=False,
                              return_attention=False, real_only=False):
        embedded = self.dropout(self.target_embedding(target_input_ids), training=training)
        if real_only and not return_attention:
            embedded, = _trim_padding(ops.not_equal(target_input_ids, PAD_ID), embedded)
        features = 3 * self.units  # [s_t; c_t], then the attention weights a_t
        # The cell reads [E y_{t-1}; c_t]: the product of its kernel's embedding rows is
        # made for every step at once, before the loop (and its gradient after it, one
        # product each); inside, the context's rows only. The same weights, the cell's
        # product split in two (decode_step keeps the whole one; the cell has no
        # dropout of its own, which would mask the two parts together).
        cell, split = self.decoder_cell, self.embedding_dim
        # A split, not two slices: its gradient is one concatenation, where each slice's
        # is a kernel-sized buffer of zeros around its rows, then summed.
        embedding_kernel, context_kernel = ops.split(ops.convert_to_tensor(cell.kernel),
                                                     [split], axis=0)
        # Mixed precision: the products in bfloat16, the sums and the state float32 as the
        # cell's own step (``cells``); what the loop outputs in the compute dtype.
        projected = precision.product(cell, embedded, embedding_kernel)
        if cell.use_bias:
            projected = projected + cell._input_bias()
        if self._decoder_kernel_trains(training, return_attention):
            features = self._kernel_decoded(projected, state, context_kernel)
            return self._output_logits(ops.concatenate([features, embedded], axis=-1),
                                       target_input_ids, training, real_only)

        def step(projected_t, states):
            context, weights = self.attention(
                states[0], state["memory"], keys=state["keys"], memory_mask=state["mask"])
            decoder_state, _ = cell.recurrent_step(
                projected_t + precision.product(cell, context, context_kernel), [states[0]],
                training=training)
            # One output tensor per step (every backend's rnn takes that): the weights
            # ride after the features and are cut off again below.
            return ops.concatenate([precision.cast(decoder_state, context.dtype), context,
                                    weights], axis=-1), [decoder_state]

        _, outputs, _ = backend.rnn(
            step, projected, [precision.cast(state["decoder"], cell.state_dtype)])
        logits = self._output_logits(
            ops.concatenate([outputs[..., :features], embedded], axis=-1), target_input_ids,
            training, real_only)
        return (logits, outputs[..., features:]) if return_attention else logits

    def _decoder_kernel_trains(self, training, return_attention):
        """Whether the teacher-forced loop is ``attention_decoder_kernel``'s: TensorFlow's
        training step in float32, not compiled to XLA (Keras' default on a GPU, which
        compiles Keras' own loop), with the textbook GRU cell and attention it writes the
        backward pass of (docs/benchmarks.md, "Adam in one kernel, and the decoder's
        backward pass by hand")."""
        cell = self.decoder_cell
        return (training and not return_attention and zoo_backend.is_tensorflow()
                and not self.jit_compile and self.compute_dtype == "float32"
                and cell.reset_after and cell.fused_recurrence() is not None
                and not cell.recurrent_dropout and not self.attention.normalize)

    def _kernel_decoded(self, projected, state, context_kernel):
        """``[s_t; c_t]`` of every step, ``[B, T, 3 units]``, from
        ``attention_decoder_kernel`` (time-major inside)."""
        from zoo.layers import attention_decoder_kernel

        cell = self.decoder_cell
        recurrent_bias = (cell.bias[1] if cell.use_bias
                          else ops.zeros([3 * self.units], projected.dtype))
        states, contexts = attention_decoder_kernel.run_attention_decoder(
            ops.transpose(projected, [1, 0, 2]), state["decoder"], state["keys"],
            state["memory"], state["mask"], self.attention.query_kernel,
            self.attention.score_vector, context_kernel, cell.recurrent_kernel, recurrent_bias)
        return ops.transpose(ops.concatenate([states, contexts], axis=-1), [1, 0, 2])


@keras.saving.register_keras_serializable(package="zoo")
class BottleneckSeq2Seq(Seq2Seq):
    """The fixed-length-vector encoder-decoder (Sutskever et al. 2014), one LSTM layer each.

    The encoder reads the source reversed (``go_backwards``; with right padding the
    pads come first and are masked), and its final ``(h, c)`` starts the decoder,
    which sees nothing else of the source. Output from ``[h_t; E y_{t-1}]``.
    """

    has_attention = False
    recurrent_state = ("h", "c")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.encoder = zoo.layers.LSTM(self.units, go_backwards=True, return_state=True,
                                       name="encoder")
        self.decoder = zoo.layers.LSTM(self.units, return_sequences=True, return_state=True,
                                       name="decoder")

    def build_encoder_decoder(self):
        e, u = self.embedding_dim, self.units
        self.encoder.build((None, None, e))
        self.decoder.build((None, None, e))
        self.output_projection.build((None, u + e))

    def _encoder_multiply_adds(self, source_length):
        return source_length * (self.embedding_dim + self.units) * 4 * self.units

    def _step_multiply_adds(self, source_length):
        return (self.embedding_dim + self.units) * 4 * self.units

    def _output_features(self):
        return self.units + self.embedding_dim

    def encode(self, source_ids, training=False, trim_padding=False):
        mask = ops.not_equal(source_ids, PAD_ID)
        embedded = self.dropout(self.source_embedding(source_ids), training=training)
        if trim_padding:
            embedded, mask = _trim_padding(mask, embedded, mask)
        _, h, c = self.encoder(embedded, mask=mask, training=training)
        # float32 under mixed precision, as the decoder's cell carries them (``cells``)
        h, c = (precision.cast(s, self.decoder.cell.state_dtype) for s in (h, c))
        return {"h": h, "c": c}

    def _inspected_encoder_cells(self):
        return [("encoder", self.encoder.cell)]

    def _inspected_decoder_cells(self):
        return [("decoder", self.decoder.cell)]

    def _inspected_steps(self, source_ids, target_input_ids):
        encoded = self.encode(source_ids)
        return ([inspection.layer_steps(self.encoder, self.source_embedding(source_ids))],
                [inspection.layer_steps(self.decoder, self.target_embedding(target_input_ids),
                                        [encoded["h"], encoded["c"]])])

    def decode_step(self, tokens, state, output_product=None):
        embedded = self.target_embedding(tokens)
        h, (_, c) = self.decoder.cell(embedded, [state["h"], state["c"]])
        logits = self.logits(ops.concatenate([h, embedded], axis=-1),
                             output_product=output_product)
        return logits, {"h": h, "c": c}, None

    def decode_teacher_forced(self, target_input_ids, state, training=False,
                              return_attention=False, real_only=False):
        if return_attention:
            self._check_attention_level("word")  # the error: this model has no attention
        embedded = self.dropout(self.target_embedding(target_input_ids), training=training)
        if real_only:
            embedded, = _trim_padding(ops.not_equal(target_input_ids, PAD_ID), embedded)
        outputs, _, _ = self.decoder(
            embedded, initial_state=[state["h"], state["c"]], training=training
        )
        return self._output_logits(ops.concatenate([outputs, embedded], axis=-1),
                                   target_input_ids, training, real_only)
