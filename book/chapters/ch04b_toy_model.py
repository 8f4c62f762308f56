"""Chapter 4b (the model the next chapters train): the takeout-order task, the toy model and how
it is trained — sample orders with their labels, what the labels mean, the model's diagram and
parameters, a feed-forward layer that works on each token alone, and the exercises."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import torch

from book.face import diagrams, questions
from book.face.checks import Answer, Is, right, value_exercise, wrong
from book.face.display import table
from book.face.figures import describe
from book.kit import numbers, validate
from book.kit.i18n import tr
from book.toy import baselines
from book.toy import orders as orders_mod
from book.toy.model import TinyEncoder, check_encoder
from book.toy.orders import LABELS, NONE, WORDS, Order
from book.toy.train import MODEL

# --- the task -------------------------------------------------------------------------------


def book_model() -> TinyEncoder:
    """The book's model as chapters 5–8 build it (:data:`book.toy.train.MODEL`), untrained."""
    return TinyEncoder(**MODEL)


def sample_orders(n: int = 3, seed: int = 0, pool: int = 300) -> list[Order]:
    """``n`` short orders from ``pool`` generated ones (``seed``), each of two or more clauses
    with a dish, two ingredients and a modifier: examples that show both kinds of label and a
    clause boundary."""
    n = validate.integer("n", n, low=1, high=10)
    pool = validate.integer("pool", pool, low=n)
    generated = orders_mod.generate(pool, seed=validate.seed(seed))
    good = [o for o in generated
            if {"dish", "modifier"} <= set(o.categories) and len(orders_mod.clauses(o.tokens)) > 1
            and o.categories.count("ingredient") >= 2 and len(o) >= 8]
    good.sort(key=len)  # stable: the generator's order breaks ties
    if len(good) < n:
        raise ValueError(f"only {len(good)} of {pool} orders qualify; raise pool")
    return good[:n]


def label_name(label: str) -> str:
    """A label as the reader's edition names it (``omit`` in English, translated in Chinese)."""
    return orders_mod.label_name(label)   # the book's one set of names


def order_rows(orders: Sequence[Order]) -> list[tuple[str, str, str]]:
    """(order, word-by-word gloss, its scored words with their labels) per order."""
    rows = []
    for o in orders_mod.as_orders("orders", orders):
        scored = " · ".join(f"{t} → {label_name(lab)}" for t, lab in zip(o.tokens, o.labels,
                                                                       strict=True)
                            if lab != NONE)
        rows.append((o.text, " ".join(o.glosses), scored))
    return rows


def orders_table(orders: Sequence[Order]):
    """The table of sample orders (:func:`order_rows`) with its header in the reader's
    language."""
    return table([tr("ch04b.col_order"), tr("ch04b.col_gloss"), tr("ch04b.col_labels")],
                 order_rows(orders))


def modifiers_of(label: str) -> list[str]:
    """The modifier words that give an ingredient ``label`` (from the vocabulary)."""
    validate.choice("label", label, LABELS)
    return [w for w, (_, cat, value) in WORDS.items() if cat == "modifier" and value == label]


def label_rows(orders: Sequence[Order]) -> list[tuple[str, str, float]]:
    """(label, what decides it, % of the scored tokens of ``orders``) for the 7 labels."""
    orders = orders_mod.as_orders("orders", orders)
    counts = Counter(lab for o in orders for lab in o.labels if lab != NONE)
    total = sum(counts.values())
    rows = []
    for lab in LABELS:
        if lab == "count_1":
            why = tr("ch04b.why_count_1")
        elif lab.startswith("count_"):
            why = tr("ch04b.why_count", n=lab[-1])
        elif lab == "normal":
            why = tr("ch04b.why_normal", words="、".join(modifiers_of(lab)))
        else:
            why = tr("ch04b.why_ingredient", words="、".join(modifiers_of(lab)))
        rows.append((label_name(lab), why, 100 * counts[lab] / total))
    return rows


def labels_table(orders: Sequence[Order]):
    """The table of the 7 labels (:func:`label_rows`) with its header in the reader's
    language."""
    return table([tr("ch04b.col_label"), tr("ch04b.col_why"), tr("ch04b.col_share")],
                 label_rows(orders), ["", "", ".1f"])


def frequency_loss(orders: Sequence[Order], test: Sequence[Order]) -> float:
    """The cross-entropy on ``test``'s scored tokens of a model that has learnt only how often
    each label occurs in ``orders`` (and nothing about the order in front of it)."""
    return baselines.label_frequencies(orders, test)["loss"]


# --- the model -------------------------------------------------------------------------------


def model_diagram(model: TinyEncoder | None = None):
    """The toy model's diagram (:func:`book.face.diagrams.toy_model`), sized from ``model``'s
    own config (default: :func:`book_model`)."""
    model = book_model() if model is None else check_encoder(model)
    n_params = sum(p.numel() for p in model.parameters())
    c = model.config
    sizes = {"vocab": c.vocab_size, "max_len": c.max_len, "d": c.d_model, "layers": c.n_layers,
             "heads": c.n_heads, "d_k": c.d_model // c.n_heads, "d_ff": c.d_ff,
             "labels": c.n_labels, "params": numbers.large(n_params, digits=2)}
    return describe(diagrams.toy_model(c, n_params), alt=tr("ch04b.diagram_alt", **sizes),
                    caption=tr("ch04b.diagram_caption", **sizes))


PARTS = ("embed", "pos", "attn", "ff", "norm", "head")


