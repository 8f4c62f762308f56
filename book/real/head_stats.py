"""What the 72 heads of all-MiniLM-L6-v2 look at, measured the way Clark et al. (2019) did.

Clark, Khandelwal, Levy and Manning, "What Does BERT Look At? An Analysis of BERT's
Attention" (BlackboxNLP 2019, arXiv:1906.04341) measured BERT-base's 144 heads on 1000
Wikipedia segments. The same measurements on :mod:`book.real.pretrained`'s model:

* :func:`token_shares`: mean attention each head puts on [CLS], [SEP], periods and commas,
  and on the previous, the same and the next token, with what an even spread would give;
* :func:`entropies`: mean row entropy per head (and from [CLS] alone);
* :func:`relation_accuracy`: how often a head's most-attended word is the labelled partner,
  on the hand-labelled determiner → noun pairs of :data:`SENTENCES`, against the best fixed
  offset (Clark et al.'s baseline);
* :func:`sink_test` and :func:`head_ablation`: what removing the attention on [SEP] (or
  whole heads) does to the sentence vectors.

:data:`PAPER` holds the paper's own numbers (BERT-base), quoted with their section.
"""

from __future__ import annotations

import re
import reprlib

import numpy as np
import torch

from book.kit import validate
from book.real.pretrained import SentenceModel, edited_attention

#: English sentences, hand-labelled: each [determiner] belongs to the next {noun}
#: (the head noun of its noun phrase; Stanford Dependencies' det relation).
LABELLED = [
    "[The] {animal} didn't cross [the] {street} because it was too tired.",
    "[The] {animal} didn't cross [the] {street} because it was too wide.",
    "I ate [an] {apple} and [a] {banana} for breakfast.",
    "Apple released [a] new {phone} at [the] {event} in California.",
    "[The] old {man} gave [the] {book} to [a] young {student}.",
    "[A] small {dog} chased [the] {cat} across [the] {garden}.",
    "[The] {children} played in [the] {park} until [the] {sun} went down.",
    "She put [the] hot {soup} on [the] wooden {table}, then sat down.",
    "[This] {restaurant} serves [the] best {noodles} in [the] {city}.",
    "[The] {waiter} brought [a] {bowl} of beef noodles without coriander.",
    "After [the] {meeting}, [the] {manager} sent [an] {email} to [every] {employee}.",
    "[The] {weather} was cold, so we stayed inside and read [a] long {novel}.",
    "[The] {train} to [the] {airport} leaves at nine o'clock.",
    "My brother bought [a] {bicycle} and painted [the] {frame} red.",
    "[The] {teacher} wrote [a] difficult {question} on [the] {board}.",
    "[These] {flowers} need more water than [those] {trees}.",
    "[A] {bird} built [a] {nest} in [the] tall {tree} behind [the] {house}.",
    "We watched [a] {film} about [a] {scientist} who studied [the] {ocean}.",
    "[The] {company} hired [a] {lawyer} to read [the] {contract}.",
    "He forgot [the] {keys} in [the] {car} again.",
    "[The] {rain} stopped, and [the] {streets} were quiet.",
    "[An] {engineer} repaired [the] broken {bridge} in [a] {week}.",
    "[The] {farmer} sold [the] fresh {eggs} at [the] {market}.",
    "Please close [the] {window}; [the] {room} is getting cold.",
    "[That] {song} reminds me of [a] {summer} by [the] {sea}.",
    "[The] {museum} opened [a] new {exhibition} about ancient Egypt.",
    "[Each] {player} received [a] {medal} after [the] {game}.",
    "[The] {baby} slept while [the] {parents} cooked dinner.",
    "[A] {storm} damaged [the] {roof} of [the] old {church}.",
    "[The] {pilot} told [the] {passengers} to fasten their seat belts.",
    "I drank [a] {cup} of coffee at [the] {station}.",
    "[The] {police} found [the] stolen {painting} in [an] empty {warehouse}.",
    "[Some] {students} asked [the] {professor} for [an] {extension}.",
    "[The] {chef} added [a] {pinch} of salt to [the] {sauce}.",
    "[The] {moon} rose over [the] quiet {village}.",
    "[The] {river} was so wide that [the] {boat} needed an {hour}.",
]

