"""Beyond plain attention: linear, dilated and hybrid (local + global) attention.

Each efficient version comes with the explicit O(n²) reference it must equal:

* :func:`linear_attention` — softmax replaced by a positive feature map φ (elu + 1):
  φ(Q)(φ(K)ᵀV) costs O(n·d²) instead of O(n²·d); :func:`linear_attention_quadratic` builds
  the same weights φ(Q)φ(K)ᵀ explicitly.
* :func:`dilated_attention` — each query sees keys at distances 0, ±r, ±2r, … ±w·r: a wide
  reach with 2w + 1 keys per query, gathered (O(n·w)); reference: a masked full matrix.
* :func:`hybrid_attention` — a local window plus a few global tokens that see and are seen by
  everyone (Longformer-style); O(n·(w + g)); reference: a masked full matrix.

Shapes: q, k, v are (…, n, d). Masks inside follow the book: True = may attend.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from . import validate
from .longctx import _check_qkv, full_attention


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1: positive, so the 'weights' φ(q)·φ(k) are positive like softmax's."""
    return F.elu(x) + 1


def linear_attention(q, k, v, *, causal: bool = False) -> torch.Tensor:
    """Linear attention: φ(Q) (φ(K)ᵀ V) normalised by φ(Q) Σⱼ φ(kⱼ), never forming n × n.

    ``causal=True`` uses running sums (prefix sums over positions), still O(n·d²).
    """
    _check_qkv(q, k, v)
    fq, fk = feature_map(q), feature_map(k)
    if not causal:
        kv = fk.transpose(-2, -1) @ v  # (…, d, d_v): the whole sequence summarised once
        z = fk.sum(dim=-2)  # (…, d)
        return (fq @ kv) / (fq @ z.unsqueeze(-1))
    kv = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)  # (…, n, d, d_v)
    z = torch.cumsum(fk, dim=-2)  # (…, n, d)
    num = (fq.unsqueeze(-2) @ kv).squeeze(-2)
    return num / (fq * z).sum(dim=-1, keepdim=True)


def linear_attention_quadratic(q, k, v, *, causal: bool = False) -> torch.Tensor:
    """The same computation written the O(n²) way: weights φ(qᵢ)·φ(kⱼ), rows normalised."""
    _check_qkv(q, k, v)
    w = feature_map(q) @ feature_map(k).transpose(-2, -1)
    if causal:
        n = q.shape[-2]
        w = w * torch.tril(torch.ones(n, k.shape[-2], dtype=torch.bool))
    return (w / w.sum(dim=-1, keepdim=True)) @ v


def _gather_offsets(q, k, v, offsets: torch.Tensor, extra: torch.Tensor | None = None):
    """Attention where query i sees keys i + offsets (when inside the sequence), plus the keys
    listed in ``extra`` (global tokens) — computed by gathering, O(n · (len(offsets) + g))."""
    n = q.shape[-2]
    idx = torch.arange(n)[:, None] + offsets[None, :]  # (n, m)
    valid = (idx >= 0) & (idx < n)
    safe = idx.clamp(0, n - 1)
    kg = k[..., safe, :]  # (…, n, m, d)
    vg = v[..., safe, :]
    scores = (q.unsqueeze(-2) * kg).sum(-1) / math.sqrt(q.shape[-1])  # (…, n, m)
    scores = scores.masked_fill(~valid, float("-inf"))
    if extra is not None and extra.numel():
        g_scores = q @ k[..., extra, :].transpose(-2, -1) / math.sqrt(q.shape[-1])  # (…, n, g)
        # a global key already inside the window must not be counted twice
        dup = (idx[:, :, None] == extra[None, None, :]) & valid[:, :, None]
        g_scores = g_scores.masked_fill(dup.any(dim=1), float("-inf"))
        scores = torch.cat([scores, g_scores], dim=-1)
        vg = torch.cat([vg, v[..., extra, :].unsqueeze(-3).expand(*vg.shape[:-2], -1, -1)],
                       dim=-2)
    weights = torch.softmax(scores, dim=-1)
    return (weights.unsqueeze(-2) @ vg).squeeze(-2)


def dilated_offsets(window: int, dilation: int) -> torch.Tensor:
    window = validate.integer("window", window, low=0)
    dilation = validate.integer("dilation", dilation, low=1)
    return torch.arange(-window, window + 1) * dilation


def dilated_attention(q, k, v, window: int, dilation: int) -> torch.Tensor:
    """Each query attends to the keys at distance 0, ±dilation, …, ±window·dilation."""
    _check_qkv(q, k, v)
    return _gather_offsets(q, k, v, dilated_offsets(window, dilation))


def dilated_mask(n: int, window: int, dilation: int) -> torch.Tensor:
    offsets = dilated_offsets(window, dilation)
    d = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    return (d[..., None] == offsets).any(-1)


def hybrid_mask(n: int, window: int, n_global: int) -> torch.Tensor:
    """Local band |i − j| ≤ window, plus the first ``n_global`` tokens as global tokens."""
    n = validate.integer("n", n, low=1)
    window = validate.integer("window", window, low=0)
    n_global = validate.integer("n_global", n_global, low=0, high=n)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return ((i - j).abs() <= window) | (i < n_global) | (j < n_global)


def hybrid_attention(q, k, v, window: int, n_global: int) -> torch.Tensor:
    """Local window for every token, plus ``n_global`` global tokens (the first ones) that
    attend to everything and that everything attends to."""
    _check_qkv(q, k, v)
    n = q.shape[-2]
    n_global = validate.integer("n_global", n_global, low=0, high=n)
    window = validate.integer("window", window, low=0)
    out = _gather_offsets(q, k, v, torch.arange(-window, window + 1), torch.arange(n_global))
    if n_global:
        out[..., :n_global, :] = full_attention(q[..., :n_global, :], k, v)
    return out


def reference(kind: str, q, k, v, **params) -> torch.Tensor:
    """The explicit masked n × n version of ``kind`` in {"dilated", "hybrid"}."""
    validate.choice("kind", kind, ("dilated", "hybrid"))
    n = q.shape[-2]
    mask = dilated_mask(n, **params) if kind == "dilated" else hybrid_mask(n, **params)
    return full_attention(q, k, v, mask)
