"""book.chapters.typed_orders (the model script in _static, the pages that load it) and chapter
8's typed-order box (book.chapters.ch08_seeing_attention.typed_order) in both languages."""

from __future__ import annotations

import html
import json
import re
from types import SimpleNamespace

import pytest

from book.chapters import ch08_seeing_attention as ch08
from book.chapters import typed_orders
from book.kit import i18n
from book.toy import orders


def _spec(control_html: str) -> dict:
    return json.loads(html.unescape(re.search(r'data-typed="([^"]*)"', control_html).group(1)))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_box_carries_the_string_tables_words(monkeypatch, lang):
    monkeypatch.setenv("BOOK_BUILD", "1")
    i18n.set_language(lang)
    try:
        out = ch08.typed_order()._repr_mimebundle_()
        spec = _spec(out["text/html"])
        assert spec["model"] == typed_orders.MODEL and spec["views"] == ["head", "model"]
        assert spec["lang"] == lang
        assert spec["menu"] == i18n.tr("ch08.typed_menu")
        assert spec["label_names"]["omit"] == i18n.tr("ch08.label_omit")
        assert "{marks}" in spec["caption_model"] and "{label}" in spec["should_be"]
        assert {"{word}", "{at}", "{words}"} <= set(re.findall(r"\{\w+\}", spec["unknown"]))
        assert "{n}" in spec["long"] and "64" in spec["long"]
        assert spec["vocabulary"].split() == list(orders.WORDS)
        assert i18n.tr("ch08.typed_box") in out["text/html"]
        assert out["text/plain"] == i18n.tr("ch08.typed_jupyter")
    finally:
        i18n.set_language("en")


def test_in_jupyter_the_cell_says_what_the_book_adds(monkeypatch):
    monkeypatch.delenv("BOOK_BUILD", raising=False)
    out = ch08.typed_order()._repr_mimebundle_()
    assert "book-typed" not in out["text/html"]
    assert html.escape(i18n.tr("ch08.typed_jupyter")) in out["text/html"]


def test_only_pages_with_the_box_load_the_model():
    added = []
    app = SimpleNamespace(builder=SimpleNamespace(format="html", add_js_file=added.append))
    typed_orders._add_scripts(app, "x", "page.html", {"body": "<p>no box</p>"}, None)
    assert added == []
    typed_orders._add_scripts(app, "x", "page.html", {"body": '<div class="book-typed" x>'}, None)
    assert added == [typed_orders.MODEL_JS, typed_orders.ENGINE_JS]


def test_the_build_writes_both_files(tmp_path):
    app = SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(tmp_path))
    typed_orders._export(app, None)
    assert (tmp_path / "_static" / typed_orders.MODEL_JS).is_file()
    assert (tmp_path / "_static" / typed_orders.ENGINE_JS).is_file()
    typed_orders._export(SimpleNamespace(builder=SimpleNamespace(format="html"),
                                         outdir=str(tmp_path / "failed")), RuntimeError())
    assert not (tmp_path / "failed").exists()
