"""Attention over an encoder's memory: Bahdanau (additive) and Luong (multiplicative).

Both layers share one interface, made for decoders that run step by step:

    keys = attention.project_keys(memory)           # once per source sentence
    context, weights = attention(query, memory, keys=keys, memory_mask=mask)

``query`` is ``[batch, query_dim]`` (one decoder step; or ``[batch * K, query_dim]``,
K consecutive rows per memory row: a beam's) or ``[batch, steps, query_dim]`` (several
queries at once); ``memory`` is ``[batch, source_len,
memory_dim]``; ``memory_mask`` is ``[batch, source_len]`` boolean, True for real
tokens. ``weights`` is ``[batch, (steps,) source_len]``: a softmax over the real
source positions (padded positions get exactly 0, each row sums to 1; a row with
no real position gets all zeros and a zero context). ``context`` is
``sum_i weights_i memory_i``, ``[batch, (steps,) memory_dim]``.
"""

import math

import keras
from keras import ops

from zoo import precision


def weighted_sum(weights, memory):
    """``weights [B, Q, S]`` times ``memory [B, S, D]``: ``[B, Q, D]``. One query of one
    row (a decoder step of one sentence, its batch known) as a multiply and a sum:
    TensorFlow's batched product split across two threads took 45-70 us there, the sum
    17-24 us (one thread: 15-18 us both; at 64 rows the product is faster)."""
    if weights.shape[0] == 1 and weights.shape[1] == 1:
        return ops.sum(ops.reshape(weights, (1, -1, 1)) * memory, axis=1, keepdims=True)
    return ops.matmul(weights, memory)


def _one_row_each(grouped, rows):
    """``[B, K, ...]`` as ``[rows, ...]`` (``rows = B * K``): a step's queries' results."""
    return ops.reshape(grouped, (rows, *ops.shape(grouped)[2:]))


def additive_scores(projected_query, keys, vector, bias=None):
    """``v^T tanh(W q + U h (+ b))``, the additive score: ``projected_query [B, Q, units]``
    (``W q``), ``keys [B, S, units]`` (``U h``), ``vector [units]`` (``v``); ``[B, Q, S]``.

    Under mixed precision the layers hand it float32 (``precision.product``, and weights
    that are not autocast: ``_MemoryAttention``): TensorFlow's CPU kernels convert
    bfloat16 element by element, and the tanh over ``[B, S, units]`` at every decoder
    step was slower in bfloat16 than in float32. The sum over ``units`` is a product with
    ``v``, whose gradient is a product too (docs/benchmarks.md, "The additive score in
    float32"). A ``tensordot`` with the rank-1 ``v``, not ``matmul`` with ``[units, 1]``:
    Keras 3.12 (the newest for Python 3.10) hands a rank-4 by rank-2 ``matmul`` to TensorFlow's
    broadcasting batched product, which aborted a training step on the CPU."""
    return ops.tensordot(additive_hidden(projected_query, keys, bias), vector, axes=1)


def additive_hidden(projected_query, keys, bias=None):
    """``tanh(W q + U h (+ b))``, ``[B, Q, S, units]``: the additive score's hidden layer
    (``additive_scores``; its gradient needs it: ``attention_decoder_kernel``)."""
    keys = precision.cast(keys, projected_query.dtype)  # as given by a caller: any float
    hidden = ops.expand_dims(projected_query, 2) + ops.expand_dims(keys, 1)
    if bias is not None:
        hidden = hidden + bias
    return ops.tanh(hidden)


def masked_softmax(scores, memory_mask=None):
    """The attention weights from ``scores [B, Q, S]`` over the positions where
    ``memory_mask [B, S]`` holds (all where it is None); a row without one is all 0."""
    if memory_mask is None:
        return ops.softmax(scores, axis=-1)
    valid = ops.expand_dims(ops.cast(memory_mask, "bool"), 1)
    # A large negative score underflows to exactly 0 after the softmax;
    # the final where() also zeroes rows that have no valid position.
    lowest = ops.cast(-0.7 * 3.4e38, scores.dtype)
    scores = ops.where(valid, scores, lowest)
    return ops.where(valid, ops.softmax(scores, axis=-1), ops.zeros_like(scores))


