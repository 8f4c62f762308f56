"""The prose inside code: comments, docstrings and printed text, found, listed and translated.

The Chinese edition translates the comments of the chapters' code cells and the comments and
docstrings of the code the pages show (``book.show_source``) from one set of catalogues,
``locale/zh_CN/code/<page>.po``: one message per comment text and per docstring paragraph (its
lines joined by spaces). book/site/zh_notebooks.py extracts them (``make gettext``) and writes
the Chinese notebooks; ``show_source`` translates its listing in the Chinese edition. Only
comments and docstrings change: the code shown is the code that runs."""

from __future__ import annotations

import ast
import functools
import inspect
import io
import re
import textwrap
import tokenize
from collections.abc import Sequence
from pathlib import Path

from book.kit import text as kit_text

ROOT = Path(__file__).resolve().parents[2]
CODE_DIR = ROOT / "locale" / "zh_CN" / "code"
_WORDS = re.compile(r"[A-Za-z]{2,}")


# --- what a listing shows ------------------------------------------------------------------

def listing(obj, members: Sequence[str] | None = None) -> str:
    """The source that ``book.show_source`` shows for ``obj``, dedented: a function's or a
    class's whole source, or with ``members`` the class line, the first paragraph of its
    docstring and those methods (the rest named in a comment)."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismodule(obj)
            or inspect.ismethod(obj)):
        raise TypeError(f"show_source needs a function, class or module defined in a file, "
                        f"got {type(obj).__name__} {obj!r}")
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as err:
        raise TypeError(f"show_source needs a function, class or module defined in a file, "
                        f"got {obj!r}: {err}") from None
    if members is not None:
        source = _class_excerpt(obj, members)
    return textwrap.dedent(source).rstrip()


def _class_excerpt(cls, members: Sequence[str]) -> str:
    if not inspect.isclass(cls):
        raise TypeError(f"members= works on a class, got {cls!r}; drop members= for a function")
    if isinstance(members, str) or not members:
        raise TypeError(f"members must be a list of method names, got {members!r}")
    missing = [m for m in members if m not in vars(cls)]
    if missing:
        raise ValueError(f"{cls.__name__} defines no {missing}; it has "
                         f"{sorted(n for n, v in vars(cls).items() if callable(v))}")
    bases = ", ".join(b.__name__ if b.__module__ == cls.__module__ else
                      f"nn.{b.__name__}" if b.__module__.startswith("torch.nn.") else
                      f"{b.__module__}.{b.__name__}" for b in cls.__bases__)
    summary = (inspect.getdoc(cls) or "").split("\n\n")[0]
    lines = [f"class {cls.__name__}({bases}):"]
    if summary:
        lines.append(textwrap.indent(f'"""{summary}"""', "    "))
    others = sorted(n for n, v in vars(cls).items()
                    if inspect.isfunction(v) and n not in members and not n.startswith("__"))
    for name in members:
        lines += ["", textwrap.indent(textwrap.dedent(inspect.getsource(vars(cls)[name])),
                                      "    ").rstrip()]
    if others:
        lines += [""] + textwrap.wrap(f"also defined, not shown: {', '.join(others)}", 88,
                                      initial_indent="    # ", subsequent_indent="    #   ")
    return "\n".join(lines)


# --- comments --------------------------------------------------------------------------------

def comments(code: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of each ``#`` comment of ``code`` that holds words: text without
    the ``#`` and the space after it. Code that does not tokenize (IPython magics) gives none."""
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.COMMENT:
                text = tok.string[1:].strip()
                if _WORDS.search(text) and not text.startswith("noqa"):
                    found.append((tok.start[0], tok.start[1], text))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return found


def translate_comments(code: str, catalogue: dict[str, str]) -> str:
    """``code`` with each comment translated; one with no translation stays English (the
    catalogue tests list them)."""
    lines = code.split("\n")
    for line_no, column, text in comments(code):
        translation = catalogue.get(text)
        if translation:
            line = lines[line_no - 1]
            lines[line_no - 1] = line[:column] + "# " + translation
    return "\n".join(lines)


# --- docstrings ------------------------------------------------------------------------------

def _docstring_tokens(code: str) -> list[tokenize.TokenInfo]:
    """The string tokens of ``code`` that are docstrings (of the module, a class, a function)."""
    try:
        tree = ast.parse(code)
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (SyntaxError, tokenize.TokenError, IndentationError):
        return []
    starts = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(
                    getattr(body[0], "value", None), ast.Constant) and isinstance(
                    body[0].value.value, str):
                starts.add((body[0].lineno, body[0].col_offset))
    return [t for t in tokens if t.type == tokenize.STRING and t.start in starts]


