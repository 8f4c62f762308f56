"""book.ideas.flash: tiled attention with the online softmax equals softmax attention exactly (to
float rounding) for every tile size, against torch's own kernel; memory grows like n·tile."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_same_maths

from book.ideas import flash, longctx


def qkv(n, s=None, d=8, d_v=None, heads=2, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    s = n if s is None else s
    d_v = d if d_v is None else d_v
    return (torch.randn(2, heads, n, d, generator=g, dtype=dtype),
            torch.randn(2, heads, s, d, generator=g, dtype=dtype),
            torch.randn(2, heads, s, d_v, generator=g, dtype=dtype))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(n=st.integers(1, 48), s=st.integers(1, 48), d=st.integers(1, 12),
       d_v=st.integers(1, 6), data=st.data())
def test_equals_sdpa_for_every_tile_size(n, s, d, d_v, data):
    tile = data.draw(st.integers(1, s + 3))
    q, k, v = qkv(n, s, d, d_v, seed=n * 100 + s)
    assert_same_maths(flash.tiled_attention(q, k, v, tile), F.scaled_dot_product_attention(q, k, v),
                      reduction=max(s, d), why="tiled online softmax vs SDPA: same maths")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(1, 48), data=st.data())
def test_causal_equals_sdpa_is_causal(n, data):
    tile = data.draw(st.integers(1, n + 3))
    q, k, v = qkv(n, seed=n)
    assert_same_maths(flash.tiled_attention(q, k, v, tile, causal=True),
                      F.scaled_dot_product_attention(q, k, v, is_causal=True),
                      reduction=max(n, 8), why="causal tiled online softmax vs SDPA: same maths")


@settings(max_examples=30, deadline=None, derandomize=True)
@given(scale=st.floats(1.0, 200.0), tile=st.integers(1, 20))
def test_large_scores_stay_finite(scale, tile):
    # scores of several hundred would overflow exp() without the running maximum
    q, k, v = qkv(20, seed=3)
    q = q * scale
    out = flash.tiled_attention(q, k, v, tile)
    assert bool(torch.isfinite(out).all())
    # exp() turns a score's rounding (eps * |score|) into a relative error of its weight
    scores = float((q @ k.transpose(-2, -1)).abs().max())
    assert_same_maths(out, longctx.full_attention(q, k, v), reduction=20, scale=scores,
                      why="tiled vs full attention on large scores: same maths")


def test_float32_matches_sdpa_to_float32_rounding():
    q, k, v = qkv(100, dtype=torch.float32)
    torch.testing.assert_close(flash.tiled_attention(q, k, v, 16),
                               F.scaled_dot_product_attention(q, k, v))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n_keys=st.integers(1, 40), tile=st.integers(1, 45), seed=st.integers(0, 50))
def test_row_trace_ends_at_the_exact_output(n_keys, tile, seed):
    scores, values = flash.example_row(n_keys, seed=seed)
    steps = flash.row_trace(scores, values, tile)
    assert len(steps) == -(-n_keys // tile)
    last = steps[-1]
    assert last["error"] < 1e-12
    np.testing.assert_allclose(last["weights"], np.exp(scores - scores.max())
                               / np.exp(scores - scores.max()).sum(), atol=1e-12)
    # the running max never decreases and ends at the row's max; rescale factors are ≤ 1
    ms = [s["m"] for s in steps]
    assert ms == sorted(ms) and ms[-1] == scores.max()
    assert all(0 <= s["rescale"] <= 1 for s in steps)


def test_row_trace_agrees_with_tiled_attention():
    q, k, v = qkv(1, 23, d=4, heads=1)
    scores = (q[0, 0] @ k[0, 0].T / 2.0)[0].numpy()  # √d = 2
    steps = flash.row_trace(scores, v[0, 0].numpy(), 5)
    np.testing.assert_allclose(steps[-1]["output"],
                               flash.tiled_attention(q, k, v, 5)[0, 0, 0].numpy(), atol=1e-12)


def test_memory_grows_like_n_for_tiled_and_n_squared_for_textbook():
    sweep = flash.memory_sweep([256, 512, 1024], tile=32)
    assert longctx.fit_exponent(sweep["n"], sweep["full"]) > 1.8
    assert longctx.fit_exponent(sweep["n"], sweep["tiled"]) < 1.15
    assert sweep["tiled"][-1] < sweep["full"][-1] / 4


def test_bad_input():
    q, k, v = qkv(5)
    with pytest.raises(ValueError, match="tile=0 is too small"):
        flash.tiled_attention(q, k, v, 0)
    with pytest.raises(TypeError, match="tile must be an integer"):
        flash.tiled_attention(q, k, v, 2.5)
    with pytest.raises(ValueError, match="causal=True needs as many queries as keys"):
        flash.tiled_attention(q[..., :3, :], k, v, 2, causal=True)
    with pytest.raises(ValueError, match="same last dimension"):
        flash.tiled_attention(q[..., :3], k, v, 2)
    with pytest.raises(TypeError, match="must be a torch tensor"):
        flash.tiled_attention(q.numpy(), k, v, 2)
    with pytest.raises(ValueError, match="one value row per key"):
        flash.row_trace(np.zeros(4), np.zeros((3, 2)), 2)
    with pytest.raises(ValueError, match="NaN or infinity"):
        flash.row_trace(np.array([0.0, np.inf]), np.zeros((2, 2)), 1)
    with pytest.raises(ValueError, match="at least 1"):
        flash.memory_sweep([0])
