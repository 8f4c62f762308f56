"""Autoregressive decoding with a key/value cache, the reference the book checks against.

When a model generates token t, causal attention lets it look at tokens 0…t only. The keys and
values of tokens 0…t-1 were already computed at earlier steps: a **KV cache** keeps them and
appends one row per step, so each step projects only the new token. The outputs must equal a
full recomputation with a causal mask — :func:`causal_self_attention` is that recomputation,
:class:`KVCache` and :func:`decode` the incremental version (numpy, one head).
"""

from __future__ import annotations

import numpy as np
import torch

from book.ideas.attention import scaled_dot_product_attention, softmax
from book.kit import memo, timing, validate


def _weights(X, W_q, W_k, W_v):
    X = validate.array("X", X, ndim=2)
    W_q = validate.array("W_q", W_q, ndim=2)
    W_k = validate.array("W_k", W_k, ndim=2)
    W_v = validate.array("W_v", W_v, ndim=2)
    d_model = X.shape[1]
    for name, w in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        if w.shape[0] != d_model:
            raise ValueError(f"{name} has {w.shape[0]} rows but tokens have d_model={d_model} "
                             f"features; {name} must be ({d_model}, width)")
    if W_q.shape[1] != W_k.shape[1]:
        raise ValueError(f"W_q is {W_q.shape} but W_k is {W_k.shape}: queries and keys need "
                         "the same width d_k")
    return X, W_q, W_k, W_v


def causal_self_attention(X, W_q, W_k, W_v) -> np.ndarray:
    """Full recomputation: every token attends to itself and the tokens before it."""
    X, W_q, W_k, W_v = _weights(X, W_q, W_k, W_v)
    n = X.shape[0]
    mask = np.tril(np.ones((n, n), dtype=bool))
    out, _ = scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask)
    return out


class KVCache:
    """The keys and values of the tokens seen so far; grows by one row per decoding step."""

    def __init__(self, d_k: int, d_v: int):
        self.d_k = validate.integer("d_k", d_k, low=1)
        self.d_v = validate.integer("d_v", d_v, low=1)
        self.keys = np.zeros((0, self.d_k))
        self.values = np.zeros((0, self.d_v))

    def __len__(self) -> int:
        return self.keys.shape[0]

    def append(self, k, v) -> None:
        """Add one token's key (d_k,) and value (d_v,)."""
        k = validate.array("k", k, ndim=1)
        v = validate.array("v", v, ndim=1)
        if k.shape != (self.d_k,) or v.shape != (self.d_v,):
            raise ValueError(f"expected a key of shape ({self.d_k},) and a value of shape "
                             f"({self.d_v},), got {k.shape} and {v.shape}")
        self.keys = np.vstack([self.keys, k])
        self.values = np.vstack([self.values, v])

    def attend(self, q) -> np.ndarray:
        """The output for query ``q`` (d_k,) over every cached token."""
        q = validate.array("q", q, ndim=1)
        if len(self) == 0:
            raise ValueError("the cache is empty: append the current token's key and value "
                             "before attending (a token always sees itself)")
        if q.shape != (self.d_k,):
            raise ValueError(f"q must have shape ({self.d_k},), got {q.shape}")
        weights = softmax(self.keys @ q / np.sqrt(self.d_k))
        return weights @ self.values


def decode(X, W_q, W_k, W_v) -> tuple[np.ndarray, KVCache]:
    """Process the tokens of ``X`` one at a time with a KV cache; returns (outputs, cache).

    Step t projects only token t, appends its key and value, and attends over the cache —
    the same result as :func:`causal_self_attention` at a fraction of the projections.
    """
    X, W_q, W_k, W_v = _weights(X, W_q, W_k, W_v)
    cache = KVCache(W_k.shape[1], W_v.shape[1])
    outputs = []
    for x in X:
        cache.append(x @ W_k, x @ W_v)
        outputs.append(cache.attend(x @ W_q))
    return np.array(outputs), cache


def cache_bytes(n_layers: int, n_tokens: int, d_model: int, bytes_per_number: int = 4) -> int:
    """Memory of a KV cache: keys and values (2) for every layer, token and feature."""
    n_layers = validate.integer("n_layers", n_layers, low=1)
    n_tokens = validate.integer("n_tokens", n_tokens, low=0)
    d_model = validate.integer("d_model", d_model, low=1)
    bytes_per_number = validate.integer("bytes_per_number", bytes_per_number, low=1, high=16)
    return 2 * n_layers * n_tokens * d_model * bytes_per_number


