"""The lesson's code is plain Python (issue 49, item 1): a chapter's code cells print with plain
strings and f-strings, never through the string table, and the Chinese notebooks and pages print
Chinese because those literals are translated like the cells' comments
(book.kit.codetext.translate_printed, locale/zh_CN/code/<page>.po)."""

from __future__ import annotations

import ast
import json
import re

import pytest

from book.kit import codetext
from book.site import execution, zh_notebooks

ROOT = zh_notebooks.ROOT
PAGES = zh_notebooks.chapter_pages()
CJK = re.compile(r"[\u3400-\u9fff]")
STRING_TABLE = re.compile(r"\btr\(|\bi18n\b")

# Cells that still print through the string table (issue 49, item 1, not converted yet): the
# test holds each to it, so the list only shrinks. Convert a cell and delete its line.
NOT_YET: dict[str, set[str]] = {
}


def _cells(page: str) -> list[dict]:
    return json.loads((ROOT / f"{page}.ipynb").read_text("utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


@pytest.mark.parametrize("page", PAGES)
def test_lesson_cells_do_not_use_the_string_table(page):
    """No code cell of a chapter notebook calls tr() or imports it: what a learner reads, runs
    and copies is plain Python. (Figures, widgets, checks and questions keep the string table,
    inside the chapter module: ``ch.mask_explorer()``, ``book.ask(...)``.)"""
    using = {cell["id"] for cell in _cells(page)
             if cell["cell_type"] == "code" and STRING_TABLE.search(_source(cell))}
    allowed = NOT_YET.get(page, set())
    assert not using - allowed, f"{page}: code cells use the string table: {using - allowed}"
    assert not allowed - using, (f"{page}: cells {allowed - using} no longer use the string "
                                 "table: delete them from NOT_YET")


def test_not_yet_names_existing_pages():
    assert set(NOT_YET) <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_every_printed_text_is_translated_with_its_fields(page):
    """Each printed literal of a chapter's code has a Chinese translation that keeps its
    ``{...}`` fields (the same expressions and formats), and the translated cell still parses."""
    catalogue = zh_notebooks.load_catalogue(zh_notebooks.CODE_DIR / f"{page.split('/')[-1]}.po")
    for cell in _cells(page):
        if cell["cell_type"] != "code":
            continue
        source = _source(cell)
        for text in codetext.printed_messages(source):
            zh = catalogue.get(text)
            assert zh, f"{page} {cell['id']}: no translation of printed text {text!r}"
            assert CJK.search(zh), f"{page} {cell['id']}: {text!r} -> {zh!r} is not Chinese"
            assert codetext.fields(zh) == codetext.fields(text), (
                f"{page} {cell['id']}: {zh!r} changes the fields of {text!r}")
        ast.parse(codetext.translate(source, catalogue))


@pytest.mark.parametrize("page", PAGES)
def test_the_chinese_notebooks_lesson_cells_print_chinese(page):
    """In the generated Chinese notebook, every printed literal that has words prints Chinese."""
    notebook = zh_notebooks.chinese_notebook(page)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for text in codetext.printed_messages(cell.source):
            assert CJK.search(text), f"{page} {cell.id}: the Chinese notebook prints {text!r}"


def test_printed_text_found_and_translated():
    code = ('x = 3\n'
            'print(f"variance at d_k = {x}: {x / 2:.1f}", "->", \'done here\')  # a note\n'
            'print("->", x)\n'
            'print(f"{x:<48} {x}")\n'
            'print("a" "b c", "max |a - b| =", 1)\n'
            'label = "not printed, a key"\n')
    assert codetext.printed_messages(code) == ["variance at d_k = {x}: {x / 2:.1f}",
                                               "done here"]
    zh = codetext.translate(code, {"variance at d_k = {x}: {x / 2:.1f}":
                                   "d_k = {x} 时的\"方差\"：{x / 2:.1f}",
                                   "done here": "完成'了", "a note": "注释"})
    assert 'print(f"d_k = {x} 时的\\"方差\\"：{x / 2:.1f}", "->", \'完成\\\'了\')  # 注释' in zh
    assert 'label = "not printed, a key"' in zh   # only print's own arguments
    namespace: dict = {}
    printed = []
    exec(zh, {"print": lambda *a: printed.append(" ".join(map(str, a)))}, namespace)  # noqa: S102
    assert printed[0] == 'd_k = 3 时的"方差"：1.5 -> 完成\'了'
    assert codetext.fields("a {x} {{ {y:.2f} }}") == ["{x}", "{y:.2f}"]


def test_listings_keep_their_printed_text():
    """show_source's listings are the book's modules, which run in English: their printed
    text is not translated (only comments and docstrings)."""
    code = 'def f():\n    """Say hello."""\n    print("hello there")  # greet\n'
    zh = codetext.translate(code, {"Say hello.": "问好。", "hello there": "你好", "greet": "问候"},
                            printed=False)
    assert '"""问好。"""' in zh and 'print("hello there")  # 问候' in zh
    assert "hello there" not in codetext.messages(code, printed=False)


def test_the_chinese_build_runs_the_translated_print(tmp_path, monkeypatch):
    """The Chinese edition's kernel runs the cells with their printed text translated (and
    only that), so its outputs are Chinese; the English edition runs the notebook as it is;
    the run's cache key follows the translation."""
    notebook = json.loads((ROOT / "chapters/02_scaling.ipynb").read_text("utf-8"))
    probe = "hello from a probe {1 + 1}"
    notebook["cells"].append({"cell_type": "code", "id": "probe", "metadata": {},
                              "outputs": [], "execution_count": None,
                              "source": f'print(f"{probe}")  # a comment stays'})
    assert execution.as_run(notebook, "02_scaling", "en") is notebook
    original = (zh_notebooks.CODE_DIR / "02_scaling.po").read_text("utf-8")
    (tmp_path / "02_scaling.po").write_text(
        original + f'\nmsgid "{probe}"\nmsgstr "探针 {{1 + 1}}"\n', "utf-8")
    monkeypatch.setattr(zh_notebooks, "CODE_DIR", tmp_path)
    catalogue = zh_notebooks.load_catalogue(tmp_path / "02_scaling.po")
    ran = execution.as_run(notebook, "02_scaling", "zh")
    assert _source(ran["cells"][-1]) == 'print(f"探针 {1 + 1}")  # a comment stays'
    assert _source(notebook["cells"][-1]).startswith('print(f"hello from')   # not changed
    for before, after in zip(notebook["cells"][:-1], ran["cells"][:-1], strict=True):
        if before["cell_type"] == "code":
            assert _source(after) == codetext.translate_printed(_source(before), catalogue)
    assert (execution.execution_key(ran, "", "zh")
            != execution.execution_key(notebook, "", "zh"))
