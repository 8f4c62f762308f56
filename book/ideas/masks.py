"""Boolean attention masks, in the book's convention, and converters to the other conventions.

**The book's convention** (the one of ``torch.nn.functional.scaled_dot_product_attention``):
a boolean mask is ``True`` where a query **may** attend to a key. Rows are queries, columns are
keys. A padding mask of shape (batch, n) is ``True`` for a real token and ``False`` for padding.

Libraries disagree, which is the source of a classic silent bug (a mask applied the wrong way
round trains a model that learns nothing). The converters below make each translation explicit:

================================  ==========================  ===============================
where                             what ``True`` / a value means  converter
================================  ==========================  ===============================
this book, ``F.sdpa``             True = may attend           (none needed)
``nn.MultiheadAttention``         True = NOT allowed          :func:`to_torch_attn_mask`
``attn_mask`` (bool)
``nn.MultiheadAttention``         True = padding, ignore it   :func:`to_torch_key_padding_mask`
``key_padding_mask`` (bool)
additive float mask               0 = allowed, -inf = blocked  :func:`to_additive`
================================  ==========================  ===============================

Everything returns ``torch.bool`` tensors; inputs may be torch tensors, numpy arrays or nested
lists of booleans.
"""

from __future__ import annotations

import numpy as np
import torch

from book.kit import validate

CONVENTION = "this book's convention is True = the query may attend to the key"

# An additive mask entry at or below this counts as "blocked" (some libraries use a large
# negative number such as torch.finfo(dtype).min instead of -inf).
_BLOCKED_BELOW = -1e4


def _dims(ndim) -> tuple[int, ...]:
    return (ndim,) if isinstance(ndim, int) else tuple(ndim)


def as_mask(mask, *, name: str = "mask", ndim: int | tuple[int, ...] = (2, 3, 4)) -> torch.Tensor:
    """Return ``mask`` as a ``torch.bool`` tensor, or raise a message that says how to fix it.

    Accepts a torch tensor, a numpy array or a nested list of booleans. A non-boolean mask is
    refused (never silently cast): 0/1 integers could mean either convention, and casting an
    additive 0/-inf mask with ``.bool()`` would turn it inside out.
    """
    if isinstance(mask, torch.Tensor):
        tensor = mask
    elif isinstance(mask, np.ndarray):
        tensor = torch.from_numpy(np.array(mask))   # np.array keeps a 0-d array 0-d
    elif isinstance(mask, (list, tuple)):
        try:
            tensor = torch.as_tensor(mask)
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"{name} must be a boolean tensor or array; could not convert the "
                            f"{type(mask).__name__}: {err}") from None
    else:
        raise TypeError(f"{name} must be a boolean torch tensor (or numpy array), got "
                        f"{type(mask).__name__}; {CONVENTION}")
    if tensor.dtype != torch.bool:
        raise TypeError(_not_boolean_message(name, tensor))
    allowed = _dims(ndim)
    if tensor.ndim not in allowed:
        want = " or ".join(f"{d}-D" for d in allowed)
        raise ValueError(f"{name} must be {want}, got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(tensor.shape)}); a mask needs at least "
                         "one query and one key")
    return tensor


def _not_boolean_message(name: str, tensor: torch.Tensor) -> str:
    head = f"{name} must be boolean, got dtype {tensor.dtype}"
    if tensor.is_floating_point() and bool(torch.isneginf(tensor).any()):
        return (f"{head}. It contains -inf, so it looks like an additive mask (0 = allowed, "
                "-inf = blocked): convert it with book.ideas.masks.from_additive(mask), NOT "
                ".bool() "
                f"(which would turn it inside out); {CONVENTION}")
    return (f"{head}; call .bool() on it (numpy: .astype(bool)) if its 1s mark the pairs that "
            f"may attend — {CONVENTION}. If its 1s/True mark BLOCKED pairs (the "
            "nn.MultiheadAttention convention), use book.ideas.masks.from_torch_attn_mask instead")


def causal_mask(n: int, *, device=None) -> torch.Tensor:
    """(n, n) mask that lets query *i* attend to keys 0…i (no peeking at later tokens)."""
    n = validate.integer("n", n, low=1)
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def _lengths(lengths) -> torch.Tensor:
    if isinstance(lengths, torch.Tensor):
        values = lengths.detach().cpu()
    else:
        try:
            values = torch.as_tensor(np.asarray(lengths))
        except (TypeError, ValueError, RuntimeError) as err:
            raise TypeError(f"lengths must be a sequence of integers (one per sequence in the "
                            f"batch), could not convert {type(lengths).__name__}: {err}") from None
    if values.ndim != 1 or values.numel() == 0:
        raise ValueError(f"lengths must be a 1-D list with one length per sequence, got shape "
                         f"{tuple(values.shape)}; pass e.g. lengths=[4, 2]")
    if values.dtype == torch.bool or values.is_floating_point() or values.is_complex():
        raise TypeError(f"lengths must hold integers (token counts), got dtype {values.dtype}; "
                        "pass e.g. lengths=[4, 2]")
    return values.to(torch.int64)


