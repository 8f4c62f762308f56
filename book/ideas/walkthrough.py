"""Multi-head self-attention by hand, on three tokens: 我 (I) 爱 (love) 你 (you).

The set-up of the walkthrough chapter: ``X`` is 3 × 4 (three tokens, d_model = 4), two heads,
each with its own W_Q, W_K, W_V of shape 4 × 3 (d_k = 3), so the heads' outputs glued side by
side are 3 × 6 — wider than d_model, which is fine: W_O (6 × 4) maps them back to 4 so that the
residual connection ``X + output`` can be added, then LayerNorm normalises each token's row.

* :func:`example` — small seeded numbers with one decimal, easy to follow by hand;
* :func:`walkthrough` — every intermediate, in order, as ``{step name: numpy array}``;
* :func:`walkthrough_torch` — the same steps with torch operations (same numbers);
* :func:`general_mha_loop` — a plain loop-over-scalars reference used to test the two above;
* :func:`heads_from_module` — the per-head matrices hidden inside a
  :class:`book.ideas.mha.MultiHeadSelfAttention`, to show it computes exactly this.

Weights act on the right, as in the article: ``Q_h = X @ W_Q_h``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from book.ideas import attention, masks
from book.ideas.mha import MultiHeadSelfAttention
from book.kit import i18n, validate

TOKENS = ("我", "爱", "你")
GLOSSES = ("I", "love", "you")
EPS = 1e-5  # LayerNorm's epsilon, PyTorch's default


@dataclass(frozen=True)
class Example:
    """Inputs of the walkthrough: ``walkthrough(ex.X, ex.heads, ex.W_O)``."""

    tokens: tuple[str, ...]
    glosses: tuple[str, ...]
    X: np.ndarray  # (n_tokens, d_model)
    heads: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]  # (W_Q, W_K, W_V) per head
    W_O: np.ndarray  # (n_heads * d_k, d_model)


def _one_decimal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    # integers -10..10 divided by 10: numbers like -0.7 or 0.3 (+ 0.0 turns -0.0 into 0.0)
    return rng.integers(-10, 11, size=shape) / 10 + 0.0


def example(seed: int = 0, *, n_heads: int = 2, d_k: int = 3) -> Example:
    """The article's set-up with seeded numbers in [-1, 1], one decimal each.

    3 tokens (我 爱 你), d_model = 4, ``n_heads`` heads (default 2) of width ``d_k`` (default 3).
    """
    seed = validate.integer("seed", seed, low=0)
    n_heads = validate.integer("n_heads", n_heads, low=1, high=8)
    d_k = validate.integer("d_k", d_k, low=1, high=8)
    rng = np.random.default_rng(seed)
    d_model = 4
    X = _one_decimal(rng, (len(TOKENS), d_model))
    heads = tuple(tuple(_one_decimal(rng, (d_model, d_k)) for _ in "QKV") for _ in range(n_heads))
    W_O = _one_decimal(rng, (n_heads * d_k, d_model))
    return Example(TOKENS, GLOSSES, X, heads, W_O)


def _check(X, heads, W_O, mask):
    """Validate the walkthrough's inputs; return them as float64 numpy arrays (mask: bool)."""
    X = validate.array("X", X, ndim=2)
    n, d_model = X.shape
    if isinstance(heads, (str, bytes)) or not isinstance(heads, Sequence) or len(heads) == 0:
        raise TypeError("heads must be a non-empty list with one (W_Q, W_K, W_V) triple per "
                        f"head, got {type(heads).__name__}")
    checked = []
    for h, triple in enumerate(heads, start=1):
        if isinstance(triple, (str, bytes)) or not isinstance(triple, Sequence) \
                or len(triple) != 3:
            raise TypeError(f"head {h} must be a (W_Q, W_K, W_V) triple of matrices, got "
                            f"{type(triple).__name__}"
                            + (f" of length {len(triple)}" if hasattr(triple, "__len__") else ""))
        w_q, w_k, w_v = (validate.array(f"W_{name}{h}", w, ndim=2)
                         for name, w in zip("QKV", triple, strict=True))
        for name, w in zip("QKV", (w_q, w_k, w_v), strict=True):
            if w.shape[0] != d_model:
                raise ValueError(f"W_{name}{h} has {w.shape[0]} rows but X has d_model={d_model} "
                                 f"columns; it must be (d_model, width) = ({d_model}, ...) so "
                                 f"that X @ W_{name}{h} works")
        if w_q.shape != w_k.shape:
            raise ValueError(f"W_Q{h} is {w_q.shape} but W_K{h} is {w_k.shape}; queries and keys "
                             "must have the same width d_k to be compared by a dot product")
        checked.append((w_q, w_k, w_v))
    width = sum(w_v.shape[1] for _, _, w_v in checked)
    W_O = validate.array("W_O", W_O, ndim=2)
    if W_O.shape != (width, d_model):
        raise ValueError(f"W_O must be (total value width, d_model) = ({width}, {d_model}): it "
                         f"maps the {width} concatenated head columns back to d_model so the "
                         f"residual X + output can be added; got {W_O.shape}")
    if mask is not None:
        m = masks.as_mask(mask, ndim=2)
        if tuple(m.shape) != (n, n):
            raise ValueError(f"mask must be (n_tokens, n_tokens) = ({n}, {n}), got "
                             f"{tuple(m.shape)}")
        if len(masks.fully_masked_rows(m)):
            raise ValueError("a query row of the mask is all False: that token may attend to "
                             "nothing (softmax would give NaN); allow at least one key per "
                             "query, e.g. itself")
        mask = m.cpu().numpy()
    return X, checked, W_O, mask


