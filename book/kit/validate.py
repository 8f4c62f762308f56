"""Input checks shared by every public function of ``book``.

Each helper raises ``TypeError`` or ``ValueError`` with a message that names the argument, says
what was wrong *and* what to do instead, so a reader who passes bad input learns the fix.
"""

from __future__ import annotations

import reprlib
from collections import Counter
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import torch

#: the largest seed every generator the book uses (numpy, torch) accepts
MAX_SEED = 2**63 - 1


class NonFiniteError(ValueError):
    """Raised when an input holds NaN or infinity. A ``ValueError``, so callers that catch
    bad input in general still catch it; :func:`book.toy.fit.fit` catches exactly this one to
    detect a diverged run (the attention layer refuses non-finite activations)."""


def integer(name: str, value, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int, or raise if it is not an integer in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        hint = f"; round it first, e.g. {name}={round(value)}" if isinstance(value, Real) \
            and not isinstance(value, bool) and np.isfinite(value) else \
            f"; pass e.g. {name}={low if low is not None else 1}"
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})"
                        f"{hint}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name}={value} is too small: it must be at least {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value} is too large: it must be at most {high}")
    return value


def seed(value, name: str = "seed") -> int:
    """Return ``value`` as a seed: an integer in [0, :data:`MAX_SEED`]."""
    return integer(name, value, low=0, high=MAX_SEED)


def real(name: str, value, *, low: float | None = None, high: float | None = None) -> float:
    """Return ``value`` as a float, or raise if it is not a finite number in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r} ({type(value).__name__}); "
                        f"pass e.g. {name}={low if low is not None else 1.0}")
    value = float(value)
    if not np.isfinite(value):
        raise NonFiniteError(f"{name} must be finite, got {value}; pass an ordinary number")
    if low is not None and value < low:
        raise ValueError(f"{name}={value} is too small: it must be at least {low}")
    if high is not None and value > high:
        raise ValueError(f"{name}={value} is too large: it must be at most {high}")
    return value


def boolean(name: str, value) -> bool:
    """Return ``value`` if it is True or False (numpy booleans too), else raise."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} "
                        f"({type(value).__name__})")
    return bool(value)


def array(name: str, value, *, ndim: int | Sequence[int] | None = None,
          allow_empty: bool = False, allow_neginf: bool = False) -> np.ndarray:
    """Return ``value`` as a finite float64 numpy array with the given number of dimensions.

    ``allow_neginf`` lets -inf through (a masked score); NaN and +inf always raise.
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got the text {value!r}")
    if value is None:
        raise TypeError(f"{name} must be an array of numbers (a list, numpy array or tensor), "
                        "got None (did a function you called return None?)")
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.is_complex():
            raise TypeError(f"{name} must hold real numbers, got dtype {value.dtype}")
        value = value.double().numpy()
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
    bad = np.isnan(out) | np.isposinf(out) if allow_neginf else ~np.isfinite(out)
    if bad.any():
        _no_none(name, value)
        what = "NaN or +infinity" if allow_neginf else "NaN or infinity"
        raise NonFiniteError(f"{name} contains {what}; attention needs finite inputs "
                             "(use a boolean mask to hide positions instead of -inf entries)")
    return out


def _no_none(name: str, value) -> None:
    """Raise a TypeError if the nested list ``value`` holds None (numpy reads None as NaN)."""
    if isinstance(value, np.ndarray) and value.dtype != object:
        return
    try:
        items = np.asarray(value, dtype=object)
    except (TypeError, ValueError):
        return
    if items.ndim == 0:
        return
    where = np.argwhere(np.equal(items, None))
    if len(where):
        index = ", ".join(str(int(i)) for i in where[0])
        raise TypeError(f"{name} must hold numbers only, got None at [{index}]; fill it in "
                        "(or use a boolean mask for positions to leave out)")


def labels(name: str, value, *, hint: str = "number repeats, e.g. 'the·2'") -> list:
    """``value`` as a non-empty list of unique labels (axis ticks, menu entries: plotly merges
    equal categories), or raise naming ``name``; ``hint`` says how to make repeats distinct."""
    value = listed(name, value, "['the', 'cat', 'sat']", allow_empty=False)
    try:
        repeated = sorted(str(v) for v, n in Counter(value).items() if n > 1)
    except TypeError:   # an unhashable label, e.g. a list
        raise TypeError(f"{name} must hold labels (str or numbers), got "
                        f"{reprlib.repr(value)}") from None
    if repeated:
        raise ValueError(f"{name} must be unique (plotly merges equal categories), but "
                         f"{repeated} occur more than once; {hint}")
    return value


def distinct(name: str, value, *, at_least: int = 2, example: str = "[64, 128, 256]"):
    """``value`` (a 1-D numpy array) if it holds at least ``at_least`` distinct values, else a
    ``ValueError`` naming ``name`` (a slope, a fit, needs different points)."""
    found = np.unique(value)
    if found.size < at_least:
        shown = ", ".join(f"{v:g}" for v in found)
        raise ValueError(f"{name} needs at least {at_least} distinct values, got only {shown} "
                         f"({len(value)} entries); measure at different values, e.g. {example}")
    return value


def normalisable(var, eps: float, *, what: str = "row") -> None:
    """Raise if ``eps`` is 0 where a variance in ``var`` is 0: normalising, (x − mean) /
    sqrt(var + eps), is 0/0 = NaN there (a constant or all-zero ``what``). ``var``: numpy,
    torch or nested lists, its axes of size 1 ignored when naming the place."""
    if eps > 0:
        return
    if isinstance(var, torch.Tensor):
        var = var.detach().cpu().double().numpy()
    v = np.asarray(var, dtype=float)
    zero = np.argwhere(v == 0)
    if len(zero):
        axes = [a for a in range(v.ndim) if v.shape[a] != 1]
        place = ", ".join(str(int(zero[0][a])) for a in axes) or "0"
        raise ValueError(f"eps=0 and {len(zero)} {what}(s) have zero variance (the first: "
                         f"{what} {place}, constant or all zeros): normalising divides 0 by 0 "
                         "there, which is NaN. Pass eps > 0, e.g. eps=1e-5 (PyTorch's "
                         "LayerNorm default)")


def listed(name: str, value, example: str, *, allow_empty: bool = True) -> list:
    """``value`` as a list, or a ``TypeError`` if it is text or not iterable (``example``
    shows what to pass, e.g. ``"[1, 8, 64]"``)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a list such as {example}, got {value!r}")
    value = list(value)
    if not allow_empty and not value:
        raise ValueError(f"{name} is empty; pass at least one, e.g. {example}")
    return value


