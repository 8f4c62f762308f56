"""The book's CJK subset font holds every CJK character its sources use (no build needed)."""

from __future__ import annotations

import hashlib
import shutil

import pytest

from book.site import fonts


@pytest.mark.parametrize("edition,subset", [("en", fonts.SUBSET), ("zh", fonts.SUBSET_ZH)])
def test_subset_covers_every_cjk_character_of_the_edition(edition, subset):
    have = fonts.subset_chars(subset)
    used = fonts.book_chars(edition=edition)
    assert used, "the book uses no Chinese? book_chars() found none"
    missing = "".join(sorted(used - have))
    assert not missing, (f"{missing!r} missing from {subset.name}; regenerate both subsets with "
                         "`python -m book.site.fonts NotoSansCJK-Regular.ttc`")


def test_english_subset_leaves_out_the_chinese_edition():
    """The English pages stay light: the characters only the Chinese edition uses are not in
    the English subset (so they are not downloaded there)."""
    only_zh = fonts.book_chars(edition="zh") - fonts.book_chars(edition="en")
    english = fonts.subset_chars(fonts.SUBSET)
    assert only_zh <= fonts.subset_chars(fonts.SUBSET_ZH)
    # fontTools keeps the closure of the layout features (a few brackets and forms): a handful
    extra = only_zh & english
    assert len(extra) <= 8, f"the English subset holds {len(extra)} Chinese-only characters"
    assert len(english) * 4 < len(fonts.subset_chars(fonts.SUBSET_ZH))


def test_subsets_are_small_and_licensed():
    assert fonts.SUBSET.stat().st_size < 200_000
    assert fonts.SUBSET_ZH.stat().st_size < 700_000
    assert "SIL OPEN FONT LICENSE" in (fonts.FONT_DIR / "OFL.txt").read_text(encoding="utf-8")


def test_css_and_plotly_name_the_font():
    from book.face import plotting

    static = fonts.ROOT / "assets" / "static"
    for css_file, subset in (("book.css", fonts.SUBSET), ("book-zh.css", fonts.SUBSET_ZH)):
        css = (static / css_file).read_text(encoding="utf-8")
        assert f'font-family: "{fonts.FAMILY}"' in css and subset.name in css
        assert fonts.UNICODE_RANGE.replace(", ", ",") in " ".join(css.split()).replace(", ", ",")
    assert plotting.FONT_FAMILY.startswith(f'"{fonts.FAMILY}"')


def test_cjk_chars_and_bad_input():
    assert fonts.cjk_chars("一碗 beef，") == {"一", "碗", "，"}
    with pytest.raises(TypeError, match="str"):
        fonts.cjk_chars(3)
    with pytest.raises(ValueError, match="'en' or 'zh'"):
        fonts.book_chars(edition="fr")


# ---- per-page subsets of the Chinese edition (book/site/page_fonts.py), on a tiny fake build ----

SOURCE_CHARS = "注意力头复制隐藏搜索结果多"
LINK = '<link rel="stylesheet" type="text/css" href="{up}_static/book-zh.css?v=1" />'
SCRIPTS = ('<script src="{up}_static/copybutton.js?v=2"></script>'
           '<script src="{up}_static/sphinx_highlight.js"></script>'
           '<script src="{up}_static/translations.js"></script>')


def _page(body: str, up: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="zh-CN"><head>{LINK.format(up=up)}'
            f"{SCRIPTS.format(up=up)}</head><body>{body}</body></html>\n")


@pytest.fixture(scope="module")
def small_source(tmp_path_factory):
    """The edition font cut down to a few characters: subsetting it takes milliseconds."""
    path = tmp_path_factory.mktemp("source") / fonts.SUBSET_ZH.name
    return fonts.make_subset(fonts.SUBSET_ZH, path, set(SOURCE_CHARS))


@pytest.fixture
def fake_build(tmp_path, small_source):
    """A Chinese html tree: two chapters showing the same characters, a landing page with a
    figure whose JSON spells a character as \\uXXXX, the search page, the scripts' words."""
    root = tmp_path / "html"
    static = root / "_static"
    (static / "fonts").mkdir(parents=True)
    (root / "chapters").mkdir()
    (static / "fonts" / fonts.SUBSET_ZH.name).write_bytes(small_source.read_bytes())
    (static / "book-zh.css").write_text("/* the whole subset */", encoding="utf-8")
    (static / "copybutton.js").write_text(
        "const messages = {\n  'en': {'copy': 'Copy'},\n  'ja': {'copy': 'コピー'},\n"
        "  'zh-CN': {'copy': '复制'},\n};\n", encoding="utf-8")
    (static / "sphinx_highlight.js").write_text('_("Hide Search Matches")', encoding="utf-8")
    (static / "translations.js").write_text(
        'Documentation.addTranslations({"locale": "zh_Hans_CN", "messages": {"Hide Search '
        'Matches": "\\u9690\\u85cf", "Search": "\\u641c\\u7d22"}, "plural_expr": "0"});',
        encoding="utf-8")
    (root / "chapters" / "a.html").write_text(_page("<p>注意力</p>", "../"), encoding="utf-8")
    (root / "chapters" / "b.html").write_text(_page('<p title="力">意注</p>', "../"),
                                              encoding="utf-8")
    figure = '<script>Plotly.newPlot("f", [{"name": "\\u5934 &#x591A;"}])</script>'
    (root / "index.html").write_text(_page(f"<p>注意</p>{figure}"), encoding="utf-8")
    (root / "search.html").write_text(_page("<p>搜索结果</p>"), encoding="utf-8")
    return root