_MARK = re.compile(r"\[(\w+)\]|\{(\w+)\}")


def parse(marked: str) -> tuple[str, list[tuple[tuple[int, int], tuple[int, int]]]]:
    """A marked sentence → (plain text, [(determiner span, noun span)]) in characters.

    Each ``[word]`` pairs with the next ``{word}``; a ``{word}`` with no open determiner is
    a noun without one and pairs with nothing.
    """
    if not isinstance(marked, str):
        raise TypeError(f"marked must be a str such as '[the] {{cat}} sat', got "
                        f"{reprlib.repr(marked)} ({type(marked).__name__})")
    if set(_MARK.sub("", marked)) & set("[]{}"):
        raise ValueError(f"marked={marked!r} has a bracket that marks no single word: put "
                         "[determiner] and {noun} around one word each, e.g. '[the] {cat} sat'")
    plain, pairs, open_det, last = "", [], None, 0
    for m in _MARK.finditer(marked):
        plain += marked[last:m.start()]
        start = len(plain)
        word = m.group(1) or m.group(2)
        plain += word
        span = (start, start + len(word))
        if m.group(1):
            if open_det is not None:
                raise ValueError(f"marked has two determiners without a noun between them in "
                                 f"{marked!r}; follow each [determiner] with its {{noun}}")
            open_det = span
        elif open_det is not None:
            pairs.append((open_det, span))
            open_det = None
        last = m.end()
    if open_det is not None:
        raise ValueError(f"marked has a determiner without its noun in {marked!r}; follow "
                         "each [determiner] with its {noun}, e.g. '[the] {cat} sat'")
    return plain + marked[last:], pairs


SENTENCES = [parse(s)[0] for s in LABELLED]

#: Clark et al. (2019), BERT-base (12 layers × 12 heads), 1000 Wikipedia segments of at most
#: 128 tokens as [CLS] paragraph [SEP] paragraph [SEP]; section and wording of the paper.
PAPER = {
    "sep_layers": ("over half of BERT's attention in layers 6-10 (of 12) focuses on [SEP]",
                   "§3.2"),
    "cls_early": ("early heads attend to [CLS], middle heads to [SEP], deep heads to periods "
                  "and commas", "§3.2, Figure 2"),
    "sep_self": ("[SEP] tokens attend to themselves and the other [SEP] with more than 90% "
                 "of their attention", "§3.2"),
    "prev_heads": ("four heads (in layers 2, 4, 7 and 8) put more than 50% of their attention "
                   "on the previous token", "§3.1"),
    "next_heads": ("five heads (in layers 1, 2, 2, 3 and 6) put more than 50% on the next "
                   "token", "§3.1"),
    "broad": ("high-entropy heads, mostly in lower layers, put at most 10% of their attention "
              "on any single word", "§3.3"),
    "cls_entropy": ("the last layer's attention from [CLS] has an entropy of 3.89 nats",
                    "§3.3"),
    "sep_gradient": ("from layer 5 on, the gradient of the loss with respect to the attention "
                     "on [SEP] becomes very small: a no-op", "§3.2, Figure 3"),
    "det": ("head 8-11: the most-attended word of a determiner is its noun 94.3% of the "
            "time, against 51.7% for the best fixed offset (+1)", "§4.2, Table 1"),
}
PAPER_NUMBERS = {"sep_from_layer": 6, "sep_to_layer": 10, "paper_layers": 12,
                 "prev_heads": 4, "next_heads": 5, "cls_entropy": 3.89, "det_acc": 94.3,
                 "det_baseline": 51.7, "sep_self": 90, "broad_max": 10}


def _check(model):
    if not isinstance(model, SentenceModel):
        raise TypeError(f"model must be a book.real.pretrained.SentenceModel "
                        f"(book.real.pretrained.load())"
                        f", got {type(model).__name__}")
    return model


