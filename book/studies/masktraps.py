"""Mask traps: what happens when a mask's dtype or convention is not the one the code expects.

Chapter 7 runs each trap instead of describing it:

* :func:`dtype_outcome` passes a mask of one dtype to one PyTorch API and reports what the
  installed PyTorch does: it raises (with PyTorch's own message), computes what the boolean
  mask computes, or silently computes something else.
* :func:`masked_weights` is softmax over masked scores with the three ways code in the wild
  treats a query whose keys are *all* blocked (:data:`HANDLING`): ``"-inf"`` gives NaN,
  ``"-1e9"`` gives a uniform row, ``"sdpa"`` gives a row of zeros (what
  ``F.scaled_dot_product_attention`` returns for such a row in current PyTorch).
* :class:`LooseAttention` is the book's attention layer with its guard removed and two knobs,
  so a model can be *trained* with a bug: the padding mask read the wrong way round
  (``flip=True``) and any of the three handlings. :func:`loosen` puts it into a
  :class:`book.toy.model.TinyEncoder`.
* :func:`bug_data` computes one (mask as the layer reads it, weights) pair per bug in
  :data:`BUGS`; the chapter's explorer draws it.
"""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from book.ideas import masks
from book.ideas.mha import MultiHeadSelfAttention
from book.kit import rounding, validate
from book.toy import orders_example
from book.toy.model import check_encoder
from book.toy.orders import IGNORE_INDEX

# ---- what PyTorch does with a mask of each dtype -----------------------------------------------

APIS = ("masked_fill", "F.scaled_dot_product_attention", "nn.MultiheadAttention attn_mask",
        "nn.MultiheadAttention key_padding_mask")
#: what True / 1 means for each API (the mask handed to it is built in that meaning)
API_MEANING = {"masked_fill": "True = fill (blocked)",
               "F.scaled_dot_product_attention": "True = may attend",
               "nn.MultiheadAttention attn_mask": "True = blocked",
               "nn.MultiheadAttention key_padding_mask": "True = padding (blocked)"}
MASK_DTYPES = ("bool", "uint8", "int64", "float32")
_DTYPES = {"bool": torch.bool, "uint8": torch.uint8, "int64": torch.int64,
           "float32": torch.float32}


def _api_inputs(seed: int):
    """A seeded 1-head problem: scores/q/k/v for 4 tokens, a layer, and the right masks."""
    gen = torch.Generator().manual_seed(seed)
    n, d = 4, 8
    x = torch.randn(1, n, d, generator=gen)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = nn.MultiheadAttention(d, 2, batch_first=True).eval()
    q, k, v = (torch.randn(1, 1, n, d, generator=gen) for _ in range(3))
    causal = masks.causal_mask(n)                  # True = may attend
    padding = masks.padding_mask([3], n)            # True = real token
    return x, layer, (q, k, v), causal, padding


def _run_api(api: str, mask: torch.Tensor, inputs) -> torch.Tensor:
    x, layer, (q, k, v), _, _ = inputs
    with torch.no_grad():
        if api == "masked_fill":
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        if api == "F.scaled_dot_product_attention":
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        if api == "nn.MultiheadAttention attn_mask":
            return layer(x, x, x, attn_mask=mask, need_weights=False)[0]
        return layer(x, x, x, key_padding_mask=mask, need_weights=False)[0]


def _api_mask(api: str, inputs) -> torch.Tensor:
    """The boolean mask each API wants for 'causal' (or 'ignore the padding'), in its meaning."""
    _, _, _, causal, padding = inputs
    if api == "F.scaled_dot_product_attention":
        return causal
    if api == "nn.MultiheadAttention key_padding_mask":
        return ~padding
    return ~causal   # masked_fill fills, nn.MultiheadAttention attn_mask blocks: True = blocked


