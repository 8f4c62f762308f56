"""book.ideas.kvcache: incremental decoding equals full causal recomputation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tolerance import assert_same_run

from book.ideas import kvcache


def weights(d_model=6, d_k=4, d_v=5, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k)),
            rng.normal(size=(d_model, d_v)))


@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_cached_decoding_equals_recomputation(n):
    X = np.random.default_rng(n).normal(size=(n, 6))
    W = weights()
    out, cache = kvcache.decode(X, *W)
    np.testing.assert_allclose(out, kvcache.causal_self_attention(X, *W), atol=1e-12)
    assert len(cache) == n and cache.keys.shape == (n, 4) and cache.values.shape == (n, 5)


def test_full_version_matches_torch_causal_sdpa():
    X = np.random.default_rng(1).normal(size=(5, 6))
    W_q, W_k, W_v = weights()
    ref = F.scaled_dot_product_attention(*(torch.tensor(X @ w)[None] for w in (W_q, W_k, W_v)),
                                         is_causal=True)[0]
    np.testing.assert_allclose(kvcache.causal_self_attention(X, W_q, W_k, W_v), ref.numpy(),
                               atol=1e-12)


def test_bad_input():
    W_q, W_k, W_v = weights()
    with pytest.raises(ValueError, match="rows but tokens have d_model=3"):
        kvcache.decode(np.ones((2, 3)), W_q, W_k, W_v)
    with pytest.raises(ValueError, match="same width"):
        kvcache.decode(np.ones((2, 6)), W_q, W_k[:, :2], W_v)
    cache = kvcache.KVCache(4, 5)
    with pytest.raises(ValueError, match="cache is empty"):
        cache.attend(np.ones(4))
    with pytest.raises(ValueError, match="expected a key of shape"):
        cache.append(np.ones(3), np.ones(5))


def test_cache_bytes():
    # 2 (K and V) × 32 layers × 4096 tokens × 4096 features × 2 bytes (fp16) = 2 GiB
    assert kvcache.cache_bytes(32, 4096, 4096, 2) == 2 * 1024**3
    assert kvcache.cache_bytes(1, 0, 8) == 0
    with pytest.raises(ValueError, match="at least 1"):
        kvcache.cache_bytes(0, 10, 8)


@pytest.mark.parametrize("prompt_len,n_new", [(1, 0), (1, 12), (5, 20)])
def test_decoder_with_cache_generates_what_recomputation_generates(prompt_len, n_new):
    model = kvcache.TinyDecoder(vocab_size=32, d_model=32, n_heads=4, n_layers=2,
                                max_len=64).double()
    prompt = torch.arange(prompt_len) % 32
    cached = model.generate(prompt, n_new, use_cache=True)
    full = model.generate(prompt, n_new, use_cache=False)
    assert cached.shape == (prompt_len + n_new,)
    # token ids: integers, compared exactly (each the argmax of logits equal up to rounding)
    assert_same_run(cached, full, why="cached and recomputed decoding pick the same tokens")


def test_decoder_bad_input():
    model = kvcache.TinyDecoder(vocab_size=8, d_model=8, n_heads=2, n_layers=1, max_len=10)
    with pytest.raises(ValueError, match="exceeds max_len=10"):
        model.generate([1, 2], 9)
    with pytest.raises(ValueError, match=r"\[0, 7\]"):
        model.generate([8], 1)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        model.generate([], 1)
    with pytest.raises(ValueError, match="not divisible"):
        kvcache.TinyDecoder(d_model=10, n_heads=4)


def test_tiny_decoder_seed_fixes_every_parameter():
    torch.manual_seed(1)
    a = kvcache.TinyDecoder(vocab_size=16, d_model=8, n_heads=2, n_layers=1, seed=3)
    torch.manual_seed(2)
    b = kvcache.TinyDecoder(vocab_size=16, d_model=8, n_heads=2, n_layers=1, seed=3)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert_same_run(p, q, why=f"{name}: the same seed, the same initialisation twice")


def test_positions_per_step_counts_what_each_step_computes():
    model = kvcache.TinyDecoder(vocab_size=16, d_model=8, n_heads=2, n_layers=1, max_len=16)
    prompt = torch.tensor([1, 2, 3])
    # without the cache, step t reruns the prompt and the t tokens written so far
    assert kvcache.positions_per_step(model, prompt, 4, use_cache=False) == [3, 4, 5, 6]
    # with it, the prompt once, then the token written last (one step more: its keys/values)
    assert kvcache.positions_per_step(model, prompt, 4, use_cache=True) == [3, 1, 1, 1, 1]
    assert kvcache.positions_per_step(model, prompt, 0, use_cache=True) == [3]
    assert not model.layers[0]["qkv"]._forward_hooks     # the counting hook is removed
    with pytest.raises(TypeError, match="TinyDecoder"):
        kvcache.positions_per_step(torch.nn.Linear(2, 2), prompt, 2)
