"""The assignments in Chinese, generated from the English instructor notebooks and catalogues.

The English notebooks in ``assignments/`` stay the one source. Their Chinese twins are made
when the assignments are generated, never kept by hand: each is the English notebook cell for
cell (same ids, same code, same otter directives, same hidden cases), with

* every markdown segment replaced by its ``msgstr`` from ``locale/zh_CN/assignments/<stem>.po``
  (the same segmenting and translating as the chapters' Chinese notebooks,
  :mod:`book.site.zh_notebooks`, so a question reads as the book's pages do);
* every code comment and every public check's hint (the message of an ``assert`` in a test
  cell, which ``grader.check`` prints) translated from the same catalogue;
* ``metadata.language = "zh"``, which the grader reads to write its feedback in Chinese
  (:func:`language_of`); the scores never depend on it.

The bundle's README is translated from ``locale/zh_CN/assignments/README.po`` the same way.
A segment, comment or hint without a translation stops the generation and names it. ::

    python -m book.classroom gettext     # the catalogues brought up to date with the sources
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from book.site import zh_notebooks

LANGUAGES = ("en", "zh")
CATALOGUES = zh_notebooks.LOCALE / "assignments"
README = "README"
# otter's own directives in code comments: they must stay as they are
_OTTER = re.compile(r"^(BEGIN|END) [A-Z ]+$|^(SOLUTION|SEED|IGNORE|PROMPT)\b")


def language_of(data: bytes) -> str:
    """The language a submitted notebook asks its feedback in: ``metadata.language`` if it is
    exactly one of :data:`LANGUAGES`, else English. Anything unreadable is English too (the
    grader reports the notebook's real problem); the language changes only wording."""
    try:
        meta = json.loads(data.decode("utf-8")).get("metadata", {})
        language = meta.get("language") if isinstance(meta, dict) else None
    except (UnicodeDecodeError, ValueError, AttributeError):
        return "en"
    return language if isinstance(language, str) and language in LANGUAGES else "en"


# --- what is translated ----------------------------------------------------------------------

def _comments(code: str) -> list[tuple[int, int, str]]:
    return [c for c in zh_notebooks.comments(code) if not _OTTER.match(c[2])]


def _hints(code: str) -> list[tuple[ast.Constant, str]]:
    """The string messages of the ``assert`` statements of ``code`` (public checks' hints)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    return [(node.msg, node.msg.value) for node in ast.walk(tree)
            if isinstance(node, ast.Assert) and isinstance(node.msg, ast.Constant)
            and isinstance(node.msg.value, str) and re.search(r"[A-Za-z]{2,}", node.msg.value)]


def messages(notebook) -> list[str]:
    """Every text of ``notebook`` (an nbformat node) that its Chinese twin translates, in
    order, once each: markdown segments, code comments, hints."""
    md = zh_notebooks._parser()
    seen: dict[str, None] = {}
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for segment in zh_notebooks.segments(cell.source, md):
                if zh_notebooks.needs_words(segment):
                    seen.setdefault(zh_notebooks.message_id(segment), None)
        elif cell.cell_type == "code":
            for _, _, text in _comments(cell.source):
                seen.setdefault(text, None)
            for _, text in _hints(cell.source):
                seen.setdefault(text, None)
    return list(seen)


def readme_messages(readme: str) -> list[str]:
    return list(dict.fromkeys(zh_notebooks.message_id(s) for s in zh_notebooks.segments(readme)
                              if zh_notebooks.needs_words(s)))


def update_catalogues(sources: list[Path], readme: str) -> list[Path]:
    """``locale/zh_CN/assignments/<stem>.po`` (and README.po) holding exactly today's texts:
    new ones empty (to translate), gone ones dropped, translations kept."""
    import nbformat

    written = [zh_notebooks.write_catalogue(
        CATALOGUES / f"{src.stem}.po", messages(nbformat.read(src, as_version=4)),
        f"attention-book assignment {src.stem}") for src in sources]
    written.append(zh_notebooks.write_catalogue(CATALOGUES / f"{README}.po",
                                                readme_messages(readme),
                                                "attention-book assignments README"))
    return written


# --- the Chinese texts -----------------------------------------------------------------------

def _catalogue(stem: str) -> dict[str, str]:
    path = CATALOGUES / f"{stem}.po"
    catalogue = zh_notebooks.load_catalogue(path)
    if not catalogue:
        raise zh_notebooks.MissingTranslation(f"no translated catalogue at {path}: run "
                                              "`python -m book.classroom gettext` and "
                                              "translate it")
    return catalogue


def _translate_hints(code: str, catalogue: dict[str, str], missing: list[str]) -> str:
    lines = code.split("\n")
    for node, text in sorted(_hints(code), key=lambda h: (h[0].lineno, h[0].col_offset),
                             reverse=True):
        if text not in catalogue:
            missing.append(text)
            continue
        if node.lineno != node.end_lineno:
            raise ValueError(f"the hint {text!r} spans lines: keep a hint on one line")
        raw = lines[node.lineno - 1].encode("utf-8")   # ast's columns count UTF-8 bytes
        literal = json.dumps(catalogue[text], ensure_ascii=False).encode("utf-8")
        lines[node.lineno - 1] = (raw[:node.col_offset] + literal
                                  + raw[node.end_col_offset:]).decode("utf-8")
    return "\n".join(lines)


def chinese_notebook(source: Path):
    """The Chinese twin of the instructor notebook ``source``, as an nbformat node."""
    import nbformat

    nb = nbformat.read(source, as_version=4)
    catalogue = _catalogue(source.stem)
    missing: list[str] = []
    for index, cell in enumerate(nb.cells):
        where = f"{source.name} cell {cell.get('id', index)}"
        if cell.cell_type == "markdown":
            cell.source = zh_notebooks.translate_markdown(cell.source, catalogue, where)
        elif cell.cell_type == "code":
            missing += [text for _, _, text in _comments(cell.source) if text not in catalogue]
            cell.source = _translate_hints(
                zh_notebooks.translate_comments(cell.source, catalogue), catalogue, missing)
    if missing:
        raise zh_notebooks.MissingTranslation(
            f"{source.name}: {len(missing)} comment(s) or hint(s) without a translation in "
            f"{CATALOGUES / (source.stem + '.po')} (run `python -m book.classroom gettext` "
            "and translate them), e.g. " + "; ".join(repr(m[:80]) for m in missing[:3]))
    nb.metadata["language"] = "zh"
    return nb


def chinese_readme(readme: str) -> str:
    return zh_notebooks.translate_markdown(readme, _catalogue(README), f"{README}.po")


def write_sources(sources: list[Path], out: Path) -> list[Path]:
    """The Chinese instructor notebooks of ``sources``, written to ``out`` (same names)."""
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sources:
        path = out / src.name
        nbformat.write(chinese_notebook(src), path)
        written.append(path)
    return written
