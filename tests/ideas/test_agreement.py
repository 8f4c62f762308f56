"""Chapter 4's agreement checks (book.ideas.agreement), moved out of the notebook."""

from __future__ import annotations

import pytest

from book.ideas import agreement


def test_every_api_has_exactly_one_reading_that_matches():
    rows = agreement.mask_conventions()
    assert len(rows) == 7
    for r in rows:
        assert len(r["right"]) == 1, r
    by_api = {(r["where"], r["argument"]): r["right"][0] for r in rows}
    assert by_api[("this book", "`mask=`")] == "True = may attend"
    assert by_api[("`nn.MultiheadAttention`", "`attn_mask=` (bool)")] == "True = blocked"
    assert by_api[("`nn.MultiheadAttention`", "`key_padding_mask=`")] == "True = padding"
    assert by_api[("`F.scaled_dot_product_attention`", "`attn_mask=` (float)")].startswith(
        "0 = may attend")


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5)])
def test_max_differences_are_rounding(dtype, tol):
    diffs = agreement.max_differences(dtype)
    assert set(diffs) == set(agreement.MASK_KINDS)
    for d in diffs.values():
        assert 0 <= d["torch_mha"] < tol and 0 <= d["sdpa"] < tol


def test_bad_input():
    with pytest.raises(ValueError, match="dtype"):
        agreement.max_differences("float16")
    with pytest.raises(TypeError, match="seed"):
        agreement.mask_conventions(seed=1.5)
