"""The Chinese edition's notebooks, generated from the English ones and the catalogues.

Each chapter's Chinese notebook is the English notebook, cell for cell (same ids, same code),
with

* every markdown segment that Sphinx translates (paragraph, heading, list item, table cell,
  admonition title and body, display math) replaced by its ``msgstr`` from
  ``locale/zh_CN/LC_MESSAGES/<page>.po`` — the catalogue the Chinese HTML is built from, so the
  notebook can never drift from the page;
* every comment line, docstring paragraph and printed text (a string or f-string passed to
  ``print``) of the code cells replaced by its translation from ``locale/zh_CN/code/<page>.po``
  (one message per comment text, paragraph or printed literal, filled like the prose);
* ``book.setup()`` called as ``book.setup(language="zh")``, so figures, widgets and exercise
  messages speak Chinese without ``BOOK_LANG``.

A segment that needs words but has no translation stops the generation with the page and the
segment named. The ``{eval}`` roles stay as they are: jupyterlab-myst evaluates them in the
reader's kernel, as in the English notebooks. ::

    python -m book.site.editions notebooks-zh        # -> _build/notebooks-zh/chapters/*.ipynb
    python -m book.site.editions gettext             # also extracts the code comments
"""
from __future__ import annotations

import concurrent.futures
import os
import re
from pathlib import Path

import yaml

from book.kit import codetext
from book.kit.codetext import comments, translate_comments  # noqa: F401  (used here and by the tests)
from book.site import nbfiles

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locale" / "zh_CN"
PROSE_DIR = LOCALE / "LC_MESSAGES"
CODE_DIR = LOCALE / "code"
OUT_DIR = ROOT / "_build" / "notebooks-zh"
SETUP_EN = "book.setup()"
SETUP_ZH = 'book.setup(language="zh")'
# directives whose body MyST parses as markdown (their title, if any, is a message too)
_PROSE_DIRECTIVES = {"admonition", "note", "tip", "important", "warning", "caution",
                     "attention", "hint", "seealso", "dropdown"}
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_CODE_SPAN = re.compile(r"`[^`]*`")
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_TEX_TEXT = re.compile(r"\\(?:text|textrm|mathrm|operatorname)\{([^{}]*)\}")
_NOTATION = {"model", "NaN", "head", "out", "ff"}   # \\text{} names that are symbols, not prose
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


class MissingTranslation(ValueError):
    """Segments of a page with no translation in its catalogue."""


def chapter_pages() -> list[str]:
    """The notebook pages of _toc.yml, in order (``chapters/02_scaling``, ...)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [entry["file"] for part in toc.get("parts", []) for entry in part["chapters"]]
    return [f for f in files if (ROOT / f"{f}.ipynb").is_file()]


def load_catalogue(path: Path) -> dict[str, str]:
    """msgid -> msgstr of ``path``, translated and not fuzzy entries only ({} if no file)."""
    from babel.messages.pofile import read_po

    if not path.is_file():
        return {}
    with path.open("rb") as handle:
        catalogue = read_po(handle)
    return {m.id: m.string for m in catalogue
            if m.id and isinstance(m.id, str) and m.string and not m.fuzzy}


def _parser():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = set(config.get("parse", {}).get("myst_enable_extensions", []))
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


def _directive_body(content: str) -> str:
    """A directive's body without its leading ``:option: value`` lines."""
    lines = content.split("\n")
    while lines and re.match(r"\s*:[\w-]+:", lines[0]):
        lines.pop(0)
    return "\n".join(lines)


def segments(markdown: str, md=None, kinds: bool = False) -> list:
    """The translatable segments of one markdown cell, in source order, each as the source
    text MyST hands to Sphinx (the message is this text with its line breaks as spaces);
    with ``kinds``, (kind, text) pairs, kind "math" for display math, else "prose"."""
    md = md or _parser()
    found = []
    for token in md.parse(markdown):
        if token.type == "inline":
            found.append(("prose", token.content))
        elif token.type in ("math_block", "math_block_label", "amsmath"):
            found.append(("math", token.content))   # Sphinx keeps a formula's lines as they are
        elif token.type in ("colon_fence", "fence") and token.info.startswith("{"):
            name, _, title = token.info[1:].partition("}")
            if name.strip() in _PROSE_DIRECTIVES:
                if title.strip():
                    found.append(("prose", title.strip()))
                found.extend(segments(_directive_body(token.content), md, kinds=True))
    return found if kinds else [text for _, text in found]


def tex_words(formula: str) -> list[str]:
    """The words of ``formula``'s ``\\text{}`` that are prose, not a subscript's name
    (``d_\\text{model}`` is notation; ``\\text{cache bytes}`` is English)."""
    return [m.group(1) for m in re.finditer(r"(?<![_^])\\text\{([^{}]*)\}", formula)
            if re.search(r"[A-Za-z]{2,}", m.group(1)) and m.group(1) not in _NOTATION]


def message_id(segment: str) -> str:
    """The catalogue's msgid for a segment (Sphinx joins the lines of a node's source)."""
    return segment.replace("\n", " ").strip()