class _MemoryAttention(keras.layers.Layer):
    """Shared masking, softmax and context; subclasses define keys and scores.

    Under mixed precision the layer casts for itself: Keras' conversion of its inputs
    would make float32 keys bfloat16 at every decoder step, and a layer without autocast
    still reads its weights in bfloat16 when called alone (Keras opens the scope for a
    mixed layer), so the score's weights are not autocast either. The products in
    bfloat16, an additive score in float32 (``additive_scores``), the softmax in float32,
    the context in bfloat16.
    """

    def __init__(self, **kwargs):
        super().__init__(autocast=False, **kwargs)

    def project_keys(self, memory):
        """The part of the score that depends on the memory only (cacheable)."""
        if not self.built:
            # The weights' shapes depend on the query's size as well as the memory's,
            # and Keras adds no weights to a layer once it is built: no lazy half-build.
            raise ValueError(
                f"{type(self).__name__}.project_keys needs the layer built, and its weights' "
                "shapes depend on the query's size too: call the layer once "
                "(attention(query, memory)) or attention.build(query.shape, memory.shape) "
                "first."
            )
        return self._project_keys(memory)

    def _project_keys(self, memory):
        raise NotImplementedError

    def score(self, query, keys):
        """Unnormalised scores ``[batch, queries, source_len]`` for 3-D queries."""
        raise NotImplementedError

    def call(self, query, memory, keys=None, memory_mask=None, reweight=None):
        """``reweight``: a function of the weights whose result the context is formed
        from (and returned) instead: an experiment that replaces the attention.

        A query of one step, ``[N, units]``, may have several consecutive rows per row
        of ``memory`` (``N = B * K``: a beam's K hypotheses of a sentence): each group
        of K attends as K queries of its memory row, which is read once for them."""
        single_step = len(query.shape) == 2
        if single_step:
            rows = ops.shape(query)[0]
            query = ops.reshape(query, (ops.shape(memory)[0], -1, query.shape[-1]))
        memory = precision.cast(memory, self.compute_dtype)
        if keys is None:
            keys = self._project_keys(memory)
        # The softmax in float32 under mixed precision, as Keras advises for numerically
        # sensitive parts (bfloat16 keeps 8 bits of a weight); the context in the compute
        # dtype again. A no-op in float32.
        scores = ops.cast(self.score(query, keys), "float32")
        weights = ops.cast(masked_softmax(scores, memory_mask), self.compute_dtype)
        if reweight is not None and single_step:  # it sees the weights the caller gets
            weights = ops.reshape(reweight(_one_row_each(weights, rows)), ops.shape(weights))
        elif reweight is not None:
            weights = reweight(weights)
        context = weighted_sum(weights, memory)
        if single_step:
            context, weights = _one_row_each(context, rows), _one_row_each(weights, rows)
        return context, weights

    def compute_output_shape(self, query_shape, memory_shape, keys_shape=None,
                             memory_mask_shape=None):
        leading = tuple(query_shape[:-1])
        return leading + (memory_shape[-1],), leading + (memory_shape[1],)


@keras.saving.register_keras_serializable(package="zoo")
class BahdanauAttention(_MemoryAttention):
    """Additive attention (Bahdanau, Cho & Bengio 2014).

        e_ti = v^T tanh(W s_{t-1} + U h_i)
        a_ti = softmax_i(e_ti)            over the real source positions
        c_t  = sum_i a_ti h_i

    ``U h_i`` is ``project_keys(memory)``: compute it once per source sentence and
    pass it as ``keys=`` at every decoder step.

    Args:
        units: size of the hidden layer of the alignment model (W, U: ``-> units``).
        normalize: weight-normalise v (Salimans & Kingma 2016), ``v = g v / ||v||``
            with a learned scalar g and a bias b inside the tanh, as TensorFlow
            Addons' ``BahdanauAttention(normalize=True)``.

    Weights: ``query_kernel`` W ``[query_dim, units]``, ``key_kernel`` U
    ``[memory_dim, units]``, ``score_vector`` v ``[units]``; with ``normalize``
    also ``score_scale`` g ``[]`` and ``score_bias`` b ``[units]``.
    """

    def __init__(self, units, normalize=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(units, int) or units <= 0:
            raise ValueError(f"`units` must be a positive integer; received units={units!r}.")
        self.units = units
        self.normalize = normalize

    def build(self, query_shape, memory_shape, keys_shape=None, memory_mask_shape=None):
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(query_shape[-1], self.units), initializer="glorot_uniform"
        )
        self.key_kernel = self.add_weight(
            name="key_kernel", shape=(memory_shape[-1], self.units), initializer="glorot_uniform"
        )
        # The score's own weights are read in float32 (``additive_scores``).
        self.score_vector = self.add_weight(
            name="score_vector", shape=(self.units,), initializer="glorot_uniform",
            autocast=False,
        )
        if self.normalize:
            self.score_scale = self.add_weight(
                name="score_scale", shape=(),
                initializer=keras.initializers.Constant(math.sqrt(1.0 / self.units)),
                autocast=False,
            )
            self.score_bias = self.add_weight(
                name="score_bias", shape=(self.units,), initializer="zeros", autocast=False
            )

    def _project_keys(self, memory):
        return precision.product(self, memory, self.key_kernel)

    def score(self, query, keys):
        projected_query = precision.product(self, query, self.query_kernel)
        if not self.normalize:
            return additive_scores(projected_query, keys, self.score_vector)
        vector = self.score_scale * self.score_vector / ops.sqrt(
            ops.sum(ops.square(self.score_vector)))
        return additive_scores(projected_query, keys, vector, self.score_bias)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "normalize": self.normalize}


