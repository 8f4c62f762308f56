"""The in-page explorers of the built book (_static/book-inpage.js, joined from book/face/inpage/),
in headless Chromium from file:// with the network cut off, in both editions.

Each control is moved to its extremes and a few values between, through the page's own inputs.
The deterministic explorers (chapter 4's masks, chapter 9's window) must draw what Python draws
for the same values; the random ones (chapter 2's d_k sampler and softmax row) draw from the
page's seeded generator, so the test checks what holds for any sample: the plotted histogram is
the histogram of the dot products the page exposes, their variance is d_k within a tolerance
derived from n, every softmax row is softmax(K q) of the q and K the page exposes and sums to 1,
and the same controls give the same drawing. Every state reached is checked for legibility at
1280 and 390 px (tests/legibility.py), the page logs no console error and makes no request
that leaves the machine. Screenshots of the extreme states at 390 px go to BOOK_SCREENSHOTS
(or the test's temporary folder).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import legibility
import numpy as np
import pytest
import test_browser
from test_browser import open_page
from test_browser_head_maps import STATE_JS as HEAD_MAPS_JS

browser = test_browser.browser  # the fixture: one Chromium per module, as there

pytestmark = [pytest.mark.slow, pytest.mark.extended]

PAGES = {"dk": "chapters/02_scaling.html", "softmax_row": "chapters/02_scaling.html",
         "mask": "chapters/04_pytorch.html", "window": "chapters/09_long_context.html",
         "order": "chapters/08_seeing_attention.html",
         "order_model": "chapters/08_seeing_attention.html",
         "head_maps": "chapters/06_heads.html"}
# The control values each explorer is moved through (the extremes and a few between), in order.
STATES = {
    "dk": [{"d_k": 1, "n": 100}, {"d_k": 4096, "n": 3000}, {"d_k": 7, "n": 1300},
           {"d_k": 512, "n": 100}, {"d_k": 1, "n": 3000}, {"d_k": 64, "n": 2000}],
    "softmax_row": [{"d_k": 1, "n_keys": 1, "seed": 0}, {"d_k": 4096, "n_keys": 128, "seed": 99},
                    {"d_k": 64, "n_keys": 16, "seed": 5}, {"n_keys": 1},
                    {"d_k": 300, "n_keys": 57, "seed": 42}],
    "mask": [{"kind": "none", "length": 1, "padding": 0}, {"kind": "padding", "length": 8,
                                                           "padding": 8},
             {"kind": "causal", "length": 3, "padding": 5}, {"kind": "causal + padding",
                                                             "length": 8, "padding": 0},
             {"kind": "padding", "length": 1, "padding": 8}, {"kind": "causal + padding",
                                                              "length": 5, "padding": 2}],
    "window": [{"window": 0, "n": 8}, {"window": 64, "n": 96}, {"window": 0, "n": 96},
               {"window": 64, "n": 8}, {"window": 17, "n": 33}, {"window": 4, "n": 32}],
    # chapter 8's typed order (its forward pass against torch: tests/test_browser_order.py)
    "order": [{"text": "辣", "layer": "0", "head": "0"},
              {"text": "两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。", "layer": "1",
               "head": "3"},
              {"text": "一碗牛肉面，不要香菜，多加辣。", "layer": "1", "head": "1"}],
    # its model view: every head of every layer for the typed order, the longest it draws last
    "order_model": [{"text": "辣"},
                    {"text": "两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。"},
                    {"text": "一碗牛肉面，不要香菜，多加辣。"},
                    {"text": "一碗牛肉面，不要香菜、葱，多加辣。一碗牛肉面，不要香菜"}],
    # chapter 6's head maps of the five trained models (each model's longest order included)
    "head_maps": [{"n_heads": "1", "layer": "0", "order": "辣"},
                  {"n_heads": "16", "layer": "1", "order": "两碗炒饭，少放盐，多加醋。"},
                  {"n_heads": "4", "layer": "0", "order": "一碗牛肉面，不要香菜，多加辣。"},
                  {"n_heads": "8", "layer": "1",
                   "order": "三碗清汤馄饨，盐的话照常，辣和醋都别放"},
                  {"n_heads": "2", "layer": "1",
                   "order": "一碗牛肉面，不要香菜、葱，多加辣。一碗牛肉面，不要香菜、葱"}],
}
EDITIONS = {"built_book": "en", "built_zh": "zh"}

STATE_JS = """el => ({values: el.bookInpage.values(), last: el.bookInpage.last(),
  status: el.querySelector('.book-inpage-status').textContent,
  traces: el.querySelector('.plotly-graph-div').data.map(t => ({x: t.x, y: t.y, z: t.z,
    text: t.text, texttemplate: t.texttemplate, customdata: t.customdata})),
  titles: {title: (el.querySelector('.plotly-graph-div').layout.title || {}).text,
           annotations: (el.querySelector('.plotly-graph-div').layout.annotations || [])
             .map(a => a.text)},
  layout: (l => ({x: l.xaxis.range, y: l.yaxis.range, y2: l.yaxis2 && l.yaxis2.range,
                  height: l.height}))(el.querySelector('.plotly-graph-div').layout),
  model: el.dataset.explorer !== 'order_model' ? null : (gd => ({layout: gd.layout,
    rowPx: gd._fullLayout.yaxis._length}))(el.querySelector('.plotly-graph-div')),
  heads: el.dataset.explorer !== 'head_maps' ? null : {state: (""" + HEAD_MAPS_JS + """)(el),
    model: JSON.parse(el.querySelector('script.book-inpage-spec').textContent)
      .models[el.bookInpage.values().n_heads]}})"""


def _plain(text: str) -> str:
    """A title without its line breaks and spaces (the page wraps it for its widest value)."""
    return re.sub(r"<br>|\s", "", text)


def _cell(page, explorer: str):
    cell = page.locator(f'.book-inpage[data-explorer="{explorer}"]')
    assert cell.count() == 1, f"{explorer}: {cell.count()} in-page cells on the page"
    page.wait_for_function("el => el.bookInpage", arg=cell.element_handle(), timeout=20_000)
    cell.evaluate("el => el.bookInpage.settled()")
    return cell


def _move(cell, values: dict, use_number: bool = False) -> dict:
    """Set the controls through the page's inputs; the state once the redraw is done."""
    for name, value in values.items():
        menu = cell.locator(f'select[name="{name}"]')
        box = cell.locator(f'input[type=text][name="{name}"]')
        if menu.count():
            menu.select_option(str(value))
        elif box.count():
            box.fill(value)
        else:
            kind = "number" if use_number else "range"
            cell.locator(f'input[type={kind}][name="{name}"]').fill(str(value))
    cell.evaluate("el => el.bookInpage.settled()")
    state = cell.evaluate(STATE_JS)
    for name, value in values.items():
        assert state["values"][name] == value, (name, state["values"])
    assert state["last"]["values"] == state["values"], "the figure shows other values"
    return state


