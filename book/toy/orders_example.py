"""Chapter 1's running example: the takeout order 一碗牛肉面，不要香菜，多加辣.

The attention weights here are **illustrative**: set by hand from the relations a reader can
see in the order (quantity → dish, modifier → ingredient, ingredient → dish), not learned.
A trained model's weights come in the pitfalls chapters.
"""

from __future__ import annotations

import numpy as np

from book.ideas.attention import scaled_dot_product_attention, softmax
from book.kit import i18n, validate
from book.toy import orders

TOKENS = ["一碗", "牛肉面", "，", "不要", "香菜", "，", "多加", "辣"]
GLOSSES = [orders.gloss(t) for t in TOKENS]   # the one gloss table: book.toy.orders.WORDS

# Relation kinds a reader can name, each a list of (query, key) token positions that belong
# together. Pairs are listed in both directions where the relation is mutual.
RELATIONS: dict[str, list[tuple[int, int]]] = {
    "quantity ↔ dish": [(0, 1), (1, 0)],
    "modifier ↔ ingredient": [(3, 4), (4, 3), (6, 7), (7, 6)],
    "ingredient ↔ dish": [(4, 1), (7, 1), (1, 4), (1, 7)],
}
KIND_IDS = {"quantity ↔ dish": "ch01.kind_quantity",
            "modifier ↔ ingredient": "ch01.kind_modifier",
            "ingredient ↔ dish": "ch01.kind_ingredient"}
# Hand-set logit strengths (illustrative): a related pair, the token itself, anything else.
RELATED, SELF, OTHER = 4.0, 1.0, 0.0


def _strings(name: str, values) -> list[str]:
    values = validate.listed(name, values, "['一碗', '牛肉面']")
    if not all(isinstance(v, str) for v in values):
        raise TypeError(f"{name} must hold str only, got {values!r}")
    return values


def labels(tokens=None, glosses=None, *, short: bool = False) -> list[str]:
    """Unique axis labels "token (gloss)" (``short``: the token alone); repeated tokens get a
    subscript so that plotly keeps them apart. The Chinese edition reads the tokens natively:
    there every label is the token alone."""
    tokens = TOKENS if tokens is None else _strings("tokens", tokens)
    glosses = GLOSSES if glosses is None else _strings("glosses", glosses)
    validate.boolean("short", short)
    if len(tokens) != len(glosses):
        raise ValueError(f"got {len(tokens)} tokens but {len(glosses)} glosses; "
                         "pass one gloss per token")
    seen: dict[str, int] = {}
    out = []
    subscripts = "₀₁₂₃₄₅₆₇₈₉"
    for tok, gloss in zip(tokens, glosses, strict=True):
        seen[tok] = seen.get(tok, 0) + 1
        count = tokens.count(tok)
        name = tok if count == 1 else tok + "".join(subscripts[int(c)] for c in str(seen[tok]))
        bare = short or i18n.language() == "zh" or gloss in ("", tok, ",")
        out.append(name if bare else f"{name} ({gloss})")
    return out


def hover_glosses(rows: list[str], cols: list[str]):
    """The English edition's hover glosses of a token map: ``[row label, column label]`` for
    each cell, the labels with their glosses (:func:`labels`), for a hover text that names both
    tokens in English where the axes have no room for it (upright keys, the model view's bare
    queries); the Chinese edition reads the tokens natively: None."""
    rows, cols = _strings("rows", rows), _strings("cols", cols)
    if i18n.language() == "zh":
        return None
    return [[[r, c] for c in cols] for r in rows]


def glossed_hover(template: str) -> str:
    """A token map's hover template as the English edition writes it: the query ``%{y}`` and
    the key ``%{x}`` read from :func:`hover_glosses`' cells; the Chinese edition's as it is."""
    if not isinstance(template, str):
        raise TypeError(f"template must be a str, got {type(template).__name__}")
    if i18n.language() == "zh":
        return template
    return template.replace("%{y}", "%{customdata[0]}").replace("%{x}", "%{customdata[1]}")


def kind_name(kind: str) -> str:
    """The relation kind ``kind`` (a key of RELATIONS) in the book's language."""
    validate.choice("relation kind", kind, list(RELATIONS))
    return i18n.tr(KIND_IDS[kind])


def relation_kinds_per_head(n_heads: int) -> list[list[str]]:
    """Deal the relation kinds out to ``n_heads`` heads, round robin (1 head gets them all)."""
    kinds = list(RELATIONS)
    n_heads = validate.integer("n_heads", n_heads, low=1, high=len(kinds))
    return [kinds[h::n_heads] for h in range(n_heads)]


