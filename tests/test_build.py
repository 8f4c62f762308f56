"""The book builds with -nW (no warnings) and ships its own plotly.js and MathJax."""

from __future__ import annotations

import re

import pytest
from conftest import CHAPTERS

pytestmark = pytest.mark.slow


def pages(html_root):
    return sorted(p for p in html_root.rglob("*.html")
                  if "_static" not in p.parts and p.name not in {"genindex.html", "search.html"})


def test_build_has_no_warnings(built_book):
    assert built_book["returncode"] == 0, built_book["log"][-4000:]
    assert built_book["warnings"] == 0, built_book["log"][-4000:]
    print(f"\ncold build: {built_book['seconds']:.1f} s, 0 warnings")


def test_every_chapter_is_a_page(built_book):
    built = {p.relative_to(built_book["html"]).as_posix() for p in pages(built_book["html"])}
    for nb in CHAPTERS:
        assert f"chapters/{nb.stem}.html" in built


def test_chinese_edition_builds_without_warnings(built_zh):
    """`make book`'s second build (built concurrently with the English one in the tests)."""
    assert built_zh["returncode"] == 0, built_zh["log"][-4000:]
    assert built_zh["warnings"] == 0, built_zh["log"][-4000:]
    for nb in CHAPTERS:
        page = built_zh["html"] / "chapters" / f"{nb.stem}.html"
        assert page.is_file(), f"the Chinese edition has no page for {nb.name}"
        assert '<html lang="zh-CN"' in page.read_text(encoding="utf-8")[:3000], page
    print(f"\nChinese edition, cold build: {built_zh['seconds']:.1f} s, 0 warnings")


@pytest.mark.parametrize("edition", ["built_book", "built_zh"])
def test_the_build_prints_no_library_log_lines(edition, request):
    """`make book` prints what runs, how many are left, warnings and where the book is; no
    library's INFO log (the Chinese edition's font step once printed ~700 lines of fontTools'
    glyph names and ids: book/site/fonts.py quiets it)."""
    from build_log import library_log_lines

    built = request.getfixturevalue(edition)
    found = library_log_lines(built["log"])
    assert not found, f"{len(found)} library log lines, e.g. " + "\n".join(found[:5])


def test_vendored_assets_are_copied(built_book):
    static = built_book["html"] / "_static" / "vendor"
    assert (static / "plotly-book.min.js").stat().st_size > 1_000_000
    mathjax = static / "mathjax"
    assert (mathjax / "startup.js").is_file() and (mathjax / "output" / "chtml.js").is_file()
    assert list((mathjax / "output" / "chtml" / "fonts" / "woff-v2").glob("MathJax_Main-*.woff"))
    assert not (mathjax / "output" / "svg").exists(), "the SVG output's 1.07 MB font is not used"


def test_pages_reference_no_remote_scripts_or_styles(built_book):
    remote = re.compile(r"""<(?:script|link)[^>]+(?:src|href)=["'](?:https?:)?//""", re.I)
    for page in pages(built_book["html"]):
        text = page.read_text(encoding="utf-8")
        assert not remote.search(text), f"{page.name} loads a remote script or stylesheet"


def test_heavy_scripts_load_only_where_needed(built_book):
    for page in pages(built_book["html"]):
        text = page.read_text(encoding="utf-8")
        has_plot = "plotly-graph-div" in text
        assert ("vendor/plotly-book.min.js" in text) == has_plot, page.name
        if "vendor/mathjax/startup.js" in text:
            assert re.search(r'class="[^"]*math', text), f"{page.name} loads MathJax for nothing"


def test_live_widget_outputs_are_left_out(built_book):
    for page in pages(built_book["html"]):
        text = page.read_text(encoding="utf-8")
        assert "application/vnd.jupyter.widget-view+json" not in text
        assert "FigureWidget" not in text


def test_glued_numbers_are_filled_in(built_book):
    for nb in CHAPTERS:
        text = (built_book["html"] / "chapters" / f"{nb.stem}.html").read_text(encoding="utf-8")
        assert "{glue:" not in text and "glue:text" not in text


@pytest.mark.parametrize("build", ["built_book", "built_zh"])
def test_no_unrendered_roles_in_the_prose(request, build):
    """An {eval} role the parser could not see (e.g. written inside a code span) shows up in
    the page as the literal text "{eval}…book.glued(…)" instead of its number."""
    html_root = request.getfixturevalue(build)["html"]
    found = []
    for page in pages(html_root):
        text = re.sub(r"<pre.*?</pre>", "", page.read_text(encoding="utf-8"), flags=re.S)
        found += [f"{page.relative_to(html_root)}: …{text[max(0, m.start() - 80):m.end() + 40]}…"
                  for m in re.finditer(r"\{eval\}|glued\(|\{glue:", text)]
    assert not found, "\n".join(found)
