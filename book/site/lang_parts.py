"""Language of parts (WCAG 3.1.2): the written pages say which words are in the other language.

A screen reader reads a page in the voice of its ``<html lang>``; a Chinese example on an
English page (or an English sentence on a Chinese page) needs a ``lang`` of its own, or it is
spelt out letter by letter, or read as nothing. At the end of each HTML build every written page
is rewritten once (:func:`mark_build`, registered by book/site/sphinxext.py):

* English pages: every run of Chinese (Han or kana characters, with the CJK punctuation and
  the spaces inside the run) becomes ``<span lang="zh-Hans">…</span>``; where the run is all an
  element holds, the element gets the ``lang`` instead. Code blocks included: a screen reader
  reads a Chinese string in a code cell in Chinese too.
* Chinese pages: a text node in English (:func:`is_english`: no Han character, at least two
  Latin words of two letters or more) gets ``lang="en"`` the same way, from its first to its last
  character that is neither space nor CJK punctuation; in a text node that mixes the two, an
  English phrase of at least :data:`MIXED_MIN_WORDS` words does. Code, math and single terms
  (d_k, softmax, token) are left alone: they are read the same in both voices.

What already carries a ``lang`` (the language switch), what assistive technology never reads
(``aria-hidden``, ``<script>``, ``<style>``, ``<head>``) and math's TeX source are never touched.
The rewrite inserts attributes and spans into the page's source and changes nothing else, byte
for byte; a page rewritten twice is the page rewritten once.

Text that the page's scripts draw after loading (in-page explorers) is the scripts' to mark.
tests/test_browser_lang.py walks every page of both editions in Chromium with the same rules.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

ZH_LANG = "zh-Hans"
EN_LANG = "en"
# an English phrase inside a Chinese text node is marked from this many words (two letters or
# more each): "Attention Is All You Need" is, "d_k 的 softmax" and "GPT-2 small" are not
MIXED_MIN_WORDS = 3

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\U00020000-\U0002fa1f"
# CJK symbols and punctuation (、。「」《》…), full-width forms (，：（）！), the ellipsis
_CJK_PUNCT = "\u3000-\u303f\uff00-\uffef\u2026"
HAN = re.compile(f"[{_HAN}]")
# a Chinese run: optional opening punctuation, a Han character, then Han, punctuation, or spaces
# followed by more of the run
ZH_RUN = re.compile(f"[{_CJK_PUNCT}]*[{_HAN}]"
                    f"(?:[{_HAN}{_CJK_PUNCT}]|\\s+(?=[{_CJK_PUNCT}]*[{_HAN}]))*")
WORD = re.compile(r"[A-Za-z]{2,}")
# an English phrase inside Chinese text: Latin words joined by spaces and ASCII punctuation
_LATIN_TOKEN = r"[A-Za-z][A-Za-z0-9_'’\-]*"
EN_PHRASE = re.compile(f"{_LATIN_TOKEN}(?:[ \\t,.:;!?/()\"'’\\-]+[A-Za-z0-9][A-Za-z0-9_'’\\-]*)*"
                       r"[.!?]?")
_LEAD = re.compile(f"[\\s{_CJK_PUNCT}]*")
_TRAIL = re.compile(f"[\\s{_CJK_PUNCT}]*$")

# markup the rewrite never enters, in both editions; Chinese pages also leave code alone
_SKIP_BOTH = {"head", "script", "style", "template", "noscript", "svg", "math", "textarea"}
_SKIP_ZH = {"code", "pre", "kbd", "samp", "var"}
# elements whose content is text only: marked by their own lang, never by a span inside
_TEXT_ONLY = {"option", "title", "textarea"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
         "source", "track", "wbr"}
_RAW_TEXT = {"script", "style"}

_TOKEN = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<![^>]*>|<\?[^>]*>"
                    r"|</?[A-Za-z][^\s/>]*(?:\"[^\"]*\"|'[^']*'|[^'\">])*>", re.S)
_TAG_NAME = re.compile(r"</?([A-Za-z][^\s/>]*)")
_ATTR = re.compile(r"""([^\s=/>"']+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?""")
# markup the tokenizer could not read (a broken tag): the text around it is left as it is
_UNPARSED = re.compile(r"<[A-Za-z/!?]")
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);?")


def is_english(text: str) -> bool:
    """An English sentence or phrase: no Han character and two Latin words (two letters or more)."""
    return not HAN.search(text) and len(WORD.findall(text)) >= 2


def chinese_runs(text: str) -> list[tuple[int, int]]:
    """Where ``text`` (decoded) has Chinese: (start, end) of each run."""
    return [m.span() for m in ZH_RUN.finditer(text)]


def english_runs(text: str) -> list[tuple[int, int]]:
    """Where ``text`` (decoded, on a Chinese page) has English to mark: the whole node, trimmed
    of spaces and CJK punctuation, when it is English (:func:`is_english`); else each phrase of
    :data:`MIXED_MIN_WORDS` words or more."""
    if is_english(text):
        start = _LEAD.match(text).end()
        end = _TRAIL.search(text, start).start()
        return [(start, end)] if end > start else []
    if not HAN.search(text):
        return []
    return [m.span() for m in EN_PHRASE.finditer(text)
            if len(WORD.findall(m.group())) >= MIXED_MIN_WORDS]


def _attrs(tag: str) -> dict[str, str]:
    body = _TAG_NAME.sub("", tag, count=1).rstrip(">").rstrip("/")
    out = {}
    for name, value in _ATTR.findall(body):
        value = value[1:-1] if value[:1] in "\"'" and len(value) > 1 else value
        out[name.lower()] = html.unescape(value)
    return out