def dtype_outcome(api: str, dtype: str, *, seed: int = 0) -> dict:
    """Give ``api`` the right mask (in that API's meaning of True) stored as ``dtype`` (0/1).

    Returns ``{"api", "dtype", "raised", "error", "message", "same_as_bool", "max_diff"}``:
    ``raised`` is True when PyTorch refused (``error`` = exception class name, ``message`` =
    its first line); otherwise ``max_diff`` is the largest difference from the boolean mask's
    result and ``same_as_bool`` says whether that is rounding at most (the boolean row itself
    runs the same computation twice: 0.0; another dtype may take another kernel, which may round
    differently on another processor: :func:`book.kit.rounding.tolerance`). Messages come from
    the installed PyTorch.
    """
    validate.choice("api", api, APIS)
    validate.choice("dtype", dtype, MASK_DTYPES)
    seed = validate.integer("seed", seed, low=0)
    inputs = _api_inputs(seed)
    right = _api_mask(api, inputs)
    want = _run_api(api, right, inputs)
    out = {"api": api, "dtype": dtype, "raised": False, "error": None, "message": None,
           "same_as_bool": None, "max_diff": None}
    try:
        got = _run_api(api, right.to(_DTYPES[dtype]), inputs)
    except (RuntimeError, TypeError, ValueError, AssertionError) as err:
        out.update(raised=True, error=type(err).__name__,
                   message=str(err).strip().splitlines()[0] if str(err).strip() else "")
        return out
    diff = float((got - want).abs().max())
    d = inputs[0].shape[-1]  # the longest sum: a projection of d features
    same = diff <= rounding.tolerance(got.dtype, d)
    out.update(same_as_bool=bool(same), max_diff=diff)
    return out


def dtype_table(apis=APIS, dtypes=MASK_DTYPES, *, seed: int = 0) -> list[dict]:
    """:func:`dtype_outcome` for every (api, dtype) pair, API by API."""
    apis = validate.listed("apis", apis, "['masked_fill']")
    dtypes = validate.listed("dtypes", dtypes, "['bool', 'uint8']")
    return [dtype_outcome(a, d, seed=seed) for a in apis for d in dtypes]


# ---- fully masked rows: three behaviours -------------------------------------------------------

HANDLING = {
    "-inf": "blocked scores set to -inf, then softmax: an all-blocked row is 0/0 = NaN "
            "(the book's layer would refuse it; nn.MultiheadAttention returns NaN)",
    "-1e9": "blocked scores set to -1e9 (a finite number), then softmax: an all-blocked row "
            "comes out uniform",
    "sdpa": "F.scaled_dot_product_attention: an all-blocked row comes out as zeros "
            "(recent PyTorch; the tests check the installed version)",
}
FINITE_FILL = -1e9


def masked_weights(scores: torch.Tensor, allowed: torch.Tensor,
                   handling: str = "-inf") -> torch.Tensor:
    """Softmax over ``scores`` with the pairs where ``allowed`` is False blocked, and no check.

    ``allowed`` (bool, True = may attend) broadcasts against ``scores``. ``handling`` (one of
    :data:`HANDLING`) only matters for rows that allow no key: NaN, uniform, or zeros. With
    ``"sdpa"``, ``weights @ v`` equals ``F.scaled_dot_product_attention(q, k, v, allowed)``.
    """
    validate.choice("handling", handling, tuple(HANDLING))
    if not isinstance(scores, torch.Tensor) or not scores.is_floating_point():
        raise TypeError(f"scores must be a float torch tensor, got "
                        f"{getattr(scores, 'dtype', type(scores).__name__)}; convert it with "
                        "torch.as_tensor(scores, dtype=torch.float32)")
    if scores.ndim == 0 or scores.numel() == 0:
        raise ValueError(f"scores must hold at least one (query, key) score, got shape "
                         f"{tuple(scores.shape)}")
    allowed = masks.as_mask(allowed, name="allowed", ndim=(1, 2, 3, 4))
    try:
        fits = torch.broadcast_shapes(allowed.shape, scores.shape) == scores.shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"allowed has shape {tuple(allowed.shape)}, which does not broadcast "
                         f"against scores {tuple(scores.shape)}; give one entry per (query, key) "
                         "pair")
    if handling == "-1e9":
        return torch.softmax(scores.masked_fill(~allowed, FINITE_FILL), dim=-1)
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    if handling == "sdpa":
        weights = weights.masked_fill(~allowed.any(dim=-1, keepdim=True), 0.0)
    return weights


