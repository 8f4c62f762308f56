"""The book's own CJK web font: a subset of Noto Sans SC holding only the characters it uses.

Without a system CJK font (many Linux and Windows installs, most CI images) every Chinese token
would render as a box. The book ships ``assets/static/fonts/NotoSansSC-book.woff2`` (SIL Open
Font License, ``assets/static/fonts/OFL.txt``), which the page CSS and the plotly template name
first, for the CJK ranges only (``unicode-range``), so Latin text keeps the theme's font.

The Chinese edition uses far more characters (its whole prose): ``NotoSansSC-zh.woff2`` holds
them all (``book-zh.css``, added by book/site/editions.py), so English pages stay light; at the end
of the Chinese build each page but the search page gets a subset of it holding only its own
characters (book/site/page_fonts.py). Regenerate both after adding Chinese text anywhere in the
book::

    python -m book.site.fonts /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc

(Debian's ``fonts-noto-cjk``; ``apt-get download fonts-noto-cjk && dpkg-deb -x`` gets the file
without installing it). fontTools and brotli (requirements-dev.txt) do the subsetting.
"""

from __future__ import annotations

import logging
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FONT_DIR = ROOT / "assets" / "static" / "fonts"
SUBSET = FONT_DIR / "NotoSansSC-book.woff2"      # the English edition's CJK characters
SUBSET_ZH = FONT_DIR / "NotoSansSC-zh.woff2"     # every CJK character of both editions
FAMILY = "Book Noto Sans SC"
# CJK radicals … unified ideographs, CJK symbols and punctuation, compatibility ideographs,
# halfwidth and fullwidth forms: what the subset covers (the CSS unicode-range says the same).
CJK_RANGES = ((0x2E80, 0x2FDF), (0x3000, 0x303F), (0x3040, 0x30FF), (0x3400, 0x4DBF),
              (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFFEF))
UNICODE_RANGE = ", ".join(f"U+{a:04X}-{b:04X}" for a, b in CJK_RANGES)
_CJK = re.compile("[" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in CJK_RANGES) + "]")
# Where the book's text lives: the chapters (prose, code, outputs are computed from book/), the
# package (figure strings, vocabularies, exercise text) and the pages.
SOURCES = ("chapters/*.ipynb", "chapters/*.md", "book/**/*.py", "*.md", "assignments/**/*.py",
           "assignments/**/*.ipynb")
STRINGS = "book/strings/*.toml"          # figure strings: English ones, Chinese ones
# the Chinese edition's prose, its glossary page's tables (the English page only links them)
# and its site chrome
ZH_SOURCES = ("locale/zh_CN/LC_MESSAGES/**/*.po", "locale/zh_CN/code/*.po", "locale/terms.toml",
              "locale/zh_CN/theme.toml")
# Noto Sans CJK collections hold JP, KR, SC, TC, HK faces; pick the simplified Chinese one.
SC_NAME = "Noto Sans CJK SC"


