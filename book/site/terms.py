"""The Chinese edition's terminology table (``locale/terms.toml``): one Chinese form per concept.

:func:`violations` holds a text to the table (a rejected form is reported with the concept and
the form to use); :func:`chinese_texts` lists every Chinese text of the book — each catalogue's
msgstr and each string table's zh side — so a test can hold all of them to it; the glossary
page draws its tables from :func:`table` (the ``terms-glossary`` directive below).
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "locale" / "terms.toml"
# what is not prose: code spans, {eval}/{glue} roles, math, str.format placeholders, URLs
_NOT_PROSE = re.compile(r"\{[\w:-]+\}`[^`]*`|`[^`]*`|\$\$.*?\$\$|\$[^$]*\$"
                        r"|\{[\w.]*(?:![rsa])?(?::[^{}]*)?\}|https?://\S+", re.S)


@dataclass(frozen=True)
class Term:
    id: str
    en: str
    zh: str
    first_use: str = ""
    reject: tuple[str, ...] = ()
    reject_re: tuple[str, ...] = ()
    note: str = ""
    patterns: tuple[re.Pattern, ...] = field(default=(), compare=False, repr=False)
    raw_patterns: tuple[re.Pattern, ...] = field(default=(), compare=False, repr=False)
    reject_in: str = ""     # a regex on where a text is: the rejected forms apply only there
    note_en: str = ""       # the note in English (the English edition's glossary)


@cache
def table() -> dict[str, dict]:
    """The table as read: {"terms": {id: {...}}, "errors": {id: {"en", "zh"}}}."""
    with TABLE.open("rb") as handle:
        data = tomllib.load(handle)
    for section in ("terms", "errors"):
        for key, row in data.get(section, {}).items():
            missing = {"en", "zh"} - set(row)
            if missing:
                raise ValueError(f"{TABLE.name}: [{section}.{key}] needs {sorted(missing)}")
    return data


def _pattern(form: str) -> re.Pattern:
    """A rejected literal form: Latin words match whole words only (token, not tokenizer)."""
    body = re.escape(form)
    if re.match(r"[A-Za-z]", form):
        body = r"(?<![A-Za-z_\-])" + body
    if re.search(r"[A-Za-z]$", form):
        body += r"(?![A-Za-z_\-])"
    return re.compile(body, re.I if form.isascii() else 0)


@cache
def terms() -> tuple[Term, ...]:
    rows = []
    for key, row in table().get("terms", {}).items():
        reject = tuple(row.get("reject", ()))
        reject_re = tuple(row.get("reject_re", ()))
        if row["zh"] in reject:
            raise ValueError(f"{TABLE.name}: [terms.{key}] rejects its own form {row['zh']!r}")
        rows.append(Term(key, row["en"], row["zh"], row.get("first_use", ""), reject,
                         reject_re, row.get("note", ""),
                         tuple(_pattern(f) for f in reject),
                         tuple(re.compile(p) for p in reject_re),
                         reject_in=row.get("reject_in", ""), note_en=row.get("note_en", "")))
    return tuple(rows)


_GLOSS = re.compile(r"（([^（）]*)）")


def glosses(first_use: str) -> list[tuple[str, str]]:
    """(Chinese form, its gloss) for each bracketed gloss of a ``first_use``:
    "查询（query） / 键（key）" gives [("查询", "query"), ("键", "key")]."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"([\u4e00-\u9fff]+)（([^（）]*)）", first_use)]


def unglossed(first_use: str) -> str:
    """``first_use`` without its bracketed glosses: the Chinese it introduces."""
    return _GLOSS.sub("", first_use)


def glossary_form(term: Term) -> str:
    """The glossary's Chinese cell: the term as it is introduced, then the rest of its forms
    ("掩码（mask） / 被屏蔽的位置")."""
    if not term.first_use:
        return term.zh
    return term.first_use + term.zh[len(unglossed(term.first_use)):]


def _glossed(text: str) -> str:
    """``text`` without emphasis marks and with the allowed first-use glosses (a term's
    ``first_use``: the term, its English in brackets) reduced to the term."""
    text = re.sub(r"\*+([^*]+)\*+", r"\1", text)   # emphasis around a glossed term
    for term in terms():
        if term.first_use:
            text = text.replace(term.first_use, unglossed(term.first_use))
            for form, gloss in glosses(term.first_use):
                text = text.replace(f"{form}（{gloss}）", form)
    return text


def prose(text: str) -> str:
    """``text`` without what is not prose (code, math, roles, placeholders, URLs) and without
    the allowed first-use glosses."""
    return _NOT_PROSE.sub(" ", _glossed(text))


