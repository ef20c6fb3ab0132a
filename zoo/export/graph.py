"""What every export does to a model while tracing it."""

import contextlib


@contextlib.contextmanager
def without_cudnn(model):
    """Trace the recurrent layers' portable loop, never cuDNN; restored afterwards.

    An export traced on a GPU machine would otherwise contain ``CudnnRNN`` ops,
    which have no CPU kernel (the SavedModel would not serve on CPU) and which
    TFLite cannot convert.
    """
    layers = [
        layer for layer in model._flatten_layers(include_self=False, recursive=True)
        if getattr(layer, "use_cudnn", None) is not None
    ]
    saved = [layer.use_cudnn for layer in layers]
    for layer in layers:
        layer.use_cudnn = False
    try:
        yield model
    finally:
        for layer, value in zip(layers, saved):
            layer.use_cudnn = value
