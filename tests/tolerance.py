"""Comparing two results: exactly, or up to rounding — chosen on purpose at every call site.

Two kinds of comparison, and nothing in between:

* :func:`assert_same_run` — **determinism**: the same code on the same inputs, run twice (or
  integers, booleans, masks, token ids, which have no rounding). The results must be equal bit
  for bit; any difference is a bug (hidden state, an unseeded random draw, a cache that leaks).

* :func:`assert_same_maths` — **two computations of the same mathematics** (a loop and a batched
  version, a fused kernel and the textbook formula, GQA with as many key/value heads as query
  heads and plain multi-head attention). They differ in the order of their additions, so a BLAS
  library or another processor may round them differently: they agree only *up to rounding*.
  The tolerance is derived, not guessed: :func:`rounding_tolerance`
  (``book.kit.rounding.tolerance``, which the book's own verdicts use too): a few ulps of the
  dtype times the square root of the reduction length.

Every call site passes ``why=``, a one-line reason, so the next test chooses on purpose.
"""

from __future__ import annotations

import numpy as np
import torch

from book.kit.rounding import ULPS, eps
from book.kit.rounding import tolerance as rounding_tolerance

__all__ = ["ULPS", "assert_same_maths", "assert_same_run", "rounding_tolerance"]


def _as_tensor(x):
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))


def assert_same_run(actual, expected, *, why: str) -> None:
    """Determinism (or integers/booleans): ``actual`` equals ``expected`` bit for bit."""
    if not why:
        raise ValueError("say why= the two must be equal bit for bit")
    a, b = _as_tensor(actual), _as_tensor(expected)
    assert a.shape == b.shape and a.dtype == b.dtype, (
        f"{why}: shape/dtype {tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}")
    if torch.equal(a, b):
        return
    where = a != b
    if a.is_floating_point():
        where = where & ~(torch.isnan(a) & torch.isnan(b))
        if not bool(where.any()):
            return  # NaN in the same places: equal for a determinism check
    gap = ""
    if a.is_floating_point() or a.is_complex():
        gap = f", max |difference| {float((a - b)[where].abs().max()):.3g}"
    raise AssertionError(f"{why}: not bit-identical ({int(where.sum())} of {a.numel()} elements "
                         f"differ{gap})")


def assert_same_maths(actual, expected, *, reduction: int, why: str, ulps: int = ULPS,
                      scale: float = 1.0, msg: str | None = None) -> None:
    """Two computations of the same mathematics agree up to :func:`rounding_tolerance`.

    The tolerance serves both as ``atol`` (values near zero, where terms of size ``scale``
    cancelled) and as ``rtol`` (large values). The dtype is the less precise of the two.
    """
    if not why:
        raise ValueError("say why= the two are the same mathematics computed differently")
    a, b = _as_tensor(actual), _as_tensor(expected)
    dtype = a.dtype if eps(a.dtype) >= eps(b.dtype) else b.dtype
    tol = rounding_tolerance(dtype, reduction, ulps=ulps, scale=scale)
    torch.testing.assert_close(a, b, rtol=tol, atol=tol, check_dtype=False,
                               msg=lambda m: f"{why} ({msg + ', ' if msg else ''}rounding "
                                             f"tolerance {tol:.2g}): {m}")