def head_weights(kinds: list[str]) -> np.ndarray:
    """Illustrative attention weights (rows = queries) of one head that tracks ``kinds``."""
    for kind in validate.listed("kinds", kinds, "['quantity ↔ dish']"):
        validate.choice("relation kind", kind, list(RELATIONS))
    n = len(TOKENS)
    logits = np.full((n, n), OTHER)
    np.fill_diagonal(logits, SELF)
    for kind in kinds:
        for q, k in RELATIONS[kind]:
            logits[q, k] = RELATED
    return softmax(logits, axis=-1)


def illustrative_heads(n_heads: int) -> list[np.ndarray]:
    """One weight matrix per head for a model with ``n_heads`` order-takers (1 to 3)."""
    return [head_weights(kinds) for kinds in relation_kinds_per_head(n_heads)]


def partner_share(n_heads: int, query: int, key: int) -> float:
    """The largest weight any head puts from token ``query`` on token ``key``."""
    n = len(TOKENS)
    query = validate.integer("query", query, low=0, high=n - 1)
    key = validate.integer("key", key, low=0, high=n - 1)
    return float(max(w[query, key] for w in illustrative_heads(n_heads)))


def apple_contexts(d_model: int = 8, seed: int = 0) -> dict[str, float]:
    """One untrained self-attention pass over "苹果 很 好吃" and "苹果 手机 很 贵".

    A fixed word vector gives 苹果 the same vector in both sentences (cosine 1). After one
    attention layer (random projections, seeded) each 苹果 has mixed in its context, so the two
    vectors differ. Returns the cosine similarity before and after.
    """
    d_model = validate.integer("d_model", d_model, low=1, high=512)
    seed = validate.seed(seed)
    rng = np.random.default_rng(seed)
    vocab = ["苹果", "很", "好吃", "手机", "贵"]
    emb = {w: rng.standard_normal(d_model) for w in vocab}
    w_q, w_k = (rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(2))

    def contextual_apple(sentence: list[str]) -> np.ndarray:
        x = np.stack([emb[w] for w in sentence])
        out, _ = scaled_dot_product_attention(x @ w_q, x @ w_k, x)
        return out[0]

    a = contextual_apple(["苹果", "很", "好吃"])
    b = contextual_apple(["苹果", "手机", "很", "贵"])

    def cos(u, v):
        return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))

    return {"static": cos(emb["苹果"], emb["苹果"]), "contextual": cos(a, b)}


MENU_IDS = {"牛肉面 (beef noodles, coriander on top)": "ch01.dish_beef",
            "麻辣面 (spicy noodles)": "ch01.dish_spicy", "炒饭 (fried rice)": "ch01.dish_rice"}
MENU_TAGS = {  # features: spicy, coriander, noodles
    "牛肉面 (beef noodles, coriander on top)": [0.0, 1.0, 1.0],
    "麻辣面 (spicy noodles)": [1.0, 0.0, 1.0],
    "炒饭 (fried rice)": [0.0, 0.0, 0.0],
}
REQUEST = [1.0, -1.0, 1.0]  # wants spicy, no coriander, noodles


def menu_match(request=None, temperature: float = 1.0) -> dict[str, float]:
    """Q/K/V as a diner: the request (query) is matched to each dish's tags (keys);
    the weights say how much of each dish (value) the diner gets."""
    request = validate.array("request", REQUEST if request is None else request, ndim=1)
    if request.shape[0] != 3:
        raise ValueError("request has 3 features: [spicy, coriander, noodles]; "
                         f"got {request.shape[0]} numbers")
    temperature = validate.real("temperature", temperature, low=1e-3)
    keys = np.array(list(MENU_TAGS.values()))
    weights = softmax(keys @ request / temperature)
    return dict(zip(MENU_TAGS, weights.tolist(), strict=True))


def dish_name(dish: str) -> str:
    """A dish of MENU_TAGS as figures label it (the gloss on lines of its own; the Chinese
    edition: no gloss)."""
    validate.choice("dish", dish, list(MENU_TAGS))
    return i18n.tr(MENU_IDS[dish])


# --- used by the explorers of the chapter modules ----------------------------------------

MAX_HEADS = len(RELATIONS)


