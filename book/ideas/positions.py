"""Where a token sits: attention without positions, absolute positions and RoPE.

* :func:`permutation_gap` — attention with no position information is permutation-equivariant:
  shuffle the tokens and the outputs shuffle the same way. The function measures how far a layer
  is from that (0 up to float rounding for plain attention).
* :func:`sinusoidal_table` — the 2017 paper's fixed sin/cos positions, added to the embeddings;
  a learned table (``nn.Embedding``) is the other absolute choice.
* :func:`rope` — rotary position embedding: each pair of query/key features is rotated by an
  angle proportional to the position, so the score q_m · k_n depends on m − n only;
  :func:`relative_spread` measures that over offsets.

The takeout-order encoder built with each kind of position is
:func:`book.toy.variants.positional_encoder`.

Shapes: a sequence is (…, n, d); RoPE needs an even d (features are rotated in pairs).
"""

from __future__ import annotations

import torch
from torch import nn

from book.ideas.mha import MultiHeadSelfAttention
from book.kit import validate

KINDS = ("none", "learned", "sinusoidal", "rope")
ROPE_BASE = 10_000.0


def _tensor(name: str, t, *, min_ndim: int = 2) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor of shape (..., n, d), got "
                        f"{type(t).__name__}; convert with torch.as_tensor({name})")
    if t.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions (..., n, d), got "
                         f"shape {tuple(t.shape)}; add axes with {name}.unsqueeze(0)")
    if not t.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}; use "
                        f"{name}.double() or {name}.float()")
    if t.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(t.shape)}); pass at least one token "
                         "with at least one feature")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or infinity; positions need finite inputs")
    return t


def _positions(name: str, positions, n: int | None = None) -> torch.Tensor:
    """Token positions as a 1-D tensor of whole numbers (one per token when ``n`` is given)."""
    if isinstance(positions, (str, bytes)) or positions is None:
        raise TypeError(f"{name} must be a list or 1-D tensor of whole numbers, got "
                        f"{type(positions).__name__}; e.g. {name}=torch.arange(n)")
    try:
        t = torch.as_tensor(positions)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be a list or 1-D tensor of whole numbers ({err})") from None
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must hold whole numbers, got dtype {t.dtype}")
    if t.is_floating_point() and not bool((torch.isfinite(t) & (t == t.round())).all()):
        raise ValueError(f"{name} must hold whole, finite numbers (token positions), got "
                         f"{t.tolist()}")
    if t.ndim != 1 or (n is not None and t.shape != (n,)):
        want = f"({n},), one position per token" if n is not None else "1-D, one per token"
        raise ValueError(f"{name} must have shape {want}, got shape {tuple(t.shape)}")
    return t


# --- permutation equivariance ------------------------------------------------------------------

def permutation_gap(layer: nn.Module, x: torch.Tensor, perm) -> float:
    """max |layer(x[:, perm]) − layer(x)[:, perm]|: 0 (to rounding) when ``layer`` cannot tell
    where a token stands, large when it can.

    Args:
        layer: any module mapping (batch, n, d) to (batch, n, d), e.g. a
            :class:`~book.ideas.mha.MultiHeadSelfAttention`.
        x: (batch, n, d) input.
        perm: a permutation of ``range(n)`` (list or 1-D tensor).
    """
    if not callable(layer):
        raise TypeError(f"layer must be a module or function of x, got {type(layer).__name__}")
    x = _tensor("x", x, min_ndim=3)
    n = x.shape[-2]
    perm = _positions("perm", perm)
    if sorted(perm.tolist()) != list(range(n)):
        raise ValueError(f"perm must be a permutation of 0..{n - 1} (one index per token), got "
                         f"{perm.tolist()}; e.g. torch.randperm({n})")
    with torch.no_grad():
        return float((layer(x[:, perm]) - layer(x)[:, perm]).abs().max())


# --- absolute positions ------------------------------------------------------------------------

