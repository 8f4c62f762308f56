"""Type your own order in the HTML book: a trained encoder's weights for the page, and the text
box that runs it there (``encoder.js``: the tokenizer, the forward pass and the redraw).

The page needs no kernel: :func:`model_script` writes a model as one small script that assigns
``window.bookModels[name]`` (weights as base64 little-endian float32, the vocabulary with each
word's gloss, category and value), loaded with a ``<script src>`` beside ``encoder.js`` (a
``fetch`` of a local file is refused under ``file://``). :func:`control_html` is the one control
row a chapter page shows next to its views: a text box, and a line for what happened.
This module draws nothing itself and knows no model class: the chapter gives it plain values.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np

from book.kit import validate

SCRIPT = Path(__file__).with_name("encoder.js")
NORMS = ("pre", "post", "none")
CONFIG_KEYS = ("d_model", "n_heads", "n_layers", "max_len", "norm", "positions")
VIEWS = ("head", "model")


@cache
def script() -> str:
    """The page's engine (encoder.js)."""
    return SCRIPT.read_text(encoding="utf-8")


def payload(config: Mapping, state: Mapping, itos: Sequence[str], words: Mapping,
            labels: Sequence[str], ingredient_labels: int, none: str = "-") -> dict:
    """What the page needs to run one encoder, as plain JSON values.

    Args:
        config: the model's settings (``model.config``): at least :data:`CONFIG_KEYS`.
        state: parameter name → array (``model.state_dict()``), stored as float32.
        itos: the vocabulary, id → token (id 0 the padding token).
        words: token → (gloss, category, value), as :data:`book.toy.orders.WORDS`.
        labels: the label names, in the classifier's order; the first
            ``ingredient_labels`` are an ingredient's, the rest a dish's.
        none: the label of tokens the model does not score.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping such as model.config, got "
                        f"{type(config).__name__}")
    missing = [k for k in CONFIG_KEYS if k not in config]
    if missing:
        raise ValueError(f"config lacks {missing}; pass the model's config (model.config)")
    validate.choice("config['norm']", config["norm"], NORMS)
    if config.get("attention", "scratch") not in ("scratch", "sdpa"):
        raise ValueError(f"the page runs plain multi-head attention only, not "
                         f"attention={config['attention']!r}; export a model built with "
                         "attention='scratch' or 'sdpa'")
    if not isinstance(state, Mapping) or not state:
        raise TypeError("state must be a non-empty mapping name → array (model.state_dict())")
    itos = [str(t) for t in validate.listed("itos", itos, "['<pad>', '一碗', …]",
                                            allow_empty=False)]
    if not isinstance(words, Mapping) or not words:
        raise TypeError("words must be a mapping token → (gloss, category, value)")
    labels = [str(x) for x in validate.listed("labels", labels, "['omit', …]", allow_empty=False)]
    ingredient_labels = validate.integer("ingredient_labels", ingredient_labels, low=1,
                                         high=len(labels) - 1)
    weights = {}
    for name, value in state.items():
        array = np.asarray(value.detach().cpu() if hasattr(value, "detach") else value,
                           dtype="<f4")
        weights[name] = {"shape": list(array.shape),
                         "data": base64.b64encode(array.tobytes()).decode("ascii")}
    return {"config": {k: config[k] for k in CONFIG_KEYS}, "itos": itos,
            "words": {t: [str(g), str(c), v] for t, (g, c, v) in words.items()},
            "labels": labels, "ingredient_labels": ingredient_labels, "none": str(none),
            "weights": weights}


def model_script(name: str, data: dict) -> str:
    """``data`` (a :func:`payload`) as a script that assigns ``window.bookModels[name]``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a plain identifier such as 'orders_tiny', got {name!r}")
    if not isinstance(data, dict) or "weights" not in data:
        raise TypeError("data must be a payload(...) dict")
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return ("window.bookModels = window.bookModels || {};\n"
            f"window.bookModels[{json.dumps(name)}] = {body};\n")


def control_html(model: str, strings: Mapping, views: Sequence[str] = VIEWS, *,
                 placeholder: str = "", label: str = "") -> str:
    """The control row: a text box, and a live region for the result or what to fix.

    ``strings`` holds what encoder.js writes (the chapter's string table in the page's
    language): ``empty``, ``unknown`` (fields ``{word}``, ``{at}``, ``{words}``), ``long``
    (``{n}``, ``{max_len}``), ``done`` (``{n}``, ``{views}``, ``{ms}``), ``menu``,
    ``caption_model`` (``{marks}``), ``should_be`` (``{label}``), ``label_names``,
    ``vocabulary``, ``lang``, ``width`` and ``digits``.
    """
    if not isinstance(model, str) or not model.isidentifier():
        raise ValueError(f"model must be the exported model's name, e.g. 'orders_tiny', got "
                         f"{model!r}")
    needed = ("empty", "unknown", "long", "done", "menu", "caption_model", "should_be",
              "label_names", "vocabulary", "lang", "width", "digits")
    if not isinstance(strings, Mapping):
        raise TypeError(f"strings must be a mapping, got {type(strings).__name__}")
    missing = [k for k in needed if k not in strings]
    if missing:
        raise ValueError(f"strings lacks {missing}")
    views = list(views)
    for v in views:
        validate.choice("view", v, VIEWS)
    spec = {**strings, "model": model, "views": views}
    attr = html.escape(json.dumps(spec, ensure_ascii=False), quote=True)
    return (f'<div class="book-typed" data-typed="{attr}">'
            f'<label>{html.escape(label)} <input type="text" autocomplete="off" '
            'spellcheck="false" style="width:min(26em,100%);font-size:1rem" '
            f'placeholder="{html.escape(placeholder, quote=True)}"></label>'
            '<p class="book-typed-message" role="status" aria-live="polite"></p></div>')


class Control:
    """A cell's output: the control row in the book's HTML, ``text`` where there is none."""

    def __init__(self, html_text: str, text: str):
        self.html, self.text = html_text, text

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html, "text/plain": self.text}

    def __repr__(self) -> str:
        return self.text
