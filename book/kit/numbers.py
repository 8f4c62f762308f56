"""Numbers as a reader of each language writes them.

English groups large counts by thousands (22.6 million, 6.44 billion); Chinese by ten
thousands and hundred millions (wan and yi: 2257 wan, 64.4 yi), never by millions or billions
spelled in Chinese. A ratio "k times fewer" is written as a fraction in Chinese (1/5.3, about
19 %), never as "k times less". Each function takes the language from :mod:`book.kit.i18n`
unless it is given.
"""
from __future__ import annotations

import math

from book.kit import i18n, validate

_EN_UNITS = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"))
_ZH_UNITS = ((1e12, "万亿"), (1e8, "亿"), (1e4, "万"))


def _significant(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits, but never fewer than its integer digits,
    and without a trailing ``.0``."""
    integer_digits = len(str(int(abs(value)))) if abs(value) >= 1 else 1
    decimals = max(digits - integer_digits, 0)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def large(count: float, digits: int = 3, language: str | None = None) -> str:
    """A large count in words: ``large(22_566_000)`` is "22.6 million" in English and
    2257 wan in Chinese; ``large(6.44e9)`` "6.44 billion" / 64.4 yi (tests/kit/test_numbers.py
    has the characters). Below a million (English) or ten thousand (Chinese) the number is
    written out in full."""
    count = validate.real("count", count, low=0)
    digits = validate.integer("digits", digits, low=1, high=15)
    language = i18n.check_language(language or i18n.language())
    units = _ZH_UNITS if language == "zh" else _EN_UNITS
    for size, name in units:
        if count >= size:
            return f"{_significant(count / size, digits)} {name}"
    if language == "zh":
        return _significant(count, digits)
    return f"{count:,.0f}" if count >= 1000 else _significant(count, digits)


def fraction(ratio: float, digits: int = 2, language: str | None = None) -> str:
    """What is left when something is ``ratio`` times smaller: "1/5.3 (19 %)" in English,
    the same with "about" in Chinese — the way to say "5.3 times fewer" in Chinese."""
    ratio = validate.real("ratio", ratio, low=0)
    if ratio == 0 or not math.isfinite(ratio):
        raise ValueError(f"fraction needs a finite ratio > 0, got {ratio!r}")
    language = i18n.check_language(language or i18n.language())
    share = 100 / ratio
    pct = f"{share:.0f}" if share >= 1 else f"{share:.1g}"
    if language == "zh":
        return f"1/{_significant(ratio, digits)}（约 {pct}%）"
    return f"1/{_significant(ratio, digits)} ({pct} %)"


def shown(value: float, decimals: int = 1) -> float:
    """``value`` as the page prints it with ``decimals`` decimals (``f"{value:.1f}"``): the
    number a reader compares with a calculator. 61.14 and 57.66 show as 61.1 and 57.7."""
    value = validate.real("value", value)
    decimals = validate.integer("decimals", decimals, low=0, high=15)
    return float(f"{value:.{decimals}f}")


def shown_gap(a: float, b: float, decimals: int = 1) -> float:
    """|a − b| as a reader computes it from the two numbers the page shows (each rounded to
    ``decimals``), so that "57.7 %, 3.4 points from 61.1" adds up: the gap of the unrounded
    values (3.48, shown 3.5) would not."""
    decimals = validate.integer("decimals", decimals, low=0, high=15)
    return shown(abs(shown(a, decimals) - shown(b, decimals)), decimals)
