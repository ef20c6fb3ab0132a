"""``zoo demo``: the page in a real headless browser (Debian's chromium and chromedriver,
driven by selenium), through gradio's own client, and its figures on a small trace.

Everything but the first two tests needs the demo extra (``pip install -e ".[demo]"``
and selenium) and is marked slow; they import gradio inside, so that the default suite
runs without the extra. One server serves the whole module, one browser the browser tests.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

import zoo
from zoo import cli, plots

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
# No background traffic: this machine (and CI's) reaches no network but package registries.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1280,1600"]
SERVER_START_SECONDS, WAIT_SECONDS = 180, 120


def test_demo_without_the_extra_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "gradio", None)  # as if the extra were not installed
    monkeypatch.delitem(sys.modules, "zoo.demo", raising=False)
    assert cli.main(["demo"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert 'zoo demo needs gradio (the demo extra): pip install -e ".[demo]"' in error


def test_demo_runs_one_thread_per_operation(monkeypatch):
    """The page translates one text at a time: ``backend.use_one_thread_per_operation``
    comes before it serves (a stand-in ``zoo.demo`` module: the extra may be absent)."""
    from unittest import mock

    from zoo import backend

    calls = []
    monkeypatch.setitem(sys.modules, "zoo.demo", mock.Mock(
        serve=lambda host, port: calls.append(("serve", host, port))))
    monkeypatch.setattr(backend, "use_one_thread_per_operation",
                        lambda: calls.append("one thread per operation"))
    assert cli.main(["demo", "--port", "8001"]) == 0
    assert calls == ["one thread per operation", ("serve", "127.0.0.1", 8001)]


@pytest.mark.slow
def test_one_thread_per_operation_unless_the_user_chose_or_tensorflow_started():
    script = ("import zoo, sys\nfrom zoo import backend\nimport tensorflow as tf\n"
              "if sys.argv[1] == 'started':\n    tf.constant(1) + 1\n"
              "print(backend.use_one_thread_per_operation(),"
              " tf.config.threading.get_intra_op_parallelism_threads())")
    env = {k: v for k, v in os.environ.items() if k != "TF_NUM_INTRAOP_THREADS"}
    outputs = [subprocess.run([sys.executable, "-c", script, when], capture_output=True,
                              text=True, env={**env, **extra}).stdout
               for when, extra in (("fresh", {}), ("started", {}),
                                   ("fresh", {"TF_NUM_INTRAOP_THREADS": "2"}))]
    assert outputs == ["True 1\n", "False 0\n", "False 0\n"]


def test_demo_listens_on_this_machine_only_by_default():
    args = cli.parse(["demo"])
    assert (args.host, args.port) == ("127.0.0.1", 7860)
    assert cli.parse(["demo", "--port", "8001"]).port == 8001


# -- the figures, on a small trace in model.inspect's format ---------------------------------
def fake_inspect_output(steps=5, units=40):
    rng = np.random.default_rng(0)
    sigmoid = lambda: 1 / (1 + np.exp(-rng.normal(size=(steps, units))))  # noqa: E731
    tanh = lambda: np.tanh(rng.normal(size=(steps, units)))  # noqa: E731
    return {"tokens": list("a b\nc" * (steps // 5)), "layers": [
        {"name": "lstm", "cell": "lstm", "states": {"h": tanh(), "c": 3 * tanh()},
         "gates": {"i": sigmoid(), "f": sigmoid(), "c~": tanh(), "o": sigmoid()}},
        {"name": "gru", "cell": "gru", "states": {"h": tanh()},
         "gates": {"z": sigmoid(), "r": sigmoid(), "n": tanh()}},
        {"name": "rnn", "cell": "rnn", "states": {"h": tanh()}, "gates": {}},
    ]}


@pytest.mark.slow
def test_trace_figure_shows_tokens_on_x_and_the_units_that_vary_most_on_y():
    from zoo import demo

    inside = fake_inspect_output()
    lstm = inside["layers"][0]
    lstm["states"]["h"][:, [3, 17, 30]] *= 10  # these three vary most over the text
    figure = demo.trace_figure(lstm, inside["tokens"], "gates/f", units=3,
                               step_title=demo.STEP_TITLES["word"])
    heatmap = figure.data[0]
    np.testing.assert_allclose(np.asarray(heatmap.z), lstm["gates"]["f"][:, [3, 17, 30]].T)
    assert list(figure.layout.xaxis.ticktext) == ["a", "␣", "b", "↵", "c"]
    assert list(figure.layout.yaxis.ticktext) == ["unit 3", "unit 17", "unit 30"]
    assert figure.layout.xaxis.title.text == "time step (the word read, as the model reads it)"
    assert figure.layout.yaxis.title.text == "unit (3 of 40: those whose h varies most)"
    assert (heatmap.zmin, heatmap.zmax) == (0.0, 1.0)  # a sigmoid gate
    cell = demo.trace_figure(lstm, inside["tokens"], "states/c", units=40).data[0]
    assert cell.zmax == pytest.approx(np.abs(lstm["states"]["c"]).max()) and cell.zmin == -cell.zmax
    # as zoo inspect draws them: negative blue, positive red
    assert (cell.colorscale[0][1], cell.colorscale[-1][1]) == ("rgb(5,48,97)", "rgb(103,0,31)")
    assert "forget gate f" in figure.layout.title.text and "weight" not in heatmap.hovertemplate


@pytest.mark.slow
def test_the_page_and_zoo_inspect_show_the_same_units(monkeypatch):
    from zoo import demo

    calls = []
    monkeypatch.setattr(plots, "picked_units", lambda trace, count: calls.append(count) or [1, 4])
    rnn = fake_inspect_output()["layers"][2]
    figure = demo.trace_figure(rnn, list("a b\nc"), "states/h", units=2)
    assert calls == [2] and list(figure.layout.yaxis.ticktext) == ["unit 1", "unit 4"]
    np.testing.assert_allclose(figure.data[0].z, rnn["states"]["h"][:, [1, 4]].T)


@pytest.mark.slow
def test_a_long_text_labels_every_kth_character_and_keeps_every_column():
    from zoo import demo

    inside = fake_inspect_output(steps=200)
    figure = demo.trace_figure(inside["layers"][2], list("abcde" * 40), "states/h", units=40)
    assert np.shape(figure.data[0].z) == (40, 200)
    assert list(figure.layout.xaxis.tickvals) == list(range(0, 200, 3))
    assert list(figure.layout.xaxis.ticktext) == list("abcde" * 40)[::3]
    assert list(figure.layout.yaxis.tickvals) == list(range(40))


@pytest.mark.slow
@pytest.mark.parametrize("text, excerpt", [
    ("ROMEO:\nBut soft!", "ROMEO:\nBut soft!"),  # short: all of it
    ("ROMEO:\nBut soft, what light through yonder window breaks?\nIt is the east",
     "ROMEO:\nBut soft, what light through yonder window breaks?"),  # at a line break
    ("ROMEO: But soft, what light through yonder window breaks? It is the east",
     "ROMEO: But soft, what light through yonder window breaks? It"),  # before a word
    ("x" * 70 + " end", "x" * 60),  # no break in the first 60: cut there
])
def test_the_look_inside_starts_on_a_line_or_two_of_the_generated_text(text, excerpt):
    from zoo import demo

    assert demo.inspected_excerpt(text) == excerpt
    assert len(demo.INSPECTED_TEXT) <= demo.INSPECTED_CHARACTERS
    # every character of the text the page starts on gets its label
    trace = fake_inspect_output(steps=len(demo.INSPECTED_TEXT))["layers"][2]
    figure = demo.trace_figure(trace, list(demo.INSPECTED_TEXT), "states/h", units=8)
    assert list(figure.layout.xaxis.tickvals) == list(range(len(demo.INSPECTED_TEXT)))


@pytest.mark.slow
def test_each_cell_offers_its_own_states_and_gates():
    from zoo import demo

    lstm, gru, rnn = fake_inspect_output()["layers"]
    assert [value for _, value in demo.trace_choices(lstm)] == [
        "states/h", "states/c", "gates/i", "gates/f", "gates/c~", "gates/o"]
    assert demo.trace_choices(gru) == [("hidden state h", "states/h"), ("update gate z", "gates/z"),
                                       ("reset gate r", "gates/r"),
                                       ("candidate state n", "gates/n")]
    assert demo.trace_choices(rnn) == [("hidden state h", "states/h")]


@pytest.mark.slow
def test_another_layer_keeps_the_quantity_it_has_and_falls_back_to_h_otherwise():
    from zoo import demo

    inside = fake_inspect_output()
    kept = {t["name"]: (t, inside["tokens"], demo.STEP_TITLES["character"])
            for t in inside["layers"]}
    choices, figure = demo.redraw_trace(kept, "gru", "gates/f", 4)
    assert choices["value"] == "states/h" and np.shape(figure.data[0].z) == (4, 5)
    choices, figure = demo.redraw_trace(kept, "gru", "gates/r", 4)
    assert choices["value"] == "gates/r"
    gru = inside["layers"][1]
    np.testing.assert_allclose(figure.data[0].z,
                               gru["gates"]["r"][:, plots.picked_units(gru, 4)].T)


@pytest.mark.slow
def test_a_word_that_occurs_twice_keeps_both_columns():
    from zoo import demo
    from zoo.text import Alignment

    alignment = Alignment(["the", "cat", "the"], ["le", "chat"], np.full((2, 3), 1 / 3))
    figure = demo.attention_figure(alignment)
    assert list(figure.data[0].x) == [0, 1, 2]
    assert list(figure.layout.xaxis.ticktext) == ["the", "cat", "the"]
    assert "weight %{z:.3f}" in figure.data[0].hovertemplate
    assert figure.layout.xaxis.title.text == "source words"
    assert figure.layout.yaxis.title.text == "produced words"
    assert figure.layout.font.family.split(", ")[0] == demo.CJK_FONT_FAMILY
    assert figure.layout.hoverlabel.font.family == figure.layout.font.family


@pytest.mark.slow
@pytest.mark.parametrize("name, text, layers, first_tokens, title", [
    ("bilstm_sst2", "A charming, funny film", ["encoder/forward", "encoder/backward"],
     ["a", "charming", ",", "funny", "film"], "time step (the word read, as the model reads it)"),
    ("gru_bahdanau_cmn_en", "我读了一本书。", ["encoder/forward", "encoder/backward", "decoder"],
     None, "time step (the source piece read)"),
])
def test_the_page_looks_inside_the_translators_and_the_classifier(name, text, layers,
                                                                  first_tokens, title):
    from zoo import demo

    inside, layer, quantity, figure, message = demo.inspect_text(name, text, 16)
    expected = zoo.load(name).inspect(text)
    first = (expected.get("layers") or expected["encoder"])[0]
    tokens = first_tokens or expected["source_tokens"]
    assert message == "" and list(inside) == layers and layer["value"] == layers[0]
    assert quantity["value"] == "states/h" and len(quantity["choices"]) == len(
        first["states"]) + len(first["gates"])
    assert list(figure.layout.xaxis.ticktext) == tokens
    assert figure.layout.xaxis.title.text == title
    np.testing.assert_allclose(figure.data[0].z, first["states"]["h"][
        :, plots.picked_units(first, 16)].T, atol=1e-6)
    if "decoder" in layers:  # the decoder reads [START], then each produced piece
        _, figure = demo.redraw_trace(inside, "decoder", "gates/z", 16)
        assert list(figure.layout.xaxis.ticktext) == expected["target_tokens"]
        assert figure.layout.xaxis.title.text.startswith("time step (the piece fed back")


@pytest.mark.slow
def test_every_heatmap_has_the_guide_and_every_model_kind_a_look_inside():
    from zoo import demo

    config = demo.build_page().get_config_file()
    guides = [c for c in config["components"] if c["type"] == "accordion"]
    # attention (translation, teaching) and the three looks inside
    assert [g["props"]["label"] for g in guides] == ["How to read these heatmaps"] * 5
    texts = [c["props"].get("value") for c in config["components"] if c["type"] == "markdown"]
    assert sum(t == demo.HEATMAP_GUIDE.strip() for t in texts if t) == 5
    api = {d["api_name"] for d in config["dependencies"]}
    assert {"inspect_translation", "inspect", "inspect_classifier"} <= api


@pytest.mark.slow
def test_the_page_serves_its_cjk_font_from_the_file_the_plots_use():
    from zoo import demo

    css = demo.cjk_font_face()
    assert f'font-family: "{demo.CJK_FONT_FAMILY}"' in css
    assert f'url("gradio_api/file={plots.cjk_font_path()}")' in css
    assert "U+4E00-9FFF" in css and "U+3000-33FF" in css  # ideographs and 。
    assert demo.PAGE_FONTS[0] == demo.CJK_FONT_FAMILY
    assert plots.cjk_font_path().stat().st_size > 10_000_000  # the whole font, not a subset


# -- one server for the module -----------------------------------------------------------------
TRANSLATOR, SENTENCE = "gru_bahdanau_cmn_en", "他很高兴。"  # the page's first translator
LANGUAGE_MODEL, PROMPT = "lstm_charlm_shakespeare", "ROMEO:"
DATE = "le 1er mars 1999"
SAMPLING = dict(temperature=0.8, top_k=10, top_p=0.9, seed=3)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """``zoo demo`` as a user starts it, in its own process, until the module is done."""
    port = free_port()
    log = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-m", "zoo", "demo", "--port", str(port)],
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process, f"http://127.0.0.1:{port}/", log
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def error_of(call, *args):
    with pytest.raises(ValueError) as error:
        call(*args)
    return str(error.value)


@pytest.fixture(scope="module")
def expected(server):
    """What the models say in this process, computed while the server starts."""
    translator, addition = zoo.load(TRANSLATOR), zoo.load("lstm_seq2seq_addition")
    (date,), (date_alignment,) = zoo.load("gru_bahdanau_dates").translate(
        [DATE], return_attention=True)
    lm, classifier = zoo.load(LANGUAGE_MODEL), zoo.load("bilstm_sst2")
    (translation,), (attention,) = translator.translate([SENTENCE], beam_size=5,
                                                        return_attention=True)
    return {
        "n_best": translator.translate([SENTENCE], beam_size=5, num_hypotheses=3)[0],
        "translation": translation, "attention": attention,
        "too_long": error_of(translator.translate, ["x" * 10_000]),
        "refused": error_of(addition.translate, ["1000+1"]),
        "sum": addition.translate(["535+61"])[0],
        "date": date, "date_alignment": date_alignment,
        "sample": PROMPT + lm.generate(PROMPT, 40, **SAMPLING),
        "unknown_characters": error_of(lm.generate, "ЖЖЖ", 40),
        "inside": lm.inspect(PROMPT),
        "probabilities": dict(zip(classifier.labels, classifier.probabilities(
            ["a charming, funny film"])[0].tolist())),
    }


@pytest.fixture(scope="module")
def page_url(server, expected):
    process, url, log = server
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            pytest.fail(f"zoo demo exited with {process.returncode}:\n{log.read().decode()}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return url
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"zoo demo did not serve {url} within {SERVER_START_SECONDS} s")


@pytest.fixture(scope="module")
def client(page_url):
    from gradio_client import Client

    return Client(page_url, verbose=False)


def plotted_values(figure):
    """The heatmap values of a figure as gradio's client receives it."""
    return np.asarray(json.loads(figure["plot"])["data"][0]["z"], float)


