"""Chapter 8's "type your own order" in the HTML book: the page runs the trained encoder itself.

A bare page holds the explorer as the book's build writes it (book.chapters.ch08_seeing_attention
.attention_inpage: the controls, the first state drawn by Python, the checkpoint's weights) with
the installed plotly.js and book/face/inpage.js, opened from file:// in headless Chromium with
every other request refused. Orders are typed into its text box as a reader types them: 20
held-out orders of every length and edge cases (one word, spaces and ASCII punctuation,
repeated words, an order the rules call ambiguous, the longest the page draws). For each, the page's
attention maps must be torch's on the same checkpoint within 1e-5, its labels and the rules'
labels identical to Python's, its axes Python's token labels, and the drawn map the maps rounded
as the live view rounds them. An empty box, an unknown word and an order over the model's length
(the model's 64 positions, or the page's 48 words) get the message that says so while the last
map stays. The states are checked for legibility at
1280 and 390 px in the book's fonts and the wide fallback (tests/legibility.py). The redraw
times are printed (median over the 20 orders), not asserted.
"""

from __future__ import annotations

import re
import statistics

import legibility
import numpy as np
import pytest
from test_browser import ARGS, CHROMIUM  # noqa: F401

pytestmark = pytest.mark.slow

EDGE_CASES = ["辣", " 一碗 牛肉面 , 不要 香菜 . ", "香菜香菜香菜，辣辣。", "不要多加香菜",
              "两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。"]
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def model():
    from book.toy import train

    return train.pretrained()


def _typed_orders() -> list[str]:
    """20 held-out orders from the shortest to the longest, then the edge cases."""
    from book.toy import train

    test = sorted(train.default_data()[1], key=len)
    picked = [test[round(i * (len(test) - 1) / 19)] for i in range(20)]
    return ["".join(o.tokens) for o in picked] + EDGE_CASES


