"""Shared presentation helpers: the palette, rounding for compact HTML, the slider builder
and the attention heatmap that every chapter's figures use. Plotly only; no chapter logic."""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go

from book.kit import validate
from book.kit.text import (  # noqa: F401  (the figures' names for them)
    NO_LINE_END,
    NO_LINE_START,
    _best_lines,
    is_wide,
    text_width,
)

COLORSCALE = "Blues"  # light = low weight, dark = high: reads the same in greyscale
SCALE_COLORS = {"none": "#b3261e", "sqrt": "#1a56a8", "linear": "#7a7a7a"}
# Distinct line colours and dashes for several runs on one plot (dashes tell them apart in
# greyscale).
RUN_COLORS = ("#1a56a8", "#b3261e", "#2e7d32", "#7a4fa0", "#c77700", "#4d4d4d", "#0f8b8d",
              "#a0522d")
RUN_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid", "dash")
# blocked = light grey, allowed = dark navy: the two read apart in greyscale, and the cells
# carry ✓ / · as well, so colour is never the only cue.
MASK_COLORSCALE = [[0.0, "#ededed"], [0.5, "#ededed"], [0.5, "#1f3b73"], [1.0, "#1f3b73"]]
SIGNED_COLORSCALE = "Cividis"  # monotonic lightness: negative = dark, positive = light
ILLUSTRATIVE = "illustrative weights, set by hand, not learned"
# The book's CJK web font first (it covers the CJK ranges only; see book/site/fonts.py), then
# plotly's own default stack for everything else.
FONT_FAMILY = '"Book Noto Sans SC", "Open Sans", verdana, arial, sans-serif'


def rounded(a, digits: int = 4):
    """Nested lists rounded for compact HTML (None where the value is missing)."""
    arr = np.asarray(a, dtype=float)
    out = np.round(arr, digits).astype(object)
    out[~np.isfinite(arr)] = None
    return out.tolist()


def wrap(text: str, width: int = 46) -> str:
    """``text`` broken into lines of at most ``width`` columns (:func:`text_width`: a Chinese
    character takes two) with plotly's ``<br>`` (existing ``<br>`` kept), so a title stays
    inside a phone-wide figure. Lines break at spaces, after punctuation and between words, a
    Latin word or number is never cut, and Chinese follows 避头尾: no line starts with closing
    punctuation (，。、）」：；！？) and none ends with an opening bracket (（「《). The lines are
    balanced (:func:`_best_lines`); :func:`title_width` gives ``width`` for a figure's title."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    width = validate.integer("width", width, low=8)
    if "<span" in text or "<a " in text:  # tags with spaces inside: leave as written
        return text
    return "<br>".join(line for part in _BR.split(text) for line in _best_lines(part, width))


def make_slider(steps: list[dict], prefix: str, active: int = 0) -> dict:
    return {"active": active, "currentvalue": {"prefix": prefix}, "pad": {"t": 50},
            "steps": steps}


def attention_heatmap(weights, row_labels, col_labels=None, title: str = "",
                      zmax: float = 1.0) -> go.Figure:
    """One attention map: rows = queries, columns = keys, a greyscale-safe colour scale."""
    w = validate.array("weights", weights, ndim=2)
    hint = "use book.toy.orders_example.labels() to number repeats"
    row_labels = validate.labels("row_labels", row_labels, hint=hint)
    col_labels = (row_labels if col_labels is None
                  else validate.labels("col_labels", col_labels, hint=hint))
    if w.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"weights have shape {w.shape} but there are {len(row_labels)} row "
                         f"and {len(col_labels)} column labels; pass one label per row/column")
    fig = go.Figure(go.Heatmap(z=rounded(w), x=col_labels, y=row_labels, zmin=0, zmax=zmax,
                               colorscale=COLORSCALE, colorbar={"title": {"text": "weight"}},
                               hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}"
                                             "<extra></extra>"))
    fig.update_layout(title=title, xaxis={"title": "key (attended to)", "side": "bottom"},
                      yaxis={"title": "query (attending)", "autorange": "reversed"},
                      height=460, margin={"l": 40, "r": 20, "t": 60, "b": 40})
    return fig




# The narrowest page the book supports is a 390 px phone screen: a figure there is 358 px wide
# (measured in both editions). Titles are wrapped to fit it.
PHONE_FIGURE_PX = 358
COLUMN_EM = 0.55   # one column of text_width (a Latin letter; a Chinese character takes two),
                   # in font sizes: Open Sans' letters average 0.5-0.6 em, a CJK glyph is 1 em
EDGE_PX = 8        # kept free between a title line and the figure's edge
TITLE_WIDTH = 46   # columns per title line at 13 px from the figure's left edge (title_width)
MIN_FONT = 10     # px: no figure text below this
LINE_SPACING = 1.3  # plotly's line height, in font sizes (svg_text_utils.LINE_SPACING)
CAP_SHIFT = 0.7     # plotly moves a one-line title anchored at its top this many sizes down
TITLE_TOP = 12      # px from the top of the figure to a reserved title's first line
_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)


def title_lines(text) -> int:
    """How many lines plotly draws for the title ``text`` (0 for none)."""
    if not isinstance(text, str) or not text.strip():
        return 0
    return len(_BR.split(text))


def title_height(text, size: float) -> float:
    """The height in px of plotly's title ``text`` at font ``size``: one line height (1.3 font
    sizes) per line. Drawn, n lines measure 1.3·size·(n − 1) plus one line's glyph box (1.15
    font sizes in the book's fonts), so this errs on the roomy side."""
    return LINE_SPACING * size * title_lines(text)