# -- through gradio's own client ---------------------------------------------------------------
@pytest.mark.slow
def test_client_gets_the_models_translation_n_best_and_attention(client, expected):
    translation, table, figure, note, message = client.predict(
        TRANSLATOR, SENTENCE, 5, 3, api_name="/translate")
    assert message == "" and note == ""
    assert translation == expected["translation"] == expected["n_best"][0]["text"]
    assert table["data"] == [[round(h["score"], 4), h["text"]] for h in expected["n_best"]]
    np.testing.assert_allclose(plotted_values(figure), expected["attention"], atol=1e-6)


@pytest.mark.slow
def test_client_shows_bad_input_as_a_message(client, expected):
    translation, table, figure, note, message = client.predict(
        TRANSLATOR, "x" * 10_000, 5, 3, api_name="/translate")
    assert message == f"**Cannot do that:** {expected['too_long']}"
    assert "10,000 characters; the most is 2,000" in message
    assert (translation, table["data"], figure, note) == (None, [], None, "")
    *_, message = client.predict(TRANSLATOR, "   ", 5, 3, api_name="/translate")
    assert message == "**Cannot do that:** The text is empty: type a sentence first."


@pytest.mark.slow
def test_the_addition_task_refuses_outside_its_domain_with_the_models_message(client, expected):
    answer, figure, note, message = client.predict("lstm_seq2seq_addition", "1000+1",
                                                   api_name="/answer")
    assert message == f"**Cannot do that:** {expected['refused']}" and answer is None
    answer, figure, note, message = client.predict("lstm_seq2seq_addition", "535+61",
                                                   api_name="/answer")
    assert answer == expected["sum"] and message == ""
    assert figure is None and note.startswith("lstm_seq2seq_addition has no attention")