def violations(text: str, where: str | None = None) -> list[str]:
    """Each rejected form in ``text``, as "concept: 'form' (use 'zh')". ``where`` says where
    the text is (as :func:`chinese_texts` names it): a term with ``reject_in`` rejects its
    forms only in a text whose ``where`` that regex finds (the order labels' 不要 and 多加 are
    also words of the orders themselves, so they are rejected as labels only)."""
    rest, whole = prose(text), _glossed(text)
    found = []
    for term in terms():
        if term.reject_in and not (where and re.search(term.reject_in, where)):
            continue
        # literal forms are looked for in the prose; patterns may name math or roles
        for pattern, searched in [(p, rest) for p in term.patterns] + [
                (p, whole) for p in term.raw_patterns]:
            for match in pattern.finditer(searched):
                found.append(f"{term.id}: {match.group(0)!r} (use {term.zh!r})")
    return found


def chinese_texts(root: Path = ROOT):
    """(where, text) for every Chinese text of the book: each translated catalogue entry
    (``locale/zh_CN/**/*.po``) and each string table entry's zh side (``book/strings``)."""
    from babel.messages.pofile import read_po

    for path in sorted((root / "locale" / "zh_CN").rglob("*.po")):
        with path.open("rb") as handle:
            for message in read_po(handle):
                if message.id and message.string:
                    where = f"{path.relative_to(root)}: msgid {str(message.id)[:60]!r}"
                    yield where, message.string
    for path in sorted((root / "book" / "strings").glob("*.toml")):
        with path.open("rb") as handle:
            for key, entry in tomllib.load(handle).items():
                if isinstance(entry, dict) and entry.get("zh"):
                    yield f"{path.relative_to(root)}: [{key}] zh", entry["zh"]


def count(form: str, root: Path = ROOT) -> int:
    """How often ``form`` occurs in the book's Chinese prose (for before/after reports)."""
    pattern = _pattern(form)
    return sum(len(pattern.findall(prose(text))) for _, text in chinese_texts(root))


# --- the glossary page -------------------------------------------------------------------

def _glossary_nodes(language: str):
    from docutils import nodes

    def make_table(headers, rows, widths):
        tgroup = nodes.tgroup(cols=len(headers))
        for width in widths:
            tgroup += nodes.colspec(colwidth=width)
        head = nodes.thead()
        row = nodes.row()
        for text in headers:
            row += nodes.entry("", nodes.paragraph(text=text))
        head += row
        tgroup += head
        body = nodes.tbody()
        for cells in rows:
            row = nodes.row()
            for text in cells:
                row += nodes.entry("", nodes.paragraph(text=text))
            body += row
        tgroup += body
        return nodes.table("", tgroup, classes=["book-glossary"])

    zh = language == "zh"
    if not zh:
        # the English edition: what each term is called in the Chinese edition, and why
        return [make_table(["term", "Chinese", "note"],
                           [(t.en, t.zh, t.note_en) for t in terms()], [30, 25, 45])]
    term_rows = [(t.en, glossary_form(t), "、".join(t.reject) if zh else ", ".join(t.reject),
                  t.note) for t in terms()]
    error_rows = [(row["en"], row["zh"]) for row in table().get("errors", {}).values()]
    headers = (["English", "中文", "不用", "说明"] if zh
               else ["English", "Chinese", "not used", "note"])
    error_headers = (["PyTorch 报错中的关键词", "意思"] if zh
                     else ["key words of PyTorch's error", "what it means (in Chinese)"])
    return [make_table(headers, term_rows, [18, 18, 18, 46]),
            make_table(error_headers, error_rows, [50, 50])]


def setup_sphinx(app) -> None:
    """Register the ``terms-glossary`` directive: ``:::{terms-glossary}`` draws the terms
    table, ``:::{terms-glossary} errors`` PyTorch's error key words. Its nodes carry no source
    line, so Sphinx's gettext leaves them out (the table is bilingual already)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive
    from sphinx.util.docutils import SphinxDirective

    from book.site import editions

    class TermsGlossary(SphinxDirective):
        optional_arguments = 1
        has_content = False

        def run(self):
            language = editions.edition_of(self.env.config.language)
            self.env.note_dependency(str(TABLE))
            which = (self.arguments or ["terms"])[0]
            if which not in ("terms", "errors"):
                raise self.error(f"terms-glossary takes 'terms' or 'errors', not {which!r}")
            if language != "zh" and which == "errors":
                # the errors' meanings are Chinese: the English page links them, so that
                # English pages carry only the terms' characters (book/site/fonts.py)
                return [nodes.paragraph(text="Their meanings, in Chinese, are part of the "
                                             "Chinese edition: the link at the top of this "
                                             "page opens them.")]
            tables = _glossary_nodes(language)
            return [tables[0] if which == "terms" else tables[1]]

    assert issubclass(TermsGlossary, Directive)
    app.add_directive("terms-glossary", TermsGlossary)
