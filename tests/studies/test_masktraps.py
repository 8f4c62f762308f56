"""book.studies.masktraps (chapters 4 and 7): the dtype table, the three ways to treat a fully
masked row, LooseAttention against PyTorch's own attention, loosen(), the data of the bug
explorer and of chapter 4's mask explorer (mask_data). The chapters' figures, explorers and
exercises: tests/chapters/test_ch04_pytorch.py, tests/chapters/test_ch07_mask_traps.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tolerance import assert_same_run

from book.ideas import masks, mha
from book.studies import masktraps
from book.toy import orders, train
from book.toy.fit import fit
from book.toy.model import TinyEncoder

# ---- dtype_outcome ------------------------------------------------------------------------------

@pytest.mark.parametrize("api", masktraps.APIS)
def test_bool_masks_are_the_reference(api):
    out = masktraps.dtype_outcome(api, "bool")
    # exact: the boolean mask against itself is the same computation run twice
    assert not out["raised"] and out["same_as_bool"] and out["max_diff"] == 0.0


@pytest.mark.parametrize("api", masktraps.APIS)
@pytest.mark.parametrize("dtype", ["uint8", "int64"])
def test_integer_masks_are_refused_by_current_torch(api, dtype):
    out = masktraps.dtype_outcome(api, dtype)
    assert out["raised"], out
    assert out["message"] and out["error"] in ("RuntimeError", "AssertionError")


def test_float_masks_run_and_differ_except_masked_fill():
    table = {r["api"]: r for r in masktraps.dtype_table(dtypes=["float32"])}
    assert table["masked_fill"]["raised"]
    for api in masktraps.APIS[1:]:
        assert not table[api]["raised"] and not table[api]["same_as_bool"], api
        assert table[api]["max_diff"] > 1e-3


def test_dtype_outcome_rejects_bad_names():
    with pytest.raises(ValueError, match="api"):
        masktraps.dtype_outcome("attention", "bool")
    with pytest.raises(ValueError, match="dtype"):
        masktraps.dtype_outcome("masked_fill", "int8")
    assert len(masktraps.dtype_table()) == len(masktraps.APIS) * len(masktraps.MASK_DTYPES)


# ---- masked_weights --------------------------------------------------------------------------

def _scores_and_mask():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 3, 4, 4, generator=gen)
    allowed = torch.rand(2, 3, 4, 4, generator=gen) < 0.5
    allowed[0, 0, 1] = False      # a fully masked row
    allowed[1, 2, 3] = False
    allowed[0, 1, 2] = True
    return scores, allowed


def test_masked_weights_three_handlings_differ_only_on_empty_rows():
    scores, allowed = _scores_and_mask()
    empty = ~allowed.any(-1)
    w_inf = masktraps.masked_weights(scores, allowed, "-inf")
    w_fin = masktraps.masked_weights(scores, allowed, "-1e9")
    w_sdpa = masktraps.masked_weights(scores, allowed, "sdpa")
    assert torch.isnan(w_inf[empty]).all() and not torch.isnan(w_inf[~empty]).any()
    torch.testing.assert_close(w_fin[empty], torch.full_like(w_fin[empty], 0.25))
    assert (w_sdpa[empty] == 0).all()
    for w in (w_fin, w_sdpa):
        torch.testing.assert_close(w[~empty], w_inf[~empty])
        assert (w[~empty][~allowed[~empty]] == 0).all()


def test_sdpa_handling_matches_torch_sdpa_on_fully_masked_rows():
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 5, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    allowed = torch.rand(2, 2, 5, 5, generator=gen) < 0.4
    allowed[0, 1, 2] = False
    allowed[1, 0, 0] = False
    weights = masktraps.masked_weights(q @ k.transpose(-2, -1) / 2.0, allowed, "sdpa")
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(weights @ v, want)


def test_masked_weights_input_checks():
    scores, allowed = _scores_and_mask()
    with pytest.raises(ValueError, match="handling"):
        masktraps.masked_weights(scores, allowed, "zero")
    with pytest.raises(TypeError, match="boolean"):
        masktraps.masked_weights(scores, allowed.int())
    with pytest.raises(TypeError, match="float"):
        masktraps.masked_weights(scores.long(), allowed)


# ---- LooseAttention and loosen ----------------------------------------------------------------

def test_loose_attention_without_bug_equals_the_book_layer():
    torch.manual_seed(0)
    book_layer = mha.MultiHeadSelfAttention(8, 2, dtype=torch.float64).eval()
    loose = masktraps.LooseAttention.from_module(book_layer)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    pad = masks.padding_mask([5, 3], 5)
    causal = masks.causal_mask(5)
    for kw in ({}, {"padding_mask": pad}, {"mask": causal, "padding_mask": pad}):
        want, w_want = book_layer(x, need_weights=True, **kw)
        for handling in masktraps.HANDLING:
            loose.handling = handling
            got, w_got = loose(x, need_weights=True, **kw)
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(w_got, w_want)


def test_flipped_loose_attention_is_nn_multihead_attention_given_the_book_mask():
    torch.manual_seed(1)
    loose = masktraps.LooseAttention(8, 2, flip=True, handling="-inf",
                                     dtype=torch.float64).eval()
    torch_mha = mha.copy_to_torch_mha(loose).eval()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    pad = masks.padding_mask([5, 3], 5)      # the book's convention: True = real token
    with torch.no_grad():
        out, weights = loose(x, padding_mask=pad, need_weights=True)
        t_out, t_weights = torch_mha(x, x, x, key_padding_mask=pad,
                                     average_attn_weights=False)
    torch.testing.assert_close(weights, t_weights, equal_nan=True)
    torch.testing.assert_close(out, t_out, equal_nan=True)
    assert torch.isnan(out[0]).all() and not torch.isnan(out[1]).any()


def test_flipped_sdpa_handling_equals_sdpa_given_the_torch_mask():
    torch.manual_seed(2)
    loose = masktraps.LooseAttention(8, 2, flip=True, handling="sdpa").eval()
    x = torch.randn(2, 4, 8)
    pad = masks.padding_mask([4, 2], 4)
    q, k, v = (loose.split_heads(w(x)) for w in (loose.w_q, loose.w_k, loose.w_v))
    with torch.no_grad():
        got = loose(x, padding_mask=pad)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=(~pad)[:, None, None, :])
        want = loose.w_o(loose.merge_heads(context))
    torch.testing.assert_close(got, want)


def test_loose_attention_checks_its_switches():
    with pytest.raises(TypeError, match="flip"):
        masktraps.LooseAttention(8, 2, flip=1)
    with pytest.raises(ValueError, match="handling"):
        masktraps.LooseAttention(8, 2, handling="nan")
    layer = masktraps.LooseAttention(8, 2, flip=True, handling="-1e9")
    assert "flip=True" in repr(layer) and "-1e9" in repr(layer)
    with pytest.raises(TypeError, match="boolean"):
        layer(torch.randn(1, 3, 8), padding_mask=torch.ones(1, 3, dtype=torch.uint8))


def test_loosen_copies_and_keeps_the_original():
    model = TinyEncoder(d_model=16, n_heads=2, seed=3)
    loose = masktraps.loosen(model, flip=False, handling="sdpa")
    assert all(isinstance(b.attn, masktraps.LooseAttention) for b in loose.blocks)
    assert not any(isinstance(b.attn, masktraps.LooseAttention) for b in model.blocks)
    batch = orders.collate(orders.generate(6, seed=1))
    with torch.no_grad():
        torch.testing.assert_close(loose(batch.ids, batch.padding_mask),
                                   model(batch.ids, batch.padding_mask))
        flipped = masktraps.loosen(model, flip=True, handling="-inf")
        logits = flipped(batch.ids, batch.padding_mask)
    full = batch.padding_mask.all(dim=1)   # orders with no padding: every key blocked
    assert full.any() and torch.isnan(logits[full]).all()
    with pytest.raises(TypeError, match="TinyEncoder"):
        masktraps.loosen(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="flip"):
        masktraps.loosen(model, flip="yes")
    with pytest.raises(ValueError, match="handling"):
        masktraps.loosen(model, handling="zeros")


def test_flipped_minus_inf_training_stops_at_the_first_step():
    train_orders = orders.generate(40, seed=2)
    model = masktraps.loosen(TinyEncoder(d_model=16, n_heads=2), flip=True,
                             handling="-inf")
    history = fit(model, train_orders, steps=3, batch_size=40, progress=False,
                        bucket=False)
    assert history.diverged and history.steps == 1 and math.isnan(history.loss[0])


def test_nan_share():
    layer = torch.nn.Linear(3, 2)
    assert masktraps.nan_share(layer) == 0.0
    with torch.no_grad():
        layer.weight[0, 0] = float("nan")
    assert masktraps.nan_share(layer) == pytest.approx(1 / 8)
    with pytest.raises(TypeError):
        masktraps.nan_share("model")
    with pytest.raises(ValueError, match="no parameters"):
        masktraps.nan_share(torch.nn.ReLU())


# ---- the bug explorer ------------------------------------------------------------------------

@pytest.mark.parametrize("bug", masktraps.BUGS)
@pytest.mark.parametrize("length,padding", [(1, 0), (1, 8), (8, 8), (5, 2), (8, 0)])
def test_bug_data_shapes_and_invariants(bug, length, padding):
    d = masktraps.bug_data(bug, length, padding)
    n = len(d["labels"])
    assert len(set(d["labels"])) == n
    assert d["allowed"].shape == d["weights"].shape == (n, n)
    w = d["weights"]
    finite = np.isfinite(w).all(axis=1)
    assert d["nan_rows"] == int((~finite).sum())
    sums = w[finite].sum(axis=1)
    assert np.all((np.abs(sums - 1) < 1e-5) | (sums == 0))


def test_bug_data_tells_each_story():
    assert masktraps.bug_data("correct")["real_on_pad"] == 0.0
    assert masktraps.bug_data("flipped")["real_on_pad"] == pytest.approx(1.0)
    d = masktraps.bug_data("flipped, no padding", 5, 3)
    assert d["padding"] == 0 and d["zero_rows"] == 5
    assert masktraps.bug_data("~uint8, -inf")["nan_rows"] == 7
    assert masktraps.bug_data("~uint8, -1e9")["uniform_rows"] == 7
    assert masktraps.bug_data("float 0/1 added")["real_on_pad"] > 0.05
    left = masktraps.bug_data("left pad + causal, -inf", 5, 2)
    assert left["labels"][:2] == ["pad1", "pad2"] and left["nan_rows"] == 2
    assert masktraps.bug_data("left pad + causal, -1e9", 5, 2)["uniform_rows"] == 2
    right = masktraps.bug_data("right pad + causal", 5, 2)
    assert right["nan_rows"] == 0 and right["real_on_pad"] == 0.0
    with pytest.raises(ValueError, match="bug"):
        masktraps.bug_data("nothing")
    with pytest.raises(ValueError, match="length"):
        masktraps.bug_data("correct", 0)
    with pytest.raises(ValueError, match="padding"):
        masktraps.bug_data("correct", 3, 9)


# ---- exercises ---------------------------------------------------------------------------------


def test_nan_step_spreads_nan_from_a_flipped_mask_and_checks_input():
    train_orders, _ = train.default_data()
    batch = orders.collate(train_orders[:32])
    model = masktraps.loosen(TinyEncoder(**train.MODEL), flip=True, handling="-inf")
    step = masktraps.nan_step(model, batch, clip=True)
    assert step["logits"] > 0 and step["params"] > 0.5
    with pytest.raises(TypeError, match="clip"):
        masktraps.nan_step(model, batch, clip=1)
    with pytest.raises(TypeError, match="collate"):
        masktraps.nan_step(model, [1, 2], clip=False)


MAX_LEN = masktraps.MASK_MAX_REAL + masktraps.MASK_MAX_PAD


EXTREMES = [(1, 1), (1, MAX_LEN), (masktraps.MASK_MAX_REAL, masktraps.MASK_MAX_REAL),
            (masktraps.MASK_MAX_REAL, MAX_LEN), (5, 7)]


@pytest.mark.parametrize("kind", masktraps.MASK_KINDS)
@pytest.mark.parametrize("length,seq_len", EXTREMES)
def test_mask_data_follows_the_book_masks(kind, length, seq_len):
    d = masktraps.mask_data(kind, length, seq_len)
    allowed, w = d["allowed"], d["weights"]
    assert allowed.shape == w.shape == (seq_len, seq_len) and allowed.dtype == bool
    want = np.ones((seq_len, seq_len), dtype=bool)
    if "causal" in kind:
        want &= masks.causal_mask(seq_len).numpy()
    if "padding" in kind:
        want &= masks.padding_mask([length], seq_len).numpy()[0][None, :]
    np.testing.assert_array_equal(allowed, want)  # exact: boolean masks
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(w[~allowed] == 0.0)  # blocked means exactly zero, not small
    assert np.all(w[allowed] > 0)
    assert len(set(d["labels"])) == seq_len  # plotly merges equal category labels
    if "padding" in kind or seq_len == length:
        assert d["pad_share"] == 0.0
    if "causal" in kind:
        assert d["future_share"] == 0.0


def test_without_a_mask_attention_leaks_to_padding_and_future():
    d = masktraps.mask_data("none", 5, 8)
    assert d["pad_share"] > 0.1 and d["future_share"] > 0.1
    assert d["labels"][:5] == ["一碗", "牛肉面", "，", "不要", "香菜"]
    assert d["labels"][5:] == ["pad₁", "pad₂", "pad₃"]


def test_mask_data_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    masktraps._seeded_layer.cache_clear()  # force the layer to be built again
    masktraps.mask_data("causal", 3, 4)
    assert_same_run(torch.rand(1), expected, why="the same RNG state draws the same number")


@pytest.mark.parametrize("args,err,text", [
    (("causal+padding", 3, 4), ValueError, "not one of"),
    (("none", 0, 4), ValueError, "at least 1"),
    (("none", masktraps.MASK_MAX_REAL + 1, MAX_LEN), ValueError, "at most"),
    (("none", 5, 3), ValueError, "shorter than length"),
    (("none", 3, MAX_LEN + 1), ValueError, "at most"),
    (("none", 2.0, 4), TypeError, "integer"),
])
def test_mask_data_bad_input(args, err, text):
    with pytest.raises(err, match=text):
        masktraps.mask_data(*args)