@pytest.mark.slow
def test_sampling_on_the_page_is_the_models_sampling(client, expected):
    text, inspected, message = client.predict(
        LANGUAGE_MODEL, PROMPT, 40, *SAMPLING.values(), api_name="/generate")
    assert text == expected["sample"] and message == ""
    assert inspected == expected["sample"][:len(inspected)] and 30 < len(inspected) <= 60
    *_, message = client.predict(LANGUAGE_MODEL, "ЖЖЖ", 40, 0.8, 0, 1, 3, api_name="/generate")
    assert message == f"**Cannot do that:** {expected['unknown_characters']}"


@pytest.mark.slow
def test_the_classifier_shows_each_labels_probability(client, expected):
    labels, message = client.predict("bilstm_sst2", "a charming, funny film",
                                     api_name="/classify")
    shown = {c["label"]: c["confidence"] for c in labels["confidences"]}
    assert shown == pytest.approx(expected["probabilities"], abs=1e-6) and message == ""
    assert labels["label"] == max(expected["probabilities"], key=expected["probabilities"].get)


@pytest.mark.slow
def test_inspect_draws_the_first_layers_hidden_state(client, expected):
    layer, quantity, figure, message = client.predict(LANGUAGE_MODEL, PROMPT, 32,
                                                      api_name="/inspect")
    first = expected["inside"]["layers"][0]
    assert message == "" and layer["value"] == first["name"] and quantity["value"] == "states/h"
    assert [value for _, value in quantity["choices"]] == [
        "states/h", "states/c", "gates/i", "gates/f", "gates/c~", "gates/o"]
    np.testing.assert_allclose(plotted_values(figure),
                               first["states"]["h"][:, plots.picked_units(first, 32)].T,
                               atol=1e-6)


