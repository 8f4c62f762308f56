"""Every string that Python draws for a reader — figure titles, axis labels, legends, hover
text, slider and menu labels, exercise messages and hints — in English and Chinese.

One table, keyed by message id: ``book/strings/<section>.toml`` holds the ids of one section
(``common`` for the shared helpers, ``ch06`` for chapter 6's presentation module), each an
entry with both languages::

    [head_title]                 # the id is "ch06.head_title"
    en = "Head {head}"
    zh = "第 {head} 个头"

``tr("ch06.head_title", head=2)`` gives the text in the book's language. The build chooses the
language: the Chinese edition's Sphinx exports ``BOOK_LANG=zh`` (book/site/editions.py), its kernels
inherit it and ``book.setup()`` reads it; a reader in Jupyter may call ``book.setup(language=
"zh")``. Placeholders are ``str.format`` fields and must be the same in both languages
(tests/kit/test_i18n.py checks the table: every id in both languages, same fields, every id the
code asks for present).
"""
from __future__ import annotations

import os
import string
import tomllib
from functools import cache
from pathlib import Path

LANGUAGES = ("en", "zh")
STRINGS_DIR = Path(__file__).resolve().parents[1] / "strings"
_language = "en"


def check_language(language: str) -> str:
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r} "
                         "(set BOOK_LANG=zh or call book.setup(language='zh') for Chinese)")
    return language


def set_language(language: str | None = None) -> str:
    """Use ``language`` ("en" or "zh"); None reads BOOK_LANG (the build sets it), default
    English. Returns the language now in use."""
    global _language
    if language is None:
        language = os.environ.get("BOOK_LANG", "") or "en"
    _language = check_language(language)
    return _language


def language() -> str:
    """The language figures and messages are drawn in now ("en" or "zh")."""
    return _language


@cache
def table() -> dict[str, dict[str, str]]:
    """Every message id -> {"en": ..., "zh": ...}, from book/strings/*.toml."""
    entries: dict[str, dict[str, str]] = {}
    for path in sorted(STRINGS_DIR.glob("*.toml")):
        with path.open("rb") as handle:
            section = tomllib.load(handle)
        for key, texts in section.items():
            if not isinstance(texts, dict):
                raise ValueError(f"{path.name}: [{key}] must be a table with en = ... and "
                                 f"zh = ..., not {type(texts).__name__}")
            entries[f"{path.stem}.{key}"] = texts
    return entries


def fields(text: str) -> set[str]:
    """The str.format field names of ``text`` (``{head}``, ``{value:.2f}`` -> head, value)."""
    return {name.split(".")[0].split("[")[0]
            for _, name, _, _ in string.Formatter().parse(text) if name}


def tr(msg_id: str, /, **values) -> str:
    """The message ``msg_id`` in the current language, its fields filled from ``values``."""
    entries = table()
    if msg_id not in entries:
        section = msg_id.split(".")[0]
        raise KeyError(f"no message {msg_id!r} in the string table: add it to "
                       f"book/strings/{section}.toml with en = ... and zh = ...")
    text = entries[msg_id].get(_language) or entries[msg_id]["en"]
    try:
        return text.format(**values) if values or fields(text) else text
    except KeyError as missing:
        raise KeyError(f"message {msg_id!r} needs the field {missing}: pass "
                       + ", ".join(f"{name}=..." for name in sorted(fields(text)))) from None


def pick(en, zh):
    """The value for the current language, for the few things that are not strings (e.g. a
    list of token glosses)."""
    return zh if _language == "zh" else en