def needs_words(segment: str) -> bool:
    """True if ``segment`` holds prose: words outside roles, code spans, math and link targets
    (a table cell holding one glued number needs no translation). Words in a formula's
    ``\\text{}`` count as prose."""
    words = " ".join(_TEX_TEXT.findall(segment))
    rest = _LINK_TARGET.sub("]", _MATH.sub(" ", _CODE_SPAN.sub(" ", _ROLE.sub(" ", segment))))
    return bool(re.search(r"[A-Za-z]{2,}", rest + " " + words))


def _flexible(segment: str) -> re.Pattern:
    """``segment`` as it appears in the cell: its lines may be indented or quoted there."""
    lines = [re.escape(line.strip()) for line in segment.strip().split("\n")]
    return re.compile(r"[ \t]*\n[ \t>]*".join(lines))


def translate_markdown(markdown: str, catalogue: dict[str, str], where: str = "") -> str:
    """``markdown`` with each segment replaced by its translation; MissingTranslation names
    every segment with words that the catalogue does not translate."""
    out, cursor, missing = [], 0, []
    for segment in segments(markdown):
        msgid = message_id(segment)
        if not msgid:
            continue
        translation = next((catalogue[key] for key in (msgid, segment, segment.strip("\n"))
                            if key in catalogue), None)
        if translation is None:
            if needs_words(segment):
                missing.append(msgid)
            continue
        match = _flexible(segment).search(markdown, cursor)
        if match is None:
            raise ValueError(f"{where}: segment not found in its cell: {msgid[:80]!r}")
        out.append(markdown[cursor:match.start()])
        out.append(translation)
        cursor = match.end()
    if missing:
        raise MissingTranslation(f"{where}: {len(missing)} segment(s) without a translation "
                                 "(run `make gettext` and translate them), e.g. "
                                 + "; ".join(repr(m[:90]) for m in missing[:3]))
    out.append(markdown[cursor:])
    return "".join(out)


# --- code comments ------------------------------------------------------------------------

def translate_code(code: str, catalogue: dict[str, str], where: str = "") -> str:
    """``code`` with each comment, docstring and printed text translated and ``book.setup()``
    choosing Chinese."""
    translated = codetext.translate(code, catalogue)
    return re.sub(r"^book\.setup\(\)", SETUP_ZH, translated, flags=re.M)


def code_comments(page: str) -> list[str]:
    """Every comment text, docstring paragraph and printed text of ``page``'s code cells, then
    every comment and docstring paragraph of the listings its ``book.show_source`` calls show,
    in order, once each."""
    import nbformat

    nb = nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    seen: dict[str, None] = {}
    for cell in nb.cells:
        if cell.cell_type == "code":
            for text in codetext.messages(cell.source):
                seen.setdefault(text, None)
    for listing in shown_listings(page):
        for text in codetext.messages(listing, printed=False):
            seen.setdefault(text, None)
    return list(seen)


def shown_listings(page: str) -> list[str]:
    """The English listings that ``page``'s ``book.show_source(...)`` calls display: the
    notebook's import lines are run and each call's arguments evaluated, then
    book.kit.codetext.listing gives what show_source shows."""
    import ast

    import nbformat

    nb = nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    namespace: dict = {}
    calls = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                exec(compile(ast.Module([node], []), page, "exec"), namespace)  # noqa: S102
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                    "book.show_source", "show_source"):
                calls.append(node)
    shown = []
    for call in calls:
        args = [eval(ast.unparse(a), namespace) for a in call.args]  # noqa: S307
        kwargs = {k.arg: eval(ast.unparse(k.value), namespace)  # noqa: S307
                  for k in call.keywords}
        shown.append(codetext.listing(*args, **kwargs))
    return shown


def update_code_catalogues() -> list[Path]:
    """``locale/zh_CN/code/<page>.po`` brought up to date with the pages' comments: new ones
    empty, gone ones dropped, translations kept."""
    return [write_catalogue(CODE_DIR / f"{Path(page).name}.po", code_comments(page),
                            "attention-book code comments")
            for page in chapter_pages()]


# Babel flags a message python-format or python-brace-format whenever its text merely holds a
# % or a {...} (a percentage, a MyST role such as {eval}, LaTeX's \text{...}, a code comment's
# dict); no message of the book is a format string, and with the flag `msgfmt --check` refuses a
# translation whose "placeholders" differ (tests/site/test_catalogues_msgfmt.py).
FORMAT_FLAGS = frozenset({"python-format", "python-brace-format"})


def _drop_format_flags(catalogue) -> None:
    """Removes FORMAT_FLAGS from every message of a babel ``Catalog`` (babel adds them back
    whenever it reads the file: each writer removes them again)."""
    for message in [*catalogue, *catalogue.obsolete.values()]:
        message.flags -= FORMAT_FLAGS