_SECTION = re.compile(r"^[A-Z][A-Za-z ]{1,20}:$")   # "Args:", "Returns:" (Google style)


def _paragraphs(body: str, indent: int = 0) -> list[tuple[int, int, str, int, int]]:
    """The prose units of a docstring's ``body`` (lines counted from 0, line 0 right after
    the quotes; ``indent`` is the docstring's own indentation): (first line, last line,
    message, indentation of its first line, of its other lines). A unit is a blank-line
    separated paragraph, a section header ("Args:") or one item of a section ("x: the
    input", with its more indented continuation lines); the message is its lines joined by
    spaces. A paragraph more indented than the docstring (an example, a literal block) is
    not prose."""
    lines = body.split("\n")

    def spaces(line: str) -> int:
        return len(line) - len(line.lstrip())

    base = min((spaces(line) for line in lines[1:] if line.strip()), default=indent)
    units = []

    def add(first: int, last: int, lead: int, rest: int) -> None:
        message = " ".join(x.strip() for x in lines[first:last + 1])
        if _WORDS.search(message):
            units.append((first, last, message, lead, rest))

    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if i > 0 and spaces(line) == base and _SECTION.match(line.strip()):
            add(i, i, base, base)
            i += 1
            item = None
            while i < n and lines[i].strip() and spaces(lines[i]) > base:
                if item is None or spaces(lines[i]) <= spaces(lines[item]):
                    if item is not None:
                        add(item, i - 1, spaces(lines[item]), spaces(lines[item]) + 4)
                    item = i
                i += 1
            if item is not None:
                add(item, i - 1, spaces(lines[item]), spaces(lines[item]) + 4)
            continue
        start = i
        while i < n and lines[i].strip() and not (
                i > start and spaces(lines[i]) == base and _SECTION.match(lines[i].strip())):
            i += 1
        chunk = lines[start:i]
        literal = any(spaces(x) > base for x in chunk[1 if start == 0 else 0:] if x.strip()) \
            or chunk[0].lstrip().startswith(">>>")
        if not literal:
            lead = 0 if start == 0 else spaces(chunk[0])
            add(start, i - 1, lead, base if start == 0 else lead)
    return units


def docstring_messages(code: str) -> list[str]:
    """The message of every prose paragraph of ``code``'s docstrings, in order."""
    messages = []
    for tok in _docstring_tokens(code):
        body = _split_quotes(tok.string)[1]
        messages += [unit[2] for unit in _paragraphs(body, tok.start[1])]
    return messages


def _split_quotes(literal: str) -> tuple[str, str, str]:
    prefix = re.match(r"[rRuU]?(\"\"\"|'''|\"|')", literal).group(0)
    quote = prefix.lstrip("rRuU")
    return prefix, literal[len(prefix):-len(quote)], quote


def translate_docstrings(code: str, catalogue: dict[str, str], width: int = 88) -> str:
    """``code`` with each docstring paragraph that ``catalogue`` translates replaced by the
    translation, in lines of at most ``width`` columns (:func:`book.kit.text.lines`) at the
    docstring's indentation; untranslated paragraphs stay as they are."""
    lines = code.split("\n")
    for tok in reversed(_docstring_tokens(code)):
        prefix, body, quote = _split_quotes(tok.string)
        indent = " " * tok.start[1]
        body_lines = body.split("\n")
        for first, last, message, lead, rest in reversed(_paragraphs(body, tok.start[1])):
            translation = catalogue.get(message)
            if not translation:
                continue
            room = width - (len(indent) + len(prefix) if first == 0 else lead)
            new = kit_text.lines(translation, max(room, 24))
            body_lines[first:last + 1] = [" " * lead + new[0]] + [
                " " * rest + line for line in new[1:]]
        literal = prefix + "\n".join(body_lines) + quote
        (row, col), (end_row, end_col) = tok.start, tok.end
        before, after = lines[row - 1][:col], lines[end_row - 1][end_col:]
        lines[row - 1:end_row] = (before + literal + after).split("\n")
    return "\n".join(lines)


# --- printed text ----------------------------------------------------------------------------
#
# A lesson cell prints plain Python: ``print(f"variance at d_k = {d_k}: {v:.1f}")``. The words
# of such a literal (a string or f-string passed straight to ``print``) are a message like a
# comment's: the msgid is the literal as written between its quotes, placeholders included,
# and the translation keeps the same placeholders (tests/site/test_printed_text.py).

_FIELD = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
_PROSE = re.compile(r"[A-Za-z]{2,} [A-Za-z]{2,}")   # two words in a row: not notation


