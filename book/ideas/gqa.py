"""Multi-query and grouped-query attention (MQA, GQA): fewer key/value heads than query heads.

Every query head keeps its own W_q slice, but the query heads are split into ``n_kv_heads``
groups and each group shares one key head and one value head. ``n_kv_heads = n_heads`` is
ordinary multi-head attention; ``n_kv_heads = 1`` is multi-query attention. What shrinks is the
key/value projection and, above all, the KV cache a decoder keeps: ``n_heads / n_kv_heads``
times smaller.

* :class:`GroupedQueryAttention` — the layer (from scratch, heads batched); ``sdpa=True``
  runs the same weights through ``F.scaled_dot_product_attention(..., enable_gqa=True)``.
* :func:`from_mha` — a GQA layer equal to a :class:`~book.ideas.mha.MultiHeadSelfAttention`
  (``n_kv_heads = n_heads``) or built from it by mean-pooling key/value heads per group.
* :func:`kv_cache_bytes` — the cache formula; :class:`GQADecoder` — the book's
  :class:`~book.ideas.kvcache.TinyDecoder` with grouped heads, whose real cache tensors the formula
  is checked against. The takeout-order encoder with grouped heads is
  :func:`book.toy.variants.gqa_encoder`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from book.ideas import positions
from book.ideas.kvcache import TinyDecoder
from book.ideas.mha import MultiHeadSelfAttention
from book.kit import memo, validate


def valid_kv_heads(n_heads: int) -> list[int]:
    """The numbers of key/value heads that ``n_heads`` query heads allow: its divisors."""
    return validate.divisors(validate.integer("n_heads", n_heads, low=1))


def check_groups(n_heads: int, n_kv_heads: int) -> tuple[int, int]:
    """Validate a (query heads, key/value heads) pair: n_kv_heads must divide n_heads."""
    n_heads = validate.integer("n_heads", n_heads, low=1)
    n_kv_heads = validate.integer("n_kv_heads", n_kv_heads, low=1)
    if n_heads % n_kv_heads:
        choices = ", ".join(map(str, valid_kv_heads(n_heads)))
        raise ValueError(f"n_kv_heads={n_kv_heads} does not divide n_heads={n_heads}: every "
                         f"group needs the same number of query heads; pick n_kv_heads in "
                         f"{{{choices}}}")
    return n_heads, n_kv_heads


def kv_head_of(query_head: int, n_heads: int, n_kv_heads: int) -> int:
    """Which key/value head query head ``query_head`` reads (groups of consecutive heads)."""
    n_heads, n_kv_heads = check_groups(n_heads, n_kv_heads)
    query_head = validate.integer("query_head", query_head, low=0, high=n_heads - 1)
    return query_head // (n_heads // n_kv_heads)


class GroupedQueryAttention(MultiHeadSelfAttention):
    """Self-attention with ``n_heads`` query heads sharing ``n_kv_heads`` key/value heads.

    Args:
        d_model: width of the token vectors; ``d_k = d_model // n_heads`` per head.
        n_heads: query heads.
        n_kv_heads: key/value heads; must divide ``n_heads`` (default: ``n_heads``, plain MHA).
        dropout, bias: as in :class:`~book.ideas.mha.MultiHeadSelfAttention`.
        sdpa: compute attention with ``F.scaled_dot_product_attention(enable_gqa=True)``
            instead of expanding the key/value heads by hand.
        rope: rotate queries and keys by position (:func:`book.ideas.positions.rope`), as
        Llama-style
            models do; head width d_k must then be even.

    Shape:
        x: (batch, seq, d_model) → (batch, seq, d_model). Masks as in the book's MHA
        (True = may attend).

    Example:
        >>> layer = GroupedQueryAttention(64, n_heads=8, n_kv_heads=2)
        >>> layer.w_k.weight.shape   # 2 key heads of width 8
        torch.Size([16, 64])
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 dropout: float = 0.0, bias: bool = True, *, sdpa: bool = False,
                 rope: bool = False, device=None, dtype=None):
        super().__init__(d_model, n_heads, dropout, bias, device=device, dtype=dtype)
        n_kv_heads = self.n_heads if n_kv_heads is None else n_kv_heads
        _, self.n_kv_heads = check_groups(self.n_heads, n_kv_heads)
        self.sdpa = validate.boolean("sdpa", sdpa)
        rope = validate.boolean("rope", rope)
        if rope and self.d_k % 2:
            raise ValueError(f"RoPE needs an even head width, but d_model={d_model} / "
                             f"n_heads={n_heads} = {self.d_k}; pick n_heads so that d_k is even")
        self.rope = rope
        kv_width = self.n_kv_heads * self.d_k
        kw = {"bias": bias, "device": device, "dtype": dtype}
        self.w_k = nn.Linear(d_model, kv_width, **kw)  # (d_model → n_kv_heads · d_k)
        self.w_v = nn.Linear(d_model, kv_width, **kw)

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return self.n_heads // self.n_kv_heads

    def extra_repr(self) -> str:
        return (super().extra_repr() + f", n_kv_heads={self.n_kv_heads}"
                + (", rope=True" if self.rope else ""))

    def project(self, x):
        """Queries (B, h, T, d_k) and the shared keys and values (B, h_kv, T, d_k)."""
        b, t, _ = x.shape
        q = self.w_q(x).view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).view(b, t, self.n_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).view(b, t, self.n_kv_heads, self.d_k).transpose(1, 2)
        if self.rope:  # positions enter through the rotation of q and k, never v
            q, k = positions.rope(q), positions.rope(k)
        return q, k, v

    def attend(self, q, k, v, allowed=None, need_weights: bool = False):
        """Attention of q (B, h, T, d_k) over shared k, v (B, h_kv, S, d_k)."""
        if self.sdpa and not need_weights:
            return F.scaled_dot_product_attention(
                q, k, v, attn_mask=allowed, enable_gqa=True,
                dropout_p=self.dropout.p if self.training else 0.0), None
        # each key/value head serves group_size consecutive query heads:
        # (B, h_kv, S, d_k) --repeat_interleave--> (B, h, S, d_k)
        k = k.repeat_interleave(self.group_size, dim=1)
        v = v.repeat_interleave(self.group_size, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, T, S)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return weights @ v, weights  # (B, h, T, d_k)

    def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
        allowed = self.check_inputs(x, mask, padding_mask)
        q, k, v = self.project(x)
        context, weights = self.attend(q, k, v, allowed, need_weights)
        out = self.w_o(self.merge_heads(context))
        return (out, weights) if need_weights else out

    @classmethod
    def from_module(cls, other):  # the parent's version would copy mismatched K/V shapes
        raise TypeError("use book.ideas.gqa.from_mha(layer, n_kv_heads) to build a grouped layer "
                        "from a multi-head one")


