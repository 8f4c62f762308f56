"""The learner's path (book.chapters.PATH, drawn by book/face/path.py): its data is complete and
consistent, the landing page's list and each chapter's banner come from it, in both languages,
and the prose's comparing words follow their numbers."""

from __future__ import annotations

import re

import nbformat
import pytest

from book import chapters
from book.chapters import CHAPTERS, PATH
from book.face import path
from book.face.display import compared
from book.kit import i18n

ROOT = chapters.__file__.rsplit("/book/", 1)[0]
READING_WPM = 200  # words a minute: a floor under any chapter's time estimate


def _titles():
    return {c.page: f"{chapters.chapter(c.page).page} title" for c in CHAPTERS}


def _link(page):
    return f"chapters/{page}.html"


def test_every_chapter_is_on_the_path_once_with_valid_data():
    assert set(PATH) == {c.page for c in CHAPTERS}
    assert set(chapters.BADGES) == set(path.BADGES)
    order = [chapters.BADGES.index(c.badge) for c in CHAPTERS]
    assert order == sorted(order), "CHAPTERS must run core, then pitfalls, then advanced"
    assert [c.page for c in CHAPTERS if c.badge == "core"] == [
        "01_intuition", "02_scaling", "03_walkthrough", "04_pytorch"]
    seen = set()
    for c in CHAPTERS:
        assert isinstance(c.minutes, int) and 5 <= c.minutes <= 90, c.page
        assert all(need in seen for need in c.needs), f"{c.page} needs a later page: {c.needs}"
        seen.add(c.page)
    with pytest.raises(ValueError, match="book.chapters.PATH"):
        chapters._on_path("99_missing")


@pytest.mark.parametrize("entry", CHAPTERS, ids=lambda c: c.page)
def test_time_estimate_is_at_least_the_reading_time(entry):
    nb = nbformat.read(f"{ROOT}/chapters/{entry.page}.ipynb", as_version=4)
    words = sum(len(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    assert entry.minutes >= words / READING_WPM, (
        f"{entry.page}: {words} words of prose take {words / READING_WPM:.0f} min to read "
        f"alone, but PATH says {entry.minutes} min")


def test_landing_page_lists_every_chapter_in_order_with_badge_and_time():
    html = path.path_html(chapters.path_parts(), _titles(), _link)
    pages = re.findall(r'<li class="book-path-item" data-page="([^"]+)">', html)
    assert pages == [c.page for c in CHAPTERS]
    for c in CHAPTERS:
        item = html.split(f'data-page="{c.page}">', 1)[1].split("</li>", 1)[0]
        assert f'href="chapters/{c.page}.html"' in item
        assert f'book-badge-{c.badge}">{c.badge}<' in item
        assert f"about {c.minutes} min" in item
        for need in c.needs:
            assert f'href="chapters/{need}.html"' in item
    # each part states its chapter count and total time
    for badge, members in chapters.path_parts():
        total = sum(c.minutes for c in members)
        assert f"{len(members)} chapters, about {total} min" in html, badge


def test_banner_goes_under_the_title_and_the_placeholder_is_needed():
    entry = chapters.chapter("03_walkthrough")
    body = '<section><h1>3. The whole computation<a class="headerlink">#</a></h1><p>x</p>'
    out = path.add_banner(body, entry, _titles(), lambda p: f"{p}.html")
    assert out.index("</h1>") < out.index("book-path-banner") < out.index("<p>x</p>")
    assert 'book-badge-core">core<' in out and "about 25 min" in out
    assert 'href="01_intuition.html"' in out and 'href="02_scaling.html"' in out
    assert "read first: nothing" in path.banner(chapters.chapter("01_intuition"), {}, _link)
    with pytest.raises(ValueError, match="no <h1>"):
        path.add_banner("<p>no title</p>", entry, {}, _link)
    with pytest.raises(ValueError, match="Start here"):
        path.fill_path("<p>no placeholder</p>", chapters.path_parts(), {}, _link)
    with pytest.raises(ValueError, match="badge must be"):
        path.badge("optional")
    index = open(f"{ROOT}/index.md", encoding="utf-8").read()
    assert index.index("## Start here") < index.index(path.PLACEHOLDER)


def test_path_in_chinese():
    i18n.set_language("zh")
    try:
        html = path.path_html(chapters.path_parts(), _titles(), _link)
        assert "核心" in html and "常见陷阱" in html and "进阶" in html
        assert "约 20 分钟" in html and "第 1 章" in html
        assert not re.search(r">[^<]*\b(about|min|read first|chapters?)\b", html)
    finally:
        i18n.set_language("en")


def test_compared_follows_the_numbers_at_the_shown_precision():
    assert compared(0.39, 0.09) == "more than"
    assert compared(0.09, 0.39) == "less than"
    assert compared(0.391, 0.389) == "as much as"      # both show as 0.39
    assert compared(0.391, 0.389, digits=3) == "more than"
    i18n.set_language("zh")
    try:
        assert compared(2, 1) == "高于" and compared(1, 2) == "低于"
    finally:
        i18n.set_language("en")
    with pytest.raises(TypeError):
        compared("0.3", 0.2)


def test_map_summary_is_written_in_the_edition_language():
    body = f"<details>{path.MAP_SUMMARY}<table></table></details>"
    assert "What you will be able to do" in path.fill_map_summary(body)
    i18n.set_language("zh")
    try:
        assert "学完每一章" in path.fill_map_summary(body)
    finally:
        i18n.set_language("en")
    assert path.fill_map_summary("<p>no map</p>") == "<p>no map</p>"
    index = open(f"{ROOT}/index.md", encoding="utf-8").read()
    assert path.MAP_SUMMARY in index
