"""Tests of book.ideas.mha against PyTorch's own attention (nn.MultiheadAttention and SDPA)."""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tolerance import assert_same_run
from torch import nn

from book.ideas import masks, mha
from book.ideas.mha import (
    MultiHeadSelfAttention,
    MultiHeadSelfAttentionLoop,
    MultiHeadSelfAttentionSDPA,
)

SETTINGS = settings(max_examples=100, deadline=None, derandomize=True)
MASK_KINDS = ("none", "causal", "padding", "both", "per_head")

# Tolerances for assert_close (used where values are O(1)).
TOL = {torch.float32: {"atol": 5e-5, "rtol": 5e-5}, torch.float64: {"atol": 1e-10, "rtol": 1e-10}}
# Outputs and gradients grow with the input scale, so they are compared with a bound relative to
# the reference's size: max|got - want| <= SCALED_TOL * (1 + max|want|). Over 500 random cases
# the worst ratio measured was 5.3e-6 (float32, gradients vs nn.MultiheadAttention) and 3.4e-14
# (float64); a real bug (wrong scale, head order, mask layout) moves results by 1e-2 or more.
SCALED_TOL = {torch.float32: 5e-5, torch.float64: 1e-11}


def assert_near(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype, label: str = ""):
    assert got.shape == want.shape, f"{label}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    assert got.dtype == want.dtype == dtype, f"{label}: dtype {got.dtype} / {want.dtype}"
    err = (got - want).abs().max().item()
    bound = SCALED_TOL[dtype] * (1 + want.abs().max().item())
    assert err <= bound, f"{label}: max difference {err:.3g} > allowed {bound:.3g}"


@dataclass(frozen=True)
class Case:
    batch: int
    seq: int
    n_heads: int
    d_k: int
    kind: str
    dtype: torch.dtype
    bias: bool
    scale: float
    seed: int

    @property
    def d_model(self) -> int:
        return self.n_heads * self.d_k


@st.composite
def cases(draw, max_seq: int = 64) -> Case:
    return Case(batch=draw(st.integers(1, 3)), seq=draw(st.integers(1, max_seq)),
                n_heads=draw(st.integers(1, 4)), d_k=draw(st.integers(1, 8)),
                kind=draw(st.sampled_from(MASK_KINDS)),
                dtype=draw(st.sampled_from([torch.float32, torch.float64])),
                bias=draw(st.booleans()), scale=draw(st.sampled_from([0.5, 1.0, 3.0])),
                seed=draw(st.integers(0, 2**31 - 1)))


def make_torch_mha(case: Case, gen: torch.Generator) -> nn.MultiheadAttention:
    """A torch MHA with every parameter (biases too: torch starts them at 0) drawn from ``gen``."""
    with torch.random.fork_rng(devices=[]):  # construction draws from the global RNG
        layer = nn.MultiheadAttention(case.d_model, case.n_heads, bias=case.bias,
                                      batch_first=True, dtype=case.dtype)
    with torch.no_grad():
        for name, p in layer.named_parameters():
            std = 0.5 if "bias" in name else 1 / math.sqrt(case.d_model)
            p.copy_(torch.randn(p.shape, generator=gen, dtype=case.dtype) * std)
    return layer


def make_masks(case: Case, gen: torch.Generator):
    """(book mask, book padding mask, torch attn_mask, torch key_padding_mask) for the case."""
    n, mask, pad, attn_mask, key_padding = case.seq, None, None, None, None
    if case.kind in ("causal", "both"):
        mask = masks.causal_mask(n)
        attn_mask = masks.to_torch_attn_mask(mask)
    if case.kind in ("padding", "both"):
        pad = masks.padding_mask(torch.randint(1, n + 1, (case.batch,), generator=gen), n)
        key_padding = masks.to_torch_key_padding_mask(pad)
    if case.kind == "per_head":  # a different random mask for every (sequence, head)
        mask = torch.rand(case.batch, case.n_heads, n, n, generator=gen) < 0.5
        mask |= torch.eye(n, dtype=torch.bool)  # every query may at least see itself
        attn_mask = masks.to_torch_attn_mask(mask, n_heads=case.n_heads)
    return mask, pad, attn_mask, key_padding


