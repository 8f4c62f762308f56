"""Large counts and "k times fewer" as each language writes them (book/kit/numbers.py)."""

from __future__ import annotations

import pytest

from book.kit import numbers


@pytest.mark.parametrize(("count", "en", "zh"), [
    (22_566_144, "22.6 million", "2257 万"),
    (6_442_450_944, "6.44 billion", "64.4 亿"),
    (48_000, "48,000", "4.8 万"),
    (2_000_000_000_000, "2 trillion", "2 万亿"),
    (512, "512", "512"),
])
def test_large_counts(count, en, zh):
    assert numbers.large(count, language="en") == en
    assert numbers.large(count, language="zh") == zh


def test_no_mixed_units_in_chinese():
    for count in (1.5e5, 2.26e7, 6.4e9, 3e11):
        text = numbers.large(count, language="zh")
        assert "百万" not in text and "十亿" not in text and "千" not in text, text


def test_fraction_instead_of_times_fewer():
    assert numbers.fraction(5.3, language="zh") == "1/5.3（约 19%）"
    assert numbers.fraction(5.3, language="en") == "1/5.3 (19 %)"
    assert numbers.fraction(16, language="zh") == "1/16（约 6%）"


@pytest.mark.parametrize("bad", [-1, float("nan"), "many"])
def test_careless_input_is_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        numbers.large(bad)
    with pytest.raises((ValueError, TypeError)):
        numbers.fraction(bad)
    with pytest.raises(ValueError, match="language"):
        numbers.large(10, language="fr")


def test_a_gap_is_the_difference_of_the_numbers_shown():
    # chapter 6's 61.14 % and 57.66 %: shown as 61.1 and 57.7, which a reader subtracts to 3.4
    # (the unrounded gap, 3.48, would print as 3.5)
    assert numbers.shown(61.14) == 61.1 and numbers.shown(57.66) == 57.7
    assert numbers.shown_gap(61.14, 57.66) == 3.4
    assert f"{61.14 - 57.66:.1f}" == "3.5"
    # chapter 11's 91.64 and 90.76: 91.6 and 90.8 on the page, 0.8 apart (not 0.9)
    assert numbers.shown_gap(90.76, 91.64) == 0.8
    assert numbers.shown_gap(1.234, 1.0, decimals=2) == 0.23
    assert numbers.shown(2.5, decimals=0) == 2.0   # as f"{2.5:.0f}" prints it


@pytest.mark.parametrize("bad", [float("nan"), "3.4", None])
def test_shown_refuses_what_is_not_a_number(bad):
    with pytest.raises((ValueError, TypeError)):
        numbers.shown(bad)
    with pytest.raises((ValueError, TypeError)):
        numbers.shown_gap(1.0, bad)
    with pytest.raises(ValueError):
        numbers.shown(1.0, decimals=-1)