def walkthrough(X, heads, W_O, mask=None, *, eps: float = EPS) -> dict[str, np.ndarray]:
    """Every intermediate of multi-head self-attention + residual + LayerNorm, in order (numpy).

    ``X``: (n, d_model). ``heads``: one ``(W_Q, W_K, W_V)`` per head, each (d_model, d_k)
    (W_V may be (d_model, d_v)). ``W_O``: (n_heads·d_v, d_model). ``mask``: optional (n, n)
    boolean, True = may attend. Step names (heads counted from 1), see :func:`describe`:
    ``Q1 K1 V1 S1 S1_scaled [S1_masked] A1 Z1 … Z output residual layer_norm``.
    """
    X, heads, W_O, mask = _check(X, heads, W_O, mask)
    eps = validate.real("eps", eps, low=0.0)
    steps: dict[str, np.ndarray] = {}
    head_outputs = []
    for h, (W_Q, W_K, W_V) in enumerate(heads, start=1):
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        steps[f"Q{h}"], steps[f"K{h}"], steps[f"V{h}"] = Q, K, V
        S = Q @ K.T  # S[i, j]: how well query i matches key j
        steps[f"S{h}"] = S
        d_k = W_Q.shape[1]
        S_scaled = S / math.sqrt(d_k)
        steps[f"S{h}_scaled"] = S_scaled
        if mask is None:
            A = attention.softmax(S_scaled, axis=-1)  # each row sums to 1
        else:
            S_masked = np.where(mask, S_scaled, -np.inf)
            steps[f"S{h}_masked"] = S_masked
            A = attention.softmax(S_masked, axis=-1)
        steps[f"A{h}"] = A
        Z = A @ V  # row i: the values, averaged with token i's weights
        steps[f"Z{h}"] = Z
        head_outputs.append(Z)
    steps["Z"] = np.concatenate(head_outputs, axis=1)  # heads side by side
    steps["output"] = steps["Z"] @ W_O  # back to d_model columns
    steps["residual"] = X + steps["output"]
    r = steps["residual"]
    mean = r.mean(axis=-1, keepdims=True)  # over d_model: each token on its own
    var = r.var(axis=-1, keepdims=True)  # population variance, as LayerNorm uses
    validate.normalisable(var, eps, what="token")  # eps=0 on a constant row: 0/0
    steps["layer_norm"] = (r - mean) / np.sqrt(var + eps)
    return steps


def walkthrough_torch(X, heads, W_O, mask=None, *, eps: float = EPS) -> dict[str, torch.Tensor]:
    """:func:`walkthrough` with torch operations (float64): same keys, same numbers."""
    X, heads, W_O, mask = _check(X, heads, W_O, mask)
    eps = validate.real("eps", eps, low=0.0)
    x = torch.from_numpy(X)
    allowed = None if mask is None else torch.from_numpy(mask)
    steps: dict[str, torch.Tensor] = {}
    for h, triple in enumerate(heads, start=1):
        W_Q, W_K, W_V = (torch.from_numpy(w) for w in triple)
        Q, K, V = torch.matmul(x, W_Q), torch.matmul(x, W_K), torch.matmul(x, W_V)
        steps[f"Q{h}"], steps[f"K{h}"], steps[f"V{h}"] = Q, K, V
        steps[f"S{h}"] = torch.matmul(Q, K.transpose(0, 1))
        steps[f"S{h}_scaled"] = steps[f"S{h}"] / math.sqrt(W_Q.shape[1])
        scores = steps[f"S{h}_scaled"]
        if allowed is not None:
            scores = steps[f"S{h}_masked"] = scores.masked_fill(~allowed, float("-inf"))
        steps[f"A{h}"] = torch.softmax(scores, dim=-1)
        steps[f"Z{h}"] = torch.matmul(steps[f"A{h}"], V)
    steps["Z"] = torch.cat([steps[f"Z{h}"] for h in range(1, len(heads) + 1)], dim=1)
    steps["output"] = torch.matmul(steps["Z"], torch.from_numpy(W_O))
    steps["residual"] = x + steps["output"]
    if eps == 0:   # a constant row would be 0/0
        validate.normalisable(steps["residual"].var(-1, unbiased=False), eps, what="token")
    steps["layer_norm"] = F.layer_norm(steps["residual"], (x.shape[1],), eps=eps)
    return steps


