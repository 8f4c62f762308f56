"""No English sentence left for a Chinese reader: every Chinese text of the book (each catalogue
entry of locale/zh_CN, each string table's zh side) holds no English phrase beyond names and
notation, and the docstrings of the chapters' own code cells are translated like their comments
(locale/zh_CN/code/<page>.po; the Chinese notebooks and pages show them in Chinese)."""

from __future__ import annotations

import re

import nbformat
import pytest

from book.kit import codetext
from book.site import terms
from book.site import zh_notebooks as zh

_CJK = re.compile(r"[\u3400-\u9fff]")
# names a Chinese sentence writes in Latin letters, and words of notation (p log p, GQA vs SDPA)
NAMES = re.compile(r"Hugging Face|sentence-transformers|Zero to JupyterHub|\w+ et al\.?"
                   r"|\b(?:vs|log|exp)\b", re.I)


def english_left(text: str) -> str | None:
    """An English phrase (three Latin words or more) left in a Chinese ``text``, once what is
    not prose is set aside: code, math, roles, placeholders, URLs; quoted “…” and 《…》 titles;
    English in italics (a cited title, an example sentence); an English gloss in brackets
    （token）; shapes and tuples (batch, heads, seq, d_k); indexing out[b, h, i]; paths,
    commands and identifiers; names."""
    rest = terms._NOT_PROSE.sub(" ", text)
    rest = re.sub(r"``[^`]*``|“[^”]*”|《[^》]*》|\]\([^)]*\)|<[^>]+>", " ", rest)
    rest = re.sub(r"\*[^*\u3400-\u9fff]+\*", " ", rest)
    rest = re.sub(r"（[A-Za-z][^（）]*）", " ", rest)
    rest = re.sub(r"\w+\[[^\]]*\]", " ", rest)
    rest = re.sub(r"\([\w\s,.…·*+|-]*\)", " ", rest)
    rest = re.sub(r"\w+\s*(?://|%)\s*\w+", " ", rest)
    rest = re.sub(r"\S*[/=_.\\|]\S*", " ", rest)
    rest = NAMES.sub(" ", rest)
    match = re.search(r"[A-Za-z][A-Za-z'-]*(?:[\s,;:]+[A-Za-z][A-Za-z'-]*){2,}", rest)
    return match.group(0) if match else None


@pytest.mark.parametrize(("text", "left"), [
    ("Solution: build the mask and count the empty rows.", "Solution: build the mask"),
    ("这个 bug looks like a model that is not very good。", "bug looks like a"),
    ("在 `masked_fill` 之后 every position ended up masked", "every position ended"),
    ("词元（token）经过 (batch, heads, seq, d_k) 的 out[b, h, i]", None),
    ("Clark et al. 的 *What Does BERT Look At?* 与“the cat sat”", None),
    ("用 BOOK_LANG=zh .venv/bin/jupyter lab chapters/ 启动", None),
    ("GQA vs SDPA：{diff:.1e}，p log p", None),
])
def test_english_left_finds_phrases_not_names_or_notation(text, left):
    found = english_left(text)
    if left is None:
        assert found is None, found
    else:
        assert found and found.startswith(left), found


def test_no_english_phrase_in_any_chinese_text():
    texts = list(terms.chinese_texts())
    assert len(texts) > 1000, f"only {len(texts)} Chinese texts found: wrong root?"
    left = [f"{where}: {phrase!r}" for where, text in texts
            if (phrase := english_left(text))]
    assert not left, f"{len(left)} Chinese text(s) hold an English phrase:\n" + "\n".join(
        left[:30])


def test_the_code_cells_docstrings_are_chinese():
    """Each docstring paragraph of a chapter's code cells has its translation in the page's
    code catalogue, and the Chinese cell shows it."""
    english = []
    count = 0
    for page in zh.chapter_pages():
        catalogue = zh.load_catalogue(zh.CODE_DIR / f"{page.split('/')[-1]}.po")
        nb = nbformat.read(zh.ROOT / f"{page}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            shown = zh.translate_code(cell.source, catalogue)
            count += len(codetext.docstring_messages(cell.source))
            english += [f"{page} {cell.id}: {m!r}" for m in codetext.docstring_messages(shown)
                        if not _CJK.search(m)]
    assert count >= 5, f"only {count} docstrings in the chapters' cells: wrong pages?"
    assert not english, (f"{len(english)} docstring(s) shown in English (make gettext, then "
                         "fill locale/zh_CN/code/*.po):\n" + "\n".join(english[:20]))