def integers(name: str, value, example: str, *, low: int | None = None,
             high: int | None = None) -> list[int]:
    """``value`` as a list of ints in [low, high] (:func:`listed`, then :func:`integer` for
    each item, named ``name[i]``)."""
    return [integer(f"{name}[{i}]", v, low=low, high=high)
            for i, v in enumerate(listed(name, value, example))]


def text(name: str, value) -> str:
    """Return ``value`` if it is a str with at least one non-space character, else raise."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str (a sentence such as 'the cat sat on the mat'), "
                        f"got {reprlib.repr(value)} ({type(value).__name__})")
    if not value.strip():
        raise ValueError(f"{name} is empty; pass a sentence, e.g. 'the cat sat on the mat'")
    return value


def texts(name: str, value, *, one_ok: bool = False) -> list[str]:
    """``value`` as a non-empty list of sentences (each checked by :func:`text` as
    ``name[i]``); with ``one_ok`` a lone str is a list of one."""
    if one_ok and isinstance(value, str):
        value = [value]
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)) or not value:
        what = "a str or a non-empty list of str" if one_ok else "a non-empty list of str"
        raise TypeError(f"{name} must be {what}, such as ['the cat sat on the mat'], got "
                        f"{reprlib.repr(value)}")
    return [text(f"{name}[{i}]", v) for i, v in enumerate(value)]


def head_pairs(name: str, value, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``value`` as a list of (layer, head) pairs of a model with ``n_layers`` layers of
    ``n_heads`` heads (both counted from 0), or raise naming the pair that is not one."""
    out = []
    for i, pair in enumerate(listed(name, value, "[(0, 3), (5, 11)]")):
        if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise TypeError(f"{name}[{i}] must be a (layer, head) pair such as (0, 3), got "
                            f"{reprlib.repr(pair)}")
        layer, head = (integer(f"{name}[{i}][{j}]", v) for j, v in enumerate(pair))
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"{name}[{i}]=({layer}, {head}) is not a head of this model: the "
                             f"layer must be in 0..{n_layers - 1} and the head in "
                             f"0..{n_heads - 1}")
        out.append((layer, head))
    return out