@pytest.mark.slow
def test_the_page_serves_the_cjk_font_file_and_no_other(page_url):
    font = plots.cjk_font_path()
    with urllib.request.urlopen(f"{page_url}gradio_api/file={font}", timeout=30) as response:
        assert response.read() == font.read_bytes()
    with pytest.raises(urllib.error.HTTPError, match="403"):
        urllib.request.urlopen(f"{page_url}gradio_api/file={zoo.__file__}", timeout=30)


@pytest.mark.slow
def test_the_dates_task_gives_its_answer_and_alignment(client, expected):
    answer, figure, note, message = client.predict("gru_bahdanau_dates", DATE,
                                                   api_name="/answer")
    assert answer == expected["date"] and (note, message) == ("", "")
    np.testing.assert_allclose(plotted_values(figure), expected["date_alignment"], atol=1e-6)


# -- in a real browser -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert os.path.exists(CHROMEDRIVER), "apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="zoo-demo-chromium-")
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    # The driver named: selenium-manager is never asked to find or download one.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def set_text(browser, element_id, text):
    """Put ``text`` in a textbox as typing would (an input event), without typing 10,000
    keys one by one."""
    browser.execute_script(
        "const box = document.querySelector(arguments[0]);"
        "const setter = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(box), 'value').set;"
        "setter.call(box, arguments[1]);"
        "box.dispatchEvent(new Event('input', {bubbles: true}));",
        f"#{element_id} textarea", text)


