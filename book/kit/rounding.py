"""Two computations of the same mathematics agree only up to rounding: by how much, in words.

A fused kernel and the textbook formula, grouped-query attention with as many key/value heads as
query heads and plain multi-head attention, a sentence and its permutation: the same maths, but
the additions happen in another order, and a BLAS library may round them differently on another
processor. :func:`tolerance` says how far apart rounding alone may put them; :func:`agreement`
words a measured gap for the prose (both editions), so the page states what the reader's own
machine measured — "bit for bit" only when the gap is exactly 0.0.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from book.kit import i18n

# Units in the last place per sqrt(reduction length): a few roundings per step, for a chain of a
# few steps (projection, scores, softmax, weighted sum, output projection). Measured: the
# float32 GQA and RoPE encoders (d_model 64) differ by up to 9.5e-7 on an AVX-512 CPU;
# 8 * 1.2e-7 * sqrt(64) allows 7.6e-6.
ULPS = 8


def eps(dtype) -> float:
    """The dtype's unit in the last place at 1.0 (float32: 1.2e-7, float64: 2.2e-16)."""
    if isinstance(dtype, torch.dtype):
        return torch.finfo(dtype).eps
    return float(np.finfo(np.dtype(dtype)).eps)


def tolerance(dtype, reduction: int, *, ulps: int = ULPS, scale: float = 1.0) -> float:
    """How far two computations of the same mathematics may differ through rounding alone.

    ``ulps * eps(dtype) * sqrt(reduction) * scale``: rounding errors of a sum of ``reduction``
    terms behave like a random walk, so they grow like its square root (the worst case grows
    linearly, but needs every rounding to go the same way); ``ulps`` (default 8) covers the few
    rounded steps of an attention layer; ``scale`` is the size of the terms summed (1 for
    unit-variance activations and the usual initialisations). ``reduction`` is the longest sum
    of the computation (``d_model`` for a projection, the number of keys for the weighted sum,
    ``d_model * n_layers`` for a stack of layers).
    """
    if isinstance(reduction, bool) or not isinstance(reduction, int) or reduction < 1:
        raise ValueError(f"reduction={reduction!r} must be a whole number ≥ 1: the number of "
                         "terms in the longest sum of the computation")
    if not scale > 0:
        raise ValueError(f"scale={scale!r} must be > 0: the size of the terms summed")
    return ulps * eps(dtype) * math.sqrt(reduction) * scale


def agreement(gap: float) -> str:
    """``gap`` (a measured max |difference|) in words: bit for bit at 0.0, else up to rounding."""
    gap = float(gap)
    if not math.isfinite(gap) or gap < 0:
        raise ValueError(f"gap={gap!r} must be a measured max |difference|: finite and ≥ 0")
    return i18n.tr("common.agree_exact") if gap == 0 else i18n.tr("common.agree_rounding",
                                                                   gap=gap)
