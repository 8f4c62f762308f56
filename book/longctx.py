"""Long context: what full attention costs, and a sliding window that really saves it.

* :func:`full_attention` — plain scaled dot-product attention over (…, n, d) tensors; it builds
  the n × n score matrix, so time and memory grow like n².
* :func:`window_mask` / :func:`masked_window_attention` — a sliding-window *mask* applied to the
  full matrix: the same n × n work, most of it thrown away. Saves nothing.
* :func:`banded_attention` — the window computed block by block: each block of queries meets
  only the keys within ``window`` of it, so time and memory grow like n · w.
* :func:`peak_memory` — the peak bytes of tensors allocated while a function runs (CPU),
  measured with ``torch.profiler``; :func:`fit_exponent` — the slope of log cost vs log n.

Tensors are (batch, heads, n, d) or any (…, n, d); every function here is one head-agnostic
reference that the chapters time and the tests compare.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import numpy as np
import torch

from . import validate


def _check_qkv(q, k, v) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor of shape (..., n, d), got "
                            f"{type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (n, d), got {tuple(t.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension d_k, got {q.shape[-1]} and "
                         f"{k.shape[-1]}")
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"k and v must have the same leading shape (…, n), got "
                         f"{tuple(k.shape)} and {tuple(v.shape)}")
    if q.shape[:-2] != k.shape[:-2]:
        raise ValueError(f"q and k must share batch/head dimensions, got {tuple(q.shape)} and "
                         f"{tuple(k.shape)}")


def full_attention(q, k, v, mask=None) -> torch.Tensor:
    """softmax(q kᵀ / √d) v, materialising the n × n scores; ``mask``: True = may attend."""
    _check_qkv(q, k, v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def window_mask(n: int, window: int, *, causal: bool = False) -> torch.Tensor:
    """(n, n) boolean: query i may attend to key j when |i − j| ≤ window (j ≤ i if causal)."""
    n = validate.integer("n", n, low=1)
    window = validate.integer("window", window, low=0)
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    allowed = (i - j).abs() <= window
    return allowed & (j <= i) if causal else allowed


def masked_window_attention(q, k, v, window: int, *, causal: bool = False) -> torch.Tensor:
    """The sliding window as a mask over the full n × n matrix (the O(n²) way)."""
    _check_qkv(q, k, v)
    if q.shape[-2] != k.shape[-2]:
        raise ValueError("a sliding window needs self-attention: q and k of the same length")
    return full_attention(q, k, v, window_mask(q.shape[-2], window, causal=causal))


def banded_attention(q, k, v, window: int, *, causal: bool = False,
                     block: int | None = None) -> torch.Tensor:
    """Sliding-window attention computed block by block, in O(n · w) time and memory.

    Queries are cut into blocks of ``block`` rows (default: ``max(window, 16)``). Block b only
    needs the keys from ``b·block − window`` to ``(b+1)·block + window``: K and V are padded by
    ``window`` on both sides and those slabs are gathered with ``unfold``, so the score tensor is
    (…, n_blocks, block, block + 2·window) instead of (…, n, n). Equal to
    :func:`masked_window_attention` (tested).
    """
    _check_qkv(q, k, v)
    n = q.shape[-2]
    if k.shape[-2] != n:
        raise ValueError("a sliding window needs self-attention: q and k of the same length")
    window = validate.integer("window", window, low=0)
    block = max(window, 16) if block is None else validate.integer("block", block, low=1)
    block = min(block, n)
    n_blocks = -(-n // block)
    pad_end = n_blocks * block - n
    span = block + 2 * window
    # queries: (…, n_blocks, block, d)
    qb = torch.nn.functional.pad(q, (0, 0, 0, pad_end)).unflatten(-2, (n_blocks, block))
    # keys/values padded by `window` before and `window + pad_end` after, then one slab per block
    kp = torch.nn.functional.pad(k, (0, 0, window, window + pad_end))
    vp = torch.nn.functional.pad(v, (0, 0, window, window + pad_end))
    kb = kp.unfold(-2, span, block).transpose(-1, -2)  # (…, n_blocks, span, d)
    vb = vp.unfold(-2, span, block).transpose(-1, -2)
    scores = qb @ kb.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (…, n_blocks, block, span)
    # position of each query and each slab key in the original sequence
    qpos = torch.arange(n_blocks * block).view(n_blocks, block, 1)
    kpos = (torch.arange(n_blocks)[:, None, None] * block - window
            + torch.arange(span)[None, None, :])
    allowed = ((qpos - kpos).abs() <= window) & (kpos >= 0) & (kpos < n)
    if causal:
        allowed &= kpos <= qpos
    allowed |= qpos >= n  # padded query rows: let them attend to anything (dropped below)
    scores = scores.masked_fill(~allowed, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ vb  # (…, n_blocks, block, d_v)
    return out.flatten(-3, -2)[..., :n, :]


def peak_memory(fn: Callable[[], object]) -> int:
    """Peak bytes of the tensors allocated (and not yet freed) while ``fn()`` runs, on CPU.

    Replays torch.profiler's allocation events in time order; inputs allocated before the call
    do not count. Used to compare full and banded attention, not as an exact RSS figure.
    """
    if not callable(fn):
        raise TypeError("fn must be a function of no arguments, e.g. lambda: f(q, k, v)")
    from torch.profiler import ProfilerActivity, profile

    # the profiler's C++ side prints start/stop lines to fd 2; keep notebooks clean
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
                fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    events = sorted((e for e in prof.events() if e.self_cpu_memory_usage),
                    key=lambda e: e.time_range.start)
    current = peak = 0
    for e in events:
        current += e.self_cpu_memory_usage
        peak = max(peak, current)
    return int(peak)


def fit_exponent(ns, costs) -> float:
    """Least-squares slope of log(cost) against log(n): ≈ 2 for O(n²), ≈ 1 for O(n)."""
    ns = validate.array("ns", ns, ndim=1)
    costs = validate.array("costs", costs, ndim=1)
    if ns.shape != costs.shape or ns.size < 2:
        raise ValueError("need at least two (n, cost) pairs of equal length")
    if np.any(ns <= 0) or np.any(costs <= 0):
        raise ValueError("sizes and costs must be positive to take logarithms")
    slope, _ = np.polyfit(np.log(ns), np.log(costs), 1)
    return float(slope)