def general_mha_loop(X, heads, W_O, mask=None, *, eps: float = EPS) -> dict[str, np.ndarray]:
    """Reference implementation with plain Python loops over scalars (slow, obviously right).

    Returns ``{"Z": concat of heads, "output": Z @ W_O, "layer_norm": LayerNorm(X + output)}``.
    """
    X, heads, W_O, mask = _check(X, heads, W_O, mask)
    eps = validate.real("eps", eps, low=0.0)
    n, d_model = X.shape

    def matmul(a, b):
        return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
                for i in range(len(a))]

    x = X.tolist()
    Z = [[] for _ in range(n)]
    for W_Q, W_K, W_V in heads:
        q, k, v = matmul(x, W_Q.tolist()), matmul(x, W_K.tolist()), matmul(x, W_V.tolist())
        d_k = W_Q.shape[1]
        for i in range(n):
            keys = [j for j in range(n) if mask is None or mask[i, j]]
            scores = {j: sum(q[i][t] * k[j][t] for t in range(d_k)) / math.sqrt(d_k)
                      for j in keys}
            top = max(scores.values())
            exps = {j: math.exp(s - top) for j, s in scores.items()}
            total = sum(exps.values())
            for c in range(len(v[0])):
                Z[i].append(sum(exps[j] / total * v[j][c] for j in keys))
    out = matmul(Z, W_O.tolist())
    rows = [[x[i][c] + out[i][c] for c in range(d_model)] for i in range(n)]
    means = [sum(row) / d_model for row in rows]
    variances = [sum((r - mean) ** 2 for r in row) / d_model
                 for row, mean in zip(rows, means, strict=True)]
    validate.normalisable(variances, eps, what="token")  # eps=0 on a constant row: 0/0
    normed = [[(r - mean) / math.sqrt(var + eps) for r in row]
              for row, mean, var in zip(rows, means, variances, strict=True)]
    return {"Z": np.array(Z), "output": np.array(out), "layer_norm": np.array(normed)}


_STEP_IDS = {"Q": "ch03.step_Q", "K": "ch03.step_K", "V": "ch03.step_V", "S": "ch03.step_S",
             "S_scaled": "ch03.step_S_scaled", "S_masked": "ch03.step_S_masked",
             "A": "ch03.step_A", "Z": "ch03.step_Z_head"}
_GLOBAL = {"Z": "ch03.step_Z", "output": "ch03.step_output", "residual": "ch03.step_residual",
           "layer_norm": "ch03.step_layer_norm"}  # steps after the heads: string-table ids


def describe(step: str) -> str:
    """One line saying what the step called ``step`` (a key of :func:`walkthrough`) computes."""
    if not isinstance(step, str):
        raise TypeError(f"step must be a step name such as 'Q1', got {type(step).__name__}")
    if step in _GLOBAL:
        return i18n.tr(_GLOBAL[step])
    match = re.fullmatch(r"([QKVSAZ])(\d+)(_scaled|_masked)?", step)
    if match is None:
        raise ValueError(f"unknown step {step!r}; steps are Q1 K1 V1 S1 S1_scaled S1_masked A1 "
                         f"Z1 (any head number) and {' '.join(_GLOBAL)}")
    letter, h, suffix = match.groups()
    if suffix and letter != "S":
        raise ValueError(f"unknown step {step!r}: only S (scores) has _scaled/_masked variants")
    return i18n.tr(_STEP_IDS[letter + (suffix or "")], h=h)


