"""What the heads of the trained order model attend to, measured (chapter 8).

* :func:`read_order` turns a reader's text into an :class:`~book.toy.orders.Order` the model can
  take, or raises a ``ValueError`` whose message says what to fix (unknown word — with the
  vocabulary —, empty text, too many tokens). :func:`order_maps` adds the attention maps and
  the model's predictions.
* :func:`relation_pairs` finds, in one order, the (query, keys) pairs of each relation of
  :data:`RELATIONS` from the clause structure of :mod:`book.toy.orders` (an ingredient and the
  modifier of its clause, a dish and its quantity word, a word and its clause's boundaries).
* :func:`relation_mass` measures, per layer × head over many orders, how much attention each
  relation's query puts on its keys, next to what a uniform head would put there.
* :func:`category_mass`: where the scored tokens' attention goes, by category of the key.
* :func:`specialists` names the heads that put most of their weight on a relation.
* :func:`entropy_during_training` trains a model with :func:`book.toy.fit.fit` and measures
  the attention entropy at chosen steps on the way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from book.kit import memo, validate
from book.kit.i18n import tr
from book.toy import fit as fit_mod
from book.toy import orders as orders_mod
from book.toy import orders_example
from book.toy import probe as probe_mod
from book.toy.model import check_encoder, eval_mode
from book.toy.orders import CLAUSE_END, NONE, Order

EXAMPLE = "一碗牛肉面，不要香菜，多加辣。"

#: relation → what its queries look at
RELATIONS = {
    "ingredient → its modifier": "an ingredient, looking at the modifier of its clause",
    "dish → its quantity": "a dish, looking at the quantity word of its clause",
    "modifier → its ingredients": "a modifier, looking at the ingredients of its clause",
    "quantity → its dish": "a quantity word, looking at the dish of its clause",
    "word → end of its clause": "an ingredient or dish, looking at the ， or 。 that closes "
                                "its clause",
    "word → start of its clause": "an ingredient or dish, looking at the ， that closes the "
                                  "clause before its own",
}




# ---- reading a reader's order ------------------------------------------------------------------

def read_order(text: str, max_len: int = orders_mod.MAX_LEN) -> Order:
    """A reader's order text → :class:`Order`, or a ``ValueError`` that says what to fix.

    Labels follow the rules of :func:`book.toy.orders.label` where they apply; an order the rules
    call ambiguous (two modifiers in one clause, …) still gets an :class:`Order`, with every
    label :data:`book.toy.orders.NONE`, so that its attention can be drawn anyway.
    """
    if not isinstance(text, str):
        raise TypeError(f"the order must be text (a str) such as {EXAMPLE!r}, got "
                        f"{type(text).__name__}")
    max_len = validate.integer("max_len", max_len, low=1)
    if not text.strip():
        raise ValueError(tr("ch08.empty_order", example=EXAMPLE))
    try:
        tokens = orders_mod.tokenize(text)
    except orders_mod.UnknownWord as error:   # named, with the vocabulary (glossed in English)
        raise ValueError(tr("ch08.unknown_word", word=error.word,
                            words=orders_mod.word_list())) from None
    if len(tokens) > max_len:
        raise ValueError(tr("ch08.long_order", n=len(tokens), max_len=max_len))
    try:
        labels = orders_mod.label(tokens)
    except ValueError:
        labels = [NONE] * len(tokens)
    return Order(tuple(tokens), tuple(labels))


def order_maps(model, text) -> dict:
    """Everything the live explorer draws for one order (text or :class:`Order`):
    ``{"order", "maps" (layers, heads, n, n), "predictions", "rules"}``; ``rules`` holds the
    labels by the rules of the language, or None when the rules call the order ambiguous."""
    model = check_encoder(model)
    max_len = model.config.max_len
    if not isinstance(text, (str, Order)):
        raise TypeError(f"text must be an order string such as {EXAMPLE!r} or a "
                        f"book.toy.orders.Order, got {type(text).__name__}")
    order = text if isinstance(text, Order) else read_order(text, max_len)
    if len(order) > max_len:
        raise ValueError(tr("ch08.long_order", n=len(order), max_len=max_len))
    try:
        rules = orders_mod.label(order.tokens)
    except ValueError:   # ambiguous for the rules: there is no right answer to show
        rules = None
    return {"order": order, "maps": probe_mod.attention_maps(model, order),
            "predictions": probe_mod.predict(model, order), "rules": rules}


def token_labels(order: Order, *, gloss: bool = False) -> list[str]:
    """Unique axis labels for ``order`` (repeats numbered ₁ ₂ …), optionally with glosses."""
    validate.boolean("gloss", gloss)
    if not isinstance(order, Order):
        raise TypeError(f"order must be a book.toy.orders.Order, got {type(order).__name__}")
    return orders_example.labels(order.tokens, order.glosses, short=not gloss)


# ---- relations from the clause structure -------------------------------------------------------

def relation_pairs(order: Order) -> dict[str, list[tuple[int, list[int]]]]:
    """For each relation of :data:`RELATIONS`: a list of (query index, key indices) in ``order``.

    Pairs are found from the clause structure (:func:`book.toy.orders.clauses`): a query pairs only
    with keys of its own clause, and a clause without the partner contributes nothing.
    """
    if not isinstance(order, Order):
        raise TypeError(f"order must be a book.toy.orders.Order, got {type(order).__name__}")
    toks, cats = order.tokens, order.categories
    out: dict[str, list[tuple[int, list[int]]]] = {r: [] for r in RELATIONS}
    for start, stop in orders_mod.clauses(toks):
        span = range(start, stop)

        def where(category, span=span):
            return [i for i in span if cats[i] == category]

        mods, ings = where("modifier"), where("ingredient")
        qtys, dishes = where("quantity"), where("dish")
        if mods:
            out["ingredient → its modifier"] += [(i, mods) for i in ings]
        if ings:
            out["modifier → its ingredients"] += [(m, ings) for m in mods]
        if qtys:
            out["dish → its quantity"] += [(d, qtys) for d in dishes]
        if dishes:
            out["quantity → its dish"] += [(q, dishes) for q in qtys]
        scored = sorted(ings + dishes)
        if toks[stop - 1] in CLAUSE_END:
            out["word → end of its clause"] += [(i, [stop - 1]) for i in scored]
        if start > 0:
            out["word → start of its clause"] += [(i, [start - 1]) for i in scored]
    return out


def _collated(model, orders: Sequence[Order], batch_size: int = 256):
    """Yield (chunk of orders, its padded batch) with ``model`` in :func:`eval_mode`."""
    with eval_mode(model):
        for start in range(0, len(orders), batch_size):
            chunk = orders[start:start + batch_size]
            yield chunk, orders_mod.collate(chunk)


def _batches(model, orders: Sequence[Order], batch_size: int = 256):
    """Yield (chunk of orders, weights (batch, layers, heads, n, n) float64 numpy); padding
    keys get weight 0, and the callers never select a padding query."""
    for chunk, batch in _collated(model, orders, batch_size):
        _, maps = model(batch.ids, batch.padding_mask, need_weights=True)
        yield chunk, torch.stack(maps, dim=1).double().numpy()


@memo.shared
def relation_mass(model, orders: Sequence[Order]) -> dict[str, dict]:
    """Attention mass of each relation, per layer × head, over ``orders``.

    For every (query, keys) pair of :func:`relation_pairs`: the weight the query puts on its
    keys (summed), averaged over the pairs → ``"mass"`` (layers, heads). ``"chance"`` is what a
    head that spreads its weight evenly over the order would put there (mean of
    len(keys) / n); ``"pairs"`` counts the pairs.
    """
    model = check_encoder(model)
    orders = orders_mod.as_orders("orders", orders)
    shape = (model.n_layers, model.n_heads)
    sums = {r: np.zeros(shape) for r in RELATIONS}
    chance = dict.fromkeys(RELATIONS, 0.0)
    count = dict.fromkeys(RELATIONS, 0)
    for chunk, w in _batches(model, orders):
        width = w.shape[-1]
        targets = {r: np.zeros((len(chunk), width, width)) for r in RELATIONS}  # 1 = pair
        for b, order in enumerate(chunk):
            for relation, pairs in relation_pairs(order).items():
                for q, keys in pairs:
                    targets[relation][b, q, keys] = 1.0
                    chance[relation] += len(keys) / len(order)
                    count[relation] += 1
        flat = w.transpose(1, 2, 0, 3, 4).reshape(*shape, -1)    # (layers, heads, b·n·n)
        for relation in RELATIONS:
            sums[relation] += flat @ targets[relation].reshape(-1)
    return {r: {"mass": sums[r] / max(1, count[r]), "chance": chance[r] / max(1, count[r]),
                "pairs": count[r]} for r in RELATIONS}


@memo.shared
def category_mass(model, orders: Sequence[Order],
                  queries: Sequence[str] = ("ingredient", "dish")) -> dict:
    """Where the attention of the ``queries`` tokens goes, by category of the key.

    ``{"categories", "mass" (categories, layers, heads), "chance" (categories,), "tokens"}``:
    mass = mean share of a query's weight on keys of each category; chance = the mean share
    of such keys in the order (what a head that spreads evenly would give).
    """
    model = check_encoder(model)
    orders = orders_mod.as_orders("orders", orders)
    if isinstance(queries, str):
        queries = (queries,)
    queries = [validate.choice("query category", q, orders_mod.CATEGORIES)
               for q in validate.listed("queries", queries, "('ingredient',)")]
    if not queries:
        raise ValueError("queries must name at least one category, e.g. ('ingredient',)")
    cats = list(orders_mod.CATEGORIES)
    mass = np.zeros((len(cats), model.n_layers, model.n_heads))
    chance = np.zeros(len(cats))
    tokens = 0
    for chunk, w in _batches(model, orders):
        width = w.shape[-1]
        kind = np.full((len(chunk), width), -1)          # category index, -1 = padding
        for b, order in enumerate(chunk):
            kind[b, :len(order)] = [cats.index(c) for c in order.categories]
        is_query = np.isin(kind, [cats.index(q) for q in queries]).astype(float)
        on_key = np.einsum("blhqk,bq->blhk", w, is_query, optimize=True)  # summed queries
        for ci in range(len(cats)):
            is_key = (kind == ci).astype(float)                      # (batch, n)
            mass[ci] += np.einsum("blhk,bk->lh", on_key, is_key, optimize=True)
            share = is_key.sum(1) / (kind >= 0).sum(1)               # per order
            chance[ci] += float((share * is_query.sum(1)).sum())
        tokens += int(is_query.sum())
    if tokens == 0:
        raise ValueError(f"these orders hold no token of the categories {queries}")
    return {"categories": cats, "mass": mass / tokens, "chance": chance / tokens,
            "tokens": tokens}


def head_name(layer: int, head: int) -> str:
    """``"layer 1, head 3"``: how the chapter names a head (both counted from 0)."""
    layer = validate.integer("layer", layer, low=0)
    head = validate.integer("head", head, low=0)
    return tr("ch08.head_name", layer=layer, head=head)


def label_name(label: str) -> str:
    """How the chapter writes a label of book.toy.orders.LABELS ("omit"; 去掉 in Chinese):
    :func:`book.toy.orders.label_name`, the book's one set of names."""
    return orders_mod.label_name(label)


