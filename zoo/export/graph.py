"""What every export does to a model before tracing it."""


def without_cudnn(model):
    """Make the recurrent layers use their portable loop, never cuDNN.

    An export traced on a GPU machine would otherwise contain ``CudnnRNN`` ops,
    which have no CPU kernel (the SavedModel would not serve on CPU) and which
    TFLite cannot convert.
    """
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if getattr(layer, "use_cudnn", None) is not None:
            layer.use_cudnn = False
    return model
