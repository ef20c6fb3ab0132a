"""``zoo benchmark``: speed measured side by side, in one run, on this machine.

Timings on a shared machine are noisy, so every comparison here alternates the
contenders round by round (zoo, Keras, zoo, Keras, ...) and reports medians: a
slow moment of the machine hits both sides instead of one.

One module per benchmark (``layers``, ``translate``, ``decoding``, ``serve``,
``training``, ``fine_tune``), the TF tutorial's translator they compare with (``tutorial``) and their
shared timing (``timing``; the paired rounds themselves are ``zoo.layers.timing``).
"""