def parameter_counts(model: TinyEncoder | None = None) -> dict[str, int]:
    """Parameters per part (the keys of ``PARTS``: embeddings, attention, feed-forward layers,
    LayerNorms, the classifier, summed over the blocks) and their ``"total"``."""
    model = book_model() if model is None else check_encoder(model)
    counts = dict.fromkeys(PARTS, 0)
    for name, p in model.named_parameters():
        first = name.split(".")[0]
        part = name.split(".")[2] if first == "blocks" else first
        part = "norm" if part.startswith(("norm", "final_norm")) else part
        counts[part] += p.numel()
    return {**counts, "total": sum(counts.values())}


def parameter_rows(model: TinyEncoder | None = None) -> list[tuple[str, int]]:
    """(part, parameters) for the embeddings, attention, feed-forward layers, LayerNorms and
    the classifier, summed over the blocks, and the total, named in the reader's language."""
    counts = parameter_counts(model)
    return [(tr(f"ch04b.part_{part}"), n) for part, n in counts.items()]


def loss_verdicts(freq: float, chance: float, trained: float) -> dict[str, str]:
    """The prose's comparisons of the losses: is the frequency baseline's loss below chance,
    and is the trained model's far below both (under half the lower)?"""
    return {"freq_vs_chance": tr("ch04b.freq_below_chance" if freq < chance
                                 else "ch04b.freq_not_below_chance"),
            "trained_vs": tr("ch04b.trained_below" if trained < min(freq, chance) / 2
                             else "ch04b.trained_not_below")}


def per_token_test(model: TinyEncoder | None = None, token: int = 2, length: int = 6) -> dict:
    """Change one token's vector and see which rows of each sub-layer's output change: the
    largest change on the *other* tokens' rows, for the feed-forward layer and for attention
    of the first block. Returns ``{"ff": float, "attention": float}``."""
    model = book_model() if model is None else check_encoder(model)
    length = validate.integer("length", length, low=2, high=model.config.max_len)
    token = validate.integer("token", token, low=0, high=length - 1)
    block = model.blocks[0]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, length, model.config.d_model, generator=gen)
    y = x.clone()
    y[0, token] += torch.randn(model.config.d_model, generator=gen)
    others = [i for i in range(length) if i != token]
    with torch.no_grad():
        ff = (block.ff(y) - block.ff(x))[0, others].abs().max().item()
        attn = (block.attn(y) - block.attn(x))[0, others].abs().max().item()
    return {"ff": ff, "attention": attn}


# --- exercises (registered with book.face.checks) ----------------------------------------------

EXERCISE_ORDER = "两碗牛肉面，香菜和葱都不要，多加辣"


def _labels_reference() -> list[str]:
    o = Order.from_text(EXERCISE_ORDER)
    return [lab for lab in o.labels if lab != NONE]


def _labels_answer() -> Answer:
    want = _labels_reference()
    return Answer("labels", [
        (Is.equal(want), right("ch04b.ex_labels_ok")),
        (Is.not_(Is.length(len(want))), wrong("ch04b.ex_labels_count")),
        (Is.not_(Is.at(0, Is.equal(want[0]))), wrong("ch04b.ex_labels_dish")),
        (Is.not_(Is.at(1, Is.equal(want[1]))), wrong("ch04b.ex_labels_before"))],
        otherwise=wrong("ch04b.ex_labels_clause"), wrong_kind=wrong("ch04b.ex_labels_list"))


value_exercise("ch4b.labels", f"The labels of the scored words of {EXERCISE_ORDER}",
               reference=_labels_reference,
               mistakes=lambda: [["count_1", "omit", "omit", "extra"],
                                 ["count_2", "normal", "omit", "extra"],
                                 ["count_2", "omit", "omit"],
                                 ["count_2", "extra", "extra", "extra"]],
               answer=_labels_answer)

value_exercise("ch4b.chance", "The loss of a model that gives the 7 labels equal probability",
               reference=lambda: math.log(len(LABELS)),
               mistakes=lambda: [7, 1 / 7, math.log2(7), math.log10(7), 0.0],
               answer=lambda: Answer("number", [
                   (Is.near(math.log(len(LABELS)), 1e-3), right("ch04b.ex_chance_ok")),
                   (Is.near(math.log2(len(LABELS)), 1e-3), wrong("ch04b.ex_chance_log2")),
                   (Is.at_most(1), wrong("ch04b.ex_chance_prob"))],
                   otherwise=wrong("ch04b.ex_chance_hint")))


def _ff_params() -> int:
    return sum(p.numel() for p in book_model().blocks[0].ff.parameters())


value_exercise("ch4b.ff_params", "Parameters of one feed-forward layer (d_model 64, d_ff 128)",
               reference=_ff_params,
               mistakes=lambda: [2 * 64 * 128, 64 * 128 + 128, 64 * 128, 3 * 64 * 128],
               answer=lambda: Answer("number", [
                   (Is.equal(_ff_params()), right("ch04b.ex_ff_ok")),
                   (Is.equal(2 * 64 * 128), wrong("ch04b.ex_ff_bias")),
                   (Is.below(2 * 64 * 128), wrong("ch04b.ex_ff_two"))],
                   otherwise=wrong("ch04b.ex_ff_hint")))


# --- concept questions (book/face/questions.py; their words: book/strings/ch04b.toml) ---
questions.question("ch04b.ff_alone", kind="predict", right=2,
                   answered_in="c4b10")
questions.question("ch04b.no_neighbour", kind="explain", right=1)
questions.question("ch04b.bug_ff", kind="bug", right=1, code="""\
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    def forward(self, x):            # x: (B, T, d_model)
        return self.down(self.up(x))
""")
