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




# The narrowest page the book supports is a 390 px phone screen: its column is 358 px wide
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


def panel_title_width(n_panels: int, spacing: float, margin_l: float = 80,
                      margin_r: float = 80, size: float = 16,
                      figure_px: float = PHONE_FIGURE_PX) -> int:
    """Columns (:func:`text_width`) per line of a subplot title of font ``size`` px over one of
    ``n_panels`` equal panels side by side (``spacing``: make_subplots' horizontal_spacing),
    ``EDGE_PX`` short of the panel's width at the narrowest page the book supports. ``tidy``
    wraps subplot titles at one width for a whole row (46 columns shared); a title wrapped at
    this width first keeps to its own panel."""
    n_panels = validate.integer("n_panels", n_panels, low=1)
    for name, value in (("spacing", spacing), ("margin_l", margin_l), ("margin_r", margin_r),
                        ("size", size), ("figure_px", figure_px)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not 0 <= spacing < 1 or size <= 0:
        raise ValueError(f"spacing must be in [0, 1) and size positive, got {spacing} and {size}")
    plot = max(figure_px - margin_l - margin_r, 0)
    panel = plot * (1 - spacing * (n_panels - 1)) / n_panels
    return max(8, int((panel - EDGE_PX) // (COLUMN_EM * size)))


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
    too), no tick label or cell text under 10 px, bar labels hidden rather than shrunk, heatmap
    cell values that fit their cells (:func:`fit_cell_text`), sliders and menus below the plot
    clear of its x axis (:func:`clear_controls`), and a
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
    fit_cell_text(fig_dict)  # values in cells that fit them on a phone, or hover text only
    clear_controls(fig_dict)  # slider and menu labels clear of the x axis
    clear_colorbar_titles(fig_dict)
    level_cjk_ticks(fig_dict)  # Chinese tick labels level (or upright) where they fit
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            for arg in entry.get("args") or []:
                if isinstance(arg, dict):
                    _tidy_layout(arg, width, columns)
    _reserve_title_room(layout)  # after the wrapping: it counts the lines
    return fig_dict


# --- text in heatmap cells, CJK tick labels and slider labels, fitted to a phone -----------------

# px: the width cells and tick labels are fitted to on a 390 px wide phone: 8 px a side inside
# the 358 px column the figure takes (book-figure.css gives it the whole column), room for
# plotly's rounding and a wider font; the titles keep their EDGE_PX within PHONE_FIGURE_PX
PHONE_FIGURE_WIDTH = 342
_DEFAULT_MARGIN = {"l": 80, "r": 80, "t": 100, "b": 80}  # plotly's
COLORBAR_PAD = 36   # px of a colour bar's room besides the bar, its labels and a title beside
                    # it: plotly's pads (x = 1.02, xpad, tick label standoff)
# px a cell's value keeps clear of its cell's edges, both sides together: the values of two
# neighbouring cells stand at least this far apart. tests/legibility.py holds them to 3 px (a
# word space at 11 px: closer, "0.14" and "0.07" read as one number), and 1 px more covers
# plotly's rounding of the plot area and the cells to whole pixels.
CELL_TEXT_GAP = 4
# px two level tick labels of one axis keep apart: tests/legibility.py's 2 px (TOUCH_PX: closer,
# "牛肉面" and "，₁" read as one word) and 1 px for the rounding
TICK_GAP = 3
# widths of the characters of a cell value, in ems of DejaVu Sans (the widest fallback a reader
# is likely to have): digits 0.64, the point 0.32, the signs 0.36–0.84, capitals 0.79 (M, W
# wider), lower case 0.28-0.64 (m, w wider), any other 0.62, wide 1
_EM = {**dict.fromkeys("0123456789", 0.64), ".": 0.32, ",": 0.32, "-": 0.36, "−": 0.84,
       "+": 0.84, "%": 0.95, " ": 0.32, "·": 0.32, "✓": 0.84,
       **dict.fromkeys("ABCDEFGHIJKLNOPQRSTUVXYZ", 0.79), "M": 0.87, "W": 0.99, "m": 0.98,
       "w": 0.82, **dict.fromkeys("ijl", 0.28), "f": 0.36, "t": 0.4, "r": 0.42, "s": 0.53,
       "c": 0.55, "z": 0.53, "_": 0.5, "(": 0.39, ")": 0.39, "=": 0.84, ":": 0.34}
_LEADING_ZERO = re.compile(r"(?<![\d.])0(?=\.\d)")


def text_px(text: str, size: float) -> float:
    """How wide ``text`` (one line, tags stripped) is at font ``size`` px, in DejaVu Sans'
    widths (a wide character one em): an upper bound for the book's own fonts."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    size = validate.real("size", size, low=0)
    plain = re.sub(r"<[^>]+>", "", text)
    return size * sum(1.0 if is_wide(c) else _EM.get(c, 0.62) for c in plain)


def _axis_key(ref: str, letter: str) -> str:
    """``"x2"`` → ``"xaxis2"`` (the layout key of a trace's axis)."""
    return f"{letter}axis{ref[1:]}" if ref and ref[1:] else f"{letter}axis"


def _domain(layout: dict, key: str, labelled: bool = False) -> float:
    """The narrowest share of the plot area axis ``key`` spans: its own domain, or one a slider
    step or menu button lays it out on (``{"xaxis2.domain": [...]}`` in a relayout's or an
    update's layout argument), where that is narrower; a state that hides the axis does not
    count, nor with ``labelled`` one that hides its tick labels."""
    def width(d):
        return float(d[1]) - float(d[0])

    axis = layout.get(key) if isinstance(layout.get(key), dict) else {}
    own = width(axis.get("domain") or [0, 1])
    widths = [own] if axis.get("visible", True) is not False and not (
        labelled and axis.get("showticklabels") is False) else []
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            args = entry.get("args") or []
            if entry.get("method") not in ("relayout", "update") or not args:
                continue
            arg = args[0] if entry.get("method") == "relayout" else (args[1:2] or [None])[0]
            if not isinstance(arg, dict):
                continue
            shown = arg.get(f"{key}.visible", True) is not False and not (
                labelled and arg.get(f"{key}.showticklabels") is False)
            d = arg.get(f"{key}.domain")
            if d is None and isinstance(arg.get(key), dict):
                d = arg[key].get("domain")
            if shown and isinstance(d, list) and len(d) == 2 and width(d) > 0:
                widths.append(width(d))
    return min(widths, default=own)


def _plot_size(layout: dict, data: list, width: float | None = None) -> tuple[float, float]:
    """The plot area (all subplots with their gaps) of a figure ``width`` px wide (None: as
    wide as on a phone), less the room a colour bar and the y tick labels take."""
    width = layout.get("width") or width or PHONE_FIGURE_WIDTH
    height = layout.get("height") or 450
    margin = {**_DEFAULT_MARGIN, **(layout.get("margin") or {})}
    bars = [_colorbar_px(t) for t in data
            if t.get("type") == "heatmap" and t.get("showscale") is not False
            and not t.get("coloraxis")]
    # the bar, its tick labels and title right of the plot
    right = max(margin["r"], max(bars)) if bars else margin["r"]
    left = margin["l"]
    labels = [str(v) for t in data if t.get("type") == "heatmap" and (t.get("yaxis") or "y") == "y"
              for v in (t.get("y") or [])]
    if labels:  # automargin: the first y axis' tick labels and title push the left margin
        axis = layout.get("yaxis") or {}
        size = (axis.get("tickfont") or {}).get("size") or 12
        title = 28 if (axis.get("title") or {}) else 0
        left = max(left, max(text_px(s, size) for s in labels) + 8 + title)
    return max(width - left - right, 1.0), max(height - margin["t"] - margin["b"], 1.0)


def _colorbar_px(trace: dict) -> float:
    """How far right of the plot a heatmap's colour bar reaches: the bar, its tick labels (its
    ticktext, else round numbers of its range), a title set beside it, and plotly's pads
    (COLORBAR_PAD). Measured at 390 px: 83-103 px for bars of 30 px (85-111 px here), 86
    for one of 16 px with its title beside it (93 here)."""
    bar = trace.get("colorbar") if isinstance(trace.get("colorbar"), dict) else {}
    size = (bar.get("tickfont") or {}).get("size") or 12
    if bar.get("ticktext"):
        labels = [str(t) for t in bar["ticktext"]]
    else:
        zs = [v for row in trace.get("z") or [] for v in (row if isinstance(row, list) else [row])
              if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        lo = float(trace.get("zmin", min(zs, default=0)))
        hi = float(trace.get("zmax", max(zs, default=1)))
        # plotly's ticks: round numbers a fifth of the range or so apart ("0.2" over 0-1)
        digits = max(0, 1 - math.floor(math.log10(hi - lo))) if hi > lo else 0
        labels = [f"{v:.{digits}f}".replace("-", "−") for v in (lo, hi, (lo + hi) / 2)]
    title = bar.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    beside = isinstance(title, dict) and title.get("side") == "right"
    title_px = LINE_SPACING * 14 if beside and isinstance(text, str) and text.strip() else 0
    return ((bar.get("thickness") or 30) + max(text_px(s, size) for s in labels) + title_px
            + COLORBAR_PAD)


def _trace_states(fig_dict: dict, index: int, key: str) -> list:
    """Every value trace ``index``'s ``key`` takes: its own and each slider step's and menu
    button's (a restyle cycles a shorter list over the traces, as plotly does)."""
    layout = fig_dict.get("layout") or {}
    values = [fig_dict["data"][index].get(key)]
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            args = entry.get("args") or []
            if entry.get("method") not in ("restyle", "update") or not args:
                continue
            style = args[0] if isinstance(args[0], dict) else {}
            targets = args[-1] if entry.get("method") == "restyle" and len(args) > 1 else None
            if isinstance(targets, int):
                targets = [targets]
            value = style.get(key)
            if not isinstance(value, list) or not value:
                continue
            if isinstance(targets, list):
                if index in targets:
                    values.append(value[targets.index(index) % len(value)])
            else:
                values.append(value[index % len(value)])
    return [v for v in values if v is not None]


def _cell_texts(grid) -> list[str]:
    return [str(v) for row in (grid or []) for v in (row if isinstance(row, list) else [row])
            if v is not None and str(v) != ""]


def short_value(text: str) -> str:
    """A cell value without its leading zeros, ``"0.14"`` → ``".14"``, ``"-0.5"`` → ``"-.5"``."""
    return _LEADING_ZERO.sub("", text)


def fit_cell_text(fig_dict: dict, width: float | None = None) -> dict:
    """Values written in heatmap cells (``texttemplate="%{text}"``) that fit their cells on a
    phone, in place: kept when the widest value of every state fits its cell with
    CELL_TEXT_GAP px to spare, written without leading zeros (``.14``) when only that fits,
    then the same at MIN_FONT px (``textfont.size``) when the trace's own size fits neither,
    and left to the hover text otherwise (the values stay in ``text`` for it). The cell size is
    the figure's at ``width`` px (default PHONE_FIGURE_WIDTH), over each slider step and menu
    button. Other texttemplates are left as written."""
    if not isinstance(fig_dict, dict):
        raise TypeError(f"fit_cell_text takes a figure dict, got {type(fig_dict).__name__}")
    layout = fig_dict.get("layout") or {}
    data = fig_dict.get("data") or []
    plot_w, plot_h = _plot_size(layout, data, width)
    for i, trace in enumerate(data):
        if trace.get("type") != "heatmap" or trace.get("texttemplate") != "%{text}":
            continue
        size = (trace.get("textfont") or {}).get("size") or 12
        cols = max((len(z[0]) for z in _trace_states(fig_dict, i, "z")
                    if isinstance(z, list) and z and isinstance(z[0], list)), default=1)
        rows = max((len(z) for z in _trace_states(fig_dict, i, "z") if isinstance(z, list)),
                   default=1)
        cell_w = plot_w * _domain(layout, _axis_key(trace.get("xaxis", "x"), "x")) / cols
        cell_h = plot_h * _domain(layout, _axis_key(trace.get("yaxis", "y"), "y")) / rows
        texts = [s for grid in _trace_states(fig_dict, i, "text") for s in _cell_texts(grid)]
        if not texts:
            continue
        lines = max(len(_BR.split(s)) for s in texts)
        if cell_h < LINE_SPACING * size * (lines - 1) + size + 2:
            trace["texttemplate"] = ""
            continue
        room = cell_w - CELL_TEXT_GAP
        lines_of = [line for s in texts for line in _BR.split(s)]
        fit = next(((px, short) for px in dict.fromkeys((size, min(size, MIN_FONT)))
                    for short in (False, True)
                    if max(text_px(short_value(line) if short else line, px)
                           for line in lines_of) <= room), None)
        if fit is None:
            trace["texttemplate"] = ""  # the hover text still has every value
            continue
        if fit[0] != size:
            trace.setdefault("textfont", {})["size"] = fit[0]
        if fit[1]:
            _shorten_texts(fig_dict, i)
    return fig_dict


def _shorten_texts(fig_dict: dict, index: int) -> None:
    """Trace ``index``'s cell values, and each control's values for it, without leading zeros
    (the hover template reads ``%{z}``, which keeps them)."""
    def short(grid):
        return [[short_value(v) if isinstance(v, str) else v for v in row]
                if isinstance(row, list) else row for row in grid]

    trace = fig_dict["data"][index]
    trace["text"] = short(trace.get("text") or [])
    layout = fig_dict.get("layout") or {}
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            args = entry.get("args") or []
            style = args[0] if args and isinstance(args[0], dict) else {}
            value = style.get("text")
            if not isinstance(value, list) or not value:
                continue
            targets = args[-1] if entry.get("method") == "restyle" and len(args) > 1 else None
            if isinstance(targets, int):
                targets = [targets]
            for k in range(len(value)):
                if (targets is None and k == index % len(value)) or (
                        isinstance(targets, list) and index in targets
                        and k == targets.index(index) % len(value)):
                    value[k] = short(value[k])


SLIDER_GAP = 8  # px between the x axis' tick labels and title and a control below the plot


def _x_labels(fig_dict: dict, key: str) -> list[str]:
    """The tick labels x axis ``key`` can show: its ticktext, else its heatmaps' categories
    over every state, else a number's worth."""
    axis = (fig_dict.get("layout") or {}).get(key) or {}
    if axis.get("ticktext"):
        return [str(t) for t in axis["ticktext"]]
    ref = "x" + key[5:]
    out = []
    for i, t in enumerate(fig_dict.get("data") or []):
        if t.get("xaxis", "x") == ref:
            for xs in _trace_states(fig_dict, i, "x"):
                out += [str(v) for v in xs if isinstance(v, str)] if isinstance(xs, list) else []
    return out or ["0.00"]


def x_axis_depth(fig_dict: dict, key: str = "xaxis") -> float:
    """How far below its plot x axis ``key`` reaches, in px: its tick labels at their angle
    (each as wide as :func:`text_px` says, one font size high) and its title."""
    layout = fig_dict.get("layout") or {}
    axis = layout.get(key) or {}
    if axis.get("side") == "top":
        return 0.0
    base = (layout.get("font") or {}).get("size") or 12
    depth = 0.0
    if axis.get("showticklabels", True):
        size = (axis.get("tickfont") or {}).get("size") or base
        angle = math.radians(abs(float(axis.get("tickangle") or 0)))
        widest = max(text_px(_BR.split(s)[0], size) for s in _x_labels(fig_dict, key))
        lines = max(len(_BR.split(s)) for s in _x_labels(fig_dict, key))
        tall = LINE_SPACING * size * lines
        depth += 6 + widest * math.sin(angle) + tall * math.cos(angle)
    title = axis.get("title")
    text = title.get("text") if isinstance(title, dict) else title
    if isinstance(text, str) and text.strip():
        size = ((title.get("font") or {}).get("size") if isinstance(title, dict) else None) or 14
        depth += 10 + LINE_SPACING * size * title_lines(text)
    return depth


def clear_controls(fig_dict: dict) -> dict:
    """Sliders and menus below the plot (``y`` ≤ 0, anchored at their top) moved down, in
    place, until their current-value label clears the lowest x axis' tick labels and title by
    SLIDER_GAP px: their ``pad.t`` grows; the figure keeps its height (plotly takes the room
    from the plot)."""
    if not isinstance(fig_dict, dict):
        raise TypeError(f"clear_controls takes a figure dict, got {type(fig_dict).__name__}")
    layout = fig_dict.get("layout") or {}
    keys = [k for k in layout if re.fullmatch(r"xaxis\d*", k)] or ["xaxis"]
    # the x axes of the bottom row of subplots (lowest domain of the y axis they sit on)
    def bottom(k):
        axis = layout.get(k) or {}
        y_key = _axis_key(axis.get("anchor") or "y" + k[5:], "y")
        return float(((layout.get(y_key) or {}).get("domain") or [0, 1])[0])

    low = min(bottom(k) for k in keys)
    depth = max(x_axis_depth(fig_dict, k) for k in keys if bottom(k) <= low + 1e-9)
    for kind in ("sliders", "updatemenus"):
        for control in layout.get(kind) or []:
            default_y = 0 if kind == "sliders" else 1
            if float(control.get("y", default_y)) > 0 or control.get("yanchor", "top") != "top":
                continue
            pad = dict(control.get("pad") or {})
            pad["t"] = max(pad.get("t", 0), math.ceil(depth + SLIDER_GAP))
            control["pad"] = pad
    return fig_dict


def clear_colorbar_titles(fig_dict: dict) -> dict:
    """Each heatmap colour bar with a title above it, in place: its tick labels set below their
    ticks (``ticklabelposition="outside bottom"``), so that the top one ("1") keeps clear of
    the title; plotly sets them 0.7 px apart."""
    if not isinstance(fig_dict, dict):
        raise TypeError(f"clear_colorbar_titles takes a figure dict, got "
                        f"{type(fig_dict).__name__}")
    for trace in fig_dict.get("data") or []:
        bar = trace.get("colorbar") if trace.get("type") == "heatmap" else None
        if not isinstance(bar, dict):
            continue
        title = bar.get("title")
        text = title.get("text") if isinstance(title, dict) else title
        side = title.get("side", "top") if isinstance(title, dict) else "top"
        if isinstance(text, str) and text.strip() and side == "top":
            bar.setdefault("ticklabelposition", "outside bottom")
    return fig_dict


_SUBSCRIPTS = set("₀₁₂₃₄₅₆₇₈₉")


def _cjk_label(label: str) -> bool:
    """A tick label of wide (CJK) characters only, subscript digits allowed after them."""
    return bool(label) and is_wide(label[0]) and all(is_wide(c) or c in _SUBSCRIPTS
                                                     for c in label)


def stacked(label: str, subscripts_apart: bool = False) -> str:
    """A CJK label set one character a line, upright (``"牛肉面"`` → ``"牛<br>肉<br>面"``), as
    Chinese is written top to bottom; a subscript stays with its character, or takes a line of
    its own below it with ``subscripts_apart`` (``"，₁"`` → ``"，<br>₁"``: one character wide)."""
    lines: list[str] = []
    for c in label:
        if c in _SUBSCRIPTS and lines and not (subscripts_apart and is_wide(lines[-1][-1])):
            lines[-1] += c
        else:
            lines.append(c)
    return "<br>".join(lines)


# A rotated tick label's glyph box across its line, in font sizes (measured at 390 px: 9.0 px
# at 11 px, chapter 6's keys in the book's CJK font, as tests/legibility.py boxes them)
ROTATED_EM = 0.82
# px of TICK_GAP's rounding margin a rotated label at MIN_FONT may use: it then stands at least
# TICK_GAP - ROTATED_SLACK (2.5 px) from its neighbour, the check's 2 px and half a pixel
ROTATED_SLACK = 0.5


def _labels_shown(layout: dict, key: str) -> bool:
    """Whether axis ``key`` draws its tick labels in its own state or one a control sets."""
    if (layout.get(key) or {}).get("showticklabels") is not False:
        return True
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            for arg in entry.get("args") or []:
                if isinstance(arg, dict) and arg.get(f"{key}.showticklabels") is True:
                    return True
    return False


def level_cjk_ticks(fig_dict: dict, width: float | None = None) -> dict:
    """Rotated x tick labels that are all Chinese, set level where they fit, in place: level
    when the widest fits its category's width at ``width`` px (default PHONE_FIGURE_WIDTH),
    else upright one character a line (:func:`stacked`) when one character fits (a subscript
    on a line of its own where it would not fit beside its character), else left rotated, at
    MIN_FONT px where side by side at their own size they would stand under TICK_GAP apart
    (a rotated label is ROTATED_EM font sizes across). The room is that of the narrowest
    layout in which the axis draws its labels, over the states of the figure's controls. Only
    an axis whose labels are the same in every state (its ticks are written out as
    ``tickvals`` / ``ticktext``)."""
    if not isinstance(fig_dict, dict):
        raise TypeError(f"level_cjk_ticks takes a figure dict, got {type(fig_dict).__name__}")
    layout = fig_dict.get("layout") or {}
    data = fig_dict.get("data") or []
    plot_w, _ = _plot_size(layout, data, width)
    base = (layout.get("font") or {}).get("size") or 12
    for key in [k for k in layout if re.fullmatch(r"xaxis\d*", k)]:
        axis = layout[key]
        if not isinstance(axis, dict) or abs(float(axis.get("tickangle") or 0)) < 30:
            continue
        if axis.get("tickvals") is not None or not _labels_shown(layout, key):
            continue
        ref = "x" + key[5:]
        states = [tuple(xs) for i, t in enumerate(data) if t.get("xaxis", "x") == ref
                  for xs in _trace_states(fig_dict, i, "x") if isinstance(xs, list)]
        if not states or len(set(states)) != 1:
            continue
        labels = [str(v) for v in states[0]]
        if not all(_cjk_label(s) for s in labels):
            continue
        size = (axis.get("tickfont") or {}).get("size") or base
        category = plot_w * _domain(layout, key, labelled=True) / len(labels)
        room = category - TICK_GAP
        if size * ROTATED_EM > room and MIN_FONT * ROTATED_EM <= room + ROTATED_SLACK:
            # rotated, side by side: a smaller font keeps them apart (chapter 6's head maps)
            axis["tickfont"] = {**(axis.get("tickfont") or {}), "size": MIN_FONT}
        elif max(text_px(s, size) for s in labels) <= room:
            axis["tickangle"] = 0
        elif size <= room:
            # a subscript beside its character where every such line fits, else below it
            apart = max(text_px(line, size) for s in labels
                        for line in _BR.split(stacked(s))) > room
            axis.update(tickangle=0, tickvals=labels,
                        ticktext=[stacked(s, subscripts_apart=apart) for s in labels])
    return fig_dict
