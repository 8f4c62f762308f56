"""Input checks shared by every public function of ``book``.

Each helper raises ``TypeError`` or ``ValueError`` with a message that says what was
wrong *and* what to do instead, so a reader who passes bad input learns the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np


def integer(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int, or raise if it is not an integer in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__}); "
                        f"pass e.g. {name}={low if low is not None else 1}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name}={value} is too small: it must be at least {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value} is too large: it must be at most {high}")
    return value


def real(name: str, value, *, low: float | None = None, high: float | None = None) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if low is not None and value < low:
        raise ValueError(f"{name}={value} is too small: it must be at least {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value} is too large: it must be at most {high}")
    return value


def array(name: str, value, *, ndim: int | Sequence[int] | None = None,
          allow_empty: bool = False) -> np.ndarray:
    """Return ``value`` as a finite float64 numpy array with the given number of dimensions."""
    try:
        out = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be an array of numbers (a list, numpy array or tensor); "
                        f"could not convert {type(value).__name__}: {err}") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if out.ndim not in allowed:
            want = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(f"{name} must be {want}, got shape {out.shape}; "
                             "reshape it (e.g. x[None, :] for a single row)")
    if not allow_empty and out.size == 0:
        raise ValueError(f"{name} is empty (shape {out.shape}); pass at least one token")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} contains NaN or infinity; attention needs finite inputs "
                         "(use a boolean mask to hide positions instead of -inf entries)")
    return out


def choice(name: str, value, options: Sequence):
    """Return ``value`` if it is one of ``options``, else raise listing them."""
    if value not in options:
        raise ValueError(f"{name}={value!r} is not one of {list(options)}")
    return value
