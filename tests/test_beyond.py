"""book.beyond: each efficient variant equals its explicit O(n²) form."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from book import beyond


def qkv(n, d=8, heads=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, heads, n, d, generator=g, dtype=torch.float64) for _ in range(3)]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 64), causal=st.booleans())
def test_linear_equals_quadratic_form(n, causal):
    q, k, v = qkv(n, seed=n)
    torch.testing.assert_close(beyond.linear_attention(q, k, v, causal=causal),
                               beyond.linear_attention_quadratic(q, k, v, causal=causal))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 64), window=st.integers(0, 6), dilation=st.integers(1, 5))
def test_dilated_equals_masked(n, window, dilation):
    q, k, v = qkv(n, seed=n + 1)
    torch.testing.assert_close(beyond.dilated_attention(q, k, v, window, dilation),
                               beyond.reference("dilated", q, k, v, window=window,
                                                dilation=dilation))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 64), window=st.integers(0, 8), data=st.data())
def test_hybrid_equals_masked(n, window, data):
    n_global = data.draw(st.integers(0, min(n, 4)))
    q, k, v = qkv(n, seed=n + 2)
    torch.testing.assert_close(beyond.hybrid_attention(q, k, v, window, n_global),
                               beyond.reference("hybrid", q, k, v, window=window,
                                                n_global=n_global))


def test_dilation_one_is_a_plain_window():
    from book import longctx
    q, k, v = qkv(20)
    torch.testing.assert_close(beyond.dilated_attention(q, k, v, 3, 1),
                               longctx.masked_window_attention(q, k, v, 3))


def test_bad_input():
    q, k, v = qkv(5)
    with pytest.raises(ValueError, match="at least 1"):
        beyond.dilated_attention(q, k, v, 2, 0)
    with pytest.raises(ValueError, match="at most 5"):
        beyond.hybrid_attention(q, k, v, 1, 6)
    with pytest.raises(ValueError, match="not one of"):
        beyond.reference("sparse", q, k, v)
