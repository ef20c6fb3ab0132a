"""``zoo demo``: one page to translate, sample, classify and look inside the presets.

Built on Gradio, with plotly figures that the browser draws (hovering a cell shows its
value); both come with the ``demo`` extra (``pip install -e ".[demo]"``). Starting the page
downloads nothing: the presets are read from ``saved_models/`` (each loaded on first use),
the page's scripts are served from the installed gradio package, its fonts are the
browser's own but for Chinese, Japanese and Korean glyphs, which come from the Noto Sans
CJK file of the ``mplfonts`` package that the plots use too (``cjk_font_face``), so that
a machine without a CJK font shows them; Gradio's analytics and version check are off.

Bad input (empty, too long, characters a model never saw, outside a teaching task's
domain) shows as a message beside the outputs: the models raise ``ValueError`` /
``TypeError`` with messages written for people (docs/bad_input.md), and the page shows
them as they are.
"""

import functools
import os
import sys

# Read by gradio when it is imported: otherwise it reports usage and asks for its newest
# version over the network as the server starts.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"

import gradio as gr  # noqa: E402
import numpy as np  # noqa: E402
import plotly.graph_objects as go  # noqa: E402

import zoo  # noqa: E402
from zoo import inspection, plots  # noqa: E402
from zoo.decoding import BeamSearch  # noqa: E402
from zoo.models import preset_model  # noqa: E402

DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 7860
TEACHING_TASKS = ("date_normalization", "addition")
# What the page starts with for each preset (a preset not named here starts empty).
EXAMPLES = {
    "gru_bahdanau_cmn_en": "我读了一本书。",
    "lstm_seq2seq_cmn_en": "我读了一本书。",
    "gru_bahdanau_en_cmn": "Where is the station?",
    "gru_bahdanau_en_fr": "I read a book.",
    "gru_bahdanau_dates": "30 novembre 2026",
    "lstm_seq2seq_addition": "535+61",
    "bilstm_sst2": "a charming, funny film",
}
LANGUAGE_MODEL_PROMPT = "ROMEO:"
# What the language models' look inside starts on: a line or two, short enough that the
# axis labels every character. Generated text is cut to INSPECTED_CHARACTERS for it.
INSPECTED_TEXT = "ROMEO:\nBut soft, what light through yonder window breaks?"
INSPECTED_CHARACTERS = 60
SHOWN_UNITS = 32
# Most labels on a figure's axes (every k-th beyond that; hovering names each cell), and
# the most pixels its rows take: 1,000 characters or 256 units stay readable.
MOST_LABELS = {"x": 80, "y": 40}
MOST_ROWS_HEIGHT = 720
# model.inspect's traces: what each state and gate is called on the page.
TRACE_NAMES = {
    "h": "hidden state h", "c": "cell state c", "i": "input gate i", "f": "forget gate f",
    "c~": "candidate cell c~", "o": "output gate o", "z": "update gate z", "r": "reset gate r",
    "n": "candidate state n",
}
SIGMOID_GATES = {"i", "f", "o", "z", "r"}
# The x axis of a layer's states and gates, by what the model reads at each step
# (translators: by the first part of the layer's name).
STEP_TITLES = {
    "character": "time step (the character read)",
    "word": "time step (the word read, as the model reads it)",
    "encoder": "time step (the source piece read)",
    "decoder": "time step (the piece fed back: [START], then each one produced)",
}
HEATMAP_GUIDE = """\
Each coloured cell is one number; hover a cell to read it.

- **Attention** (rows: the words produced, top to bottom; columns: the source words).
  A row shows where the decoder looked while writing that word: its cells add up to 1,
  and a bright cell means most of the weight went to that source word. A clean
  translation often shows a near-diagonal line, bent where the two languages order words
  differently. The weights show where the model looks, not why it writes a word.
- **States and gates** (columns: the time steps, one per token read, in order; rows: units).
  Follow a row from left to right to see one unit change as the text goes on. Gates
  (input, forget, output, update, reset) lie between 0 (closed: dark) and 1 (open:
  bright); hidden states and candidates lie between -1 (blue) and 1 (red), white near 0;
  an LSTM's cell state c is unbounded, its scale set by its largest value.
  A forget gate near 1 keeps the cell state; an update gate near 1 keeps the old
  hidden state. The units shown are those whose hidden state varies most over the text,
  as `zoo inspect` picks them: the others stay nearly constant.
"""