def cjk_chars(text: str) -> set[str]:
    """The CJK characters of ``text`` (the ranges the subset covers)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return set(_CJK.findall(text))


def _english_strings(path: Path) -> str:
    """The English texts of a string-table file (book/strings/*.toml)."""
    with path.open("rb") as handle:
        table = tomllib.load(handle)
    return "\n".join(str(entry.get("en", "")) for entry in table.values()
                     if isinstance(entry, dict))


def book_chars(root: Path = ROOT, edition: str = "en") -> set[str]:
    """Every CJK character the ``edition`` ("en" or "zh") shows: the English edition's
    sources, and for Chinese also its catalogues and the table's Chinese strings."""
    if edition not in ("en", "zh"):
        raise ValueError(f"edition must be 'en' or 'zh', not {edition!r}")
    root = Path(root)
    chars: set[str] = set()
    for pattern in SOURCES:
        for path in sorted(root.glob(pattern)):
            chars |= cjk_chars(path.read_text(encoding="utf-8"))
    for path in sorted(root.glob(STRINGS)):
        chars |= cjk_chars(path.read_text(encoding="utf-8") if edition == "zh"
                           else _english_strings(path))
    # the English glossary page's table: each term's Chinese form and English note
    # (book/site/terms.py)
    from book.site import terms

    chars |= cjk_chars(" ".join(t.zh + " " + t.note_en for t in terms.terms()))
    if edition == "zh":
        for pattern in ZH_SOURCES:
            for path in sorted(root.glob(pattern)):
                chars |= cjk_chars(path.read_text(encoding="utf-8"))
    return chars


def subset_chars(path: Path = SUBSET) -> set[str]:
    """The characters the shipped subset has glyphs for."""
    from fontTools.ttLib import TTFont

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no font at {path}; run `python -m book.site.fonts SOURCE.ttc`")
    with TTFont(path) as font:
        return {chr(c) for c in font.getBestCmap()}


def _sc_font_number(source: Path) -> int:
    from fontTools.ttLib import TTCollection

    if source.suffix.lower() not in {".ttc", ".otc"}:
        return 0
    collection = TTCollection(str(source), lazy=True)
    for i, font in enumerate(collection.fonts):
        if font["name"].getDebugName(1) == SC_NAME:
            return i
    raise ValueError(f"{source} holds no '{SC_NAME}' face; pass NotoSansCJK-Regular.ttc "
                     "(Debian's fonts-noto-cjk) or NotoSansSC-Regular.otf")


def quiet_fonttools() -> None:
    """fontTools logs every step of a subset at INFO (the tables it prunes, the glyph names and
    ids it keeps: ~40 lines a font, ~700 for the Chinese edition's pages), and a process whose
    root logger another library set to INFO prints them all: a Sphinx build is one (the theme's
    code styles, a11y_pygments, call ``logging.basicConfig(level=INFO)`` when imported). Its
    warnings and errors still print."""
    logging.getLogger("fontTools").setLevel(logging.WARNING)


def woff2_subset(source: Path, chars: set[str], *, font_number: int = 0,
                 layout_features: list[str] | None = None, missing_hint: str | None = None
                 ) -> bytes:
    """The bytes of a woff2 of ``source`` (its face ``font_number``) holding ``chars``, with
    the OpenType ``layout_features`` (default: all); the same bytes for the same input. With
    ``missing_hint``, characters ``source`` has no glyph for raise a ValueError naming them
    and ending in the hint; without, they are left out."""
    import io

    from fontTools import subset

    quiet_fonttools()   # here, so that the pool's worker processes run it too
    options = subset.Options()
    options.flavor = "woff2"
    options.font_number = font_number
    options.layout_features = list(layout_features or ["*"])
    options.name_IDs = ["*"]
    options.hinting = False
    options.desubroutinize = True
    font = subset.load_font(str(source), options)  # keeps head.modified: reproducible
    missing = set(chars) - {chr(c) for c in font.getBestCmap()}
    if missing and missing_hint is not None:
        raise ValueError(f"{''.join(sorted(missing))!r} missing from {Path(source).name}: "
                         f"{missing_hint}")
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in chars))
    subsetter.subset(font)
    out = io.BytesIO()
    subset.save_font(font, out, options)
    return out.getvalue()


def make_subset(source: Path, target: Path = SUBSET, chars: set[str] | None = None) -> Path:
    """Write a woff2 of ``source`` (a Noto Sans CJK collection or a Noto Sans SC font) holding
    ``chars`` (default: every CJK character the book uses)."""
    source = Path(source)
    if not source.is_file():
        raise FileNotFoundError(f"source font {source} not found; install or download "
                                "Debian's fonts-noto-cjk (NotoSansCJK-Regular.ttc)")
    chars = book_chars() if chars is None else set(chars)
    if not chars:
        raise ValueError("no characters to keep: pass chars or add Chinese text to the book")
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(woff2_subset(source, chars, font_number=_sc_font_number(source)))
    return target


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    for edition, target in (("en", SUBSET), ("zh", SUBSET_ZH)):
        target = make_subset(Path(argv[0]), target, book_chars(edition=edition))
        print(f"wrote {target.relative_to(ROOT)}: {len(subset_chars(target))} characters, "
              f"{target.stat().st_size / 1024:.1f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
