"""book.ideas.attention: numpy attention against torch's own, edge values and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from book.ideas import attention


def random_qkv(n_q, n_k, d_k, d_v, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n_q, d_k)), rng.standard_normal((n_k, d_k)),
            rng.standard_normal((n_k, d_v)))


@pytest.mark.parametrize("n_q,n_k,d_k,d_v", [(1, 1, 1, 1), (3, 3, 4, 4), (5, 7, 512, 3),
                                             (8, 2, 1, 6)])
def test_matches_torch_sdpa(n_q, n_k, d_k, d_v):
    q, k, v = random_qkv(n_q, n_k, d_k, d_v)
    out, weights = attention.scaled_dot_product_attention(q, k, v)
    ref = F.scaled_dot_product_attention(*(torch.tensor(a)[None] for a in (q, k, v)))[0]
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-10)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-12)


def test_mask_matches_torch_bool_convention():
    q, k, v = random_qkv(4, 4, 8, 5, seed=1)
    mask = np.tril(np.ones((4, 4), dtype=bool))
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(*(torch.tensor(a)[None] for a in (q, k, v)),
                                         attn_mask=torch.tensor(mask)[None])[0]
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-10)
    assert np.all(weights[~mask] == 0)


def test_scale_options():
    q, k, v = random_qkv(2, 3, 16, 2, seed=2)
    raw = q @ k.T
    for scale, divisor in (("none", 1.0), ("sqrt", 4.0), ("linear", 16.0)):
        _, w = attention.scaled_dot_product_attention(q, k, v, scale=scale)
        np.testing.assert_allclose(w, attention.softmax(raw / divisor), atol=1e-12)


def test_softmax_is_stable_and_matches_torch():
    x = np.array([[1000.0, 999.0, -1000.0], [0.0, 0.0, 0.0]])
    np.testing.assert_allclose(attention.softmax(x), torch.softmax(torch.tensor(x), -1).numpy())
    np.testing.assert_allclose(attention.softmax(x)[1], 1 / 3)


def test_entropy_limits():
    assert attention.entropy([1.0, 0.0, 0.0]) == 0.0
    np.testing.assert_allclose(attention.entropy(np.full(16, 1 / 16)), np.log(16))
    with pytest.raises(ValueError, match="probabilities"):
        attention.entropy([-0.5, 1.5])


@pytest.mark.parametrize("args,kwargs,err,msg", [
    ((np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 1))), {}, ValueError, "same width"),
    ((np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 1))), {}, ValueError, "one value"),
    ((np.ones(3), np.ones((2, 3)), np.ones((2, 1))), {}, ValueError, "2-D"),
    ((np.ones((0, 3)), np.ones((2, 3)), np.ones((2, 1))), {}, ValueError, "empty"),
    ((np.full((1, 3), np.nan), np.ones((2, 3)), np.ones((2, 1))), {}, ValueError, "NaN"),
    ((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1))), {"scale": "cube"}, ValueError,
     "not one of"),
    ((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1))), {"mask": np.ones((2, 2))}, TypeError,
     "astype\\(bool\\)"),
    ((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1))), {"mask": np.ones((3, 2), bool)},
     ValueError, "queries × keys"),
    ((np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 1))),
     {"mask": np.array([[True, True], [False, False]])}, ValueError, "attend to nothing"),
    (("abc", np.ones((2, 3)), np.ones((2, 1))), {}, TypeError, "array of numbers"),
])
def test_bad_input_says_what_to_do(args, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        attention.scaled_dot_product_attention(*args, **kwargs)
