"""FlashAttention's idea, exactly: softmax attention one tile of keys at a time.

Softmax needs the whole row (its maximum and its sum) before any weight is known — or so it
seems. The *online softmax* keeps, for every query, a running maximum m, a running sum
ℓ = Σ exp(s − m) and an unnormalised output o = Σ exp(s − m) v. When a new tile of keys
raises the maximum to m', the old sum and output are rescaled by exp(m − m'), which is exact
because exp(a − m') = exp(a − m) · exp(m − m'). After the last tile, o / ℓ *is* softmax
attention — not an approximation — while only an (n × tile) block of scores ever exists.

* :func:`tiled_attention` — that loop (queries all at once, keys tile by tile);
  equal to :func:`book.ideas.longctx.full_attention` and ``F.scaled_dot_product_attention`` to
  float rounding for every tile size (tested with hypothesis).
* :func:`row_trace` — the running m, ℓ and output of one query row after each tile: what the
  chapter's step-through explorer shows.
* :func:`memory_sweep` — peak memory of tiled vs textbook attention against n.

The real FlashAttention kernel also tiles the queries and keeps each tile in on-chip SRAM;
the arithmetic is this one.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from book.ideas.longctx import check_qkv, full_attention
from book.kit import memo, validate


def tiled_attention(q, k, v, tile: int = 64, *, causal: bool = False) -> torch.Tensor:
    """softmax(q kᵀ / √d) v computed over key tiles of ``tile`` keys with the online softmax.

    Args:
        q: (…, n, d) queries; k: (…, s, d) keys; v: (…, s, d_v) values.
        tile: keys per tile (any positive integer; the last tile may be shorter).
        causal: query i sees keys j ≤ i (needs n = s).
    Returns:
        (…, n, d_v), equal to :func:`book.ideas.longctx.full_attention` up to float rounding.
    """
    check_qkv(q, k, v)
    tile = validate.integer("tile", tile, low=1)
    causal = validate.boolean("causal", causal)
    n, s = q.shape[-2], k.shape[-2]
    if causal and n != s:
        raise ValueError(f"causal=True needs as many queries as keys, got {n} and {s}")
    if s == 0:
        raise ValueError("k and v hold no keys; attention needs at least one key per query")
    scale = 1.0 / math.sqrt(q.shape[-1])
    m = q.new_full((*q.shape[:-1], 1), float("-inf"))   # running max        (…, n, 1)
    ell = q.new_zeros((*q.shape[:-1], 1))                # running sum        (…, n, 1)
    o = q.new_zeros((*q.shape[:-1], v.shape[-1]))        # unnormalised out   (…, n, d_v)
    rows = torch.arange(n)[:, None]
    for start in range(0, s, tile):
        kt, vt = k[..., start:start + tile, :], v[..., start:start + tile, :]
        scores = (q @ kt.transpose(-2, -1)) * scale      # only (…, n, tile) at a time
        if causal:
            cols = torch.arange(start, start + kt.shape[-2])[None, :]
            scores = scores.masked_fill(cols > rows, float("-inf"))
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        # a row with no allowed key yet keeps m = -inf: use 0 there so exp() gives 0, not NaN
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        rescale = torch.exp(m - m_safe)                  # exp(m_old − m_new) ≤ 1
        p = torch.exp(scores - m_safe)                   # this tile's weights, unnormalised
        ell = ell * rescale + p.sum(dim=-1, keepdim=True)
        o = o * rescale + p @ vt
        m = m_new
    return o / ell


def row_trace(scores, values, tile: int) -> list[dict]:
    """The online softmax of one query row, tile by tile (numpy, float64).

    Args:
        scores: (s,) the row's scaled scores q · k_j / √d.
        values: (s, d_v) the values.
        tile: keys per tile.
    Returns:
        One dict per tile: ``start``, ``stop`` (the tile's keys), ``tile_max``, ``m`` (running
        max), ``rescale`` (exp(m_old − m_new)), ``ell`` (running sum), ``output`` (o / ℓ so
        far), ``weights`` (the weights o / ℓ implies so far, 0 for keys not seen yet),
        ``error`` (max |output − exact output|), ``exact`` (the softmax-attention output).
    """
    s = validate.array("scores", scores, ndim=1)
    vals = validate.array("values", values, ndim=2)
    if vals.shape[0] != s.shape[0]:
        raise ValueError(f"values has {vals.shape[0]} rows but scores has {s.shape[0]} "
                         "entries; pass one value row per key")
    tile = validate.integer("tile", tile, low=1)
    exact_w = np.exp(s - s.max())
    exact_w /= exact_w.sum()
    exact = exact_w @ vals
    m, ell, o = -np.inf, 0.0, np.zeros(vals.shape[1])
    steps = []
    for start in range(0, len(s), tile):
        stop = min(start + tile, len(s))
        block = s[start:stop]
        m_new = max(m, float(block.max()))
        rescale = math.exp(m - m_new) if np.isfinite(m) else 0.0
        p = np.exp(block - m_new)
        ell = ell * rescale + float(p.sum())
        o = o * rescale + p @ vals[start:stop]
        m = m_new
        weights = np.zeros_like(s)
        weights[:stop] = np.exp(s[:stop] - m) / ell
        steps.append({"start": start, "stop": stop, "tile_max": float(block.max()), "m": m,
                      "rescale": rescale, "ell": ell, "output": o / ell, "weights": weights,
                      "error": float(np.abs(o / ell - exact).max()), "exact": exact})
    return steps


def example_row(n_keys: int = 16, d_v: int = 4, seed: int = 0, spread: float = 2.0):
    """A seeded query row for the explorer: (scores (n_keys,), values (n_keys, d_v))."""
    n_keys = validate.integer("n_keys", n_keys, low=1, high=4096)
    d_v = validate.integer("d_v", d_v, low=1, high=64)
    seed = validate.integer("seed", seed, low=0)
    spread = validate.real("spread", spread, low=0.0, high=20.0)
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, spread, n_keys), rng.normal(0.0, 1.0, (n_keys, d_v))


@memo.shared
def memory_sweep(ns, tile: int = 64, *, d: int = 32, heads: int = 4, seed: int = 0) -> dict:
    """Peak bytes allocated by textbook and tiled attention for one sequence of each length.

    Returns ``{"n": ns, "full": [...], "tiled": [...]}`` (deterministic: counted from the
    tensors PyTorch allocates, :func:`book.ideas.longctx.peak_memory`).
    """
    from book.ideas.longctx import peak_memory

    if isinstance(ns, (str, bytes)) or not isinstance(ns, (list, tuple, range)) or not ns:
        raise TypeError(f"ns must be a non-empty list of sequence lengths, e.g. [256, 512, "
                        f"1024], got {ns!r}")
    ns = [validate.integer("n", n, low=1) for n in ns]
    tile = validate.integer("tile", tile, low=1)
    d = validate.integer("d", d, low=1)
    heads = validate.integer("heads", heads, low=1)
    seed = validate.integer("seed", seed, low=0)
    out = {"n": ns, "full": [], "tiled": []}
    with torch.no_grad():
        for n in ns:
            g = torch.Generator().manual_seed(seed + n)
            q, k, v = (torch.randn(1, heads, n, d, generator=g) for _ in range(3))
            out["full"].append(peak_memory(lambda q=q, k=k, v=v: full_attention(q, k, v)))
            out["tiled"].append(peak_memory(
                lambda q=q, k=k, v=v: tiled_attention(q, k, v, tile)))
    return out
