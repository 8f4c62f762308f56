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

from book.ideas import masks
from book.ideas.longctx import (
    banded_attention,
    check_qkv,
    check_self_attention,
    full_attention,
    lengths,
    peak_memory,
    random_qkv,
    window_mask,
)
from book.ideas.mha import MultiHeadSelfAttention
from book.kit import memo, validate
from book.kit.timing import compare


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1: positive, so the 'weights' φ(q)·φ(k) are positive like softmax's."""
    validate.float_tensor("x", x)
    return F.elu(x) + 1


def linear_attention(q, k, v, *, causal: bool = False) -> torch.Tensor:
    """Linear attention: φ(Q) (φ(K)ᵀ V) normalised by φ(Q) Σⱼ φ(kⱼ), never forming n × n.

    ``causal=True`` uses running sums (prefix sums over positions), still O(n·d²).
    """
    check_qkv(q, k, v)
    if validate.boolean("causal", causal):
        check_self_attention(q, k, v, "causal linear attention")
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
    check_qkv(q, k, v)
    if validate.boolean("causal", causal):
        check_self_attention(q, k, v, "causal linear attention")
    w = feature_map(q) @ feature_map(k).transpose(-2, -1)
    if causal:
        n = q.shape[-2]
        w = w * torch.tril(torch.ones(n, k.shape[-2], dtype=torch.bool))
    return (w / w.sum(dim=-1, keepdim=True)) @ v


def gather_attention(q, k, v, offsets: torch.Tensor, extra: torch.Tensor | None = None):
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
    """Key offsets of a dilated window: 0, ±dilation, …, ±window·dilation (ascending)."""
    window = validate.integer("window", window, low=0)
    dilation = validate.integer("dilation", dilation, low=1)
    return torch.arange(-window, window + 1) * dilation


def dilated_attention(q, k, v, window: int, dilation: int) -> torch.Tensor:
    """Each query attends to the keys at distance 0, ±dilation, …, ±window·dilation."""
    check_self_attention(q, k, v, "dilated attention")
    return gather_attention(q, k, v, dilated_offsets(window, dilation))


def dilated_mask(n: int, window: int, dilation: int) -> torch.Tensor:
    """(n, n) boolean: query i may attend to key j when j − i is one of
    :func:`dilated_offsets`."""
    n = validate.integer("n", n, low=1)
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
    n = check_self_attention(q, k, v, "hybrid attention")
    n_global = validate.integer("n_global", n_global, low=0, high=n)
    window = validate.integer("window", window, low=0)
    out = gather_attention(q, k, v, torch.arange(-window, window + 1), torch.arange(n_global))
    if n_global:
        out[..., :n_global, :] = full_attention(q[..., :n_global, :], k, v)
    return out


def reference(kind: str, q, k, v, **params) -> torch.Tensor:
    """The explicit masked n × n version of ``kind`` in {"dilated", "hybrid"}: ``params`` are
    ``window`` and ``dilation`` (dilated) or ``window`` and ``n_global`` (hybrid)."""
    validate.choice("kind", kind, ("dilated", "hybrid"))
    n = check_self_attention(q, k, v, f"{kind} attention")
    mask = dilated_mask(n, **_params(kind, params)) if kind == "dilated" else \
        hybrid_mask(n, **_params(kind, params))
    return full_attention(q, k, v, mask)


_PARAMS = {"full": (), "window": ("window",), "dilated": ("window", "dilation"),
           "hybrid": ("window", "n_global")}


def _params(kind: str, params: dict, *, extra_ok: bool = False) -> dict:
    """The parameters ``kind`` needs, taken from ``params``; a missing one raises, and so does
    an unknown name (or, without ``extra_ok``, one that ``kind`` does not use)."""
    want = _PARAMS[kind]
    known = {"window", "dilation", "n_global"}
    odd = set(params) - (known if extra_ok else set(want))
    missing = set(want) - set(params)
    if odd or missing:
        example = ", ".join(f"{p}=2" for p in want) or "no parameters"
        raise TypeError(f"kind={kind!r} takes the parameters {list(want)}, got "
                        f"{sorted(params)}; e.g. {example}")
    return {p: params[p] for p in want}


# --- the variants as drop-in attention layers, for training on the takeout-order task -------


def parse_spec(spec: str) -> tuple[str, dict]:
    """``"window-2"``, ``"dilated-2x2"`` (window × dilation), ``"hybrid-2+1"`` (window +
    global tokens) or ``"linear"`` → (kind, parameters)."""
    if not isinstance(spec, str):
        raise TypeError(f"an attention spec is a string such as 'window-2', got {spec!r}")
    kind, _, arg = spec.partition("-")
    parts = {"window": [arg], "dilated": arg.split("x"), "hybrid": arg.split("+")}.get(kind)
    if kind == "linear" and not arg:
        return kind, {}
    if parts is not None and all(p.isdigit() and p.isascii() for p in parts) \
            and len(parts) == len(_PARAMS[kind]):
        params = dict(zip(_PARAMS[kind], map(int, parts), strict=True))
        if params.get("dilation", 1) >= 1:
            return kind, params
    raise ValueError(f"unknown attention spec {spec!r}; use 'window-W', 'dilated-WxR', "
                     "'hybrid-W+G' or 'linear' with whole numbers W, G ≥ 0 and R ≥ 1 (e.g. "
                     "'window-2', 'dilated-2x2', 'hybrid-2+1')")


