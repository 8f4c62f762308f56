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
from torch import nn
from torch.profiler import ProfilerActivity, profile

from book.ideas import masks
from book.kit import memo, timing, validate


def check_qkv(q, k, v) -> None:
    """Raise unless q, k, v are finite float tensors (…, n, d) that attention can combine:
    q and k of the same width d_k, one value per key, the same batch/head axes."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        validate.float_tensor(name, t, min_ndim=2)
    if q.dtype != k.dtype or k.dtype != v.dtype:
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and "
                        f"{v.dtype}; convert them, e.g. k.to(q.dtype)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension d_k, got {q.shape[-1]} and "
                         f"{k.shape[-1]}")
    if k.shape[:-1] != v.shape[:-1]:
        raise ValueError(f"k and v must have the same leading shape (…, n), got "
                         f"{tuple(k.shape)} and {tuple(v.shape)}")
    if q.shape[:-2] != k.shape[:-2]:
        raise ValueError(f"q and k must share batch/head dimensions, got {tuple(q.shape)} and "
                         f"{tuple(k.shape)}")


def check_self_attention(q, k, v, what: str = "a sliding window") -> int:
    """:func:`check_qkv`, and q and k of the same length n (self-attention); returns n."""
    check_qkv(q, k, v)
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(f"{what} needs self-attention: q has {q.shape[-2]} positions but k has "
                         f"{k.shape[-2]}; pass q, k, v of the same sequence")
    return q.shape[-2]


def full_attention(q, k, v, mask=None) -> torch.Tensor:
    """softmax(q kᵀ / √d) v, materialising the n × n scores; ``mask``: True = may attend
    (boolean, broadcasting to (…, n_q, n_k)); every query needs at least one allowed key."""
    check_qkv(q, k, v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        mask = masks.as_mask(mask, ndim=tuple(range(1, scores.ndim + 1))).to(scores.device)
        try:
            allowed = torch.broadcast_to(mask, scores.shape)
        except RuntimeError:
            raise ValueError(f"mask has shape {tuple(mask.shape)}, which does not broadcast to "
                             f"the scores' (…, n_q, n_k) = {tuple(scores.shape)}") from None
        if not bool(allowed.any(dim=-1).all()):
            raise ValueError("a query row of mask is all False: softmax over no key gives NaN; "
                             "allow at least one key per query (e.g. the token itself)")
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def window_mask(n: int, window: int, *, causal: bool = False) -> torch.Tensor:
    """(n, n) boolean: query i may attend to key j when |i − j| ≤ window (j ≤ i if causal)."""
    n = validate.integer("n", n, low=1)
    window = validate.integer("window", window, low=0)
    validate.boolean("causal", causal)
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    allowed = (i - j).abs() <= window
    return allowed & (j <= i) if causal else allowed


def masked_window_attention(q, k, v, window: int, *, causal: bool = False) -> torch.Tensor:
    """The sliding window as a mask over the full n × n matrix (the O(n²) way)."""
    check_self_attention(q, k, v)
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
    n = check_self_attention(q, k, v)
    window = validate.integer("window", window, low=0)
    validate.boolean("causal", causal)
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
    validate.distinct("ns", ns, at_least=2, example="ns=[256, 512, 1024]")  # a slope needs two n
    slope, _ = np.polyfit(np.log(ns), np.log(costs), 1)
    return float(slope)


# --- chapter 9: sweeps over the sequence length ---------------------------------------------

METHODS = ("full", "masked", "banded", "sdpa")
METHOD_NAMES = {
    "full": "full attention (n × n scores)",
    "masked": "sliding window as a mask over n × n",
    "banded": "banded sliding window (O(n·w))",
    "sdpa": "F.scaled_dot_product_attention (fused)",
}


def banded_score_entries(n: int, window: int, block: int | None = None) -> int:
    """Score entries per head that :func:`banded_attention` computes for ``n`` tokens.

    Each of the ⌈n / block⌉ blocks of ``block`` queries meets ``block + 2·window`` keys, padding
    included: about n · (block + 2w), against n² for full attention.
    """
    n = validate.integer("n", n, low=1)
    window = validate.integer("window", window, low=0)
    block = max(window, 16) if block is None else validate.integer("block", block, low=1)
    block = min(block, n)
    return -(-n // block) * block * (block + 2 * window)


def window_keys(n: int, window: int, *, causal: bool = False) -> np.ndarray:
    """How many keys each of the ``n`` queries may attend to under :func:`window_mask`."""
    return window_mask(n, window, causal=causal).sum(dim=1).numpy()


def random_qkv(n: int, heads: int = 4, d_k: int = 32, seed: int = 0):
    """Seeded random q, k, v of shape (1, heads, n, d_k) for the cost sweeps (the generator is
    seeded with ``seed + n``, so each length has its own inputs, the same every call)."""
    n = validate.integer("n", n, low=1)
    heads = validate.integer("heads", heads, low=1)
    d_k = validate.integer("d_k", d_k, low=1)
    seed = validate.integer("seed", seed, low=0, high=validate.MAX_SEED - n)
    gen = torch.Generator().manual_seed(seed + n)
    return tuple(torch.randn(1, heads, n, d_k, generator=gen) for _ in range(3))


def lengths(ns, name: str = "ns") -> list[int]:
    """``ns`` as a non-empty list of sequence lengths (integers ≥ 1)."""
    return [validate.integer("n", n, low=1)
            for n in validate.listed(name, ns, "[256, 512, 1024]", allow_empty=False)]


def _method(name: str, window: int) -> Callable:
    validate.choice("method", name, METHODS)
    return {
        "full": full_attention,
        "masked": lambda q, k, v: masked_window_attention(q, k, v, window),
        "banded": lambda q, k, v: banded_attention(q, k, v, window),
        "sdpa": torch.nn.functional.scaled_dot_product_attention,
    }[name]


def _bind(fn: Callable, *args) -> Callable[[], object]:
    """``fn`` with its arguments fixed now (a lambda in a loop would see the last ones)."""
    return lambda: fn(*args)


@memo.shared
def cost_sweep(ns, *, measure: str = "memory", methods=METHODS, window: int = 32,
               heads: int = 4, d_k: int = 32, repeats: int = 3, seed: int = 0) -> dict:
    """Cost of each attention method on one sequence of each length in ``ns``.

    ``measure="memory"``: peak bytes allocated (:func:`peak_memory`, deterministic);
    ``measure="time"``: best-of-``repeats`` seconds, the methods timed in interleaved rounds
    (:func:`book.kit.timing.compare`). Inputs are (1, heads, n, d_k). Returns
    ``{"n": [...], method: [cost per n], ...}``.
    """
    validate.choice("measure", measure, ("memory", "time"))
    ns = lengths(ns)
    methods = validate.listed("methods", methods, "['full', 'banded']", allow_empty=False)
    methods = [validate.choice("method", m, METHODS) for m in methods]
    window = validate.integer("window", window, low=0)
    heads = validate.integer("heads", heads, low=1)
    d_k = validate.integer("d_k", d_k, low=1)
    repeats = validate.integer("repeats", repeats, low=1)
    seed = validate.seed(seed)
    out = {"n": ns, **{m: [] for m in methods}}
    with torch.no_grad():
        for n in ns:
            q, k, v = random_qkv(n, heads, d_k, seed)
            calls = {m: _bind(_method(m, window), q, k, v) for m in methods}
            if measure == "memory":
                for m, call in calls.items():
                    out[m].append(peak_memory(call))
            else:
                seconds = timing.compare(calls, repeats=repeats)
                for m in methods:
                    out[m].append(seconds[m])
    return out


WINDOW_KERNELS = ("banded", "sdpa_window", "sdpa_causal", "sdpa")


@memo.shared
def window_kernels(n: int = 1024, window: int = 32, *, heads: int = 4, d_k: int = 32,
                   repeats: int = 3, seed: int = 0) -> dict:
    """The banded window against the fused kernel, on one sequence: time and peak memory.

    ``banded``: :func:`banded_attention`; ``sdpa_window``: ``F.scaled_dot_product_attention``
    with the window's boolean mask (the same numbers as the banded version; the mask is built
    beforehand, as a model builds it once for all its layers and heads, and its size is
    returned as ``mask_bytes``); ``sdpa_causal``: the plain causal fused kernel
    (``is_causal=True``, no window); ``sdpa``: the fused kernel with no mask. Times: best of
    ``repeats`` interleaved rounds (:func:`book.kit.timing.compare`); memory: :func:`peak_memory`.
    Returns ``{"n", "window", "mask_bytes", "max_diff", "seconds": {...}, "memory": {...}}``,
    ``max_diff`` being the largest difference between ``sdpa_window`` and ``banded``.
    """
    n = validate.integer("n", n, low=2, high=16384)
    window = validate.integer("window", window, low=0)
    repeats = validate.integer("repeats", repeats, low=1, high=100)
    q, k, v = random_qkv(n, heads, d_k, seed)
    mask = window_mask(n, window)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    calls = {"banded": _bind(banded_attention, q, k, v, window),
             "sdpa_window": lambda: sdpa(q, k, v, attn_mask=mask),
             "sdpa_causal": lambda: sdpa(q, k, v, is_causal=True),
             "sdpa": _bind(sdpa, q, k, v)}
    with torch.no_grad():
        diff = (calls["sdpa_window"]() - calls["banded"]()).abs().max().item()
        memory = {m: peak_memory(call) for m, call in calls.items()}
        seconds = timing.compare(calls, repeats=repeats)
    return {"n": n, "window": window, "mask_bytes": mask.numel() * mask.element_size(),
            "max_diff": diff, "seconds": seconds, "memory": memory}


# --- chapter 9: where the time of a whole Transformer block goes ----------------------------

BLOCK_PARTS = ("projections", "attention", "feed_forward")


def block_flops(n: int, d_model: int, d_ff: int | None = None) -> dict[str, int]:
    """Floating-point operations (2 per multiply-add) of one Transformer block on n tokens.

    projections: Q, K, V and output, 4 · 2·n·d²; attention: scores q kᵀ and weights · v,
    2 · 2·n²·d (all heads together); feed-forward: 2 · 2·n·d·d_ff (d_ff = 4·d by default).
    """
    n = validate.integer("n", n, low=1)
    d = validate.integer("d_model", d_model, low=1)
    d_ff = 4 * d if d_ff is None else validate.integer("d_ff", d_ff, low=1)
    return {"projections": 8 * n * d * d, "attention": 4 * n * n * d,
            "feed_forward": 4 * n * d * d_ff}


@memo.shared
def block_costs(ns, d_model: int = 512, n_heads: int = 8, *, repeats: int = 3,
                seed: int = 0) -> list[dict]:
    """Seconds spent in each part of one Transformer block, for each length in ``ns``.

    The parts (timed in interleaved rounds, best of ``repeats``): ``projections`` — the fused
    Q/K/V projection and the output projection; ``attention`` — scores, softmax and the
    weighted sum (:func:`full_attention`, all heads); ``feed_forward`` — d → 4d → d with GELU.
    Each row: n, seconds per part, their total, the attention's share of the time and its
    share of the FLOPs (:func:`block_flops`).
    """
    d = validate.integer("d_model", d_model, low=1)
    h = validate.integer("n_heads", n_heads, low=1)
    validate.head_split(d, h)
    ns = lengths(ns)
    repeats = validate.integer("repeats", repeats, low=1)
    seed = validate.seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        qkv, out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
    rows = []
    with torch.no_grad():
        for n in ns:
            x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed + n))
            q, k, v = (t.view(1, n, h, d // h).transpose(1, 2) for t in qkv(x).chunk(3, -1))
            seconds = timing.compare({
                "projections": lambda x=x: (qkv(x), out(x)),
                "attention": lambda q=q, k=k, v=v: full_attention(q, k, v),
                "feed_forward": lambda x=x: ff(x)}, repeats=repeats)
            flops = block_flops(n, d)
            total = sum(seconds.values())
            rows.append({"n": n, **seconds, "total": total,
                         "attention_share": seconds["attention"] / total,
                         "attention_flop_share": flops["attention"] / sum(flops.values())})
    return rows


# --- used by the explorers of the chapter modules ----------------------------------------

WINDOW_COST_NS = tuple(2 ** p for p in range(5, 15))  # 32 … 16384


def window_data(n: int, window: int, cost_ns=WINDOW_COST_NS) -> dict:
    """One sliding window of half-width ``window`` over ``n`` tokens, both ways of computing it.

    ``levels`` (n × n, rows = queries): 2 = may attend (|i − j| ≤ w), 1 = computed by
    :func:`book.ideas.longctx.banded_attention` and then masked, 0 = never computed by it (the
    masked full version computes every cell). ``keys`` is how many keys each query sees;
    ``full`` and ``banded`` are the score entries per head each version computes at every
    length of ``cost_ns``.
    """

    n = validate.integer("n", n, low=1, high=4096)
    window = validate.integer("window", window, low=0)
    allowed = window_mask(n, window).numpy()
    block = min(max(window, 16), n)
    q_block = np.arange(n) // block  # which block each query belongs to
    start = q_block * block - window  # the block's slab of keys: [start, start + block + 2w)
    j = np.arange(n)[None, :]
    computed = (j >= start[:, None]) & (j < start[:, None] + block + 2 * window)
    levels = np.where(allowed, 2, np.where(computed, 1, 0))
    cost_ns = [validate.integer("n", c, low=1) for c in cost_ns]
    return {"n": n, "window": window, "block": block, "levels": levels,
            "keys": allowed.sum(axis=1), "labels": [str(i) for i in range(n)],
            "cost_ns": cost_ns, "full": [c * c for c in cost_ns],
            "banded": [banded_score_entries(c, window) for c in cost_ns]}
