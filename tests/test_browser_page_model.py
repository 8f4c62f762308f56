"""The page's own encoder against torch in every `make test`: a handful of typed orders.

tests/test_browser_order.py and tests/test_browser_head_maps.py sweep the typed orders of
chapter 8's two views and chapter 6's head maps (every length, every head count, bad input,
legibility) and are `extended` (make test-all). This module keeps the page script's forward
pass, tokenizer and labeller tied to Python's in plain `make test`, in one Chromium: chapter
8's head view in both editions, three orders each (every map within TOLERANCE of torch's, the
model's and the rules' labels, the caption, the axes: test_browser_order.check_order), and
chapter 6's head maps for one head count, both layers (test_browser_head_maps.check_head_maps).
It also checks that the page measures text as Python does (book.kit.text.text_width, whose
table the page script is generated with: book.site.scripts) on CJK, full-width punctuation,
ASCII, digits and emoji, and that the pixels the page keeps for itself are the ones the tests
read. Each test prints its time.
"""

from __future__ import annotations

import time

import legibility
import pytest
import test_browser_head_maps
import test_browser_order
from test_browser_order import _open, _type, check_order, page_layout

pytestmark = pytest.mark.slow   # a browser: make test runs it, make quick leaves it out

chromium = test_browser_order.chromium   # the fixtures: one Chromium for the module
model = test_browser_order.model
models = test_browser_head_maps.models

# three orders a language: a written one, spaces and ASCII punctuation, two sentences
ORDERS = [("一碗牛肉面，不要香菜，多加辣。", 1, 1), (" 一碗 牛肉面 , 不要 香菜 . ", 0, 2),
          ("两碗炒饭，少放盐，多加醋。三盘饺子，不要葱、蒜，正常辣。", 1, 3)]
HEAD_COUNT = 4
WIDTH_CASES = ["一碗牛肉面", "，。、：；！？（）「」《》", "ASCII text, (1.5)!", "0123456789",
               "一碗 noodles", "香菜 → omit ✓", "✗ (should be more)", "ｆｕｌｌ　ｗｉｄｔｈ",
               "ｶﾀｶﾅ", "한국어", "かな カナ", "😀 🍜", "d_k 的 √d_k", "…·—–", "①② α β", "",
               "两碗炒饭，少放盐\u00a0，多加醋。"]


@pytest.fixture(scope="module")
def head_view(chromium, tmp_path_factory):
    """Chapter 8's head view on a bare page, opened once a language: (page, cell, problems)."""
    opened = {}

    def get(language: str):
        if language not in opened:
            path = test_browser_order._page(tmp_path_factory.mktemp(language), language)
            opened[language] = _open(chromium, path, legibility.DESKTOP)
        return opened[language]

    yield get
    for page, _, _ in opened.values():
        page.context.close()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_typed_orders_match_torch(head_view, model, language):
    start = time.perf_counter()
    page, cell, problems = head_view(language)
    worst = 0.0
    for text, layer, head in ORDERS:
        state = _type(cell, text, layer, head)
        worst = max(worst, check_order(text, layer, head, language, state["last"]["data"],
                                       state["trace"], state["title"], state["status"], model))
    assert problems == [], problems
    print(f"\n{language}: {len(ORDERS)} orders, max |page - torch| {worst:.2e}, "
          f"{time.perf_counter() - start:.1f} s")


def test_head_maps_match_torch(chromium, models, tmp_path):
    from book.chapters import ch06_heads

    start = time.perf_counter()
    path = test_browser_head_maps._page(tmp_path, "en", models)
    page, cell, problems = _open(chromium, path, legibility.DESKTOP, view="head_maps")
    most = ch06_heads.head_maps_max_words(HEAD_COUNT)
    worst = 0.0
    for layer, text in enumerate(test_browser_head_maps._held_out(most, 2)):
        state = test_browser_head_maps._type(cell, HEAD_COUNT, layer, text)
        worst = max(worst, test_browser_head_maps.check_head_maps(
            state, text, HEAD_COUNT, layer, "en", models[HEAD_COUNT]))
    assert problems == [], problems
    page.context.close()
    print(f"\nhead maps, {HEAD_COUNT} heads: max |page - torch| {worst:.2e}, "
          f"{time.perf_counter() - start:.1f} s")


def test_the_page_measures_text_as_python(head_view):
    from book.kit.text import text_width

    start = time.perf_counter()
    page, _, _ = head_view("en")
    got = page.evaluate("cases => cases.map(window.bookInpage.columns)", WIDTH_CASES)
    assert dict(zip(WIDTH_CASES, got, strict=True)) == {s: text_width(s) for s in WIDTH_CASES}
    # the pixels the page keeps for itself are those the tests read (page_layout)
    layout = page.evaluate("window.bookInpage.layout")
    assert layout == {name: page_layout(name) for name in layout}
    assert set(layout) == {"order", "order_model"}
    print(f"\n{len(WIDTH_CASES)} texts measured alike, {time.perf_counter() - start:.1f} s")
