"""A synthetic takeout-order language: the toy world of the pitfalls chapters.

An order is a short string of words such as ``一碗 牛肉面 ， 不要 香菜 ， 多加 辣 。``
("a bowl of beef noodles, no coriander, extra chili."). The task is **per-token labelling**:

* every **ingredient** gets what the diner wants done with it — ``omit``, ``extra``, ``less`` or
  ``normal`` — and that is decided by the **modifier of its clause** (不要 → omit, 多加 → extra,
  少放 → less, 正常 → normal; a clause with no modifier means ``normal``);
* every **dish** gets how many were ordered — ``count_1``, ``count_2``, ``count_3`` — decided by
  the **quantity word of its clause** (一碗/两份/三盘 …; no quantity word means one);
* every other token (quantities, modifiers, fillers, punctuation) has the label :data:`NONE`
  and is *not scored*: :func:`batches` gives it the ignore index, and accuracy counts ingredient
  and dish tokens only (about 30 % of the tokens; scoring the rest would add free points).

A clause is the stretch between two ``，`` / ``。`` (``、`` only separates items of a list).

Why the task needs attention: the label is not a property of the token (香菜 is omitted in one
order and doubled in the next), nor of a fixed neighbour — the modifier may come before the
ingredient or after it (不要 香菜 / 香菜 不要), with fillers and other list items in between
(香菜 、 葱 和 蒜 都 不要), and the neighbouring clause usually holds a *different* modifier, which
can be nearer than the right one (不要 香菜 ， 葱 和 蒜 都 多放: 葱 is three words from 不要,
four from 多放). Dishes likewise take their quantity from before or after, across adjectives
(两碗 招牌 红烧 牛肉面 / 牛肉面 来 两碗), and orders list up to three dishes with different counts.
:func:`baselines` measures how far models that cannot attend get (token identity, a bag of words,
a fixed window of neighbours, the nearest-modifier rule that ignores clauses).

Data flow: :func:`generate` → :func:`train_test_split` → :func:`batches` (padded ``LongTensor``
ids, a padding mask with ``True`` = real token, labels with :data:`IGNORE_INDEX`). Reader input:
:func:`tokenize` (greedy longest match) → :func:`label` (the rules above) → :class:`Order`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch

from book.kit import i18n, validate

# ---- the vocabulary, as data -----------------------------------------------------------------

PAD = "<pad>"
NONE = "-"            # label of tokens that are not scored
IGNORE_INDEX = -100   # their label id in batches (the default ignore_index of F.cross_entropy)

CATEGORIES = ("quantity", "dish", "adjective", "modifier", "ingredient", "filler", "punctuation")

#: token → (English gloss, category, value); value = count for quantities, label for modifiers.
WORDS: dict[str, tuple[str, str, object]] = {
    # quantities: the numeral gives the count; the measure word (碗 bowl, 份 portion,
    # 盘 plate) goes with the dish (see MEASURES)
    "一碗": ("a bowl of", "quantity", 1), "两碗": ("two bowls of", "quantity", 2),
    "三碗": ("three bowls of", "quantity", 3),
    "一份": ("a portion of", "quantity", 1), "两份": ("two portions of", "quantity", 2),
    "三份": ("three portions of", "quantity", 3),
    "一盘": ("a plate of", "quantity", 1), "两盘": ("two plates of", "quantity", 2),
    "三盘": ("three plates of", "quantity", 3),
    # dishes
    "牛肉面": ("beef noodles", "dish", None), "炒饭": ("fried rice", "dish", None),
    "饺子": ("dumplings", "dish", None), "馄饨": ("wontons", "dish", None),
    "米粉": ("rice noodles", "dish", None), "凉皮": ("cold noodles", "dish", None),
    "盖饭": ("rice bowl", "dish", None),
    # adjectives (sit between a quantity and its dish)
    "招牌": ("house-special", "adjective", None), "红烧": ("braised", "adjective", None),
    "清汤": ("clear-broth", "adjective", None), "鲜虾": ("shrimp", "adjective", None),
    # modifiers: what to do with the ingredients of their clause
    "不要": ("no", "modifier", "omit"), "别放": ("don't add", "modifier", "omit"),
    "多加": ("add extra", "modifier", "extra"), "多放": ("put extra", "modifier", "extra"),
    "少放": ("go easy on", "modifier", "less"), "少加": ("add less", "modifier", "less"),
    "正常": ("normal", "modifier", "normal"), "照常": ("as usual", "modifier", "normal"),
    # ingredients
    "香菜": ("coriander", "ingredient", None), "辣": ("chili", "ingredient", None),
    "葱": ("spring onion", "ingredient", None), "蒜": ("garlic", "ingredient", None),
    "醋": ("vinegar", "ingredient", None), "盐": ("salt", "ingredient", None),
    "花生": ("peanuts", "ingredient", None), "麻酱": ("sesame paste", "ingredient", None),
    # fillers
    "来": ("bring", "filler", None), "要": ("want", "filler", None),
    "再来": ("and also", "filler", None), "给我": ("give me", "filler", None),
    "也要": ("also want", "filler", None), "放": ("put", "filler", None),
    "都": ("all", "filler", None), "一点": ("a bit", "filler", None),
    "的话": ("as for", "filler", None),
    "和": ("and", "filler", None), "老板": ("boss", "filler", None),
    "你好": ("hello", "filler", None), "谢谢": ("thanks", "filler", None),
    # punctuation: ， and 。 end a clause; 、 separates the items of a list
    "，": (",", "punctuation", None), "、": ("、 (list comma)", "punctuation", None),
    "。": (".", "punctuation", None),
}

#: dish → (measure words that go with it, adjectives that go with it, in their usual order)
DISH_WORDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "牛肉面": ("碗份", ("招牌", "红烧", "清汤")), "炒饭": ("份盘", ("招牌", "鲜虾")),
    "饺子": ("盘份", ("招牌", "鲜虾")), "馄饨": ("碗份", ("招牌", "鲜虾", "清汤")),
    "米粉": ("碗份", ("招牌", "红烧", "清汤")), "凉皮": ("份碗", ("招牌",)),
    "盖饭": ("份盘", ("招牌", "红烧")),
}

INGREDIENT_LABELS = ("omit", "extra", "less", "normal")
DISH_LABELS = ("count_1", "count_2", "count_3")
LABELS = INGREDIENT_LABELS + DISH_LABELS          # label ids 0..6, in this order
CLAUSE_END = ("，", "。")
MAX_LEN = 48   # the generator never makes a longer order; TinyEncoder's default max_len is 64


def _words(category: str) -> list[str]:
    return [t for t, (_, c, _) in WORDS.items() if c == category]


QUANTITIES, DISHES, ADJECTIVES = _words("quantity"), _words("dish"), _words("adjective")
MODIFIERS, INGREDIENTS = _words("modifier"), _words("ingredient")


def label_name(label: str) -> str:
    """How the book names a label of :data:`LABELS` in the reader's edition: the id in English
    (``omit``, ``count_1``), one Chinese set in the Chinese edition (去掉, 加量, 少放, 正常, 一份,
    两份, 三份; locale/terms.toml's ``order_labels``). Every chapter, figure and the in-page
    model draw the names from here (book/strings/common.toml), so that one label has one name."""
    label = validate.choice("label", label, LABELS)
    return i18n.tr({"omit": "common.label_omit", "extra": "common.label_extra",
                    "less": "common.label_less", "normal": "common.label_normal",
                    "count_1": "common.label_count_1", "count_2": "common.label_count_2",
                    "count_3": "common.label_count_3"}[label])


def word_list() -> str:
    """The order language's words as a reader's message lists them: in the English edition
    each with its gloss ("一碗 (a bowl of) · 两碗 (two bowls of) · …"), in the Chinese edition
    the words alone, a space apart."""
    if i18n.language() == "zh":
        return " ".join(WORDS)
    shown = []
    for token, (english, _, _) in WORDS.items():
        if english.startswith(token):                 # "、 (list comma)"
            shown.append(english)
        elif any(c.isalpha() for c in english):
            shown.append(f"{token} ({english})")
        else:                                         # ， and 。 read as themselves
            shown.append(token)
    return " · ".join(shown)


def gloss(token: str) -> str:
    """English gloss of one vocabulary token, e.g. ``gloss("香菜") == "coriander"``."""
    return WORDS[_known(token)][0]


def category(token: str) -> str:
    """Category of one vocabulary token: one of :data:`CATEGORIES`."""
    return WORDS[_known(token)][1]


def _known(token) -> str:
    if not isinstance(token, str):
        raise TypeError(f"a token must be a str such as '香菜', got {type(token).__name__}")
    if token not in WORDS:
        raise ValueError(f"the token {token!r} is not a word of the order language; known words: "
                         f"{' '.join(WORDS)}")
    return token


class Vocab:
    """Token ↔ id. Id 0 is :data:`PAD`; there is no UNK id: an unknown word raises a
    ``ValueError`` that lists the vocabulary (the toy language is closed, so an unknown word is
    a typo to fix, not something to hide behind ``<unk>``)."""

    def __init__(self, tokens: Sequence[str]):
        if isinstance(tokens, str) or not isinstance(tokens, Sequence):
            raise TypeError("tokens must be a list of str (the words, without <pad>)")
        tokens = list(tokens)
        if not tokens:
            raise ValueError("tokens is empty; a vocabulary needs at least one word")
        if not all(isinstance(t, str) and t for t in tokens):
            raise TypeError("every token must be a non-empty str")
        if PAD in tokens:
            raise ValueError(f"tokens must leave {PAD!r} out: Vocab puts it at id 0 itself")
        if len(set(tokens)) != len(tokens):
            dup = [t for t, c in Counter(tokens).items() if c > 1]
            raise ValueError(f"tokens must be unique, repeated: {dup}")
        self.itos = [PAD, *tokens]
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token) -> bool:
        return token in self.stoi

    def __repr__(self) -> str:
        return f"Vocab({len(self)} ids: {PAD} + {len(self) - 1} words)"

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token strings → ids. Raises ``ValueError`` naming unknown words."""
        if isinstance(tokens, str):
            raise TypeError("encode takes a list of tokens, not a str; split the text first "
                            "with book.toy.orders.tokenize(text)")
        tokens = validate.listed("tokens", tokens, "['一碗', '牛肉面']")
        unknown = [t for t in tokens if t not in self.stoi or t == PAD]
        if unknown:
            raise ValueError(f"unknown word(s) {unknown}; the vocabulary is: "
                             f"{' '.join(self.itos[1:])}")
        return [self.stoi[t] for t in tokens]

    def decode(self, ids, *, keep_pad: bool = False) -> list[str]:
        """Ids (list, numpy array or 1-D tensor) → tokens; padding is dropped unless
        ``keep_pad``."""
        validate.boolean("keep_pad", keep_pad)
        if isinstance(ids, torch.Tensor):
            if ids.ndim != 1:
                raise ValueError(f"decode takes one sequence (1-D), got shape {tuple(ids.shape)}"
                                 "; decode each row of a batch separately")
            ids = ids.tolist()
        ids = list(np.asarray(ids).reshape(-1).tolist()) if not isinstance(ids, list) else ids
        out = []
        for i in ids:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self):
                raise ValueError(f"id {i!r} is not in the vocabulary (ids 0..{len(self) - 1})")
            if i or keep_pad:
                out.append(self.itos[i])
        return out


