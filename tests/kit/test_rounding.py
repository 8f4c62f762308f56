"""book.kit.rounding: the rounding tolerance grows with the dtype's eps and sqrt(reduction), and
a measured gap is worded "bit for bit" only at exactly 0.0."""

from __future__ import annotations

import math

import pytest
import torch

from book.kit import i18n, rounding


def test_tolerance_scales_with_eps_and_sqrt_of_the_reduction():
    t32 = rounding.tolerance(torch.float32, 64)
    assert t32 == pytest.approx(8 * torch.finfo(torch.float32).eps * 8)
    assert rounding.tolerance("float64", 64) == pytest.approx(t32 * 2.0**-29)
    assert rounding.tolerance(torch.float32, 256) == pytest.approx(2 * t32)
    assert rounding.tolerance(torch.float32, 64, scale=10.0) == pytest.approx(10 * t32)
    # the gap the issue measured between the GQA and RoPE encoders fits, with room
    assert 9.5e-7 < rounding.tolerance(torch.float32, 64) / 4


def test_agreement_words_the_measured_gap():
    i18n.set_language("en")
    assert rounding.agreement(0.0) == "bit for bit (max |difference| 0.0)"
    assert rounding.agreement(9.5e-7) == "up to rounding (max |difference| 1e-06)"
    i18n.set_language("zh")
    try:
        assert "逐位相同" in rounding.agreement(0)
        assert "2e-16" in rounding.agreement(2e-16)
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_tolerance_rejects_a_bad_reduction(bad):
    with pytest.raises(ValueError, match="number of terms"):
        rounding.tolerance(torch.float32, bad)


def test_bad_scale_and_gap():
    with pytest.raises(ValueError, match="scale"):
        rounding.tolerance(torch.float32, 4, scale=0.0)
    for gap in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="measured max"):
            rounding.agreement(gap)


def test_the_test_helpers_can_fail():
    from tolerance import assert_same_maths, assert_same_run

    x = torch.ones(4, dtype=torch.float32)
    one_ulp = x.clone()
    one_ulp[0] = torch.nextafter(one_ulp[0], torch.tensor(2.0))
    with pytest.raises(AssertionError, match="not bit-identical.*1 of 4"):
        assert_same_run(one_ulp, x, why="determinism")
    assert_same_maths(one_ulp, x, reduction=1, why="one ulp is rounding")
    with pytest.raises(AssertionError, match="rounding tolerance"):
        assert_same_maths(x + 1e-4, x, reduction=64, why="1e-4 is more than rounding")
    with pytest.raises(ValueError, match="why"):
        assert_same_run(x, x, why="")
