"""Per-page CJK fonts for the Chinese edition: each page loads only the characters it shows.

The Chinese edition's subset (``NotoSansSC-zh.woff2``, book/site/fonts.py) holds every character of
the whole edition, ~260 KB that every Chinese page would download. At the end of the Chinese
build (a ``build-finished`` hook that book/site/sphinxext.py registers) :func:`write_page_fonts`
subsets it again
for each page, to the characters that page can show (:func:`page_chars`), writes the result
to ``_static/fonts/NotoSansSC-page-<hash of its bytes>.woff2`` (pages with the same characters
share one file; a rebuild writes the same bytes) and points the page's face for
"Book Noto Sans SC" at it: its ``book-zh.css`` link becomes an inline ``@font-face``. The
search page lists excerpts of every page and keeps the whole subset.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import html
import json
import os
import posixpath
import re
from pathlib import Path

from book.site import fonts

PAGE_FONT_PREFIX = "NotoSansSC-page-"
SEARCH_PAGE = "search.html"
# The Chinese edition's stylesheet that names the whole subset, and the face written instead.
_EDITION_CSS = re.compile(r'<link[^>]*\bhref="[^"]*_static/book-zh\.css[^"]*"[^>]*>')
_PAGE_FACE = re.compile(r'<style id="book-page-font">.*?</style>', re.S)
_PAGE_FACE_URL = re.compile(r'<style id="book-page-font">[^<]*?url\("([^"]+)"\)')
_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_SCRIPT_SRC = re.compile(r'<script[^>]*\bsrc="([^"]+)"')
_HTML_LANG = re.compile(r'<html[^>]*\blang="([^"]+)"')
# Words that scripts write on a page at run time, beyond its HTML: the copy button's tooltips
# in the page's language (copybutton.js) and, on a page opened from a search result, the "Hide
# Search Matches" link of sphinx_highlight.js in translations.js's words. (The other scripts
# write none: the theme's words are in the HTML; the search index is listed on the search page
# alone, search_as_you_type being off.)
COPY_BUTTON, TRANSLATIONS = "copybutton.js", "translations.js"
TRANSLATED = {"sphinx_highlight.js": ("Hide Search Matches",)}

# Positioning only (no glyph added): kerning and the half-width trimming of adjacent CJK
# punctuation that Chromium applies (text-spacing-trim). The substitutions are left out: a
# zh-CN page uses none (the other languages' locl forms, vertical and width variants, which
# the edition subset carries, would double the glyphs).
LAYOUT_FEATURES = ["kern", "halt", "palt"]


def _unescape(text: str) -> str:
    """HTML entities and the ``\\uXXXX`` escapes of figure JSON as the characters they are."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), html.unescape(text))


def _scripts(page: Path, text: str) -> dict[str, Path]:
    """The local scripts a page loads, by file name."""
    found = {}
    for src in _SCRIPT_SRC.findall(text):
        src = src.split("?", 1)[0].split("#", 1)[0]
        if "://" not in src and (page.parent / src).is_file():
            found[posixpath.basename(src)] = page.parent / src
    return found


def script_words(page: Path, text: str) -> str:
    """What the scripts of ``page`` (HTML ``text``) write on it besides its HTML."""
    scripts = _scripts(Path(page), text)
    words = []
    lang = _HTML_LANG.search(text)
    if COPY_BUTTON in scripts and lang:
        messages = re.search(r"'" + re.escape(lang.group(1)) + r"'\s*:\s*\{([^}]*)\}",
                             scripts[COPY_BUTTON].read_text(encoding="utf-8"))
        words.append(messages.group(1) if messages else "")
    if TRANSLATIONS in scripts:
        table = scripts[TRANSLATIONS].read_text(encoding="utf-8")
        table = json.loads(table[table.index("{"):table.rindex("}") + 1])["messages"]
        for name, keys in TRANSLATED.items():
            if name in scripts:
                words += [str(table.get(key, "")) for key in keys]
    return "\n".join(words)


def shown_text(page: Path) -> str:
    """Everything ``page`` can show: its HTML (text, attributes such as tooltips, the theme's
    own words, its figures' JSON with their hover text and every state, ``\\uXXXX`` escapes
    and entities unescaped) and what its scripts write (:func:`script_words`)."""
    text = Path(page).read_text(encoding="utf-8")
    return _unescape(text) + "\n" + script_words(page, text)


def page_chars(page: Path) -> set[str]:
    """The CJK characters ``page`` can show (see :func:`shown_text`)."""
    return fonts.cjk_chars(shown_text(page))


def page_font(page: Path) -> str | None:
    """The font file (relative to the page) that a page's own face names, or None."""
    found = _PAGE_FACE_URL.search(Path(page).read_text(encoding="utf-8"))
    return found.group(1) if found else None


def subset_bytes(source: Path, chars: set[str]) -> bytes:
    """A woff2 of ``source`` holding exactly ``chars`` (the same bytes for the same input).
    Raises ValueError naming the characters ``source`` has no glyph for."""
    return fonts.woff2_subset(source, chars, layout_features=LAYOUT_FEATURES,
                              missing_hint="regenerate it with "
                              "`python -m book.site.fonts NotoSansCJK-Regular.ttc`")


