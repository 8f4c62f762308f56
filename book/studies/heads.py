"""How many heads (chapter 6): one d_model cut into 1, 2, 4, … heads, measured.

With ``d_model`` fixed, ``n_heads`` heads each get ``d_k = d_model // n_heads`` dimensions; the
parameter count does not change (:func:`attention_parameters`). :func:`sweep` trains one
:class:`book.toy.model.TinyEncoder` per head count on the takeout-order task (same data, same
seed, same steps) and records held-out accuracy, loss and wall time. On a trained model,
:func:`similarity` measures how alike the heads of a layer attend (Jensen–Shannon divergence
between their attention rows, or cosine similarity of their maps) over a set of orders, and
:func:`ablation` zeroes each head in turn and measures what the model loses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from book.ideas.mha import MultiHeadSelfAttention
from book.kit import memo, validate
from book.kit.config import Config
from book.kit.progress import bar as progress_bar
from book.toy import orders as orders_mod
from book.toy import orders_example, probe, train
from book.toy.fit import History, fit
from book.toy.model import TinyEncoder, check_encoder, eval_mode
from book.toy.orders import Order


@dataclass(frozen=True, eq=False)   # eq: Config compares like a dict
class HeadSettings(Config):
    """The chapter's sweep: small and short enough to train five models on a page."""

    d_model: int = 32
    n_layers: int = 2
    steps: int = 120
    batch_size: int = 32
    lr: float = 1e-2


SETTINGS = HeadSettings()
HEAD_COUNTS = (1, 2, 4, 8, 16)
TEST_ORDERS = 400      # held-out orders scored (of the 1209)
METRICS = ("js", "cosine")


def attention_parameters(d_model: int, n_heads: int) -> int:
    """Number of parameters of one :class:`book.ideas.mha.MultiHeadSelfAttention` layer:
    four d_model × d_model matrices and their biases, whatever the number of heads."""
    layer = MultiHeadSelfAttention(validate.integer("d_model", d_model, low=1),
                                   validate.integer("n_heads", n_heads, low=1))
    return sum(p.numel() for p in layer.parameters())


@dataclass
class HeadRun:
    """One trained model of :func:`sweep`: its head count, d_k, parameter count, the model,
    held-out ``accuracy`` and ``loss`` and the training ``wall_time`` in seconds."""

    n_heads: int
    d_k: int
    parameters: int
    model: TinyEncoder
    history: History
    accuracy: float
    loss: float
    wall_time: float

    @property
    def seconds_per_step(self) -> float:
        return self.wall_time / max(1, self.history.steps)


def train_heads(n_heads: int, *, d_model: int = SETTINGS.d_model,
                n_layers: int = SETTINGS.n_layers, steps: int = SETTINGS.steps,
                lr: float = SETTINGS.lr, data=None, seed: int = 0, threads: int | None = 1,
                progress: bool = False) -> HeadRun:
    """Train one :class:`~book.toy.model.TinyEncoder` with ``n_heads`` heads (everything else as
    in :data:`SETTINGS`) and score it on the first :data:`TEST_ORDERS` held-out orders."""
    d_k = validate.head_split(d_model, n_heads)
    train_orders, test_orders = train.chapter_data(data, TEST_ORDERS)
    model = TinyEncoder(d_model=d_model, n_heads=n_heads, n_layers=n_layers, seed=seed)
    # scored once, below (fit would score test_orders too, and count it in the wall time)
    history = fit(model, train_orders, None, steps=steps,
                        batch_size=SETTINGS.batch_size, lr=lr, seed=seed, threads=threads,
                        progress=progress)
    scores = probe.evaluate(model, test_orders)
    return HeadRun(n_heads=n_heads, d_k=d_k,
                   parameters=sum(p.numel() for p in model.parameters()), model=model,
                   history=history, accuracy=scores["accuracy"], loss=scores["loss"],
                   wall_time=history.wall_time)