def specialists(stats: dict[str, dict], min_mass: float = 0.5) -> list[dict]:
    """Heads that put at least ``min_mass`` of their weight on a relation, strongest first.

    ``stats`` is :func:`relation_mass`'s result. Each hit: ``{"relation", "layer", "head",
    "name", "mass", "lift"}`` (lift = mass / chance).
    """
    min_mass = validate.real("min_mass", min_mass, low=0.0, high=1.0)
    if not isinstance(stats, dict) or not stats:
        raise TypeError("stats must be the dict returned by "
                        "book.studies.attention_roles.relation_mass")
    hits = []
    for relation, s in stats.items():
        for layer, head in zip(*np.nonzero(s["mass"] >= min_mass), strict=True):
            value = float(s["mass"][layer, head])
            hits.append({"relation": relation, "layer": int(layer), "head": int(head),
                         "name": head_name(int(layer), int(head)), "mass": value,
                         "lift": value / s["chance"] if s["chance"] else float("inf")})
    return sorted(hits, key=lambda h: -h["mass"])


# ---- entropy on the way ----------------------------------------------------------------------

@memo.shared(mutates="model")
def entropy_during_training(model, train: Sequence[Order], probe: Sequence[Order],
                            checkpoints: Sequence[int], *, normalize: bool = True,
                            **fit_kw) -> tuple[object, dict[int, np.ndarray]]:
    """Train ``model`` with :func:`book.toy.fit.fit` and measure
    :func:`book.toy.probe.attention_entropy` on ``probe`` after each step count in
    ``checkpoints`` (0 = before any update).

    A forward pre-hook counts the training forward passes; at step ``s`` (``s`` updates done)
    it measures the entropy in evaluation mode, which changes neither the weights nor the
    optimiser, so the run is the same as without the hook. Returns ``(history,
    {step: (layers, heads) entropy})``; ``fit_kw`` go to ``fit`` (``steps`` defaults to the
    last checkpoint). ``normalize`` divides by log(number of keys): 1 = uniform.
    """
    model = check_encoder(model)
    validate.boolean("normalize", normalize)
    probe = orders_mod.as_orders("probe", probe)
    if isinstance(checkpoints, (str, bytes)) or not isinstance(checkpoints, Sequence):
        raise TypeError("checkpoints must be a list of step counts, e.g. [0, 10, 50, 100]")
    points = sorted({validate.integer("checkpoint", c, low=0) for c in checkpoints})
    if not points:
        raise ValueError("checkpoints is empty; give at least one step count, e.g. [0, 100]")
    steps = validate.integer("steps", fit_kw.pop("steps", max(points[-1], 1)), low=1)
    if points[-1] > steps:
        raise ValueError(f"checkpoint {points[-1]} is after the last step ({steps}); "
                         "raise steps or drop it")
    record: dict[int, np.ndarray] = {}
    seen = [0]

    def measure(module, args):
        if module.training:
            if seen[0] in points:
                record[seen[0]] = probe_mod.attention_entropy(module, probe,
                                                              normalize=normalize)
            seen[0] += 1

    handle = model.register_forward_pre_hook(measure)
    try:
        history = fit_mod.fit(model, train, steps=steps, **fit_kw)
    finally:
        handle.remove()
    if steps in points and not history.diverged:
        record[steps] = probe_mod.attention_entropy(model, probe, normalize=normalize)
    return history, record