VOCAB = Vocab(list(WORDS))


def encode(tokens: Sequence[str]) -> list[int]:
    """Tokens → ids with the default :data:`VOCAB`."""
    return VOCAB.encode(tokens)


def decode(ids, *, keep_pad: bool = False) -> list[str]:
    """Ids → tokens with the default :data:`VOCAB`."""
    return VOCAB.decode(ids, keep_pad=keep_pad)


# ---- tokenizing and labelling reader input -----------------------------------------------------

#: ASCII punctuation that :func:`tokenize` reads as the Chinese marks
ASCII_PUNCTUATION = {",": "，", ".": "。", ";": "，", "；": "，"}
_LONGEST = max(len(t) for t in WORDS)


class UnknownWord(ValueError):
    """:func:`tokenize` met a stretch that is no word of the language (``word``)."""

    def __init__(self, word: str, message: str):
        super().__init__(message)
        self.word = word


def tokenize(text: str) -> list[str]:
    """Split an order string into vocabulary words by greedy longest match.

    Whitespace is skipped and ASCII ``,`` ``.`` (and ``;``) count as ``，`` ``。``.
    ``tokenize("一碗牛肉面，不要香菜，多加辣")`` → ``['一碗', '牛肉面', '，', '不要', '香菜', '，',
    '多加', '辣']``. A stretch that no word matches raises ``ValueError`` naming it.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str such as '一碗牛肉面，不要香菜', got "
                        f"{type(text).__name__}")
    tokens, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in ASCII_PUNCTUATION:
            tokens.append(ASCII_PUNCTUATION[ch])
            i += 1
            continue
        for size in range(min(_LONGEST, len(text) - i), 0, -1):
            if text[i:i + size] in WORDS:
                tokens.append(text[i:i + size])
                i += size
                break
        else:
            j = i + 1
            while j < len(text) and not text[j].isspace() and not any(
                    text.startswith(t, j) for t in WORDS):
                j += 1
            raise UnknownWord(text[i:j], f"cannot read {text[i:j]!r} (at character {i} of "
                              f"{text!r}): it is not a word of the order language. Known words: "
                              f"{' '.join(WORDS)}")
    if not tokens:
        raise ValueError("text holds no words; write an order such as '一碗牛肉面，不要香菜'")
    return tokens


def clauses(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """(start, stop) index ranges of the clauses; a clause includes its closing ``，``/``。``."""
    out, start = [], 0
    for i, tok in enumerate(tokens):
        if tok in CLAUSE_END:
            out.append((start, i + 1))
            start = i + 1
    if start < len(tokens):
        out.append((start, len(tokens)))
    return out


def label(tokens: Sequence[str]) -> list[str]:
    """The labels of a tokenized order, by the rules of the language (see the module doc).

    Within each clause: ingredients take the clause's modifier (none → ``normal``), the dish
    takes the clause's quantity (none → ``count_1``); everything else is :data:`NONE`.
    A clause with two modifiers, two quantities or two dishes is ambiguous and raises.
    """
    if isinstance(tokens, str):
        raise TypeError("label takes a list of tokens; use tokenize(text) first, or "
                        "Order.from_text(text)")
    tokens = [_known(t) for t in tokens]
    if not tokens:
        raise ValueError("tokens is empty; an order needs at least one word")
    labels = [NONE] * len(tokens)
    for start, stop in clauses(tokens):
        part = tokens[start:stop]
        text = " ".join(part)
        mods = [t for t in part if category(t) == "modifier"]
        qtys = [t for t in part if category(t) == "quantity"]
        dishes = [t for t in part if category(t) == "dish"]
        for kind, found in (("modifiers", mods), ("quantity words", qtys), ("dishes", dishes)):
            if len(found) > 1:
                raise ValueError(f"the clause '{text}' has {len(found)} {kind} ({found}); give "
                                 "each its own clause, separated by '，'")
        ingredient_label = WORDS[mods[0]][2] if mods else "normal"
        dish_label = f"count_{WORDS[qtys[0]][2] if qtys else 1}"
        for i in range(start, stop):
            cat = category(tokens[i])
            if cat == "ingredient":
                labels[i] = ingredient_label
            elif cat == "dish":
                labels[i] = dish_label
    return labels


@dataclass(frozen=True)
class Order:
    """One order: its tokens and their labels (:data:`NONE` for tokens that are not scored)."""

    tokens: tuple[str, ...]
    labels: tuple[str, ...]

    def __post_init__(self):
        tokens, labels = tuple(self.tokens), tuple(self.labels)
        if len(tokens) != len(labels):
            raise ValueError(f"an Order needs one label per token, got {len(tokens)} tokens and "
                             f"{len(labels)} labels")
        if not tokens:
            raise ValueError("an Order needs at least one token")
        for t in tokens:
            _known(t)
        for lab in labels:
            validate.choice("label", lab, (*LABELS, NONE))
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "labels", labels)

    @classmethod
    def from_tokens(cls, tokens: Sequence[str]) -> Order:
        """An order labelled by :func:`label`."""
        return cls(tuple(tokens), tuple(label(tokens)))

    @classmethod
    def from_text(cls, text: str) -> Order:
        """``Order.from_text("一碗牛肉面，不要香菜，多加辣")``: :func:`tokenize`, then
        :func:`label`."""
        return cls.from_tokens(tokenize(text))

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def text(self) -> str:
        return "".join(self.tokens)

    @property
    def glosses(self) -> tuple[str, ...]:
        return tuple(gloss(t) for t in self.tokens)

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(category(t) for t in self.tokens)

    @property
    def ids(self) -> list[int]:
        return VOCAB.encode(self.tokens)

    @property
    def label_ids(self) -> list[int]:
        """Label ids (index into :data:`LABELS`), :data:`IGNORE_INDEX` for unscored tokens."""
        return [IGNORE_INDEX if lab == NONE else LABELS.index(lab) for lab in self.labels]

    @property
    def english(self) -> str:
        """A word-by-word English gloss, e.g. ``a bowl of | beef noodles | , | no | …``."""
        return " | ".join(self.glosses)

    def table(self) -> list[tuple[str, str, str]]:
        """(token, gloss, label) rows, for printing or a DataFrame."""
        return list(zip(self.tokens, self.glosses, self.labels, strict=True))

    def __str__(self) -> str:
        return " ".join(t if lab == NONE else f"{t}[{lab}]"
                        for t, lab in zip(self.tokens, self.labels, strict=True))


# ---- the generator ---------------------------------------------------------------------------

_MODIFIERS_OF = defaultdict(list)
for _tok in MODIFIERS:
    _MODIFIERS_OF[WORDS[_tok][2]].append(_tok)


def _pick(rng: np.random.Generator, options):
    return options[int(rng.integers(len(options)))]


def _dish_clause(rng, dish: str) -> list[tuple[str, str]]:
    """A dish with its quantity before or after it (or none: one), with adjectives/fillers."""
    measures, adjective_choices = DISH_WORDS[dish]
    count = int(rng.choice([1, 2, 3], p=[0.4, 0.35, 0.25]))
    n_adj = min(len(adjective_choices), int(rng.choice([0, 1, 2], p=[0.45, 0.35, 0.2])))
    keep = sorted(rng.choice(len(adjective_choices), size=n_adj, replace=False).tolist())
    adjectives = [adjective_choices[i] for i in keep]
    label_ = f"count_{count}"
    style = rng.random()
    if style < 0.08:   # no quantity word: one
        label_ = "count_1"
        lead = [_pick(rng, ["来", "要", "给我"])] if rng.random() < 0.7 else []
        return [(t, NONE) for t in lead + adjectives] + [(dish, label_)]
    quantity = "一两三"[count - 1] + _pick(rng, measures)
    if style < 0.6:    # 来 两碗 招牌 牛肉面
        lead = [_pick(rng, ["来", "要", "再来", "给我"])] if rng.random() < 0.4 else []
        return [(t, NONE) for t in lead + [quantity] + adjectives] + [(dish, label_)]
    # 招牌 牛肉面 来 两碗
    mid = [_pick(rng, ["来", "要"])] if rng.random() < 0.5 else []
    return ([(t, NONE) for t in adjectives] + [(dish, label_)]
            + [(t, NONE) for t in mid + [quantity]])


def _ingredient_phrase(rng, items: list[str]) -> list[tuple[str, str]]:
    """Ingredients with one modifier before or after them (or none: normal)."""
    if len(items) == 1:
        listed = [items[0]]
    elif len(items) == 2:
        listed = [items[0], _pick(rng, ["和", "、"]), items[1]]
    else:
        listed = [items[0], "、", items[1], "和", items[2]]
    style = rng.random()
    if style < 0.12:   # no modifier: as usual
        lead = [_pick(rng, ["要", "也要", "放"])]
        return [(t, NONE) for t in lead] + [(t, _ing(t, "normal")) for t in listed]
    label_ = str(rng.choice(INGREDIENT_LABELS, p=[0.3, 0.28, 0.24, 0.18]))
    modifier = _pick(rng, _MODIFIERS_OF[label_])
    a_bit = ["一点"] if label_ in ("extra", "less") and rng.random() < 0.3 else []
    if style < 0.55:   # 不要 放 香菜 和 葱 / 多加 一点 辣
        lead = [modifier] + (["放"] if modifier in ("不要", "正常") and rng.random() < 0.4 else [])
        return [(t, NONE) for t in lead + a_bit] + [(t, _ing(t, label_)) for t in listed]
    # 香菜 和 葱 的话 都 不要 / 辣 多放 一点
    tail = (["的话"] if rng.random() < 0.2 else []) + (
        ["都"] if len(items) > 1 and rng.random() < 0.5 else []) + [modifier] + a_bit
    return [(t, _ing(t, label_)) for t in listed] + [(t, NONE) for t in tail]


def _ing(token: str, label_: str) -> str:
    return label_ if token in INGREDIENTS else NONE


def _order(rng: np.random.Generator) -> Order:
    n_dishes = int(rng.choice([1, 2, 3], p=[0.4, 0.4, 0.2]))
    dishes = list(rng.choice(DISHES, size=n_dishes, replace=False))
    pantry = list(rng.permutation(INGREDIENTS))
    parts: list[list[tuple[str, str]]] = []
    if rng.random() < 0.25:
        parts.append([(_pick(rng, ["老板", "你好"]), NONE)])

    def take() -> list[str]:
        size = min(len(pantry), int(rng.choice([1, 2, 3], p=[0.55, 0.3, 0.15])))
        return [pantry.pop() for _ in range(size)]

    for dish in dishes:
        clause = _dish_clause(rng, dish)
        if pantry and rng.random() < 0.3:   # 一碗 牛肉面 不要 香菜 (same clause)
            clause += _ingredient_phrase(rng, take())
        parts.append(clause)
        for _ in range(int(rng.choice([0, 1, 2], p=[0.25, 0.45, 0.3]))):
            if pantry:
                parts.append(_ingredient_phrase(rng, take()))
    if rng.random() < 0.2:
        parts.append([("谢谢", NONE)])
    pairs: list[tuple[str, str]] = []
    for i, part in enumerate(parts):
        pairs += part + [("。" if i == len(parts) - 1 else "，", NONE)]
    tokens, labels = zip(*pairs, strict=True)
    return Order(tokens, labels)


def generate(n_orders: int, seed: int = 0) -> list[Order]:
    """``n_orders`` random orders, the same ones for the same ``seed`` (numpy ``Generator``).

    Each order has 1–3 dishes (distinct), each followed by 0–2 clauses about ingredients
    (distinct within an order); quantities and modifiers come before or after their word.
    Orders are at most :data:`MAX_LEN` tokens long.
    """
    n_orders = validate.integer("n_orders", n_orders, low=1, high=10_000_000)
    seed = validate.integer("seed", seed, low=0)
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n_orders:
        order = _order(rng)
        if len(order) <= MAX_LEN:
            out.append(order)
    return out


def train_test_split(orders: Sequence[Order], test_fraction: float = 0.2,
                     seed: int = 0) -> tuple[list[Order], list[Order]]:
    """Split into (train, test) so that **no test order also occurs in train** (identical
    orders — short ones repeat — all land on the same side). ``test_fraction`` is the share of
    distinct orders held out."""
    orders = as_orders("orders", orders)
    test_fraction = validate.real("test_fraction", test_fraction, low=0.0, high=1.0)
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction={test_fraction} leaves one side empty; use a value "
                         "strictly between 0 and 1, e.g. 0.2")
    seed = validate.integer("seed", seed, low=0)
    keys = list(dict.fromkeys(o.tokens for o in orders))   # distinct, in first-seen order
    if len(keys) < 2:
        raise ValueError("need at least two distinct orders to split; generate more")
    rng = np.random.default_rng(seed)
    n_test = min(len(keys) - 1, max(1, round(test_fraction * len(keys))))
    test_keys = {keys[i] for i in rng.permutation(len(keys))[:n_test]}
    train = [o for o in orders if o.tokens not in test_keys]
    test = [o for o in orders if o.tokens in test_keys]
    return train, test


def as_orders(name: str, orders) -> list[Order]:
    """``orders`` as a non-empty list of :class:`Order` (one Order counts as a list of one),
    or a ``TypeError``/``ValueError`` naming the argument ``name``."""
    if isinstance(orders, Order):
        return [orders]
    if isinstance(orders, (str, bytes)) or not isinstance(orders, Sequence):
        raise TypeError(f"{name} must be a list of Order (from book.toy.orders.generate or "
                        f"Order.from_text), got {type(orders).__name__}")
    orders = list(orders)
    if not orders:
        raise ValueError(f"{name} is empty; pass at least one Order")
    bad = [type(o).__name__ for o in orders if not isinstance(o, Order)]
    if bad:
        raise TypeError(f"{name} must hold Order objects, found {bad[0]}; build them with "
                        "book.toy.orders.generate(n) or Order.from_text('一碗牛肉面，不要香菜')")
    return orders


# ---- batching --------------------------------------------------------------------------------

class Batch(NamedTuple):
    """A padded batch. ``ids`` (batch, seq) int64 with 0 = :data:`PAD`; ``padding_mask``
    (batch, seq) bool, ``True`` = real token (the book's convention); ``labels`` (batch, seq)
    int64 label ids, :data:`IGNORE_INDEX` for padding and unscored tokens."""

    ids: torch.Tensor
    padding_mask: torch.Tensor
    labels: torch.Tensor


def collate(orders: Sequence[Order], pad_to: int | None = None) -> Batch:
    """One :class:`Batch` from ``orders``, right-padded to the longest (or to ``pad_to``)."""
    orders = as_orders("orders", orders)
    longest = max(len(o) for o in orders)
    length = longest if pad_to is None else validate.integer("pad_to", pad_to, low=longest)
    # one tensor from padded Python lists: a tensor per order costs ~0.2 ms, and fit()
    # collates its whole training set (thousands of orders) on every call
    ids = torch.tensor([o.ids + [0] * (length - len(o)) for o in orders], dtype=torch.long)
    labels = torch.tensor([o.label_ids + [IGNORE_INDEX] * (length - len(o)) for o in orders],
                          dtype=torch.long)
    return Batch(ids, ids != 0, labels)


def batches(orders: Sequence[Order], batch_size: int = 64, *, shuffle: bool = False,
            seed: int = 0, drop_last: bool = False) -> Iterator[Batch]:
    """Yield padded :class:`Batch` es of ``batch_size`` orders (shuffled with ``seed`` if
    ``shuffle``). Each batch is padded to its own longest order."""
    orders = as_orders("orders", orders)
    batch_size = validate.integer("batch_size", batch_size, low=1)
    seed = validate.integer("seed", seed, low=0)
    validate.boolean("shuffle", shuffle)
    validate.boolean("drop_last", drop_last)
    index = np.random.default_rng(seed).permutation(len(orders)) if shuffle else \
        np.arange(len(orders))
    stop = len(orders) - len(orders) % batch_size if drop_last else len(orders)
    if stop == 0:
        raise ValueError(f"drop_last=True with batch_size={batch_size} > {len(orders)} orders "
                         "leaves no batch; lower batch_size")
    for start in range(0, stop, batch_size):
        yield collate([orders[i] for i in index[start:start + batch_size]])


# ---- statistics and baselines that cannot attend ----------------------------------------------

def stats(orders: Sequence[Order]) -> dict[str, float]:
    """Counts a chapter can quote: orders, tokens, scored tokens, mean/max length, label shares,
    and the share of ingredients whose modifier is more than one word away."""
    orders = as_orders("orders", orders)
    lengths = [len(o) for o in orders]
    labels = Counter(lab for o in orders for lab in o.labels if lab != NONE)
    scored = sum(labels.values())
    far = near = 0
    for o in orders:
        for start, stop in clauses(o.tokens):
            mods = [i for i in range(start, stop) if category(o.tokens[i]) == "modifier"]
            for i in range(start, stop):
                if category(o.tokens[i]) == "ingredient" and mods:
                    far += abs(mods[0] - i) > 1
                    near += abs(mods[0] - i) == 1
    out = {"orders": len(orders), "tokens": sum(lengths), "scored_tokens": scored,
           "mean_length": float(np.mean(lengths)), "max_length": max(lengths),
           "modifier_not_adjacent": far / max(1, far + near)}
    out.update({f"share_{lab}": labels[lab] / scored for lab in LABELS})
    return out