def run(fn, x, upstream, **kwargs):
    """Output of ``fn(x, **kwargs)`` and the gradient of <output, upstream> w.r.t. ``x``.

    Parameter gradients land in the (freshly built, so previously empty) ``.grad`` fields.
    """
    x = x.clone().requires_grad_(True)
    out = fn(x, **kwargs)
    (out * upstream).sum().backward()
    return out.detach(), x.grad


def compare(case: Case) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Pairs (ours, reference) of outputs and gradients for every implementation."""
    gen = torch.Generator().manual_seed(case.seed)
    ref = make_torch_mha(case, gen)
    if case.seed % 2:  # exercise both copying directions
        ours = mha.from_torch_mha(ref)
    else:
        ours = MultiHeadSelfAttention(case.d_model, case.n_heads, bias=case.bias,
                                      dtype=case.dtype)
        with torch.no_grad():
            for p in ours.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, dtype=case.dtype) * 0.3)
        mha.copy_to_torch_mha(ours, ref)
    x = torch.randn(case.batch, case.seq, case.d_model, generator=gen, dtype=case.dtype)
    x = x * case.scale
    upstream = torch.randn(x.shape, generator=gen, dtype=case.dtype)
    mask, pad, attn_mask, key_padding = make_masks(case, gen)

    out, grad = run(ours, x, upstream, mask=mask, padding_mask=pad)
    grads_ours = {
        "in_proj_weight": torch.cat([ours.w_q.weight.grad, ours.w_k.weight.grad,
                                     ours.w_v.weight.grad]),
        "out_proj.weight": ours.w_o.weight.grad,
    }
    if case.bias:
        grads_ours["in_proj_bias"] = torch.cat([ours.w_q.bias.grad, ours.w_k.bias.grad,
                                                ours.w_v.bias.grad])
        grads_ours["out_proj.bias"] = ours.w_o.bias.grad

    def torch_layer(x):
        return ref(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding,
                   need_weights=False)[0]

    out_ref, grad_ref = run(torch_layer, x, upstream)
    pairs = {"torch output": (out, out_ref), "torch grad x": (grad, grad_ref)}
    params_ref = dict(ref.named_parameters())
    for name, g in grads_ours.items():
        pairs[f"torch grad {name}"] = (g, params_ref[name].grad)
    for label, cls in (("sdpa", MultiHeadSelfAttentionSDPA), ("loop", MultiHeadSelfAttentionLoop)):
        other = cls.from_module(ours)
        out_o, grad_o = run(other, x, upstream, mask=mask, padding_mask=pad)
        pairs[f"{label} output"] = (out_o, out)
        pairs[f"{label} grad x"] = (grad_o, grad)
    return pairs


@given(case=cases())
@example(case=Case(1, 1, 1, 1, "none", torch.float32, True, 1.0, 0))  # one token, one head
@example(case=Case(3, 1, 4, 1, "both", torch.float64, False, 3.0, 1))  # one token, d_k = 1
@example(case=Case(2, 64, 1, 8, "per_head", torch.float32, True, 3.0, 2))  # long, one head
@SETTINGS
def test_matches_torch_mha_and_sdpa_outputs_and_gradients(case):
    pairs = compare(case)
    assert len(pairs) == 6 + (4 if case.bias else 2)
    for label, (got, want) in pairs.items():
        assert got is not None and want is not None, label
        assert_near(got, want, case.dtype, label)


def test_article_usage_example_keeps_the_shape():
    torch.manual_seed(42)
    x = torch.randn(2, 4, 8)
    out = MultiHeadSelfAttention(d_model=8, n_heads=2)(x)
    assert out.shape == (2, 4, 8)
    assert bool(torch.isfinite(out).all())


@given(case=cases(max_seq=16))
@settings(max_examples=40, deadline=None, derandomize=True)
def test_returned_weights_equal_torch_per_head_weights(case):
    gen = torch.Generator().manual_seed(case.seed)
    ref = make_torch_mha(case, gen)
    ours = mha.from_torch_mha(ref)
    x = torch.randn(case.batch, case.seq, case.d_model, generator=gen, dtype=case.dtype)
    mask, pad, attn_mask, key_padding = make_masks(case, gen)
    with torch.no_grad():
        out, weights = ours(x, mask=mask, padding_mask=pad, need_weights=True)
        _, loop_weights = MultiHeadSelfAttentionLoop.from_module(ours)(
            x, mask=mask, padding_mask=pad, need_weights=True)
        _, ref_weights = ref(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding,
                             need_weights=True, average_attn_weights=False)
    assert weights.shape == (case.batch, case.n_heads, case.seq, case.seq)
    torch.testing.assert_close(weights, ref_weights, **TOL[case.dtype])
    torch.testing.assert_close(loop_weights, weights, **TOL[case.dtype])
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)),
                               **TOL[case.dtype])
    if mask is not None or pad is not None:
        allowed = masks.combine(mask, pad, n_heads=case.n_heads)
        blocked = ~allowed.expand_as(weights)
        assert bool((weights[blocked] == 0).all())  # blocked pairs get exactly zero weight


# ---- behaviour that follows from the masks, independent of any reference ---------------------

@given(case=cases(max_seq=32))
@settings(max_examples=40, deadline=None, derandomize=True)
def test_causal_outputs_ignore_future_tokens_and_padding_is_ignored(case):
    gen = torch.Generator().manual_seed(case.seed)
    layer = mha.from_torch_mha(make_torch_mha(case, gen))
    x = torch.randn(case.batch, case.seq, case.d_model, generator=gen, dtype=case.dtype)
    cut = int(torch.randint(0, case.seq, (1,), generator=gen))  # tokens after `cut` change
    changed = x.clone()
    changed[:, cut + 1:] += 10 * torch.randn(changed[:, cut + 1:].shape, generator=gen,
                                             dtype=case.dtype)
    causal = masks.causal_mask(case.seq)
    with torch.no_grad():
        before, after = layer(x, mask=causal), layer(changed, mask=causal)
        torch.testing.assert_close(before[:, :cut + 1], after[:, :cut + 1], **TOL[case.dtype])
        if cut + 1 < case.seq:  # without the mask, the change does reach earlier tokens
            assert not torch.allclose(layer(x)[:, :cut + 1], layer(changed)[:, :cut + 1],
                                      atol=1e-3)
        # padding: real tokens (positions <= cut) never look at the padded ones
        pad = masks.padding_mask([cut + 1] * case.batch, case.seq)
        torch.testing.assert_close(layer(x, padding_mask=pad)[:, :cut + 1],
                                   layer(changed, padding_mask=pad)[:, :cut + 1],
                                   **TOL[case.dtype])


def test_dropout_acts_on_the_weights_and_only_in_training():
    torch.manual_seed(0)
    layer = MultiHeadSelfAttention(8, 2, dropout=0.5).double()
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    layer.eval()
    out_eval, w_eval = layer(x, need_weights=True)
    out_eval_again = layer(x)
    assert_same_run(out_eval, out_eval_again, why="eval mode: the same computation twice")
    layer.train()
    out_train, w_train = layer(x, need_weights=True)
    assert not torch.allclose(out_train, out_eval)
    dropped = w_train == 0
    assert 0 < int(dropped.sum()) < dropped.numel()
    # surviving weights are the eval weights scaled by 1 / (1 - p): dropout came after softmax
    torch.testing.assert_close(w_train[~dropped], w_eval[~dropped] / 0.5)
    sdpa = MultiHeadSelfAttentionSDPA.from_module(layer)
    assert not torch.allclose(sdpa(x), out_eval)  # training mode: SDPA drops weights too
    sdpa.eval()
    torch.testing.assert_close(sdpa(x), out_eval)


# ---- weights moving to and from nn.MultiheadAttention ----------------------------------------

@pytest.mark.parametrize("bias", [True, False])
def test_weight_copies_round_trip(bias):
    torch.manual_seed(1)
    layer = MultiHeadSelfAttention(12, 3, bias=bias)
    ref = mha.copy_to_torch_mha(layer)
    assert ref.batch_first and ref.embed_dim == 12 and ref.num_heads == 3
    assert_same_run(ref.in_proj_weight[4 * 3:8 * 3].detach(), layer.w_k.weight.detach(),
                    why="a copied weight: no arithmetic")
    back = mha.from_torch_mha(ref)
    for (name, a), (_, b) in zip(layer.state_dict().items(), back.state_dict().items(),
                                 strict=True):
        assert_same_run(a, b, why=f"{name}: weights copied there and back, no arithmetic")
    assert (back.w_q.bias is None) == (not bias)


def test_weight_copy_errors():
    layer = MultiHeadSelfAttention(8, 2)
    with pytest.raises(ValueError, match="bias mismatch"):
        mha.copy_to_torch_mha(layer, nn.MultiheadAttention(8, 2, bias=False))
    with pytest.raises(ValueError, match="num_heads=4"):
        mha.copy_to_torch_mha(layer, nn.MultiheadAttention(8, 4))
    with pytest.raises(ValueError, match="add_bias_kv"):
        mha.from_torch_mha(nn.MultiheadAttention(8, 2, add_bias_kv=True))
    with pytest.raises(ValueError, match="kdim"):
        mha.from_torch_mha(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
    with pytest.raises(TypeError, match="MultiheadAttention"):
        mha.from_torch_mha(nn.Linear(8, 8))
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        mha.copy_to_torch_mha(nn.MultiheadAttention(8, 2))


# ---- helpful errors -----------------------------------------------------------------------------

def test_indivisible_d_model_suggests_head_counts():
    with pytest.raises(ValueError) as info:
        MultiHeadSelfAttention(10, 4)
    assert str(info.value) == ("d_model=10 is not divisible by n_heads=4; "
                               "pick n_heads in {1, 2, 5, 10}")


@pytest.mark.parametrize("args, err, text", [
    ((0, 1), ValueError, "d_model=0 is too small"),
    ((8, 0), ValueError, "n_heads=0 is too small"),
    ((8.0, 2), TypeError, "d_model must be an integer"),
    ((8, True), TypeError, "n_heads must be an integer"),
    ((8, 2, -0.1), ValueError, "dropout"),
    ((8, 2, 1.0), ValueError, r"\[0, 1\)"),
    ((8, 2, 0.1, "yes"), TypeError, "bias must be True or False"),
])
def test_constructor_rejects_bad_arguments(args, err, text):
    with pytest.raises(err, match=text):
        MultiHeadSelfAttention(*args)


@pytest.fixture
def layer():
    torch.manual_seed(0)
    return MultiHeadSelfAttention(8, 2)


@pytest.mark.parametrize("x, kwargs, err, text", [
    (np.zeros((1, 3, 8), dtype=np.float32), {}, TypeError, "torch.as_tensor"),
    (torch.zeros(3, 8), {}, ValueError, r"x.unsqueeze\(0\)"),
    (torch.zeros(1, 3, 6), {}, ValueError, "d_model=8"),
    (torch.zeros(1, 0, 8), {}, ValueError, "at least one token"),
    (torch.zeros(1, 3, 8, dtype=torch.float64), {}, TypeError, "dtype torch.float64"),
    (torch.full((1, 3, 8), float("nan")), {}, ValueError, "NaN"),
    (torch.zeros(1, 3, 8), {"mask": masks.causal_mask(4)}, ValueError, r"\(3, 3\)"),
    (torch.zeros(2, 3, 8), {"mask": torch.ones(3, 3, 3, dtype=torch.bool)}, ValueError,
     "batch size 3"),
    (torch.zeros(1, 3, 8), {"mask": torch.ones(1, 3, 3, 3, dtype=torch.bool)}, ValueError,
     "n_heads=2"),
    (torch.zeros(1, 3, 8), {"mask": torch.ones(3, 3)}, TypeError, r"\.bool\(\)"),
    (torch.zeros(1, 3, 8), {"padding_mask": torch.ones(1, 4, dtype=torch.bool)}, ValueError,
     r"\(batch, seq_len\) = \(1, 3\)"),
])
def test_forward_rejects_bad_inputs(layer, x, kwargs, err, text):
    with pytest.raises(err, match=text):
        layer(x, **kwargs)


def test_fully_masked_query_row_raises_instead_of_nan(layer):
    x = torch.zeros(2, 3, 8)
    mask = torch.ones(2, 3, 3, dtype=torch.bool)
    mask[1, 2] = False  # query 2 of sequence 1 may attend to nothing
    with pytest.raises(ValueError) as info:
        layer(x, mask=mask)
    message = str(info.value)
    assert "batch 1, query 2" in message and "NaN" in message and "at least one key" in message
    for cls in (MultiHeadSelfAttentionSDPA, MultiHeadSelfAttentionLoop):
        with pytest.raises(ValueError, match="batch 1, query 2"):
            cls.from_module(layer)(x, mask=mask)


def test_torch_style_padding_mask_is_caught(layer):
    x = torch.zeros(2, 3, 8)
    torch_style = torch.zeros(2, 3, dtype=torch.bool)  # "nothing is padding" in torch's terms
    with pytest.raises(ValueError, match="from_torch_key_padding_mask"):
        layer(x, padding_mask=torch_style)


def test_left_padding_with_causal_mask_raises(layer):
    x = torch.zeros(1, 3, 8)
    with pytest.raises(ValueError, match="query 0"):
        layer(x, mask=masks.causal_mask(3), padding_mask=masks.padding_mask([2], 3, side="left"))


def test_sdpa_cannot_return_weights(layer):
    with pytest.raises(ValueError, match="need_weights"):
        MultiHeadSelfAttentionSDPA.from_module(layer)(torch.zeros(1, 2, 8), need_weights=True)


def test_from_module_rejects_other_modules():
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        MultiHeadSelfAttentionSDPA.from_module(nn.Linear(2, 2))


# ---- the lesson's source and shape trace -------------------------------------------------------

def test_forward_source_shows_the_lesson_steps():
    source = inspect.getsource(MultiHeadSelfAttention.forward)
    for step in (".view(batch, seq_len, self.n_heads, self.d_k).transpose(1, 2)",
                 "math.sqrt(self.d_k)", "masked_fill(~allowed", "torch.softmax(scores, dim=-1)",
                 "self.dropout(weights)", ".transpose(1, 2).contiguous().view(", "self.w_o("):
        assert step in source, step


def test_shape_trace_follows_the_article():
    steps = dict(mha.shape_trace(batch=2, seq=4, d_model=8, n_heads=2))
    assert steps["x"] == (2, 4, 8)
    assert steps["q.view(batch, seq, heads, d_k)"] == (2, 4, 2, 4)
    assert steps["q.transpose(1, 2)"] == (2, 2, 4, 4)
    assert steps["scores = q @ k.transpose(-2, -1) / sqrt(d_k)"] == (2, 2, 4, 4)
    assert steps["context.contiguous().view(batch, seq, d_model)"] == (2, 4, 8)
    assert steps["output = w_o(context)"] == (2, 4, 8)
    assert dict(mha.shape_trace(batch=1, seq=5, d_model=12, n_heads=3))[
        "scores = q @ k.transpose(-2, -1) / sqrt(d_k)"] == (1, 3, 5, 5)


def test_shape_trace_leaves_the_global_rng_alone():
    before = torch.random.get_rng_state()
    mha.shape_trace()
    assert_same_run(before, torch.random.get_rng_state(), why="the RNG state is untouched")


def test_trace_ends_in_the_layer_output(layer):
    x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(3))
    steps = mha.trace(layer, x)
    assert_same_run(steps[-1][1], layer(x),
                    why="trace runs forward's own operations, in the same order")
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        mha.trace(nn.Linear(8, 8), x)


def test_shape_trace_rejects_indivisible_sizes():
    with pytest.raises(ValueError, match="pick n_heads"):
        mha.shape_trace(d_model=10, n_heads=4)


# ---- the production layer's fast paths ---------------------------------------------------------

@pytest.mark.parametrize("shape", [(5, 5), (1, 5, 5), (1, 1, 5, 5)])
def test_causal_mask_is_recognised_in_every_shared_layout(shape):
    x = torch.zeros(2, 5, 8)
    assert mha._is_causal_for(masks.causal_mask(5).reshape(shape), x)


@pytest.mark.parametrize("mask", [
    masks.causal_mask(4),                                         # another length
    masks.causal_mask(5).T.contiguous(),                          # anti-causal
    masks.causal_mask(5).expand(2, 5, 5),                         # per-sequence masks
    masks.causal_mask(5).reshape(1, 1, 5, 5).expand(1, 2, 5, 5),  # per-head masks
    masks.causal_mask(5).to(torch.uint8),                         # not boolean: must raise later
    torch.ones(5, 5, dtype=torch.bool),
])
def test_other_masks_are_not_taken_for_causal(mask):
    assert not mha._is_causal_for(mask, torch.zeros(2, 5, 8))


def test_one_changed_entry_is_not_causal():
    mask = masks.causal_mask(6)
    mask[5, 2] = False
    assert not mha._is_causal_for(mask, torch.zeros(1, 6, 8))


def test_sdpa_is_told_the_mask_is_causal(layer, monkeypatch):
    seen = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(*args, **kwargs):
        seen.append((kwargs["attn_mask"] is None, kwargs["is_causal"]))
        return sdpa(*args, **kwargs)

    monkeypatch.setattr(mha.F, "scaled_dot_product_attention", spy)
    fast = MultiHeadSelfAttentionSDPA.from_module(layer)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    causal = masks.causal_mask(5)
    out = fast(x, mask=causal)
    per_sequence = fast(x, mask=causal.expand(2, 5, 5))    # same mask, general path
    with_padding = fast(x, mask=causal, padding_mask=masks.padding_mask([5, 5], 5))
    assert seen == [(True, True), (False, False), (False, False)]
    for other in (per_sequence, with_padding, layer(x, mask=causal)):
        torch.testing.assert_close(out, other, **TOL[torch.float32])


def test_fused_inference_projection_equals_the_three_linears(layer):
    fast = MultiHeadSelfAttentionSDPA.from_module(layer).eval()
    x = torch.randn(3, 4, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        fused = fast(x, mask=masks.causal_mask(4))
    separate = fast(x.requires_grad_(), mask=masks.causal_mask(4))  # autograd: three linears
    torch.testing.assert_close(fused, separate.detach(), **TOL[torch.float32])


def test_causal_fast_path_still_checks_x(layer):
    fast = MultiHeadSelfAttentionSDPA.from_module(layer)
    x = torch.zeros(1, 3, 8)
    x[0, 1, 2] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        fast(x, mask=masks.causal_mask(3))
    with pytest.raises(TypeError, match="dtype"):
        fast(x.double(), mask=masks.causal_mask(3))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_finite_precheck_catches_every_bad_entry(layer, bad):
    x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(2))
    x[1, 2, 7] = bad
    with pytest.raises(ValueError, match="NaN or infinity"):
        layer.check_inputs(x)


def test_finite_entries_whose_sum_overflows_pass(layer):
    x = torch.full((1, 3, 8), 3e38)  # every entry finite, their float32 sum is inf
    assert not torch.isfinite(x.sum())
    assert layer.check_inputs(x) is None  # the exact check runs and finds nothing wrong


def test_a_mask_edited_in_place_after_a_causal_call_is_checked_again(layer):
    fast = MultiHeadSelfAttentionSDPA.from_module(layer)
    x = torch.zeros(1, 3, 8)
    mask = masks.causal_mask(3)
    fast(x, mask=mask)
    assert mha._is_causal_for(mask, x)
    mask[2] = False  # query 2 now sees nothing: must raise, not take the cached causal path
    assert not mha._is_causal_for(mask, x)
    with pytest.raises(ValueError, match="query 2"):
        fast(x, mask=mask)


def test_stacked_weights_follow_parameter_updates(layer):
    fast = MultiHeadSelfAttentionSDPA.from_module(layer).eval()
    x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        before = fast(x)
        fast.w_k.weight.mul_(2.0)  # in place, as an optimiser step does
        after = fast(x)
        reference = MultiHeadSelfAttention.from_module(fast)(x)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, reference, **TOL[torch.float32])
    fast.load_state_dict(layer.state_dict())
    with torch.no_grad():
        assert_same_run(fast(x), before, why="the same weights again: the same computation")
