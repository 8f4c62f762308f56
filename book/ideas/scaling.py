"""Chapter 2's experiments: why the dot products are divided by √d_k.

Every function draws queries and keys with independent unit-variance entries (the setting
of the Transformer paper's argument) from a seeded generator, so results repeat exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from book.ideas.attention import SCALES, entropy, scale_divisor, softmax
from book.kit import validate

SCALE_NAMES = {"none": "unscaled (q·k)", "sqrt": "÷ √d_k", "linear": "÷ d_k"}
D_K_STEPS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
MAX_D_K = 4096


def dot_products(d_k: int, n: int = 4000, seed: int = 0) -> np.ndarray:
    """``n`` dot products q·k of random q, k in R^d_k with N(0, 1) entries (unscaled)."""
    d_k = validate.integer("d_k", d_k, low=1, high=MAX_D_K)
    n = validate.integer("n", n, low=2, high=1_000_000)
    seed = validate.integer("seed", seed, low=0, high=2**40)
    gen = torch.Generator().manual_seed(seed * 100_003 + d_k)  # torch's sampler is the fastest here
    q = torch.randn(n, d_k, generator=gen)
    k = torch.randn(n, d_k, generator=gen)
    return (q * k).sum(dim=1).double().numpy()


def score_rows(d_k: int, n_keys: int = 16, n_rows: int = 400, seed: int = 0) -> np.ndarray:
    """Unscaled score rows: ``n_rows`` queries each compared with ``n_keys`` keys."""
    d_k = validate.integer("d_k", d_k, low=1, high=MAX_D_K)
    n_keys = validate.integer("n_keys", n_keys, low=1, high=4096)
    n_rows = validate.integer("n_rows", n_rows, low=1, high=100_000)
    seed = validate.seed(seed)
    rng = np.random.default_rng([seed, d_k, n_keys])
    q = rng.standard_normal((n_rows, 1, d_k))
    k = rng.standard_normal((n_rows, n_keys, d_k))
    return np.einsum("rid,rkd->rk", q, k)


def saturation(d_k: int, scale: str = "sqrt", n_keys: int = 16, n_rows: int = 400,
               seed: int = 0) -> dict[str, float]:
    """Mean largest weight and mean entropy (nats) of softmax rows at this d_k and scaling."""
    weights = softmax(score_rows(d_k, n_keys, n_rows, seed) / scale_divisor(d_k, scale))
    return {"max_weight": float(weights.max(axis=-1).mean()),
            "entropy": float(entropy(weights).mean()),
            "uniform_entropy": float(np.log(n_keys))}


def softmax_jacobian_norm(d_k: int, scale: str = "sqrt", n_keys: int = 16, n_rows: int = 200,
                          seed: int = 0) -> float:
    """Mean Frobenius norm of ∂softmax(z)/∂z over score rows, measured with torch autograd.

    When softmax saturates (one weight near 1) this Jacobian goes to zero: whatever the loss,
    almost no gradient flows back into the scores, so W_Q and W_K barely learn.
    """
    rows = score_rows(d_k, n_keys, n_rows, seed) / scale_divisor(d_k, scale)
    z = torch.tensor(rows, dtype=torch.float64)
    jac = torch.func.vmap(torch.func.jacrev(lambda r: torch.softmax(r, dim=-1)))(z)
    return float(jac.flatten(1).norm(dim=1).mean())


def sweep(d_ks=None, n_keys: int = 16, n_rows: int = 400, seed: int = 0) -> dict:
    """Measured variance, max weight, entropy and Jacobian norm over ``d_ks`` for each scaling."""
    d_ks = D_K_STEPS if d_ks is None else validate.listed("d_ks", d_ks, "[1, 8, 64, 512]")
    d_ks = [validate.integer("d_k", d, low=1, high=MAX_D_K) for d in d_ks]
    n_rows = validate.integer("n_rows", n_rows, low=2, high=100_000)
    if not d_ks:
        raise ValueError("d_ks is empty; pass a list such as [1, 8, 64, 512]")
    out: dict = {"d_k": d_ks, "variance": [], "max_weight": {}, "entropy": {}, "jacobian": {}}
    for d_k in d_ks:
        out["variance"].append(float(dot_products(d_k, seed=seed).var()))
    for scale in SCALES:
        sats = [saturation(d, scale, n_keys, n_rows, seed) for d in d_ks]
        out["max_weight"][scale] = [s["max_weight"] for s in sats]
        out["entropy"][scale] = [s["entropy"] for s in sats]
        out["jacobian"][scale] = [softmax_jacobian_norm(d, scale, n_keys, n_rows // 2, seed)
                                  for d in d_ks]
    out["uniform_entropy"] = float(np.log(n_keys))
    return out


def histogram(values: np.ndarray, lo: float, hi: float, bins: int = 41):
    """Bin centres and densities of ``values`` on [lo, hi] (values outside are clipped in)."""
    values = validate.array("values", values, ndim=1)
    lo, hi = validate.real("lo", lo), validate.real("hi", hi)
    if not hi > lo:
        raise ValueError(f"need hi > lo, got lo={lo}, hi={hi}; pick hi above lo")
    bins = validate.integer("bins", bins, low=1, high=10_000)
    counts, edges = np.histogram(np.clip(values, lo, hi), bins=bins, range=(lo, hi),
                                 density=True)
    return (edges[:-1] + edges[1:]) / 2, counts


def raw_range(d_k: int) -> float:
    """A symmetric x-range that holds ±4 standard deviations of unscaled q·k (std = √d_k)."""
    return 4.0 * float(np.sqrt(validate.integer("d_k", d_k, low=1, high=MAX_D_K)))


# --- used by the explorers of the chapter modules ----------------------------------------



def dk_data(d_k: int, n: int = 4000, bins: int = 41, seed: int = 0) -> dict:
    """Histograms of raw and scaled q·k at this d_k, with their measured variances."""
    raw = dot_products(d_k, n, seed)
    scaled = raw / np.sqrt(d_k)
    r = raw_range(d_k)
    raw_x, raw_y = histogram(raw, -r, r, bins)
    sc_x, sc_y = histogram(scaled, -4.0, 4.0, bins)
    return {"raw_x": raw_x, "raw_y": raw_y, "scaled_x": sc_x, "scaled_y": sc_y,
            "raw_var": float(raw.var()), "scaled_var": float(scaled.var()), "range": r}


def softmax_row_data(d_k: int, n_keys: int = 16, seed: int = 3) -> dict:
    """One query's weights over ``n_keys`` random keys, unscaled and ÷√d_k."""
    row = score_rows(d_k, n_keys, 1, seed)[0]
    return {"none": softmax(row), "sqrt": softmax(row / np.sqrt(d_k))}
