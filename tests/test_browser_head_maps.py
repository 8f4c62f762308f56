"""Chapter 6's head maps in the HTML book: the page runs the chosen model on the typed order.

A bare page holds the explorer as the build writes it (book.chapters.ch06_heads
.head_maps_inpage: a select for the head count, one for the layer, the order's text box, the
first state drawn by Python, the five models' weights) with the installed plotly.js and the
page script (book/face/inpage/, joined by book.site.scripts), opened from file:// in headless
Chromium with every other request refused.
The models are the head-count sweep's shapes (d_model 32, two layers, 1 to 16 heads), seeded and
untrained: the page's forward pass is checked against torch's on the same weights, which is what
training would not change (the built book's trained ones: tests/test_browser_inpage.py). For
every head count, held-out orders up to the longest it draws are typed: every map within 1e-5
of torch's, the JS divergence in the title within 1e-5 of book.studies.heads.pairwise's, each
panel the map of its head rounded as the live view rounds, the grid laid out as Python lays it
out for that head count. Bad input gets the message that says so while the maps stay. The states
are checked for legibility at 1280 and 390 px in the book's fonts and the wide fallback.
"""

from __future__ import annotations

import re
import statistics

import legibility
import numpy as np
import pytest
import test_browser_order
from test_browser_order import TOLERANCE, _open, _words, bare_page, check_legible

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # the in-page model: make test-all, CI

chromium = test_browser_order.chromium  # the fixture: one Chromium per module, as there

STATE_JS = """el => { const gd = el.querySelector('.plotly-graph-div');
  return {last: el.bookInpage.last(), status: el.querySelector('.book-inpage-status').textContent,
    traces: gd.data.map(t => ({x: t.x, y: t.y, z: t.z, customdata: t.customdata})),
    title: gd.layout.title.text,
    axes: Object.fromEntries(Object.keys(gd.layout).filter(k => /^[xy]axis\\d*$/.test(k))
      .map(k => [k, {visible: gd.layout[k].visible, domain: gd.layout[k].domain,
                     tickvals: gd.layout[k].tickvals, ticktext: gd.layout[k].ticktext,
                     length: gd._fullLayout[k]._length}])),
    annotations: gd.layout.annotations.map(a => a.text)}; }"""


@pytest.fixture(scope="module")
def models():
    from book.studies import heads
    from book.toy.model import TinyEncoder

    return {h: TinyEncoder(d_model=heads.SETTINGS["d_model"], n_heads=h,
                           n_layers=heads.SETTINGS["n_layers"], seed=h)
            for h in heads.HEAD_COUNTS}


def _page(tmp_path, language: str, models):
    """The explorer over ``models`` on a bare page in ``language``."""
    from book.chapters import ch06_heads
    from book.face import display
    from book.kit import i18n

    before = i18n.language()
    display.setup(language=language)
    try:
        html = ch06_heads.head_maps_inpage(models).html()
    finally:
        i18n.set_language(before)
    return bare_page([html], tmp_path / f"head-maps-{language}.html", language)


def _type(cell, n_heads: int | None = None, layer: int | None = None,
          order: str | None = None) -> dict:
    if n_heads is not None:
        cell.locator('select[name="n_heads"]').select_option(str(n_heads))
    if layer is not None:
        cell.locator('select[name="layer"]').select_option(str(layer))
    if order is not None:
        cell.locator('input[type=text][name="order"]').fill(order)
    cell.evaluate("el => el.bookInpage.settled()")
    return cell.evaluate(STATE_JS)


def _held_out(most: int, count: int) -> list[str]:
    """``count`` held-out orders from the shortest to the longest of at most ``most`` words."""
    from book.toy import train

    test = sorted((o for o in train.default_data()[1] if len(o) <= most), key=len)
    return ["".join(test[round(i * (len(test) - 1) / (count - 1))].tokens)
            for i in range(count)]


def _plain(text: str) -> str:
    return re.sub(r"<br>|\s", "", text)


