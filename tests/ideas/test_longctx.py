"""book.ideas.longctx: the banded window equals the masked full one; memory and exponents."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_same_maths

from book.ideas import longctx


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(1, 80), window=st.integers(0, 20), causal=st.booleans(),
       block=st.one_of(st.none(), st.integers(1, 32)), heads=st.integers(1, 3))
def test_banded_equals_masked_full(n, window, causal, block, heads):
    g = torch.Generator().manual_seed(n * 100 + window)
    q, k, v = (torch.randn(2, heads, n, 8, generator=g, dtype=torch.float64) for _ in range(3))
    banded = longctx.banded_attention(q, k, v, window, causal=causal, block=block)
    masked = longctx.masked_window_attention(q, k, v, window, causal=causal)
    assert banded.shape == masked.shape
    assert_same_maths(banded, masked, reduction=max(n, 8),
                      why="banded blocks vs the full masked computation: same maths")


def test_full_attention_matches_sdpa():
    q, k, v = (torch.randn(2, 3, 10, 4, dtype=torch.float64) for _ in range(3))
    torch.testing.assert_close(longctx.full_attention(q, k, v),
                               torch.nn.functional.scaled_dot_product_attention(q, k, v))


def test_window_covering_everything_is_full_attention():
    q, k, v = (torch.randn(1, 1, 12, 4, dtype=torch.float64) for _ in range(3))
    torch.testing.assert_close(longctx.banded_attention(q, k, v, 11),
                               longctx.full_attention(q, k, v))


def test_window_mask():
    m = longctx.window_mask(5, 1)
    assert m.sum() == 5 + 2 * 4 and m[0, 0] and not m[0, 2]
    assert not longctx.window_mask(5, 2, causal=True)[1, 2]


def test_banded_memory_grows_linearly_full_quadratically():
    def cost(fn, n):
        q = torch.randn(1, 1, n, 16)
        return longctx.peak_memory(lambda: fn(q, q, q))

    full = [cost(longctx.full_attention, n) for n in (256, 512, 1024)]
    banded = [cost(lambda q, k, v: longctx.banded_attention(q, k, v, 16), n)
              for n in (256, 512, 1024)]
    assert longctx.fit_exponent([256, 512, 1024], full) == pytest.approx(2.0, abs=0.2)
    assert longctx.fit_exponent([256, 512, 1024], banded) == pytest.approx(1.0, abs=0.2)
    assert banded[-1] < full[-1] / 4


def test_fit_exponent():
    assert longctx.fit_exponent([1, 2, 4], [3, 12, 48]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="positive"):
        longctx.fit_exponent([0, 1], [1, 1])


@pytest.mark.parametrize("args,err,msg", [
    ((torch.ones(3, 4), torch.ones(3, 5), torch.ones(3, 4)), ValueError, "same last dimension"),
    ((torch.ones(3, 4), torch.ones(3, 4), torch.ones(2, 4)), ValueError, "leading shape"),
    (([[1.0]], torch.ones(1, 1), torch.ones(1, 1)), TypeError, "torch tensor"),
    ((torch.ones(4), torch.ones(4), torch.ones(4)), ValueError, "at least 2 dimensions"),
])
def test_bad_input(args, err, msg):
    with pytest.raises(err, match=msg):
        longctx.banded_attention(*args, window=2)


def test_bad_window_and_peak_memory_input():
    q = torch.ones(1, 4, 2)
    with pytest.raises(ValueError, match="at least 0"):
        longctx.banded_attention(q, q, q, -1)
    with pytest.raises(TypeError, match="function of no arguments"):
        longctx.peak_memory(3)