def wait_for_text(browser, css, predicate):
    from selenium.webdriver.support.ui import WebDriverWait

    def text_if_ready(driver):
        elements = driver.find_elements("css selector", css)
        if not elements:
            return False
        value = elements[0].get_attribute("value") or elements[0].text
        return predicate(value) and [value]  # a list: an empty text is an answer too

    return WebDriverWait(browser, WAIT_SECONDS).until(text_if_ready)[0]


def translate_on_the_page(browser, text, previous):
    set_text(browser, "translation-input", text)
    browser.find_element("css selector", "#translation-button").click()
    return wait_for_text(browser, "#translation-output textarea", lambda v: v != previous)


def hover_text(browser, css):
    """What plotly shows on hovering the middle of the plot under ``css``."""
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(browser).move_to_element(
        browser.find_element("css selector", f"{css} .nsewdrag")).perform()
    return wait_for_text(browser, f"{css} .hovertext", bool)


@pytest.mark.slow
def test_the_page_translates_as_the_model_and_draws_the_attention(browser, page_url, expected):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page_url)
    WebDriverWait(browser, WAIT_SECONDS).until(
        lambda d: d.find_elements("css selector", "#translation-input textarea"))
    assert browser.find_element("css selector", "#translation-preset input").get_attribute(
        "value") == TRANSLATOR
    assert translate_on_the_page(browser, SENTENCE, previous="") == expected["translation"]
    heatmap = WebDriverWait(browser, WAIT_SECONDS).until(lambda d: d.execute_script(
        "const plot = document.querySelector('#attention .js-plotly-plot');"
        "return plot && plot.querySelector('.heatmaplayer image') && plot.data[0];"))
    np.testing.assert_allclose(np.asarray(heatmap["z"], float), expected["attention"], atol=1e-6)
    assert re.search(r"weight [01]\.\d{3}$", hover_text(browser, "#attention"))
    # Chinese in the CJK font the page serves: the textboxes, the plot's axes, its hover label.
    assert browser.execute_script(
        "return document.fonts.load('16px zoo-noto-sans-cjk-sc', '他').then("
        "  faces => faces.length > 0 && document.fonts.check('16px zoo-noto-sans-cjk-sc', '他'));")
    families = browser.execute_script(
        "return ['#translation-input textarea', '#attention .xtick text', '#attention .hovertext text']"
        "  .map(css => getComputedStyle(document.querySelector(css)).fontFamily);")
    assert all(f.startswith("zoo-noto-sans-cjk-sc") for f in families), families

    # Bad input: a message on the page, the old translation gone; then the page still works.
    set_text(browser, "translation-input", "x" * 10_000)
    browser.find_element("css selector", "#translation-button").click()
    message = wait_for_text(browser, "#translation-message", lambda v: "Cannot do that" in v)
    assert expected["too_long"] in message and "Traceback" not in message
    assert browser.find_element("css selector", "#translation-output textarea").get_attribute(
        "value") == ""
    assert translate_on_the_page(browser, SENTENCE, previous="") == expected["translation"]
    wait_for_text(browser, "#translation-message", lambda v: v.strip() == "")

    # Scripts, styles, fonts, the plot's code: everything the page fetched came from zoo demo.
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(entry => entry.name);")
    assert resources and all(r.startswith(page_url) for r in resources), resources


@pytest.mark.slow
def test_serving_beyond_this_machine_warns_that_the_page_is_open(monkeypatch, capsys):
    from zoo import demo

    launched = []

    class Page:
        def launch(self, **options):
            launched.append(options["server_name"])

    monkeypatch.setattr(demo, "build_page", Page)
    demo.serve("0.0.0.0", 7860)
    assert capsys.readouterr().err == (
        "zoo demo: warning: listening on 0.0.0.0: the page is open to the network, with no "
        "password; anyone who reaches this address can use it.\n")
    for host in ("127.0.0.1", "localhost", "::1"):
        demo.serve(host, 7860)
        assert capsys.readouterr().err == ""
    assert launched == ["0.0.0.0", "127.0.0.1", "localhost", "::1"]
    assert demo.whole(5.0) == 5 and demo.whole(float("inf")) == float("inf")