def padding_mask(lengths, n: int | None = None, *, side: str = "right",
                 device=None) -> torch.Tensor:
    """(batch, n) key mask: ``True`` for the ``lengths[b]`` real tokens, ``False`` for padding.

    ``side="right"`` (default) puts the real tokens first and the padding after them;
    ``side="left"`` pads at the start (common for generation). ``n`` defaults to ``max(lengths)``.
    Every length must be between 1 and ``n``: a sequence with no real token would leave every
    query with nothing to attend to.
    """
    values = _lengths(lengths)
    validate.choice("side", side, ("right", "left"))
    longest = int(values.max())
    n = longest if n is None else validate.integer("n", n, low=1)
    if int(values.min()) < 1:
        raise ValueError(f"lengths must all be at least 1, got {values.tolist()}: a sequence with "
                         "no real token gives its queries nothing to attend to (softmax of an "
                         "all -inf row is NaN); drop empty sequences from the batch")
    if longest > n:
        raise ValueError(f"a length ({longest}) is larger than n={n}; n is the padded sequence "
                         f"length and must be at least max(lengths) = {longest}")
    positions = torch.arange(n, device=device)
    lengths_col = values.to(positions.device)[:, None]
    if side == "right":
        return positions[None, :] < lengths_col
    return positions[None, :] >= n - lengths_col


def _to_4d(mask: torch.Tensor) -> torch.Tensor:
    """(q, k) → (1, 1, q, k); (batch, q, k) → (batch, 1, q, k); 4-D stays as it is."""
    while mask.ndim < 4:
        mask = mask.unsqueeze(0) if mask.ndim == 2 else mask.unsqueeze(1)
    return mask


def combine(mask=None, padding_mask=None, *, n_heads: int | None = None) -> torch.Tensor:
    """One (batch, 1 or n_heads, n_q, n_k) mask allowing what ``mask`` AND ``padding_mask`` allow.

    ``mask``: (n_q, n_k), (batch, n_q, n_k) or (batch, 1 or heads, n_q, n_k), e.g.
    :func:`causal_mask`. ``padding_mask``: (batch, n_k), ``True`` = real token (see
    :func:`padding_mask`); given alone, it is read as self-attention (n_q = n_k). Batch and
    head axes of size 1 broadcast. With ``n_heads`` the head
    axis is expanded to ``n_heads``. Example: ``combine(causal_mask(4), padding_mask([4, 2]))``.
    """
    if mask is None and padding_mask is None:
        raise ValueError("combine needs at least one of mask= or padding_mask=")
    parts = []
    if mask is not None:
        parts.append(("mask", _to_4d(as_mask(mask, name="mask"))))
    if padding_mask is not None:
        pad = as_mask(padding_mask, name="padding_mask", ndim=2)
        parts.append(("padding_mask", pad[:, None, None, :]))        # (batch, 1, 1, n_k)
    if len(parts) == 2:
        (_, m), (_, p) = parts
        if m.shape[-1] != p.shape[-1]:
            raise ValueError(f"mask has {m.shape[-1]} keys (last axis, shape {tuple(m.shape)}) but "
                             f"padding_mask has {p.shape[-1]} (shape {tuple(p.shape[::3])}); "
                             "both must cover the same keys")
        if m.shape[0] != p.shape[0] and 1 not in (m.shape[0], p.shape[0]):
            raise ValueError(f"mask has batch size {m.shape[0]} but padding_mask has "
                             f"{p.shape[0]}; they must match (or one of them be 1)")
        if m.device != p.device:
            raise ValueError(f"mask is on {m.device} but padding_mask is on {p.device}; "
                             "move them to the same device")
        out = m & p
    elif mask is not None:
        out = parts[0][1]
    else:  # padding only: self-attention, so there are as many queries as keys
        p = parts[0][1]
        out = p.expand(p.shape[0], 1, p.shape[-1], p.shape[-1])
    if n_heads is not None:
        n_heads = validate.integer("n_heads", n_heads, low=1)
        if out.shape[1] not in (1, n_heads):
            raise ValueError(f"mask has {out.shape[1]} heads (axis 1 of shape "
                             f"{tuple(out.shape)}) but n_heads={n_heads}; give one mask per "
                             "head or a head axis of size 1 that is shared by all heads")
        out = out.expand(out.shape[0], n_heads, *out.shape[2:])
    return out.contiguous()


def fully_masked_rows(mask) -> torch.Tensor:
    """Indices (one row per hit) of the query rows of ``mask`` that allow no key at all.

    Such a row makes softmax divide 0 by 0: its attention weights come out as NaN.
    """
    mask = as_mask(mask, ndim=(1, 2, 3, 4))
    return torch.nonzero(~mask.any(dim=-1))


