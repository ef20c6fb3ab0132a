"""Attention against attributions: is the source word a translator looks at most the
one its produced word depends on most?

After Jain & Wallace (2019), "Attention is not Explanation", and Wiegreffe & Pinter
(2019), "Attention is not not Explanation". Section 4 of docs/experiments.md shows the
attention of the RNNsearch presets as alignments and warns that a weight shows roughly
where the model looks, not why it writes a word. Measured here for each translation
preset with attention (``PRESETS``), greedy, on ``SENTENCES`` sentences drawn from its
test split:

1. Agreement. For every produced word (the final ``[END]`` left out), the source word
   (as ``zoo.text.tokenize`` splits them) that each of three measures ranks first:
   - attention: the decoder's weights;
   - deletion: the fall of the produced word's log-probability when the source word
     (all its pieces) is deleted and the decoder re-run, teacher-forced on the same
     produced words (what Jain & Wallace call leave-one-out);
   - gradient x input: ``|sum over the word's pieces and the embedding dimension of
     d log p / d e * e|``, ``e`` the source embeddings (the absolute value: a word
     that lowers the probability also matters).
   How often their first words agree, against chance (1 / source words, averaged).
   Pieces are measured and then brought to words as ``TranslationPreprocessor.alignment``
   does for attention (a source word's pieces summed, a produced word's pieces
   averaged), so the three are compared on the same words.
2. Replacement. Each step's weights replaced by (a) the uniform distribution over the
   real source positions, (b) a random permutation of the model's own weights over them
   (a new one at every step, seeded): the total variation distance between the output
   distributions at each step of the greedy output (teacher-forced on it), and greedy
   BLEU with the replaced attention.

Run: ``zoo experiment attributions --out docs/experiments``.
"""

import hashlib

import numpy as np
from keras import ops

import zoo
from zoo import backend, decoding, evaluation, plots
from zoo.evaluation import splits
from zoo.models.seq2seq import output_limits
from zoo.models.special_ids import SPECIAL_IDS
from zoo.text.vocabulary import END_ID, PAD_ID, START_ID, pad_batch

PRESETS = ("gru_bahdanau_cmn_en", "gru_bahdanau_en_cmn", "gru_bahdanau_en_fr")
SENTENCES, QUICK_SENTENCES = 200, 3
SEED = 0  # which test sentences, and the permutations
BATCH_SIZE = 50  # sentences at a time (deletions: that many variants at a time)
MEASURES = ("attention", "deletion", "gradient")
PAIRS = (("attention", "deletion"), ("attention", "gradient"), ("deletion", "gradient"))
REPLACEMENTS = ("uniform", "permuted")


def run(out_dir, quick=False, printer=print):
    results = {"sentences_per_preset": QUICK_SENTENCES if quick else SENTENCES, "seed": SEED,
               "decoding": "greedy", "presets": {}}
    for name in PRESETS:
        sources, references = sampled_test_pairs(name, results["sentences_per_preset"])
        measured = measure(zoo.load(name), sources, references, printer)
        results["presets"][name] = {"weights_sha256": weights_digest(name), **measured}
        printer(summary_line(name, measured))
    figures = [plot_agreement(results["presets"], out_dir / "attributions_agreement.png"),
               plot_total_variation(results["presets"],
                                    out_dir / "attributions_replacement.png")]
    for measured in results["presets"].values():  # per-step distances: figure only
        for replaced in measured["replacement"].values():
            del replaced["per_step"]
    return {**results, "figures": [p.name for p in figures]}


def sampled_test_pairs(name, count):
    """``count`` (source, reference) pairs of the preset's test split, drawn with
    ``SEED`` (the split is ordered by length: its first sentences are its shortest)."""
    sources, references = splits.preset_splits(name)["test"]
    chosen = np.sort(np.random.default_rng(SEED).choice(len(sources), count, replace=False))
    return [sources[i] for i in chosen], [references[i] for i in chosen]


