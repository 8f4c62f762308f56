"""book.face.inpage: the in-page explorers' controls, titles and cell output, and the four chapter
explorers built on it (their JavaScript is checked in the browser: tests/test_browser_inpage.py).
"""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest

import book
from book.face import inpage
from book.face.plotting import tidy
from book.kit import i18n


@pytest.fixture(autouse=True)
def _book_renderer():
    book.setup()
    yield
    i18n.set_language("en")


def _figure():
    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    fig.update_layout(title="a title", annotations=[{"text": "panel", "x": 0, "y": 1,
                                                     "xref": "paper", "yref": "paper"}])
    return fig


def test_slider_and_select_check_their_input():
    s = inpage.slider("d_k", "d_k", 1, 4096, 64)
    assert (s["low"], s["high"], s["value"], s["step"]) == (1, 4096, 64, 1)
    with pytest.raises(ValueError, match="must be above"):
        inpage.slider("d_k", "d_k", 5, 5, 5)
    with pytest.raises(ValueError, match="value"):
        inpage.slider("d_k", "d_k", 1, 10, 11)
    with pytest.raises(ValueError, match="not on a step"):
        inpage.slider("n", "n", 100, 3000, 150, step=100)
    with pytest.raises(ValueError, match="identifier"):
        inpage.slider("d k", "d_k", 1, 2, 1)
    with pytest.raises(TypeError, match="label"):
        inpage.slider("d_k", "", 1, 2, 1)
    m = inpage.select("kind", "mask", [("none", "no mask"), ("causal", "causal")], "causal")
    assert m["options"] == [("none", "no mask"), ("causal", "causal")]
    with pytest.raises(ValueError, match="repeat"):
        inpage.select("kind", "mask", [("a", "A"), ("a", "B")], "a")
    with pytest.raises(TypeError, match="pair"):
        inpage.select("kind", "mask", ["a", "b"], "a")
    with pytest.raises(ValueError):
        inpage.select("kind", "mask", [("a", "A")], "b")


def test_text_box_checks_its_input_and_escapes_its_value():
    box = inpage.text_box("text", "order", "一碗<b>牛肉面\"", max_chars=20)
    assert (box["kind"], box["value"], box["max_chars"]) == ("text", "一碗<b>牛肉面\"", 20)
    with pytest.raises(ValueError, match="over max_chars=3"):
        inpage.text_box("text", "order", "一碗牛肉面", max_chars=3)
    with pytest.raises(TypeError, match="str"):
        inpage.text_box("text", "order", 5)
    with pytest.raises(ValueError, match="identifier"):
        inpage.text_box("the text", "order", "")
    cell = inpage.InPage("order", _figure(), [box], {}, "one line")
    html = cell.controls_html()
    assert 'type="text" name="text" maxlength="20"' in html
    assert 'value="一碗&lt;b&gt;牛肉面&quot;"' in html   # the value cannot end the attribute
    assert cell.control_names() == ['order ("一碗<b>牛肉面"")']


def test_templates_wrap_as_the_renderer_and_keep_the_fields():
    from book.chapters import ch09_long_context

    fig = ch09_long_context.window_figure(windows=[4], start=0)
    out = inpage.templates(fig, {"annotations[1]": ("ch09.window_title_cost",
                                                    {"ratio": "16384", "n": "16384"})})
    text = out["annotations[1]"]
    assert "{ratio:.0f}" in text and "{n}" in text
    # filled with its widest values, the template is the renderer's own wrapping of that text
    filled = text.replace("{ratio:.0f}", "16384").replace("{n}", "16384")
    d = fig.to_dict()
    d["layout"]["annotations"][1]["text"] = i18n.tr("ch09.window_title_cost", ratio=16384,
                                                   n=16384)
    assert filled == tidy(d)["layout"]["annotations"][1]["text"]
    assert "<br>" in filled  # this title is long enough to be wrapped at all
    # a finished text is wrapped too; the main title goes where the figure's title goes
    assert inpage.templates(_figure(), {"title": "short"}) == {"title": "short"}


def test_templates_say_what_is_wrong():
    fig = _figure()
    with pytest.raises(ValueError, match="widest"):
        inpage.templates(fig, {"title": ("ch09.window_title_cost", {"ratio": "1"})})
    with pytest.raises(KeyError, match="string table"):
        inpage.templates(fig, {"title": ("ch09.no_such_message", {})})
    with pytest.raises(ValueError, match="annotations"):
        inpage.templates(fig, {"annotations[3]": "x"})
    with pytest.raises(TypeError, match="msg_id"):
        inpage.templates(fig, {"title": ("ch09.window_title_cost",)})
    with pytest.raises(TypeError, match="Figure"):
        inpage.templates({"data": []}, {"title": "x"})


