"""Chapter 8's "type your own order" in the HTML book: the page runs the trained encoder itself.

A bare page holds the explorer as the book's build writes it (book.chapters.ch08_seeing_attention
.head_view_inpage: the controls, the first state drawn by Python, the checkpoint's weights) with
the installed plotly.js and the page script (book/face/inpage/, joined by book.site.scripts),
opened from file:// in headless Chromium with
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

import headless
import legibility
import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.extended]  # the in-page model: make test-all, CI

EDGE_CASES = ["辣", " 一碗 牛肉面 , 不要 香菜 . ", "香菜香菜香菜，辣辣。", "不要多加香菜",
              "两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。"]
TOLERANCE = 1e-5
# the chapter's three written orders (chapters/08_seeing_attention.ipynb): the model view's menu
WRITTEN = ["一碗牛肉面，不要香菜，多加辣。", "两份招牌炒饭，葱和蒜都不要，辣多放一点。",
           "老板，来三盘饺子，醋少放，再来一碗馄饨，不要香菜。"]


@pytest.fixture(scope="module")
def chromium():
    with headless.browser() as launched:
        yield launched


@pytest.fixture(scope="module")
def model():
    from book.toy import train

    return train.pretrained()


def _typed_orders(most: int | None = None) -> list[str]:
    """20 held-out orders from the shortest to the longest (of at most ``most`` words), then
    the edge cases."""
    from book.toy import train

    test = sorted((o for o in train.default_data()[1] if most is None or len(o) <= most),
                  key=len)
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


def _page(tmp_path, language: str, view: str = "order"):
    """The explorer (``view``: "order", the head view; "order_model", the model view of the
    chapter's written orders) on a bare page in ``language``."""
    from book.chapters import ch08_seeing_attention
    from book.face import display
    from book.kit import i18n

    before = i18n.language()
    display.setup(language=language)
    try:
        if view == "order":
            html = ch08_seeing_attention.head_view_inpage().html()
        else:
            from book.toy import orders, train

            written = [orders.Order.from_text(t) for t in WRITTEN]
            html = ch08_seeing_attention.model_view_inpage(
                train.pretrained(), written, [o.text for o in written]).html()
    finally:
        i18n.set_language(before)
    return bare_page([html], tmp_path / f"{view}-{language}.html", language)


def bare_page(parts: list[str], path, language: str = "en"):
    """The cells' HTML (``parts``) on a bare page with the installed plotly.js and the page
    script as the build writes it (book.site.scripts.inpage_script, beside the page), at
    ``path``, in the fonts of the ``language`` edition."""
    import figures_page

    from book.site import scripts

    figures_page.write_page(parts, path, language=language)
    script = scripts.write_inpage_script(path.with_name("book-inpage.js")).as_uri()
    path.write_text(path.read_text(encoding="utf-8").replace(
        "</body>", f'<script src="{script}"></script></body>'), encoding="utf-8")
    return path


def page_layout(explorer: str) -> dict[str, int]:
    """The pixels only the page uses to lay ``explorer`` out: its module's ``LAYOUT``
    (book/face/inpage/explorers/<explorer>.js; the page exposes the same as
    ``window.bookInpage.layout``)."""
    from book.site import scripts

    source = (scripts.INPAGE_DIR / "explorers" / f"{explorer}.js").read_text(encoding="utf-8")
    found = re.search(r"^var LAYOUT = \{([^}]*)\};", source, re.MULTILINE)
    assert found, f"{explorer}.js has no LAYOUT"
    return {k: int(v) for k, v in re.findall(r"(\w+): (\d+)", found.group(1))}


def _shared_page(tmp_path, cells: list[str]):
    """A bare English page with chapter 8's head view (it carries the weights) and/or its model
    view reading them from there (``cells``: "order", "order_model")."""
    from book.chapters import ch08_seeing_attention as ch08
    from book.face import display
    from book.toy import orders, train

    display.setup(language="en")
    written = [orders.Order.from_text(t) for t in WRITTEN]
    html = {"order": lambda: ch08.head_view_inpage().html(),
            "order_model": lambda: ch08.model_view_inpage(
                train.pretrained(), written, [o.text for o in written],
                weights_on_page=True).html()}
    return bare_page([html[c]() for c in cells], tmp_path / f"shared-{'-'.join(cells)}.html")


def _open(browser, path, width: int, font: str = "book", view: str = "order"):
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
    cell = page.locator(f'.book-inpage[data-explorer="{view}"]')
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
    from book.chapters import ch08_seeing_attention as ch08

    return {"tokens": list(order.tokens), "maps": probe.attention_maps(model, order),
            "caption": ch08._caption(attention_roles.order_view_data(model, text)),
            "predictions": probe.predict(model, order), "rules": rules,
            "cols": attention_roles.token_labels(order),
            "rows": attention_roles.token_labels(order, gloss=True),
            "title": views.head_label(layer, head),
            "status": tr("ch08.rows_cols", head=views.head_label(layer, head))}


def _same_words(page: str, python: str) -> bool:
    """The page's caption and Python's say the same, word for word: the order, each of the
    model's labels and its ✓ or ✗. Their lines may break elsewhere: the page fills each line
    (and keeps a mark, "香菜 → omit ✓", whole with no-break spaces), Python balances them."""
    def words(text):
        return re.sub(r"<br>|\s", " ", text).split()

    return words(page) == words(python)


def _check_drawn(z, page_map, torch_map, what: str) -> None:
    """The drawn map is the page's own map rounded to 3 decimals, as the live view rounds
    (half up), so within one step of rounding torch's: a weight within 1e-5 of a tie such as
    0.8475 may round either way."""
    drawn = np.asarray(z, dtype=float)
    np.testing.assert_allclose(drawn, np.floor(page_map * 1e3 + 0.5) / 1e3, atol=1e-12,
                               err_msg=what)
    np.testing.assert_allclose(drawn, np.round(torch_map, 3), atol=1e-3 + 1e-9, err_msg=what)


def _check_computed(text: str, language: str, got: dict, model, layer: int = 1,
                    head: int = 1) -> tuple[dict, np.ndarray, float]:
    """What the page computed for ``text`` (``got``: its tokens, every map, the model's and
    the rules' labels, the caption) against Python's in ``language``: (Python's, the page's
    maps, the largest |page - torch|)."""
    from book.kit import i18n

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
    assert (got["predictions"], got["rules"]) == (want["predictions"], want["rules"]), text
    assert _same_words(got["caption"], want["caption"]), text
    return want, maps, diff


def check_order(text: str, layer: int, head: int, language: str, got: dict, trace: dict,
                title: str, status: str, model=None) -> float:
    """The page's state for ``text`` against Python's (also the built book's, from
    tests/test_browser_inpage.py): the tokens, every map within TOLERANCE of torch's, the
    model's and the rules' labels, the axes, the drawn map, the title and the status line.
    Returns the largest |page - torch|."""
    from book.toy import train

    model = train.pretrained() if model is None else model
    want, maps, diff = _check_computed(text, language, got, model, layer, head)
    glossed = language == "en" and len(want["tokens"]) <= page_layout("order")["gloss_up_to"]
    assert trace["x"] == want["cols"], text
    assert trace["y"] == (want["rows"] if glossed else want["cols"]), text
    _check_drawn(trace["z"], maps[layer, head], want["maps"][layer, head], text)
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


def check_legible(browser, path, view: str, states: list, enter, shots) -> None:
    """Each of ``states`` (None: the first state as drawn), entered by ``enter(cell, k,
    state)``, checked for legibility (tests/legibility.py) at 1280 and 390 px in the book's
    fonts and the wide fallback, with no console error; fails listing the findings, with a
    screenshot of each state that has one in ``shots``."""
    findings = []
    for width in (legibility.DESKTOP, legibility.PHONE):
        for font in legibility.FONTS:
            page, cell, problems = _open(browser, path, width, font, view=view)
            fig = cell.locator(".plotly-graph-div")
            for k, state in enumerate(states):
                if state is not None:
                    enter(cell, k, state)
                found, _ = legibility.check_figure(page, fig, width)
                for f in found:
                    f.update(page=f"{view} state {k}: {str(state)[:40]}", width=width,
                             font=font, figure=view)
                if found:
                    shots.mkdir(parents=True, exist_ok=True)
                    fig.screenshot(path=str(shots / f"{view}-{width}-{font}-{k}.png"))
                findings += found
            assert problems == [], problems
            page.context.close()
    listed = "\n".join(legibility.describe(f) for f in findings)
    assert not findings, f"{len(findings)} findings (screenshots in {shots}):\n{listed[:6000]}"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_typed_states_are_legible(chromium, model, tmp_path, language):
    path = _page(tmp_path, language)
    states = ["辣", "两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。",
              _words(page_layout("order")["gloss_up_to"] + 1), _longest()]
    check_legible(chromium, path, "order", [None, *states],
                  lambda cell, k, text: _type(cell, text, 1, k % model.n_heads),
                  tmp_path / "shots")


# --- the model view: every head of every layer for the typed order --------------------------

MODEL_JS = """el => { const gd = el.querySelector('.plotly-graph-div');
  return {last: el.bookInpage.last(), drawn: el.bookInpage.drawn(),
    status: el.querySelector('.book-inpage-status').textContent,
    traces: gd.data.map(t => ({x: t.x, y: t.y, z: t.z})),
    layout: gd.layout, rowPx: gd._fullLayout.yaxis._length}; }"""


def _type_model(cell, text: str) -> dict:
    cell.locator('input[type=text][name="text"]').fill(text)
    cell.evaluate("el => el.bookInpage.settled()")
    return cell.evaluate(MODEL_JS)


def check_model_view(text: str, language: str, state: dict, model) -> float:
    """The model view's state for ``text`` against Python's: what check_order checks of the
    computation, then every panel (layer by layer, head by head) drawing its map of the order,
    rounded as the live views round, the caption, the keys' labels (at most
    MODEL_VIEW_KEY_LABELS) and panels tall enough for every row's label."""
    from book.chapters import ch08_seeing_attention as ch08

    got = state["last"]["data"]
    want, maps, diff = _check_computed(text, language, got, model)
    n_layers, n_heads, n = want["maps"].shape[:3]
    assert len(state["traces"]) == n_layers * n_heads
    # English: the maps' categories are the glossed tokens (the hover names them), the ticks
    # the bare ones (issue 48); Chinese: the tokens
    cats = want["rows"] if language == "en" else want["cols"]
    for k, trace in enumerate(state["traces"]):
        assert trace["x"] == trace["y"] == cats, (text, k)
        _check_drawn(trace["z"], maps[k // n_heads, k % n_heads],
                     want["maps"][k // n_heads, k % n_heads], f"{text!r}: panel {k}")
    layout = state["layout"]
    assert layout["annotations"][-1]["text"] == got["caption"], text
    step = -(-n // ch08.MODEL_VIEW_KEY_LABELS)
    # the panels at least the page's cell_px a row: each row keeps its label
    cell_px = page_layout("order_model")["cell_px"]
    assert state["rowPx"] >= n * cell_px - 1, (text, state["rowPx"])
    for h in range(n_heads):
        axis = "" if h == 0 else str(h + 1)
        assert layout[f"xaxis{axis}"]["tickvals"] == cats[::step], (text, h)
        if language == "en":
            assert layout[f"xaxis{axis}"]["ticktext"] == want["cols"][::step], (text, h)
            assert layout[f"yaxis{axis}"]["ticktext"] == want["cols"], (text, h)
    return diff


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_model_view_redraws_every_head_for_a_typed_order(chromium, model, tmp_path,
                                                              language):
    path = _page(tmp_path, language, "order_model")
    from book.chapters.ch08_seeing_attention import MODEL_VIEW_MAX_WORDS

    page, cell, problems = _open(chromium, path, legibility.DESKTOP, view="order_model")
    first = cell.evaluate(MODEL_JS)
    texts = _typed_orders(MODEL_VIEW_MAX_WORDS) + [_words(MODEL_VIEW_MAX_WORDS)]
    worst, times = 0.0, []
    for k, text in enumerate(texts):
        state = _type_model(cell, text)
        worst = max(worst, check_model_view(text, language, state, model))
        if k < 20:
            times.append(state["last"]["ms"])
    # bad input says why and keeps the last maps; the menu brings back a written order as the
    # build drew it (its rows' labels and the figure's first height too)
    for text, kind in (("一碗牛肉面，加猪肉", "unknown"), ("  ", "empty"),
                       (_words(MODEL_VIEW_MAX_WORDS + 1), "page_long")):
        kept = _type_model(cell, text)
        assert kept["last"]["data"] == {"error": kind}, kept["last"]
        assert kept["traces"] == state["traces"], f"{text!r}: the last good maps did not stay"
    assert str(MODEL_VIEW_MAX_WORDS) in kept["status"], kept["status"]
    page.evaluate("""el => { const gd = el; const b = gd.layout.updatemenus[0].buttons[0];
        return Plotly.update(gd, b.args[0], b.args[1]); }""",
                  cell.locator(".plotly-graph-div").element_handle())
    back = cell.evaluate(MODEL_JS)
    assert [t["x"] for t in back["traces"]] == [t["x"] for t in first["traces"]]
    assert back["layout"]["height"] == first["layout"]["height"]
    assert back["layout"]["margin"]["t"] == first["layout"]["margin"]["t"]
    assert back["layout"]["annotations"][-1]["text"] == first["layout"]["annotations"][-1]["text"]
    assert problems == [], problems
    page.context.close()
    print(f"\n{language}, model view: {len(texts)} orders typed; max |page - torch| over every "
          f"map {worst:.2e}; input to redraw ({model.n_layers * model.n_heads} maps): median "
          f"{statistics.median(times):.1f} ms, max {max(times):.1f} ms over the 20 held-out "
          "orders")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_typed_model_views_are_legible(chromium, model, tmp_path, language):
    from book.chapters import ch08_seeing_attention

    path = _page(tmp_path, language, "order_model")
    states = ["辣", "两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。",
              _words(ch08_seeing_attention.MODEL_VIEW_MAX_WORDS)]
    check_legible(chromium, path, "order_model", [None, *states],
                  lambda cell, k, text: _type_model(cell, text), tmp_path / "shots")


def test_the_model_view_reads_the_weights_the_head_view_carries(chromium, model, tmp_path):
    """The chapter's page holds the checkpoint once: the model view refers to the head view's
    copy (book.toy.export.page_model_ref) and computes the same maps; alone it says why not."""
    path = _shared_page(tmp_path, ["order_model", "order"])
    assert path.read_text(encoding="utf-8").count('"tensors"') == 1
    page, cell, problems = _open(chromium, path, legibility.DESKTOP, view="order_model")
    text = "两碗炒饭，少放盐，多加醋。"
    check_model_view(text, "en", _type_model(cell, text), model)
    assert problems == [], problems
    page.context.close()
    alone = _shared_page(tmp_path, ["order_model"])
    page, cell, problems = _open(chromium, alone, legibility.DESKTOP, view="order_model")
    _type_model(cell, text)
    assert any("no cell of this page carries the model" in p for p in problems), problems
    page.context.close()
