"""Multi-head latent attention (MLA, DeepSeek-V2): cache one small latent vector per token.

Keys and values are not projected from the token directly but from a shared low-rank latent
``c = x W_dkv`` of width ``d_latent``: ``K = c W_uk``, ``V = c W_uv``. A decoder caches only
``c`` (``d_latent`` numbers per token and layer instead of ``2 · d_model``), and the up-
projections can be *absorbed*: ``q · (c W_uk)ᵀ = (q W_ukᵀ) · cᵀ``, so attention runs on the
cached latents directly (:meth:`LatentAttention.attend_absorbed`).

* :class:`LatentAttention` — the layer; :func:`from_mha` builds it from a multi-head layer
  with the best rank-``d_latent`` factorisation of [W_k; W_v] (SVD): equal to the multi-head
  layer at full rank (``d_latent = d_model``).
* :func:`latent_cache_bytes` — what its cache holds.

Not covered: DeepSeek's decoupled RoPE keys (a few extra rotated dimensions per head).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from book.ideas.mha import MultiHeadSelfAttention
from book.kit import validate


class LatentAttention(MultiHeadSelfAttention):
    """Self-attention whose keys and values come from a shared latent of width ``d_latent``.

    Args:
        d_model, n_heads, dropout, bias: as in :class:`~book.ideas.mha.MultiHeadSelfAttention`.
        d_latent: width of the cached latent (1 … d_model gives a compression; more is
            allowed but saves nothing).

    Shape:
        x: (batch, seq, d_model) → (batch, seq, d_model); :meth:`latent` gives the
        (batch, seq, d_latent) tensor a decoder would cache.

    Example:
        >>> layer = LatentAttention(64, n_heads=8, d_latent=16)
        >>> layer.latent(torch.zeros(1, 5, 64)).shape
        torch.Size([1, 5, 16])
    """

    def __init__(self, d_model: int, n_heads: int, d_latent: int, dropout: float = 0.0,
                 bias: bool = True, *, device=None, dtype=None):
        super().__init__(d_model, n_heads, dropout, bias, device=device, dtype=dtype)
        self.d_latent = validate.integer("d_latent", d_latent, low=1)
        kw = {"device": device, "dtype": dtype}
        self.w_k = self.w_v = None  # replaced by the latent path
        self.w_dkv = nn.Linear(d_model, self.d_latent, bias=False, **kw)  # down: x → c
        self.w_uk = nn.Linear(self.d_latent, d_model, bias=bias, **kw)    # up: c → keys
        self.w_uv = nn.Linear(self.d_latent, d_model, bias=bias, **kw)    # up: c → values

    def extra_repr(self) -> str:
        return super().extra_repr() + f", d_latent={self.d_latent}"

    def latent(self, x):
        """The per-token latent c = x W_dkv: all a decoder needs to cache."""
        self.check_inputs(x)
        return self.w_dkv(x)

    def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
        allowed = self.check_inputs(x, mask, padding_mask)
        c = self.latent(x)                                    # (B, T, d_latent)
        q = self.split_heads(self.w_q(x))                     # (B, h, T, d_k)
        k, v = self.split_heads(self.w_uk(c)), self.split_heads(self.w_uv(c))
        return self.attend_heads(q, k, v, allowed, need_weights)

    def attend_absorbed(self, x, c, mask=None):
        """The same output computed from cached latents ``c`` (batch, S, d_latent) without ever
        forming K or V: W_uk is folded into the queries and W_uv applied after the average.

        ``x`` (batch, T, d_model) are the query tokens; ``mask`` (T, S), True = may attend.
        """
        if not isinstance(c, torch.Tensor) or c.ndim != 3 or c.shape[-1] != self.d_latent:
            raise ValueError(f"c must be (batch, S, d_latent={self.d_latent}) latents from "
                             f"layer.latent(x), got {getattr(c, 'shape', type(c).__name__)}")
        self.check_inputs(x)
        if not c.is_floating_point() or not bool(torch.isfinite(c).all()):
            raise ValueError(f"c must hold finite floating-point latents from layer.latent(x), "
                             f"got dtype {c.dtype}" + (" with NaN or inf" if
                                                       c.is_floating_point() else ""))
        if c.shape[0] != x.shape[0] or c.shape[1] == 0:
            raise ValueError(f"c must hold at least one cached token per sequence of x "
                             f"(batch {x.shape[0]}), got shape {tuple(c.shape)}")
        mask = self._absorbed_mask(mask, x.shape[1], c.shape[1])
        h, d_k = self.n_heads, self.d_k
        q = self.split_heads(self.w_q(x))                     # (B, h, T, d_k)
        w_uk = self.w_uk.weight.view(h, d_k, self.d_latent)   # per head: d_latent → d_k
        w_uv = self.w_uv.weight.view(h, d_k, self.d_latent)
        q_latent = q @ w_uk                                   # (B, h, T, d_latent)
        scores = q_latent @ c.unsqueeze(1).transpose(-2, -1)  # (B, h, T, S)
        if self.w_uk.bias is not None:                        # q · b_k: the same for every key
            scores = scores + (q * self.w_uk.bias.view(h, 1, d_k)).sum(-1, keepdim=True)
        scores = scores / math.sqrt(d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = (weights @ c.unsqueeze(1)) @ w_uv.transpose(-2, -1)  # (B, h, T, d_k)
        if self.w_uv.bias is not None:                        # weights sum to 1
            context = context + self.w_uv.bias.view(h, 1, d_k)
        return self.w_o(self.merge_heads(context))

    @staticmethod
    def _absorbed_mask(mask, t: int, s: int):
        if mask is None:
            return None
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"mask must be a boolean tensor (T, S) = ({t}, {s}), True = may "
                            f"attend, got {getattr(mask, 'dtype', type(mask).__name__)}; "
                            "convert with torch.as_tensor(mask, dtype=torch.bool)")
        if mask.shape[-2:] != (t, s):
            raise ValueError(f"mask must end in (T, S) = ({t}, {s}) (queries, cached tokens), "
                             f"got shape {tuple(mask.shape)}")
        if not bool(mask.any(-1).all()):
            raise ValueError("mask has a query row with no allowed key: every query must see "
                             "at least one cached token")
        return mask

    @classmethod
    def from_module(cls, other):
        raise TypeError("use book.ideas.mla.from_mha(layer, d_latent) to build a latent layer "
                        "from a "
                        "multi-head one")


def from_mha(layer: MultiHeadSelfAttention, d_latent: int | None = None) -> LatentAttention:
    """A :class:`LatentAttention` approximating ``layer`` with a rank-``d_latent`` latent.

    [W_k; W_v] (2·d_model × d_model) is factorised by SVD, U S Vᵀ; its best rank-r
    approximation gives W_dkv = V_rᵀ and [W_uk; W_uv] = U_r S_r. At ``d_latent = d_model``
    (the default) nothing is dropped and the layer equals ``layer`` up to float rounding.
    """
    if type(layer) is not MultiHeadSelfAttention:
        raise TypeError(f"layer must be a book.ideas.mha.MultiHeadSelfAttention, got "
                        f"{type(layer).__name__}")
    d = layer.d_model
    r = d if d_latent is None else validate.integer("d_latent", d_latent, low=1, high=d)
    weight = layer.w_q.weight
    has_bias = layer.w_q.bias is not None
    new = LatentAttention(d, layer.n_heads, r, layer.dropout.p, has_bias,
                          device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        stacked = torch.cat([layer.w_k.weight, layer.w_v.weight])  # (2d, d)
        u, s, vh = torch.linalg.svd(stacked, full_matrices=False)
        up = u[:, :r] * s[:r]                                       # (2d, r)
        new.w_dkv.weight.copy_(vh[:r])
        new.w_uk.weight.copy_(up[:d])
        new.w_uv.weight.copy_(up[d:])
        for name in ("w_q", "w_o"):
            getattr(new, name).load_state_dict(getattr(layer, name).state_dict())
        if has_bias:
            new.w_uk.bias.copy_(layer.w_k.bias)
            new.w_uv.bias.copy_(layer.w_v.bias)
    new.train(layer.training)
    return new


def latent_cache_bytes(n_layers: int, n_tokens: int, d_latent: int,
                       bytes_per_number: int = 4) -> int:
    """Bytes of an MLA cache: one latent of ``d_latent`` numbers per layer and token."""
    n_layers = validate.integer("n_layers", n_layers, low=1)
    n_tokens = validate.integer("n_tokens", n_tokens, low=0)
    d_latent = validate.integer("d_latent", d_latent, low=1)
    bytes_per_number = validate.integer("bytes_per_number", bytes_per_number, low=1, high=16)
    return n_layers * n_tokens * d_latent * bytes_per_number
