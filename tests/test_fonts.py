"""The book's CJK subset font holds every CJK character its sources use (no build needed)."""

from __future__ import annotations

import pytest

from book import fonts


@pytest.mark.parametrize("edition,subset", [("en", fonts.SUBSET), ("zh", fonts.SUBSET_ZH)])
def test_subset_covers_every_cjk_character_of_the_edition(edition, subset):
    have = fonts.subset_chars(subset)
    used = fonts.book_chars(edition=edition)
    assert used, "the book uses no Chinese? book_chars() found none"
    missing = "".join(sorted(used - have))
    assert not missing, (f"{missing!r} missing from {subset.name}; regenerate both subsets with "
                         "`python -m book.fonts NotoSansCJK-Regular.ttc`")


def test_english_subset_leaves_out_the_chinese_edition():
    """The English pages stay light: the characters only the Chinese edition uses are not in
    the English subset (so they are not downloaded there)."""
    only_zh = fonts.book_chars(edition="zh") - fonts.book_chars(edition="en")
    english = fonts.subset_chars(fonts.SUBSET)
    assert only_zh <= fonts.subset_chars(fonts.SUBSET_ZH)
    # fontTools keeps the closure of the layout features (a few brackets and forms): a handful
    extra = only_zh & english
    assert len(extra) <= 8, f"the English subset holds {len(extra)} Chinese-only characters"
    assert len(english) * 4 < len(fonts.subset_chars(fonts.SUBSET_ZH))


def test_subsets_are_small_and_licensed():
    assert fonts.SUBSET.stat().st_size < 200_000
    assert fonts.SUBSET_ZH.stat().st_size < 700_000
    assert "SIL OPEN FONT LICENSE" in (fonts.FONT_DIR / "OFL.txt").read_text(encoding="utf-8")


def test_css_and_plotly_name_the_font():
    from book import plotting

    static = fonts.ROOT / "assets" / "static"
    for css_file, subset in (("book.css", fonts.SUBSET), ("book-zh.css", fonts.SUBSET_ZH)):
        css = (static / css_file).read_text(encoding="utf-8")
        assert f'font-family: "{fonts.FAMILY}"' in css and subset.name in css
        assert fonts.UNICODE_RANGE.replace(", ", ",") in " ".join(css.split()).replace(", ", ",")
    assert plotting.FONT_FAMILY.startswith(f'"{fonts.FAMILY}"')


def test_cjk_chars_and_bad_input():
    assert fonts.cjk_chars("一碗 beef，") == {"一", "碗", "，"}
    with pytest.raises(TypeError, match="str"):
        fonts.cjk_chars(3)
    with pytest.raises(ValueError, match="'en' or 'zh'"):
        fonts.book_chars(edition="fr")
