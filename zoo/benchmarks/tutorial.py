"""The translator of TensorFlow's attention tutorial, rebuilt: what ``zoo benchmark translate``
measures the zoo's translators against."""

import keras
import numpy as np

from zoo.text.vocabulary import END_ID, PAD_ID, START_ID

TUTORIAL_MAX_LENGTH = 50  # the tutorial's translate(max_length=50)


def tutorial_translator(source_vocabulary_size, target_vocabulary_size, units=256,
                        start_id=START_ID, end_id=END_ID):
    """The translator of TensorFlow's tutorial "Neural machine translation with
    attention" (tensorflow.org/text/tutorials/nmt_with_attention), rebuilt from its
    published layers in Keras 3 and left untrained: embeddings of ``units``, a
    bidirectional GRU encoder (outputs summed), a GRU decoder whose output queries a
    one-head ``MultiHeadAttention`` over the encoder outputs, residual and
    ``LayerNormalization``, a ``Dense`` layer over the target vocabulary; greedy.

    Returns ``(decode, parameter_count)``; ``decode(source_ids [B, S], steps)``
    returns ``[B, steps]`` tokens. The tutorial exports ``translate`` as a
    ``tf.function`` whose Python loop is unrolled to 50 steps (its early ``break``
    runs only eagerly), so its cost does not depend on the weights; its optional
    ``tf.range`` loop stops when every sentence has ended, which for an untrained
    model never happens, so ``steps`` below 50 stand in for where a trained one stops.
    """
    import tensorflow as tf

    encoder_embedding = keras.layers.Embedding(source_vocabulary_size, units, mask_zero=True)
    encoder = keras.layers.Bidirectional(
        keras.layers.GRU(units, return_sequences=True), merge_mode="sum")
    decoder_embedding = keras.layers.Embedding(target_vocabulary_size, units, mask_zero=True)
    decoder = keras.layers.GRU(units, return_sequences=True, return_state=True)
    attention = keras.layers.MultiHeadAttention(num_heads=1, key_dim=units)
    normalization = keras.layers.LayerNormalization()
    output_layer = keras.layers.Dense(target_vocabulary_size)

    def next_token(context, token, done, state):
        outputs, state = decoder(decoder_embedding(token), initial_state=state)
        outputs = normalization(outputs + attention(query=outputs, value=context))
        token = tf.argmax(output_layer(outputs), axis=-1, output_type=tf.int32)
        done = done | tf.equal(token, end_id)
        return tf.where(done, PAD_ID, token), done, state

    def encode(source_ids):
        """The encoder outputs and the first step's ``(token, done, state)``."""
        batch = tf.shape(source_ids)[0]
        return encoder(encoder_embedding(source_ids)), (
            tf.fill([batch, 1], start_id), tf.zeros([batch, 1], tf.bool), tf.zeros([batch, units]))

    def decode_unrolled(source_ids, steps):
        context, step = encode(source_ids)
        tokens = []
        for _ in range(steps):
            step = next_token(context, *step)
            tokens.append(step[0])
        return tf.concat(tokens, axis=-1)

    def decode_loop(source_ids, steps):
        context, step = encode(source_ids)

        def body(t, token, done, state, tokens):
            token, done, state = next_token(context, token, done, state)
            return t + 1, token, done, state, tokens.write(t, token[:, 0])

        *_, tokens = tf.while_loop(lambda t, *_: t < steps, body,
                                   (0, *step, tf.TensorArray(tf.int32, size=steps)))
        return tf.transpose(tokens.stack())

    ids = tf.TensorSpec([None, None], tf.int32)
    unrolled = tf.function(lambda source_ids: decode_unrolled(source_ids, TUTORIAL_MAX_LENGTH),
                           input_signature=[ids])
    looped = tf.function(decode_loop, input_signature=[ids, tf.TensorSpec([], tf.int32)])

    def decode(source_ids, steps=TUTORIAL_MAX_LENGTH):
        if steps == TUTORIAL_MAX_LENGTH:
            return unrolled(source_ids).numpy()
        return looped(source_ids, tf.constant(steps)).numpy()

    decode(tf.ones([1, 1], tf.int32), 1)  # builds the layers
    layers = (encoder_embedding, encoder, decoder_embedding, decoder, attention, normalization,
              output_layer)
    parameters = sum(int(np.prod(w.shape)) for layer in layers for w in layer.weights)
    return decode, parameters