def weights_digest(name):
    """The first 16 hex digits of the preset's weights file: which weights were measured."""
    path = zoo.presets.resolve(name) / "model.weights.h5"
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def measure(model, sources, references, printer=print):
    """Everything measured on one model: ``{"agreement", "on_punctuation",
    "replacement"}`` (see the module's docstring)."""
    backend.require_tensorflow("The gradient x input attribution")
    outputs, rows = [], {name: [] for name in MEASURES}
    replaced = {kind: {"outputs": [], "per_step": []} for kind in REPLACEMENTS}
    rng = np.random.default_rng(SEED)
    for start in range(0, len(sources), BATCH_SIZE):
        batch = Batch(model, sources[start:start + BATCH_SIZE])
        outputs += batch.outputs
        for name, matrices in batch.word_level().items():
            rows[name] += matrices
        for kind in REPLACEMENTS:
            replace = uniform if kind == "uniform" else permuted(batch.source_ids, model, rng)
            replaced[kind]["per_step"] += batch.total_variation(replace)
            replaced[kind]["outputs"] += batch.greedy_texts(replace)
    language = model.target_language
    original_bleu = evaluation.bleu(outputs, references, language)["score"]
    printer(f"{model.source_language}->{language}: {len(sources)} sentences, greedy BLEU "
            f"{original_bleu}")
    return {
        "sentences": len(sources),
        "agreement": agreement(rows),
        # The share of produced words (not punctuation) whose first source word is
        # punctuation, by each measure (attention's is section 4's measurement).
        "on_punctuation": {
            name: evaluation.attention_on_punctuation(
                sources, outputs, rows[name], model.source_language, language)["percent"]
            for name in MEASURES},
        "bleu": original_bleu,
        "replacement": {kind: replacement_summary(found, references, outputs, language)
                        for kind, found in replaced.items()},
    }


