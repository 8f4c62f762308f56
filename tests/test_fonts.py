"""The book's CJK subset font holds every CJK character its sources use (no build needed)."""

from __future__ import annotations

import pytest

from book import fonts


def test_subset_covers_every_cjk_character_of_the_book():
    have = fonts.subset_chars()
    used = fonts.book_chars()
    assert used, "the book uses no Chinese? book_chars() found none"
    missing = "".join(sorted(used - have))
    assert not missing, (f"{missing!r} missing from {fonts.SUBSET.name}; regenerate it with "
                         "`python -m book.fonts NotoSansCJK-Regular.ttc`")


def test_subset_is_small_and_licensed():
    assert fonts.SUBSET.stat().st_size < 200_000
    assert "SIL OPEN FONT LICENSE" in (fonts.FONT_DIR / "OFL.txt").read_text(encoding="utf-8")


def test_css_and_plotly_name_the_font():
    from book import plotting

    css = (fonts.ROOT / "assets" / "static" / "book.css").read_text(encoding="utf-8")
    assert f'font-family: "{fonts.FAMILY}"' in css and fonts.SUBSET.name in css
    assert fonts.UNICODE_RANGE.replace(", ", ",") in " ".join(css.split()).replace(", ", ",")
    assert plotting.FONT_FAMILY.startswith(f'"{fonts.FAMILY}"')


def test_cjk_chars_and_bad_input():
    assert fonts.cjk_chars("一碗 beef，") == {"一", "碗", "，"}
    with pytest.raises(TypeError, match="str"):
        fonts.cjk_chars(3)