def tidy_catalogue(path: Path, width: int = 0) -> bool:
    """A catalogue that sphinx-intl wrote (``editions.gettext``), made one that `msgfmt --check`
    accepts: babel's false format flags removed (FORMAT_FLAGS), and obsolete ``#~`` entries
    whose msgid is a live message again dropped (msgfmt calls them duplicates). Rewritten with
    sphinx-intl's own writer and width (``-w 0``), only if that changes it; True if so."""
    import io

    from babel.messages.pofile import read_po, write_po

    raw = path.read_bytes()
    catalogue = read_po(io.BytesIO(raw))
    _drop_format_flags(catalogue)
    for key in [k for k in catalogue.obsolete if k in catalogue]:
        del catalogue.obsolete[key]
    out = io.BytesIO()
    write_po(out, catalogue, width=width)
    if out.getvalue() == raw:
        return False
    path.write_bytes(out.getvalue())
    return True


def write_catalogue(path: Path, messages: list[str], project: str) -> Path:
    """``path`` (a .po file) holding exactly ``messages``, in order: new ones empty, gone ones
    dropped, existing translations kept (also used for the assignments, book/classroom). The
    file starts with a header entry (charset UTF-8, Language zh_CN), which msgfmt needs; its
    dates are kept from the file it replaces, so that an unchanged catalogue is rewritten
    byte for byte."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    old, dates = {}, {}
    if path.is_file():
        with path.open("rb") as handle:
            previous = read_po(handle)
        old = {m.id: m.string for m in previous if m.id}
        # a file without a header reads as created now, which is what it then gets
        dates = {"creation_date": previous.creation_date,
                 "revision_date": previous.revision_date}
    # Project-Id-Version: "attention-book code/04_pytorch", "attention-book assignments/README"
    catalogue = Catalog(locale="zh_CN", project="attention-book",
                        version=f"{path.parent.name}/{path.stem}", fuzzy=False, charset="utf-8",
                        header_comment=(f"# Chinese translations: {project}.\n"
                                        "# Written by book/site/zh_notebooks.py (write_catalogue):"
                                        " the msgids follow the sources, the msgstrs are kept.\n#"),
                        **dates)
    for text in messages:
        catalogue.add(text, old.get(text, ""))
    _drop_format_flags(catalogue)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        write_po(handle, catalogue, width=0)
    return path


# --- notebooks ----------------------------------------------------------------------------

def chinese_notebook(page: str):
    """The Chinese notebook of ``page`` (e.g. ``chapters/02_scaling``), as an nbformat node."""
    import nbformat

    nb = nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    name = Path(page).name
    prose = load_catalogue(PROSE_DIR / f"{page}.po")
    code = load_catalogue(CODE_DIR / f"{name}.po")
    if not prose:
        raise MissingTranslation(f"{page}: no catalogue at {PROSE_DIR / f'{page}.po'}")
    for index, cell in enumerate(nb.cells):
        where = f"{page}.ipynb cell {cell.get('id', index)}"
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, prose, where)
        elif cell.cell_type == "code":
            cell.source = translate_code(cell.source, code, where)
            cell.outputs, cell.execution_count = [], None
    if not any(SETUP_ZH in c.source for c in nb.cells if c.cell_type == "code"):
        raise ValueError(f"{page}: no `{SETUP_EN}` line to preset to Chinese")
    nb.metadata["language"] = "zh"
    return nb


def _write_one(page: str, out_dir: Path) -> tuple[Path | None, str | None]:
    """Write ``page``'s Chinese notebook under ``out_dir``: (its path, None), or (None, what
    is missing from the catalogues)."""
    import nbformat

    try:
        nb = chinese_notebook(page)
    except MissingTranslation as error:
        return None, str(error)
    path = Path(out_dir) / f"{page}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    # as JupyterLab saves it, so that opening and saving the download changes nothing
    path.write_text(nbfiles.as_jupyterlab_saves(nbformat.writes(nb)), encoding="utf-8")
    return path, None


def write_notebooks(out_dir: Path = OUT_DIR, pages: list[str] | None = None) -> list[Path]:
    """Write every chapter's Chinese notebook under ``out_dir`` (same relative paths), one
    process per core (the Chinese build's last steps run on one core while the other idles)."""
    pages = list(pages or chapter_pages())
    workers = min(len(pages), os.cpu_count() or 1)
    if workers < 2:
        results = [_write_one(page, out_dir) for page in pages]
    else:
        with concurrent.futures.ProcessPoolExecutor(workers) as pool:
            results = list(pool.map(_write_one, pages, [out_dir] * len(pages)))
    problems = [problem for _, problem in results if problem]
    if problems:
        raise MissingTranslation("\n".join(problems))
    return [path for path, _ in results]


def english_prose(markdown: str, min_letters: int = 12) -> list[str]:
    """Paragraph-like segments of ``markdown`` that read as English: at least ``min_letters``
    Latin letters outside roles, code spans, math and link targets, and no CJK character."""
    found = []
    for kind, segment in segments(markdown, kinds=True):
        if kind == "math":
            if tex_words(segment):
                found.append(message_id(segment))
            continue
        rest = _LINK_TARGET.sub("]", _MATH.sub(" ", _CODE_SPAN.sub(" ", _ROLE.sub(" ", segment))))
        if len(re.findall(r"[A-Za-z]", rest)) >= min_letters and not _CJK.search(segment):
            found.append(message_id(segment))
    return found
