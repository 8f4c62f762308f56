"""Does the book's layer agree with PyTorch's own attention? Chapter 4's two checks.

* :func:`mask_conventions` finds, by running each API, which reading of a mask (``True`` =
  may attend, or ``True`` = blocked, …) reproduces a ground truth that uses no mask at all.
* :func:`max_differences` gives the largest difference between
  :class:`book.ideas.mha.MultiHeadSelfAttention` and ``nn.MultiheadAttention`` / the SDPA layer with
  the same weights, per mask kind, in one dtype.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from book.ideas import masks
from book.ideas.mha import MultiHeadSelfAttention, MultiHeadSelfAttentionSDPA, copy_to_torch_mha
from book.kit import i18n, validate

DTYPES = {"float64": torch.float64, "float32": torch.float32}
MASK_KINDS = ("none", "causal", "padding", "causal + padding")


def _layer_and_input(seq_len: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):  # leave the reader's random stream alone
        torch.manual_seed(seed)
        layer = MultiHeadSelfAttention(8, 2, dtype=torch.float64).eval()
    x = torch.randn(2, seq_len, 8, dtype=torch.float64, generator=gen)
    return layer, x


def mask_conventions(seed: int = 0) -> list[dict]:
    """Which reading of each API's mask matches the mask-free ground truth.

    Ground truths: with a causal mask, token i must get what the layer gives it on tokens
    0..i alone; with padding, the real tokens must get what they get without the padding.
    Returns one dict per (API, argument): ``where``, ``argument``, ``right`` (the readings that
    match) and ``wrong`` (those that do not, "(raises)" when the API refuses the mask).
    """
    seed = validate.integer("seed", seed, low=0)
    n, lengths = 4, [4, 2]
    layer, x = _layer_and_input(n, seed)
    torch_mha = copy_to_torch_mha(layer).eval()
    causal, pad = masks.causal_mask(n), masks.padding_mask(lengths, n)

    def agrees(out, kind):
        if kind == "causal":  # token i sees tokens 0..i: run each prefix alone
            truth = [layer(x[:, : i + 1])[:, i] for i in range(n)]
            return torch.allclose(out, torch.stack(truth, dim=1))
        return all(torch.allclose(out[b, :k], layer(x[b : b + 1, :k])[0])
                   for b, k in enumerate(lengths))  # each sequence without its padding

    def sdpa(attn_mask):
        q, k, v = (layer.split_heads(w(x)) for w in (layer.w_q, layer.w_k, layer.w_v))
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return layer.w_o(layer.merge_heads(context))

    def torch_layer(**mask_kwargs):
        return torch_mha(x, x, x, need_weights=False, **mask_kwargs)[0]

    tr = i18n.tr  # the readings are shown to the reader, in the book's language
    bool_readings = {tr("ch04.reading_may_attend"): causal, tr("ch04.reading_blocked"): ~causal}
    pad_readings = {tr("ch04.reading_real"): pad, tr("ch04.reading_padding"): ~pad}
    float_readings = {tr("ch04.reading_additive"): masks.to_additive(causal, torch.float64),
                      tr("ch04.reading_zero_one"): causal.double()}
    this_book = tr("ch04.this_book")
    cases = [  # (where, argument, kind, run, {reading: the mask in that reading})
        (this_book, "`mask=`", "causal", lambda m: layer(x, mask=m), bool_readings),
        (this_book, "`padding_mask=`", "padding",
         lambda p: layer(x, padding_mask=p), pad_readings),
        ("`F.scaled_dot_product_attention`", "`attn_mask=` (bool)", "causal", sdpa,
         bool_readings),
        ("`nn.MultiheadAttention`", "`attn_mask=` (bool)", "causal",
         lambda m: torch_layer(attn_mask=m), bool_readings),
        ("`nn.MultiheadAttention`", "`key_padding_mask=`", "padding",
         lambda p: torch_layer(key_padding_mask=p), pad_readings),
        ("`F.scaled_dot_product_attention`", "`attn_mask=` (float)", "causal", sdpa,
         float_readings),
        ("`nn.MultiheadAttention`", "`attn_mask=` (float)", "causal",
         lambda m: torch_layer(attn_mask=m), float_readings),
    ]
    rows = []
    for where, argument, kind, run, readings in cases:
        right, wrong = [], []
        for reading, m in readings.items():
            try:
                with torch.no_grad():
                    ok = agrees(run(m), kind)
            except (ValueError, RuntimeError):
                ok, reading = False, tr("ch04.raises", reading=reading)
            (right if ok else wrong).append(reading)
        rows.append({"where": where, "argument": argument, "right": right, "wrong": wrong})
    return rows


def max_differences(dtype: str = "float64", seed: int = 0) -> dict[str, dict[str, float]]:
    """max |book − theirs| over a batch of 2 × 6 tokens (the second with 3 real tokens), per
    mask kind: ``{kind: {"torch_mha": …, "sdpa": …}}`` in ``dtype`` ("float64" or "float32")."""
    validate.choice("dtype", dtype, tuple(DTYPES))
    seed = validate.integer("seed", seed, low=0)
    base, x64 = _layer_and_input(6, seed)
    causal, pad = masks.causal_mask(6), masks.padding_mask([6, 3])
    kinds = {"none": (None, None), "causal": (causal, None), "padding": (None, pad),
             "causal + padding": (causal, pad)}
    ours = copy.deepcopy(base).to(DTYPES[dtype])
    theirs = copy_to_torch_mha(ours).eval()
    fused = MultiHeadSelfAttentionSDPA.from_module(ours)
    x = x64.to(DTYPES[dtype])
    result = {}
    for kind, (m, p) in kinds.items():
        attn_mask = None if m is None else masks.to_torch_attn_mask(m)
        key_pad = None if p is None else masks.to_torch_key_padding_mask(p)
        with torch.no_grad():
            want = ours(x, mask=m, padding_mask=p)
            torch_out = theirs(x, x, x, attn_mask=attn_mask, key_padding_mask=key_pad,
                               need_weights=False)[0]
            sdpa_out = fused(x, mask=m, padding_mask=p)
        result[kind] = {"torch_mha": (torch_out - want).abs().max().item(),
                        "sdpa": (sdpa_out - want).abs().max().item()}
    return result
