"""The learner's path in the built book (both editions): the landing page's "Start here" lists
every chapter page in CHAPTERS order with its badge and time, every chapter page shows its
badge, time and prerequisites under its title, and the core path (landing page + core
chapters) fits in 70 screens of 1280 × 800 px (tests/core_path.py)."""

from __future__ import annotations

import re

import pytest
from core_path import MAX_SCREENS, core_pages, screens

from book.chapters import CHAPTERS
from book.kit import i18n

pytestmark = pytest.mark.slow


def _words(language: str, msg_id: str, **values) -> str:
    i18n.set_language(language)
    try:
        return i18n.tr(msg_id, **values)
    finally:
        i18n.set_language("en")


def _check_edition(html, language):
    index = (html / "index.html").read_text(encoding="utf-8")
    assert index.count('class="book-path"') == 1, "the path placeholder was not filled"
    listed = re.findall(r'<li class="book-path-item" data-page="([^"]+)">', index)
    assert listed == [c.page for c in CHAPTERS]
    for c in CHAPTERS:
        item = index.split(f'data-page="{c.page}">', 1)[1].split("</li>", 1)[0]
        assert f'href="chapters/{c.page}.html"' in item, c.page
        assert _words(language, f"common.path_badge_{c.badge}") in item, c.page
        assert _words(language, "common.path_minutes", minutes=c.minutes) in item, c.page
        page = (html / "chapters" / f"{c.page}.html").read_text(encoding="utf-8")
        start = page.find(f'<p class="book-path-banner" data-page="{c.page}">')
        assert start > 0, f"{c.page}: no banner"
        assert page.count('class="book-path-banner"') == 1, c.page
        assert page[:start].endswith("</h1>"), f"{c.page}: the banner is not under the title"
        banner = page[start:].split("</p>", 1)[0]
        assert f"book-badge-{c.badge}" in banner
        assert _words(language, "common.path_minutes", minutes=c.minutes) in banner
        for need in c.needs:
            assert f'href="{need}.html"' in banner, (c.page, need)
        if not c.needs:
            assert _words(language, "common.path_needs_none") in banner


def test_path_and_banners_in_the_english_edition(built_book):
    assert built_book["returncode"] == 0
    _check_edition(built_book["html"], "en")


def test_path_and_banners_in_the_chinese_edition(built_zh):
    assert built_zh["returncode"] == 0
    _check_edition(built_zh["html"], "zh")


def test_core_path_fits_in_70_screens(built_book):
    measured = screens(built_book["html"])
    assert list(measured) == core_pages()
    total = sum(measured.values())
    assert total <= MAX_SCREENS, (f"the core path is {total:.1f} screens at 1280 × 800 px: "
                                  + ", ".join(f"{p} {n:.1f}" for p, n in measured.items()))
