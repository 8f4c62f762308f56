"""Autoregressive decoding with a key/value cache, the reference the book checks against.

When a model generates token t, causal attention lets it look at tokens 0…t only. The keys and
values of tokens 0…t-1 were already computed at earlier steps: a **KV cache** keeps them and
appends one row per step, so each step projects only the new token. The outputs must equal a
full recomputation with a causal mask — :func:`causal_self_attention` is that recomputation,
:class:`KVCache` and :func:`decode` the incremental version (numpy, one head).
"""

from __future__ import annotations

import numpy as np

from . import validate
from .attention import scaled_dot_product_attention, softmax


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