def _title_pad_top(text, size: float) -> float:
    """``title.pad.t`` that puts the first baseline of a top-anchored title one font size under
    TITLE_TOP: plotly moves a one-line title down by CAP_SHIFT, the lines of a longer one not."""
    shift = CAP_SHIFT if title_lines(text) == 1 else 0.0
    return round(TITLE_TOP + size * (1.0 - shift), 1)


def _reserve_title_room(layout: dict) -> None:
    """A main title with ``automargin``: its top margin reserved for the tallest title of the
    figure's states instead, and the title anchored at the top of the figure, ``pad.b`` (the
    gap it asked for below it) above the plot in its tallest state.

    plotly.js (the book's 4.1.1 bundle) takes an automargin title's push on the top margin
    *after* it has laid the subplots out, while it is still replotting: it updates the plot
    area's size (``_size``) but redraws nothing, and its last margin check then finds no change.
    The axes, their tick labels and the drag area are drawn at the new top; the plot background
    and the traces stay at the old one: a heatmap sits 30 px above its axis, each row's tick
    label at its cell's lower edge, a strip of background below the cells. It comes out right
    only when another margin (a wider y tick label, say) also grows in that last check and
    forces a new draw, which is why one edition's figure could be right and the other's not.
    A margin big enough from the start does not help: plotly then lays a title of several lines
    out downwards from the plot's top edge, over the plot. Without automargin nothing pushes,
    and the plot area keeps one size in every state of the figure's controls.
    """
    title = layout.get("title")
    if not isinstance(title, dict) or not title.get("automargin"):
        return
    font = title.get("font") if isinstance(title.get("font"), dict) else {}
    base = layout.get("font") if isinstance(layout.get("font"), dict) else {}
    size = font.get("size") or round(1.4 * (base.get("size") or 12))  # plotly's default
    pad = dict(title["pad"]) if isinstance(title.get("pad"), dict) else {}
    texts = [title.get("text")]
    placed = {"automargin": False, "yref": "container", "y": 1, "yanchor": "top"}
    title.update(placed, pad={**pad, "t": _title_pad_top(title.get("text"), size)})
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            for arg in entry.get("args") or []:
                if not isinstance(arg, dict):
                    continue
                if isinstance(arg.get("title"), str):  # the text alone, keeping the rest
                    arg["title.text"] = arg.pop("title")
                if "title.text" in arg:
                    texts.append(arg["title.text"])
                    arg["title.pad.t"] = _title_pad_top(arg["title.text"], size)
                elif isinstance(arg.get("title"), dict):  # a step that replaces the title
                    step_pad = arg["title"].get("pad") or pad
                    texts.append(arg["title"].get("text"))
                    arg["title"].update(placed, pad={**step_pad, "t": _title_pad_top(
                        arg["title"].get("text"), size)})
    tallest = max(title_height(t, size) for t in texts)
    margin = layout.setdefault("margin", {})
    # plotly's default top margin is 100 px; the title's automargin could only add to it
    margin["t"] = max(margin.get("t", 100), math.ceil(TITLE_TOP + tallest + pad.get("b", 0)))


