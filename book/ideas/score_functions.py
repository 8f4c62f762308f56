"""Three ways to score a query against a key (chapter 2's aside on the source article's §1.3).

* **additive** (Bahdanau et al., 2015): ``score(q, k) = vᵀ tanh(W_q q + W_k k)``, a one-layer
  network applied to every (query, key) pair;
* **bilinear** ("general", Luong et al., 2015): ``score(q, k) = qᵀ W k``, i.e. ``(Q W) Kᵀ``;
* **scaled dot product** (the Transformer): ``score(q, k) = qᵀ k / √d_k``.

Here a query matrix ``Q`` is ``(n, d_k)`` and a key matrix ``K`` is ``(m, d_k)``; every
function returns the ``(n, m)`` score matrix, rows = queries. :func:`cost` counts what each
costs, :func:`spread` measures how wide its scores are at initialisation.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from book.kit import validate

KINDS = ("additive", "bilinear", "dot")
MAX_WIDTH = 4096


def _matrix(name: str, value, width: int | None = None) -> torch.Tensor:
    """A 2-D float tensor (float64 unless already a float32/float64 tensor)."""
    if isinstance(value, torch.Tensor) and value.dtype in (torch.float32, torch.float64):
        if not bool(torch.isfinite(value).all()):
            raise ValueError(f"{name} holds NaN or inf; pass finite numbers")
        tensor = value
    else:
        tensor = torch.as_tensor(validate.array(name, value), dtype=torch.float64)
    if tensor.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, features), got shape {tuple(tensor.shape)}")
    if width is not None and tensor.shape[0] != width:
        raise ValueError(f"{name} has {tensor.shape[0]} rows but the queries and keys have "
                         f"d_k = {width} features; give {name} {width} rows")
    return tensor


def _queries_keys(q, k) -> tuple[torch.Tensor, torch.Tensor]:
    q, k = _matrix("Q", q), _matrix("K", k)
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"Q has {q.shape[1]} features per row and K has {k.shape[1]}; queries "
                         "and keys must have the same width d_k")
    return q, k.to(q.dtype)


def dot_scores(q, k, scaled: bool = True) -> torch.Tensor:
    """``Q Kᵀ / √d_k`` (``scaled=False``: ``Q Kᵀ``): the Transformer's scores, shape (n, m)."""
    q, k = _queries_keys(q, k)
    validate.boolean("scaled", scaled)
    scores = q @ k.T
    return scores / math.sqrt(q.shape[1]) if scaled else scores


def bilinear_scores(q, k, w) -> torch.Tensor:
    """``Q W Kᵀ`` with a learned ``(d_k, d_k)`` matrix ``W``: one extra projection, then the
    same matrix product as the dot product (W = identity gives the unscaled dot product)."""
    q, k = _queries_keys(q, k)
    w = _matrix("W", w, q.shape[1]).to(q.dtype)
    if w.shape[1] != k.shape[1]:
        raise ValueError(f"W must be (d_k, d_k) = ({q.shape[1]}, {q.shape[1]}), got "
                         f"{tuple(w.shape)}")
    return (q @ w) @ k.T


def additive_scores(q, k, w_q, w_k, v) -> torch.Tensor:
    """``vᵀ tanh(q W_q + k W_k)`` for every (query, key) pair, shape (n, m).

    ``W_q`` and ``W_k`` are ``(d_k, d_a)``, ``v`` has ``d_a`` entries. The pairs do not reduce
    to one matrix product: the ``(n, m, d_a)`` tensor of hidden units is built in full.
    """
    q, k = _queries_keys(q, k)
    w_q = _matrix("W_q", w_q, q.shape[1]).to(q.dtype)
    w_k = _matrix("W_k", w_k, q.shape[1]).to(q.dtype)
    if w_q.shape != w_k.shape:
        raise ValueError(f"W_q {tuple(w_q.shape)} and W_k {tuple(w_k.shape)} must have the same "
                         "shape (d_k, d_a)")
    v = torch.as_tensor(validate.array("v", v, ndim=1) if not isinstance(v, torch.Tensor)
                        else v).to(q.dtype)
    if v.ndim != 1 or v.shape[0] != w_q.shape[1]:
        raise ValueError(f"v must hold d_a = {w_q.shape[1]} numbers (one per hidden unit), got "
                         f"shape {tuple(v.shape)}")
    hidden = torch.tanh((q @ w_q)[:, None, :] + (k @ w_k)[None, :, :])  # (n, m, d_a)
    return hidden @ v


