"""Multi-head self-attention from scratch, plus the same layer through PyTorch's fused kernel.

* :class:`MultiHeadSelfAttention` is the lesson: every step written out, heads batched with
  ``view`` + ``transpose`` so one matrix product serves all heads at once.
* :class:`MultiHeadSelfAttentionSDPA` has the same weights but calls
  ``F.scaled_dot_product_attention`` (the "production" path).
* :class:`MultiHeadSelfAttentionLoop` loops over the heads in Python (for the speed comparison).
* :func:`from_torch_mha` / :func:`copy_to_torch_mha` move weights to and from
  ``nn.MultiheadAttention``, so the three can be checked against PyTorch's own layer.

Masks follow the book's convention (see :mod:`book.ideas.masks`): ``True`` = may attend.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from book.ideas import masks
from book.kit import i18n, validate


def check_config(d_model, n_heads, dropout, bias) -> tuple[int, int, float]:
    """Validate the arguments of :class:`MultiHeadSelfAttention`; return (d_model, n_heads,
    dropout) as int, int, float, or raise an error that says how to fix them."""
    validate.head_split(d_model, n_heads)
    dropout = validate.real("dropout", dropout, low=0.0, high=1.0)
    if dropout == 1.0:
        raise ValueError("dropout=1.0 would zero every attention weight; use a value "
                         "in [0, 1), e.g. 0.1")
    validate.boolean("bias", bias)
    return int(d_model), int(n_heads), dropout


class MultiHeadSelfAttention(nn.Module):
    """Multi-head self-attention: n_heads heads of width d_k = d_model // n_heads.

    Shapes: ``x`` is (batch, seq_len, d_model) and so is the output.

    Masks use the book's convention, ``True`` = may attend:

    * ``mask``: (seq_len, seq_len), (batch, seq_len, seq_len) or
      (batch, 1 or n_heads, seq_len, seq_len), e.g. ``book.ideas.masks.causal_mask(seq_len)``;
    * ``padding_mask``: (batch, seq_len), ``True`` = real token, ``False`` = padding that no
      query may attend to (``book.ideas.masks.padding_mask(lengths, seq_len)``). Note that this is
      the
      opposite of ``nn.MultiheadAttention``'s ``key_padding_mask``, where True means "ignore".

    **Fully masked query rows raise.** If the masks leave some query with no key at all, softmax
    would divide 0 by 0 and that token's output would be NaN (silently poisoning the loss). The
    forward pass raises ``ValueError`` naming the row instead; allow at least one key per query,
    e.g. the token itself (a causal mask always does; padding masks need every length ≥ 1).

    ``dropout`` acts on the attention weights (after softmax), in training mode only.
    With ``need_weights=True`` the forward pass also returns the weights it used, per head:
    (batch, n_heads, seq_len, seq_len) — after dropout when training.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0,
                 bias: bool = True, *, device=None, dtype=None):
        super().__init__()
        d_model, n_heads, dropout = check_config(d_model, n_heads, dropout, bias)
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads  # each head's width
        kw = {"bias": bias, "device": device, "dtype": dtype}
        self.w_q = nn.Linear(d_model, d_model, **kw)  # every head's W_Q, side by side
        self.w_k = nn.Linear(d_model, d_model, **kw)
        self.w_v = nn.Linear(d_model, d_model, **kw)
        self.w_o = nn.Linear(d_model, d_model, **kw)  # mixes the heads' results
        self.dropout = nn.Dropout(dropout)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, d_k={self.d_k}"

    def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
        allowed = self.check_inputs(x, mask, padding_mask)  # None or (B, 1|h, n, n)
        batch, seq_len, _ = x.shape

        # 1. Project, then cut d_model into n_heads slices of width d_k:
        #    (B, n, d_model) --view--> (B, n, h, d_k) --transpose--> (B, h, n, d_k)
        q = self.w_q(x).view(batch, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).view(batch, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).view(batch, seq_len, self.n_heads, self.d_k).transpose(1, 2)

        # 2. Score every query against every key, all heads at once: (B, h, n, n).
        #    Divide by sqrt(d_k) so the scores' spread does not grow with d_k.
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)

        # 3. Forbidden pairs get -inf, so softmax gives them weight exactly 0.
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # each row sums to 1
        weights = self.dropout(weights)  # on the weights, not the scores or output

        # 4. Each query's output: its weighted average of the values, (B, h, n, d_k).
        context = torch.matmul(weights, v)

        # 5. Heads side by side again: (B, n, h, d_k) -> (B, n, d_model). transpose
        #    only changes strides; view needs contiguous memory, hence .contiguous().
        merged = context.transpose(1, 2).contiguous().view(batch, seq_len, self.d_model)

        # 6. Mix the heads' results with the output projection.
        output = self.w_o(merged)
        return (output, weights) if need_weights else output

    # ---- helpers (not part of the lesson's forward pass) ------------------------------------

    #: whether a call refuses to return NaN or infinity computed from a finite input
    #: (:meth:`check_output`); a layer built to show NaN spreading turns it off
    refuses_nonfinite_output = True

    def __call__(self, *args, **kwargs):
        out = super().__call__(*args, **kwargs)  # nn.Module's call: hooks, then forward
        if self.refuses_nonfinite_output:
            self.check_output(args[0] if args else kwargs.get("x"),
                              out[0] if isinstance(out, tuple) else out)
        return out

    def check_output(self, x, output) -> None:
        """Raise :class:`book.kit.validate.NonFiniteError` if ``output`` holds NaN or infinity:
        with ``x`` finite (``check_inputs`` saw to that) the scores overflowed ``x``'s dtype,
        or the weights are not finite. One reduction, like the input check."""
        if not isinstance(output, torch.Tensor) or math.isfinite(output.detach().sum().item()) \
                or bool(torch.isfinite(output).all()):
            return
        name = type(self).__name__
        if not all(bool(torch.isfinite(p).all()) for p in self.parameters()):
            raise validate.NonFiniteError(
                f"{name}'s weights contain NaN or infinity, so its output does too (a training "
                "step that diverged?); re-initialise or reload the weights, and lower the "
                "learning rate or clip the gradients")
        top = f" (the largest |x| is {float(x.detach().abs().max()):.3g})" \
            if isinstance(x, torch.Tensor) and x.numel() else ""
        raise validate.NonFiniteError(
            f"{name}'s output overflowed: it holds NaN or infinity although x is finite"
            f"{top}. The attention scores q·k grow with the square of x's scale; they (or the "
            f"projections) passed the largest {output.dtype} "
            f"({torch.finfo(output.dtype).max:.3g}), and softmax of an infinite score is NaN. "
            "Scale the input down (normalise it, e.g. with "
            "nn.LayerNorm, or divide it by x.abs().max()), or compute in float64 "
            "(layer.double() and x.double())")

    def check_inputs(self, x, mask=None, padding_mask=None) -> torch.Tensor | None:
        """Validate ``x`` and the masks; return the combined mask (batch, 1|heads, n, n) or None."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch tensor of shape (batch, seq_len, d_model), got "
                            f"{type(x).__name__}; convert with torch.as_tensor(x, "
                            "dtype=torch.float32)")
        if x.ndim != 3:
            hint = " (add a batch axis with x.unsqueeze(0))" if x.ndim == 2 else ""
            raise ValueError(f"x must be 3-D (batch, seq_len, d_model), got shape "
                             f"{tuple(x.shape)}{hint}")
        batch, seq_len, width = x.shape
        if width != self.d_model:
            raise ValueError(f"x has {width} features (last axis, shape {tuple(x.shape)}) but "
                             f"this layer was built with d_model={self.d_model}")
        if batch == 0 or seq_len == 0:
            raise ValueError(f"x is empty (shape {tuple(x.shape)}); pass at least one sequence "
                             "of at least one token")
        weight = self.w_q.weight
        if not x.is_floating_point():
            raise TypeError(f"x has dtype {x.dtype}, but attention works on floating-point "
                            f"numbers; convert it with x.to({weight.dtype})")
        if x.dtype != weight.dtype:
            raise TypeError(f"x has dtype {x.dtype} but the layer's weights are {weight.dtype}; "
                            f"convert one of them, e.g. x.to({weight.dtype}) or "
                            f"layer.to({x.dtype})")
        # A finite sum implies finite entries (one NaN or inf makes the sum NaN or inf), and one
        # reduction costs far less than a full boolean map; only a non-finite sum (a bad entry,
        # or finite entries whose sum overflows) pays for the exact check.
        if not bool(torch.isfinite(x.detach().sum())) and not bool(torch.isfinite(x).all()):
            raise validate.NonFiniteError(
                "x contains NaN or infinity; attention needs finite inputs (hide positions "
                "with a boolean mask, not with -inf entries in x)")
        if mask is None and padding_mask is None:
            return None
        if mask is not None:
            m = masks.as_mask(mask)
            if tuple(m.shape[-2:]) != (seq_len, seq_len):
                raise ValueError(f"mask must end in (seq_len, seq_len) = ({seq_len}, {seq_len}) "
                                 f"(queries × keys), got shape {tuple(m.shape)}")
            if m.ndim >= 3 and m.shape[0] not in (1, batch):
                raise ValueError(f"mask has batch size {m.shape[0]} (shape {tuple(m.shape)}) "
                                 f"but x has {batch}; use {batch} or 1 (shared by the batch)")
            mask = m
        if padding_mask is not None:
            p = masks.as_mask(padding_mask, name="padding_mask", ndim=2)
            if tuple(p.shape) != (batch, seq_len):
                raise ValueError(f"padding_mask must have shape (batch, seq_len) = ({batch}, "
                                 f"{seq_len}), got {tuple(p.shape)}; True marks real tokens")
            padding_mask = p
        allowed = masks.combine(mask, padding_mask).to(x.device)
        if allowed.shape[1] not in (1, self.n_heads):
            raise ValueError(f"mask has {allowed.shape[1]} heads (axis 1 of shape "
                             f"{tuple(allowed.shape)}) but the layer has n_heads={self.n_heads}; "
                             "use one mask per head or a head axis of size 1")
        empty = masks.fully_masked_rows(allowed)
        if len(empty):
            b, h, i = empty[0].tolist()
            where = f"batch {b}, query {i}" + (f", head {h}" if allowed.shape[1] > 1 else "")
            raise ValueError(
                f"{len(empty)} query row(s) of the mask allow no key at all (first: {where}); "
                "softmax over a row that is all -inf gives NaN. Allow at least one key per "
                "query, e.g. the token itself, and keep every padding length ≥ 1. The book's "
                "convention is True = may attend; a PyTorch-style mask (True = blocked) must be "
                "converted with book.ideas.masks.from_torch_attn_mask / "
                "from_torch_key_padding_mask.")
        return allowed

    def attend_heads(self, q, k, v, allowed=None, need_weights: bool = False):
        """Steps 2–6 of ``forward`` on heads already split (B, h, n, d_k), for subclasses
        that change how q, k and v are made (rotary positions, a latent KV)."""
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))
        out = self.w_o(self.merge_heads(weights @ v))
        return (out, weights) if need_weights else out

    def split_heads(self, t: torch.Tensor) -> torch.Tensor:
        """(batch, seq, d_model) → (batch, heads, seq, d_k)."""
        self._check_width("t", t, 3, "(batch, seq, d_model)", self.d_model)
        batch, seq_len, _ = t.shape
        return t.view(batch, seq_len, self.n_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, t: torch.Tensor) -> torch.Tensor:
        """(batch, heads, seq, d_k) → (batch, seq, d_model)."""
        self._check_width("t", t, 4, "(batch, heads, seq, d_k)", self.d_k)
        if t.shape[1] != self.n_heads:
            raise ValueError(f"t has {t.shape[1]} heads (axis 1 of shape {tuple(t.shape)}) but "
                             f"the layer has n_heads={self.n_heads}; pass split_heads' output")
        batch, _, seq_len, _ = t.shape
        return t.transpose(1, 2).contiguous().view(batch, seq_len, self.d_model)

    @staticmethod
    def _check_width(name: str, t, ndim: int, layout: str, width: int) -> None:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor {layout}, got {type(t).__name__}")
        if t.ndim != ndim or t.shape[-1] != width:
            raise ValueError(f"{name} must be {layout} with last axis {width}, got shape "
                             f"{tuple(t.shape)}")

    @classmethod
    def from_module(cls, other: MultiHeadSelfAttention):
        """A new ``cls`` layer with the configuration and (copied) weights of ``other``."""
        if not isinstance(other, MultiHeadSelfAttention):
            raise TypeError(f"other must be a MultiHeadSelfAttention (or subclass), got "
                            f"{type(other).__name__}")
        weight = other.w_q.weight
        new = cls(other.d_model, other.n_heads, other.dropout.p, other.w_q.bias is not None,
                  device=weight.device, dtype=weight.dtype)
        new.load_state_dict(other.state_dict())
        new.train(other.training)
        return new


class MultiHeadSelfAttentionSDPA(MultiHeadSelfAttention):
    """The same layer (same weights, same masks), with the attention step done by PyTorch's
    fused ``F.scaled_dot_product_attention`` — what production code calls. It cannot return the
    attention weights (the fused kernels never materialise them).

    Two things keep it at the fused kernel's speed: at inference the three projections run as
    one (d_model → 3·d_model) matrix product over the stacked weights ``[W_q; W_k; W_v]`` (the
    layout of ``nn.MultiheadAttention.in_proj_weight``; the parameters stay ``w_q``, ``w_k``,
    ``w_v``, so :func:`from_torch_mha` / :func:`copy_to_torch_mha` work unchanged), and a mask
    equal to ``book.ideas.masks.causal_mask(seq_len)`` (with no padding mask) is passed to SDPA as
    ``is_causal=True`` rather than as an n × n tensor, so the kernel skips the blocked half.
    Every other mask is checked and passed as it is (a fully masked query row still raises).
    """

    def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
        if need_weights:
            raise ValueError("F.scaled_dot_product_attention does not return attention weights; "
                             "use MultiHeadSelfAttention.from_module(layer) for need_weights=True")
        if padding_mask is None and mask is not None and _is_causal_for(mask, x):
            self.check_inputs(x)  # x alone; a causal mask allows every query its own key
            allowed, causal = None, True
        else:
            allowed, causal = self.check_inputs(x, mask, padding_mask), False
        q, k, v = self._project_qkv(x)
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed, dropout_p=self.dropout.p if self.training else 0.0,
            is_causal=causal)
        return self.w_o(self.merge_heads(context))

    def _project_qkv(self, x: torch.Tensor):
        """q, k, v (batch, heads, seq, d_k) each.

        Without autograd (inference) the three projections run as one matmul over the stacked
        weights ``[W_q; W_k; W_v]`` (one pass over x instead of three). With autograd they stay
        three ``nn.Linear`` calls: stacking the weights in every step adds a copy forward and a
        split backward, which measured slower than the three products (``make bench``).
        """
        batch, seq_len, _ = x.shape
        if torch.is_grad_enabled() and (x.requires_grad or self.w_q.weight.requires_grad):
            return (self.split_heads(self.w_q(x)), self.split_heads(self.w_k(x)),
                    self.split_heads(self.w_v(x)))
        weight, bias = self._stacked_weights()
        qkv = F.linear(x, weight, bias).view(batch, seq_len, 3, self.n_heads, self.d_k)
        qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, batch, heads, seq, d_k)
        return qkv[0], qkv[1], qkv[2]

    def _stacked_weights(self):
        """``[W_q; W_k; W_v]`` and the stacked biases, rebuilt only when a parameter changed.

        The key holds each parameter's storage, device and in-place version counter, so an
        optimiser step, ``load_state_dict``, ``.to()`` or assigning ``.data`` all rebuild it.
        """
        params = [m.weight for m in (self.w_q, self.w_k, self.w_v)]
        if self.w_q.bias is not None:
            params += [m.bias for m in (self.w_q, self.w_k, self.w_v)]
        key = tuple((p.data_ptr(), p.device, p.dtype, p._version) for p in params)
        cached = self.__dict__.get("_stacked")
        if cached is None or cached[0] != key:
            with torch.no_grad():
                weight = torch.cat(params[:3])
                bias = torch.cat(params[3:]) if len(params) > 3 else None
            cached = self.__dict__["_stacked"] = (key, weight, bias)
        return cached[1], cached[2]


def _is_causal_for(mask, x) -> bool:
    """Whether ``mask`` is exactly the causal mask for ``x``'s sequence length, shared by the
    whole batch and every head: (n, n), (1, n, n) or (1, 1, n, n) boolean, lower-triangular
    ones. Anything else (or any doubt) answers False and takes the general, fully checked path.
    """
    if not (isinstance(mask, torch.Tensor) and isinstance(x, torch.Tensor)) or x.ndim != 3:
        return False
    n = x.shape[1]
    if mask.dtype != torch.bool or mask.device != x.device or mask.shape[-2:] != (n, n) \
            or mask.ndim not in (2, 3, 4) or any(s != 1 for s in mask.shape[:-2]):
        return False
    seen = _LAST_CAUSAL.get("mask")
    if seen is mask and _LAST_CAUSAL["version"] == mask._version:
        return True  # the same tensor, unchanged since it was found causal
    if not torch.equal(mask.reshape(n, n), _causal(n, x.device)):
        return False
    _LAST_CAUSAL.update(mask=mask, version=mask._version)
    return True


_LAST_CAUSAL: dict = {}  # the last mask found causal and its in-place version counter


_CAUSAL_CACHE: dict[tuple[int, str], torch.Tensor] = {}


def _causal(n: int, device) -> torch.Tensor:
    """The (n, n) causal mask, built once per length and device (never handed out)."""
    key = (n, str(device))
    if key not in _CAUSAL_CACHE:
        if len(_CAUSAL_CACHE) >= 16:
            _CAUSAL_CACHE.clear()
        _CAUSAL_CACHE[key] = masks.causal_mask(n, device=device)
    return _CAUSAL_CACHE[key]


class MultiHeadSelfAttentionLoop(MultiHeadSelfAttention):
    """The same layer with a Python ``for`` loop over the heads (one small matmul per head):
    correct, but slower than batching the heads — the point of ``view`` + ``transpose``."""

    def forward(self, x, mask=None, padding_mask=None, need_weights: bool = False):
        allowed = self.check_inputs(x, mask, padding_mask)
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)  # (batch, seq, d_model) each
        outputs, all_weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)  # this head's d_k columns
            scores = q[..., cols] @ k[..., cols].transpose(-2, -1) / math.sqrt(self.d_k)
            if allowed is not None:
                head_mask = allowed[:, h] if allowed.shape[1] > 1 else allowed[:, 0]
                scores = scores.masked_fill(~head_mask, float("-inf"))
            weights = self.dropout(torch.softmax(scores, dim=-1))
            outputs.append(weights @ v[..., cols])  # (batch, seq, d_k)
            all_weights.append(weights)
        output = self.w_o(torch.cat(outputs, dim=-1))
        return (output, torch.stack(all_weights, dim=1)) if need_weights else output


# ---- moving weights to and from nn.MultiheadAttention ----------------------------------------

def _check_torch_mha(mha) -> None:
    if not isinstance(mha, nn.MultiheadAttention):
        raise TypeError(f"mha must be a torch.nn.MultiheadAttention, got {type(mha).__name__}; "
                        "build one with nn.MultiheadAttention(embed_dim, num_heads, "
                        "batch_first=True)")
    if not mha._qkv_same_embed_dim:
        raise ValueError("this nn.MultiheadAttention has kdim/vdim different from embed_dim; "
                         "self-attention needs kdim = vdim = embed_dim")
    if mha.bias_k is not None or mha.add_zero_attn:
        raise ValueError("add_bias_kv / add_zero_attn add extra keys that MultiHeadSelfAttention "
                         "does not have; build nn.MultiheadAttention without them")


def from_torch_mha(mha: nn.MultiheadAttention, cls: type = MultiHeadSelfAttention):
    """A :class:`MultiHeadSelfAttention` (or ``cls``) with the weights of ``mha``.

    ``mha.in_proj_weight`` (3·d_model × d_model) stacks W_q, W_k, W_v; its rows split in three.
    Feed both layers batch-first inputs (``nn.MultiheadAttention(..., batch_first=True)``).
    """
    _check_torch_mha(mha)
    if not (isinstance(cls, type) and issubclass(cls, MultiHeadSelfAttention)):
        raise TypeError(f"cls must be MultiHeadSelfAttention or a subclass, got {cls!r}")
    weight = mha.in_proj_weight
    layer = cls(mha.embed_dim, mha.num_heads, mha.dropout, mha.in_proj_bias is not None,
                device=weight.device, dtype=weight.dtype)
    w_q, w_k, w_v = weight.detach().chunk(3, dim=0)
    with torch.no_grad():
        for linear, w in zip((layer.w_q, layer.w_k, layer.w_v), (w_q, w_k, w_v), strict=True):
            linear.weight.copy_(w)
        layer.w_o.weight.copy_(mha.out_proj.weight)
        if mha.in_proj_bias is not None:
            b_q, b_k, b_v = mha.in_proj_bias.detach().chunk(3)
            for linear, b in zip((layer.w_q, layer.w_k, layer.w_v), (b_q, b_k, b_v),
                                 strict=True):
                linear.bias.copy_(b)
            layer.w_o.bias.copy_(mha.out_proj.bias)
    layer.train(mha.training)
    return layer


def copy_to_torch_mha(layer: MultiHeadSelfAttention,
                      mha: nn.MultiheadAttention | None = None) -> nn.MultiheadAttention:
    """Copy ``layer``'s weights into ``mha`` (default: a new batch-first one); return it."""
    if not isinstance(layer, MultiHeadSelfAttention):
        raise TypeError(f"layer must be a MultiHeadSelfAttention, got {type(layer).__name__}")
    weight = layer.w_q.weight
    has_bias = layer.w_q.bias is not None
    if mha is None:
        mha = nn.MultiheadAttention(layer.d_model, layer.n_heads, dropout=layer.dropout.p,
                                    bias=has_bias, batch_first=True,
                                    device=weight.device, dtype=weight.dtype)
    _check_torch_mha(mha)
    if (mha.embed_dim, mha.num_heads) != (layer.d_model, layer.n_heads):
        raise ValueError(f"mha has embed_dim={mha.embed_dim}, num_heads={mha.num_heads} but the "
                         f"layer has d_model={layer.d_model}, n_heads={layer.n_heads}")
    if (mha.in_proj_bias is not None) != has_bias:
        raise ValueError(f"bias mismatch: the layer has bias={has_bias} but mha has "
                         f"bias={mha.in_proj_bias is not None}; build both the same way")
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([layer.w_q.weight, layer.w_k.weight,
                                            layer.w_v.weight]))
        mha.out_proj.weight.copy_(layer.w_o.weight)
        if has_bias:
            mha.in_proj_bias.copy_(torch.cat([layer.w_q.bias, layer.w_k.bias, layer.w_v.bias]))
            mha.out_proj.bias.copy_(layer.w_o.bias)
    mha.train(layer.training)
    return mha