def _check_maps(maps) -> list[dict]:
    if not isinstance(maps, (list, tuple)) or not maps:
        raise ValueError("maps must be a non-empty list: pass all_maps(model, sentences)")
    for d in maps:
        if not (isinstance(d, dict) and {"maps", "tokens", "words"} <= set(d)):
            raise TypeError("each entry of maps must be a dict from SentenceModel.attention "
                            "(keys 'maps', 'tokens', 'words'): pass all_maps(model, sentences)")
    return list(maps)


def _check_shares(shares, kinds=()) -> dict:
    if not isinstance(shares, dict) or not shares:
        raise TypeError("shares must be the dict token_shares(maps) returns ({kind: {'mass': "
                        f"(layers, heads) array, 'even': share}}}}), got {reprlib.repr(shares)}")
    missing = [kind for kind in kinds if kind not in shares]
    if missing:
        raise ValueError(f"shares has no {missing} (it has {list(shares)}); pass "
                         "token_shares(maps)")
    for kind, v in shares.items():
        if not (isinstance(v, dict) and "mass" in v):
            raise TypeError(f"shares[{kind!r}] must be a dict with a 'mass' array (layers, "
                            f"heads), as token_shares(maps) returns, got {reprlib.repr(v)}")
        validate.array(f"shares[{kind!r}]['mass']", v["mass"], ndim=2)
    return shares


def all_maps(model: SentenceModel, sentences) -> list[dict]:
    """The attention maps of each sentence (:meth:`SentenceModel.attention_many`), with its
    ``text``."""
    _check(model)
    texts = validate.texts("sentences", sentences)
    return [dict(d, text=s) for d, s in zip(model.attention_many(texts), texts, strict=True)]


PUNCTUATION = (".", ",")  # Clark et al. count periods and commas


def token_shares(maps: list[dict]) -> dict:
    """Mean attention per (layer, head) on each kind of key, averaged over every query of
    every sentence, with the ``even`` share a uniform row would give.

    Kinds: "[CLS]", "[SEP]", "periods and commas", "previous token", "same token",
    "next token". Returns {kind: {"mass": (L, H), "even": float}} and "[SEP] → [SEP]".
    """
    maps = _check_maps(maps)
    sums: dict[str, list] = {}
    evens: dict[str, list] = {}
    sep_self = []
    for d in maps:
        w, toks = d["maps"], d["tokens"]  # (L, H, n, n)
        n = len(toks)
        cols = {"[CLS]": [t == "[CLS]" for t in toks], "[SEP]": [t == "[SEP]" for t in toks],
                "periods and commas": [t in PUNCTUATION for t in toks]}
        for kind, sel in cols.items():
            sums.setdefault(kind, []).append(w[..., sel].sum(-1).mean(-1))
            evens.setdefault(kind, []).append(sum(sel) / n)
        for kind, k in (("previous token", -1), ("same token", 0), ("next token", 1)):
            rows = np.arange(max(0, -k), n - max(0, k))
            sums.setdefault(kind, []).append(w[..., rows, rows + k].mean(-1))
            evens.setdefault(kind, []).append(1 / n)
        sep = [i for i, t in enumerate(toks) if t == "[SEP]"]
        sep_self.append(w[..., sep, :][..., sep].sum(-1).mean(-1))
    out = {k: {"mass": np.mean(v, axis=0), "even": float(np.mean(evens[k]))}
           for k, v in sums.items()}
    out["[SEP] → [SEP]"] = {"mass": np.mean(sep_self, axis=0), "even": out["[SEP]"]["even"]}
    return out


def per_layer(shares: dict) -> dict:
    """{kind: (L,) mean over the heads of each layer}."""
    return {k: np.asarray(v["mass"]).mean(axis=1) for k, v in _check_shares(shares).items()}


def positional_heads(shares: dict, threshold: float = 0.5) -> dict:
    """Heads that put more than ``threshold`` on the previous / next token, strongest first:
    {"previous token": [(layer, head, share)], "next token": [...]}."""
    threshold = validate.real("threshold", threshold, low=0.0, high=1.0)
    _check_shares(shares, ("previous token", "next token"))
    out = {}
    for kind in ("previous token", "next token"):
        m = np.asarray(shares[kind]["mass"])
        found = [(int(i), int(j), float(m[i, j])) for i, j in zip(*np.nonzero(m > threshold),
                                                                  strict=True)]
        out[kind] = sorted(found, key=lambda t: -t[2])
    return out