def init_params(d_k: int, d_a: int | None = None, seed: int = 0,
                dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """Weights of the additive and bilinear scores at initialisation: every matrix N(0, 1/fan_in)
    (Xavier-like, so q W has unit-variance entries); ``d_a`` (hidden units) defaults to d_k."""
    d_k = validate.integer("d_k", d_k, low=1, high=MAX_WIDTH)
    d_a = d_k if d_a is None else validate.integer("d_a", d_a, low=1, high=MAX_WIDTH)
    seed = validate.seed(seed)
    gen = torch.Generator().manual_seed(seed)

    def normal(*shape, fan_in):
        return torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype) / fan_in ** 0.5

    return {"W_q": normal(d_k, d_a, fan_in=d_k), "W_k": normal(d_k, d_a, fan_in=d_k),
            "v": normal(d_a, fan_in=d_a), "W": normal(d_k, d_k, fan_in=d_k)}


def scores(kind: str, q, k, params: dict | None = None) -> torch.Tensor:
    """The ``(n, m)`` scores of ``kind`` ("additive", "bilinear" or "dot", the dot product
    scaled by √d_k); ``params`` from :func:`init_params` (default: seeded, d_a = d_k)."""
    validate.choice("kind", kind, KINDS)
    if kind == "dot":
        return dot_scores(q, k)
    q, k = _queries_keys(q, k)
    params = init_params(q.shape[1], dtype=q.dtype) if params is None else params
    if not isinstance(params, dict):
        raise TypeError(f"params must be the dict init_params() returns, got "
                        f"{type(params).__name__}")
    if kind == "bilinear":
        return bilinear_scores(q, k, params["W"])
    return additive_scores(q, k, params["W_q"], params["W_k"], params["v"])


def cost(kind: str, n: int, m: int, d_k: int, d_a: int | None = None) -> dict[str, int]:
    """Multiply-adds and the largest intermediate (numbers held at once) of one score matrix.

    dot: ``n·m·d_k`` multiply-adds, the ``n × m`` scores; bilinear: ``n·d_k²`` more for
    ``Q W``; additive: ``(n + m)·d_k·d_a`` for the projections plus ``n·m·d_a`` tanh units and
    as many multiply-adds with ``v``, and the ``n × m × d_a`` hidden tensor.
    """
    validate.choice("kind", kind, KINDS)
    n, m = (validate.integer(name, x, low=1, high=10**7) for name, x in (("n", n), ("m", m)))
    d_k = validate.integer("d_k", d_k, low=1, high=MAX_WIDTH)
    d_a = d_k if d_a is None else validate.integer("d_a", d_a, low=1, high=MAX_WIDTH)
    if kind == "dot":
        return {"multiply_adds": n * m * d_k, "tanh": 0, "largest_intermediate": n * m}
    if kind == "bilinear":
        return {"multiply_adds": n * d_k * d_k + n * m * d_k, "tanh": 0,
                "largest_intermediate": max(n * m, n * d_k)}
    return {"multiply_adds": (n + m) * d_k * d_a + n * m * d_a, "tanh": n * m * d_a,
            "largest_intermediate": n * m * d_a}


def spread(kind: str, d_k: int, n: int = 32, scaled: bool = False, seed: int = 0) -> float:
    """Standard deviation of the scores of ``n`` random queries against ``n`` random keys
    (entries N(0, 1), as in chapter 2) at initialisation: every weight matrix N(0, 1/fan_in),
    ``d_a = d_k`` hidden units. ``scaled``: divide the dot product by √d_k (the other two kinds
    are used as defined)."""
    validate.choice("kind", kind, KINDS)
    d_k = validate.integer("d_k", d_k, low=1, high=MAX_WIDTH)
    n = validate.integer("n", n, low=2, high=4096)
    validate.boolean("scaled", scaled)
    seed = validate.seed(seed)
    rng = np.random.default_rng([seed, d_k, n])
    q, k = rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k))
    if kind == "dot":
        s = dot_scores(q, k, scaled=scaled)
    elif kind == "bilinear":
        s = bilinear_scores(q, k, rng.standard_normal((d_k, d_k)) / np.sqrt(d_k))
    else:
        w_q, w_k = (rng.standard_normal((d_k, d_k)) / np.sqrt(d_k) for _ in range(2))
        s = additive_scores(q, k, w_q, w_k, rng.standard_normal(d_k) / np.sqrt(d_k))
    return float(s.std())


def spread_sweep(d_ks=(16, 64, 256), n: int = 32, seed: int = 0) -> dict[str, list[float]]:
    """:func:`spread` of every kind at every width: ``{"additive": [...], "bilinear": [...],
    "dot": [...] (unscaled), "dot_scaled": [...]}``, one value per entry of ``d_ks``."""
    d_ks = [validate.integer("d_k", d, low=1, high=MAX_WIDTH)
            for d in validate.listed("d_ks", list(d_ks), "[16, 64, 256]")]
    out = {kind: [spread(kind, d, n, seed=seed) for d in d_ks] for kind in KINDS}
    out["dot_scaled"] = [spread("dot", d, n, scaled=True, seed=seed) for d in d_ks]
    return out