def _panel_width(annotations: list) -> int:
    """Characters per line for subplot titles: the title width shared by the panels of a row."""
    rows: dict = {}
    for a in annotations:
        if isinstance(a, dict) and a.get("yref", "paper") == "paper" and "y" in a:
            rows[round(float(a["y"]), 2)] = rows.get(round(float(a["y"]), 2), 0) + 1
    per_row = max(rows.values(), default=1)
    return max(14, TITLE_WIDTH // per_row)


def title_width(size: float = 17, x: float = 0.05, xanchor: str = "auto",
                xref: str = "container", margin_l: float = 80, margin_r: float = 80,
                figure_px: float = PHONE_FIGURE_PX) -> int:
    """Columns (:func:`text_width`) per line of a plotly title of font ``size`` px placed at
    ``x`` (plotly's title.x, xanchor and xref) that fit the figure at the narrowest page the
    book supports (``figure_px``, 358 px on a 390 px phone): from where the title starts to
    ``EDGE_PX`` short of the edge, a column being ``COLUMN_EM`` font sizes. Plotly's default
    title (17 px at x = 0.05) gets 35 columns, a 13 px title from the left edge 48."""
    for name, value in (("size", size), ("x", x), ("figure_px", figure_px)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if size <= 0 or figure_px <= 0:
        raise ValueError(f"size and figure_px must be positive, got {size} and {figure_px}")
    if xref == "paper":   # x is a fraction of the plot area, inside the side margins
        at = margin_l + x * max(figure_px - margin_l - margin_r, 0)
    else:
        at = x * figure_px
    if xanchor == "auto":  # plotly: left in the left third, right in the right third
        xanchor = "left" if x < 1 / 3 else "right" if x > 2 / 3 else "center"
    room = {"left": figure_px - at, "right": at,
            "center": 2 * min(at, figure_px - at)}.get(xanchor, figure_px - at)
    return max(8, int((room - EDGE_PX) // (COLUMN_EM * size)))


def _title_width_of(layout: dict) -> int:
    """:func:`title_width` for ``layout``'s main title (plotly's defaults where unset)."""
    title = layout.get("title") if isinstance(layout.get("title"), dict) else {}
    font = title.get("font") if isinstance(title.get("font"), dict) else {}
    base = layout.get("font") if isinstance(layout.get("font"), dict) else {}
    margin = layout.get("margin") if isinstance(layout.get("margin"), dict) else {}
    size = font.get("size") or 1.4 * (base.get("size") or 12)   # plotly's default title size
    x = title.get("x")
    return title_width(size, 0.05 if x is None else x, title.get("xanchor") or "auto",
                       title.get("xref") or "container", margin.get("l", 80),
                       margin.get("r", 80))


_TAGS = re.compile(r"</?[a-zA-Z]+>")
_ITALIC_TAG = re.compile(r"<i>(.*?)</i>", re.S)
_ITALIC_STYLE = re.compile(r"(<span[^>]*style=\"[^\"]*?)font-style:\s*italic;?([^>]*>)(.*?)</span>",
                           re.S)


def upright(text: str) -> str:
    """``text`` with the italic taken off its Chinese parts: a CJK font has no italic, so the
    browser slants the glyphs itself (synthetic italic), which blurs them at figure sizes.
    ``<i>`` around text with a wide character is dropped, and so is ``font-style:italic`` in a
    ``<span>`` around one; Latin italic stays."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    text = _ITALIC_TAG.sub(lambda m: m.group(0) if not _has_wide(m.group(1)) else m.group(1),
                           text)
    return _ITALIC_STYLE.sub(lambda m: m.group(0) if not _has_wide(m.group(3))
                             else m.group(1) + m.group(2) + m.group(3) + "</span>", text)


def italic(text: str) -> str:
    """``<i>text</i>``, or ``text`` as it is where it holds Chinese (see :func:`upright`)."""
    return upright(f"<i>{text}</i>")


def _has_wide(text: str) -> bool:
    return any(is_wide(c) for c in _TAGS.sub("", text))


def _upright_font(owner: dict) -> None:
    font = owner.get("font")
    if isinstance(font, dict) and font.get("style") == "italic" and _has_wide(
            str(owner.get("text", ""))):
        font["style"] = "normal"


def _tidy_layout(layout: dict, width: int | None = None, title_columns: int = TITLE_WIDTH) -> None:
    title = layout.get("title")
    if isinstance(title, dict) and isinstance(title.get("text"), str):
        title["text"] = upright(wrap(title["text"], title_columns))
        _upright_font(title)
    elif isinstance(title, str):
        layout["title"] = upright(wrap(title, title_columns))
    if isinstance(layout.get("title.text"), str):
        layout["title.text"] = upright(wrap(layout["title.text"], title_columns))
    annotations = layout.get("annotations")
    if isinstance(annotations, list):
        width = width or _panel_width(annotations)
        for a in annotations:
            if isinstance(a, dict) and isinstance(a.get("text"), str):
                a["text"] = upright(wrap(a["text"], width))
                _upright_font(a)


def tidy(fig_dict: dict) -> dict:
    """Make a figure (as a dict, before it is rendered) legible at phone width, in place:
    titles and subplot titles wrapped into short lines (the steps of its sliders and menus
    too), no tick label or cell text under 10 px, bar labels hidden rather than shrunk, and a
    title with ``automargin`` given a fixed top margin that holds its tallest state (plotly
    misplaces the plot when the title grows the margin, see :func:`_reserve_title_room`)."""
    if not isinstance(fig_dict, dict):
        raise TypeError(f"tidy takes a figure dict (fig.to_dict()), got {type(fig_dict).__name__}")
    layout = fig_dict.setdefault("layout", {})
    width = _panel_width(layout.get("annotations") or [])
    columns = _title_width_of(layout)
    _tidy_layout(layout, width, columns)
    for key, value in layout.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(value, dict):
            font = value.get("tickfont")
            if isinstance(font, dict) and font.get("size", MIN_FONT) < MIN_FONT:
                font["size"] = MIN_FONT
            if value.get("type") == "log" and "tickvals" not in value and "dtick" not in value:
                value["dtick"] = 1  # decades only: plotly's 2 and 5 in between are 9 px
    layout.setdefault("uniformtext", {"minsize": MIN_FONT, "mode": "hide"})
    for trace in fig_dict.get("data", []):
        if trace.get("type") == "heatmap" and trace.get("texttemplate"):
            trace.setdefault("textfont", {}).setdefault("size", 11)
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            for arg in entry.get("args") or []:
                if isinstance(arg, dict):
                    _tidy_layout(arg, width, columns)
    _reserve_title_room(layout)  # after the wrapping: it counts the lines
    return fig_dict
