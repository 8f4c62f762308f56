"""book.ideas.gqa: grouped-query attention equals multi-head attention when the head counts match
and
F.scaled_dot_product_attention(enable_gqa=True) otherwise; the KV-cache formula equals the bytes
of a decoder's real cache tensors; cached and uncached decoding give the same tokens."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_same_maths, assert_same_run, rounding_tolerance

from book.ideas import gqa, positions
from book.ideas.mha import MultiHeadSelfAttention
from book.toy import train, variants
from book.toy.fit import fit


def mha(d_model=24, n_heads=6, seed=0):
    torch.manual_seed(seed)
    return MultiHeadSelfAttention(d_model, n_heads).double()


def x_of(batch, n, d, seed=0):
    return torch.randn(batch, n, d, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n_heads=st.sampled_from([1, 2, 3, 4, 6]), n=st.integers(1, 12), seed=st.integers(0, 50))
def test_equal_to_mha_when_kv_heads_equal_heads(n_heads, n, seed):
    base = mha(12, n_heads, seed)
    x = x_of(2, n, 12, seed)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    with torch.no_grad():
        for sdpa in (False, True):
            layer = gqa.from_mha(base, sdpa=sdpa)
            why = "GQA (n_kv = n_heads) vs MHA: same maths, other projection shapes/kernel"
            assert_same_maths(layer(x), base(x), reduction=12, why=why)
            assert_same_maths(layer(x, causal), base(x, causal), reduction=12, why=why)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n_heads=st.sampled_from([2, 4, 6, 8, 12]), data=st.data(), n=st.integers(1, 12),
       seed=st.integers(0, 50))
def test_equal_to_sdpa_enable_gqa(n_heads, data, n, seed):
    n_kv = data.draw(st.sampled_from(gqa.valid_kv_heads(n_heads)))
    torch.manual_seed(seed)
    layer = gqa.GroupedQueryAttention(24, n_heads, n_kv).double()
    x = x_of(2, n, 24, seed)
    with torch.no_grad():
        q, k, v = layer.project(x)
        assert k.shape == (2, n_kv, n, 24 // n_heads)
        mine, _ = layer.attend(q, k, v)
        theirs = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        why = "grouped attention by repeat vs SDPA's enable_gqa: same maths, two kernels"
        assert_same_maths(mine, theirs, reduction=24, why=why)
        causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
        mine_c, _ = layer.attend(q, k, v, causal)
        theirs_c = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        assert_same_maths(mine_c, theirs_c, reduction=24, why=why)
        # the whole layer through either path
        fused = gqa.GroupedQueryAttention(24, n_heads, n_kv, sdpa=True).double()
        fused.load_state_dict(layer.state_dict())
        assert_same_maths(fused(x), layer(x), reduction=24,
                          why="the layer through SDPA vs through its own softmax: two kernels")


def test_valid_kv_heads():
    assert gqa.valid_kv_heads(8) == [1, 2, 4, 8]
    assert gqa.valid_kv_heads(1) == [1]


def test_mqa_is_one_shared_head_and_groups_are_consecutive():
    layer = gqa.GroupedQueryAttention(32, 8, 1)
    assert layer.w_k.weight.shape == (4, 32) and layer.group_size == 8
    assert [gqa.kv_head_of(h, 8, 2) for h in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert gqa.kv_head_of(13, 32, 8) == 3


def test_mean_pooled_conversion():
    base = mha(24, 6)
    layer = gqa.from_mha(base, 2)
    w = base.w_k.weight.detach().view(2, 3, 4, 24).mean(1).reshape(8, 24)
    torch.testing.assert_close(layer.w_k.weight.detach(), w)
    torch.testing.assert_close(layer.w_q.weight, base.w_q.weight)
    # when every head of a group already has the same keys/values, pooling changes nothing
    with torch.no_grad():
        for lin in (base.w_k, base.w_v):
            lin.weight.copy_(lin.weight.view(2, 3, 4, 24)[:, :1].expand(2, 3, 4, 24)
                             .reshape(24, 24))
            lin.bias.copy_(lin.bias.view(2, 3, 4)[:, :1].expand(2, 3, 4).reshape(24))
    x = x_of(1, 5, 24)
    with torch.no_grad():
        assert_same_maths(gqa.from_mha(base, 2)(x), base(x), reduction=24,
                          why="pooled GQA of identical heads vs MHA: same maths, other shapes")


def test_rope_variant_matches_rope_layer():
    torch.manual_seed(0)
    rope_layer = positions.RopeSelfAttention(16, 4).double()
    layer = gqa.from_mha(rope_layer)
    assert layer.rope
    x = x_of(2, 7, 16)
    with torch.no_grad():
        assert_same_maths(layer(x), rope_layer(x), reduction=16,
                          why="GQA with RoPE vs the RoPE layer: same maths, other shapes")


@pytest.mark.parametrize("n_kv", [1, 2, 4])
def test_cache_bytes_formula_equals_real_tensors(n_kv):
    model = gqa.GQADecoder(d_model=32, n_heads=4, n_kv_heads=n_kv, n_layers=3, max_len=64)
    caches = model.prefill(torch.arange(20) % 64)
    assert all(k.shape == (1, n_kv, 20, 8) and v.shape == k.shape for k, v in caches)
    assert gqa.tensor_bytes(caches) == gqa.kv_cache_bytes(3, 20, n_kv, 8)


@pytest.mark.parametrize("n_kv", [1, 2, 4])
def test_cached_decoding_equals_recomputation(n_kv):
    model = gqa.GQADecoder(d_model=32, n_heads=4, n_kv_heads=n_kv, max_len=64)
    prompt = torch.tensor([3, 1, 4, 1, 5])
    with torch.no_grad():
        a = model.generate(prompt, 12, use_cache=True)
        b = model.generate(prompt, 12, use_cache=False)
    # token ids (integers): exact; each is the argmax of logits that agree to ~1e-6 below
    assert_same_run(a, b, why="cached and recomputed decoding pick the same token ids")
    # the cached path's logits equal the full forward pass's
    with torch.no_grad():
        full = model(a[None])
        caches = [[None, None] for _ in model.layers]
        x = model.embed(a[None]) + model.pos(torch.arange(len(a)))
        for layer, cache in zip(model.layers, caches, strict=True):
            x = model._block(layer, x, cache)
        torch.testing.assert_close(model.head(model.ln_f(x)), full, rtol=1e-5, atol=1e-5)


def test_decode_times_rows():
    rows = gqa.decode_times([1, 4], prompt_len=16, n_new=4, d_model=32, n_heads=4,
                            repeats=1)
    assert [r["n_kv_heads"] for r in rows] == [1, 4]
    assert all(r["cache_bytes"] == r["formula_bytes"] > 0 for r in rows)
    assert rows[1]["cache_bytes"] == 4 * rows[0]["cache_bytes"]
    assert all(r["seconds_per_token"] > 0 for r in rows)


def test_llama_style_shape_on_paper():
    s = gqa.LLAMA_STYLE
    per_token = gqa.kv_cache_bytes(s["n_layers"], 1, s["n_kv_heads"], s["d_head"],
                                   s["bytes_per_number"])
    assert per_token == 2 * 32 * 8 * 128 * 2
    assert gqa.kv_cache_bytes(32, 1, 32, 128, 2) == 4 * per_token


def test_gqa_encoder(one_thread):
    same = variants.gqa_encoder(4, seed=0)
    rope = variants.positional_encoder("rope", seed=0)
    ids = torch.randint(0, 10, (2, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        # the same weights, but the GQA layer projects K and V through other matrix shapes:
        # a BLAS may round them differently (9.5e-7 on an AVX-512 CPU, issue 30)
        assert_same_maths(same(ids), rope(ids), reduction=64 * 2,
                          why="gqa_encoder(n_heads) vs the RoPE encoder: same weights, other "
                              "projections (d_model 64, 2 layers)")
    small = variants.gqa_encoder(1, n_layers=1, seed=0)
    assert small.blocks[0].attn.w_k.weight.shape == (16, 64)
    train_set, test_set = train.default_data()
    history = fit(small, train_set[:200], test_set[:50], steps=3, progress=False,
                        threads=1)
    assert history.final_accuracy is not None


def test_gqa_rope_gap_is_rounding_only(one_thread):
    # what chapter 11 words: 0.0 ("bit for bit") on some CPUs, ~1e-6 ("up to rounding") on others
    gap = variants.gqa_rope_gap(n_layers=1, seed=0, n_orders=4)
    assert 0.0 <= gap <= rounding_tolerance(torch.float32, 64)
    with pytest.raises(ValueError, match="n_orders=0 is too small"):
        variants.gqa_rope_gap(n_orders=0)


def test_bad_input():
    with pytest.raises(ValueError, match=r"n_kv_heads=3 does not divide n_heads=8.*\{1, 2, 4, 8\}"):
        gqa.GroupedQueryAttention(32, 8, 3)
    with pytest.raises(ValueError, match="n_kv_heads=0 is too small"):
        gqa.check_groups(4, 0)
    with pytest.raises(TypeError, match="sdpa must be True or False"):
        gqa.GroupedQueryAttention(32, 8, 2, sdpa="yes")
    with pytest.raises(ValueError, match="even head width"):
        gqa.GroupedQueryAttention(12, 4, 2, rope=True)
    with pytest.raises(ValueError, match="query_head=8 is too large"):
        gqa.kv_head_of(8, 8, 2)
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        gqa.from_mha(torch.nn.Linear(4, 4))
    with pytest.raises(TypeError, match="from_mha"):
        gqa.GroupedQueryAttention.from_module(mha())
    with pytest.raises(ValueError, match="x has 5 features"):
        gqa.GroupedQueryAttention(8, 2, 1)(torch.zeros(1, 3, 5))
    with pytest.raises(ValueError, match="n_tokens=-1 is too small"):
        gqa.kv_cache_bytes(1, -1, 1, 1)
    with pytest.raises(TypeError, match=r"list of \[K, V\] pairs"):
        gqa.tensor_bytes([])
    with pytest.raises(ValueError, match="leave out attention="):
        variants.gqa_encoder(2, attention="sdpa")
    with pytest.raises(ValueError, match="n_kv_heads=3 does not divide"):
        gqa.GQADecoder(n_heads=4, n_kv_heads=3)
    with pytest.raises(ValueError, match="at least one"):
        gqa.decode_times([])


# --- multi-head latent attention (book.ideas.mla)
# ----------------------------------------------------

@settings(max_examples=25, deadline=None, derandomize=True)
@given(n_heads=st.sampled_from([1, 2, 4, 8]), n=st.integers(1, 10), seed=st.integers(0, 50))
def test_mla_full_rank_equals_mha_and_absorbed_equals_explicit(n_heads, n, seed):
    from book.ideas import mla

    base = mha(16, n_heads, seed)
    x = x_of(2, n, 16, seed)
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    with torch.no_grad():
        full = mla.from_mha(base)
        why = "full-rank MLA vs MHA: same maths through a latent projection"
        assert_same_maths(full(x), base(x), reduction=16, why=why)
        assert_same_maths(full(x, causal), base(x, causal), reduction=16, why=why)
        for r in (1, 5, 16):
            layer = mla.from_mha(base, r)
            c = layer.latent(x)
            assert c.shape == (2, n, r)
            why = "absorbed vs explicit MLA: W_UK folded into the query, other products"
            assert_same_maths(layer.attend_absorbed(x, c), layer(x), reduction=16, why=why)
            assert_same_maths(layer.attend_absorbed(x, c, causal), layer(x, causal),
                              reduction=16, why=why)


def test_mla_error_shrinks_with_rank_and_cache_bytes():
    from book.ideas import mla

    base = mha(32, 4)
    x = x_of(1, 9, 32)
    with torch.no_grad():
        errors = [(mla.from_mha(base, r)(x) - base(x)).abs().max().item() for r in (4, 16, 32)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-12
    assert mla.latent_cache_bytes(2, 10, 16) == 2 * 10 * 16 * 4
    with pytest.raises(ValueError, match="d_latent=33 is too large"):
        mla.from_mha(base, 33)
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        mla.from_mha(gqa.GroupedQueryAttention(32, 4, 2))
    with pytest.raises(ValueError, match="d_latent=0 is too small"):
        mla.LatentAttention(32, 4, 0)
    with pytest.raises(ValueError, match="latents from"):
        mla.from_mha(base, 8).attend_absorbed(x, torch.zeros(1, 9, 7, dtype=torch.float64))
