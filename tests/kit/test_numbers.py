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