@functools.lru_cache(maxsize=None)
def loaded(name):
    """A preset's model, loaded on first use: the page starts without loading any."""
    return zoo.load(name)


def presets_by_panel():
    """The preset names of each panel of the page: one panel per kind of model
    (``zoo.models.KINDS``), and the teaching tasks, translators of generated text, apart."""
    panels = {panel: [] for panel in PANELS}
    for name in zoo.list_models():
        kind = preset_model.preset_kind(name)
        teaching = kind == "translation" and zoo.describe(name).get("task") in TEACHING_TASKS
        panels["teaching" if teaching else kind].append(name)
    return panels


def require_text(text):
    """The text typed, refused when there is nothing in it: the models would answer an
    empty text with an empty one, which reads on a page like a fault."""
    if text is None or not text.strip():
        raise ValueError("The text is empty: type a sentence first.")
    return text


def showing_bad_input(cleared):
    """Turn a handler's bad-input errors into a message (its last output) and set its
    other outputs to ``cleared`` (None empties one, ``gr.update()`` leaves it as it is), so
    that no answer to earlier input stays beside the message and the page stays usable."""
    def decorate(handler):
        @functools.wraps(handler)
        def handle(*args):
            try:
                return (*handler(*args), "")
            except (ValueError, TypeError, zoo.PresetError) as error:
                return (*cleared, f"**Cannot do that:** {error}")
        return handle
    return decorate


# -- figures -----------------------------------------------------------------------------------
def labelled_heatmap(values, columns, rows, hover, value_range, colorscale, titles):
    """A plotly heatmap of ``values [rows, columns]`` with text labels on both axes and
    ``titles = (x title, y title)``.

    The axes are numeric with the labels as tick text, since a categorical axis would
    merge a word that occurs twice into one column; ``hover`` names what the row, the
    column and the value are.
    """
    customdata = [[[row, column] for column in columns] for row in rows]
    # Plain lists: plotly would send an array as base64 bytes, which gradio's client passes
    # on undecoded.
    figure = go.Figure(go.Heatmap(
        z=np.asarray(values).tolist(), x=list(range(len(columns))), y=list(range(len(rows))),
        customdata=customdata, hovertemplate=hover + "<extra></extra>",
        zmin=value_range[0], zmax=value_range[1], colorscale=colorscale))
    figure.update_xaxes(side="top", title_text=titles[0], **axis_labels(columns, MOST_LABELS["x"]))
    figure.update_yaxes(autorange="reversed", title_text=titles[1],
                        **axis_labels(rows, MOST_LABELS["y"]))
    # The page's fonts: CJK tick labels and hover labels (plotly's own default font
    # otherwise) in the font the page serves.
    figure.update_layout(margin=dict(l=10, r=10, t=80, b=10), font_family=PAGE_FONT_FAMILY,
                         hoverlabel_font_family=PAGE_FONT_FAMILY,
                         height=max(260, min(28 * len(rows), MOST_ROWS_HEIGHT) + 120))
    return figure