@keras.saving.register_keras_serializable(package="zoo")
class LuongAttention(_MemoryAttention):
    """Multiplicative attention (Luong, Pham & Manning 2015), same interface.

        dot:     e_ti = s_t^T h_i                      (query_dim == memory_dim)
        general: e_ti = s_t^T W_a h_i
        concat:  e_ti = v^T tanh(W_q s_t + W_k h_i)
        scale=True multiplies the score by a learned scalar g (initially 1).

    ``project_keys`` returns ``h_i`` (dot), ``W_a h_i`` (general) or ``W_k h_i``
    (concat). Luong et al. use the current decoder state as the query.

    Args:
        units: size of the concat score's hidden layer (required for ``concat``;
            for ``general`` the keys take the query's size).
        score: ``"dot"``, ``"general"`` or ``"concat"``.
        scale: learn a scalar factor for the scores.
    """

    SCORES = ("dot", "general", "concat")

    def __init__(self, units=None, score="general", scale=False, **kwargs):
        super().__init__(**kwargs)
        if score not in self.SCORES:
            raise ValueError(
                f"`score` must be one of {self.SCORES}; received score={score!r}."
            )
        if score == "concat" and (not isinstance(units, int) or units <= 0):
            raise ValueError(
                f"score='concat' needs a positive integer `units`; received units={units!r}."
            )
        self.units = units
        self.score_function = score
        self.scale = scale

    def build(self, query_shape, memory_shape, keys_shape=None, memory_mask_shape=None):
        query_dim, memory_dim = query_shape[-1], memory_shape[-1]
        if self.score_function == "dot" and query_dim != memory_dim:
            raise ValueError(
                "score='dot' needs query and memory of the same size; received "
                f"query_dim={query_dim}, memory_dim={memory_dim}. Use score='general'."
            )
        if self.score_function == "general":
            self.key_kernel = self.add_weight(
                name="key_kernel", shape=(memory_dim, query_dim), initializer="glorot_uniform"
            )
        elif self.score_function == "concat":
            self.query_kernel = self.add_weight(
                name="query_kernel", shape=(query_dim, self.units), initializer="glorot_uniform"
            )
            self.key_kernel = self.add_weight(
                name="key_kernel", shape=(memory_dim, self.units), initializer="glorot_uniform"
            )
            self.score_vector = self.add_weight(
                name="score_vector", shape=(self.units,), initializer="glorot_uniform",
                autocast=False,  # read in float32, as BahdanauAttention's
            )
        if self.scale:
            self.score_scale = self.add_weight(name="score_scale", shape=(), initializer="ones")

    def _project_keys(self, memory):
        if self.score_function == "dot":
            return memory
        if self.score_function == "concat":  # additive_scores' float32 under mixed precision
            return precision.product(self, memory, self.key_kernel)
        return ops.matmul(memory, precision.cast(self.key_kernel, self.compute_dtype))

    def score(self, query, keys):
        if self.score_function == "concat":
            scores = additive_scores(precision.product(self, query, self.query_kernel), keys,
                                     self.score_vector)
        else:
            scores = ops.matmul(precision.cast(query, self.compute_dtype),
                                ops.transpose(keys, (0, 2, 1)))
        if self.scale:
            scores = scores * self.score_scale
        return scores

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "score": self.score_function,
            "scale": self.scale,
        }
