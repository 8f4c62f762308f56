"""In-page explorers of the HTML book: a figure whose controls recompute it in the page itself.

Where a live explorer's computation is small (chapter 2's d_k sampler and softmax row, chapter
4's mask explorer, chapter 9's window explorer, and the typed orders of chapter 8's head and
model views and chapter 6's head maps: a toy encoder's forward pass over its exported weights,
book/toy/export.py), the book's page does it
with no kernel: the page script (the modules of ``inpage/``, one idea each and one file per
explorer under ``inpage/explorers/``, joined into ``_static/book-inpage.js`` by
:mod:`book.site.scripts` and loaded on the pages that hold one) recomputes the data in plain
JavaScript from the controls above the figure and redraws it with ``Plotly.update``. It works
from ``file://`` and makes no request. Jupyter keeps the ipywidgets explorer of
:mod:`book.face.live`: :func:`either` picks the face for where the notebook runs.

A chapter gives :class:`InPage` its figure (the first state, drawn by Python), its controls
(:func:`slider`, :func:`select`, :func:`text_box`, labelled from the string table) and a
``spec``: the plain values the script needs (fixed arrays, weights, title templates from
:func:`templates`). This module draws nothing itself and knows no explorer's maths.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from book.face import controls as controls_mod
from book.face.controls import check_label, check_name
from book.face.display import in_build
from book.kit import i18n, validate

SCRIPTS = Path(__file__).with_name("inpage")   # the page script's modules (book.site.scripts)
PLOTLY_MIME = "application/vnd.plotly.v1+json"   # the figure's JSON: JupyterLab's and the PDF's
# what the page script knows how to recompute: one module of inpage/explorers/ each, named as
# the explorer it registers (adding an explorer adds its file there)
EXPLORERS = tuple(sorted(p.stem for p in (SCRIPTS / "explorers").glob("*.js")))
_FIELD = re.compile(r"\{(\w+)(?::[^{}]*)?\}")


def slider(name: str, label: str, low: int, high: int, value: int, step: int = 1) -> dict:
    """An integer control: a range input and a number input beside it, kept in step."""
    name = check_name(name)
    low = validate.integer("low", low)
    high = validate.integer("high", high)
    if high <= low:
        raise ValueError(f"slider {name!r}: high={high} must be above low={low}")
    step = validate.integer("step", step, low=1, high=high - low)
    value = validate.integer("value", value, low=low, high=high)
    if (value - low) % step:
        raise ValueError(f"slider {name!r}: value={value} is not on a step of {step} from "
                         f"{low}; pick a value low + k·step")
    return {"kind": "range", "name": name, "label": check_label(label), "low": low, "high": high,
            "step": step, "value": value}


def select(name: str, label: str, options: Sequence[tuple[str, str]], value: str) -> dict:
    """A menu: ``options`` are (value, what the reader reads) pairs; ``value`` is chosen first."""
    name = check_name(name)
    if isinstance(options, (str, bytes)) or not isinstance(options, Sequence) or not options:
        raise TypeError(f"select {name!r}: options must be a non-empty list of (value, label) "
                        f"pairs, got {options!r}")
    pairs = []
    for option in options:
        if (not isinstance(option, tuple) or len(option) != 2
                or not all(isinstance(x, str) for x in option)):
            raise TypeError(f"select {name!r}: each option must be a (value, label) pair of "
                            f"strings, got {option!r}")
        pairs.append(option)
    values = [v for v, _ in pairs]
    if len(set(values)) != len(values):
        raise ValueError(f"select {name!r}: option values repeat in {values}; give each its own")
    validate.choice("value", value, values)
    return {"kind": "select", "name": name, "label": check_label(label), "options": pairs,
            "value": value}


def text_box(name: str, label: str, value: str, max_chars: int = 400) -> dict:
    """A line of text the reader types (at most ``max_chars`` characters): every keystroke
    redraws."""
    name = check_name(name)
    max_chars = validate.integer("max_chars", max_chars, low=1)
    if not isinstance(value, str):
        raise TypeError(f"text box {name!r}: value must be a str, got {type(value).__name__}")
    if len(value) > max_chars:
        raise ValueError(f"text box {name!r}: value has {len(value)} characters, over "
                         f"max_chars={max_chars}")
    return {"kind": "text", "name": name, "label": check_label(label), "value": value,
            "max_chars": max_chars}


def templates(figure, messages: Mapping[str, tuple[str, Mapping[str, str]] | str]) -> dict:
    """The titles the page's script fills in, wrapped as the book's renderer wraps ``figure``.

    ``messages`` maps where a title goes (``"title"`` or ``"annotations[i]"``) to a string-table
    message with its ``{fields}`` kept, ``(msg_id, widest)``, or to a finished text. Each comes
    back in the book's language, broken into lines where :func:`book.face.plotting.tidy` would
    break it in that place of the figure, with each field as wide as its ``widest`` text (the
    widest value the controls reach): every state's title then fits where the first one did.
    """
    from book.face.plotting import tidy

    if not hasattr(figure, "to_dict"):
        raise TypeError(f"figure must be a plotly go.Figure, got {type(figure).__name__}")
    if not isinstance(messages, Mapping) or not messages:
        raise TypeError("messages must map 'title' or 'annotations[i]' to (msg_id, widest)")
    fig = figure.to_dict()
    layout = fig.setdefault("layout", {})
    fields: dict[str, list[tuple[str, str]]] = {}
    for where, message in messages.items():
        if isinstance(message, str):
            text, found = message, []
        else:
            text, found = _stand_ins(where, message)
        fields[where] = found
        if where == "title":
            layout["title"] = {**(layout.get("title") or {}), "text": text}
            continue
        index = re.fullmatch(r"annotations\[(\d+)\]", where)
        annotations = layout.get("annotations") or []
        if not index or int(index.group(1)) >= len(annotations):
            raise ValueError(f"{where!r} is not a title of this figure: use 'title' or "
                             f"'annotations[i]' with i < {len(annotations)}")
        annotations[int(index.group(1))]["text"] = text
    tidy(fig)
    out = {}
    for where, found in fields.items():
        text = (layout["title"]["text"] if where == "title" else
                layout["annotations"][int(where[12:-1])]["text"])
        for field, stand_in in found:
            text = text.replace(stand_in, field, 1)
        out[where] = text
    return out


def _stand_ins(where: str, message) -> tuple[str, list[tuple[str, str]]]:
    """The message's text with each field replaced by a run of one capital letter (a word the
    wrap never cuts) as wide as its widest value, and the (field, run) pairs."""
    if not (isinstance(message, tuple) and len(message) == 2
            and isinstance(message[0], str) and isinstance(message[1], Mapping)):
        raise TypeError(f"messages[{where!r}] must be (msg_id, {{field: widest text}}) or a "
                        f"text, got {message!r}")
    msg_id, widest = message
    entries = i18n.table()
    if msg_id not in entries:
        raise KeyError(f"no message {msg_id!r} in the string table: add it to "
                       f"book/strings/{msg_id.split('.')[0]}.toml with en = ... and zh = ...")
    text = entries[msg_id].get(i18n.language()) or entries[msg_id]["en"]
    found = list(_FIELD.finditer(text))
    names = sorted({m.group(1) for m in found})
    if names != sorted(widest):
        raise ValueError(f"widest must give the widest text of each field of {msg_id!r}: "
                         f"{names}, got {sorted(widest)}")
    pairs = [(m.group(0), chr(ord("A") + i) * max(1, len(str(widest[m.group(1)]))))
             for i, m in enumerate(found)]
    for m, (_, stand_in) in zip(reversed(found), reversed(pairs), strict=True):
        text = text[:m.start()] + stand_in + text[m.end():]
    if any(text.count(stand_in) != 1 for _, stand_in in pairs):
        raise ValueError(f"{msg_id!r} holds a run of capitals like a field's stand-in; "
                         "rename the field or the text")
    return text, pairs


class InPage:
    """A cell's output in the book's HTML: controls, the figure and what the script needs.

    ``explorer`` names the page script's recomputation (:data:`EXPLORERS`); ``figure`` is
    the first state, drawn by Python; ``controls`` come from :func:`slider`, :func:`select`
    and :func:`text_box`;
    ``spec`` holds plain JSON values for the script; ``text`` is the text/plain twin (what a
    front-end without HTML shows: the PDF, say): one line saying what the cell holds.
    """

    def __init__(self, explorer: str, figure, controls: Sequence[dict], spec: Mapping,
                 text: str):
        self.explorer = validate.choice("explorer", explorer, EXPLORERS)
        if not hasattr(figure, "to_dict") or not hasattr(figure, "_repr_mimebundle_"):
            raise TypeError(f"figure must be a plotly go.Figure, got {type(figure).__name__}")
        if (isinstance(controls, (str, bytes)) or not isinstance(controls, Sequence)
                or not controls):
            raise TypeError("controls must be a non-empty list of slider(...), select(...) or "
                            "text_box(...)")
        names = []
        for c in controls:
            if not isinstance(c, dict) or c.get("kind") not in ("range", "select", "text"):
                raise TypeError(f"each control must come from inpage.slider, inpage.select or "
                                f"inpage.text_box, got {c!r}")
            names.append(c["name"])
        if len(set(names)) != len(names):
            raise ValueError(f"control names repeat in {names}; give each control its own name")
        if not isinstance(spec, Mapping):
            raise TypeError(f"spec must be a mapping of plain JSON values, got "
                            f"{type(spec).__name__}")
        try:
            self.spec_json = json.dumps(spec, ensure_ascii=False, separators=(",", ":"),
                                        allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"spec must hold plain JSON values (lists, numbers, strings; no "
                             f"NaN, no arrays: call .tolist()): {err}") from None
        if not isinstance(text, str) or not text.strip():
            raise TypeError(f"text must be one sentence saying what the cell holds, got {text!r}")
        self.figure, self.controls, self.text = figure, list(controls), text

    def controls_html(self) -> str:
        parts = []
        for c in self.controls:
            name, label = html.escape(c["name"], quote=True), html.escape(c["label"])
            if c["kind"] == "range":
                bounds = f'min="{c["low"]}" max="{c["high"]}" step="{c["step"]}"'
                parts.append(
                    f'<label style="display:inline-flex;align-items:center;gap:0.4em">'
                    f'{label} <input type="range" name="{name}" {bounds} value="{c["value"]}" '
                    f'style="width:min(11em,38vw)"> <input type="number" name="{name}" '
                    f'{bounds} value="{c["value"]}" aria-label="{html.escape(c["label"], True)}"'
                    ' style="width:5em"></label>')
            elif c["kind"] == "text":
                parts.append(
                    f'<label style="display:flex;align-items:center;gap:0.4em;flex:1 1 18em">'
                    f'{label} <input type="text" name="{name}" maxlength="{c["max_chars"]}" '
                    f'value="{html.escape(c["value"], quote=True)}" lang="zh" '
                    'autocomplete="off" spellcheck="false" style="flex:1;min-width:0;'
                    'font-size:1rem"></label>')
            else:
                options = "".join(
                    f'<option value="{html.escape(v, quote=True)}"'
                    f'{" selected" if v == c["value"] else ""}>{html.escape(text)}</option>'
                    for v, text in c["options"])
                parts.append(f'<label style="display:inline-flex;align-items:center;gap:0.4em">'
                             f'{label} <select name="{name}">{options}</select></label>')
        return ('<form class="book-inpage-controls" onsubmit="return false" '
                'style="display:flex;flex-wrap:wrap;gap:0.5em 1.5em;margin:0 0 0.5em">'
                + "".join(parts) + "</form>")

    def control_names(self) -> list[str]:
        """What the reader varies, as a still's note names it: "d_k (1 … 4096)", "mask"."""
        return [f'{c["label"]} ({c["low"]} … {c["high"]})' if c["kind"] == "range"
                else f'{c["label"]} ("{c["value"]}")' if c["kind"] == "text"
                else c["label"] for c in self.controls]

    def _bundle(self) -> dict:
        import plotly.io as pio

        if pio.renderers.default != "book":
            raise RuntimeError("the figure is drawn with the book's renderer: call book.setup() "
                               "before showing an in-page explorer")
        return self.figure._repr_mimebundle_()

    def html(self, bundle: Mapping | None = None) -> str:
        """The page's HTML: the controls, a status line, the figure (the book's renderer) and
        the spec as a JSON script element."""
        figure_html = (bundle or self._bundle())["text/html"]
        spec = self.spec_json.replace("</", "<\\/")  # never ends the script element early
        # the status line between the controls and the figure: what a control's value does
        # (a word the model does not know, say) is read where the reader typed it
        return (f'<div class="book-inpage" data-explorer="{self.explorer}">'
                f"{self.controls_html()}"
                '<p class="book-inpage-status" role="status" aria-live="polite" '
                'style="font-size:0.9em;margin:0 0 0.25em;min-height:1.2em"></p>'
                f"{figure_html}"
                f'<script type="application/json" class="book-inpage-spec">{spec}</script>'
                "</div>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The page's HTML, the one-line text twin, and the first state's figure JSON (what the
        PDF draws as a still, its note naming the page's controls: layout.meta.book_controls)."""
        bundle = self._bundle()
        figure = dict(bundle[PLOTLY_MIME])
        layout = figure["layout"] = dict(figure.get("layout") or {})
        meta = layout.get("meta")
        layout["meta"] = {**(meta if isinstance(meta, dict) else {}),
                          "book_controls": self.control_names()}
        return {"text/html": self.html(bundle), "text/plain": self.text, PLOTLY_MIME: figure}

    def __repr__(self) -> str:
        return self.text


def page_controls(controls) -> list[dict]:
    """The page's inputs for ``controls`` (:mod:`book.face.controls`, the list the live face
    makes its widgets of): a slider reaches ``page_high`` where one is set."""
    out = []
    for c in controls_mod.check(controls):
        if isinstance(c, controls_mod.Slider) and c.page_menu:
            values = [str(v) for v in range(c.low, (c.page_high or c.high) + 1, c.step)]
            out.append(select(c.name, c.label, [(v, v) for v in values], str(c.value)))
        elif isinstance(c, controls_mod.Slider):
            out.append(slider(c.name, c.label, c.low, c.page_high or c.high, c.value, c.step))
        elif isinstance(c, controls_mod.Choice):
            out.append(select(c.name, c.label, [(str(v), text) for v, text in c.options],
                              str(c.value)))
        else:
            out.append(text_box(c.name, c.label, c.value))
    return out


def either(live: Callable, inpage: Callable):
    """``inpage()`` in the book build (the page recomputes it, no kernel), ``live()`` elsewhere
    (Jupyter: the ipywidgets explorer)."""
    if not callable(live) or not callable(inpage):
        raise TypeError("either takes two functions: the live explorer's and the in-page one's")
    return inpage() if in_build() else live()