def test_the_cell_holds_controls_figure_and_spec():
    cell = inpage.InPage("dk", _figure(), [inpage.slider("d_k", "d_k", 1, 8, 2)],
                         {"text": "</script> ends nothing"}, "one line")
    page = cell._repr_mimebundle_()["text/html"]
    assert page.startswith('<div class="book-inpage" data-explorer="dk">')
    assert page.count('name="d_k"') == 2  # the range and the number input
    assert "plotly-graph-div" in page and "Plotly.newPlot" in page
    spec = re.search(r'<script type="application/json" class="book-inpage-spec">(.*?)</script>',
                     page, re.S).group(1)
    assert json.loads(spec) == {"text": "</script> ends nothing"}
    assert cell._repr_mimebundle_()["text/plain"] == "one line" == repr(cell)


def test_the_pdf_gets_the_first_state_and_the_controls_names():
    """The cell's figure JSON is what the PDF draws (one still per HTML figure); its note names
    the page's controls, which live in HTML rather than in the figure."""
    from book.site import static_figures

    cell = inpage.InPage("dk", _figure(), [inpage.slider("d_k", "d_k", 1, 4096, 64),
                                           inpage.select("mask", "mask", [("a", "A"), ("b", "B")],
                                                         "a")], {}, "one line")
    bundle = cell._repr_mimebundle_()
    figure = bundle[inpage.PLOTLY_MIME]
    assert figure["data"][0]["type"] == "bar"
    assert figure["layout"]["meta"]["book_controls"] == ["d_k (1 … 4096)", "mask"]
    picture, note = static_figures.still(figure)
    assert note == i18n.tr("common.still_varies", controls="d_k (1 … 4096); mask")
    assert "meta" not in picture["layout"]
    assert static_figures.still(_figure().to_dict())[1] == ""   # a figure without controls


def test_the_cell_refuses_bad_parts():
    ok = [inpage.slider("a", "a", 0, 1, 0)]
    with pytest.raises(ValueError):
        inpage.InPage("typed", _figure(), ok, {}, "x")
    with pytest.raises(TypeError, match="Figure"):
        inpage.InPage("dk", {"data": []}, ok, {}, "x")
    with pytest.raises(ValueError, match="repeat"):
        inpage.InPage("dk", _figure(), ok + ok, {}, "x")
    with pytest.raises(ValueError, match="NaN"):
        inpage.InPage("dk", _figure(), ok, {"x": float("nan")}, "x")
    with pytest.raises(ValueError, match="tolist"):
        inpage.InPage("dk", _figure(), ok, {"x": np.zeros(2)}, "x")
    with pytest.raises(TypeError, match="slider"):
        inpage.InPage("dk", _figure(), [{"kind": "knob"}], {}, "x")
    with pytest.raises(TypeError, match="sentence"):
        inpage.InPage("dk", _figure(), ok, {}, " ")


def test_the_figure_needs_the_books_renderer(monkeypatch):
    import plotly.io as pio

    cell = inpage.InPage("dk", _figure(), [inpage.slider("a", "a", 0, 1, 0)], {}, "x")
    monkeypatch.setattr(pio.renderers, "default", "json")
    with pytest.raises(RuntimeError, match="book.setup"):
        cell.html()


def test_either_picks_the_face(monkeypatch):
    monkeypatch.setenv("BOOK_BUILD", "1")
    assert inpage.either(lambda: "live", lambda: "page") == "page"
    monkeypatch.setenv("BOOK_BUILD", "0")
    assert inpage.either(lambda: "live", lambda: "page") == "live"
    with pytest.raises(TypeError, match="two functions"):
        inpage.either("live", lambda: "page")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_four_chapter_explorers(language):
    from book.chapters import ch02_scaling, ch04_pytorch, ch09_long_context

    i18n.set_language(language)
    made = {"dk": ch02_scaling.dk_inpage(),
            "softmax_row": ch02_scaling.softmax_row_inpage(),
            "mask": ch04_pytorch.mask_inpage(),
            "window": ch09_long_context.window_inpage()}
    for name, cell in made.items():
        assert cell.explorer == name
        page = cell.html()
        assert f'data-explorer="{name}"' in page
        for c in cell.controls:  # labelled in the edition's language, as the live controls are
            assert html_escape(c["label"]) in page
    mask = {c["name"]: c for c in made["mask"].controls}
    assert [v for v, _ in mask["kind"]["options"]] == list(ch04_pytorch.masktraps.MASK_KINDS)
    assert mask["kind"]["options"][0][1] == ch04_pytorch.kind_name("none")
    assert {c["name"]: c["high"] for c in made["dk"].controls}["d_k"] == 4096