def to_torch_attn_mask(mask, n_heads: int | None = None) -> torch.Tensor:
    """Book mask → boolean ``attn_mask`` for ``nn.MultiheadAttention`` (True = NOT allowed).

    A (n_q, n_k) mask gives (n_q, n_k). A per-sequence mask, (batch, n_q, n_k) or
    (batch, 1 or heads, n_q, n_k), gives the (batch * n_heads, n_q, n_k) layout that
    ``nn.MultiheadAttention`` expects (index ``b * n_heads + h``); ``n_heads`` is then needed
    unless the mask already has a head axis of full size.
    """
    mask = as_mask(mask)
    if n_heads is not None:
        n_heads = validate.integer("n_heads", n_heads, low=1)
    if mask.ndim == 2:
        return ~mask
    mask = _to_4d(mask)
    batch, heads = mask.shape[:2]
    if n_heads is None:
        if heads == 1:
            raise ValueError(f"mask of shape {tuple(mask.shape)} has no per-head axis; pass "
                             "n_heads=... so it can be repeated for every head (nn."
                             "MultiheadAttention wants shape (batch * n_heads, n_q, n_k))")
        n_heads = heads
    mask = combine(mask, n_heads=n_heads)
    return ~mask.reshape(batch * n_heads, *mask.shape[2:])


def to_torch_key_padding_mask(padding_mask) -> torch.Tensor:
    """Book padding mask (batch, n), True = real token → ``key_padding_mask`` (True = ignore)."""
    return ~as_mask(padding_mask, name="padding_mask", ndim=2)


def to_additive(mask, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Book mask → float mask to add to the scores: 0.0 where allowed, -inf where blocked."""
    mask = as_mask(mask, ndim=(1, 2, 3, 4))
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch dtype such as torch.float32, got "
                        f"{dtype!r}")
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(~mask,
                                                                                float("-inf"))


def from_torch_attn_mask(attn_mask, n_heads: int | None = None) -> torch.Tensor:
    """Boolean ``nn.MultiheadAttention`` ``attn_mask`` (True = NOT allowed) → book mask.

    (n_q, n_k) gives (n_q, n_k); (batch * n_heads, n_q, n_k) needs ``n_heads`` and gives
    (batch, n_heads, n_q, n_k). For a float (additive) attn_mask use :func:`from_additive`.
    """
    if isinstance(attn_mask, torch.Tensor) and attn_mask.is_floating_point():
        raise TypeError(f"attn_mask has dtype {attn_mask.dtype}: a float attn_mask is additive "
                        "(0 = allowed, -inf = blocked); convert it with "
                        "book.ideas.masks.from_additive")
    attn_mask = as_mask(attn_mask, name="attn_mask", ndim=(2, 3))
    if attn_mask.ndim == 2:
        return ~attn_mask
    if n_heads is None:
        raise ValueError("a 3-D attn_mask is laid out as (batch * n_heads, n_q, n_k); pass "
                         "n_heads=... to split it into (batch, n_heads, n_q, n_k)")
    n_heads = validate.integer("n_heads", n_heads, low=1)
    if attn_mask.shape[0] % n_heads:
        raise ValueError(f"attn_mask has {attn_mask.shape[0]} matrices, not a multiple of "
                         f"n_heads={n_heads}; a 3-D attn_mask must have batch * n_heads of them")
    return ~attn_mask.reshape(-1, n_heads, *attn_mask.shape[1:])


def from_torch_key_padding_mask(key_padding_mask) -> torch.Tensor:
    """``nn.MultiheadAttention`` ``key_padding_mask`` (True = ignore) → book padding mask."""
    return ~as_mask(key_padding_mask, name="key_padding_mask", ndim=2)


def from_additive(mask) -> torch.Tensor:
    """Additive float mask → book mask: 0 → True (allowed); -inf (or ≤ -1e4) → False (blocked).

    Any other value is a soft bias (e.g. ALiBi or a relative position bias), which no boolean
    mask can express, so it raises.
    """
    if isinstance(mask, np.ndarray):
        mask = torch.from_numpy(np.ascontiguousarray(mask))
    if not isinstance(mask, torch.Tensor) or not mask.is_floating_point():
        raise TypeError("mask must be an additive float tensor of 0 and -inf entries, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}; a boolean mask "
                        "needs no conversion (book.ideas.masks.as_mask)")
    if mask.numel() == 0:
        raise ValueError(f"mask is empty (shape {tuple(mask.shape)})")
    blocked = mask <= _BLOCKED_BELOW
    allowed = mask == 0
    if not bool((blocked | allowed).all()):
        odd = mask[~(blocked | allowed)].flatten()[:3].tolist()
        raise ValueError(f"an additive mask may only hold 0 (allowed) and -inf (blocked); found "
                         f"{odd}: that is a soft score bias, which a boolean mask cannot express")
    return allowed
