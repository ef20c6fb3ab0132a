"""``zoo demo``: one page to translate, sample, classify and look inside the presets.

Built on Gradio, with plotly figures that the browser draws (hovering a cell shows its
value); both come with the ``demo`` extra (``pip install -e ".[demo]"``). Starting the page
downloads nothing: the presets are read from ``saved_models/`` (each loaded on first use),
the page's scripts are served from the installed gradio package, its fonts are the
browser's own (no web fonts), and Gradio's analytics and version check are off.

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


@functools.lru_cache(maxsize=None)
def loaded(name):
    """A preset's model, loaded on first use: the page starts without loading any."""
    return zoo.load(name)


def presets_by_panel():
    """The preset names of each panel of the page, by the task their metadata names."""
    panels = {"translation": [], "teaching": [], "language_modeling": [], "classification": []}
    for name in zoo.list_models():
        task = zoo.describe(name).get("task")
        panel = "teaching" if task in TEACHING_TASKS else task
        if panel in panels:
            panels[panel].append(name)
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
def labelled_heatmap(values, columns, rows, hover, value_range, colorscale):
    """A plotly heatmap of ``values [rows, columns]`` with text labels on both axes.

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
    figure.update_xaxes(side="top", **axis_labels(columns, MOST_LABELS["x"]))
    figure.update_yaxes(autorange="reversed", **axis_labels(rows, MOST_LABELS["y"]))
    figure.update_layout(margin=dict(l=10, r=10, t=40, b=10),
                         height=max(260, min(28 * len(rows), MOST_ROWS_HEIGHT) + 120))
    return figure


def axis_labels(labels, most):
    """Tick positions and texts: every label, or every k-th when there are more than
    ``most``."""
    every = max(1, -(-len(labels) // most))
    return {"tickvals": list(range(0, len(labels), every)), "ticktext": list(labels[::every])}


def attention_figure(alignment):
    """The attention of a translation at word level (a ``zoo.text.Alignment``)."""
    return labelled_heatmap(
        alignment.weights, alignment.source, alignment.produced,
        "%{customdata[0]} ← %{customdata[1]}<br>weight %{z:.3f}", (0.0, 1.0), "Viridis")


def visible_character(character):
    """A character as an axis label: blanks made visible."""
    return {" ": "␣", "\n": "↵", "\t": "⇥"}.get(character, character)


def trace_figure(trace, tokens, quantity, units):
    """One state or gate of a layer's trace from ``model.inspect``: tokens on x, its first
    ``units`` units on y. ``quantity``: ``"states/h"``, ``"gates/f"``, ..."""
    group, key = quantity.split("/")
    values = np.asarray(trace[group][key])[:, :units].T  # [units, steps]
    if key in SIGMOID_GATES:
        value_range, colorscale = (0.0, 1.0), "Viridis"
    else:  # tanh outputs lie in [-1, 1]; an LSTM's cell state is unbounded
        bound = max(1.0, float(np.abs(values).max())) if key == "c" else 1.0
        value_range, colorscale = (-bound, bound), "RdBu"
    figure = labelled_heatmap(
        values, [visible_character(t) for t in tokens], [f"unit {u}" for u in range(len(values))],
        f"{TRACE_NAMES.get(key, key)}<br>%{{customdata[0]}} after '%{{customdata[1]}}'"
        "<br>%{z:.3f}", value_range, colorscale)
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
    best = model.translate([require_text(text)], beam_size=beam_size,
                           num_hypotheses=min(whole(hypotheses), beam_size))[0]
    if not best[0]["text"]:
        raise ValueError(f"{name} produced nothing: it knows none of the words or characters "
                         f"of {text[:80]!r}.")
    rows = [[round(h["score"], 4), h["text"]] for h in best]
    return best[0]["text"], rows, *attention_or_note(model, name, text, beam_size)


def attention_or_note(model, name, text, beam_size):
    if not model.has_attention:
        return None, (f"{name} has no attention: its decoder sees only the encoder's final "
                      "state (one fixed-length vector), so there is no alignment to draw.")
    return attention_figure(model.align(text, beam_size=beam_size)), ""


@showing_bad_input(cleared=(None, None, ""))
def answer(name, text):
    """A teaching task's answer and its alignment (or why it has none)."""
    model = loaded(name)
    (result,) = model.translate([require_text(text)])
    return result, *attention_or_note(model, name, text, beam_size=1)


