"""The Chinese notebooks generated from the catalogues (book/site/zh_notebooks.py): one per
chapter page, Chinese prose, the English notebook's code apart from comments and strings,
``book.setup(language="zh")``, and three of them executed from a clean kernel."""

from __future__ import annotations

import io
import tokenize

import nbformat
import pytest

from book.chapters import CHAPTERS
from book.site import zh_notebooks as zh

ROOT = zh.ROOT


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebooks-zh")
    paths = zh.write_notebooks(out)
    return out, paths


def code_shape(source: str) -> list:
    """The tokens of ``source`` without comments and with every string literal blanked: what
    must not change between the editions."""
    shape = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        shape.append((tok.type, "<str>" if tok.type == tokenize.STRING else tok.string))
    return shape


def test_every_chapter_page_gets_a_chinese_notebook(written):
    out, paths = written
    assert len(paths) == len(CHAPTERS) >= 14
    assert {p.relative_to(out).as_posix() for p in paths} == {
        f"chapters/{c.page}.ipynb" for c in CHAPTERS}


def test_no_english_prose_paragraph(written):
    out, _ = written
    english = []
    for chapter in CHAPTERS:
        nb = nbformat.read(out / "chapters" / f"{chapter.page}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                english += [f"{chapter.page} {cell.id}: {text[:80]!r}"
                            for text in zh.english_prose(cell.source)]
    assert not english, f"{len(english)} English paragraph(s):\n" + "\n".join(english[:20])


def test_code_cells_are_the_english_ones(written):
    """Same cells, same ids; code differs only in comments, string literals and the
    language passed to book.setup()."""
    out, _ = written
    for chapter in CHAPTERS:
        en = nbformat.read(ROOT / "chapters" / f"{chapter.page}.ipynb", as_version=4)
        cn = nbformat.read(out / "chapters" / f"{chapter.page}.ipynb", as_version=4)
        assert [c.id for c in en.cells] == [c.id for c in cn.cells], chapter.page
        assert [c.cell_type for c in en.cells] == [c.cell_type for c in cn.cells]
        setups = 0
        for a, b in zip(en.cells, cn.cells, strict=True):
            if a.cell_type != "code":
                continue
            assert a.metadata == b.metadata, f"{chapter.page} {a.id}: metadata changed"
            setups += b.source.count(zh.SETUP_ZH)
            preset = b.source.replace(zh.SETUP_ZH, zh.SETUP_EN)
            assert code_shape(a.source) == code_shape(preset), \
                f"{chapter.page} {a.id}: code differs beyond comments and strings"
        assert setups == 1, f"{chapter.page}: book.setup(language='zh') {setups} times"


def test_code_comments_are_translated(written):
    """Every comment of the pages' code has its Chinese line, and the notebooks show it."""
    out, _ = written
    missing = []
    for chapter in CHAPTERS:
        catalogue = zh.load_catalogue(zh.CODE_DIR / f"{chapter.page}.po")
        missing += [f"{chapter.page}: {text!r}"
                    for text in zh.code_comments(f"chapters/{chapter.page}")
                    if text not in catalogue]
        nb = nbformat.read(out / "chapters" / f"{chapter.page}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                left = [t for _, _, t in zh.comments(cell.source) if not zh._CJK.search(t)
                        and t not in catalogue.values()]
                missing += [f"{chapter.page} {cell.id}: {t!r} shown in English" for t in left]
    assert not missing, f"{len(missing)} comment(s) untranslated (make gettext, then fill " \
        "locale/zh_CN/code/*.po):\n" + "\n".join(missing[:20])


def test_markdown_mapping_keeps_the_structure():
    catalogue = {"Title": "标题", "first item, over two lines": "第一项",
                 "second": "第二项", "Fact check: \"x\"": "事实核查：“x”",
                 "Body with {eval}`book.glued(\"a\")` words.": "正文 {eval}`book.glued(\"a\")`。",
                 "cell": "单元格"}
    source = ("# Title\n\n- first item,\n  over two lines\n- second\n\n"
              ":::{admonition} Fact check: \"x\"\n:class: important\n"
              "Body with {eval}`book.glued(\"a\")`\nwords.\n:::\n\n| cell |\n|---|\n| 42 |\n")
    out = zh.translate_markdown(source, catalogue, "demo")
    assert out == ("# 标题\n\n- 第一项\n- 第二项\n\n:::{admonition} 事实核查：“x”\n"
                   ":class: important\n正文 {eval}`book.glued(\"a\")`。\n:::\n\n"
                   "| 单元格 |\n|---|\n| 42 |\n")


def test_a_segment_without_translation_is_named():
    with pytest.raises(zh.MissingTranslation, match="demo cell: 1 segment.*'An English"):
        zh.translate_markdown("# 标题\n\nAn English sentence.\n", {"标题": "标题"}, "demo cell")
    # a table cell holding only a glued number, or a formula without words, needs none
    assert zh.translate_markdown("| {eval}`book.glued(\"a\")` |\n|---|\n| $x$ |\n", {}) \
        .startswith("| {eval}")


def test_english_prose_detector():
    assert zh.english_prose("The variance grows with the width of the head.")
    assert not zh.english_prose("方差随头的宽度增长（`torch.var`）。")
    assert not zh.english_prose("{eval}`book.glued(\"var_64:.1f\")` and $d_k$")
    assert zh.english_prose("$$\\text{cache bytes} = 2$$")
    assert not zh.english_prose("$$d_\\text{model} = 2$$")


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.parametrize("page", ["01_intuition", "02_scaling", "03_walkthrough"])
def test_three_chinese_notebooks_run(written, page, monkeypatch):
    """The generated notebook runs from a clean kernel and draws in Chinese."""
    from nbclient import NotebookClient

    out, _ = written
    monkeypatch.delenv("BOOK_LANG", raising=False)   # the notebook itself chooses Chinese
    nb = nbformat.read(out / "chapters" / f"{page}.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "chapters")}}).execute()
    shown = "".join(str(o.get("text", "")) + str(o.get("data", {}))
                    for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert zh._CJK.search(shown), f"{page}: no Chinese in the outputs"