def _words(n: int) -> str:
    """An order of ``n`` words."""
    words = ["一碗", "牛肉面", "，", "不要", "香菜", "、", "葱", "，", "多加", "辣", "。"]
    return "".join((words * (n // len(words) + 1))[:n])


def _longest() -> str:
    """The longest order the page draws (ch08_seeing_attention.ORDER_MAX_WORDS words)."""
    from book.chapters import ch08_seeing_attention

    return _words(ch08_seeing_attention.ORDER_MAX_WORDS)


def _page(tmp_path, language: str):
    """The explorer on a bare page in ``language``."""
    import figures_page
    from conftest import ROOT

    from book.chapters import ch08_seeing_attention
    from book.face import display
    from book.kit import i18n

    before = i18n.language()
    display.setup(language=language)
    try:
        html = ch08_seeing_attention.attention_inpage().html()
    finally:
        i18n.set_language(before)
    path = tmp_path / f"order-{language}.html"
    figures_page.write_page([html], path)
    script = (ROOT / "book" / "face" / "inpage.js").as_uri()
    path.write_text(path.read_text(encoding="utf-8").replace(
        "</body>", f'<script src="{script}"></script></body>'), encoding="utf-8")
    return path


def _open(browser, path, width: int, font: str = "book"):
    context = browser.new_context(viewport={"width": width, "height": legibility.SCREEN_HEIGHT})
    if font == "fallback":
        context.add_init_script(legibility.fallback_script())
    page = context.new_page()
    problems = []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file://", "data:", "blob:")) else (problems.append(r.request.url), r.abort()))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(path.as_uri(), wait_until="load")
    page.evaluate("document.fonts.ready.then(() => 0)")
    cell = page.locator('.book-inpage[data-explorer="order"]')
    page.wait_for_function("el => el.bookInpage", arg=cell.element_handle(), timeout=20_000)
    cell.evaluate("el => el.bookInpage.settled()")
    return page, cell, problems


STATE_JS = """el => ({last: el.bookInpage.last(), drawn: el.bookInpage.drawn(),
  status: el.querySelector('.book-inpage-status').textContent,
  trace: (t => ({x: t.x, y: t.y, z: t.z}))(el.querySelector('.plotly-graph-div').data[0]),
  title: el.querySelector('.plotly-graph-div').layout.title.text})"""


def _type(cell, text: str, layer: int | None = None, head: int | None = None) -> dict:
    if layer is not None:
        cell.locator('select[name="layer"]').select_option(str(layer))
    if head is not None:
        cell.locator('select[name="head"]').select_option(str(head))
    cell.locator('input[type=text][name="text"]').fill(text)
    cell.evaluate("el => el.bookInpage.settled()")
    return cell.evaluate(STATE_JS)


def _python(model, text: str, layer: int = 1, head: int = 1) -> dict:
    """What Python computes and says for ``text`` with (layer, head) chosen."""
    from book.face import views
    from book.kit.i18n import tr
    from book.studies import attention_roles
    from book.toy import orders, probe

    order = attention_roles.read_order(text, model.config.max_len)
    try:
        rules = orders.label(order.tokens)
    except ValueError:
        rules = None
    return {"tokens": list(order.tokens), "maps": probe.attention_maps(model, order),
            "predictions": probe.predict(model, order), "rules": rules,
            "cols": attention_roles.token_labels(order),
            "rows": attention_roles.token_labels(order, gloss=True),
            "title": views.head_label(layer, head),
            "status": tr("ch08.rows_cols", head=views.head_label(layer, head))}


def check_order(text: str, layer: int, head: int, language: str, got: dict, trace: dict,
                title: str, status: str, model=None) -> float:
    """The page's state for ``text`` against Python's (also the built book's, from
    tests/test_browser_inpage.py): the tokens, every map within TOLERANCE of torch's, the
    model's and the rules' labels, the axes, the drawn map, the title and the status line.
    Returns the largest |page - torch|."""
    from book.chapters import ch08_seeing_attention as ch08
    from book.kit import i18n
    from book.toy import train

    model = train.pretrained() if model is None else model
    before = i18n.language()
    i18n.set_language(language)
    try:
        want = _python(model, text, layer, head)
    finally:
        i18n.set_language(before)
    assert got["tokens"] == want["tokens"], text
    maps = np.asarray(got["maps"], dtype=float)
    assert maps.shape == want["maps"].shape, (text, maps.shape)
    diff = float(np.abs(maps - want["maps"]).max())
    assert diff <= TOLERANCE, f"{text!r}: max |page - torch| = {diff:.2e}"
    assert got["predictions"] == want["predictions"], text
    assert got["rules"] == want["rules"], text
    glossed = language == "en" and len(want["tokens"]) <= ch08.ORDER_GLOSS_UP_TO
    assert trace["x"] == want["cols"], text
    assert trace["y"] == (want["rows"] if glossed else want["cols"]), text
    np.testing.assert_allclose(np.asarray(trace["z"], dtype=float),
                               np.round(want["maps"][layer, head], 3), atol=1e-12)
    assert (title, status) == (want["title"], want["status"]), text
    return diff


@pytest.mark.parametrize("language", ["en", "zh"])
def test_typed_orders_match_torch(chromium, model, tmp_path, language):
    path = _page(tmp_path, language)
    page, cell, problems = _open(chromium, path, legibility.DESKTOP)
    texts = _typed_orders() + [_longest()]
    worst, times = 0.0, []
    for k, text in enumerate(texts):
        layer, head = k % model.n_layers, (k // 2) % model.n_heads
        state = _type(cell, text, layer, head)
        worst = max(worst, check_order(text, layer, head, language, state["last"]["data"],
                                       state["trace"], state["title"], state["status"], model))
        if k < 20:
            times.append(state["last"]["ms"])
    assert problems == [], problems
    page.context.close()
    print(f"\n{language}: {len(texts)} orders typed; max |page - torch| over every map "
          f"{worst:.2e}; input to redraw: median {statistics.median(times):.1f} ms, max "
          f"{max(times):.1f} ms over the 20 held-out orders")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_bad_orders_say_why_and_keep_the_map(chromium, model, tmp_path, language):
    from book.chapters.ch08_seeing_attention import ORDER_MAX_WORDS
    from book.kit import i18n
    from book.toy import orders

    path = _page(tmp_path, language)
    page, cell, problems = _open(chromium, path, legibility.DESKTOP)
    good = _type(cell, "两碗炒饭，不要葱。", 1, 1)
    before = i18n.language()
    i18n.set_language(language)
    try:
        drawn = _python(model, "两碗炒饭，不要葱。")["status"]
        empty = i18n.tr("ch08.empty_order", example="")[:12]
        too_long = i18n.tr("ch08.long_order", n=model.config.max_len + 1,
                           max_len=model.config.max_len)
        page_long = i18n.tr("ch08.page_long_order", n=ORDER_MAX_WORDS + 1,
                            max_words=ORDER_MAX_WORDS, max_len=model.config.max_len)
    finally:
        i18n.set_language(before)
    unknown = "一碗牛肉面，加猪肉 谢谢"
    with pytest.raises(ValueError, match="cannot read") as err:
        orders.tokenize(unknown)
    stretch = re.search(r"cannot read '([^']+)'", str(err.value)).group(1)
    cases = {"   ": (empty, "empty"), unknown: (f"“{stretch}”", "unknown"),
             _words(model.config.max_len + 1): (too_long, "long"),
             _words(ORDER_MAX_WORDS + 1): (page_long, "page_long")}
    for text, (said, kind) in cases.items():
        state = _type(cell, text)
        assert said in state["status"], (text, state["status"])
        assert state["last"]["data"] == {"error": kind}, state["last"]
        assert state["trace"] == good["trace"], f"{text!r}: the last good map did not stay"
    assert good["status"] == drawn, good["status"]
    back = _type(cell, "两碗炒饭，不要葱。")
    assert (back["trace"], back["status"]) == (good["trace"], drawn), "no redraw after a fix"
    assert problems == [], problems
    page.context.close()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_typed_states_are_legible(chromium, model, tmp_path, language):
    from book.chapters import ch08_seeing_attention

    path = _page(tmp_path, language)
    states = ["辣", "两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。",
              _words(ch08_seeing_attention.ORDER_GLOSS_UP_TO + 1), _longest()]
    findings, shots = [], tmp_path / "shots"
    for width in (legibility.DESKTOP, legibility.PHONE):
        for font in legibility.FONTS:
            page, cell, problems = _open(chromium, path, width, font)
            fig = cell.locator(".plotly-graph-div")
            for k, text in enumerate([None, *states]):   # the first state as drawn, then typed
                if text is not None:
                    _type(cell, text, 1, k % model.n_heads)
                found, _ = legibility.check_figure(page, fig, width)
                for f in found:
                    f.update(page=f"order {k} ({len(text or '')} characters)", width=width,
                             font=font, figure="order")
                if found:
                    shots.mkdir(exist_ok=True)
                    fig.screenshot(path=str(shots / f"{language}-{width}-{font}-{k}.png"))
                findings += found
            assert problems == [], problems
            page.context.close()
    listed = "\n".join(legibility.describe(f) for f in findings)
    assert not findings, f"{len(findings)} findings (screenshots in {shots}):\n{listed[:6000]}"
