"""What a careless user tries (issue 22's list): each gets a clear error naming the argument and
the fix, or the right result — never NaN, a bare error from inside, or a wrong number."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from book.face.plotting import attention_heatmap
from book.ideas import attention, longctx, masks, mha, norms, walkthrough
from book.kit import validate
from book.studies import masktraps
from book.toy import orders
from book.toy.fit import fit
from book.toy.model import TinyEncoder

LAYERS = [mha.MultiHeadSelfAttention, mha.MultiHeadSelfAttentionSDPA,
          mha.MultiHeadSelfAttentionLoop]


# ---- a finite but huge input: the scores overflow float32 ---------------------------------

@pytest.mark.parametrize("cls", LAYERS, ids=lambda c: c.__name__)
def test_a_huge_finite_input_raises_naming_the_overflow(cls):
    torch.manual_seed(0)
    layer = cls(8, 2).eval()
    x = torch.randn(2, 4, 8)
    assert bool(torch.isfinite(layer(x)).all())
    with pytest.raises(ValueError, match=r"output overflowed.*although x is finite.*"
                                         r"Scale the input down") as err:
        layer(x * 1e20)
    assert isinstance(err.value, validate.NonFiniteError)   # fit() reads it as a divergence
    assert "float64" in str(err.value) and "3.4e+38" in str(err.value)
    with torch.no_grad():   # the suggested fix computes it
        assert bool(torch.isfinite(layer.double()(x.double() * 1e20)).all())


def test_the_overflow_is_caught_with_weights_returned_and_with_a_mask():
    layer = mha.MultiHeadSelfAttention(8, 2)
    x = torch.randn(1, 3, 8) * 1e20
    with pytest.raises(ValueError, match="overflowed"):
        layer(x, need_weights=True)
    fast = mha.MultiHeadSelfAttentionSDPA.from_module(layer)
    with pytest.raises(ValueError, match="overflowed"):
        fast(x, mask=masks.causal_mask(3))           # the is_causal path
    with pytest.raises(ValueError, match="overflowed"):
        fast(x=x, padding_mask=torch.ones(1, 3, dtype=torch.bool))


def test_nan_weights_are_named_as_the_cause():
    layer = mha.MultiHeadSelfAttention(8, 2)
    with torch.no_grad():
        layer.w_v.weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="weights contain NaN or infinity.*diverged"):
        layer(torch.randn(1, 3, 8))


def test_finite_outputs_whose_sum_overflows_pass():
    layer = mha.MultiHeadSelfAttention(4, 1, bias=False)
    with torch.no_grad():
        for lin in (layer.w_q, layer.w_k):
            lin.weight.zero_()
        layer.w_v.weight.copy_(torch.eye(4))
        layer.w_o.weight.copy_(torch.eye(4))
    x = torch.full((1, 3, 4), 3e38)
    out = layer(x)    # each entry is finite; their float32 sum is not
    assert not torch.isfinite(out.sum()) and bool(torch.isfinite(out).all())


def test_the_loose_layer_still_lets_nan_through():
    """masktraps.LooseAttention shows NaN spreading on purpose: it opts out."""
    loose = masktraps.LooseAttention(8, 2, handling="-inf")
    out = loose(torch.randn(1, 3, 8), padding_mask=torch.tensor([[False, False, False]]))
    assert torch.isnan(out).all()


@pytest.mark.parametrize("attention", ["scratch", "sdpa"])
def test_a_run_whose_attention_overflows_is_marked_diverged_not_crashed(attention):
    """fit() catches NonFiniteError as a diverged run: the overflow error must be one."""
    model = TinyEncoder(d_model=16, n_heads=2, n_layers=1, norm="none", attention=attention,
                        seed=0)
    with torch.no_grad():
        model.embed.weight.mul_(1e20)   # finite, but the scores overflow
    history = fit(model, orders.generate(40, seed=1), steps=3, progress=False)
    assert history.diverged and history.steps == 1 and math.isnan(history.loss[0])


# ---- eps=0 on an all-zero input: LayerNorm's 0/0 ------------------------------------------

def _zero_example():
    ex = walkthrough.example()
    return np.zeros_like(ex.X), ex.heads, ex.W_O


@pytest.mark.parametrize("func", [walkthrough.walkthrough, walkthrough.walkthrough_torch,
                                  walkthrough.general_mha_loop], ids=lambda f: f.__name__)
def test_walkthrough_with_eps_0_on_zero_input_says_why(func):
    X, heads, W_O = _zero_example()
    with pytest.raises(ValueError, match=r"eps=0 and 3 token\(s\) have zero variance.*"
                                         r"Pass eps > 0"):
        func(X, heads, W_O, eps=0)
    out = func(X, heads, W_O)                      # the default eps: zeros, not NaN
    assert np.allclose(np.asarray(out["layer_norm"]), 0.0)
    ex = walkthrough.example()                     # eps=0 on ordinary rows still works
    got = np.asarray(func(ex.X, ex.heads, ex.W_O, eps=0)["layer_norm"])
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got.mean(-1), 0.0, atol=1e-12)


def test_the_norms_refuse_eps_0_on_a_constant_row_too():
    x = np.zeros((2, 3, 4))
    for func, what in ((norms.layer_norm, "token"), (norms.batch_norm, "feature"),
                       (norms.sequence_axis_norm, "sentence and feature")):
        with pytest.raises(ValueError, match=f"eps=0 .* {what}"):
            func(x, eps=0)
        assert np.isfinite(func(x)).all()


# ---- a slope through one size ---------------------------------------------------------------

def test_fit_exponent_needs_two_distinct_sizes():
    with pytest.raises(ValueError, match=r"ns needs at least 2 distinct values, got only 2"):
        longctx.fit_exponent([2, 2], [1, 4])
    with pytest.raises(ValueError, match="distinct"):
        longctx.fit_exponent([8, 8, 8], [1, 2, 3])
    assert longctx.fit_exponent([2, 4, 4], [4, 16, 16]) == pytest.approx(2.0)


# ---- None where an array goes ---------------------------------------------------------------

def test_softmax_of_none_asks_for_numbers():
    with pytest.raises(TypeError, match="scores must be an array of numbers.*got None"):
        attention.softmax(None)
    with pytest.raises(TypeError, match=r"scores must hold numbers only, got None at \[1\]"):
        attention.softmax([1.0, None, 2.0])
    with pytest.raises(ValueError, match="NaN"):   # a real NaN is still named as one
        attention.softmax([1.0, float("nan")])


def test_attention_heatmap_names_the_argument_that_is_none():
    w = np.eye(2)
    with pytest.raises(TypeError, match="row_labels must be a list .* got None"):
        attention_heatmap(w, None)
    with pytest.raises(TypeError, match="col_labels must be a list .* got 7"):
        attention_heatmap(w, ["a", "b"], 7)
    with pytest.raises(TypeError, match="weights must be an array of numbers.*got None"):
        attention_heatmap(None, ["a", "b"])
    with pytest.raises(ValueError, match="row_labels must be unique"):
        attention_heatmap(w, ["a", "a"])
    fig = attention_heatmap(w, ["a", "b"])
    assert list(fig.data[0].x) == ["a", "b"]