def choice(name: str, value, options: Sequence):
    """Return ``value`` if it is one of ``options``, else raise listing them."""
    try:
        known = value in options
    except TypeError:   # an unhashable value looked up in a dict
        known = False
    if not known:
        raise ValueError(f"{name}={value!r} is not one of {list(options)}; pick one of them")
    return value


def divisors(n: int) -> list[int]:
    """The positive divisors of ``n``, e.g. ``divisors(10) == [1, 2, 5, 10]``."""
    return [d for d in range(1, n + 1) if n % d == 0]


def head_split(d_model, n_heads) -> int:
    """``d_k = d_model // n_heads``, or raise naming the head counts that divide ``d_model``."""
    d_model = integer("d_model", d_model, low=1)
    n_heads = integer("n_heads", n_heads, low=1)
    if d_model % n_heads:
        choices = ", ".join(map(str, divisors(d_model)))
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}; "
                         f"pick n_heads in {{{choices}}}")
    return d_model // n_heads


def float_tensor(name: str, value, *, min_ndim: int = 1, ndim: int | None = None,
                 shape_hint: str = "(..., n, d)", finite: bool = True) -> torch.Tensor:
    """Return ``value`` if it is a non-empty, floating-point torch tensor (and, with
    ``finite``, free of NaN and infinity)."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor of shape {shape_hint}, got "
                        f"{type(value).__name__}; convert it with torch.as_tensor({name}, "
                        "dtype=torch.float32)")
    if not value.is_floating_point():
        raise TypeError(f"{name} has dtype {value.dtype}; attention needs floating-point "
                        f"numbers: convert it with {name}.float()")
    if ndim is not None and value.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {shape_hint}, got shape {tuple(value.shape)}")
    if value.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions {shape_hint}, got "
                         f"shape {tuple(value.shape)}")
    if value.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(value.shape)}); pass at least one "
                         "token")
    if finite and not bool(torch.isfinite(value).all()):
        raise NonFiniteError(f"{name} contains NaN or infinity; attention needs finite inputs "
                             "(hide positions with a boolean mask, not with -inf entries)")
    return value


def path(name: str, value):
    """``value`` as a :class:`pathlib.Path`, or a ``TypeError`` if it is not a path or str."""
    if not isinstance(value, (str, Path)) or not str(value):
        raise TypeError(f"{name} must be a file path (a str or pathlib.Path) such as "
                        f"'model.pt', got {value!r}")
    return Path(value)


def token_ids(name: str, value, vocab_size: int, *, ndim: int = 1,
              max_len: int | None = None) -> torch.Tensor:
    """Return ``value`` as an int64 tensor of token ids in [0, vocab_size), ``ndim``-D.

    Lists, numpy arrays and tensors are accepted; floats and booleans are refused (never
    silently truncated), and so are ids outside the vocabulary and sequences longer than
    ``max_len``.
    """
    want = "(n,)" if ndim == 1 else "(batch, n)"
    if isinstance(value, torch.Tensor):
        t = value.detach()
    else:
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{name} must be token ids {want}, got the text {value!r}")
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must be token ids {want}; could not convert "
                            f"{type(value).__name__}: {err}") from None
        if arr.dtype == object:
            raise TypeError(f"{name} must be a rectangular sequence of integer token ids "
                            f"{want}, got {type(value).__name__}")
        if arr.size == 0:   # np.asarray([]) is float64: report emptiness, not the dtype
            arr = arr.astype(np.int64)
        t = torch.from_numpy(np.array(arr))   # np.array keeps a 0-d input 0-d
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must hold integer token ids (torch.long = int64), got dtype "
                        f"{t.dtype}; ids are never rounded silently: convert them yourself, e.g. "
                        f"torch.as_tensor({name}).round().long()")
    if t.ndim != ndim or t.numel() == 0:
        hint = " (add a batch axis with ids[None])" if ndim == 2 and t.ndim == 1 else ""
        raise ValueError(f"{name} must be a non-empty {ndim}-D sequence of token ids {want}, "
                         f"got shape {tuple(t.shape)}{hint}")
    t = t.to(torch.long)
    low, high = int(t.min()), int(t.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise ValueError(f"{name} must lie in [0, {vocab_size - 1}] (the vocabulary), got the "
                         f"id {bad}; encode tokens with the model's vocabulary")
    if max_len is not None and t.shape[-1] > max_len:
        raise ValueError(f"{name} has {t.shape[-1]} tokens, more than max_len={max_len}; "
                         "shorten it or build the model with a larger max_len")
    return t