def _face(url: str) -> str:
    return (f'<style id="book-page-font">@font-face {{ font-family: "{fonts.FAMILY}"; '
            f'src: url("{url}") format("woff2"); font-display: swap; '
            f"unicode-range: {fonts.UNICODE_RANGE}; }}</style>")


def _with_face(text: str, face: str) -> str:
    """The page with its book-zh.css link (a first build) or the face a former build wrote (a
    rebuild leaves unchanged pages as they were) replaced by ``face``."""
    text = _EDITION_CSS.sub(lambda _: face, text, count=1)
    return _PAGE_FACE.sub(lambda _: face, text)


def _font_name(data: bytes) -> str:
    return f"{PAGE_FONT_PREFIX}{hashlib.sha256(data).hexdigest()[:16]}.woff2"


def _intact(path: Path) -> bool:
    """Is ``path`` a page font as written (its name the hash of its bytes)?"""
    return path.is_file() and _font_name(path.read_bytes()) == path.name


def lists_every_page(rel: str, text: str) -> bool:
    """Does the page show other pages' text (the search page's excerpts, or results typed in
    the theme's search field when its search-as-you-type is on)? It keeps the whole subset."""
    return rel == SEARCH_PAGE or "search_as_you_type = true" in text


def _subsets(source: Path, todo: dict[str, tuple[str, set[str]]]) -> dict[str, bytes]:
    """key -> :func:`subset_bytes` of each ``(page, characters)`` of ``todo``, one process per
    core (~1 s each, 18 pages: the Chinese build's last step, while the other core idles); a
    character missing from ``source`` raises ValueError naming the page."""
    if len(todo) < 2 or (os.cpu_count() or 1) < 2:
        jobs = [(key, page, subset_bytes, (source, chars)) for key, (page, chars) in todo.items()]
        return {key: _named(page, fn, args) for key, page, fn, args in jobs}
    workers = min(len(todo), os.cpu_count() or 1)
    with concurrent.futures.ProcessPoolExecutor(workers) as pool:
        futures = {key: (page, pool.submit(subset_bytes, source, chars))
                   for key, (page, chars) in todo.items()}
        return {key: _named(page, future.result) for key, (page, future) in futures.items()}


def _named(page: str, fn, args=()):
    try:
        return fn(*args)
    except ValueError as error:
        raise ValueError(f"{page}: {error}") from None


def write_page_fonts(html_root: Path, source: Path | None = None,
                     cache: Path | None = None) -> dict[str, str]:
    """Give every page of ``html_root`` but the search page (:func:`lists_every_page`) a font
    of its own characters (see the module's docstring); files of earlier builds that no page
    names are removed. Returns page (relative path) -> font file name.

    ``cache`` (a JSON file outside the output) remembers which file holds which characters of
    which source, so that a rebuild subsets only the pages whose characters changed."""
    from fontTools import version as fonttools_version

    html_root = Path(html_root)
    font_dir = html_root / "_static" / "fonts"
    source = Path(source) if source else font_dir / fonts.SUBSET_ZH.name
    recipe = hashlib.sha256(source.read_bytes())
    recipe.update(f"fontTools {fonttools_version} {LAYOUT_FEATURES}".encode())
    known = json.loads(cache.read_text(encoding="utf-8")) if cache and cache.is_file() else {}
    names: dict[str, str] = {}  # recipe + characters -> font file, this build
    used: dict[str, str] = {}
    pages = []   # (page, rel, text, key)
    todo: dict[str, tuple[str, set[str]]] = {}   # key -> (first page, characters) to subset
    for page in sorted(html_root.rglob("*.html")):
        rel = page.relative_to(html_root)
        if "_static" in rel.parts:
            continue
        text = page.read_text(encoding="utf-8")
        if lists_every_page(rel.as_posix(), text):
            continue
        if not (_EDITION_CSS.search(text) or _PAGE_FACE.search(text)):
            raise ValueError(f"{rel}: names neither book-zh.css nor a page font to replace")
        chars = page_chars(page)
        key = recipe.copy()
        key.update("".join(sorted(chars)).encode())
        key = key.hexdigest()
        pages.append((page, rel, text, key))
        name = known.get(key)
        if key not in todo and not (name and _intact(font_dir / name)):
            todo[key] = (rel.as_posix(), chars)
        elif name:
            names[key] = name
    for key, data in _subsets(source, todo).items():
        name = names[key] = _font_name(data)
        (font_dir / name).write_bytes(data)
    for page, rel, text, key in pages:
        name = used[rel.as_posix()] = names[key]
        url = posixpath.relpath(f"_static/fonts/{name}", rel.parent.as_posix())
        new = _with_face(text, _face(url))
        if new != text:
            page.write_text(new, encoding="utf-8")
    for stale in font_dir.glob(f"{PAGE_FONT_PREFIX}*.woff2"):
        if stale.name not in used.values():
            stale.unlink()
    if cache:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(names, indent=1, sort_keys=True), encoding="utf-8")
    return used


def page_subsets(app, exception) -> None:
    """``build-finished`` (Chinese edition, after the captions are translated): per-page fonts."""
    from book.site.editions import edition_of

    if exception is not None or app.builder.format != "html":
        return
    if edition_of(app.config.language) != "zh":
        return
    write_page_fonts(Path(app.outdir), cache=Path(app.doctreedir) / "book-page-fonts.json")