def from_mha(layer: MultiHeadSelfAttention, n_kv_heads: int | None = None, *,
             sdpa: bool = False, rope: bool | None = None) -> GroupedQueryAttention:
    """A :class:`GroupedQueryAttention` made from a multi-head layer's weights.

    With ``n_kv_heads = n_heads`` (the default) the weights are copied and the two layers
    compute the same function. With fewer key/value heads, each group's key and value
    projections are the mean of its heads' (the GQA paper's conversion of a trained model,
    which it then fine-tunes briefly). ``rope`` defaults to whether ``layer`` is a
    :class:`~book.ideas.positions.RopeSelfAttention`.
    """
    if not isinstance(layer, MultiHeadSelfAttention) or isinstance(layer, GroupedQueryAttention):
        raise TypeError(f"layer must be a book.ideas.mha.MultiHeadSelfAttention, got "
                        f"{type(layer).__name__}")
    n_kv = layer.n_heads if n_kv_heads is None else n_kv_heads
    weight = layer.w_q.weight
    has_bias = layer.w_q.bias is not None
    if rope is None:
        rope = isinstance(layer, positions.RopeSelfAttention)
    new = GroupedQueryAttention(layer.d_model, layer.n_heads, n_kv, layer.dropout.p, has_bias,
                                sdpa=sdpa, rope=rope, device=weight.device, dtype=weight.dtype)
    g, d_k = new.group_size, layer.d_k

    def pooled(t):  # (n_heads · d_k, …) → (n_kv · d_k, …): mean over the heads of each group
        return t.reshape(n_kv, g, d_k, *t.shape[1:]).mean(1).reshape(n_kv * d_k, *t.shape[1:])

    with torch.no_grad():
        for name in ("w_q", "w_o"):
            getattr(new, name).load_state_dict(getattr(layer, name).state_dict())
        for name in ("w_k", "w_v"):
            src, dst = getattr(layer, name), getattr(new, name)
            dst.weight.copy_(pooled(src.weight))
            if has_bias:
                dst.bias.copy_(pooled(src.bias))
    new.train(layer.training)
    return new


# --- the KV cache ------------------------------------------------------------------------------

def kv_cache_bytes(n_layers: int, n_tokens: int, n_kv_heads: int, d_head: int,
                   bytes_per_number: int = 4) -> int:
    """Bytes of a KV cache: keys and values (2) × layers × tokens × KV heads × head width."""
    n_layers = validate.integer("n_layers", n_layers, low=1)
    n_tokens = validate.integer("n_tokens", n_tokens, low=0)
    n_kv_heads = validate.integer("n_kv_heads", n_kv_heads, low=1)
    d_head = validate.integer("d_head", d_head, low=1)
    bytes_per_number = validate.integer("bytes_per_number", bytes_per_number, low=1, high=16)
    return 2 * n_layers * n_tokens * n_kv_heads * d_head * bytes_per_number


def tensor_bytes(caches) -> int:
    """Bytes actually held by a decoder's caches: a list of [K, V] per layer."""
    if not isinstance(caches, (list, tuple)) or not caches or not all(
            isinstance(pair, (list, tuple)) and len(pair) == 2
            and all(isinstance(t, torch.Tensor) for t in pair) for pair in caches):
        raise TypeError("caches must be the list of [K, V] pairs of tensors (one per layer) "
                        "returned by prefill()")
    return sum(t.numel() * t.element_size() for pair in caches for t in pair)


