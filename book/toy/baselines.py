"""Baselines that cannot attend, on the takeout-order task: what accuracy needs no attention.

The most frequent label of each word, the nearest-modifier rule, and small MLPs over a bag of
words or a fixed window (no positions beyond it). Chapter 5 and the training report quote them
next to the attention model's accuracy.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np
import torch

from book.kit import validate
from book.toy.orders import LABELS, NONE, VOCAB, WORDS, Order, as_orders, category


def _scored(orders):
    for o in orders:
        for i, lab in enumerate(o.labels):
            if lab != NONE:
                yield o, i, lab


def _token_only_accuracy(train, test) -> float:
    """The most frequent training label of each word, scored on test."""
    table: dict = defaultdict(Counter)
    for o, i, lab in _scored(train):
        table[o.tokens[i]][lab] += 1
    hits = [bool(table.get(o.tokens[i])) and table[o.tokens[i]].most_common(1)[0][0] == lab
            for o, i, lab in _scored(test)]
    return sum(hits) / len(hits)


def label_frequencies(train: Sequence[Order], test: Sequence[Order]) -> dict:
    """What the label frequencies alone are worth, the one source of chapters 4b and 5:
    ``loss``, the cross-entropy on ``test``'s scored tokens of predicting ``train``'s label
    frequencies for every one of them; ``accuracy`` of always answering the most frequent
    training ``label``. A model stuck at these numbers has learnt nothing about the orders."""
    train, test = as_orders("train", train), as_orders("test", test)
    counts = Counter(lab for _, _, lab in _scored(train))
    scored = [lab for _, _, lab in _scored(test)]
    if not counts or not scored:
        raise ValueError("train and test must each hold at least one scored token (an order "
                         "with a dish or an ingredient): pass book.toy.train.default_data()")
    unseen = sorted(set(scored) - set(counts))
    if unseen:
        raise ValueError(f"test has labels {unseen} that train never has: their frequency, "
                         "and so the loss, would be infinite; train on more orders")
    total = sum(counts.values())
    label = max(LABELS, key=lambda lab: counts[lab])
    loss = -sum(np.log(counts[lab] / total) for lab in scored) / len(scored)
    return {"loss": float(loss), "accuracy": sum(lab == label for lab in scored) / len(scored),
            "label": label}


def nearest_rule(order: Order) -> list[str]:
    """The labels a rule without clauses gives: each ingredient takes the nearest modifier and
    each dish the nearest quantity word anywhere in the order (ties: the earlier one). It is
    right most of the time and wrong exactly where the clause boundary matters."""
    if not isinstance(order, Order):
        raise TypeError(f"order must be a book.toy.orders.Order "
                        f"(e.g. Order.from_text('一碗牛肉面')), "
                        f"got {type(order).__name__}")
    toks = order.tokens
    out = []
    for i, tok in enumerate(toks):
        cat = category(tok)
        want = {"ingredient": "modifier", "dish": "quantity"}.get(cat)
        if want is None:
            out.append(NONE)
            continue
        found = [j for j in range(len(toks)) if category(toks[j]) == want]
        if not found:
            out.append("normal" if cat == "ingredient" else "count_1")
            continue
        j = min(found, key=lambda j: (abs(j - i), j))
        out.append(WORDS[toks[j]][2] if cat == "ingredient" else f"count_{WORDS[toks[j]][2]}")
    return out


def _bag_features(order: Order, i: int) -> np.ndarray:
    """[one-hot(word i), counts of every word in the order]: no positions."""
    out = np.zeros(2 * len(VOCAB), np.float32)
    out[order.ids[i]] = 1
    out[len(VOCAB):] = np.bincount(order.ids, minlength=len(VOCAB))
    return out


def _window_features(k: int):
    """[one-hot(word at i + offset) for offset in -k..k]: a fixed window, positions relative
    to the word (PAD beyond the ends)."""
    def features(order: Order, i: int) -> np.ndarray:
        out = np.zeros((2 * k + 1, len(VOCAB)), np.float32)
        for slot, j in enumerate(range(i - k, i + k + 1)):
            out[slot, order.ids[j] if 0 <= j < len(order) else 0] = 1
        return out.reshape(-1)
    return features


def _mlp_accuracy(train, test, features, seed: int, steps: int = 800) -> float:
    """Train a one-hidden-layer MLP on ``features(order, i)`` of the scored tokens; test acc."""
    def table(orders):
        rows, ys = zip(*[(features(o, i), LABELS.index(lab)) for o, i, lab in _scored(orders)],
                       strict=True)
        return torch.tensor(np.array(rows)), torch.tensor(ys)

    x, y = table(train)
    xt, yt = table(test)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, len(LABELS)))
        opt = torch.optim.Adam(net.parameters(), lr=3e-3)
        gen = torch.Generator().manual_seed(seed)
        for _ in range(steps):
            pick = torch.randint(len(x), (256,), generator=gen)
            loss = torch.nn.functional.cross_entropy(net(x[pick]), y[pick])
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            return float((net(xt).argmax(-1) == yt).float().mean())


BASELINES = {
    "token_only": "the most frequent label of the word itself",
    "bag_of_words": "an MLP on the word and the multiset of the order's words (no positions)",
    "window_1": "an MLP on the word and its neighbour on each side (fixed offsets)",
    "window_2": "an MLP on the word and 2 neighbours on each side (fixed offsets)",
    "window_3": "an MLP on the word and 3 neighbours on each side (fixed offsets)",
    "nearest_rule": "the nearest modifier / quantity word, ignoring clause boundaries",
}


def baselines(train: Sequence[Order], test: Sequence[Order], seed: int = 0,
              which: Sequence[str] | None = None, steps: int = 800) -> dict[str, float]:
    """Held-out token accuracy of predictors that cannot attend, to set the bar for a model.

    ``which`` picks some of :data:`BASELINES` (default: all); their descriptions are there.
    The MLPs train on ``train`` (``steps`` Adam steps of 256 tokens, seeded); the two rules
    need no training. Takes a few seconds for a few thousand orders.
    """
    train, test = as_orders("train", train), as_orders("test", test)
    seed = validate.integer("seed", seed, low=0)
    steps = validate.integer("steps", steps, low=1)
    which = list(BASELINES) if which is None else \
        validate.listed("which", which, "['token_only']")
    for name in which:
        validate.choice("baseline", name, list(BASELINES))
    out = {}
    for name in which:
        if name == "token_only":
            out[name] = _token_only_accuracy(train, test)
        elif name == "bag_of_words":
            out[name] = _mlp_accuracy(train, test, _bag_features, seed, steps)
        elif name.startswith("window_"):
            out[name] = _mlp_accuracy(train, test, _window_features(int(name[-1])), seed,
                                      steps)
        else:
            pairs = [(got, want) for o in test
                     for got, want in zip(nearest_rule(o), o.labels, strict=True)
                     if want != NONE]
            out[name] = sum(g == w for g, w in pairs) / len(pairs)
    return out
