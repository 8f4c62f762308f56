"""book.ideas.score_functions: additive, bilinear and dot-product scores against their definitions,
their cost counts, their spread at initialisation and their input checks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from book.chapters import ch02_scaling
from book.ideas import score_functions as sf
from book.kit import i18n


def _data(n=5, m=4, d=3, d_a=6, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, d)), rng.standard_normal((m, d)),
            rng.standard_normal((d, d_a)), rng.standard_normal((d, d_a)),
            rng.standard_normal(d_a), rng.standard_normal((d, d)))


def test_additive_equals_its_formula_pair_by_pair():
    q, k, w_q, w_k, v, _ = _data()
    got = sf.additive_scores(q, k, w_q, w_k, v).numpy()
    want = np.array([[v @ np.tanh(w_q.T @ qi + w_k.T @ kj) for kj in k] for qi in q])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.shape == (5, 4)


def test_bilinear_equals_its_formula_and_identity_gives_the_dot_product():
    q, k, *_, w = _data()
    got = sf.bilinear_scores(q, k, w).numpy()
    np.testing.assert_allclose(got, [[qi @ w @ kj for kj in k] for qi in q], rtol=1e-12)
    np.testing.assert_allclose(sf.bilinear_scores(q, k, np.eye(3)).numpy(),
                               sf.dot_scores(q, k, scaled=False).numpy(), rtol=1e-12)
    np.testing.assert_allclose(sf.dot_scores(q, k).numpy(), q @ k.T / np.sqrt(3), rtol=1e-12)


def test_scores_dispatch_and_float32_tensors():
    q, k = torch.randn(6, 8), torch.randn(7, 8)
    params = sf.init_params(8, dtype=torch.float32)
    for kind in sf.KINDS:
        s = sf.scores(kind, q, k, params)
        assert s.shape == (6, 7) and s.dtype == torch.float32
    np.testing.assert_allclose(sf.scores("bilinear", q, k, params).numpy(),
                               ((q @ params["W"]) @ k.T).numpy(), rtol=1e-5)


def test_cost_counts():
    assert sf.cost("dot", 10, 20, 4) == {"multiply_adds": 800, "tanh": 0,
                                        "largest_intermediate": 200}
    assert sf.cost("bilinear", 10, 20, 4)["multiply_adds"] == 10 * 16 + 800
    additive = sf.cost("additive", 10, 20, 4, d_a=3)
    assert additive == {"multiply_adds": 30 * 12 + 600, "tanh": 600,
                        "largest_intermediate": 600}


def test_spread_additive_is_bounded_bilinear_grows_like_the_dot_product():
    sweep = sf.spread_sweep([4, 256])
    assert max(sweep["additive"]) < 1.0  # |score| <= ||v||_1 and tanh keeps units in [-1, 1]
    assert sweep["bilinear"][1] > 4 * sweep["bilinear"][0]
    assert sweep["dot"][1] == pytest.approx(16, rel=0.15)
    assert sweep["dot_scaled"][1] == pytest.approx(1, rel=0.15)
    assert sf.spread("additive", 64) == sf.spread("additive", 64)  # seeded


def test_spread_table_in_both_languages():
    sweep = sf.spread_sweep([4, 8])
    assert "additive" in ch02_scaling.spread_table(sweep, [4, 8]).data
    i18n.set_language("zh")
    try:
        text = ch02_scaling.spread_table(sweep, [4, 8]).data
        assert "加性" in text and "additive" not in text
    finally:
        i18n.set_language("en")
    with pytest.raises(ValueError, match="spread_sweep"):
        ch02_scaling.spread_table({"additive": [1.0]}, [4])
    with pytest.raises(ValueError, match="d_ks"):
        ch02_scaling.spread_table(sweep, [4, 8, 16])


@pytest.mark.parametrize("call, err, text", [
    (lambda: sf.dot_scores(np.ones((2, 3)), np.ones((2, 4))), ValueError, "same width"),
    (lambda: sf.dot_scores(np.ones(3), np.ones((2, 3))), ValueError, "2-D"),
    (lambda: sf.dot_scores(torch.full((2, 3), float("nan")), np.ones((2, 3))), ValueError,
     "NaN"),
    (lambda: sf.bilinear_scores(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3))),
     ValueError, "rows"),
    (lambda: sf.additive_scores(np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 4)),
                                np.ones((3, 5)), np.ones(4)), ValueError, "same shape"),
    (lambda: sf.additive_scores(np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 4)),
                                np.ones((3, 4)), np.ones(5)), ValueError, "d_a = 4"),
    (lambda: sf.scores("cosine", np.ones((2, 3)), np.ones((2, 3))), ValueError, "not one of"),
    (lambda: sf.scores("additive", np.ones((2, 3)), np.ones((2, 3)), [1]), TypeError,
     "init_params"),
    (lambda: sf.cost("dot", 0, 2, 2), ValueError, "n"),
    (lambda: sf.spread("dot", 8, scaled="yes"), TypeError, "True or False"),
])
def test_bad_input_says_what_to_do(call, err, text):
    with pytest.raises(err, match=text):
        call()