# -- one batch of sentences: the greedy output and what is measured on it ---------------------
class Batch:
    """A batch of source texts, their greedy translations (``model.generate_ids``, what
    ``model.translate`` decodes) and the decoder teacher-forced on them: ``targets [B, T]``
    is the produced pieces then ``[END]``, ``target_inputs`` is ``[START]`` then the
    produced pieces."""

    def __init__(self, model, texts):
        self.model, self.texts = model, texts
        preprocessor = model.preprocessor
        self.source_ids = preprocessor.tokenize_sources(texts)
        ids, _ = model.generate_ids(self.source_ids)  # what translate(texts) decodes
        self.outputs = self.texts_of(ops.convert_to_numpy(ids))
        # The produced pieces ([END] left out); none where the translation is empty
        # (a source without a known piece), as translate gives no attention rows then.
        self.produced = [preprocessor.target_vocabulary.ids_of(preprocessor.output_pieces(row))
                         if output else [] for row, output in zip(ids, self.outputs)]
        self.target_inputs = pad_batch([[START_ID, *row] for row in self.produced])
        self.targets = pad_batch([[*row, END_ID] for row in self.produced])
        self.log_probs, self.attention = teacher_forced(model, self.source_ids,
                                                        self.target_inputs)

    def texts_of(self, ids):
        return [self.model.preprocessor.detokenize_translation(source, row)
                for source, row in zip(self.source_ids, ids)]

    def greedy_ids(self, replace=None):
        """Greedy ids ``[B, L]`` (``[END]``, then pads) as ``model.generate_ids`` decodes
        them, through ``step_function(model, replace)``."""
        model, source_ids = self.model, self.source_ids
        state, memory = decoder_start(model, source_ids, replace)
        tokens, _ = decoding.decode(
            step_function(model, replace), state, decoding.Greedy(special_ids=SPECIAL_IDS),
            len(source_ids), model.max_output_length, return_attention=False,
            max_lengths=output_limits(source_ids, model.max_output_length), memory=memory)
        return ops.convert_to_numpy(tokens)

    def greedy_texts(self, replace):
        return self.texts_of(self.greedy_ids(replace))

    def total_variation(self, replace):
        """Per sentence, the total variation distance at every step of its output
        (``[END]``'s included) between the model's distribution and the one with
        ``replace``d attention, teacher-forced on the same output."""
        replaced, _ = teacher_forced(self.model, self.source_ids, self.target_inputs, replace)
        distances = total_variation(np.exp(self.log_probs), np.exp(replaced))
        return [distances[b, :len(row) + 1].tolist() for b, row in enumerate(self.produced)]

    # -- the three measures, at piece level and at word level --------------------------------
    def deletion_drops(self):
        """Per sentence ``[T, source words]``: ``log p(y_t)`` minus ``log p(y_t)`` with the
        word's pieces deleted from the source (the same produced prefix forced)."""
        original = log_probs_of(self.log_probs, self.targets)
        variants = [(b, pieces) for b, text in enumerate(self.texts)
                    for pieces in source_word_pieces(self.model.preprocessor, text)]
        deleted = []
        for start in range(0, len(variants), BATCH_SIZE):
            chunk = variants[start:start + BATCH_SIZE]
            rows = [b for b, _ in chunk]
            sources = pad_batch([np.delete(self.source_ids[b][self.source_ids[b] != PAD_ID],
                                           pieces).tolist() for b, pieces in chunk])
            encoded = self.model.encode(sources)
            log_probs = ops.log_softmax(self.model.decode_teacher_forced(
                self.target_inputs[rows], encoded), axis=-1)
            deleted.append(log_probs_of(log_probs, self.targets[rows]))
        deleted = np.concatenate(deleted) if deleted else np.zeros((0, self.targets.shape[1]))
        owner = np.array([b for b, _ in variants])
        return [(original[b][:, None] - deleted[owner == b].T) for b in range(len(self.texts))]

    def gradient_x_input(self):
        """``[B, T, S]``: ``d log p(y_t) / d e_s . e_s``, signed (``e_s``: the embedding of
        source piece ``s``)."""
        import tensorflow as tf

        embedded = tf.convert_to_tensor(self.model.source_embedding(self.source_ids))
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(embedded)
            encoded = self.model.encode_embedded(embedded, self.source_ids != PAD_ID)
            log_probs = tf.nn.log_softmax(
                self.model.decode_teacher_forced(self.target_inputs, encoded), axis=-1)
            produced = tf.gather(log_probs, self.targets, axis=-1, batch_dims=2)
            per_step = [tf.reduce_sum(produced[:, t]) for t in range(self.targets.shape[1])]
        # Sentences are independent: the gradient of a step's sum over the batch is each
        # sentence's own gradient.
        steps = [tf.reduce_sum(tape.gradient(total, embedded) * embedded, axis=-1)
                 for total in per_step]
        del tape
        return np.stack([step.numpy() for step in steps], axis=1)

    def word_level(self):
        """``{measure: [per sentence, (produced words, source words)]}`` for ``MEASURES``:
        rows and columns as ``preprocessor.alignment`` brings attention to words."""
        preprocessor = self.model.preprocessor
        gradients = self.gradient_x_input()
        found = {name: [] for name in MEASURES}
        for b, (text, drops) in enumerate(zip(self.texts, self.deletion_drops())):
            ids = self.targets[b]
            by_piece = {"attention": self.attention[b],
                        "deletion": drops @ first_piece_columns(preprocessor, text),
                        "gradient": gradients[b]}
            for measure, weights in by_piece.items():
                words = preprocessor.alignment(text, ids, weights).weights
                found[measure].append(np.abs(words) if measure == "gradient" else words)
        return found


def log_probs_of(log_probs, targets):
    """``log p`` of each target ``[B, T]`` from log-probabilities ``[B, T, V]``."""
    return np.take_along_axis(ops.convert_to_numpy(log_probs), targets[..., None], -1)[..., 0]


def decoder_start(model, source_ids, replace=None):
    """``(state, memory)`` of ``step_function`` for these sources: the decoder's first
    state and a step counter; the rest of ``model.encode``'s state, and what ``replace``
    reads."""
    encoded = model.encode(source_ids)
    state = {"decoder": encoded["decoder"], "step": ops.zeros((len(source_ids),), "int32")}
    memory = {k: v for k, v in encoded.items() if k != "decoder"}
    return state, {**memory, **(replace.memory if replace is not None else {})}


