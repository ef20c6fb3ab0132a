"""Products of one row by a large weight, split into blocks that fit a core's L2 cache.

For one row (a decoder step of one sentence, a recurrent step at batch 1) a product is
bound by reading its weight from memory, and TensorFlow's oneDNN product ran it slower
on two threads than on one: oneDNN splits it across the intra-op threads, and the
handoff costs more than the second core gains. A product whose operands fit in L2,
oneDNN runs on one thread (TensorFlow's ``ExecuteSingleThreadedGemm``); several such
blocks TensorFlow's inter-op threads run side by side, each core reading its own part.
``sequence_kernels.BatchMajorInBlocks`` splits the recurrent weight so (its blocks
measured per machine, ``kernel_choice``); ``row_product`` does it for a product inside
a step, where the weight is read afresh each time.
"""

import contextlib

from zoo import backend as zoo_backend

BLOCK_BYTES = 512 * 1024  # well inside a core's L2 cache on current x86 CPUs (1-2 MiB)
# Two blocks (the translators' GRU of 256 units) measured 0.95-1.12x one product on two
# threads, inside the noise; 6 to 8 blocks (512 units) 1.6-1.9x.
FROM_BLOCKS = 3
_whole_products = False  # set while an export is traced (``whole_products``)


def blocks_for(rows, columns, itemsize):
    """How many blocks a ``[rows, columns]`` weight makes: as few as keep each within
    ``BLOCK_BYTES``, at most one a column."""
    return min(columns, max(1, -(-rows * columns * itemsize // BLOCK_BYTES)))


def block_sizes(length, count):
    """``length`` split into ``count`` sizes as equal as can be (the first ones larger)."""
    size, extra = divmod(length, count)
    return [size + (i < extra) for i in range(count)]


def several_threads():
    """Whether TensorFlow splits an operation across more than one thread here."""
    import tensorflow as tf

    threads = tf.config.threading.get_intra_op_parallelism_threads()
    return (threads or zoo_backend.usable_cores()) > 1


@contextlib.contextmanager
def whole_products():
    """Trace ``row_product`` as one product: an export runs on other machines (a phone,
    a server of many cores), whose threads and caches this one's choice does not fit."""
    global _whole_products
    saved, _whole_products = _whole_products, True
    try:
        yield
    finally:
        _whole_products = saved


def row_product(row, weight, transpose_weight=False):
    """``row [1, n]`` times ``weight [n, m]`` (or ``[m, n]`` transposed), on TensorFlow;
    in blocks of the weight's rows (a split along its first axis shares the weight's
    buffer, where columns would be copied at every step) when the product is split
    across threads here and the weight makes at least ``FROM_BLOCKS`` blocks. Rows of
    ``weight`` are the output's columns when transposed (concatenated), else the
    input's (their products summed)."""
    import tensorflow as tf

    # split along rows: at most one block a row (blocks_for caps by columns)
    count = min(blocks_for(*weight.shape, tf.as_dtype(weight.dtype).size), weight.shape[0])
    if _whole_products or row.shape[0] != 1 or count < FROM_BLOCKS or not several_threads():
        return tf.matmul(row, weight, transpose_b=transpose_weight)
    sizes = block_sizes(weight.shape[0], count)
    parts = tf.split(weight, sizes, axis=0)
    if transpose_weight:
        return tf.concat([tf.matmul(row, part, transpose_b=True) for part in parts], axis=-1)
    return tf.add_n([tf.matmul(piece, part)
                     for piece, part in zip(tf.split(row, sizes, axis=-1), parts)])