def sweep(head_counts: Sequence[int] = HEAD_COUNTS, *, data=None, progress: bool = False,
          **kwargs) -> dict[int, HeadRun]:
    """:func:`train_heads` for each head count (same data, seed and steps): {n_heads: run}.
    Keyword arguments (``d_model``, ``steps``, ``seed``, ``threads`` …) go to each call."""
    counts = [validate.integer("n_heads", h, low=1)
              for h in validate.listed("head_counts", head_counts, "(1, 2, 4, 8)")]
    if not counts:
        raise ValueError("head_counts is empty; pass e.g. (1, 2, 4, 8)")
    validate.boolean("progress", progress)
    data = train.chapter_data(data, TEST_ORDERS)
    out = {}
    bar = _bar(len(counts), progress)
    for h in counts:
        bar.set_description(f"{h} head{'s' if h > 1 else ''}")
        out[h] = train_heads(h, data=data, **kwargs)
        bar.update(1)
    bar.close()
    return out


def _bar(total: int, progress: bool):
    return progress_bar(total, show=progress, leave=True)


# ---- how alike are the heads? -----------------------------------------------------------------

def js_divergence(p, q) -> np.ndarray:
    """Jensen–Shannon divergence (nats) between distributions along the last axis: 0 when
    they are equal, ln 2 ≈ 0.693 when they share no support. Symmetric and always finite."""
    p = torch.as_tensor(_distribution("p", p))
    q = torch.as_tensor(_distribution("q", q))
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {tuple(p.shape)} and "
                         f"{tuple(q.shape)}")
    return _js(p, q).numpy()


def _distribution(name: str, p) -> np.ndarray:
    p = validate.array(name, p)
    if np.any(p < 0) or not np.allclose(p.sum(-1), 1.0, atol=1e-6):
        raise ValueError(f"{name} must hold probability distributions along its last axis "
                         "(non-negative, each summing to 1); pass softmax output or "
                         f"{name} / {name}.sum(-1, keepdims=True)")
    return p


def _entropy(p: torch.Tensor) -> torch.Tensor:
    return -torch.special.xlogy(p, p).sum(-1)


def _js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    # JS(p, q) = H((p + q) / 2) - (H(p) + H(q)) / 2, with H the entropy (0 log 0 = 0)
    return _entropy((p + q) / 2) - (_entropy(p) + _entropy(q)) / 2


def pairwise(maps, metric: str = "js") -> np.ndarray:
    """(H, H) similarity of the heads of ONE layer on one order: ``maps`` is (H, n, n), rows
    = queries. "js": mean Jensen–Shannon divergence between the heads' rows (0 = identical);
    "cosine": cosine similarity of the flattened maps (1 = identical)."""
    validate.choice("metric", metric, METRICS)
    w = validate.array("maps", maps, ndim=3)
    if w.shape[1] != w.shape[2]:
        raise ValueError(f"maps must be (heads, n, n) with rows = queries, got {w.shape}; "
                         "take one layer of book.toy.probe.attention_maps(model, order)")
    w = _distribution("maps", w)
    t = torch.as_tensor(w)
    if metric == "js":
        return _js(t[:, None], t[None, :]).mean(-1).numpy()
    flat = t.reshape(t.shape[0], -1)
    unit = flat / flat.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return (unit @ unit.T).numpy()


def _by_length(orders: list[Order]) -> list[Order]:
    return sorted(orders, key=len)