def entropies(maps: list[dict]) -> dict:
    """Mean row entropy in nats per (layer, head): ``all`` rows, the [CLS] row alone
    (``cls``), the largest single weight of a row (``max_weight``, mean over rows), and
    ``even``: the mean of log n (a uniform row)."""
    maps = _check_maps(maps)
    ent, cls, top, even = [], [], [], []
    for d in maps:
        w = np.clip(d["maps"], 1e-12, 1.0)
        e = -(d["maps"] * np.log(w)).sum(-1)  # (L, H, n)
        ent.append(e.mean(-1))
        cls.append(e[..., 0])
        top.append(d["maps"].max(-1).mean(-1))
        even.append(np.log(len(d["tokens"])))
    return {"all": np.mean(ent, axis=0), "cls": np.mean(cls, axis=0),
            "max_weight": np.mean(top, axis=0), "even": float(np.mean(even))}


# --- word-level maps and a labelled relation ------------------------------------------------

def word_map(d: dict) -> np.ndarray:
    """One head's token maps → word maps (L, H, words, words), as Clark et al. do: attention
    *to* a word split into pieces is summed over its pieces, *from* it averaged; [CLS] and
    [SEP] are dropped."""
    if not (isinstance(d, dict) and {"maps", "words"} <= set(d)):
        raise TypeError("d must be one sentence's maps, a dict with 'maps' (layers, heads, n, n) "
                        "and 'words' (an entry of all_maps(model, sentences)), got "
                        f"{reprlib.repr(d)}")
    words = validate.listed("d['words']", d["words"], "[None, 0, 1, 1, None]")
    shape = validate.array("d['maps']", d["maps"], ndim=4).shape
    if shape[2] != len(words) or shape[3] != len(words):
        raise ValueError(f"d['maps'] has shape {shape} but d['words'] has {len(words)} tokens: "
                         "the map of one sentence is (layers, heads, n, n), n = its tokens")
    ids = sorted({w for w in words if w is not None})
    onehot = np.zeros((len(words), len(ids)))
    for t, w in enumerate(words):
        if w is not None:
            onehot[t, ids.index(w)] = 1.0
    to_words = d["maps"] @ onehot  # (L, H, n, W): summed over each word's pieces
    return np.einsum("tw,lhtv->lhwv", onehot / onehot.sum(0), to_words)


def _word_of(model: SentenceModel, text: str, span) -> int:
    t = model.tokenize(text)
    for w, (s, _) in zip(t.words, t.offsets, strict=True):
        if w is not None and s == span[0]:
            return w
    raise ValueError(f"no token of {text!r} starts at character {span[0]}: mark whole words "
                     "in marked, e.g. '[the] {cat} sat'")


def labelled_pairs(model: SentenceModel, marked=None) -> list[dict]:
    """The determiner → noun pairs of :data:`LABELLED` (or ``marked``) as word indices."""
    _check(model)
    out = []
    for i, m in enumerate(LABELLED if marked is None else validate.texts("marked", marked)):
        text, pairs = parse(m)
        n_words = len({w for w in model.tokenize(text).words if w is not None})
        for det, noun in pairs:
            out.append({"sentence": i, "text": text, "n_words": n_words,
                        "det": _word_of(model, text, det), "noun": _word_of(model, text, noun),
                        "det_word": text[det[0]:det[1]], "noun_word": text[noun[0]:noun[1]]})
    return out


_PAIR_KEYS = ("sentence", "det", "noun", "text", "n_words")


def _check_pairs(pairs) -> list[dict]:
    if not isinstance(pairs, (list, tuple)) or not pairs or not all(
            isinstance(p, dict) and all(k in p for k in _PAIR_KEYS) for p in pairs):
        raise TypeError(f"pairs must be a non-empty list of dicts with {list(_PAIR_KEYS)}: "
                        "pass labelled_pairs(model)")
    return list(pairs)