class LooseAttention(MultiHeadSelfAttention):
    """The book's layer without its guard against fully masked rows, plus two bug switches.

    ``flip=True``: the padding mask is read the wrong way round, as if ``True`` meant
    "padding" (the ``key_padding_mask`` convention of ``nn.MultiheadAttention``) — so real
    tokens are blocked and padding is attended to. ``handling``: what a query with no allowed
    key gets (:data:`HANDLING`). ``flip=False, handling="sdpa"`` computes exactly what the
    book's layer computes. Inputs are not checked for NaN either: a NaN passes straight on.
    """

    refuses_nonfinite_output = False   # its NaN is the lesson

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 *, flip: bool = False, handling: str = "sdpa", device=None, dtype=None):
        super().__init__(d_model, n_heads, dropout, bias, device=device, dtype=dtype)
        self.flip = validate.boolean("flip", flip)
        self.handling = validate.choice("handling", handling, tuple(HANDLING))

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, flip={self.flip}, handling={self.handling!r}"

    def allowed(self, x, mask=None, padding_mask=None) -> torch.Tensor | None:
        """The (batch, 1, n, n) mask this layer applies (after the flip), or None. ``x`` is
        checked for type, dtype and shape, not for NaN (this layer lets NaN through)."""
        validate.float_tensor("x", x, ndim=3, shape_hint="(batch, seq_len, d_model)",
                              finite=False)
        self._check_width("x", x, 3, "(batch, seq_len, d_model)", self.d_model)
        if x.dtype != self.w_q.weight.dtype:
            raise TypeError(f"x has dtype {x.dtype} but the layer's weights are "
                            f"{self.w_q.weight.dtype}; convert it with "
                            f"x.to({self.w_q.weight.dtype})")
        if padding_mask is not None:
            padding_mask = masks.as_mask(padding_mask, name="padding_mask", ndim=2)
            if tuple(padding_mask.shape) != tuple(x.shape[:2]):
                raise ValueError(f"padding_mask must have shape (batch, seq_len) = "
                                 f"{tuple(x.shape[:2])}, got {tuple(padding_mask.shape)}")
            if self.flip:
                padding_mask = ~padding_mask
        if mask is None and padding_mask is None:
            return None
        return masks.combine(mask, padding_mask).to(x.device)

    def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
        allowed = self.allowed(x, mask, padding_mask)
        q, k, v = (self.split_heads(w(x)) for w in (self.w_q, self.w_k, self.w_v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if allowed is None:
            weights = torch.softmax(scores, dim=-1)
        else:
            weights = masked_weights(scores, allowed, self.handling)
        weights = self.dropout(weights)
        output = self.w_o(self.merge_heads(weights @ v))
        return (output, weights) if need_weights else output


def loosen(model, *, flip: bool = False, handling: str = "sdpa"):
    """A copy of the :class:`book.toy.model.TinyEncoder` ``model`` (same weights) whose attention
    layers are :class:`LooseAttention` (``flip``, ``handling``). Train it with
    :func:`book.toy.fit.fit` to see what a mask bug does to learning; ``model`` is unchanged."""
    check_encoder(model)
    validate.boolean("flip", flip)
    validate.choice("handling", handling, tuple(HANDLING))
    out = copy.deepcopy(model)
    for block in out.blocks:
        loose = LooseAttention.from_module(block.attn)
        loose.flip, loose.handling = flip, handling
        block.attn = loose
    out.config = out.config.replace(attention=f"loose(flip={flip}, handling={handling})")
    return out


def nan_share(model: nn.Module) -> float:
    """Share of ``model``'s parameter entries that are NaN (0.0 healthy, 1.0 all gone)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch nn.Module, got {type(model).__name__}")
    params = [p.detach().reshape(-1) for p in model.parameters()]
    if not params:
        raise ValueError("model has no parameters, so no share of them can be NaN; pass the "
                         "trained model itself")
    flat = torch.cat(params)
    return float(torch.isnan(flat).float().mean())


# ---- the bug explorer --------------------------------------------------------------------------

#: bug → (description, how the layer receives the mask, handling of all-blocked rows)
BUGS = {
    "correct": "right: padding mask with True = real token, as the layer expects",
    "flipped": "flipped: True = padding (nn.MultiheadAttention's convention) handed to a "
               "layer that reads True = may attend (F.scaled_dot_product_attention's)",
    "flipped, no padding": "flipped, on a sequence without padding: every key blocked; "
                           "F.scaled_dot_product_attention returns zeros",
    "~uint8, -inf": "~ on a uint8 0/1 mask gives 254/255, .bool() makes all of it True: "
                    "every key blocked, filled with -inf: NaN",
    "~uint8, -1e9": "the same mask, filled with -1e9: every row uniform, padding included",
    "float 0/1 added": "a float 0/1 mask passed as attn_mask is ADDED to the scores: "
                       "+1 on real keys, padding not blocked",
    "left pad + causal, -inf": "left padding with a causal mask: the first padding "
                               "queries see no key at all: NaN",
    "left pad + causal, -1e9": "left padding with a causal mask, filled with -1e9: those "
                               "queries attend uniformly to everything, future included",
    "right pad + causal": "right padding with a causal mask: every query keeps itself",
}
BUG_MAX_REAL = 8
BUG_MAX_PAD = 8
BUG_SEED = 7


def seeded_layer(seed: int, n_tokens: int, d_model: int = 8,
                 n_heads: int = 1) -> tuple[MultiHeadSelfAttention, torch.Tensor]:
    """A seeded, untrained :class:`~book.ideas.mha.MultiHeadSelfAttention` (eval mode) and token
    vectors ``x`` (1, n_tokens, d_model) drawn from N(0, 1): what the mask explorers feed
    their weights from. The same arguments give the same (cached) pair; the global random
    generator is left alone. Treat both as read-only."""
    seed = validate.seed(seed)
    n_tokens = validate.integer("n_tokens", n_tokens, low=1, high=4096)
    validate.head_split(d_model, n_heads)
    return _seeded_layer(seed, n_tokens, int(d_model), int(n_heads))


@functools.lru_cache(maxsize=8)
def _seeded_layer(seed: int, n_tokens: int, d_model: int, n_heads: int):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = MultiHeadSelfAttention(d_model, n_heads).eval()
    x = torch.randn(1, n_tokens, d_model, generator=torch.Generator().manual_seed(seed))
    return layer, x


def bug_data(bug: str, length: int = 5, padding: int = 2) -> dict:
    """One sequence of ``length`` real tokens and ``padding`` padding positions under ``bug``.

    Returns ``labels`` (unique: ``t1 … tn``, ``pad1 …``; left padding puts the pads first),
    ``allowed`` (bool n × n, what the layer applies: True = may attend), ``weights``
    (float n × n, NaN where the bug makes NaN), ``bias`` (the float mask added, or None),
    ``nan_rows``, ``uniform_rows``, ``zero_rows`` (counts), ``real_on_pad`` (the largest share
    of a real query's weight on padding) and the ``description`` of the bug.
    """
    validate.choice("bug", bug, tuple(BUGS))
    length = validate.integer("length", length, low=1, high=BUG_MAX_REAL)
    padding = validate.integer("padding", padding, low=0, high=BUG_MAX_PAD)
    if bug == "flipped, no padding":
        padding = 0
    n = length + padding
    left = bug.startswith("left pad")
    side = "left" if left else "right"
    real = masks.padding_mask([length], n, side=side)[0]            # True = real token
    causal = masks.causal_mask(n) if "causal" in bug else torch.ones(n, n, dtype=torch.bool)
    bias = None
    handling = "-1e9" if bug.endswith("-1e9") else "-inf"
    if bug == "correct" or "causal" in bug:
        allowed = causal & real[None, :]
    elif bug.startswith("flipped"):
        allowed = causal & ~real[None, :]
        handling = "sdpa"
    elif bug.startswith("~uint8"):
        as_uint8 = real.to(torch.uint8)                              # 1 = real
        allowed = ~(~as_uint8).bool()[None, :].expand(n, n)          # ~ gives 254/255: all True
    else:   # float 0/1 added
        allowed = torch.ones(n, n, dtype=torch.bool)
        bias = real.float()[None, :].expand(n, n)
    layer, x = seeded_layer(BUG_SEED, BUG_MAX_REAL + BUG_MAX_PAD)
    xs = 1.5 * x[:, :n]
    with torch.no_grad():
        q, k = layer.split_heads(layer.w_q(xs)), layer.split_heads(layer.w_k(xs))
        scores = (q @ k.transpose(-2, -1) / math.sqrt(layer.d_k))[0, 0]
        if bias is not None:
            scores = scores + bias
        w = masked_weights(scores, allowed, handling).double().numpy()
    pads = [f"pad{i + 1}" for i in range(padding)]
    tokens = [f"t{i + 1}" for i in range(length)]
    labels = pads + tokens if left else tokens + pads
    real_np = real.numpy()
    finite = np.isfinite(w).all(axis=1)
    uniform = finite & np.all(np.abs(w - 1.0 / n) < 1e-6, axis=1)
    zero = finite & np.all(w == 0, axis=1)
    on_pad = np.where(finite, np.nan_to_num(w)[:, ~real_np].sum(axis=1), np.nan)
    real_rows = on_pad[real_np]
    return {"bug": bug, "description": BUGS[bug], "length": length, "padding": padding,
            "labels": labels, "allowed": allowed.numpy().copy(), "weights": w,
            "bias": None if bias is None else bias.numpy().copy(),
            "nan_rows": int((~finite).sum()), "uniform_rows": int(uniform.sum()),
            "zero_rows": int(zero.sum()),
            "real_on_pad": min(1.0, float(np.nanmax(real_rows)))
            if np.isfinite(real_rows).any() else float("nan")}


# --- used by the explorers of the chapter modules ----------------------------------------

MASK_KINDS = ("none", "causal", "padding", "causal + padding")
MASK_MAX_REAL = len(orders_example.TOKENS)  # the real tokens are a prefix of the takeout order
MASK_MAX_PAD = 8


def mask_data(kind: str, length: int, seq_len: int) -> dict:
    """One sequence of ``length`` real tokens padded to ``seq_len``, under mask ``kind``.

    Returns the unique token ``labels``, the boolean grid ``allowed`` (rows = queries, columns =
    keys, True = may attend, built with :mod:`book.ideas.masks`), the attention ``weights`` that
    :class:`book.ideas.mha.MultiHeadSelfAttention` computes with that mask (a seeded, untrained
    one-head layer), ``pad_share`` (the largest share of weight a real token puts on padding)
    and ``future_share`` (the largest share a real token puts on the tokens after it).
    """

    validate.choice("kind", kind, MASK_KINDS)
    length = validate.integer("length", length, low=1, high=MASK_MAX_REAL)
    seq_len = validate.integer("seq_len", seq_len, low=1, high=MASK_MAX_REAL + MASK_MAX_PAD)
    if seq_len < length:
        raise ValueError(f"seq_len={seq_len} is shorter than length={length}: the padded length "
                         "must hold every real token (padding adds seq_len - length positions)")
    causal = masks.causal_mask(seq_len) if "causal" in kind else None
    padding = masks.padding_mask([length], seq_len) if "padding" in kind else None
    if causal is None and padding is None:
        allowed = torch.ones(seq_len, seq_len, dtype=torch.bool)
    else:
        allowed = masks.combine(causal, padding)[0, 0]
    layer, x = seeded_layer(4, MASK_MAX_REAL + MASK_MAX_PAD)
    with torch.no_grad():
        _, weights = layer(x[:, :seq_len], mask=causal, padding_mask=padding, need_weights=True)
    w = weights[0, 0].double().numpy()
    n_pad = seq_len - length
    tokens = orders_example.TOKENS[:length] + ["pad"] * n_pad
    labels = orders_example.labels(tokens, tokens, short=True)
    return {"kind": kind, "length": length, "seq_len": seq_len, "labels": labels,
            "allowed": allowed.numpy(), "weights": w,
            "pad_share": float(w[:length, length:].sum(axis=1).max()) if n_pad else 0.0,
            "future_share": float(np.triu(w, k=1)[:length].sum(axis=1).max())}


def nan_step(model: nn.Module, batch, *, clip: bool, lr: float = 5e-3) -> dict:
    """One AdamW step of ``model`` (trained in place) on ``batch``; how far NaN spreads.

    Returns the step's ``loss``, the NaN shares of the ``logits``, the ``grads``, the
    parameters (``params``) and of the ``next`` outputs (on the same batch with its padding
    mask inverted, i.e. even a correct mask), and ``spared``: the parameters not entirely NaN,
    with their NaN share. ``clip`` clips the gradient norm to 1 before the step.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch module, got {type(model).__name__}")
    if not isinstance(clip, bool):
        raise TypeError(f"clip must be True or False, got {clip!r}")
    lr = validate.real("lr", lr, low=1e-12)
    for name in ("ids", "padding_mask", "labels"):
        if not hasattr(batch, name):
            raise TypeError(f"batch must come from book.toy.orders.collate (it has .ids, "
                            f".padding_mask, .labels), got {type(batch).__name__}")
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    logits = model(batch.ids, batch.padding_mask)
    loss = F.cross_entropy(logits.flatten(0, 1), batch.labels.flatten(),
                           ignore_index=IGNORE_INDEX)
    loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimiser.step()
    with torch.no_grad():
        after = model(batch.ids, ~batch.padding_mask)
    spared = {name: torch.isnan(p).float().mean().item()
              for name, p in model.named_parameters() if not torch.isnan(p).all()}
    return {"loss": loss.item(), "logits": torch.isnan(logits).float().mean().item(),
            "grads": torch.isnan(grads).float().mean().item(), "params": nan_share(model),
            "next": torch.isnan(after).float().mean().item(), "spared": spared}
