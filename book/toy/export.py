"""A trained :class:`~book.toy.model.TinyEncoder` and its order language as plain data for a page.

The book's HTML computes the typed orders of chapters 6 and 8 in the page itself
(``book/face/inpage/``: ``tokens.js``, ``encoder.js``; explorers ``order``, ``order_model``,
``head_maps``): tokenizer, embeddings and positions, each block's attention and feed-forward,
the classifier.
:func:`page_model` gives it the weights, each tensor as its shape and its float32 bytes in
base64 (exact, and a third of the size of decimal text);
:func:`page_language` the vocabulary with each word's category, gloss and value, and the labels.
Both are JSON values; nothing here draws. :func:`model_from_page` reads the weights back into
a model (the tests run torch on what a built page holds).
"""

from __future__ import annotations

import base64

import numpy as np
from torch import nn

from book.kit import validate
from book.toy import orders
from book.toy.model import ATTENTIONS, check_encoder

FORMAT = 1  # what the page's encoder.js reads; raise it when the layout of page_model changes


def _packed(tensor) -> dict:
    array = np.ascontiguousarray(tensor.detach().cpu().numpy(), dtype="<f4")
    return {"shape": list(array.shape), "data": base64.b64encode(array.tobytes()).decode()}


def page_model(model, maps_only: bool = False) -> dict:
    """``model``'s configuration and every tensor of its ``state_dict`` (names as there), for
    the page's forward pass. The page computes the book's own attention (scratch or sdpa: the
    same weights); a model built with a chapter-10 variant raises. ``maps_only``: only what
    reaches an attention map (the last block's values, output projection, feed-forward and
    second norm, the final norm and the classifier left out: a third less for a page that
    draws maps and no labels)."""
    model = check_encoder(model)
    validate.boolean("maps_only", maps_only)
    c = model.config
    if c.attention not in ATTENTIONS:
        raise ValueError(f"the page computes full attention only; this model uses "
                         f"{c.attention!r}: export one built with attention in {ATTENTIONS}")
    eps = {m.eps for m in model.modules() if isinstance(m, nn.LayerNorm)}
    if len(eps) > 1:
        raise ValueError(f"the model's LayerNorms use different eps {sorted(eps)}; the page "
                         "uses one")
    last = f"blocks.{c.n_layers - 1}."
    beyond = (last + "attn.w_v.", last + "attn.w_o.", last + "ff.", last + "norm2.",
              "final_norm.", "head.") + ((last + "norm1.",) if c.norm == "post" else ())
    tensors = {name: _packed(t) for name, t in model.state_dict().items()
               if not (maps_only and name.startswith(beyond))}
    return {"format": FORMAT, "id": _digest(tensors), "maps_only": maps_only, "d_model": c.d_model,
            "n_heads": c.n_heads, "n_layers": c.n_layers, "d_ff": c.d_ff, "max_len": c.max_len,
            "norm": c.norm, "positions": c.positions, "n_labels": c.n_labels,
            "eps": eps.pop() if eps else 1e-5, "tensors": tensors}


def page_model_ref(model) -> dict:
    """A reference to ``model``'s weights where another cell of the same page carries them
    (:func:`page_model`): the page reads them from there, and the page weighs one copy."""
    return {"format": FORMAT,
            "same_as": _digest({name: _packed(t)
                                for name, t in check_encoder(model).state_dict().items()})}


def _digest(tensors: dict) -> str:
    import hashlib

    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(f"{name}{tensors[name]['shape']}{tensors[name]['data']}".encode())
    return h.hexdigest()[:16]


def model_from_page(page: dict):
    """The :class:`~book.toy.model.TinyEncoder` whose weights :func:`page_model` wrote (what a
    test reads back out of a built page, to run torch on the page's own checkpoint). A
    ``maps_only`` page leaves out what reaches no attention map: those weights keep their
    initial values, so the model's maps are the checkpoint's and its labels are not."""
    import torch

    from book.toy.model import TinyEncoder

    if not isinstance(page, dict) or page.get("format") != FORMAT or "tensors" not in page:
        raise ValueError(f"page must be what page_model writes (format {FORMAT}, with tensors), "
                         f"got {str(page)[:80]!r}")
    tensors = {name: torch.from_numpy(np.frombuffer(base64.b64decode(entry["data"]), dtype="<f4")
                                      .reshape(entry["shape"]).copy())
               for name, entry in page["tensors"].items()}
    model = TinyEncoder(tensors["embed.weight"].shape[0], page["n_labels"],
                        d_model=page["d_model"], n_heads=page["n_heads"],
                        n_layers=page["n_layers"], d_ff=page["d_ff"], max_len=page["max_len"],
                        norm=page["norm"], positions=page["positions"])
    model.load_state_dict(tensors, strict=not page.get("maps_only", False))
    return model.eval()


def page_language() -> dict:
    """The order language as :func:`book.toy.orders.tokenize`, :func:`~book.toy.orders.label`
    and :func:`book.toy.probe.label_argmax` use it: ``ids`` (word → id of
    :data:`book.toy.orders.VOCAB`), ``words`` (word → [gloss, category, value]), the longest
    word's length, the ASCII punctuation read as Chinese, the clause ends, ``labels`` in id order
    and how many of them are ingredient labels."""
    return {"ids": {w: orders.VOCAB.stoi[w] for w in orders.WORDS},
            "words": {w: [g, cat, value] for w, (g, cat, value) in orders.WORDS.items()},
            "longest": max(len(w) for w in orders.WORDS),
            "ascii": dict(orders.ASCII_PUNCTUATION), "clause_end": list(orders.CLAUSE_END),
            "labels": list(orders.LABELS), "n_ingredient": len(orders.INGREDIENT_LABELS),
            "none": orders.NONE}