def relation_accuracy(pairs: list[dict], maps: list[dict], offsets=(-3, -2, -1, 1, 2, 3),
                      sentences=None) -> dict:
    """Per (layer, head): how often the determiner's most-attended *other* word is its noun.

    ``maps``: :func:`all_maps` of :data:`SENTENCES` (one per labelled sentence, same order);
    ``sentences``: use only the pairs of these sentence indices (None = all). Returns
    ``accuracy`` (L, H), ``offset`` {k: accuracy of always answering the word k places on},
    ``chance`` (mean of 1 / (words − 1)) and ``n`` (pairs used).
    """
    maps = _check_maps(maps)
    pairs = _check_pairs(pairs)
    offsets = validate.integers("offsets", offsets, "(-1, 1)")
    if not offsets or 0 in offsets:
        raise ValueError(f"offsets must hold at least one non-zero word offset (0 is the word "
                         f"itself), e.g. (-1, 1); got {offsets}")
    if sentences is not None:
        sentences = validate.integers("sentences", sentences, "[0, 2, 4]", low=0)
    use = [p for p in pairs if sentences is None or p["sentence"] in set(sentences)]
    if not use:
        raise ValueError("no pairs to score: pass labelled_pairs(model) and valid sentences")
    if max(p["sentence"] for p in use) >= len(maps):
        raise ValueError(f"maps has {len(maps)} sentences but the pairs need "
                         f"{max(p['sentence'] for p in use) + 1}: pass all_maps(model, "
                         "SENTENCES)")
    words = {}
    hits = np.zeros(maps[0]["maps"].shape[:2])
    for p in use:
        if p["sentence"] not in words:
            d = maps[p["sentence"]]
            if d["text"] != p["text"]:
                raise ValueError(f"maps[{p['sentence']}] is of {d['text']!r}, not of "
                                 f"{p['text']!r}: pass all_maps(model, SENTENCES)")
            words[p["sentence"]] = word_map(d)
        row = words[p["sentence"]][:, :, p["det"], :].copy()
        row[..., p["det"]] = -1.0  # the word itself does not count
        hits += row.argmax(-1) == p["noun"]
    offset = {k: float(np.mean([p["det"] + k == p["noun"] for p in use])) for k in offsets}
    chance = float(np.mean([1 / (p["n_words"] - 1) for p in use]))
    return {"accuracy": hits / len(use), "offset": offset, "chance": chance, "n": len(use)}


def held_out_head(pairs: list[dict], maps: list[dict]) -> dict:
    """Pick the best head on the even-numbered sentences, score it on the odd ones (so the
    reported accuracy is not inflated by choosing the best of 72 on the same pairs)."""
    ids = sorted({p["sentence"] for p in _check_pairs(pairs)})
    _check_maps(maps)
    pick = relation_accuracy(pairs, maps, sentences=ids[0::2])
    test = relation_accuracy(pairs, maps, sentences=ids[1::2])
    head = tuple(int(v) for v in np.unravel_index(pick["accuracy"].argmax(),
                                                  pick["accuracy"].shape))
    return {"head": head, "pick_accuracy": float(pick["accuracy"][head]),
            "test_accuracy": float(test["accuracy"][head]), "n_pick": pick["n"],
            "n_test": test["n"], "test_offset": max(test["offset"].values())}


def coreference_flip(model: SentenceModel, pair=None) -> dict:
    """The classic pair "… because it was too tired / wide": per head, the weight from "it"
    on "animal" minus on "street" in each sentence. A head that resolves the pronoun would
    prefer "animal" in the first and "street" in the second (``flips``)."""
    _check(model)
    pair = COREFERENCE if pair is None else validate.texts("pair", pair)
    if len(pair) != 2:
        raise ValueError(f"pair must be two sentences (the 'tired' one, then the 'wide' one), "
                         f"got {len(pair)}: {pair!r}")
    for i, text in enumerate(pair):
        missing = [w for w in ("it", "animal", "street") if w not in model.tokenize(text).tokens]
        if missing:
            raise ValueError(f"pair[{i}]={text!r} lacks the token(s) {missing}; each sentence of "
                             "pair needs 'it', 'animal' and 'street', as COREFERENCE has")
    diffs = []
    for text in pair:
        d = model.attention(text)
        t = d["tokens"]
        w = d["maps"][:, :, t.index("it")]
        diffs.append(w[..., t.index("animal")] - w[..., t.index("street")])
    flips = (diffs[0] > 0) & (diffs[1] < 0)
    return {"tired": diffs[0], "wide": diffs[1], "flips": flips}