@showing_bad_input(cleared=(None, gr.update()))
def generate(name, prompt, length, temperature, top_k, top_p, seed):
    """The prompt and what the language model wrote after it (twice: once to read, once
    to look inside)."""
    text = prompt + loaded(name).generate(
        prompt, whole(length), temperature=temperature, top_k=whole(top_k) or None,
        top_p=None if top_p == 1 else top_p, seed=None if seed is None else whole(seed))
    return text, text


@showing_bad_input(cleared=(None, gr.update(), gr.update(), None))
def inspect_text(name, text):
    """``model.inspect`` over the text: the traces kept for redrawing, the layer and
    quantity choices, and the figure of the first layer's hidden state."""
    inside = loaded(name).inspect(require_text(text))
    names = [trace["name"] for trace in inside["layers"]]
    first = inside["layers"][0]
    return (inside, gr.update(choices=names, value=names[0]),
            gr.update(choices=trace_choices(first), value="states/h"),
            trace_figure(first, inside["tokens"], "states/h", SHOWN_UNITS))


def redraw_trace(inside, layer, quantity, units):
    """The figure for another layer, state or gate of the traces already computed."""
    if not inside:
        return gr.update(), None
    trace = next(t for t in inside["layers"] if t["name"] == layer)
    choices = trace_choices(trace)
    if quantity not in [value for _, value in choices]:
        quantity = "states/h"  # another cell kind: its gates differ
    return (gr.update(choices=choices, value=quantity),
            trace_figure(trace, inside["tokens"], quantity, int(units)))


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
    preset.change(example_for, preset, text)
    gr.on([button.click, text.submit], translate, [preset, text, beam, hypotheses],
          [output, table, figure, note, message], api_name="translate")


def teaching_panel(names):
    preset = preset_picker(names, "teaching-preset")
    text = gr.Textbox(example_for(names[0]), label="input", elem_id="teaching-input")
    button = gr.Button("Answer", variant="primary", elem_id="teaching-button")
    message = message_box("teaching-message")
    output = gr.Textbox(label="answer", elem_id="teaching-output", interactive=False)
    note = gr.Markdown(elem_id="teaching-note")
    figure = gr.Plot(label="alignment (hover a cell for its weight)", elem_id="teaching-attention")
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

    gr.Markdown("### Inside the network: `model.inspect`")
    inspected = gr.Textbox(LANGUAGE_MODEL_PROMPT, label="text to look inside", lines=3,
                           elem_id="inspect-input")
    inspect_button = gr.Button("Show states and gates", elem_id="inspect-button")
    inspect_message = message_box("inspect-message")
    with gr.Row():
        layer = gr.Dropdown([], label="layer", elem_id="inspect-layer")
        quantity = gr.Radio([], label="state or gate", elem_id="inspect-quantity")
        units = gr.Slider(1, 256, value=SHOWN_UNITS, step=1, label="first units shown")
    figure = gr.Plot(label="per character (hover a cell for its value)", elem_id="inspect-plot")
    inside = gr.State()

    button.click(generate, [preset, prompt, length, temperature, top_k, top_p, seed],
                 [output, inspected, message], api_name="generate")
    inspect_button.click(inspect_text, [preset, inspected], [inside, layer, quantity, figure,
                                                        inspect_message], api_name="inspect")
    for control in (layer, quantity, units):
        control.input(redraw_trace, [inside, layer, quantity, units], [quantity, figure],
                      api_name=False)


def classifier_panel(names):
    preset = preset_picker(names, "classifier-preset")
    text = gr.Textbox(example_for(names[0]), label="sentence", elem_id="classifier-input")
    button = gr.Button("Classify", variant="primary", elem_id="classifier-button")
    message = message_box("classifier-message")
    labels = gr.Label(label="probabilities", elem_id="classifier-output")
    preset.change(example_for, preset, text)
    gr.on([button.click, text.submit], classify, [preset, text], [labels, message],
          api_name="classify")


PANELS = {
    "translation": ("Translate", translation_panel),
    "teaching": ("Teaching tasks", teaching_panel),
    "language_modeling": ("Language models", language_model_panel),
    "classification": ("Classifier", classifier_panel),
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


# The browser's own fonts: gradio's default theme would fetch web fonts from the network.
SYSTEM_FONTS = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                                 font_mono=["ui-monospace", "monospace"])


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
    # process), the browser's fonts.
    build_page().launch(server_name=host, server_port=port, share=False, inbrowser=False,
                        ssr_mode=False, theme=SYSTEM_FONTS)