# ---- many orders at once -------------------------------------------------------------------

def predictions(model, orders: Sequence[Order], batch_size: int = 256) -> list[list[str]]:
    """:func:`book.toy.probe_mod.predict` for many orders, in batches: one label list per order
    (:data:`book.toy.orders.NONE` for the tokens that are not scored)."""
    model = check_encoder(model)
    orders = orders_mod.as_orders("orders", orders)
    batch_size = validate.integer("batch_size", batch_size, low=1)
    out = []
    for chunk, batch in _collated(model, orders, batch_size):
        logits = model(batch.ids, batch.padding_mask)
        for b, order in enumerate(chunk):
            out.append(probe_mod.label_argmax(logits[b, :len(order)], order.categories))
    return out


@memo.shared
def mislabelled(model, orders: Sequence[Order]) -> list[tuple[Order, list[int]]]:
    """The orders the model gets wrong, each with the indices of its mislabelled tokens,
    shortest order first (ties keep the input order)."""
    orders = orders_mod.as_orders("orders", orders)
    found = []
    for order, predicted in zip(orders, predictions(model, orders), strict=True):
        wrong = [i for i, (p, want) in enumerate(zip(predicted, order.labels, strict=True))
                 if p != want]
        if wrong:
            found.append((order, wrong))
    return sorted(found, key=lambda item: len(item[0]))