def sinusoidal_table(n: int, d: int, base: float = ROPE_BASE) -> torch.Tensor:
    """(n, d) table: PE[p, 2i] = sin(p / base^(2i/d)), PE[p, 2i + 1] = cos(p / base^(2i/d))."""
    n = validate.integer("n", n, low=1)
    d = validate.integer("d", d, low=2)
    if d % 2:
        raise ValueError(f"d={d} is odd; sin/cos positions come in pairs, use d={d + 1} or "
                         f"{d - 1}")
    base = validate.real("base", base, low=1.0 + 1e-9)
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    table = torch.zeros(n, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table


class SinusoidalPositions(nn.Module):
    """A fixed (not trained) sinusoidal table with the ``weight`` attribute of an
    ``nn.Embedding``, so it can stand where the encoder's learned table stands."""

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        max_len = validate.integer("max_len", max_len, low=1)
        d_model = validate.integer("d_model", d_model, low=2)
        self.register_buffer("weight", sinusoidal_table(max_len, d_model).float())


# --- RoPE --------------------------------------------------------------------------------------

def rope_angles(positions, d: int, base: float = ROPE_BASE) -> torch.Tensor:
    """(n, d/2) rotation angles θ = p · base^(−2i/d) for each position p and feature pair i."""
    d = validate.integer("d", d, low=2)
    if d % 2:
        raise ValueError(f"d={d} is odd; RoPE rotates features in pairs, use an even head width")
    base = validate.real("base", base, low=1.0 + 1e-9)
    positions = _positions("positions", positions).to(torch.float64)
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return positions[:, None] * freq[None, :]


def _rope_inputs(x, positions):
    x = _tensor("x", x)
    n = x.shape[-2]
    return x, (torch.arange(n) if positions is None else _positions("positions", positions, n))


def rope(x: torch.Tensor, positions=None, base: float = ROPE_BASE) -> torch.Tensor:
    """Rotate the feature pairs (x[..., i], x[..., i + d/2]) of token p by p · base^(−2i/d).

    The "rotate half" layout of GPT-NeoX and Llama. Applied to queries and keys (never to
    values), it makes q_m · k_n a function of m − n.

    Args:
        x: (…, n, d) queries or keys, d even.
        positions: the n positions (default 0 … n − 1); a decoder with a cache passes the
            absolute positions of the new tokens.
    Returns:
        A tensor shaped like ``x``; every token's norm is unchanged.
    """
    x, positions = _rope_inputs(x, positions)  # validated; default positions 0 … n − 1
    d = x.shape[-1]
    theta = rope_angles(positions, d, base).to(x.dtype)
    cos = torch.cat([theta.cos(), theta.cos()], dim=-1)  # (n, d)
    sin = torch.cat([theta.sin(), theta.sin()], dim=-1)
    first, second = x[..., : d // 2], x[..., d // 2:]
    rotated_half = torch.cat([-second, first], dim=-1)
    return x * cos + rotated_half * sin


MAX_GRID = 4096  # score_grid's largest n: 4096² float32 scores are 64 MiB


def score_grid(q: torch.Tensor, k: torch.Tensor, n: int, kind: str = "rope",
               base: float = ROPE_BASE) -> torch.Tensor:
    """(n, n) scores of one query vector placed at position m against one key vector at n.

    ``kind="rope"`` rotates q and k; ``"sinusoidal"`` adds the sinusoidal table to both (the
    absolute scheme); ``"none"`` uses the same q and k everywhere. Rows = query positions,
    columns = key positions. At most ``MAX_GRID`` positions (the grid is n × n numbers).
    """
    validate.choice("kind", kind, ("rope", "sinusoidal", "none"))
    q = _tensor("q", q, min_ndim=1)
    k = _tensor("k", k, min_ndim=1)
    if q.ndim != 1 or q.shape != k.shape:
        raise ValueError(f"q and k must be two 1-D vectors of the same width, got "
                         f"{tuple(q.shape)} and {tuple(k.shape)}")
    n = validate.integer("n", n, low=1, high=MAX_GRID)
    qs, ks = q.expand(n, -1), k.expand(n, -1)
    if kind == "rope":
        qs, ks = rope(qs, base=base), rope(ks, base=base)
    elif kind == "sinusoidal":
        table = sinusoidal_table(n, q.shape[0], base).to(q.dtype)
        qs, ks = qs + table, ks + table
    return qs @ ks.T


def relative_spread(scores: torch.Tensor) -> dict:
    """How far an (n, n) score grid is from depending on m − n only.

    For each offset m − n (each diagonal), the spread max − min of its scores; returns
    ``{"offsets", "spread" (per offset), "max_spread", "score_range"}``. RoPE gives a
    ``max_spread`` at float rounding; absolute positions give one comparable to the range.
    """
    scores = _tensor("scores", scores)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1]:
        raise ValueError(f"scores must be a square (n, n) grid, got {tuple(scores.shape)}")
    n = scores.shape[0]
    offsets = list(range(-(n - 1), n))
    spread = [float(torch.diagonal(scores, -o).max() - torch.diagonal(scores, -o).min())
              for o in offsets]
    return {"offsets": offsets, "spread": spread, "max_spread": max(spread),
            "score_range": float(scores.max() - scores.min())}


class RopeSelfAttention(MultiHeadSelfAttention):
    """The book's multi-head layer with RoPE applied to each head's queries and keys (head
    width d_k must be even). Same parameters as :class:`~book.ideas.mha.MultiHeadSelfAttention`."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 *, device=None, dtype=None):
        super().__init__(d_model, n_heads, dropout, bias, device=device, dtype=dtype)
        if self.d_k % 2:
            raise ValueError(f"RoPE needs an even head width, but d_model={d_model} / "
                             f"n_heads={n_heads} = {self.d_k}; pick n_heads so that d_k is even")

    def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
        allowed = self.check_inputs(x, mask, padding_mask)
        q = rope(self.split_heads(self.w_q(x)))  # (B, h, T, d_k), rotated by position
        k = rope(self.split_heads(self.w_k(x)))
        v = self.split_heads(self.w_v(x))        # values are not rotated
        return self.attend_heads(q, k, v, allowed, need_weights)
