"""Tests of book.ideas.walkthrough: numpy == torch == loop reference == the nn.Module."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_same_run
from torch import nn

from book.ideas import mha, walkthrough
from book.ideas.walkthrough import example, general_mha_loop, walkthrough_torch

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)
ATOL = 1e-12  # all three implementations work in float64; measured differences are ~1e-15


@st.composite
def problems(draw, *, masked: bool | None = None):
    """Random general problems: any n, d_model, number of heads, d_k and d_v (h·d_v ≠ d_model)."""
    n = draw(st.integers(1, 7))
    d_model = draw(st.integers(1, 6))
    n_heads = draw(st.integers(1, 4))
    d_k = draw(st.integers(1, 5))
    d_v = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.3, 1.0, 3.0]))
    X = rng.normal(size=(n, d_model)) * scale
    heads = [(rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k)),
              rng.normal(size=(d_model, d_v))) for _ in range(n_heads)]
    W_O = rng.normal(size=(n_heads * d_v, d_model))
    use_mask = draw(st.booleans()) if masked is None else masked
    mask = None
    if use_mask:
        mask = (rng.random((n, n)) < 0.5) | np.eye(n, dtype=bool)
    return X, heads, W_O, mask


def expected_order(n_heads: int, masked: bool) -> list[str]:
    per_head = ["Q", "K", "V", "S", "S_scaled"] + (["S_masked"] if masked else []) + ["A", "Z"]
    names = []
    for h in range(1, n_heads + 1):
        names += [name[0] + str(h) + name[1:] for name in per_head]
    return names + ["Z", "output", "residual", "layer_norm"]


# ---- the article's example ------------------------------------------------------------------

def test_example_has_the_article_shapes_and_readable_numbers():
    ex = example()
    assert ex.tokens == ("我", "爱", "你") and ex.glosses == ("I", "love", "you")
    assert ex.X.shape == (3, 4)
    assert len(ex.heads) == 2
    for triple in ex.heads:
        assert [w.shape for w in triple] == [(4, 3)] * 3
    assert ex.W_O.shape == (6, 4)
    for arr in (ex.X, ex.W_O, *[w for t in ex.heads for w in t]):
        # one decimal; exact: one correctly rounded multiply, the same on every CPU
        np.testing.assert_array_equal(arr * 10, np.round(arr * 10))
        assert np.abs(arr).max() <= 1.0
        assert not np.any(np.signbit(arr) & (arr == 0))  # no "-0.0" on the page


def test_example_is_seeded():
    a, b, c = example(3), example(3), example(4)
    assert_same_run(a.X, b.X, why="the same seed twice")
    assert_same_run(a.heads[1][2], b.heads[1][2], why="the same seed twice")
    assert not np.array_equal(a.X, c.X)


def test_example_options_and_errors():
    ex = example(0, n_heads=3, d_k=2)
    assert len(ex.heads) == 3 and ex.heads[0][0].shape == (4, 2) and ex.W_O.shape == (6, 4)
    with pytest.raises(ValueError, match="seed=-1 is too small"):
        example(-1)
    with pytest.raises(TypeError, match="n_heads must be an integer"):
        example(0, n_heads=2.0)


def test_walkthrough_of_the_example_step_by_step():
    ex = example()
    steps = walkthrough.walkthrough(ex.X, ex.heads, ex.W_O)
    assert list(steps) == expected_order(2, masked=False)
    shapes = {name: arr.shape for name, arr in steps.items()}
    for h in (1, 2):
        for letter in "QKVSAZ":
            assert shapes[f"{letter}{h}"] == (3, 3)
    assert shapes["Z"] == (3, 6)  # 2 heads × d_k = 3: wider than d_model = 4
    assert shapes["output"] == shapes["residual"] == shapes["layer_norm"] == (3, 4)
    W_Q1, W_K1, W_V1 = ex.heads[0]
    np.testing.assert_allclose(steps["Q1"], ex.X @ W_Q1)
    np.testing.assert_allclose(steps["S1"], (ex.X @ W_Q1) @ (ex.X @ W_K1).T)
    np.testing.assert_allclose(steps["S1_scaled"] * math.sqrt(3), steps["S1"])
    a = np.exp(steps["S1_scaled"])
    np.testing.assert_allclose(steps["A1"], a / a.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(steps["Z1"], steps["A1"] @ (ex.X @ W_V1))
    assert_same_run(steps["Z"], np.hstack([steps["Z1"], steps["Z2"]]),
                    why="Z is the heads' outputs side by side: a copy, no arithmetic")
    np.testing.assert_allclose(steps["output"], steps["Z"] @ ex.W_O)
    np.testing.assert_allclose(steps["residual"], ex.X + steps["output"])
    ln = steps["layer_norm"]
    np.testing.assert_allclose(ln.mean(axis=1), 0, atol=1e-12)
    var = steps["residual"].var(axis=1)
    np.testing.assert_allclose(ln.var(axis=1), var / (var + 1e-5))  # eps = 1e-5


def test_layer_norm_is_over_d_model_like_torch():
    ex = example(1)
    steps = walkthrough.walkthrough(ex.X, ex.heads, ex.W_O)
    ln = nn.LayerNorm(4, elementwise_affine=False, eps=1e-5, dtype=torch.float64)
    want = ln(torch.from_numpy(steps["residual"])).detach().numpy()
    np.testing.assert_allclose(steps["layer_norm"], want, atol=ATOL)


# ---- three implementations, one answer -------------------------------------------------------

@given(problem=problems())
@SETTINGS
def test_numpy_torch_and_loop_reference_agree(problem):
    X, heads, W_O, mask = problem
    steps = walkthrough.walkthrough(X, heads, W_O, mask)
    steps_t = walkthrough_torch(X, heads, W_O, mask)
    loop = general_mha_loop(X, heads, W_O, mask)
    assert list(steps) == list(steps_t) == expected_order(len(heads), mask is not None)
    for name, value in steps.items():
        assert steps_t[name].dtype == torch.float64
        np.testing.assert_allclose(steps_t[name].numpy(), value, rtol=1e-12, atol=ATOL,
                                   err_msg=name)
    for name in ("Z", "output", "layer_norm"):
        np.testing.assert_allclose(loop[name], steps[name], rtol=1e-10, atol=1e-10, err_msg=name)
    n_heads = len(heads)
    for h in range(1, n_heads + 1):
        np.testing.assert_allclose(steps[f"A{h}"].sum(axis=1), 1.0, atol=1e-12)
        if mask is not None:
            assert np.all(steps[f"A{h}"][~mask] == 0)
            assert np.all(np.isneginf(steps[f"S{h}_masked"][~mask]))


@given(problem=problems(masked=True))
@settings(max_examples=20, deadline=None, derandomize=True)
def test_masking_renormalises_the_remaining_weights(problem):
    """Masked weights = unmasked weights of the allowed keys, rescaled to sum to 1."""
    X, heads, W_O, mask = problem
    masked = walkthrough.walkthrough(X, heads, W_O, mask)
    plain = walkthrough.walkthrough(X, heads, W_O)
    for h in range(1, len(heads) + 1):
        kept = np.where(mask, plain[f"A{h}"], 0.0)
        np.testing.assert_allclose(masked[f"A{h}"], kept / kept.sum(axis=1, keepdims=True),
                                   rtol=1e-9, atol=0)


@given(n=st.integers(1, 6), n_heads=st.integers(1, 4), d_k=st.integers(1, 4),
       seed=st.integers(0, 2**31 - 1))
@SETTINGS
def test_walkthrough_is_what_the_modules_compute(n, n_heads, d_k, seed):
    """With h·d_k = d_model and no biases, the walkthrough equals MultiHeadSelfAttention and
    nn.MultiheadAttention (the walkthrough writes weights on the right: x @ W)."""
    gen = torch.Generator().manual_seed(seed)
    d_model = n_heads * d_k
    with torch.random.fork_rng(devices=[]):
        layer = mha.MultiHeadSelfAttention(d_model, n_heads, bias=False, dtype=torch.float64)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
    x = torch.randn(1, n, d_model, generator=gen, dtype=torch.float64)
    heads, W_O = walkthrough.heads_from_module(layer)
    assert len(heads) == n_heads and heads[0][0].shape == (d_model, d_k)
    steps = walkthrough.walkthrough(x[0].numpy(), heads, W_O)
    with torch.no_grad():
        out, weights = layer(x, need_weights=True)
        ref = mha.copy_to_torch_mha(layer)(x, x, x, need_weights=False)[0]
    np.testing.assert_allclose(steps["output"], out[0].numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(steps["output"], ref[0].numpy(), rtol=1e-10, atol=1e-10)
    for h in range(n_heads):
        np.testing.assert_allclose(steps[f"A{h + 1}"], weights[0, h].numpy(), atol=1e-12)


def test_heads_from_module_refuses_biases():
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="bias=False"):
        walkthrough.heads_from_module(mha.MultiHeadSelfAttention(4, 2))
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        walkthrough.heads_from_module(nn.Linear(4, 4))


# ---- describe ----------------------------------------------------------------------------------

def test_every_step_has_a_description():
    ex = example()
    mask = np.tril(np.ones((3, 3), dtype=bool))
    for name in walkthrough.walkthrough(ex.X, ex.heads, ex.W_O, mask):
        text = walkthrough.describe(name)
        assert isinstance(text, str) and len(text) > 20
        if name[-1].isdigit():
            assert f"head {name[1:]}" in text
    assert "head 2" in walkthrough.describe("S2_scaled")
    for bad in ("Q0x", "output2", "A1_scaled", ""):
        with pytest.raises(ValueError, match="unknown step"):
            walkthrough.describe(bad)
    with pytest.raises(TypeError):
        walkthrough.describe(1)


# ---- bad input ---------------------------------------------------------------------------------

def _ex():
    ex = example()
    return ex.X, [list(t) for t in ex.heads], ex.W_O


@pytest.mark.parametrize("change, err, text", [
    (lambda X, H, W: (X[0], H, W, None), ValueError, "X must be 2-D"),
    (lambda X, H, W: (np.where(X > 0, np.nan, X), H, W, None), ValueError, "NaN"),
    (lambda X, H, W: (X, [], W, None), TypeError, "non-empty list"),
    (lambda X, H, W: (X, "abc", W, None), TypeError, "non-empty list"),
    (lambda X, H, W: (X, [H[0][:2]], W, None), TypeError, r"head 1 must be a \(W_Q, W_K, W_V\)"),
    (lambda X, H, W: (X, [[H[0][0][:3], H[0][1], H[0][2]]], W, None), ValueError,
     "W_Q1 has 3 rows but X has d_model=4"),
    (lambda X, H, W: (X, [H[0], [H[1][0], H[1][1][:, :2], H[1][2]]], W, None), ValueError,
     "W_Q2 is"),
    (lambda X, H, W: (X, H, W[:4], None), ValueError, r"W_O must be .* = \(6, 4\)"),
    (lambda X, H, W: (X, H, W, np.ones((3, 3))), TypeError, r"\.bool\(\)"),
    (lambda X, H, W: (X, H, W, np.ones((2, 2), dtype=bool)), ValueError, r"\(3, 3\)"),
    (lambda X, H, W: (X, H, W, np.eye(3, dtype=bool) & False), ValueError, "attend to nothing"),
])
@pytest.mark.parametrize("fn", [walkthrough.walkthrough, walkthrough_torch, general_mha_loop])
def test_bad_inputs_raise_helpful_errors(change, err, text, fn):
    X, heads, W_O, mask = change(*_ex())
    with pytest.raises(err, match=text):
        fn(X, heads, W_O, mask)


def test_single_token_single_head():
    X = np.array([[0.5, -1.0]])
    heads = [(np.array([[1.0], [2.0]]), np.array([[0.5], [0.1]]), np.array([[1.0], [1.0]]))]
    W_O = np.array([[2.0, -1.0]])
    steps = walkthrough.walkthrough(X, heads, W_O)
    assert steps["A1"].tolist() == [[1.0]]  # one key: all the attention goes to it
    np.testing.assert_allclose(steps["output"], [[-1.0, 0.5]])  # V = -0.5; Z @ W_O
    np.testing.assert_allclose(general_mha_loop(X, heads, W_O)["output"], steps["output"])