def check_head_maps(state: dict, text: str, n_heads: int, layer: int, language: str,
                    model) -> float:
    """The page's state for ``text`` on the ``n_heads``-head model's ``layer`` against Python's
    (also the built book's, from tests/test_browser_inpage.py); the largest |page - torch|."""
    from book.chapters import ch06_heads
    from book.kit import i18n
    from book.studies import heads
    from book.toy import probe

    got = state["last"]["data"]
    before = i18n.language()
    i18n.set_language(language)
    try:
        want = heads.head_maps_data(model, text, layer)
        rows = (want["glossed"] if ch06_heads._head_grid(n_heads)[1] == 1 else want["labels"])
        grid = ch06_heads._head_axes_visible(n_heads)
        title = ch06_heads._head_maps_title({**want, "js": got["js"] if n_heads > 1 else 0.0,
                                             "text": "{text}"})
    finally:
        i18n.set_language(before)
    maps = np.asarray(got["maps"], dtype=float)
    torch_maps = probe.attention_maps(model, probe.as_order(text))
    assert maps.shape == torch_maps.shape, (text, maps.shape)
    diff = float(np.abs(maps - torch_maps).max())
    assert diff <= TOLERANCE, f"{text!r}, {n_heads} heads: max |page - torch| = {diff:.2e}"
    if n_heads > 1:
        assert abs(got["js"] - want["js"]) <= TOLERANCE, (text, got["js"], want["js"])
    else:
        assert got["js"] is None
    assert got["labels"] == want["labels"] and got["glossed"] == want["glossed"], text
    for h, trace in enumerate(state["traces"]):
        if h < n_heads:
            drawn = np.asarray(trace["z"], dtype=float)
            np.testing.assert_allclose(drawn, np.floor(maps[layer, h] * 1e3 + 0.5) / 1e3,
                                       atol=1e-12, err_msg=f"{text!r}: head {h}")
            np.testing.assert_allclose(drawn, np.round(torch_maps[layer, h], 3),
                                       atol=1e-3 + 1e-9, err_msg=f"{text!r}: head {h}")
            assert trace["x"] == want["labels"] and trace["y"] == rows, (text, h)
            # English: each cell's query and key with their glosses (issue 48); Chinese: none
            hover = ([[[q, k] for k in want["glossed"]] for q in want["glossed"]]
                     if language == "en" else None)
            assert trace.get("customdata") == hover, (text, h)
        else:   # a panel this model has no head for stays empty
            assert trace["z"] == [] and trace["x"] == [] and trace["y"] == [], (text, h)
    for key, value in grid.items():
        axis, prop = key.split(".")
        if axis in state["axes"] and prop in ("visible", "domain"):
            got_value = state["axes"][axis][prop]
            assert got_value == pytest.approx(value), (text, key, got_value, value)
    # the title: Python's with the order as the page writes it (cut with … where it is long)
    head, tail = _plain(title).split("{text}")
    plain = _plain(state["title"])
    assert plain.startswith(head) and plain.endswith(tail), (state["title"], title)
    shown = plain[len(head):len(plain) - len(tail)]
    order = probe.as_order(text).text
    assert shown == order or (shown.endswith("…") and order.startswith(shown[:-1])), shown
    # the keys' labels upright, each visible axis labelled while 14 px apart
    for h in range(n_heads):
        axis = state["axes"]["xaxis" + ("" if h == 0 else str(h + 1))]
        assert axis["ticktext"] is None, (text, h)
        n = len(want["labels"])
        step = max(1, -(-n * 14 // int(axis["length"]))) if axis["length"] else 1
        if step > 1:
            assert axis["tickvals"] == want["labels"][::step], (text, h, axis["tickvals"])
    return diff


@pytest.mark.parametrize("language", ["en", "zh"])
def test_typed_orders_match_torch_for_every_head_count(chromium, models, tmp_path, language):
    from book.chapters import ch06_heads

    path = _page(tmp_path, language, models)
    page, cell, problems = _open(chromium, path, legibility.DESKTOP, view="head_maps")
    worst, times, typed = 0.0, [], 0
    for n_heads, model in models.items():
        most = ch06_heads.head_maps_max_words(n_heads)
        texts = _held_out(most, 4) + [_words(most), "辣", " 一碗 牛肉面 , 不要 香菜 . "]
        for k, text in enumerate(texts):
            layer = k % model.n_layers
            state = _type(cell, n_heads, layer, text)
            worst = max(worst, check_head_maps(state, text, n_heads, layer, language, model))
            times.append(state["last"]["ms"])
            typed += 1
    assert problems == [], problems
    page.context.close()
    print(f"\n{language}, head maps: {typed} orders typed over {len(models)} models; max "
          f"|page - torch| over every map {worst:.2e}; input to redraw: median "
          f"{statistics.median(times):.1f} ms, max {max(times):.1f} ms")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_bad_orders_say_why_and_keep_the_maps(chromium, models, tmp_path, language):
    from book.chapters import ch06_heads
    from book.kit import i18n
    from book.toy import orders

    path = _page(tmp_path, language, models)
    page, cell, problems = _open(chromium, path, legibility.DESKTOP, view="head_maps")
    good = _type(cell, 16, 1, "两碗炒饭，不要葱。")
    most = ch06_heads.head_maps_max_words(16)
    before = i18n.language()
    i18n.set_language(language)
    try:
        too_long = i18n.tr("ch06.inpage_long", heads=ch06_heads.head_count(16),
                           max_words=most, n=most + 1)
        empty = i18n.tr("ch06.inpage_empty", example="")[:8]
    finally:
        i18n.set_language(before)
    unknown = "一碗牛肉面，加猪肉"
    with pytest.raises(ValueError, match="cannot read") as err:   # the stretch Python names
        orders.tokenize(unknown)
    stretch = re.search(r"cannot read '([^']+)'", str(err.value)).group(1)
    cases = {"   ": (empty, "empty"), unknown: (f"“{stretch}”", "unknown"),
             _words(most + 1): (too_long, "long")}
    for text, (said, kind) in cases.items():
        state = _type(cell, order=text)
        assert said in state["status"], (text, state["status"])
        assert state["last"]["data"] == {"error": kind}, state["last"]
        assert state["traces"] == good["traces"], f"{text!r}: the last good maps did not stay"
    # the same order fits with fewer heads: the page draws it there
    fewer = _type(cell, 1)
    assert fewer["status"] == "" and len(fewer["last"]["data"]["tokens"]) == most + 1
    assert problems == [], problems
    page.context.close()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_typed_head_maps_are_legible(chromium, models, tmp_path, language):
    from book.chapters import ch06_heads

    path = _page(tmp_path, language, models)
    states = [None] + [(h, _words(ch06_heads.head_maps_max_words(h))) for h in models] + [
        (16, "辣")]
    check_legible(chromium, path, "head_maps", states,
                  lambda cell, k, state: _type(cell, state[0], 1, state[1]), tmp_path / "shots")