# --- used by the explorers of the chapter modules ----------------------------------------



def order_view_data(model, order) -> dict:
    """What the head and model views draw for one order (text or Order): ``labels`` (keys:
    tokens; ``rows``: token with gloss), ``maps`` (layers, heads, n, n), the order in
    ``english`` and the model's predictions as ``marks`` ("token → label ✓")."""

    d = order_maps(model, order)
    o = d["order"]
    marks = []
    for tok, pred, rule in zip(o.tokens, d["predictions"], d["rules"] or [None] * len(o),
                               strict=True):
        if pred != "-":
            ok = "" if rule is None else " ✓" if pred == rule else \
                f" ✗ ({tr('ch08.should_be', label=_label_or_none(rule))})"
            marks.append(f"{tok} → {_label_or_none(pred)}{ok}")
    return {"order": o, "cols": token_labels(o), "rows": token_labels(o, gloss=True),
            "maps": d["maps"], "english": o.english, "marks": marks}


def _label_or_none(label: str) -> str:
    return label if label == NONE else label_name(label)


def _clause_of(order: Order, i: int) -> tuple[int, int]:
    return next((s, e) for s, e in orders_mod.clauses(order.tokens) if s <= i < e)


def top_key(model, order: Order, i: int, layer: int, head: int) -> dict:
    """For token ``i`` of ``order``: the key that head (layer, head) attends to most.

    Returns the ``token`` and its ``gloss``, the model's ``predicted`` and the ``right``
    label, the ``key`` with its ``key_gloss`` and ``weight``, and ``same_clause`` (whether
    that key lies in token i's own clause).
    """
    model = check_encoder(model)
    if not isinstance(order, Order):
        raise TypeError(f"order must be a book.toy.orders.Order, got {type(order).__name__}")
    i = validate.integer("i", i, low=0, high=len(order) - 1)
    layer = validate.integer("layer", layer, low=0, high=model.n_layers - 1)
    head = validate.integer("head", head, low=0, high=model.n_heads - 1)
    w = probe_mod.attention_maps(model, order)[layer, head, i]
    k = int(w.argmax())
    start, end = _clause_of(order, i)
    return {"token": order.tokens[i], "gloss": orders_mod.gloss(order.tokens[i]),
            "predicted": probe_mod.predict(model, order)[i], "right": order.labels[i],
            "key": order.tokens[k], "key_gloss": orders_mod.gloss(order.tokens[k]),
            "weight": float(w[k]), "same_clause": start <= k < end}


