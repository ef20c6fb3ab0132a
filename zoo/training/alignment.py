"""Guided alignment training (Chen et al. 2016, "Guided Alignment Training for
Topic-Aware Neural Machine Translation"; OpenNMT-tf's ``guided_alignment_type: ce``).

A statistical word aligner (eflomal, Östling & Tiedemann 2016) aligns the training
pairs word by word, in both directions; the two are symmetrised (grow-diag-final-and).
A produced piece's row of links, normalised, is the distribution its attention is
pulled towards: the loss adds ``weight`` times the cross-entropy between that row and
the decoder's attention at that step, in teacher-forced training. Pieces inherit their
word's links; a row without a link (the [END] step, a word the aligner left out) is
left out of the loss.

The text side (words, links, pieces) is plain Python here; the network side is
``GuidedAlignmentTraining``, a training-time view of a translator that shares its
weights and adds the loss (``recipe["guided_alignment"]``; ``TranslationTask``).
"""

import tempfile
from pathlib import Path

import keras
from keras import ops

from zoo import precision
from zoo.text import tokenizers

# The neighbours grow-diag looks at: the four sides and the four corners.
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
EPSILON = 1e-7  # log(0) guard: a link never falls on padding, whose weight is 0


# -- words ---------------------------------------------------------------------------------


def word_links(source_words, target_words, printer=print):
    """Symmetrised eflomal links of each pair of word lists: a set of ``(source word,
    target word)`` indices per pair (empty where either side has no word). eflomal
    samples (Gibbs) and takes no seed: two runs may differ in a few links."""
    try:
        import eflomal
    except ImportError:
        raise ImportError("Guided alignment needs the eflomal word aligner: pip install "
                          "'keras-sequence-zoo[align]' (or pip install eflomal).") from None
    kept = [i for i, (s, t) in enumerate(zip(source_words, target_words, strict=True))
            if s and t]
    links = [set() for _ in source_words]
    if not kept:  # (eflomal divides by the number of pairs)
        return links
    printer(f"aligning {len(kept):,} pairs of words with eflomal, both directions")
    with tempfile.TemporaryDirectory() as folder:
        forward, reverse = Path(folder) / "forward", Path(folder) / "reverse"
        eflomal.Aligner().align([" ".join(source_words[i]) for i in kept],
                                [" ".join(target_words[i]) for i in kept],
                                links_filename_fwd=str(forward), links_filename_rev=str(reverse))
        both = zip(_read_links(forward), _read_links(reverse), strict=True)
        symmetrised = [grow_diag_final_and(f, r) for f, r in both]
    for i, pair_links in zip(kept, symmetrised, strict=True):
        links[i] = pair_links
    return links


def _read_links(path):
    """eflomal's links file: a line per pair of ``source-target`` indices (both directions
    are written source first)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [{tuple(int(n) for n in link.split("-")) for link in line.split()} for line in lines]


def grow_diag_final_and(forward, reverse):
    """Koehn et al.'s symmetrisation (Moses' default): start from the links both
    directions agree on, add neighbouring links of either direction that join a word
    still unaligned, then any link of either direction between two unaligned words."""
    union, links = forward | reverse, forward & reverse
    sources, targets = {i for i, _ in links}, {j for _, j in links}

    def add(i, j):
        links.add((i, j))
        sources.add(i)
        targets.add(j)

    grown = True
    while grown:
        grown = False
        for i, j in sorted(links):
            for di, dj in NEIGHBOURS:
                point = (i + di, j + dj)
                if point in union and point not in links and (
                        point[0] not in sources or point[1] not in targets):
                    add(*point)
                    grown = True
    for i, j in sorted(union):
        if i not in sources and j not in targets:
            add(i, j)
    return links


# -- pieces --------------------------------------------------------------------------------


def pair_words(preprocessor, sources, targets):
    """``(source words, target words)`` of each pair, as the preprocessor splits them
    before cutting them into pieces (``source_pieces``, ``target_pieces``)."""
    return ([preprocessor.source_words(text) for text in sources],
            [tokenizers.tokenize(text, preprocessor.target_language) for text in targets])


def piece_links(links, source_words, target_words, preprocessor):
    """The word links of one pair brought to pieces: ``(target piece, source piece)``
    for every piece of each linked word (a word's pieces inherit its links); source
    pieces past ``max_source_length`` (cut off the encoder's input) are dropped."""
    source_starts = preprocessor.piece_starts(source_words, preprocessor.source_vocabulary)
    target_starts = preprocessor.piece_starts(target_words, preprocessor.target_vocabulary)
    return {(t, s) for i, j in links
            for s in range(source_starts[i], source_starts[i + 1])
            if s < preprocessor.max_source_length
            for t in range(target_starts[j], target_starts[j + 1])}


def training_links(preprocessor, sources, targets, printer=print):
    """Per training pair, its ``(target piece, source piece)`` links (``make_dataset``)."""
    source_words, target_words = pair_words(preprocessor, sources, targets)
    links = word_links(source_words, target_words, printer)
    result = [piece_links(*pair, preprocessor)
              for pair in zip(links, source_words, target_words, strict=True)]
    linked = sum(bool(pair) for pair in result)
    printer(f"word links: {sum(map(len, links)):,} in {linked:,} of {len(result):,} pairs")
    return result


# -- the loss ------------------------------------------------------------------------------


def alignment_loss(links, attention):
    """Cross-entropy between each produced piece's links, normalised, and its attention
    ``[B, T, S]``, averaged over the rows that have a link (the others add nothing).

    ``links``: ``[B, T, S]``, 1 where target piece t is linked to source piece s.
    """
    links = ops.cast(links, "float32")
    counts = ops.sum(links, axis=-1)
    wanted = links / ops.maximum(counts, 1.0)[..., None]
    per_row = -ops.sum(wanted * ops.log(ops.maximum(ops.cast(attention, "float32"), EPSILON)),
                       axis=-1)
    linked = ops.cast(counts > 0, "float32")
    return ops.sum(per_row * linked) / ops.maximum(ops.sum(linked), 1.0)


class GuidedAlignmentTraining(precision.StatelessAutocast, keras.Model):
    """A translator as ``loop.fit`` trains it with guided alignment: the same weights
    (the translator is a tracked layer of this view, which has none of its own), the
    same logits (of the real tokens only, on TensorFlow: ``RealTokensTraining``), and ``weight * alignment_loss`` added (``add_loss``) when a batch
    brings links: ``((source, [START] target, links), target [END])``. Validation
    batches bring none, so the validation loss stays the translation's cross-entropy,
    comparable with a run without guidance (early stopping watches it)."""

    def __init__(self, translator, weight, **kwargs):
        # The translator's dtype policy: under mixed precision its variables that the view
        # reads through the translator's methods are cast as the translator's call casts them.
        super().__init__(**{"dtype": translator.dtype_policy, **kwargs})
        if not translator.has_attention:
            raise ValueError(f"Guided alignment needs a model with attention; "
                             f"{type(translator).__name__} has none.")
        self.translator, self.weight = translator, weight
        self.built = translator.built

    def call(self, inputs, training=False):
        source_ids, target_input_ids, *links = inputs
        state = self.translator.encode(source_ids, training=training)
        logits, attention = self.translator.decode_teacher_forced(
            target_input_ids, state, training=training, return_attention=True, real_only=True)
        if links:
            self.add_loss(self.weight * alignment_loss(links[0], attention))
        return logits