def heads_data(n_heads: int) -> dict:
    """Panels for ``n_heads`` order-takers: one weight matrix (or None) and a title per panel."""
    heads = illustrative_heads(n_heads)
    kinds = relation_kinds_per_head(n_heads)
    z = [heads[i] if i < n_heads else None for i in range(MAX_HEADS)]
    titles = [i18n.tr("ch01.head_line", head=i + 1,
                      kinds="<br>" + " + ".join(kind_name(k) for k in kinds[i]))
              if i < n_heads else i18n.tr("ch01.head_none_line", head=i + 1)
              for i in range(MAX_HEADS)]
    return {"z": z, "titles": titles}


# --- chapter 1's ramp: scores with no weights at all, then learned-style projections ------------

# Hand-made token vectors (d_model = 5), one feature per kind of word in the order: a reader can
# check every score by eye. Not learned: they show the arithmetic, not what a model finds.
RAMP_FEATURES = ["dish", "ingredient", "modifier", "quantity", "punctuation"]
RAMP_KINDS = {"一碗": "quantity", "牛肉面": "dish", "，": "punctuation", "不要": "modifier",
              "香菜": "ingredient", "多加": "modifier", "辣": "ingredient"}
# The query/key space (d_k = 3): what a token *is* (key) and what it *looks for* (query).
RAMP_SLOTS = ["dish", "ingredient", "modifier"]
# W_K: a token shows what kind it is; W_Q: a quantity and an ingredient look for a dish, a
# modifier looks for an ingredient; STRENGTH sharpens the scores.
RAMP_LOOKS_FOR = {"quantity": "dish", "modifier": "ingredient", "ingredient": "dish"}
RAMP_STRENGTH = 4.0


def ramp_labels(names: list[str]) -> list[str]:
    """Features or query/key slots of the ramp (``RAMP_FEATURES``, ``RAMP_SLOTS``) as the page
    labels them, in the book's language."""
    for name in validate.listed("names", names, "['dish', 'ingredient']"):
        validate.choice("ramp feature", name, RAMP_FEATURES)
    return [i18n.tr(f"ch01.feature_{name}") for name in names]


def ramp_vectors() -> np.ndarray:
    """The order's tokens as hand-made vectors, shape (tokens, d_model) = (8, 5): a 1 in the
    feature of the token's kind."""
    x = np.zeros((len(TOKENS), len(RAMP_FEATURES)))
    for i, token in enumerate(TOKENS):
        x[i, RAMP_FEATURES.index(RAMP_KINDS[token])] = 1.0
    return x


def ramp_weights() -> dict[str, np.ndarray]:
    """W_Q, W_K and W_V for the ramp, each of shape (d_model, d_k) = (5, 3)."""
    d_model, d_k = len(RAMP_FEATURES), len(RAMP_SLOTS)
    w_q, w_k = np.zeros((d_model, d_k)), np.zeros((d_model, d_k))
    for kind, slot in RAMP_LOOKS_FOR.items():
        w_q[RAMP_FEATURES.index(kind), RAMP_SLOTS.index(slot)] = RAMP_STRENGTH
    for slot in RAMP_SLOTS:
        w_k[RAMP_FEATURES.index(slot), RAMP_SLOTS.index(slot)] = 1.0
    # values: any projection will do for the ramp; seeded, rounded to one decimal
    w_v = np.round(np.random.default_rng(0).uniform(-1, 1, size=(d_model, d_k)), 1)
    return {"W_Q": w_q, "W_K": w_k, "W_V": w_v}


def ramp() -> dict[str, np.ndarray]:
    """Chapter 1's two steps on the order: no weights (scores X Xᵀ, weights softmax of them,
    output = weights · X), then Q = X W_Q, K = X W_K, V = X W_V with scaled scores.

    Returns every matrix by name: ``X``, ``XXt``, ``A0``, ``Z0``, ``W_Q``, ``W_K``, ``W_V``,
    ``Q``, ``K``, ``V``, ``S`` (Q Kᵀ / √d_k), ``A`` and ``Z``.
    """
    x = ramp_vectors()
    w = ramp_weights()
    raw = x @ x.T
    a0 = softmax(raw, axis=-1)
    q, k, v = x @ w["W_Q"], x @ w["W_K"], x @ w["W_V"]
    s = q @ k.T / np.sqrt(k.shape[1])
    a = softmax(s, axis=-1)
    return {"X": x, "XXt": raw, "A0": a0, "Z0": a0 @ x, **w, "Q": q, "K": k, "V": v, "S": s,
            "A": a, "Z": a @ v}
