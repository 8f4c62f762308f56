"""Scaled dot-product attention, written once in numpy (for reading) and used everywhere.

Conventions used throughout the book:

* rows are queries, columns are keys: ``weights[i, j]`` is how much token *i* attends to *j*;
* a boolean ``mask`` has ``True`` where a query **may** attend to a key (the convention of
  ``torch.nn.functional.scaled_dot_product_attention``).
"""

from __future__ import annotations

import numpy as np

from book.kit import validate

#: how the scores q·k are divided: not at all, by √d_k (the Transformer's choice), by d_k
SCALES = ("none", "sqrt", "linear")


def scale_divisor(d_k: int, scale: str = "sqrt") -> float:
    """What ``scale`` divides the scores by: 1, √d_k or d_k (one of :data:`SCALES`)."""
    d_k = validate.integer("d_k", d_k, low=1)
    validate.choice("scale", scale, SCALES)
    return {"none": 1.0, "sqrt": float(np.sqrt(d_k)), "linear": float(d_k)}[scale]


def softmax(scores, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax of ``scores`` along ``axis`` (subtracts the max first).

    ``-inf`` entries (masked keys) get weight exactly 0; a row with no finite entry has no
    softmax (0/0) and raises, as do NaN and +inf.
    """
    x = validate.array("scores", scores, allow_neginf=True)
    axis = validate.integer("axis", axis, low=-x.ndim, high=x.ndim - 1)
    top = x.max(axis=axis, keepdims=True)
    if np.isneginf(top).any():
        raise ValueError("a row of scores is all -inf (every key masked): its softmax would be "
                         "0/0 = NaN; allow at least one key per query (e.g. the token itself)")
    e = np.exp(x - top)
    return e / e.sum(axis=axis, keepdims=True)


def entropy(weights, axis: int = -1) -> np.ndarray:
    """Shannon entropy (in nats) of each probability row; 0 for one-hot, ln(n) for uniform."""
    p = validate.array("weights", weights)
    axis = validate.integer("axis", axis, low=-p.ndim, high=p.ndim - 1)
    if np.any(p < 0):
        raise ValueError("weights must be probabilities (non-negative); pass softmax output")
    totals = p.sum(axis=axis)
    if not np.allclose(totals, 1.0, atol=1e-6):
        raise ValueError(f"weights must be probabilities whose rows sum to 1, got row sums "
                         f"such as {float(np.ravel(totals)[0]):g}; pass softmax output or "
                         "weights / weights.sum(axis, keepdims=True)")
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
    validate.choice("scale", scale, SCALES)
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"q has d_k={q.shape[1]} but k has d_k={k.shape[1]}; queries and keys "
                         "must have the same width to be compared by a dot product")
    if k.shape[0] != v.shape[0]:
        raise ValueError(f"k has {k.shape[0]} rows but v has {v.shape[0]}; every key needs "
                         "exactly one value")
    scores = q @ k.T / scale_divisor(q.shape[1], scale)
    if mask is not None:
        if isinstance(mask, (list, tuple)):
            mask = np.asarray(mask)
        if hasattr(mask, "numpy") and not isinstance(mask, np.ndarray):   # a torch tensor
            mask = mask.detach().cpu().numpy()
        if not isinstance(mask, np.ndarray) or mask.dtype != bool:
            raise TypeError(f"mask must be boolean (True = may attend), got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}; convert it with "
                            "mask.astype(bool)")
        if mask.shape != scores.shape:
            raise ValueError(f"mask has shape {mask.shape} but the scores are {scores.shape} "
                             "(queries × keys)")
        if not mask.any(axis=-1).all():
            raise ValueError("a query row of the mask is all False: that token may attend to "
                             "nothing; allow at least one key per query (e.g. itself)")
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)
    return weights @ v, weights