def where_it_looked(order: Order, maps: np.ndarray, i: int, layer: int, head: int) -> str:
    """Where the head's strongest key for token ``i`` is: "partner, same clause", "partner,
    other clause" or "something else" (the partner of an ingredient is a modifier, of a
    dish a quantity word). ``maps`` are the order's attention maps (layers, heads, n, n)."""
    if not isinstance(order, Order):
        raise TypeError(f"order must be a book.toy.orders.Order, got {type(order).__name__}")
    maps = validate.array("maps", maps, ndim=4)
    if maps.shape[-1] != len(order) or maps.shape[-2] != len(order):
        raise ValueError(f"maps have shape {maps.shape} but the order has {len(order)} "
                         "tokens; pass probe_mod.attention_maps(model, order)")
    i = validate.integer("i", i, low=0, high=len(order) - 1)
    layer = validate.integer("layer", layer, low=0, high=maps.shape[0] - 1)
    head = validate.integer("head", head, low=0, high=maps.shape[1] - 1)
    if order.categories[i] not in ("ingredient", "dish"):
        raise ValueError(f"token {i} ({order.tokens[i]}) is a {order.categories[i]}; only "
                         "ingredients and dishes have a partner")
    want = "modifier" if order.categories[i] == "ingredient" else "quantity"
    k = int(maps[layer, head, i].argmax())
    if orders_mod.category(order.tokens[k]) != want:
        return "something else"
    start, end = _clause_of(order, i)
    return "partner, same clause" if start <= k < end else "partner, other clause"