# --- what each explorer must draw -------------------------------------------------------------

def _check_dk(state, language):
    from book.kit import i18n

    v, data, traces = state["values"], state["last"]["data"], state["traces"]
    d_k, n = v["d_k"], v["n"]
    raw = np.array(data["raw"])
    assert raw.shape == (n,)
    var = raw.var()
    assert data["raw_var"] == pytest.approx(var, rel=1e-9)
    assert data["scaled_var"] == pytest.approx(var / d_k, rel=1e-9)
    # var(q·k) = d_k; the sample variance of n of them has a relative spread of
    # sqrt((2 + 6 / d_k) / n) (E[(q·k)^4] = 3 d_k^2 + 6 d_k): allow 5 of them
    assert abs(var / d_k - 1) <= 5 * np.sqrt((2 + 6 / d_k) / n), (d_k, n, var)
    for trace, values, lo, hi in ((traces[0], raw, -4 * np.sqrt(d_k), 4 * np.sqrt(d_k)),
                                  (traces[1], raw / np.sqrt(d_k), -4.0, 4.0)):
        density, edges = np.histogram(np.clip(values, lo, hi), bins=len(trace["y"]),
                                      range=(lo, hi), density=True)
        np.testing.assert_allclose(trace["y"], density, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(trace["x"], (edges[:-1] + edges[1:]) / 2, rtol=1e-12)
        assert float(np.sum(np.array(trace["y"]) * np.diff(edges))) == pytest.approx(1.0)
    assert [sum(c) for c in data["counts"]] == [n, n]
    i18n.set_language(language)
    want = [i18n.tr("ch02.dk_raw_title", d_k=d_k, var=var),
            i18n.tr("ch02.dk_scaled_title", var=data["scaled_var"])]
    assert [_plain(t) for t in state["titles"]["annotations"]] == [_plain(t) for t in want]
    # the raw axis holds ±4 standard deviations at every d_k
    assert state["layout"]["x"][1] >= 4 * np.sqrt(d_k) - 1e-9


def _softmax(z):
    e = np.exp(z - z.max())
    return e / e.sum()


def _check_softmax_row(state, language):
    from book.kit import i18n

    v, data, traces = state["values"], state["last"]["data"], state["traces"]
    q, k = np.array(data["q"]), np.array(data["k"])
    assert q.shape == (v["d_k"],) and k.shape == (v["n_keys"], v["d_k"])
    scores = k @ q
    none, sqrt = _softmax(scores), _softmax(scores / np.sqrt(v["d_k"]))
    np.testing.assert_allclose(traces[0]["y"], none, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(traces[1]["y"], sqrt, rtol=1e-9, atol=1e-12)
    for trace in traces:
        assert sum(trace["y"]) == pytest.approx(1.0, abs=1e-12)
        assert trace["x"] == [f"k{j + 1}" for j in range(v["n_keys"])]
    i18n.set_language(language)
    want = i18n.tr("ch02.row_title", d_k=v["d_k"], none=none.max(), sqrt=sqrt.max())
    assert _plain(state["titles"]["title"]) == _plain(want)


def _check_mask(state, language):
    from book.chapters import ch04_pytorch
    from book.face.plotting import tidy
    from book.kit import i18n

    i18n.set_language(language)
    v, traces = state["values"], state["traces"]
    n = v["length"] + v["padding"]
    want = tidy(ch04_pytorch.mask_figure(v["length"], [n], [v["kind"]]).to_dict())
    data = ch04_pytorch.masktraps.mask_data(v["kind"], v["length"], n)
    for got, ref in zip(traces, want["data"], strict=True):
        assert got["x"] == ref["x"] and got["y"] == ref["y"]
        assert got["texttemplate"] == ref["texttemplate"]
        # the English hover's glosses, Python's (issue 48); none in Chinese
        assert got.get("customdata") == ref.get("customdata")
    assert traces[0]["z"] == want["data"][0]["z"] and traces[0]["text"] == want["data"][0]["text"]
    np.testing.assert_allclose(state["last"]["data"]["weights"], data["weights"], atol=1e-6)
    np.testing.assert_allclose(traces[1]["z"], want["data"][1]["z"], atol=1.5e-4)
    # a weight written to 2 decimals matches, unless it sits on a rounding edge that float32
    # (torch) and float64 (the page) may settle apart
    w = data["weights"] * 100
    edge = np.abs(w - np.floor(w) - 0.5) < 1e-4
    got_text, want_text = np.array(traces[1]["text"]), np.array(want["data"][1]["text"])
    assert (got_text == want_text)[~edge].all(), (got_text, want_text)
    assert [_plain(t) for t in state["titles"]["annotations"]] == [
        _plain(a["text"]) for a in want["layout"]["annotations"]]
    assert _plain(state["titles"]["title"]) == _plain(want["layout"]["title"]["text"])


def _check_window(state, language):
    from book.chapters import ch09_long_context
    from book.ideas import longctx
    from book.kit import i18n

    i18n.set_language(language)
    v, traces = state["values"], state["traces"]
    data = longctx.window_data(v["n"], v["window"])
    assert traces[0]["z"] == data["levels"].tolist()
    assert traces[0]["x"] == traces[0]["y"] == list(range(v["n"]))
    assert traces[2]["y"] == data["banded"] and traces[1]["y"] == data["full"]
    assert state["last"]["data"]["keys"] == int(data["keys"].max())
    want = ch09_long_context._window_titles(data)
    assert [_plain(t) for t in state["titles"]["annotations"]] == [_plain(t) for t in want]
    shown = min(v["n"], ch09_long_context.WINDOW_PATTERN_N)
    assert state["layout"]["x"] == [-0.5, shown - 0.5]
    assert state["layout"]["y"] == [shown - 0.5, -0.5]
    status = (i18n.tr("ch09.inpage_window_shown", shown=shown, n=v["n"])
              if v["n"] > shown else "")
    assert state["status"] == status


def _check_order(state, language):
    from test_browser_order import check_order

    check_order(state["values"]["text"], int(state["values"]["layer"]),
                int(state["values"]["head"]), language, state["last"]["data"],
                state["traces"][0], state["titles"]["title"], state["status"])


def _check_order_model(state, language):
    from test_browser_order import check_model_view

    from book.toy import train

    check_model_view(state["values"]["text"], language,
                     {"last": state["last"], "traces": state["traces"], **state["model"]},
                     train.pretrained())


def _check_head_maps(state, language):
    """Against torch on the page's own weights of the chosen model (the build's trained one)."""
    from test_browser_head_maps import check_head_maps

    from book.toy import export

    v = state["values"]
    check_head_maps(state["heads"]["state"], v["order"], int(v["n_heads"]), int(v["layer"]),
                    language, export.model_from_page(state["heads"]["model"]))


CHECKS = {"dk": _check_dk, "softmax_row": _check_softmax_row, "mask": _check_mask,
          "window": _check_window, "order": _check_order, "order_model": _check_order_model,
          "head_maps": _check_head_maps}


# --- the tests ---------------------------------------------------------------------------------

@pytest.mark.parametrize("edition", list(EDITIONS))
@pytest.mark.parametrize("explorer", list(STATES))
def test_inpage_explorer(request, browser, tmp_path, edition, explorer):
    """Every control to its extremes and between, in both widths: the numbers, legibility, no
    console error and no request off the machine."""
    built = request.getfixturevalue(edition)
    language = EDITIONS[edition]
    path = built["html"] / PAGES[explorer]
    shots = Path(os.environ.get("BOOK_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    findings, times = [], []
    for width in (legibility.DESKTOP, legibility.PHONE):
        page, problems = open_page(browser, path)
        try:
            page.set_viewport_size({"width": width, "height": legibility.SCREEN_HEIGHT})
            page.reload(wait_until="load")  # every figure drawn at this width from the start
            # the reload cancels what the first load was still fetching (MathJax's fonts):
            # those show as net::ERR_ABORTED and are not failures of the page
            problems["failed"] = [f for f in problems["failed"] if "ERR_ABORTED" not in f]
            page.evaluate("document.fonts.ready.then(() => 0)")
            cell = _cell(page, explorer)
            first = cell.evaluate(STATE_JS)
            live_first = _live_first_values(explorer)
            assert first["values"] == live_first, "the page starts elsewhere than Jupyter"
            figure = cell.locator("div.plotly-graph-div")
            for i, values in enumerate(STATES[explorer]):
                # the number inputs on one state, the sliders and menus on the others
                state = _move(cell, values, use_number=i == 2)
                CHECKS[explorer](state, language)
                times.append(state["last"]["ms"])
                figure.scroll_into_view_if_needed()
                found, _ = legibility.check_figure(page, figure, width)
                findings += [f"{width} px, {state['values']}: {f['kind']}: {f['what']}"
                             for f in found]
                if width == legibility.PHONE and i < 2:
                    figure.screenshot(path=str(shots / f"inpage-{language}-{explorer}-{i}.png"))
            _same_values_same_drawing(cell, explorer)
        finally:
            page.context.close()
        assert not problems["console"], problems["console"]
        assert not problems["blocked"], problems["blocked"]
        assert not problems["failed"], problems["failed"]
    assert not findings, "\n".join(findings)
    print(f"\n{language} {explorer}: redraw median {np.median(times):.0f} ms, "
          f"slowest {max(times):.0f} ms over {len(times)} states")


def _live_first_values(explorer: str) -> dict:
    from book.chapters import (
        ch02_scaling,
        ch04_pytorch,
        ch06_heads,
        ch08_seeing_attention,
        ch09_long_context,
    )

    if explorer == "order_model":   # no live twin: the chapter's first written order
        from test_browser_order import WRITTEN

        return {"text": WRITTEN[0]}
    if explorer == "head_maps":     # head_maps_live's first values (its models take training)
        from book.studies import heads

        return {"n_heads": str(heads.HEAD_COUNTS[0]),
                "layer": str(heads.SETTINGS["n_layers"] - 1),
                "order": ch06_heads.HEAD_MAPS_ORDER}
    live = {"dk": ch02_scaling.dk_live, "softmax_row": ch02_scaling.softmax_row_live,
            "mask": ch04_pytorch.mask_live,
            "window": ch09_long_context.window_live,
            "order": ch08_seeing_attention.head_view_live}[explorer]()
    # a menu's value is text in the page (the ch08 menus hold the layer and head numbers)
    return {name: c.value if explorer != "order" or name == "text" else str(c.value)
            for name, c in live.controls.items()}


def _same_values_same_drawing(cell, explorer: str) -> None:
    """Away and back: the same controls draw the same figure (the random ones included)."""
    a, b = STATES[explorer][0], STATES[explorer][1]
    first = _move(cell, a)
    _move(cell, b)
    again = _move(cell, a)
    assert json.dumps(first["traces"]) == json.dumps(again["traces"])
    if explorer == "softmax_row":  # another seed, another drawing
        other = _move(cell, {"seed": a["seed"] + 1, "n_keys": 8})
        back = _move(cell, {"seed": a["seed"], "n_keys": 8})
        assert other["traces"][0]["y"] != back["traces"][0]["y"]


def test_every_deterministic_state_matches_python(browser, built_book):
    """The page's mask and window computations against Python's for every value of their
    controls (chapter 9: every window at a spread of lengths), through the cell's compute."""
    from book.ideas import longctx
    from book.studies import masktraps

    page, problems = open_page(browser, built_book["html"] / PAGES["mask"])
    try:
        cell = _cell(page, "mask")
        combos = [{"kind": kind, "length": length, "padding": padding}
                  for kind in masktraps.MASK_KINDS
                  for length in range(1, masktraps.MASK_MAX_REAL + 1)
                  for padding in range(masktraps.MASK_MAX_PAD + 1)]
        got = cell.evaluate("(el, combos) => combos.map(v => el.bookInpage.compute(v).exposed)",
                            combos)
        worst = 0.0
        for v, out in zip(combos, got, strict=True):
            data = masktraps.mask_data(v["kind"], v["length"], v["length"] + v["padding"])
            assert out["allowed"] == data["allowed"].tolist(), v
            assert out["labels"] == data["labels"], v
            worst = max(worst, float(np.abs(np.array(out["weights"]) - data["weights"]).max()))
        assert worst <= 1e-6, worst
    finally:
        page.context.close()
    page, more = open_page(browser, built_book["html"] / PAGES["window"])
    try:
        cell = _cell(page, "window")
        combos = [{"window": w, "n": n} for w in range(65) for n in (8, 9, 16, 31, 32, 33, 64,
                                                                       95, 96)]
        got = cell.evaluate("(el, combos) => combos.map(v => el.bookInpage.compute(v).exposed)",
                            combos)
        for v, out in zip(combos, got, strict=True):
            data = longctx.window_data(v["n"], v["window"])
            assert out["levels"] == data["levels"].tolist(), v
            assert out["keys"] == int(data["keys"].max()) and out["banded"] == data["banded"], v
            assert out["block"] == data["block"], v
    finally:
        page.context.close()
    print(f"\nmask: {4 * 8 * 9} states, largest |weight difference| {worst:.1e}; window: "
          f"{65 * 9} states identical")
    assert not (problems["console"] + more["console"] + problems["blocked"] + more["blocked"])


def test_the_pages_normal_generator(browser, built_book):
    """The page's N(0, 1) draws (the ziggurat under the random explorers): mean, variance,
    fourth moment and the share within one and beyond three standard deviations, each within
    five of its own standard errors over a million draws."""
    page, problems = open_page(browser, built_book["html"] / PAGES["dk"])
    try:
        _cell(page, "dk")
        n = 1_000_000
        m = page.evaluate("""n => { const g = window.bookInpage.normals(20261203); let s = 0,
            s2 = 0, s4 = 0, in1 = 0, out3 = 0; for (let i = 0; i < n; i++) { const x = g();
            s += x; s2 += x * x; s4 += x ** 4; if (Math.abs(x) < 1) in1++;
            if (Math.abs(x) > 3) out3++; } return [s / n, s2 / n, s4 / n, in1 / n, out3 / n]; }""",
                          n)
    finally:
        page.context.close()
    mean, second, fourth, inside, beyond = m
    p1, p3 = 0.6826894921370859, 0.0026997960632601866  # P(|x| < 1), P(|x| > 3)
    assert abs(mean) <= 5 / np.sqrt(n)
    assert abs(second - 1) <= 5 * np.sqrt(2 / n)
    assert abs(fourth - 3) <= 5 * np.sqrt(96 / n)  # var(x^4) = 105 - 9
    assert abs(inside - p1) <= 5 * np.sqrt(p1 * (1 - p1) / n)
    assert abs(beyond - p3) <= 5 * np.sqrt(p3 * (1 - p3) / n)
    assert not problems["console"] and not problems["blocked"]