@torch.no_grad()
def similarity(model: TinyEncoder, orders: Sequence[Order],
               metric: str = "js") -> np.ndarray:
    """(n_layers, H, H) head-to-head similarity averaged over ``orders``: for "js", the mean
    over every real query of every order of the JS divergence between two heads' attention
    rows; for "cosine", the mean over orders of the cosine of two heads' maps (real rows)."""
    validate.choice("metric", metric, METRICS)
    model = check_encoder(model)
    orders = orders_mod.as_orders("orders", orders)
    n_layers, n_heads = model.n_layers, model.n_heads
    total = torch.zeros(n_layers, n_heads, n_heads, dtype=torch.float64)
    count = 0
    with eval_mode(model):
        for batch in orders_mod.batches(_by_length(orders), 64):
            _, maps = model(batch.ids, batch.padding_mask, need_weights=True)
            real = batch.padding_mask.double()                    # (B, n): real queries
            for layer, w in enumerate(maps):                      # w: (B, H, n, n)
                w = w.double() * real[:, None, :, None]           # padded query rows -> 0
                if metric == "js":
                    own = _entropy(w)                             # (B, H, n)
                    for a in range(n_heads - 1):
                        mixed = _entropy((w[:, a:a + 1] + w[:, a + 1:]) / 2)
                        js = mixed - (own[:, a:a + 1] + own[:, a + 1:]) / 2
                        pair = (js * real[:, None, :]).sum(dim=(0, 2))
                        total[layer, a, a + 1:] += pair
                        total[layer, a + 1:, a] += pair
                else:
                    flat = w.reshape(w.shape[0], n_heads, -1)
                    unit = flat / flat.norm(dim=-1, keepdim=True).clamp_min(1e-12)
                    total[layer] += torch.einsum("bhx,bgx->hg", unit, unit)
            count += int(real.sum()) if metric == "js" else len(batch.ids)
    return (total / count).numpy()


@memo.shared
def redundancy(model: TinyEncoder, orders: Sequence[Order],
               metric: str = "js") -> np.ndarray:
    """Mean over all pairs of different heads of :func:`similarity`, per layer: (n_layers,).
    NaN for a one-head model (there is no pair)."""
    sim = similarity(model, orders, metric)
    n = sim.shape[-1]
    if n < 2:
        return np.full(sim.shape[0], math.nan)
    off = ~np.eye(n, dtype=bool)
    return np.array([s[off].mean() for s in sim])


@memo.shared
def ablation(model: TinyEncoder, orders: Sequence[Order]) -> dict:
    """Zero each head in turn (:func:`book.toy.probe.ablation_scores`) and score ``orders``:
    ``{"accuracy", "loss"}`` (n_layers, n_heads) arrays with that head removed, the intact
    model's ``base_accuracy`` and ``base_loss``, and ``drop`` = base − accuracy in points."""
    model = check_encoder(model)
    orders = _by_length(orders_mod.as_orders("orders", orders))  # less padding, same scores
    scores = probe.ablation_scores(model, orders, batch_size=64)
    base = scores["base"]
    return {"accuracy": scores["accuracy"], "loss": scores["loss"],
            "base_accuracy": base["accuracy"], "base_loss": base["loss"],
            "drop": 100 * (base["accuracy"] - scores["accuracy"])}


# --- used by the explorers of the chapter modules ----------------------------------------

MAX_MAP_HEADS = 16  # the head-maps explorer draws at most this many heads (a 4 × 4 grid)


def head_maps_data(model, order, layer: int) -> dict:
    """Every head's attention map of ``layer`` for one order (text, tokens or an Order):
    ``maps`` (H, n, n), unique token ``labels`` (``glossed``: the same with English glosses),
    and ``js``, the mean Jensen–Shannon
    divergence between the heads' rows on this order (NaN for one head)."""

    model = check_encoder(model)
    order = probe.as_order(order)
    layer = validate.integer("layer", layer, low=0, high=model.n_layers - 1)
    if model.n_heads > MAX_MAP_HEADS:
        raise ValueError(f"the grid shows at most {MAX_MAP_HEADS} heads; this model has "
                         f"{model.n_heads}")
    maps = probe.attention_maps(model, order)[layer]
    n = model.n_heads
    js = pairwise(maps, "js")[~np.eye(n, dtype=bool)].mean() if n > 1 else float("nan")
    labels = orders_example.labels(order.tokens, order.tokens, short=True)
    glossed = orders_example.labels(order.tokens, order.glosses)
    return {"maps": maps, "labels": labels, "glossed": glossed, "n_heads": n, "layer": layer,
            "js": float(js), "text": order.text}
