"""Shared presentation helpers: the palette, rounding for compact HTML, the slider builder
and the attention heatmap that every chapter's figures use. Plotly only; no chapter logic."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from . import validate

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
ILLUSTRATIVE = "illustrative weights, set by hand, not learned"
# The book's CJK web font first (it covers the CJK ranges only; see book/fonts.py), then
# plotly's own default stack for everything else.
FONT_FAMILY = '"Book Noto Sans SC", "Open Sans", verdana, arial, sans-serif'


def use_book_template() -> None:
    """Make every new figure name the book's CJK font (plotly's default look otherwise)."""
    import plotly.io as pio

    pio.templates["book"] = go.layout.Template(layout={"font": {"family": FONT_FAMILY}})
    pio.templates.default = "plotly+book"


def rounded(a, digits: int = 4):
    """Nested lists rounded for compact HTML (None where the value is missing)."""
    arr = np.asarray(a, dtype=float)
    out = np.round(arr, digits).astype(object)
    out[~np.isfinite(arr)] = None
    return out.tolist()


def wrap(text: str, width: int = 46) -> str:
    """``text`` broken into lines of at most ``width`` characters with plotly's ``<br>`` (at
    spaces; existing ``<br>`` kept), so a title stays inside a phone-wide figure."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    width = validate.integer("width", width, low=8)
    out = []
    for part in text.split("<br>"):
        line = ""
        for word in part.split(" "):
            if line and len(line) + 1 + len(word) > width:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
    return "<br>".join(out)


def make_slider(steps: list[dict], prefix: str, active: int = 0) -> dict:
    return {"active": active, "currentvalue": {"prefix": prefix}, "pad": {"t": 50},
            "steps": steps}


def attention_heatmap(weights, row_labels, col_labels=None, title: str = "",
                      zmax: float = 1.0) -> go.Figure:
    """One attention map: rows = queries, columns = keys, a greyscale-safe colour scale."""
    w = validate.array("weights", weights, ndim=2)
    col_labels = list(row_labels if col_labels is None else col_labels)
    row_labels = list(row_labels)
    if w.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"weights have shape {w.shape} but there are {len(row_labels)} row "
                         f"and {len(col_labels)} column labels; pass one label per row/column")
    for name, labels in (("row", row_labels), ("column", col_labels)):
        if len(set(labels)) != len(labels):
            raise ValueError(f"{name} labels must be unique (plotly merges equal categories); "
                             "use book.orders_example.labels() to number repeats")
    fig = go.Figure(go.Heatmap(z=rounded(w), x=col_labels, y=row_labels, zmin=0, zmax=zmax,
                               colorscale=COLORSCALE, colorbar={"title": {"text": "weight"}},
                               hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}"
                                             "<extra></extra>"))
    fig.update_layout(title=title, xaxis={"title": "key (attended to)", "side": "bottom"},
                      yaxis={"title": "query (attending)", "autorange": "reversed"},
                      height=460, margin={"l": 40, "r": 20, "t": 60, "b": 40})
    return fig