LLAMA_STYLE = {"n_layers": 32, "n_heads": 32, "n_kv_heads": 8, "d_head": 128,
               "bytes_per_number": 2}
"""A Llama-3-8B-like shape (32 layers, 32 query heads of width 128, 8 KV heads, 16-bit)."""


class GQADecoder(TinyDecoder):
    """The book's tiny causal decoder with ``n_kv_heads`` key/value heads per layer.

    Same interface as :class:`~book.ideas.kvcache.TinyDecoder` (``forward``, ``prefill``,
    ``generate``); each layer's cache holds K and V of shape (1, n_kv_heads, tokens, d_head),
    so :func:`tensor_bytes` of it equals :func:`kv_cache_bytes`.
    """

    def __init__(self, vocab_size: int = 64, d_model: int = 128, n_heads: int = 4,
                 n_kv_heads: int | None = None, n_layers: int = 2, max_len: int = 2048,
                 seed: int = 0):
        super().__init__(vocab_size, d_model, n_heads, n_layers, max_len, seed)
        _, self.n_kv_heads = check_groups(self.n_heads,
                                          self.n_heads if n_kv_heads is None else n_kv_heads)
        self.d_head = self.d_model // self.n_heads
        kv = self.n_kv_heads * self.d_head
        gen = torch.Generator().manual_seed(seed + 1)
        for layer in self.layers:
            with torch.random.fork_rng(devices=[]):  # leave the global generator alone
                qkv = nn.Linear(self.d_model, self.d_model + 2 * kv)  # Q, then shared K, V
            with torch.no_grad():
                qkv.weight.copy_(torch.randn(qkv.weight.shape, generator=gen) * 0.1)
                qkv.bias.zero_()
            layer["qkv"] = qkv
        self.eval()

    def _block(self, layer, x, cache=None):
        b, n, _ = x.shape
        kv = self.n_kv_heads * self.d_head
        q, k, v = layer["qkv"](layer["ln1"](x)).split([self.d_model, kv, kv], dim=-1)
        q = q.view(b, n, self.n_heads, self.d_head).transpose(1, 2)      # (B, h, n, d)
        k = k.view(b, n, self.n_kv_heads, self.d_head).transpose(1, 2)   # (B, h_kv, n, d)
        v = v.view(b, n, self.n_kv_heads, self.d_head).transpose(1, 2)
        mask, causal = None, cache is None
        if cache is not None:
            past = 0 if cache[0] is None else cache[0].shape[2]
            if past:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v  # only n_kv_heads heads are kept
            if n > 1:
                mask = torch.arange(past + n)[None, :] <= past + torch.arange(n)[:, None]
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                             is_causal=causal and n > 1, enable_gqa=True)
        x = x + layer["out"](ctx.transpose(1, 2).reshape(b, n, self.d_model))
        return x + layer["ff"](layer["ln2"](x))


@memo.shared
def decode_times(n_kv_list, prompt_len: int = 256, n_new: int = 32, *, d_model: int = 256,
                 n_heads: int = 8, n_layers: int = 2, repeats: int = 3,
                 seed: int = 0) -> list[dict]:
    """Cached greedy decoding with each key/value head count: seconds per new token (best of
    ``repeats``, models timed in interleaved rounds) and the cache's bytes after the prompt."""
    from book.kit import timing

    if isinstance(n_kv_list, (str, bytes)) or not isinstance(n_kv_list, (list, tuple, range)):
        raise TypeError(f"n_kv_list must be a list of key/value head counts, e.g. [1, 2, 8], "
                        f"got {n_kv_list!r}")
    n_kv_list = [check_groups(n_heads, n)[1] for n in n_kv_list]
    if not n_kv_list:
        raise ValueError("n_kv_list must hold at least one key/value head count, e.g. [1, 2, 8]")
    prompt_len = validate.integer("prompt_len", prompt_len, low=1)
    n_new = validate.integer("n_new", n_new, low=1)
    models = {n: GQADecoder(d_model=d_model, n_heads=n_heads, n_kv_heads=n, n_layers=n_layers,
                            max_len=prompt_len + n_new, seed=seed) for n in n_kv_list}
    prompt = torch.randint(0, 64, (prompt_len,), generator=torch.Generator().manual_seed(seed))
    calls = {str(n): (lambda m=m: m.generate(prompt, n_new)) for n, m in models.items()}
    seconds = timing.compare(calls, repeats=validate.integer("repeats", repeats, low=1))
    rows = []
    for n, model in models.items():
        caches = model.prefill(prompt)
        rows.append({"n_kv_heads": n, "seconds_per_token": seconds[str(n)] / n_new,
                     "cache_bytes": tensor_bytes(caches),
                     "formula_bytes": kv_cache_bytes(n_layers, prompt_len, n, d_model // n_heads)})
    return rows