def teacher_forced(model, source_ids, target_inputs, replace=None):
    """``(log-probabilities [B, T, V], attention weights [B, T, S])`` of the decoder
    reading ``target_inputs`` (numpy arrays), step by step through ``step_function``."""
    state, memory = decoder_start(model, source_ids, replace)
    step = step_function(model, replace)
    log_probs, weights = [], []
    for t in range(target_inputs.shape[1]):
        logits, state, attention = step(target_inputs[:, t], state, memory)
        log_probs.append(ops.convert_to_numpy(ops.log_softmax(logits, axis=-1)))
        weights.append(ops.convert_to_numpy(attention))
    return np.stack(log_probs, axis=1), np.stack(weights, axis=1)


def source_word_pieces(preprocessor, text):
    """Per source word, the positions of its pieces among the source pieces (the words
    ``preprocessor.alignment`` has columns for; a word past ``max_source_length`` has no
    piece left and is not listed)."""
    starts = preprocessor.piece_starts(preprocessor.source_words(text),
                                       preprocessor.source_vocabulary)
    positions = [list(range(start, min(end, preprocessor.max_source_length)))
                 for start, end in zip(starts, starts[1:])]
    return [p for p in positions if p]


def first_piece_columns(preprocessor, text):
    """``[source words, source pieces]``: 1 at each word's first piece, so that a value
    per word, put on that piece, comes back whole when ``alignment`` sums a word's
    piece columns."""
    words = source_word_pieces(preprocessor, text)
    columns = np.zeros((len(words), len(preprocessor.source_pieces(text))))
    columns[np.arange(len(words)), [pieces[0] for pieces in words]] = 1
    return columns


# -- replacing the attention ------------------------------------------------------------------
def step_function(model, replace=None):
    """A ``zoo.decoding`` step function ``(tokens, state, memory) -> (logits, state,
    weights)``: the model's own ``decode_step``; with ``replace``, the attention weights
    are replaced by ``replace(weights, memory, step)`` before the context is formed.
    ``state``: ``{"decoder", "step"}``; ``memory``: the rest of ``model.encode``'s state."""

    def step(tokens, state, memory):
        reweight = None if replace is None else (
            lambda weights: replace(weights, memory, state["step"]))
        logits, new_state, weights = model.decode_step(
            tokens, {**memory, "decoder": state["decoder"]}, reweight=reweight)
        return logits, {"decoder": new_state["decoder"], "step": state["step"] + 1}, weights

    return step


class Replacement:
    """``replace(weights, memory, step)`` for ``step_function``, and what it needs in the
    decoder's memory (a row per sentence, which the decoding loop keeps in step)."""

    def __init__(self, function, memory=None):
        self.function, self.memory = function, memory or {}

    def __call__(self, weights, memory, step):
        return self.function(weights, memory, step)


def _uniform(weights, memory, step):
    real = ops.cast(memory["mask"], weights.dtype)
    return real / ops.maximum(ops.sum(real, axis=-1, keepdims=True), 1.0)


uniform = Replacement(_uniform)


def permutation_orders(source_ids, steps, rng):
    """``[B, steps, S]`` int32: for each sentence and step a random order of its real
    source positions (the pads after them, in place)."""
    keys = rng.random((*source_ids.shape[:1], steps, source_ids.shape[1]))
    keys[np.broadcast_to((source_ids == PAD_ID)[:, None], keys.shape)] = 2.0  # pads last
    return np.argsort(keys, axis=-1, kind="stable").astype(np.int32)


def permuted(source_ids, model, rng):
    """The model's weights over the real positions, shuffled anew at every step."""

    def shuffle(weights, memory, step):
        orders = memory["orders"]
        at_step = ops.take_along_axis(
            orders, ops.broadcast_to(ops.reshape(step, (-1, 1, 1)),
                                     (ops.shape(orders)[0], 1, ops.shape(orders)[2])), axis=1)
        return ops.take_along_axis(weights, ops.squeeze(at_step, 1), axis=-1)

    orders = permutation_orders(source_ids, model.max_output_length + 1, rng)
    return Replacement(shuffle, {"orders": ops.convert_to_tensor(orders)})