# --- a tiny causal decoder in torch: generation with and without the cache -----------------

class TinyDecoder(torch.nn.Module):
    """A small causal Transformer decoder (pre-LN) whose generation can use a KV cache.

    ``forward(tokens)`` recomputes every position with a causal mask (what generation without
    a cache does at every step); ``generate(prompt, n_new, use_cache)`` decodes greedily and
    must produce the same tokens either way.
    """

    def __init__(self, vocab_size: int = 64, d_model: int = 128, n_heads: int = 4,
                 n_layers: int = 2, max_len: int = 2048, seed: int = 0):
        super().__init__()
        self.vocab_size = validate.integer("vocab_size", vocab_size, low=2)
        self.d_model = validate.integer("d_model", d_model, low=1)
        self.n_heads = validate.integer("n_heads", n_heads, low=1)
        validate.head_split(self.d_model, self.n_heads)
        self.n_layers = validate.integer("n_layers", n_layers, low=1)
        self.max_len = validate.integer("max_len", max_len, low=1)
        seed = validate.seed(seed)
        # seed every parameter (biases and LayerNorms too) and leave the global generator alone
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._build(vocab_size, d_model, n_layers, max_len, seed)
        self.eval()

    def _build(self, vocab_size: int, d_model: int, n_layers: int, max_len: int,
               seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        nn = torch.nn
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            self.layers.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d_model), "qkv": nn.Linear(d_model, 3 * d_model),
                "out": nn.Linear(d_model, d_model), "ln2": nn.LayerNorm(d_model),
                "ff": nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                    nn.Linear(4 * d_model, d_model))}))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        with torch.no_grad():
            for p in self.parameters():
                if p.ndim >= 2:
                    p.copy_(torch.randn(p.shape, generator=gen) * 0.02 * 5)

    def _ids(self, name: str, ids, ndim: int = 1) -> torch.Tensor:
        ids = validate.token_ids(name, ids, self.vocab_size, ndim=ndim, max_len=self.max_len)
        return ids.to(self.embed.weight.device)

    def _split(self, t: torch.Tensor) -> torch.Tensor:
        b, n, _ = t.shape
        return t.view(b, n, self.n_heads, self.d_model // self.n_heads).transpose(1, 2)

    def _block(self, layer, x, cache=None):
        """One layer on new positions ``x``; with ``cache`` = [K, V] it appends and attends."""
        q, k, v = layer["qkv"](layer["ln1"](x)).chunk(3, dim=-1)
        q, k, v = self._split(q), self._split(k), self._split(v)
        if cache is None:
            ctx = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            past = 0 if cache[0] is None else cache[0].shape[2]
            if past:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v
            n_new = q.shape[2]
            # new position i (absolute past + i) may attend to cached and new keys j ≤ past + i;
            # a single new token may attend to everything cached, so it needs no mask at all
            mask = None if n_new == 1 else (
                torch.arange(past + n_new)[None, :] <= past + torch.arange(n_new)[:, None])
            ctx = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        b, _, n, _ = ctx.shape
        x = x + layer["out"](ctx.transpose(1, 2).reshape(b, n, self.d_model))
        return x + layer["ff"](layer["ln2"](x))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits for every position of ``tokens`` (batch, n), recomputed from scratch."""
        tokens = self._ids("tokens", tokens, ndim=2)
        n = tokens.shape[1]
        x = self.embed(tokens) + self.pos(torch.arange(n))
        for layer in self.layers:
            x = self._block(layer, x)
        return self.head(self.ln_f(x))

    @torch.no_grad()
    def prefill(self, tokens) -> list[list[torch.Tensor]]:
        """Run ``tokens`` (1-D ids) through the cached path; return each layer's [K, V] cache.

        K and V are (1, heads, len(tokens), d_model / heads): what generation keeps in memory
        after reading the prompt, :func:`cache_bytes` of it exactly.
        """
        tokens = self._ids("tokens", tokens)
        caches = [[None, None] for _ in self.layers]
        x = self.embed(tokens[None]) + self.pos(torch.arange(tokens.numel()))
        for layer, cache in zip(self.layers, caches, strict=True):
            x = self._block(layer, x, cache)
        return caches

    @torch.no_grad()
    def generate(self, prompt, n_new: int, *, use_cache: bool = True) -> torch.Tensor:
        """Greedy decoding of ``n_new`` tokens after ``prompt`` (1-D token ids)."""
        prompt = self._ids("prompt", prompt)
        n_new = validate.integer("n_new", n_new, low=0)
        validate.boolean("use_cache", use_cache)
        if prompt.numel() + n_new > self.max_len:
            raise ValueError(f"prompt + n_new = {prompt.numel() + n_new} exceeds max_len="
                             f"{self.max_len}; generate fewer tokens or build a larger model")
        tokens = prompt[None]
        if not use_cache:
            for _ in range(n_new):
                nxt = self(tokens)[:, -1].argmax(-1, keepdim=True)
                tokens = torch.cat([tokens, nxt], dim=1)
            return tokens[0]
        caches = [[None, None] for _ in self.layers]
        new = tokens
        for step in range(n_new + 1):
            start = tokens.shape[1] - new.shape[1]
            x = self.embed(new) + self.pos(torch.arange(start, tokens.shape[1]))
            for layer, cache in zip(self.layers, caches, strict=True):
                x = self._block(layer, x, cache)
            if step == n_new:
                break
            new = self.head(self.ln_f(x))[:, -1].argmax(-1, keepdim=True)
            tokens = torch.cat([tokens, new], dim=1)
        return tokens[0]


def positions_per_step(model: TinyDecoder, prompt, n_new: int, *,
                       use_cache: bool = True) -> list[int]:
    """How many positions each step of ``model.generate(prompt, n_new, use_cache=…)`` runs
    through the layers, counted while it generates (a hook on the first layer's projection).

    Without the cache, the step that writes new token ``t`` (from 0) runs over all
    ``len(prompt) + t`` tokens; with it, the first step reads the prompt and every later step
    only the one token written last (the extra last step stores that token's keys and values).
    """
    if not isinstance(model, TinyDecoder):
        raise TypeError(f"model must be a TinyDecoder, got {type(model).__name__}")
    counts: list[int] = []
    hook = model.layers[0]["qkv"].register_forward_hook(
        lambda _module, _inputs, out: counts.append(int(out.shape[1])))
    try:
        model.generate(prompt, n_new, use_cache=use_cache)
    finally:
        hook.remove()
    return counts


def _generation(model, prompt, n_new: int, use_cache: bool, out: dict):
    """A no-argument call of ``model.generate`` that stores its tokens in ``out[use_cache]``."""
    def run():
        out[use_cache] = model.generate(prompt, n_new, use_cache=use_cache)
    return run


@memo.shared
def generation_times(model: TinyDecoder, prompt, lengths, *, repeats: int = 1) -> list[dict]:
    """Wall-clock seconds of ``model.generate`` with and without the cache, per new-token count.

    Each row: n_new, seconds with the cache (best of ``repeats``), seconds recomputing every
    step (best of ``repeats``), their ratio (the speed-up) and whether both produced the same
    tokens. A short generation each way runs first, untimed, to warm up.
    """
    if not isinstance(model, TinyDecoder):
        raise TypeError(f"model must be a TinyDecoder, got {type(model).__name__}")
    lengths = [validate.integer("n_new", n, low=1)
               for n in validate.listed("lengths", lengths, "[64, 128]", allow_empty=False)]
    repeats = validate.integer("repeats", repeats, low=1, high=100)
    for use_cache in (True, False):  # warm-up: first calls pay one-off costs
        model.generate(prompt, 2, use_cache=use_cache)
    rows = []
    for n_new in lengths:
        out, seconds = {}, {}
        for use_cache in (True, False):
            run = _generation(model, prompt, n_new, use_cache, out)
            seconds[use_cache] = timing.best_of(run, repeats=repeats, warmup=0)
        rows.append({"n_new": n_new, "cached": seconds[True], "full": seconds[False],
                     "speedup": seconds[False] / seconds[True],
                     "same": bool(torch.equal(out[True], out[False]))})
    return rows