def pattern_mask(kind: str, n: int, **params) -> torch.Tensor:
    """The (n, n) allowed pattern of a sparse variant (True = may attend); ``params`` as in
    :func:`parse_spec` (``window``, ``dilation``, ``n_global``); those a kind does not use are
    ignored, so one set of parameters can draw every kind."""
    validate.choice("kind", kind, tuple(_PARAMS))
    n = validate.integer("n", n, low=1)
    params = _params(kind, params, extra_ok=True)
    for name, value in params.items():
        params[name] = validate.integer(name, value, low=1 if name == "dilation" else 0)
    if kind == "full":
        return torch.ones(n, n, dtype=torch.bool)
    if kind == "window":
        return window_mask(n, params["window"])
    if kind == "dilated":
        return dilated_mask(n, params["window"], params["dilation"])
    return hybrid_mask(n, min(params["window"], n), min(params["n_global"], n))


def _variant_class():
    class VariantAttention(MultiHeadSelfAttention):
        """The book's attention layer (same projections) with a sparse pattern or linear
        attention inside. Sparse patterns are applied as masks over the n × n scores — the same
        numbers as their O(n·w) versions (tested), which is what matters for accuracy here."""

        def __init__(self, d_model: int, n_heads: int, spec: str, dropout: float = 0.0):
            super().__init__(d_model, n_heads, dropout)
            self.spec = spec
            self.kind, self.params = parse_spec(spec)

        def extra_repr(self) -> str:
            return super().extra_repr() + f", spec={self.spec!r}"

        def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
            allowed = self.check_inputs(x, mask, padding_mask)
            if padding_mask is not None:   # numpy or nested lists become a bool tensor
                padding_mask = masks.as_mask(padding_mask, name="padding_mask", ndim=2)
            b, n, _ = x.shape
            q, k, v = (self.split_heads(w(x)) for w in (self.w_q, self.w_k, self.w_v))
            if self.kind == "linear":
                if mask is not None:
                    raise ValueError("mask= is not supported by linear attention (it never "
                                     "forms the n × n matrix); pass padding_mask= only")
                fq, fk = feature_map(q), feature_map(k)
                if padding_mask is not None:
                    fk = fk * padding_mask[:, None, :, None].to(fk.dtype)
                weights = fq @ fk.transpose(-2, -1)
                weights = weights / weights.sum(-1, keepdim=True)
                context = (fq @ (fk.transpose(-2, -1) @ v)) / (
                    fq @ fk.sum(-2).unsqueeze(-1))
            else:
                pattern = pattern_mask(self.kind, n, **self.params).to(x.device)
                keep = pattern if allowed is None else (allowed & pattern)
                # a (padding) query left with no key at all may attend to itself
                keep = keep | (torch.eye(n, dtype=torch.bool, device=x.device)
                               & ~keep.any(-1, keepdim=True))
                scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
                weights = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
                weights = self.dropout(weights)
                context = weights @ v
            out = self.w_o(self.merge_heads(context))
            return (out, weights) if need_weights else out

    return VariantAttention


VariantAttention = _variant_class()


# --- costs ----------------------------------------------------------------------------------

def methods(window: int = 8, dilation: int = 2, n_global: int = 2) -> dict:
    """The efficient implementation of each variant, as f(q, k, v), next to full attention."""
    window = validate.integer("window", window, low=0)
    dilation = validate.integer("dilation", dilation, low=1)
    n_global = validate.integer("n_global", n_global, low=0)
    return {
        "full": full_attention,
        "window": lambda q, k, v: banded_attention(q, k, v, window),
        "dilated": lambda q, k, v: dilated_attention(q, k, v, window, dilation),
        "hybrid": lambda q, k, v: hybrid_attention(q, k, v, window, min(n_global, q.shape[-2])),
        "linear": linear_attention,
    }


@memo.shared
def memory_curves(ns, *, d: int = 32, heads: int = 4, **pattern) -> dict[str, list[int]]:
    """Peak bytes allocated by each method at each sequence length (deterministic)."""
    ns = lengths(ns)
    out: dict[str, list[int]] = {}
    for name, fn in methods(**pattern).items():
        out[name] = []
        for n in ns:
            q, k, v = random_qkv(n, heads, d)
            out[name].append(peak_memory(lambda fn=fn, q=q, k=k, v=v: fn(q, k, v)))
    return out


@memo.shared
def time_curves(ns, *, d: int = 32, heads: int = 4, repeats: int = 5,
                **pattern) -> dict[str, list[float]]:
    """Best-of-``repeats`` seconds of each method at each sequence length (varies by machine)."""
    ns = lengths(ns)
    out: dict[str, list[float]] = {name: [] for name in methods(**pattern)}
    with torch.no_grad():
        for n in ns:
            q, k, v = random_qkv(n, heads, d)
            best = compare({name: (lambda fn=fn, q=q, k=k, v=v: fn(q, k, v))
                            for name, fn in methods(**pattern).items()}, repeats=repeats)
            for name, seconds in best.items():
                out[name].append(seconds)
    return out


# --- used by the explorers of the chapter modules ----------------------------------------

PATTERN_N = 24


def pattern_data(kind: str, window: int, n: int = PATTERN_N, dilation: int = 2,
                 n_global: int = 2) -> dict:
    """The allowed pattern of a variant (1 = may attend) and how many keys each query sees."""

    n = validate.integer("n", n, low=1, high=512)
    mask = pattern_mask(kind, n, window=window, dilation=dilation, n_global=n_global)
    keys = mask.sum(-1)
    return {"z": mask.int().numpy(), "mean_keys": float(keys.float().mean()),
            "max_keys": int(keys.max()), "n": n}
