"""What chapter 8's notebook prints, tabulates and glues about the study's results (book.
studies.attention_roles): its lines and tables in the book's language. The chapter's figures,
explorers and exercises are in :mod:`book.chapters.ch08_seeing_attention`."""

from __future__ import annotations

import textwrap

import numpy as np

from book.chapters.ch08_seeing_attention import category_label, relation_label
from book.face.display import table
from book.kit import i18n
from book.kit.i18n import tr
from book.studies import attention_roles
from book.toy import orders


def accuracy_line(scores: dict, n: int) -> str:
    """One line: the held-out accuracy of :func:`book.toy.probe.evaluate`'s ``scores``."""
    return tr("ch08.held_out", accuracy=scores["accuracy"],
              ingredients=scores["ingredient_accuracy"], dishes=scores["dish_accuracy"], n=n)


def order_lines(orders_) -> str:
    """The orders, one a line; in English each with its word-by-word gloss below it."""
    lines = []
    for o in orders_:
        lines.append(o.text)
        if i18n.language() == "en":
            lines.append(textwrap.indent(textwrap.fill(o.english, 72), "    "))
    return "\n".join(lines)


def layer_list(layers) -> str:
    """``"layer 1"``, ``"layer 0 and layer 1"``: layers named for the prose."""
    return tr("ch08.layers_and").join(tr("common.layer", layer=layer) for layer in layers)


def gloss(token: str) -> str:
    """What the prose puts beside a token: its English gloss, or in Chinese (where the
    reader needs none) the kind of word it is."""
    if i18n.language() == "en":
        return orders.gloss(token)
    return category_label(orders.category(token))


def specialist_table(heads: list[dict]):
    """The heads of :func:`book.studies.attention_roles.specialists`, as a table."""
    return table([tr("ch08.table_head"), tr("ch08.table_relation"), tr("ch08.table_weight"),
                  tr("ch08.table_lift")],
                 [(h["name"], relation_label(h["relation"]), h["mass"], h["lift"])
                  for h in heads], formats=["", "", ".2f", ".1f"])


def ablation_table(cost: dict):
    """Accuracy lost (points) per zeroed head: ``cost[(layer, head)]`` holds
    ``ingredient_accuracy`` and ``dish_accuracy``."""
    return table([tr("ch08.head_zeroed"), tr("ch08.ing_lost"), tr("ch08.dish_lost")],
                 [(attention_roles.head_name(*lh), c["ingredient_accuracy"],
                   c["dish_accuracy"]) for lh, c in cost.items()], formats=["", ".1f", ".1f"])


def clause_name(same_clause: bool) -> str:
    """"its own clause" or "another clause" (where a head's strongest key lies)."""
    return tr("ch08.own_clause") if same_clause else tr("ch08.other_clause")


def quantity_place(after: bool | None) -> str:
    """Where a dish's own quantity word stands: after it (True), before it (False), or
    nowhere (None)."""
    if after is None:
        return tr("ch08.no_quantity")
    return tr("ch08.after_dish") if after else tr("ch08.before_dish")


def modifier_place(has: bool) -> str:
    """Whether an ingredient's clause "has a modifier" or "has no modifier"."""
    return tr("ch08.has_modifier") if has else tr("ch08.has_no_modifier")


def case_line(case: dict) -> str:
    """One line about :func:`book.studies.attention_roles.top_key`'s ``case``."""
    return tr("ch08.case_line", token=case["token"], gloss=gloss(case["token"]),
              predicted=attention_roles.label_name(case["predicted"]),
              right=attention_roles.label_name(case["right"]), key=case["key"],
              key_gloss=gloss(case["key"]), weight=case["weight"],
              where=clause_name(case["same_clause"]))


def tally_line(tally: dict) -> str:
    """How often the specialist's strongest key was where
    (book.studies.attention_roles.where_it_looked)."""
    return tr("ch08.tally", same=tally["partner, same clause"],
              other=tally["partner, other clause"], elsewhere=tally["something else"])


def init_table(at_init: dict, final: np.ndarray):
    """Mean normalised entropy per layer: each untrained initialisation, then the trained
    model (``at_init``: init → (layers, heads); ``final``: (layers, heads))."""
    n_layers = np.asarray(final).shape[0]
    columns = [tr("ch08.model_col")] + [tr("common.layer", layer=i) for i in range(n_layers)]
    rows = [(tr("ch08.untrained", init=repr(init)), *(float(e[i].mean()) for i in
                                                     range(n_layers)))
            for init, e in at_init.items()]
    rows.append((tr("ch08.trained"), *(float(final[i].mean()) for i in range(n_layers))))
    return table(columns, rows, formats=[""] + [".3f"] * n_layers)