def axis_labels(labels, most):
    """Tick positions and texts: every label, or every k-th when there are more than
    ``most``."""
    every = max(1, -(-len(labels) // most))
    return {"tickvals": list(range(0, len(labels), every)), "ticktext": list(labels[::every])}


def attention_figure(alignment, tokens="words"):
    """The attention of a translation at word level (a ``zoo.text.Alignment``);
    ``tokens``: what its tokens are called on the axes ("words", "characters")."""
    return labelled_heatmap(
        alignment.weights, alignment.source, alignment.produced,
        "%{customdata[0]} ← %{customdata[1]}<br>weight %{z:.3f}", (0.0, 1.0), "Viridis",
        (f"source {tokens}", f"produced {tokens}"))


def visible_character(character):
    """A character as an axis label: blanks made visible."""
    return {" ": "␣", "\n": "↵", "\t": "⇥"}.get(character, character)


def trace_figure(trace, tokens, quantity, units, step_title=STEP_TITLES["character"]):
    """One state or gate of a layer's trace from ``model.inspect``: tokens on x (titled
    ``step_title``), on y the ``units`` units whose hidden state varies most over the
    text (``plots.picked_units``, as ``zoo inspect`` picks them), in index order.
    ``quantity``: ``"states/h"``, ``"gates/f"``, ..."""
    group, key = quantity.split("/")
    shown = plots.picked_units(trace, units)
    values = np.asarray(trace[group][key])[:, shown].T  # [units, steps]
    if key in SIGMOID_GATES:
        value_range, colorscale = (0.0, 1.0), "Viridis"
    else:  # tanh outputs lie in [-1, 1]; an LSTM's cell state is unbounded
        bound = max(1.0, float(np.abs(values).max())) if key == "c" else 1.0
        value_range, colorscale = (-bound, bound), "RdBu_r"  # red positive, as zoo inspect
    total = np.shape(trace["states"]["h"])[1]
    figure = labelled_heatmap(
        values, [visible_character(t) for t in tokens], [f"unit {u}" for u in shown],
        f"{TRACE_NAMES.get(key, key)}<br>%{{customdata[0]}} after '%{{customdata[1]}}'"
        "<br>%{z:.3f}", value_range, colorscale,
        (step_title, f"unit ({len(shown)} of {total}: those whose h varies most)"))
    figure.update_layout(title=f"{trace['name']}: {TRACE_NAMES.get(key, key)}")
    return figure


def trace_choices(trace):
    """The radio choices ``(label, value)`` for a layer's states and gates."""
    return [(TRACE_NAMES.get(key, key), f"{group}/{key}")
            for group in ("states", "gates") for key in trace[group]]


# -- what the page's buttons do ------------------------------------------------------------------
def whole(number):
    """A slider's or number box's value as the models take it: a float that is a whole
    number as an int, anything else as it is, for the models' checks to refuse (a
    request to the page's API may send any number: int(inf) would be an OverflowError)."""
    return int(number) if isinstance(number, float) and number.is_integer() else number


@showing_bad_input(cleared=(None, None, None, ""))
def translate(name, text, beam_size, hypotheses):
    """The best translation, the beam's n-best ``[score, text]`` rows and the attention
    (a figure, or a note saying why there is none)."""
    model, beam_size = loaded(name), whole(beam_size)
    search = BeamSearch(beam_size, num_hypotheses=min(whole(hypotheses), beam_size))
    best = model.translate([require_text(text)], search=search)[0]
    if not best[0]["text"]:
        raise ValueError(f"{name} produced nothing: it knows none of the words or characters "
                         f"of {text[:80]!r}.")
    rows = [[round(h["score"], 4), h["text"]] for h in best]
    return best[0]["text"], rows, *attention_or_note(model, name, text, beam_size)


def attention_or_note(model, name, text, beam_size):
    if not model.has_attention:
        return None, (f"{name} has no attention: its decoder sees only the encoder's final "
                      "state (one fixed-length vector), so there is no alignment to draw.")
    tokens = "characters" if model.source_language == "char" else "words"
    return attention_figure(model.align(text, search=BeamSearch(beam_size)), tokens), ""


@showing_bad_input(cleared=(None, None, ""))
def answer(name, text):
    """A teaching task's answer and its alignment (or why it has none)."""
    model = loaded(name)
    (result,) = model.translate([require_text(text)])
    return result, *attention_or_note(model, name, text, beam_size=1)


@showing_bad_input(cleared=(None, gr.update()))
def generate(name, prompt, length, temperature, top_k, top_p, seed):
    """The prompt and what the language model wrote after it, and the start of that
    text to look inside (``inspected_excerpt``)."""
    text = prompt + loaded(name).generate(
        prompt, whole(length), temperature=temperature, top_k=whole(top_k) or None,
        top_p=None if top_p == 1 else top_p, seed=None if seed is None else whole(seed))
    return text, inspected_excerpt(text)


def inspected_excerpt(text, most=INSPECTED_CHARACTERS):
    """The start of ``text`` to look inside: at most ``most`` characters, ending at the last
    line break within them, else at the last space (either when that keeps more than
    half), so that the figure labels every character of whole lines or words."""
    if len(text) <= most:
        return text
    for separator in ("\n", " "):
        cut = text.rfind(separator, 0, most + 1)
        if cut > most // 2:
            return text[:cut]
    return text[:most]


def step_title(name, layer):
    """The x axis title of a layer of preset ``name``: what it reads at each step."""
    reads = {"language_model": "character", "classifier": "word"}
    return STEP_TITLES[reads.get(preset_model.preset_kind(name), layer.split("/")[0])]


@showing_bad_input(cleared=(None, gr.update(), gr.update(), None))
def inspect_text(name, text, units):
    """``model.inspect`` over the text: the traces kept for redrawing (``{layer: (trace,
    tokens, x axis title)}``), the layer and quantity choices, and the figure of the
    first layer's hidden state."""
    traces = inspection.traces_by_layer(loaded(name).inspect(require_text(text)))
    inside = {layer: (trace, tokens, step_title(name, layer))
              for layer, (trace, tokens) in traces.items()}
    first = next(iter(inside))
    trace, tokens, title = inside[first]
    return (inside, gr.update(choices=list(inside), value=first),
            gr.update(choices=trace_choices(trace), value="states/h"),
            trace_figure(trace, tokens, "states/h", int(units), title))


def redraw_trace(inside, layer, quantity, units):
    """The figure for another layer, state or gate of the traces already computed."""
    if not inside:
        return gr.update(), None
    trace, tokens, title = inside[layer]
    choices = trace_choices(trace)
    if quantity not in [value for _, value in choices]:
        quantity = "states/h"  # another cell kind: its gates differ
    return (gr.update(choices=choices, value=quantity),
            trace_figure(trace, tokens, quantity, int(units), title))


@showing_bad_input(cleared=(None,))
def classify(name, text):
    """Each label's probability, for gradio's Label."""
    model = loaded(name)
    (probabilities,) = model.probabilities([require_text(text)])
    return ({label: float(p) for label, p in zip(model.labels, probabilities)},)


# -- the page -----------------------------------------------------------------------------------
def preset_picker(names, elem_id):
    return gr.Dropdown(names, value=names[0], label="preset", elem_id=elem_id)


def example_for(name):
    return EXAMPLES.get(name, "")


def message_box(elem_id):
    """Where a panel says what was wrong with its input."""
    return gr.Markdown(elem_id=elem_id)


def heatmap_guide():
    with gr.Accordion("How to read these heatmaps", open=False):
        gr.Markdown(HEATMAP_GUIDE)


def look_inside(preset, text, api_name, prefix, heading):
    """A panel's look inside its model: ``model.inspect`` over ``text`` (a textbox), a
    layer and a state or gate to show, how many units, and the figure."""
    gr.Markdown(f"### Inside the network: `model.inspect` {heading}")
    button = gr.Button("Show states and gates", elem_id=f"{prefix}-button")
    message = message_box(f"{prefix}-message")
    with gr.Row():
        layer = gr.Dropdown([], label="layer", elem_id=f"{prefix}-layer")
        quantity = gr.Radio([], label="state or gate", elem_id=f"{prefix}-quantity")
        units = gr.Slider(1, 256, value=SHOWN_UNITS, step=1, elem_id=f"{prefix}-units",
                          label="units shown: those whose hidden state varies most over the "
                                "text (as zoo inspect picks them)")
    figure = gr.Plot(label="per step (hover a cell for its value)", elem_id=f"{prefix}-plot")
    heatmap_guide()
    inside = gr.State()
    button.click(inspect_text, [preset, text, units], [inside, layer, quantity, figure, message],
                 api_name=api_name)
    for control in (layer, quantity, units):
        control.input(redraw_trace, [inside, layer, quantity, units], [quantity, figure],
                      api_name=False)


def translation_panel(names):
    preset = preset_picker(names, "translation-preset")
    text = gr.Textbox(example_for(names[0]), label="sentence", elem_id="translation-input")
    with gr.Row():
        beam = gr.Slider(1, 10, value=5, step=1, label="beam size")
        hypotheses = gr.Slider(1, 10, value=3, step=1, label="hypotheses shown (n-best)")
    button = gr.Button("Translate", variant="primary", elem_id="translation-button")
    message = message_box("translation-message")
    output = gr.Textbox(label="translation", elem_id="translation-output", interactive=False)
    table = gr.Dataframe(headers=["score", "hypothesis"], label="n-best, best first",
                         elem_id="translation-n-best", interactive=False)
    note = gr.Markdown(elem_id="attention-note")
    figure = gr.Plot(label="attention (hover a cell for its weight)", elem_id="attention")
    heatmap_guide()
    preset.change(example_for, preset, text)
    gr.on([button.click, text.submit], translate, [preset, text, beam, hypotheses],
          [output, table, figure, note, message], api_name="translate")
    look_inside(preset, text, "inspect_translation", "translation-inspect",
                "(the encoder over the sentence, the decoder over its greedy translation)")


def teaching_panel(names):
    preset = preset_picker(names, "teaching-preset")
    text = gr.Textbox(example_for(names[0]), label="input", elem_id="teaching-input")
    button = gr.Button("Answer", variant="primary", elem_id="teaching-button")
    message = message_box("teaching-message")
    output = gr.Textbox(label="answer", elem_id="teaching-output", interactive=False)
    note = gr.Markdown(elem_id="teaching-note")
    figure = gr.Plot(label="alignment (hover a cell for its weight)", elem_id="teaching-attention")
    heatmap_guide()
    preset.change(example_for, preset, text)
    gr.on([button.click, text.submit], answer, [preset, text], [output, figure, note, message],
          api_name="answer")


def language_model_panel(names):
    preset = preset_picker(names, "lm-preset")
    prompt = gr.Textbox(LANGUAGE_MODEL_PROMPT, label="prompt", elem_id="lm-prompt")
    with gr.Row():
        length = gr.Slider(1, 1000, value=200, step=1, label="characters")
        temperature = gr.Slider(0, 2, value=0.8, step=0.05, label="temperature (0: greedy)")
    with gr.Row():
        top_k = gr.Slider(0, 100, value=0, step=1, label="top-k (0: no cut)")
        top_p = gr.Slider(0.05, 1, value=1, step=0.05, label="top-p (1: no cut)")
        seed = gr.Number(0, precision=0, label="seed (empty: a new draw each time)")
    button = gr.Button("Generate", variant="primary", elem_id="lm-button")
    message = message_box("lm-message")
    output = gr.Textbox(label="text", lines=8, elem_id="lm-output", interactive=False)

    inspected = gr.Textbox(INSPECTED_TEXT, label="text to look inside (Generate puts the "
                           "start of its text here; a line or two reads best)", lines=2,
                           elem_id="inspect-input")
    button.click(generate, [preset, prompt, length, temperature, top_k, top_p, seed],
                 [output, inspected, message], api_name="generate")
    look_inside(preset, inspected, "inspect", "inspect", "(each character read)")


def classifier_panel(names):
    preset = preset_picker(names, "classifier-preset")
    text = gr.Textbox(example_for(names[0]), label="sentence", elem_id="classifier-input")
    button = gr.Button("Classify", variant="primary", elem_id="classifier-button")
    message = message_box("classifier-message")
    labels = gr.Label(label="probabilities", elem_id="classifier-output")
    preset.change(example_for, preset, text)
    gr.on([button.click, text.submit], classify, [preset, text], [labels, message],
          api_name="classify")
    look_inside(preset, text, "inspect_classifier", "classifier-inspect",
                "(the LSTM reading the sentence's words forwards and backwards)")


PANELS = {
    "translation": ("Translate", translation_panel),
    "teaching": ("Teaching tasks", teaching_panel),
    "language_model": ("Language models", language_model_panel),
    "classifier": ("Classifier", classifier_panel),
}


def build_page():
    """The page: one tab per kind of preset that ships."""
    with gr.Blocks(title="zoo: classic sequence models", analytics_enabled=False) as page:
        gr.Markdown("# zoo: classic sequence models\nRNN, LSTM, GRU, Seq2Seq and Bahdanau "
                    "attention, pretrained. Everything runs on this machine.")
        for panel, names in presets_by_panel().items():
            if names:
                title, build = PANELS[panel]
                with gr.Tab(title, elem_id=f"tab-{panel}"):
                    build(names)
    return page


# The browser's own fonts (gradio's default theme would fetch web fonts from the network),
# CJK glyphs first from the font the page serves: a machine without a CJK font shows them.
# One CSS identifier: gradio writes the theme's font names into its CSS unquoted.
CJK_FONT_FAMILY = "zoo-noto-sans-cjk-sc"
# CJK punctuation, kana, Hangul and the ideographs (with their extensions), full-width forms.
CJK_RANGES = ("U+2E80-2FDF, U+3000-33FF, U+3400-4DBF, U+4E00-9FFF, U+AC00-D7AF, "
              "U+F900-FAFF, U+FE30-FE4F, U+FF00-FFEF, U+20000-2FA1F")
PAGE_FONTS = [CJK_FONT_FAMILY, "ui-sans-serif", "system-ui", "sans-serif"]
PAGE_FONT_FAMILY = ", ".join(PAGE_FONTS)
PAGE_THEME = gr.themes.Default(font=PAGE_FONTS,
                               font_mono=[CJK_FONT_FAMILY, "ui-monospace", "monospace"])


def cjk_font_face():
    """The CSS that makes ``CJK_FONT_FAMILY`` the font file of ``plots.cjk_font``, served by
    the page itself (``serve`` allows that one file) and fetched only for text with CJK
    characters (its ``unicode-range``)."""
    return (f'@font-face {{ font-family: "{CJK_FONT_FAMILY}"; '
            f'src: url("gradio_api/file={plots.cjk_font_path()}") format("opentype"); '
            f"unicode-range: {CJK_RANGES}; font-display: swap; }}")


def network_warning(host):
    """What to tell someone who serves the page beyond this machine (None on loopback)."""
    import ipaddress

    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        loopback = False
    if loopback:
        return None
    return (f"zoo demo: warning: listening on {host}: the page is open to the network, "
            "with no password; anyone who reaches this address can use it.")


def serve(host=DEFAULT_HOST, port=DEFAULT_PORT):
    """Serve the page at http://HOST:PORT/ until interrupted (with a warning on stderr
    when HOST is not a loopback address)."""
    warning = network_warning(host)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    # No share link (a tunnel through gradio's servers), no server-side rendering (a Node
    # process), the browser's fonts and the CJK font file (the one file allowed).
    build_page().launch(server_name=host, server_port=port, share=False, inbrowser=False,
                        ssr_mode=False, theme=PAGE_THEME, css=cjk_font_face(),
                        allowed_paths=[str(plots.cjk_font_path())])
