"""Tests of book.ideas.masks: construction, broadcasting, conventions and error messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_same_maths, assert_same_run

from book.ideas import masks

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)


# ---- causal_mask ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 5])
def test_causal_mask_allows_exactly_the_past_and_present(n):
    m = masks.causal_mask(n)
    assert m.dtype == torch.bool and m.shape == (n, n)
    for i in range(n):
        for j in range(n):
            assert bool(m[i, j]) == (j <= i)


@pytest.mark.parametrize("bad, err, text", [
    (0, ValueError, "at least 1"),
    (-3, ValueError, "at least 1"),
    (2.5, TypeError, "integer"),
    (True, TypeError, "integer"),
])
def test_causal_mask_rejects_bad_sizes(bad, err, text):
    with pytest.raises(err, match=text):
        masks.causal_mask(bad)


# ---- padding_mask -----------------------------------------------------------------------------

def test_padding_mask_right_and_left():
    right = masks.padding_mask([3, 1], 4)
    assert right.tolist() == [[True, True, True, False], [True, False, False, False]]
    left = masks.padding_mask([3, 1], 4, side="left")
    assert left.tolist() == [[False, True, True, True], [False, False, False, True]]


@pytest.mark.parametrize("lengths", [[2, 4, 1], np.array([2, 4, 1]), torch.tensor([2, 4, 1])])
def test_padding_mask_accepts_lists_arrays_tensors_and_defaults_n_to_max(lengths):
    m = masks.padding_mask(lengths)
    assert m.shape == (3, 4)
    assert m.sum(dim=1).tolist() == [2, 4, 1]


@given(lengths=st.lists(st.integers(1, 64), min_size=1, max_size=3), extra=st.integers(0, 5),
       side=st.sampled_from(["right", "left"]))
@SETTINGS
def test_padding_mask_property(lengths, extra, side):
    n = max(lengths) + extra
    m = masks.padding_mask(lengths, n, side=side)
    assert m.shape == (len(lengths), n)
    assert m.sum(dim=1).tolist() == lengths
    for row in m.tolist():
        # the real tokens form one contiguous block at the chosen end
        if side == "right":
            assert row == sorted(row, reverse=True)
        else:
            assert row == sorted(row)


@pytest.mark.parametrize("lengths, n, err, text", [
    ([0, 2], 3, ValueError, "at least 1"),
    ([5], 3, ValueError, "must be at least max"),
    ([1.5, 2], 3, TypeError, "integers"),
    ([[1, 2]], 3, ValueError, "1-D"),
    ([], 3, ValueError, "1-D"),
    ("ab", 3, TypeError, "integers"),
])
def test_padding_mask_rejects_bad_lengths(lengths, n, err, text):
    with pytest.raises(err, match=text):
        masks.padding_mask(lengths, n)


def test_padding_mask_rejects_bad_side():
    with pytest.raises(ValueError, match="side"):
        masks.padding_mask([1], 2, side="middle")


# ---- as_mask: non-boolean masks get a helpful message -----------------------------------------

@pytest.mark.parametrize("bad", [torch.ones(3, 3), torch.ones(3, 3, dtype=torch.int64),
                                 np.ones((3, 3)), [[1, 0], [1, 1]]])
def test_non_boolean_mask_says_call_bool_and_names_the_convention(bad):
    with pytest.raises(TypeError) as info:
        masks.as_mask(bad)
    message = str(info.value)
    assert ".bool()" in message
    assert "True = the query may attend" in message


def test_additive_mask_passed_as_boolean_points_to_from_additive_not_bool():
    additive = masks.to_additive(masks.causal_mask(3))
    with pytest.raises(TypeError) as info:
        masks.as_mask(additive)
    assert "from_additive" in str(info.value)
    assert "NOT .bool()" in str(info.value)


@pytest.mark.parametrize("bad, err, text", [
    ("mask", TypeError, "boolean torch tensor"),
    (None, TypeError, "boolean torch tensor"),
    (torch.ones(2, dtype=torch.bool), ValueError, "2-D or 3-D or 4-D"),
    (torch.ones(0, 3, dtype=torch.bool), ValueError, "empty"),
])
def test_as_mask_rejects_non_masks(bad, err, text):
    with pytest.raises(err, match=text):
        masks.as_mask(bad)


def test_as_mask_accepts_numpy_and_lists():
    assert masks.as_mask(np.eye(2, dtype=bool)).tolist() == [[True, False], [False, True]]
    assert masks.as_mask([[True, False], [True, True]]).dtype == torch.bool


# ---- combine ----------------------------------------------------------------------------------

def test_combine_causal_and_padding_by_hand():
    m = masks.combine(masks.causal_mask(3), masks.padding_mask([3, 2]))
    assert m.shape == (2, 1, 3, 3)
    assert m[0, 0].tolist() == masks.causal_mask(3).tolist()
    assert m[1, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


@given(batch=st.integers(1, 3), n=st.integers(1, 64), n_heads=st.integers(1, 4),
       mask_ndim=st.sampled_from([None, 2, 3, 4]), use_padding=st.booleans(),
       seed=st.integers(0, 2**31 - 1))
@SETTINGS
def test_combine_is_the_broadcast_and_of_its_inputs(batch, n, n_heads, mask_ndim, use_padding,
                                                    seed):
    if mask_ndim is None and not use_padding:
        use_padding = True
    gen = torch.Generator().manual_seed(seed)
    full = torch.rand(batch, n_heads, n, n, generator=gen) < 0.6
    mask = {None: None, 2: full[0, 0], 3: full[:, 0], 4: full}[mask_ndim]
    lengths = torch.randint(1, n + 1, (batch,), generator=gen)
    pad = masks.padding_mask(lengths, n) if use_padding else None
    out = masks.combine(mask, pad, n_heads=n_heads)
    # a lone (n, n) mask has no batch axis: it comes back with a batch axis of 1 (broadcasts)
    out_batch = 1 if (mask_ndim == 2 and pad is None) else batch
    assert out.shape == (out_batch, n_heads, n, n)
    for b in range(out_batch):
        for h in range(n_heads):
            expected = torch.ones(n, n, dtype=torch.bool)
            if mask_ndim == 2:
                expected &= full[0, 0]
            elif mask_ndim == 3:
                expected &= full[b, 0]
            elif mask_ndim == 4:
                expected &= full[b, h]
            if pad is not None:
                expected &= pad[b][None, :]
            assert_same_run(out[b, h], expected, why="boolean masks: no rounding")


def test_combine_without_n_heads_keeps_head_axis_of_one():
    assert masks.combine(masks.causal_mask(4)).shape == (1, 1, 4, 4)


@pytest.mark.parametrize("kwargs, err, text", [
    ({}, ValueError, "at least one"),
    ({"mask": masks.causal_mask(3), "padding_mask": masks.padding_mask([2], 2)}, ValueError,
     "same keys"),
    ({"mask": torch.ones(2, 3, 3, dtype=torch.bool),
      "padding_mask": masks.padding_mask([1] * 3, 3)}, ValueError, "batch size 2"),
    ({"mask": torch.ones(1, 3, 2, 2, dtype=torch.bool), "n_heads": 2}, ValueError, "n_heads=2"),
    ({"padding_mask": torch.ones(2, 3)}, TypeError, "padding_mask must be boolean"),
    ({"padding_mask": masks.causal_mask(3)[None]}, ValueError, "padding_mask must be 2-D"),
])
def test_combine_rejects_inconsistent_inputs(kwargs, err, text):
    with pytest.raises(err, match=text):
        masks.combine(**kwargs)


# ---- fully masked rows ------------------------------------------------------------------------

def test_fully_masked_rows_finds_them():
    m = torch.tensor([[True, False], [False, False]])
    assert masks.fully_masked_rows(m).tolist() == [[1]]
    assert masks.fully_masked_rows(masks.causal_mask(5)).numel() == 0
    left = masks.combine(masks.causal_mask(3), masks.padding_mask([2], 3, side="left"))
    # left padding + causal: query 0 may only look at key 0, which is padding
    assert masks.fully_masked_rows(left).tolist() == [[0, 0, 0]]


# ---- converters -------------------------------------------------------------------------------

def test_to_torch_conventions_are_the_negation():
    causal = masks.causal_mask(3)
    assert torch.equal(masks.to_torch_attn_mask(causal), ~causal)  # exact: boolean masks
    pad = masks.padding_mask([3, 1], 3)
    assert masks.to_torch_key_padding_mask(pad).tolist() == [[False, False, False],
                                                             [False, True, True]]


def test_to_torch_attn_mask_layout_is_batch_major():
    gen = torch.Generator().manual_seed(0)
    m = torch.rand(2, 3, 4, 4, generator=gen) < 0.5
    flat = masks.to_torch_attn_mask(m)
    assert flat.shape == (6, 4, 4)
    # exact below: boolean masks, no rounding
    for b in range(2):
        for h in range(3):
            assert torch.equal(flat[b * 3 + h], ~m[b, h])
    shared = masks.to_torch_attn_mask(m[:, :1], n_heads=3)
    for b in range(2):
        for h in range(3):
            assert torch.equal(shared[b * 3 + h], ~m[b, 0])


def test_to_torch_attn_mask_needs_n_heads_for_shared_masks():
    with pytest.raises(ValueError, match="n_heads"):
        masks.to_torch_attn_mask(torch.ones(2, 3, 3, dtype=torch.bool))


@given(batch=st.integers(1, 3), n=st.integers(1, 16), n_heads=st.integers(1, 4),
       seed=st.integers(0, 2**31 - 1))
@SETTINGS
def test_converters_round_trip(batch, n, n_heads, seed):
    gen = torch.Generator().manual_seed(seed)
    m = torch.rand(batch, n_heads, n, n, generator=gen) < 0.5
    flat = masks.to_torch_attn_mask(m, n_heads)
    assert flat.shape == (batch * n_heads, n, n)
    # exact below: boolean masks (from_additive reads 0 / -inf back), no rounding
    assert torch.equal(masks.from_torch_attn_mask(flat, n_heads), m)
    assert torch.equal(masks.from_torch_attn_mask(masks.to_torch_attn_mask(m[0, 0])), m[0, 0])
    pad = m[:, 0, 0]
    assert torch.equal(masks.from_torch_key_padding_mask(masks.to_torch_key_padding_mask(pad)),
                       pad)
    for dtype in (torch.float32, torch.float64):
        additive = masks.to_additive(m, dtype=dtype)
        assert additive.dtype == dtype
        assert torch.equal(masks.from_additive(additive), m)


@given(n=st.integers(1, 32), seed=st.integers(0, 2**31 - 1))
@SETTINGS
def test_additive_mask_gives_the_same_attention_as_the_boolean_one(n, seed):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 2, n, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    m = (torch.rand(1, 2, n, n, generator=gen) < 0.5) | torch.eye(n, dtype=torch.bool)
    with_bool = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    with_float = F.scaled_dot_product_attention(q, k, v,
                                                attn_mask=masks.to_additive(m, torch.float64))
    assert_same_maths(with_bool, with_float, reduction=max(n, 4),
                      why="SDPA with a boolean vs an additive mask: two kernels")


def test_from_additive_accepts_large_negative_numbers_and_rejects_soft_biases():
    big = torch.tensor([[0.0, torch.finfo(torch.float32).min]])
    assert masks.from_additive(big).tolist() == [[True, False]]
    with pytest.raises(ValueError, match="soft score bias"):
        masks.from_additive(torch.tensor([[0.0, -0.5]]))
    with pytest.raises(TypeError, match="float tensor"):
        masks.from_additive(torch.ones(2, 2, dtype=torch.bool))


def test_from_torch_attn_mask_errors():
    with pytest.raises(TypeError, match="from_additive"):
        masks.from_torch_attn_mask(torch.zeros(2, 2))
    with pytest.raises(ValueError, match="pass n_heads"):
        masks.from_torch_attn_mask(torch.zeros(4, 2, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="not a multiple"):
        masks.from_torch_attn_mask(torch.zeros(5, 2, 2, dtype=torch.bool), n_heads=2)


def test_to_additive_rejects_integer_dtype():
    with pytest.raises(TypeError, match="floating"):
        masks.to_additive(masks.causal_mask(2), dtype=torch.int64)
