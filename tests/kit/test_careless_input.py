"""What a careless user tries (issue 22's list): each gets a clear error naming the argument and
the fix, or the right result — never NaN, a bare error from inside, or a wrong number."""

from __future__ import annotations

import numpy as np
import pytest

from book.face.plotting import attention_heatmap
from book.ideas import attention, longctx, norms, walkthrough

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
