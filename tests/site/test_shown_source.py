"""The code the pages show (book.show_source) in the Chinese edition: every comment and
docstring paragraph of every listing translated from locale/zh_CN/code/*.po (the catalogues of
the cells' comments), the code itself the same token for token."""

from __future__ import annotations

import io
import re
import tokenize

import pytest

from book.kit import codetext, i18n
from book.site import zh_notebooks as zh

ROOT = zh.ROOT
_CJK = re.compile(r"[\u3400-\u9fff]")


def code_shape(source: str) -> list:
    """The tokens of ``source`` without comments, with each docstring blanked."""
    docstrings = {t.start for t in codetext._docstring_tokens(source)}
    shape = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        shape.append((tok.type, "<doc>" if tok.start in docstrings else tok.string))
    return shape


def english_lines(listing: str) -> list[str]:
    """Comment and docstring units of ``listing`` that are English prose: two Latin words
    of three letters or more outside ``code``, backticks, calls, shapes ``(B, n, d_k)`` and
    arrows ``--view-->``, and no Chinese."""
    found = []
    for text in codetext.messages(listing):
        plain = re.sub(r"``[^`]*``|`[^`]*`|:func:|\w*\([^)]*\)|--\w+-->|\w+(?:[._]\w+)+", " ",
                       text)
        if not _CJK.search(text) and len(re.findall(r"\b[A-Za-z]{3,}\b", plain)) >= 2:
            found.append(text)
    return found


@pytest.fixture(scope="module")
def listings():
    return {page: zh.shown_listings(page) for page in zh.chapter_pages()}


def test_the_pages_show_fifteen_listings(listings):
    assert sum(len(v) for v in listings.values()) >= 15
    assert len(listings["chapters/10_beyond"]) == 4


def test_every_listing_is_chinese_in_the_chinese_edition(listings):
    catalogue = codetext.catalogue()
    english, before = [], 0
    for page, shown in listings.items():
        for listing in shown:
            before += len(english_lines(listing))
            translated = codetext.translate(listing, catalogue)
            english += [f"{page}: {line!r}" for line in english_lines(translated)]
            assert code_shape(translated) == code_shape(listing), \
                f"{page}: the code changed, not only its comments and docstrings"
    assert before > 50   # the English listings hold that much prose
    assert not english, f"{len(english)} English line(s) in Chinese listings (make gettext, " \
        "then fill locale/zh_CN/code/*.po):\n" + "\n".join(english[:20])


def test_each_message_is_in_its_page_catalogue(listings):
    missing = []
    for page, shown in listings.items():
        catalogue = zh.load_catalogue(zh.CODE_DIR / f"{page.split('/')[-1]}.po")
        missing += [f"{page}: {m!r}" for listing in shown for m in codetext.messages(listing)
                    if m not in catalogue]
    assert not missing, "\n".join(missing[:20])


def test_show_source_prints_the_chinese_listing(monkeypatch):
    from IPython import display as ipy

    from book.face import display
    from book.ideas import kvcache

    shown = []
    monkeypatch.setattr(ipy, "display", lambda obj: shown.append(obj.data))
    before = i18n.language()
    try:
        for language in ("en", "zh"):
            i18n.set_language(language)
            display.show_source(kvcache.KVCache)
    finally:
        i18n.set_language(before)
    en, cn = shown
    assert "grows by one row per decoding step" in en and not _CJK.search(en)
    assert "每解码一步增加一行" in cn and "grows by one row" not in cn
    assert code_shape(en.strip("`\npython")) == code_shape(cn.strip("`\npython"))


def test_docstrings_translate_by_paragraph_section_and_item():
    source = '''def f(x, y=2):
    """Add the two numbers and
    return the sum.

    The second paragraph stays English.

        >>> f(1)   # an example: never prose
        3

    Args:
        x: the first number,
            on two lines.
        y: the second.
    Returns:
        Their sum.
    """
    return x + y  # plain addition
'''
    catalogue = {"Add the two numbers and return the sum.": "把两个数相加并返回和。",
                 "Args:": "参数：", "x: the first number, on two lines.": "x：第一个数。",
                 "y: the second.": "y：第二个数。", "Returns:": "返回：",
                 "Their sum.": "两数之和。", "plain addition": "普通加法"}
    assert codetext.messages(source) == [
        "plain addition", "Add the two numbers and return the sum.",
        "The second paragraph stays English.", "Args:", "x: the first number, on two lines.",
        "y: the second.", "Returns:", "Their sum."]
    out = codetext.translate(source, catalogue)
    assert out == '''def f(x, y=2):
    """把两个数相加并返回和。

    The second paragraph stays English.

        >>> f(1)   # an example: never prose
        3

    参数：
        x：第一个数。
        y：第二个数。
    返回：
        两数之和。
    """
    return x + y  # 普通加法
'''
    assert code_shape(out) == code_shape(source)
    long = {"Add the two numbers and return the sum.": "把两个数相加" * 20}
    lines = codetext.translate(source, long).split("\n")
    assert all(len(line) <= 60 for line in lines[1:5]) and _CJK.match(lines[2][4]) \
        and lines[2][:4] == "    "


def test_the_catalogue_reader_agrees_with_babel():
    """book.kit.codetext.read_catalogue (no babel needed in a reader's kernel) reads every
    catalogue of the book as babel does."""
    paths = sorted((ROOT / "locale" / "zh_CN").rglob("*.po"))
    assert len(paths) > 20
    for path in paths:
        assert codetext.read_catalogue(path) == zh.load_catalogue(path), path
    assert codetext.read_catalogue(ROOT / "no such.po") == {}