def test_page_chars_are_what_the_page_can_show(fake_build):
    from book.site import page_fonts

    # the text, a \\u escape and an entity of the figure, the copy button's words in the
    # page's language (not Japanese), and the one translation sphinx_highlight.js shows
    assert page_fonts.page_chars(fake_build / "index.html") == set("注意头多复制隐藏")
    assert page_fonts.page_chars(fake_build / "chapters" / "a.html") == set("注意力复制隐藏")
    assert page_fonts.page_chars(fake_build / "chapters" / "b.html") == set("注意力复制隐藏")


def test_each_page_loads_a_font_of_its_own_characters(fake_build):
    from book.site import page_fonts

    search = (fake_build / "search.html").read_text(encoding="utf-8")
    used = page_fonts.write_page_fonts(fake_build)
    assert sorted(used) == ["chapters/a.html", "chapters/b.html", "index.html"]
    # the same characters, the same file; its name from its content
    assert used["chapters/a.html"] == used["chapters/b.html"] != used["index.html"]
    font_dir = fake_build / "_static" / "fonts"
    for rel, name in used.items():
        page = fake_build / rel
        text = page.read_text(encoding="utf-8")
        assert "book-zh.css" not in text and f'font-family: "{fonts.FAMILY}"' in text
        assert (page.parent / page_fonts.page_font(page)).resolve() == font_dir / name
        data = (font_dir / name).read_bytes()
        assert name == f"NotoSansSC-page-{hashlib.sha256(data).hexdigest()[:16]}.woff2"
        assert fonts.subset_chars(font_dir / name) == page_fonts.page_chars(page)
    # the search page lists every page's excerpts: it keeps the whole subset
    assert (fake_build / "search.html").read_text(encoding="utf-8") == search
    assert page_fonts.page_font(fake_build / "search.html") is None


def test_page_fonts_are_reproducible(fake_build, tmp_path):
    from book.site import page_fonts

    twin = tmp_path / "twin"
    shutil.copytree(fake_build, twin)
    cache = tmp_path / "cache" / "page-fonts.json"
    first = page_fonts.write_page_fonts(fake_build, cache=cache)
    assert page_fonts.write_page_fonts(twin) == first
    assert _tree(twin) == _tree(fake_build)
    # a rebuild: unchanged pages keep their face (with the cache, nothing is subset again) and
    # a file that no page names any more goes
    before = _tree(fake_build)
    (fake_build / "_static" / "fonts" / "NotoSansSC-page-0000000000000000.woff2").write_bytes(
        b"old")
    assert page_fonts.write_page_fonts(fake_build, cache=cache) == first
    assert page_fonts.write_page_fonts(twin) == first
    assert _tree(fake_build) == _tree(twin) == before
    # a page that Sphinx wrote anew (it links book-zh.css again), with other characters
    (fake_build / "index.html").write_text(_page("<p>注意</p>"), encoding="utf-8")
    changed = page_fonts.write_page_fonts(fake_build, cache=cache)
    assert changed["index.html"] not in (first["index.html"], first["chapters/a.html"])
    assert not (fake_build / "_static" / "fonts" / first["index.html"]).exists()


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_character_missing_from_the_source_font_stops_the_build(fake_build):
    from book.site import page_fonts

    (fake_build / "chapters" / "a.html").write_text(_page("<p>注意龘</p>", "../"),
                                                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"chapters/a\.html: '龘' missing from "
                                         r"NotoSansSC-zh\.woff2.*python -m book\.site\.fonts"):
        page_fonts.write_page_fonts(fake_build)
    with pytest.raises(ValueError, match="'龘' missing"):
        page_fonts.subset_bytes(fonts.SUBSET_ZH, {"注", "龘"})


def test_a_page_without_the_edition_font_is_an_error(fake_build):
    from book.site import page_fonts

    (fake_build / "chapters" / "a.html").write_text("<html><p>注意</p></html>", encoding="utf-8")
    with pytest.raises(ValueError, match=r"chapters/a\.html: names neither book-zh\.css"):
        page_fonts.write_page_fonts(fake_build)


def test_a_page_listing_search_results_keeps_the_whole_subset(fake_build):
    from book.site import page_fonts

    page = fake_build / "chapters" / "a.html"
    text = page.read_text(encoding="utf-8").replace(
        "</head>", "<script>DOCUMENTATION_OPTIONS.search_as_you_type = true;</script></head>")
    page.write_text(text, encoding="utf-8")
    assert "chapters/a.html" not in page_fonts.write_page_fonts(fake_build)
    assert page.read_text(encoding="utf-8") == text


# The font step as the Chinese build runs it: in the Sphinx process, whose root logger the
# theme's code styles (a11y_pygments, imported through pygments) have set to INFO, over a pool
# of worker processes; a library warning still reaches the output.
FONT_STEP = """
import logging, sys
from pathlib import Path
from pygments.styles import get_style_by_name

get_style_by_name("a11y-high-contrast-light")   # what the theme's highlighting loads
logging.basicConfig(level=logging.DEBUG)         # (a no-op where a11y_pygments did it)
logging.getLogger().setLevel(logging.DEBUG)
from book.site import page_fonts
print(f"{len(page_fonts.write_page_fonts(Path(sys.argv[1])))} pages")
logging.getLogger("fontTools.subset").warning("a warning still prints")
"""


def test_the_font_step_prints_no_library_log_lines(fake_build):
    import subprocess
    import sys

    from build_log import library_log_lines
    from conftest import ROOT

    run = subprocess.run([sys.executable, "-c", FONT_STEP, str(fake_build)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    found = library_log_lines(output)
    assert not found, f"{len(found)} library log lines, e.g. " + "\n".join(found[:5])
    lines = [line for line in output.splitlines() if line.strip()]
    assert lines[0] == "3 pages" and "a warning still prints" in lines[-1], lines
    assert len(lines) == 2, lines