def _with_lang(tag: str, lang: str) -> str:
    end = -2 if tag.endswith("/>") else -1
    return f'{tag[:end]} lang="{lang}"{tag[end:]}'


def _decode(raw: str) -> tuple[str, list[int], list[int]]:
    """``raw`` text with its character references decoded, and for each decoded character the
    raw offsets where it starts and ends (a reference is never split)."""
    text, starts, ends = [], [], []
    pos = 0
    for m in _ENTITY.finditer(raw):
        for i in range(pos, m.start()):
            text.append(raw[i])
            starts.append(i)
            ends.append(i + 1)
        decoded = html.unescape(m.group())
        for ch in decoded:
            text.append(ch)
            starts.append(m.start())
            ends.append(m.end())
        pos = m.end()
    for i in range(pos, len(raw)):
        text.append(raw[i])
        starts.append(i)
        ends.append(i + 1)
    return "".join(text), starts, ends


class _Element:
    __slots__ = ("name", "skip", "index", "text_only")

    def __init__(self, name: str, skip: bool, index: int, text_only: bool):
        self.name, self.skip, self.index, self.text_only = name, skip, index, text_only


def mark(page: str, edition: str) -> str:
    """``page`` (a whole HTML page or a fragment) with its parts in the other language marked,
    for a page of ``edition`` ("en" or "zh")."""
    if edition not in ("en", "zh"):
        raise ValueError(f"unknown edition {edition!r}: 'en' or 'zh'")
    lang = ZH_LANG if edition == "en" else EN_LANG
    runs = chinese_runs if edition == "en" else english_runs
    skip_tags = _SKIP_BOTH | (_SKIP_ZH if edition == "zh" else set())

    out: list[str] = []
    stack: list[_Element] = []
    # the element whose start tag came just before the current text (its only child so far),
    # and that text, wholly in the other language, waiting to see whether the element ends next
    opened: _Element | None = None
    pending: tuple[_Element, int, str] | None = None

    def settle(closing: str | None) -> None:
        """Decide the pending text: lang on its element when that element ends now, else a span."""
        nonlocal pending
        if pending is None:
            return
        element, index, wrapped = pending
        if closing == element.name:
            out[element.index] = _with_lang(out[element.index], lang)
        elif not element.text_only:
            out[index] = wrapped
        pending = None

    def text(raw: str) -> None:
        nonlocal pending
        here = stack[-1] if stack else None
        if not raw or (here is not None and here.skip) or _UNPARSED.search(raw):
            out.append(raw)
            return
        decoded, starts, ends = _decode(raw)
        found = runs(decoded)
        if not found:
            out.append(raw)
            return
        pieces, pos = [], 0
        for a, b in found:
            ra, rb = starts[a], ends[b - 1]
            pieces += [raw[pos:ra], f'<span lang="{lang}">', raw[ra:rb], "</span>"]
            pos = rb
        wrapped = "".join(pieces) + raw[pos:]
        whole = len(found) == 1 and not decoded[:found[0][0]].strip() \
            and not decoded[found[0][1]:].strip()
        if here is not None and here.text_only:
            if whole:
                pending = (here, len(out), wrapped)
            out.append(raw)
        elif whole and opened is here and here is not None:
            pending = (here, len(out), wrapped)
            out.append(raw)
        else:
            out.append(wrapped)

    pos = 0
    while pos < len(page):
        m = _TOKEN.search(page, pos)
        if m is None:
            text(page[pos:])
            break
        if m.start() > pos:
            text(page[pos:m.start()])
        tok = m.group()
        pos = m.end()
        if tok.startswith(("<!", "<?")):
            settle(None)
            opened = None
            out.append(tok)
            continue
        name = _TAG_NAME.match(tok).group(1).lower()
        if tok.startswith("</"):
            settle(name)
            opened = None
            out.append(tok)
            for i in range(len(stack) - 1, -1, -1):
                if stack[i].name == name:
                    del stack[i:]
                    break
            continue
        settle(None)
        opened = None
        out.append(tok)
        if name in _VOID or tok.endswith("/>"):
            continue
        attrs = _attrs(tok)
        parent_skip = bool(stack) and stack[-1].skip
        # the page's own language (<html lang>) is what the marks differ from
        own_lang = name != "html" and ("lang" in attrs or "xml:lang" in attrs)
        skip = (parent_skip or name in skip_tags or own_lang
                or attrs.get("aria-hidden") == "true"
                or "math" in attrs.get("class", "").split())
        element = _Element(name, skip, len(out) - 1, name in _TEXT_ONLY)
        stack.append(element)
        opened = element
        if name in _RAW_TEXT:   # its content is not markup: copied up to its end tag
            end = re.compile(f"</{name}", re.I).search(page, pos)
            stop = len(page) if end is None else end.start()
            out.append(page[pos:stop])
            pos = stop
    settle(None)
    return "".join(out)


def mark_file(path: Path, edition: str) -> bool:
    """Rewrite one written page; True when it changed."""
    text = path.read_text(encoding="utf-8")
    new = mark(text, edition)
    if new != text:
        path.write_text(new, encoding="utf-8")
        return True
    return False


def mark_build(app, exception) -> None:
    """``build-finished``: every HTML page of the build, in the build's edition."""
    if exception is not None or app.builder.format != "html":
        return
    from book.site import editions

    edition = editions.edition_of(app.config.language)
    for page in sorted(Path(app.outdir).rglob("*.html")):
        if "_static" not in page.relative_to(app.outdir).parts:
            mark_file(page, edition)
