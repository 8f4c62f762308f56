"""Scaled dot-product attention, written once in numpy (for reading) and used everywhere.

Conventions used throughout the book:

* rows are queries, columns are keys: ``weights[i, j]`` is how much token *i* attends to *j*;
* a boolean ``mask`` has ``True`` where a query **may** attend to a key (the convention of
  ``torch.nn.functional.scaled_dot_product_attention``).
"""

from __future__ import annotations

import numpy as np

from . import validate


def softmax(scores, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax of ``scores`` along ``axis`` (subtracts the max first)."""
    x = validate.array("scores", scores)
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def entropy(weights, axis: int = -1) -> np.ndarray:
    """Shannon entropy (in nats) of each probability row; 0 for one-hot, ln(n) for uniform."""
    p = validate.array("weights", weights)
    if np.any(p < 0):
        raise ValueError("weights must be probabilities (non-negative); pass softmax output")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=axis)


def scaled_dot_product_attention(q, k, v, mask=None, *, scale: str = "sqrt"):
    """Attention of queries ``q`` (n_q × d_k) over keys ``k`` (n_k × d_k) and values ``v``.

    ``scale`` is ``"sqrt"`` (divide by √d_k, the Transformer's choice), ``"none"`` or
    ``"linear"`` (divide by d_k) so that chapters can compare the three.
    Returns ``(output, weights)`` with ``output`` of shape n_q × d_v and ``weights`` n_q × n_k.
    """
    q = validate.array("q", q, ndim=2)
    k = validate.array("k", k, ndim=2)
    v = validate.array("v", v, ndim=2)
    validate.choice("scale", scale, ("sqrt", "none", "linear"))
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"q has d_k={q.shape[1]} but k has d_k={k.shape[1]}; queries and keys "
                         "must have the same width to be compared by a dot product")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"k has {k.shape[0]} rows but v has {v.shape[0]}; every key needs "
                         "exactly one value")
    scores = q @ k.T
    d_k = q.shape[1]
    scores = scores / {"sqrt": np.sqrt(d_k), "none": 1.0, "linear": float(d_k)}[scale]
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool:
            raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}; "
                            "convert it with mask.astype(bool)")
        if mask.shape != scores.shape:
            raise ValueError(f"mask has shape {mask.shape} but the scores are {scores.shape} "
                             "(queries × keys)")
        if not mask.any(axis=-1).all():
            raise ValueError("a query row of the mask is all False: that token may attend to "
                             "nothing; allow at least one key per query (e.g. itself)")
        scores = np.where(mask, scores, -np.inf)
    weights = softmax_rows(scores)
    return weights @ v, weights


def softmax_rows(scores: np.ndarray) -> np.ndarray:
    """Row softmax that tolerates -inf entries (masked keys); every row needs one finite entry."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)