COREFERENCE = ("The animal didn't cross the street because it was too tired.",
               "The animal didn't cross the street because it was too wide.")


# --- ablations ---------------------------------------------------------------------------------

def _embed_change(model: SentenceModel, texts, base: np.ndarray, **edit) -> float:
    with edited_attention(model, **edit):
        e = model.embed(texts)
    return float(np.mean(1.0 - (e * base).sum(-1)))  # mean 1 − cosine


def sink_test(model: SentenceModel, sentences) -> dict:
    """Zero, in every head, the weight on one kind of key (no renormalisation: each row then
    sums to less than 1) and measure how far the sentence vectors move (mean 1 − cosine).

    Kinds: "[SEP]", "[CLS]", "periods and commas", and "one word" (the middle word of each
    sentence, as a control). Returns {kind: {"mass": mean weight removed, "change": …}}.
    """
    _check(model)
    texts = validate.texts("sentences", sentences)
    toks, ids, real = model.batch(texts)
    base = model.embed(texts)
    with torch.no_grad(), edited_attention(model) as m:
        _, maps = m.encoder(ids, padding_mask=real, need_weights=True)
    w = torch.stack(maps)  # (L, B, H, n, n)
    select = {
        "[SEP]": lambda t: [x == "[SEP]" for x in t.tokens],
        "[CLS]": lambda t: [x == "[CLS]" for x in t.tokens],
        "periods and commas": lambda t: [x in PUNCTUATION for x in t.tokens],
        "one word": lambda t: [i == len(t) // 2 for i in range(len(t))],
    }
    out = {}
    for kind, f in select.items():
        keys = torch.zeros_like(real)
        for b, t in enumerate(toks):
            keys[b, :len(t)] = torch.tensor(f(t))
        rows = real[None, :, None, :, None].expand_as(w[..., :1]).squeeze(-1)
        removed = (w * keys[None, :, None, None, :]).sum(-1)  # (L, B, H, n)
        mass = float(removed[rows].mean())
        out[kind] = {"mass": mass, "change": _embed_change(model, texts, base, keys=keys)}
    return out


def head_ablation(model: SentenceModel, sentences, heads) -> float:
    """Mean 1 − cosine between the sentence vectors with and without the (layer, head)
    pairs in ``heads`` (their weights zeroed)."""
    _check(model)
    texts = validate.texts("sentences", sentences)
    heads = validate.head_pairs("heads", heads, model.config.n_layers, model.config.n_heads)
    if not heads:
        raise ValueError("heads is empty: pass at least one (layer, head) pair")
    return _embed_change(model, texts, model.embed(texts), heads=heads)


def sink_heads(shares: dict, kinds=("[CLS]", "[SEP]"), threshold: float = 0.5) -> list:
    """(layer, head) pairs that put more than ``threshold`` of their attention on ``kinds``
    together, most first."""
    threshold = validate.real("threshold", threshold, low=0.0, high=1.0)
    _check_shares(shares)
    kinds = validate.listed("kinds", kinds, "('[CLS]', '[SEP]')", allow_empty=False)
    for kind in kinds:
        validate.choice("kinds", kind, tuple(shares))
    mass = sum(np.asarray(shares[k]["mass"]) for k in kinds)
    return [lh for lh in ranked_heads(mass) if mass[lh] > threshold]


def ranked_heads(mass: np.ndarray) -> list[tuple[int, int]]:
    """(layer, head) pairs from the largest ``mass`` to the smallest."""
    validate.array("mass", mass, ndim=2)
    mass = np.asarray(mass)
    order = np.argsort(-mass, axis=None, kind="stable")
    return [tuple(int(v) for v in np.unravel_index(i, mass.shape)) for i in order]