def _printed_literals(code: str) -> list[tuple[int, int, int, int, str, str, str]]:
    """(start line, start column, end line, end column, prefix, body, quote) of each string
    literal passed as an argument to ``print``; lines from 1, columns in characters. Only
    prose counts: two words in a row outside the ``{...}`` fields (``"max |a - b| ="`` or a
    variable's name is notation and stays as it is); implicitly joined literals are left out."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    lines = code.split("\n")
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "print"):
            continue
        for arg in node.args:
            if not (isinstance(arg, ast.JoinedStr) or (isinstance(arg, ast.Constant)
                                                       and isinstance(arg.value, str))):
                continue
            if arg.lineno != arg.end_lineno:
                continue
            line = lines[arg.lineno - 1].encode("utf-8")
            start = len(line[:arg.col_offset].decode("utf-8"))
            end = len(line[:arg.end_col_offset].decode("utf-8"))
            literal = lines[arg.lineno - 1][start:end]
            match = re.fullmatch(r"([rRuUfF]{0,2})(\"|')(.*)\2", literal)
            if not match or match.group(2) in match.group(3).replace("\\" + match.group(2), ""):
                continue   # "a" "b", or a quote inside: not one plain literal
            body = match.group(3)
            if _PROSE.search(_FIELD.sub("", body)):
                found.append((arg.lineno, start, arg.end_lineno, end, match.group(1),
                              body, match.group(2)))
    return sorted(found)


def printed_messages(code: str) -> list[str]:
    """The text of every printed literal of ``code`` (see :func:`_printed_literals`)."""
    return [lit[5] for lit in _printed_literals(code)]


def fields(text: str) -> list[str]:
    """The ``{...}`` fields of a printed message, sorted: a translation keeps the same."""
    return sorted(f for f in _FIELD.findall(text) if f not in ("{{", "}}"))


def translate_printed(code: str, catalogue: dict[str, str]) -> str:
    """``code`` with each printed literal's text translated by ``catalogue`` (its quote
    escaped inside the translation); one with no translation stays English."""
    lines = code.split("\n")
    for row, start, _, end, prefix, body, quote in reversed(_printed_literals(code)):
        translation = catalogue.get(body)
        if translation:
            text = translation.replace(quote, "\\" + quote)
            line = lines[row - 1]
            lines[row - 1] = line[:start] + prefix + quote + text + quote + line[end:]
    return "\n".join(lines)


def messages(code: str, printed: bool = True) -> list[str]:
    """Every comment text, docstring paragraph and (``printed``) printed literal of ``code``:
    its catalogue's messages."""
    return ([t for _, _, t in comments(code)] + docstring_messages(code)
            + (printed_messages(code) if printed else []))


def translate(code: str, catalogue: dict[str, str], printed: bool = True) -> str:
    """``code`` with its comments, docstrings and (``printed``) printed text translated by
    ``catalogue``. A listing of the book's own modules (``show_source``) passes
    ``printed=False``: its code runs in English, so what it prints is shown as it is."""
    translated = translate_comments(translate_docstrings(code, catalogue), catalogue)
    return translate_printed(translated, catalogue) if printed else translated


# --- the catalogues --------------------------------------------------------------------------

def read_catalogue(path: Path) -> dict[str, str]:
    """msgid -> msgstr of the .po file ``path``: translated, not fuzzy entries only ({} if the
    file is missing). Reads what babel and sphinx-intl write (quoted strings, continued on the
    next lines, with C escapes) and needs neither, so a reader's kernel can use it."""
    path = Path(path)
    if not path.is_file():
        return {}
    entries, entry, field, fuzzy = {}, {}, None, False

    def close():
        if entry.get("msgid") and entry.get("msgstr") and not fuzzy:
            entries[entry["msgid"]] = entry["msgstr"]

    for raw in path.read_text(encoding="utf-8").split("\n") + [""]:
        line = raw.strip()
        if not line:
            close()
            entry, field, fuzzy = {}, None, False
        elif line.startswith("#,"):
            fuzzy = fuzzy or "fuzzy" in line
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            if field:
                entry[field] += _unquote(line)
        else:
            key, _, rest = line.partition(" ")
            if key == "msgid" and entry.get("msgid") is not None:
                close()
                entry, fuzzy = {}, False
            field = key
            entry[field] = _unquote(rest)
    return entries


def _unquote(quoted: str) -> str:
    return ast.literal_eval(quoted) if quoted.startswith('"') else ""


@functools.cache
def catalogue(code_dir: Path = CODE_DIR) -> dict[str, str]:
    """Every page's code catalogue in one (``show_source`` does not know its page; the same
    English line has the same translation wherever it is shown)."""
    merged: dict[str, str] = {}
    for path in sorted(Path(code_dir).glob("*.po")):
        for key, value in read_catalogue(path).items():
            merged.setdefault(key, value)
    return merged
