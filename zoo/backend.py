"""What differs between the Keras backends (TensorFlow, JAX, PyTorch), in one place.

The layers, models and decoding are written with ``keras.ops``; this module holds
the few things that cannot be: which backend is running, how a decoding function
is compiled there, and the one-line refusal of what needs TensorFlow (exports).
Importing this module imports nothing heavy (the CLI catches ``BackendError``
before Keras is loaded).
"""

import threading

import numpy as np

# Serving threads may share one model: this keeps two of them from compiling the same
# function twice when both find it missing from the model's cache.
_COMPILING = threading.Lock()


def name():
    import keras

    return keras.backend.backend()


def is_tensorflow():
    return name() == "tensorflow"


class BackendError(RuntimeError):
    """What was asked needs another Keras backend than the one running."""


def require_tensorflow(what):
    """Raise a one-line ``BackendError`` unless the backend is TensorFlow."""
    if not is_tensorflow():
        raise BackendError(
            f"{what} needs the TensorFlow backend; this process runs Keras on "
            f"{name()!r}. Run it again with KERAS_BACKEND=tensorflow."
        )


def usable_cores():
    """How many cores this process may run on: its CPU affinity where the system says
    (Linux), else every core."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


def side_by_side_searches():
    """How many searches ``translate`` runs side by side on one batch's parts: on
    TensorFlow, as many as its inter-op pool (which runs operations side by side) holds
    operations of its intra-op threads each, on the cores this process may use; elsewhere
    one. A decoder step's products over a few dozen rows split poorly across threads, and
    its hundreds of small operations not at all: with one thread per operation, two
    searches on two cores do more than one (greedy on 64 sentences 1.30x, beam 5 1.58x);
    with TensorFlow's default, every operation on all cores, one search (two ran at
    0.93x). docs/benchmarks.md, "Beam's coverage penalty without the attention rows, and
    two searches side by side"."""
    if not is_tensorflow():
        return 1
    import tensorflow as tf

    cores = usable_cores()
    inter_op = tf.config.threading.get_inter_op_parallelism_threads() or cores
    intra_op = tf.config.threading.get_intra_op_parallelism_threads() or cores
    return max(1, min(inter_op, cores) // intra_op)


_SIDE_BY_SIDE = {}


def map_side_by_side(function, items):
    """``[function(item) for item in items]``, the items run side by side in threads
    (TensorFlow releases Python's lock while it computes); one item runs here."""
    if len(items) == 1:
        return [function(items[0])]
    import concurrent.futures

    with _COMPILING:  # one pool for the process, made on first use
        pool = _SIDE_BY_SIDE.get("pool")
        if pool is None:
            pool = _SIDE_BY_SIDE["pool"] = concurrent.futures.ThreadPoolExecutor(
                usable_cores(), thread_name_prefix="zoo-search")
    return list(pool.map(function, items))


def use_one_thread_per_operation():
    """On TensorFlow, run each operation on one thread and independent operations side by
    side (its inter-op pool keeps one thread per core): what a process that translates
    one sentence at a time runs fastest with. A step's products at batch 1 are too small
    to split across threads; on the 2-core AMD EPYC (AVX-512) of December 2026, greedy
    ``translate`` of one sentence took 6.0-6.7 ms so against 8.7-8.8 ms with TensorFlow's
    default (two threads per operation) and 8.0-8.1 ms on one thread in all (``zoo
    benchmark decoding NAME --threads 1 2 1/2``, docs/benchmarks.md). A batch is then
    searched in parts side by side (``side_by_side_searches``), which made it faster so
    too: greedy on 64 sentences 1.32x the default, beam 5 1.21x. Left as it is where the
    user set ``TF_NUM_INTRAOP_THREADS`` or TensorFlow has started already with other
    settings (it fixes its pools once). Returns whether one thread per operation is in
    effect."""
    import os

    if not is_tensorflow() or os.environ.get("TF_NUM_INTRAOP_THREADS"):
        return False
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
    except RuntimeError:  # started already: its pools are fixed
        return False
    return True


def compile_function(function, variables=(), one_row=False):
    """``function`` compiled for this backend, called with numpy arrays.

    Arguments are nests of numpy arrays (their dtypes kept); results come back as
    numpy arrays (a nest of them). ``variables``: the Keras variables ``function``
    reads (a model's ``variables``): every call sees their current values.

    TensorFlow traces one graph, on the first call, for every shape of arguments of
    those ranks (``one_row``: its first argument's first dimension fixed at 1, so that
    the graph knows it: a search over one sentence). JAX compiles once per shape
    (``jax.jit``; callers keep the number of shapes small), with the variables' values
    as inputs, not as constants frozen at the first call. PyTorch runs eagerly, without
    gradients.
    """
    import keras

    backend = name()
    if backend == "jax":
        import jax

        variables = list(variables)

        @jax.jit
        def stateless(values, *arguments):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return function(*arguments)

        def compiled(*arguments):
            return stateless([variable.value for variable in variables], *arguments)
    elif backend == "torch":
        import torch

        def compiled(*arguments):
            with torch.no_grad():
                return function(*arguments)
    else:
        compiled = None  # traced on the first call, when the ranks are known

    def call(*arguments):
        nonlocal compiled
        arguments = keras.tree.map_structure(np.asarray, arguments)
        if compiled is None:
            compiled = _tensorflow_function(function, arguments, one_row)
        tensors = keras.tree.map_structure(keras.ops.convert_to_tensor, arguments)
        return keras.tree.map_structure(_to_numpy, compiled(*tensors))

    return call


def model_function(model, key, function, one_row=False):
    """``function`` compiled by ``compile_function`` with ``model``'s variables (and
    ``one_row``), once per model and ``key``: a model's searches, its language-model steps, its
    ``inspect``. The cache is kept out of Keras attribute tracking: it is not model
    state (and a SavedModel cannot save a tracked dict with tuple keys)."""
    with _COMPILING:
        cache = model.__dict__.get("_compiled_functions")
        if cache is None:
            cache = {}
            object.__setattr__(model, "_compiled_functions", cache)
        if key not in cache:
            cache[key] = compile_function(function, model.variables, one_row)
        return cache[key]


def forget_model_functions(model):
    """Drop what ``model_function`` compiled for ``model`` (they captured something that
    has changed since, such as a length penalty)."""
    object.__setattr__(model, "_compiled_functions", {})


def _tensorflow_function(function, arguments, one_row=False):
    """A ``tf.function`` whose signature leaves every dimension open (but the first
    argument's first, with ``one_row``): one trace."""
    import keras
    import tensorflow as tf

    signature = keras.tree.map_structure(
        lambda array: tf.TensorSpec([None] * array.ndim, tf.as_dtype(array.dtype)), arguments)
    signature = list(signature)
    if one_row:
        first = signature[0]
        signature[0] = tf.TensorSpec([1, *first.shape[1:]], first.dtype)
    compiled = tf.function(function, input_signature=signature, autograph=False)
    # TensorFlow counts traces by the Python code traced, not by tf.function: the
    # functions made from one closure (a model's searches, one per beam size, made anew
    # when the length penalty changes) looked like one function retracing, and
    # `zoo train` printed "triggered tf.function retracing" warnings. Each traces once
    # (its signature admits every shape), so the warning is off for it, as TensorFlow
    # turns it off for the functions it restores from a SavedModel.
    compiled._omit_frequent_tracing_warning = True
    return compiled


def _to_numpy(value):
    import keras

    return None if value is None else keras.ops.convert_to_numpy(value)