def total_variation(p, q):
    """``0.5 * sum |p - q|`` over the last axis."""
    return 0.5 * np.abs(np.asarray(p, np.float64) - np.asarray(q, np.float64)).sum(axis=-1)


# -- summaries --------------------------------------------------------------------------------
def agreement(rows):
    """How often the measures' first source words agree, over the produced words of
    sentences with at least two source words (one word agrees with itself)."""
    first = {measure: [] for measure in MEASURES}
    chance = []
    for matrices in zip(*(rows[m] for m in MEASURES)):
        if matrices[0].shape[1] < 2:
            continue
        for measure, matrix in zip(MEASURES, matrices):
            first[measure] += matrix.argmax(axis=-1).tolist()
        chance += [1 / matrices[0].shape[1]] * matrices[0].shape[0]
    first = {m: np.array(v) for m, v in first.items()}
    percent = {f"{a}_{b}": percent_of(first[a] == first[b]) for a, b in PAIRS}
    return {"produced_words": len(chance), **percent, "chance": percent_of(chance)}


def percent_of(values):
    return round(100 * float(np.mean(values)), 1) if len(values) else 0.0


def replacement_summary(found, references, outputs, language):
    steps = np.concatenate([np.asarray(d) for d in found["per_step"]])
    return {
        "steps": len(steps),
        "mean_total_variation": round(float(steps.mean()), 3),
        "median_total_variation": round(float(np.median(steps)), 3),
        "bleu": evaluation.bleu(found["outputs"], references, language)["score"],
        "outputs_changed": percent_of([a != b for a, b in zip(found["outputs"], outputs)]),
        "per_step": steps.round(4).tolist(),
    }


def summary_line(name, measured):
    agree = measured["agreement"]
    replaced = measured["replacement"]
    return (f"{name}: top source word, attention = deletion {agree['attention_deletion']}%, "
            f"= gradient x input {agree['attention_gradient']}%, deletion = gradient x input "
            f"{agree['deletion_gradient']}% (chance {agree['chance']}%, "
            f"{agree['produced_words']} words); BLEU {measured['bleu']}, "
            + ", ".join(f"{kind} {r['bleu']} (mean TV {r['mean_total_variation']})"
                        for kind, r in replaced.items()))


# -- figures ----------------------------------------------------------------------------------
def plot_agreement(presets, path):
    figure, axes = plots.figure(6.5, 4.0)
    labels = {"attention_deletion": "attention = deletion",
              "attention_gradient": "attention = gradient x input",
              "deletion_gradient": "deletion = gradient x input", "chance": "chance"}
    width = 0.8 / len(labels)
    for i, (key, label) in enumerate(labels.items()):
        values = [measured["agreement"][key] for measured in presets.values()]
        axes.bar(np.arange(len(presets)) + (i - 1.5) * width, values, width, label=label,
                 color="lightgrey" if key == "chance" else None)
    axes.set_xticks(np.arange(len(presets)), list(presets))
    axes.set(ylabel="% of produced words", ylim=(0, 100),
             title="Same top source word (greedy, test sentences)")
    return plots.save(figure, axes, path)


def plot_total_variation(presets, path):
    figure, axes = plots.figure(6.5, 4.0)
    for number, (name, measured) in enumerate(presets.items()):
        for kind, style in zip(REPLACEMENTS, ("-", "--")):
            replaced = measured["replacement"][kind]
            steps = np.sort(replaced["per_step"])
            axes.plot(steps, np.arange(1, len(steps) + 1) / len(steps), style,
                      color=f"C{number}", label=f"{name}, {kind}: BLEU {measured['bleu']} -> "
                                                f"{replaced['bleu']}")
    axes.set(xlabel="total variation distance at a step (teacher-forced)", xlim=(0, 1),
             ylabel="share of steps at most this far", ylim=(0, 1),
             title="Output distributions with the attention replaced")
    return plots.save(figure, axes, path)