# ---- shapes, step by step --------------------------------------------------------------------

def trace(layer: MultiHeadSelfAttention, x: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """Run ``layer``'s forward pass (no mask) one step at a time; return (step, tensor) pairs.

    The last tensor is the layer's output (the tests check it equals ``layer(x)``).
    """
    if not isinstance(layer, MultiHeadSelfAttention):
        raise TypeError(f"layer must be a MultiHeadSelfAttention, got {type(layer).__name__}")
    layer.check_inputs(x)
    batch, seq_len, _ = x.shape
    h, d_k = layer.n_heads, layer.d_k
    steps = [("x", x)]
    q = layer.w_q(x)
    steps.append(("q = w_q(x)", q))
    q = q.view(batch, seq_len, h, d_k)
    steps.append(("q.view(batch, seq, heads, d_k)", q))
    q = q.transpose(1, 2)
    steps.append(("q.transpose(1, 2)", q))
    k = layer.split_heads(layer.w_k(x))
    v = layer.split_heads(layer.w_v(x))
    steps.append((i18n.tr("ch04.trace_kv"), k))  # the reader's words; the rest is code
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    steps.append(("scores = q @ k.transpose(-2, -1) / sqrt(d_k)", scores))
    weights = layer.dropout(torch.softmax(scores, dim=-1))
    steps.append(("weights = softmax(scores, dim=-1)", weights))
    context = weights @ v
    steps.append(("context = weights @ v", context))
    context = context.transpose(1, 2)
    steps.append(("context.transpose(1, 2)", context))
    context = context.contiguous().view(batch, seq_len, layer.d_model)
    steps.append(("context.contiguous().view(batch, seq, d_model)", context))
    steps.append(("output = w_o(context)", layer.w_o(context)))
    return steps


def shape_trace(batch: int = 2, seq: int = 4, d_model: int = 8, n_heads: int = 2,
                *, seed: int = 42) -> list[tuple[str, tuple[int, ...]]]:
    """(step, shape) for each step of the forward pass, for a seeded random layer and input."""
    batch = validate.integer("batch", batch, low=1)
    seq = validate.integer("seq", seq, low=1)
    seed = validate.integer("seed", seed, low=0)
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layer = MultiHeadSelfAttention(d_model, n_heads)
    x = torch.randn(batch, seq, layer.d_model, generator=gen)
    with torch.no_grad():
        return [(name, tuple(t.shape)) for name, t in trace(layer, x)]