def heads_from_module(layer) -> tuple[tuple[tuple[np.ndarray, ...], ...], np.ndarray]:
    """``(heads, W_O)`` of a bias-free :class:`book.ideas.mha.MultiHeadSelfAttention`, as numpy.

    ``nn.Linear`` computes ``x @ weight.T``, so W_Q = ``w_q.weight.T``; head h owns columns
    h·d_k … (h+1)·d_k − 1. Then ``walkthrough(X, *heads_from_module(layer))["output"]`` equals
    ``layer(X[None])[0]``.
    """
    if not isinstance(layer, MultiHeadSelfAttention):
        raise TypeError(f"layer must be a MultiHeadSelfAttention, got {type(layer).__name__}")
    linears = (layer.w_q, layer.w_k, layer.w_v, layer.w_o)
    if any(lin.bias is not None and bool(lin.bias.detach().ne(0).any()) for lin in linears):
        raise ValueError("the layer has non-zero biases, which the walkthrough leaves out; build "
                         "it with bias=False (or zero the biases) to compare")
    d_k = layer.d_k
    W = [lin.weight.detach().cpu().double().numpy().T for lin in linears[:3]]
    heads = tuple(tuple(w[:, h * d_k:(h + 1) * d_k].copy() for w in W)
                  for h in range(layer.n_heads))
    W_O = layer.w_o.weight.detach().cpu().double().numpy().T.copy()
    return heads, W_O


# --- used by the explorers of the chapter modules ----------------------------------------

WALKTHROUGH_MATRICES = ("X", "W_Q1", "W_K1", "W_V1", "W_Q2", "W_K2", "W_V2", "W_O")


def _checked(ex):
    ex = example() if ex is None else ex
    if not isinstance(ex, Example):
        raise TypeError(f"ex must be a book.ideas.walkthrough.Example, got {type(ex).__name__}; "
                        "build one with book.ideas.walkthrough.example()")
    return ex


def token_labels(ex=None) -> list[str]:
    """Row labels "我 (I)" … in English; the Chinese edition reads the tokens alone."""
    ex = _checked(ex)
    if i18n.language() == "zh":
        return list(ex.tokens)
    return [f"{t} ({g})" for t, g in zip(ex.tokens, ex.glosses, strict=True)]


def key_labels(ex=None) -> list[str]:
    """Column labels of the score and weight matrices: "key 我" …"""
    return [i18n.tr("ch03.key_label", token=t) for t in _checked(ex).tokens]


def walkthrough_frames(ex=None) -> list[dict]:
    """Every step of the 3-token, 2-head walkthrough as a labelled matrix, in order.

    Each frame: ``name``, ``description``, ``values`` and unique ``rows`` / ``cols`` labels.
    ``ex`` is a :class:`book.ideas.walkthrough.Example` (default: ``example()``).
    """

    ex = example() if ex is None else ex
    if not isinstance(ex, Example):
        raise TypeError(f"ex must be a book.ideas.walkthrough.Example, got {type(ex).__name__}; "
                        "build one with book.ideas.walkthrough.example()")
    steps = walkthrough(ex.X, ex.heads, ex.W_O)
    tokens = token_labels(ex)
    d_model = ex.X.shape[1]
    features = [f"d{j + 1}" for j in range(d_model)]
    frames = [{"name": "X", "description": i18n.tr("ch03.step_X"),
               "values": ex.X, "rows": tokens, "cols": features}]
    for name, values in steps.items():
        if name in ("Z", "output", "residual", "layer_norm"):
            if name == "Z":
                widths = [h[2].shape[1] for h in ex.heads]
                cols = [f"h{h + 1}·{j + 1}" for h, w in enumerate(widths) for j in range(w)]
            else:
                cols = features
        elif name[0] in "SA":
            cols = key_labels(ex)
        else:
            cols = [f"{name[0]}{j + 1}" for j in range(values.shape[1])]
        frames.append({"name": name, "description": describe(name), "values": values,
                       "rows": tokens, "cols": cols})
    return frames


def edited_example(matrix: str, row: int, col: int, value: float, ex=None):
    """A copy of the walkthrough example with one entry replaced; row/col are clamped to the
    chosen matrix's shape (X is 3×4, each W 4×3, W_O 6×4), so any slider position is valid."""

    ex = example() if ex is None else ex
    validate.choice("matrix", matrix, WALKTHROUGH_MATRICES)
    row = validate.integer("row", row, low=0)
    col = validate.integer("col", col, low=0)
    value = validate.real("value", value, low=-10.0, high=10.0)
    X, heads, W_O = ex.X.copy(), [[w.copy() for w in h] for h in ex.heads], ex.W_O.copy()
    if matrix == "X":
        target = X
    elif matrix == "W_O":
        target = W_O
    else:
        target = heads[int(matrix[-1]) - 1]["QKV".index(matrix[2])]
    r, c = min(row, target.shape[0] - 1), min(col, target.shape[1] - 1)
    target[r, c] = value
    edited = dataclasses.replace(ex, X=X, heads=tuple(tuple(h) for h in heads), W_O=W_O)
    return edited, (r, c)
