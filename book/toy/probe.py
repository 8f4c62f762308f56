"""Opening a trained toy transformer: scores, predictions, attention maps, head ablation.

Every function runs the model through :func:`book.toy.model.eval_mode` (no dropout, no gradients,
training mode restored afterwards). :func:`evaluate` scores the ingredients and dishes of a set
of orders; :func:`predict` / :func:`label_argmax` turn logits into labels (an ingredient takes
the best ingredient label, a dish the best count); :func:`attention_maps` and
:func:`attention_entropy` look at the weights; :func:`ablated` zeroes one head and
:func:`ablation_scores` measures every head zeroed in turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from book.kit import memo, validate
from book.toy import orders as orders_mod
from book.toy.model import TinyEncoder, check_encoder, eval_mode
from book.toy.orders import IGNORE_INDEX, LABELS, NONE, Order

N_INGREDIENT = len(orders_mod.INGREDIENT_LABELS)
#: what :func:`evaluate` returns, and :func:`ablation_scores` measures per head
SCORES = ("loss", "accuracy", "ingredient_accuracy", "dish_accuracy")


@memo.shared
def evaluate(model: TinyEncoder, orders: Sequence[Order], batch_size: int = 512) -> dict:
    """Loss and accuracy over the scored tokens (ingredients and dishes) of ``orders``:
    ``{"loss", "accuracy", "ingredient_accuracy", "dish_accuracy", "tokens"}``."""
    model = check_encoder(model)
    orders = orders_mod.as_orders("orders", orders)
    batch_size = validate.integer("batch_size", batch_size, low=1)
    loss_sum, hits, total = 0.0, {"ingredient": 0, "dish": 0}, {"ingredient": 0, "dish": 0}
    with eval_mode(model):
        for batch in orders_mod.batches(orders, batch_size):
            logits = model(batch.ids, batch.padding_mask)
            scored = batch.labels != IGNORE_INDEX
            loss_sum += float(F.cross_entropy(logits[scored], batch.labels[scored],
                                              reduction="sum"))
            right = logits.argmax(-1) == batch.labels
            is_ing = scored & (batch.labels < N_INGREDIENT)
            is_dish = scored & (batch.labels >= N_INGREDIENT)
            hits["ingredient"] += int((right & is_ing).sum())
            hits["dish"] += int((right & is_dish).sum())
            total["ingredient"] += int(is_ing.sum())
            total["dish"] += int(is_dish.sum())
    n = total["ingredient"] + total["dish"]
    if n == 0:
        raise ValueError("orders has no ingredient or dish to score; pass orders from "
                         "book.toy.orders.generate")
    return {"loss": loss_sum / n, "accuracy": (hits["ingredient"] + hits["dish"]) / n,
            "ingredient_accuracy": hits["ingredient"] / max(1, total["ingredient"]),
            "dish_accuracy": hits["dish"] / max(1, total["dish"]), "tokens": n}


def accuracy(model: TinyEncoder, orders: Sequence[Order]) -> float:
    """Share of the scored tokens (ingredients and dishes) of ``orders`` labelled right."""
    return evaluate(model, orders)["accuracy"]


def as_order(order) -> Order:
    """``order`` as an :class:`Order`: an Order, an order string or a list of tokens."""
    if isinstance(order, Order):
        return order
    if isinstance(order, str):
        return Order.from_text(order)
    if isinstance(order, Sequence) and order and all(isinstance(t, str) for t in order):
        return Order.from_tokens(order)
    raise TypeError(f"order must be an Order, an order string such as '一碗牛肉面，不要香菜' or a "
                    f"non-empty list of tokens, got {type(order).__name__}")


def label_argmax(logits: torch.Tensor, categories: Sequence[str]) -> list[str]:
    """Labels of one order from its logits (n_tokens, n_labels): an ingredient takes the best
    of the ingredient labels, a dish the best of the counts, every other token
    :data:`book.toy.orders.NONE`."""
    logits = validate.float_tensor("logits", logits, ndim=2, shape_hint="(n_tokens, n_labels)")
    if logits.shape != (len(categories), len(LABELS)):
        raise ValueError(f"logits must be (n_tokens, n_labels) = ({len(categories)}, "
                         f"{len(LABELS)}), got {tuple(logits.shape)}")
    ing = logits[:, :N_INGREDIENT].argmax(-1).tolist()
    dish = (logits[:, N_INGREDIENT:].argmax(-1) + N_INGREDIENT).tolist()
    return [LABELS[ing[i]] if c == "ingredient" else LABELS[dish[i]] if c == "dish" else NONE
            for i, c in enumerate(categories)]


def predict(model: TinyEncoder, order) -> list[str]:
    """The model's label for each token of one order (an :class:`Order`, text or tokens);
    tokens that are not ingredients or dishes get :data:`book.toy.orders.NONE`."""
    model = check_encoder(model)
    order = as_order(order)
    with eval_mode(model):
        logits = model(torch.tensor([order.ids]), torch.ones(1, len(order), dtype=torch.bool))
    return label_argmax(logits[0], order.categories)


def attention_maps(model: TinyEncoder, order) -> np.ndarray:
    """Attention weights for one order: (n_layers, n_heads, n_tokens, n_tokens), rows =
    queries, columns = keys, every row sums to 1 (eval mode, no dropout)."""
    model = check_encoder(model)
    order = as_order(order)
    with eval_mode(model):
        _, maps = model(torch.tensor([order.ids]), None, need_weights=True)
    return torch.stack([m[0] for m in maps]).numpy()


def attention_entropy(model: TinyEncoder, orders: Sequence[Order], *,
                      normalize: bool = False) -> np.ndarray:
    """Mean entropy (nats) of the attention rows of each layer and head: (n_layers, n_heads).

    Averaged over every real query of ``orders``, over real keys only. Low = sharp (a head
    that looks at one word), high = spread. ``normalize=True`` divides each row's entropy by
    log(number of real keys), its largest possible value, so 1 means uniform.
    """
    model = check_encoder(model)
    orders = orders_mod.as_orders("orders", orders)
    validate.boolean("normalize", normalize)
    total = torch.zeros(model.n_layers, model.n_heads, dtype=torch.float64)
    count = 0
    with eval_mode(model):
        for batch in orders_mod.batches(orders, 256):
            _, maps = model(batch.ids, batch.padding_mask, need_weights=True)
            w = torch.stack(maps).double()                   # (layers, batch, heads, q, k)
            ent = -(w * torch.log(w.clamp_min(1e-30))).sum(-1)  # (layers, batch, heads, q)
            if normalize:
                n_keys = batch.padding_mask.sum(1).double()  # (batch,)
                ent = ent / torch.log(n_keys.clamp_min(2))[None, :, None, None]
            real = batch.padding_mask[None, :, None, :].double()
            total += (ent * real).sum(dim=(1, 3))
            count += int(batch.padding_mask.sum())
    return (total / count).numpy()


@contextlib.contextmanager
def ablated(model: TinyEncoder, layer: int, head: int):
    """Inside the ``with`` block, head ``head`` of layer ``layer`` contributes nothing: its
    slice of the attention output is zeroed before the output projection ``w_o``."""
    model = check_encoder(model)
    layer = validate.integer("layer", layer, low=0, high=model.n_layers - 1)
    head = validate.integer("head", head, low=0, high=model.n_heads - 1)
    attn = model.blocks[layer].attn
    lo, hi = head * attn.d_k, (head + 1) * attn.d_k

    def zero_head(module, args):
        context = args[0].clone()
        context[..., lo:hi] = 0
        return (context,)

    handle = attn.w_o.register_forward_pre_hook(zero_head)
    try:
        yield model
    finally:
        handle.remove()


def head_ablation(model: TinyEncoder, orders: Sequence[Order], layer: int, head: int) -> dict:
    """Accuracy and loss on ``orders`` with one head zeroed, next to the intact model's:
    ``{"accuracy", "loss", "base_accuracy", "base_loss", "accuracy_drop"}``."""
    base = evaluate(model, orders)
    with ablated(model, layer, head):
        cut = evaluate(model, orders)
    return {"accuracy": cut["accuracy"], "loss": cut["loss"], "base_accuracy": base["accuracy"],
            "base_loss": base["loss"], "accuracy_drop": base["accuracy"] - cut["accuracy"]}


@memo.shared
def ablation_scores(model: TinyEncoder, orders: Sequence[Order], *,
                    batch_size: int = 512) -> dict:
    """:func:`evaluate` with each head zeroed in turn (:func:`ablated`).

    Returns ``{"base": evaluate(model, orders)}`` plus, for each of :data:`SCORES`
    (``"loss"``, ``"accuracy"``, ``"ingredient_accuracy"``, ``"dish_accuracy"``), an
    (n_layers, n_heads) array: that score with the head zeroed. The cost of a head in points
    is ``100 * (result["base"][key] - result[key][layer, head])``.
    """
    model = check_encoder(model)
    orders = orders_mod.as_orders("orders", orders)
    batch_size = validate.integer("batch_size", batch_size, low=1)
    out: dict = {"base": evaluate(model, orders, batch_size)}
    for key in SCORES:
        out[key] = np.zeros((model.n_layers, model.n_heads))
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            with ablated(model, layer, head):
                cut = evaluate(model, orders, batch_size)
            for key in SCORES:
                out[key][layer, head] = cut[key]
    return out


def ablation_table(model: TinyEncoder, orders: Sequence[Order]) -> np.ndarray:
    """Accuracy with each head zeroed in turn: (n_layers, n_heads)."""
    return ablation_scores(model, orders)["accuracy"]