def html_escape(text: str) -> str:
    import html

    return html.escape(text)


def test_the_mask_spec_reproduces_the_layers_weights():
    """What the page computes from the spec (masked softmax of q·k / √d_k) is what the layer
    computes, for every mask kind, length and padding: the spec carries the right q and k."""
    from book.chapters import ch04_pytorch
    from book.studies import masktraps

    spec = json.loads(ch04_pytorch.mask_inpage().spec_json)
    q, k = np.array(spec["q"]), np.array(spec["k"])
    worst = 0.0
    for kind in masktraps.MASK_KINDS:
        for length in range(1, masktraps.MASK_MAX_REAL + 1):
            for padding in range(masktraps.MASK_MAX_PAD + 1):
                n = length + padding
                data = masktraps.mask_data(kind, length, n)
                i, j = np.indices((n, n))
                allowed = ((j <= i) | (not spec["kinds"][kind]["causal"])) & (
                    (j < length) | (not spec["kinds"][kind]["padding"]))
                np.testing.assert_array_equal(allowed, data["allowed"])
                scores = np.where(allowed, q[:n] @ k[:n].T / np.sqrt(q.shape[1]), -np.inf)
                w = np.exp(scores - scores.max(axis=1, keepdims=True))
                w /= w.sum(axis=1, keepdims=True)
                worst = max(worst, float(np.abs(w - data["weights"]).max()))
    assert worst <= 1e-6, worst


def test_the_mask_cell_text_modes_follow_the_renderer():
    from book.chapters import ch04_pytorch

    figure = ch04_pytorch.mask_live().figure
    modes = ch04_pytorch._mask_text_modes(figure)
    assert modes[0] is None and len(modes) == 17
    assert all(m in ("full", "short", "none") for pair in modes[1:] for row in pair for m in row)
    # each agrees with the renderer's own figure of that state (chapter 4's static face)
    for kind, length, n in (("none", 1, 1), ("none", 1, 7), ("none", 2, 8), ("causal", 3, 8),
                            ("padding", 1, 9), ("none", 4, 10)):
        fig = tidy(ch04_pytorch.mask_figure(length, [n], [kind]).to_dict())
        texts = fig["data"][1]["text"]
        one_hot = any(t == "1.00" for row in texts for t in row)
        shown = ("none" if not fig["data"][1]["texttemplate"] else "short" if any(
            str(t).startswith(".") for row in texts for t in row) else "full")
        assert modes[n][one_hot][1] == shown, (kind, length, n)


def test_the_build_ships_the_script():
    """book.site.sphinxext writes this module's script (its modules joined) to _static and
    loads it on the pages whose HTML holds an in-page cell (the class the cell's HTML starts
    with); every explorer the page knows is one module of inpage/explorers/, and the cells
    accept exactly those."""
    from book.site import scripts, sphinxext

    assert sphinxext.face_script(sphinxext.INPAGE_JS) == inpage.SCRIPTS
    assert sphinxext.page_script_text(sphinxext.INPAGE_JS) == scripts.inpage_script()
    cell = inpage.InPage("dk", _figure(), [inpage.slider("a", "a", 0, 1, 0)], {}, "x")
    assert 'class="book-inpage"' in cell.html()
    # the chapters' in-page faces (a new explorer adds its file, and nothing here)
    assert set(inpage.EXPLORERS) >= {"dk", "softmax_row", "mask", "window", "order",
                                     "order_model", "head_maps"}
    assert sorted(inpage.EXPLORERS) == sorted(
        p.stem for p in (inpage.SCRIPTS / "explorers").glob("*.js"))
    for name in inpage.EXPLORERS:
        module = (inpage.SCRIPTS / "explorers" / f"{name}.js").read_text(encoding="utf-8")
        assert module.count("ns.register(") == 1 and f'ns.register("{name}", ' in module, name
    with pytest.raises(ValueError, match="explorer"):
        inpage.InPage("nope", _figure(), [inpage.slider("a", "a", 0, 1, 0)], {}, "x")
