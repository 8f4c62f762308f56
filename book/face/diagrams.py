"""Pictures of the computation, drawn by code: boxes, arrows and grids as one plotly figure.

Every label comes from the string table (``common.dg_*`` in book/strings/common.toml), so both
editions draw the same diagram in their own language, and every size a label shows is an
argument: the chapter passes the numbers of the code it describes (the walkthrough's example,
the toy model's config, a real window mask), never numbers typed into the picture.

* :func:`multihead_dataflow` — X → each head's W_Q, W_K, W_V (drawn as grids of their
  d_model × d_k cells) → Q, K, V → scores → softmax → Z_h → concat → W_O, with shapes
  (symbolic, the walkthrough's numbers, or the module's (B, h, T, d_k));
* :func:`norm_placement` — a Post-LN and a Pre-LN block side by side;
* :func:`toy_model` — the takeout-order encoder of chapters 5–8, sized from its config, one
  block drawn as it runs, a residual line around each sub-layer;
* :func:`kv_cache` — one layer's cache while a new token is generated, with the memory formula;
* :func:`window_grid` — which keys each query scores: the full matrix beside a window.

How they stay legible at 1280 and 390 px (tests/legibility.py checks every state): a diagram
is laid out in pixels from its top (the y axis runs 1 unit = 1 px, the figure's height is
fixed), boxes are annotations whose border plotly sizes from their text, and what must keep
its shape (grid cells, cache slots) is placed in pixels from the middle of the figure, so a
phone-wide figure shows the same picture; two columns sit at a quarter and three quarters of
the width, with labels short enough for half a phone's width (≤ ~24 Latin or 13 CJK
characters). A diagram has no controls and needs no hover.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from book.face.figures import DIAGRAM_WORDS, describe
from book.face.plotting import text_width
from book.kit import validate
from book.kit.i18n import tr

FONT = 12          # px: every label (the book's floor is 10)
TITLE_FONT = 14
LINE = 1.3         # plotly's line height in font sizes
PAD = 5            # px between a box's text and its border
GAP = 20           # px of arrow between two boxes
CHAR_PX = 0.56     # px per text_width unit per font px (Latin ≈ 0.55 em; CJK, 2 units, ≈ 1 em)
TOP = 48           # px above the drawing: the title
SIDE = 6           # px of margin left and right
INK = "#1b1b1b"
ARROW = "#4d4d4d"
RESIDUAL = "residual"   # the name of a residual line's path and of its arrowhead
STYLES = {  # fill, edge
    "data": ("#f1f1f1", "#4d4d4d"),
    "attention": ("#dbe6f6", "#1a56a8"),
    "norm": ("#fde8c8", "#a15c00"),
    "ff": ("#dcefdc", "#2e7d32"),
    "new": ("#fbd9d5", "#b3261e"),
    "weight": ("#ece1f5", "#5b2c83"),   # a learned matrix's cells (W_Q, W_K, W_V)
    "note": ("rgba(0,0,0,0)", "rgba(0,0,0,0)"),
}


def _plain(text: str) -> str:
    return text.replace("<br>", "\n")


def _lines(text: str) -> int:
    return text.count("<br>") + 1


def box_height(text: str) -> float:
    """Height in px of a box holding ``text`` (lines split by ``<br>``)."""
    return _lines(text) * FONT * LINE + 2 * PAD + 2


def box_width(text: str) -> float:
    """An upper estimate of the width in px of a box holding ``text``."""
    return max(text_width(line) for line in text.split("<br>")) * FONT * CHAR_PX + 2 * PAD + 2


class _Sketch:
    """A diagram being laid out: y in px from the top of the drawing, x in [0, 1] of the width
    (or px from the middle, for the parts placed with ``shift``)."""

    def __init__(self):
        self.annotations: list[dict] = []
        self.shapes: list[dict] = []
        self.points: list[tuple[float, float, str]] = []
        self.words: list[str] = []  # every box's and label's text, in drawing order

    def box(self, x: float, top: float, text: str, style: str = "data", *, shift: float = 0,
            bold: bool = False) -> tuple[float, float]:
        """A box with its top edge at ``top``; returns (top, bottom) in px."""
        fill, edge = STYLES[style]
        h = box_height(text)
        shown = f"<b>{text}</b>" if bold else text
        self.annotations.append({
            "x": x, "y": top + h / 2, "xref": "x", "yref": "y", "text": shown,
            "showarrow": False, "font": {"size": FONT, "color": INK}, "align": "center",
            "bgcolor": fill, "bordercolor": edge, "borderwidth": 1, "borderpad": PAD,
            "xshift": shift, "yanchor": "middle", "xanchor": "center"})
        self.points.append((x, top + h / 2, _plain(text)))
        self.words.append(_plain(text))
        return top, top + h

    def label(self, x: float, y: float, text: str, *, shift: float = 0, anchor: str = "center",
              bold: bool = False, angle: float = 0, color: str = INK,
              background: str | None = None) -> None:
        """Text with no box (or on a ``background`` that hides lines under it), its middle at
        ``y``."""
        if _plain(text).strip():
            self.words.append(_plain(text))
        if background:
            self.annotations.append({
                "x": x, "y": y, "xref": "x", "yref": "y", "text": text, "showarrow": False,
                "font": {"size": FONT, "color": color}, "xshift": shift, "xanchor": anchor,
                "yanchor": "middle", "bgcolor": background, "borderpad": 2})
            return
        self.annotations.append({
            "x": x, "y": y, "xref": "x", "yref": "y",
            "text": f"<b>{text}</b>" if bold else text, "showarrow": False,
            "font": {"size": FONT, "color": color}, "xshift": shift, "xanchor": anchor,
            "yanchor": "middle", "textangle": angle})

    def arrow(self, x0: float, y0: float, x1: float, y1: float) -> None:
        """An arrow from (x0, y0) to (x1, y1), x in width fractions, y in px."""
        self.annotations.append({
            "x": x1, "y": y1, "ax": x0, "ay": y0, "xref": "x", "yref": "y", "axref": "x",
            "ayref": "y", "text": "", "showarrow": True, "arrowhead": 2, "arrowsize": 1,
            "arrowwidth": 1.4, "arrowcolor": ARROW})

    def rect(self, x: float, y0: float, y1: float, dx0: float, dx1: float, fill: str,
             edge: str, *, dash: str = "solid", name: str | None = None) -> None:
        """A rectangle from px ``dx0`` to ``dx1`` of the point ``x`` (a width fraction);
        ``name`` tells what it is part of (a weight matrix's cells carry the matrix's name)."""
        shape = {"type": "rect", "xref": "x", "yref": "y", "xsizemode": "pixel",
                 "xanchor": x, "x0": dx0, "x1": dx1, "y0": y0, "y1": y1,
                 "fillcolor": fill, "line": {"color": edge, "width": 1, "dash": dash},
                 "layer": "below"}
        if name is not None:
            shape["name"] = name
        self.shapes.append(shape)

    def frame(self, x0: float, x1: float, y0: float, y1: float) -> None:
        """A dashed frame from width fraction ``x0`` to ``x1``."""
        self.shapes.append({"type": "rect", "xref": "x", "yref": "y", "x0": x0, "x1": x1,
                            "y0": y0, "y1": y1, "fillcolor": "rgba(0,0,0,0)",
                            "line": {"color": "#7a7a7a", "width": 1, "dash": "dash"},
                            "layer": "below"})

    def bypass(self, x: float, y0: float, y1: float, out: float, end: float) -> None:
        """A residual line: from the main path at ``y0`` out ``out`` px to the right, down to
        ``y1`` and back in to ``end`` px right of the main path, with an arrowhead there."""
        self.shapes.append({"type": "path", "xref": "x", "yref": "y", "xsizemode": "pixel",
                            "xanchor": x, "line": {"color": ARROW, "width": 1.4},
                            "path": f"M 0,{y0} L {out},{y0} L {out},{y1} L {end + 6},{y1}",
                            "name": RESIDUAL})
        self.annotations.append({
            "x": x, "y": y1, "xref": "x", "yref": "y", "ax": 14, "ay": 0, "axref": "pixel",
            "ayref": "pixel", "xshift": end, "text": "", "showarrow": True, "arrowhead": 2,
            "arrowsize": 1, "arrowwidth": 1.4, "arrowcolor": ARROW, "name": RESIDUAL})

    def figure(self, title: str, height_px: float) -> go.Figure:
        """The figure: the drawing ``height_px`` tall under a title, no axes, no controls."""
        # a drawing of labels and cells only (window_grid) still gets one point: a trace with
        # no data paints nothing, and the browser test reads an unpainted figure as broken
        points = self.points or [(0.5, 0.0, "")]
        xs, ys, texts = zip(*points, strict=True)
        # one trace holds the boxes' centres (invisible): a figure with traces is a figure
        # the book's checks (and plotly's hover) know how to read
        trace = go.Scatter(x=list(xs), y=list(ys), text=list(texts), mode="markers",
                           marker={"size": 1, "opacity": 0}, hoverinfo="skip",
                           showlegend=False)
        fig = go.Figure(trace)
        height = int(np.ceil(height_px))
        fig.update_layout(
            title={"text": title, "x": 0.5, "xanchor": "center", "font": {"size": TITLE_FONT}},
            height=height + TOP + 8, margin={"l": SIDE, "r": SIDE, "t": TOP, "b": 8},
            xaxis={"range": [0, 1], "visible": False, "fixedrange": True},
            yaxis={"range": [height, 0], "visible": False, "fixedrange": True},
            plot_bgcolor="white", paper_bgcolor="white", dragmode=False, showlegend=False,
            annotations=self.annotations, shapes=self.shapes, hovermode=False,
            # the page lists these under the drawing (book.face.figures: "in words")
            meta={DIAGRAM_WORDS: [w for w in self.words if w.strip()]})
        return fig


# --- a. the multi-head dataflow -------------------------------------------------------------

def _shape(*dims) -> str:
    return tr(f"common.dg_shape{len(dims)}", **dict(zip("abcd", dims, strict=False)))


def multihead_dataflow(n_tokens: int | None = None, d_model: int | None = None,
                       n_heads: int | None = None, d_k: int | None = None, *,
                       batched: bool = False) -> go.Figure:
    """The dataflow of one multi-head self-attention layer, each step with its shape.

    With no sizes, the shapes are symbolic (n tokens, d_model, h heads, d_k): chapter 1's
    picture. With all four sizes (e.g. the walkthrough's 3 tokens, d_model 4, 2 heads, d_k 3,
    read from :func:`book.ideas.walkthrough.example`), every box shows its real shape; heads
    beyond the second are counted, not drawn. Under the input, each drawn head's W_Q, W_K
    and W_V: a grid of d_model × d_k cells (shapes named :func:`weight_names`), one box of
    that proportion where the cells would be too small to draw, or where the sizes are
    symbols. ``batched=True`` draws the module's way, all
    heads in one tensor (B, h, T, d_k), with symbolic sizes only.

    Returns a plotly figure (no controls). Raises ``ValueError`` if only some sizes are given
    or a size is below 1, ``TypeError`` for a non-integer size.
    """
    validate.boolean("batched", batched)
    sizes = {"n_tokens": n_tokens, "d_model": d_model, "n_heads": n_heads, "d_k": d_k}
    given = [k for k, v in sizes.items() if v is not None]
    if given and len(given) < 4:
        missing = [k for k in sizes if k not in given]
        raise ValueError(f"give all four sizes or none: {', '.join(missing)} missing (e.g. "
                         "multihead_dataflow(3, 4, 2, 3), or multihead_dataflow() for symbols)")
    if batched and given:
        raise ValueError("batched=True draws symbolic shapes (B, h, T, d_k): leave the sizes "
                         "out, or draw batched=False with the sizes")
    for name in given:
        validate.integer(name, sizes[name], low=1, high=4096)
    if batched:
        return describe(_dataflow_batched(), alt=tr("common.dg_flow_batched_alt"),
                        caption=tr("common.dg_flow_batched_caption"))
    symbolic = not given
    n = tr("common.dg_sym_n") if symbolic else n_tokens
    dm = "d_model" if symbolic else d_model
    dk = "d_k" if symbolic else d_k
    width = "h·d_k" if symbolic else n_heads * d_k
    shown = ["1", "h"] if symbolic else [str(h) for h in range(1, min(n_heads, 2) + 1)]
    more = None if symbolic or n_heads <= 2 else n_heads - 2
    s = _Sketch()
    top, bottom = s.box(0.5, 0, f"{tr('common.dg_input')}<br>{_shape(n, dm)}", "data")
    cols = [0.5] if len(shown) == 1 else [0.25, 0.75]
    # each head's own W_Q, W_K and W_V, drawn as the d_model × d_k matrices they are
    each = tr("common.dg_each", shape=_shape(dm, dk))
    y = w_bottom = bottom + GAP
    for x, h in zip(cols, shown, strict=True):
        s.arrow(0.5, bottom, x, y)
        w_bottom = max(w_bottom, _weights(s, x, y, h, None if symbolic else (d_model, d_k),
                                          each))
    bottom = w_bottom
    rows = [
        lambda h: (f"{tr('common.dg_qkv_short', head=tr('common.dg_head', h=h))}<br>"
                   f"{tr('common.dg_each', shape=_shape(n, dk))}", "data"),
        lambda h: (f"{tr('common.dg_scores', d_k=dk)}<br>{_shape(n, n)}", "attention"),
        lambda h: (f"{tr('common.dg_softmax')}<br>{_shape(n, n)}", "attention"),
        lambda h: (f"{tr('common.dg_z', h=h)}<br>{_shape(n, dk)}", "data"),
    ]
    y, prev_bottom = bottom + GAP, bottom
    for i, row in enumerate(rows):
        row_bottom = y
        for x, h in zip(cols, shown, strict=True):
            text, style = row(h)
            b_top, b_bottom = s.box(x, y, text, style)
            s.arrow(x, prev_bottom, x, b_top)
            row_bottom = max(row_bottom, b_bottom)
        if i == 0 and (more or symbolic) and len(cols) == 2:
            dots = "…" if symbolic else tr("common.dg_more_heads", n=more)
            s.label(0.5, y + box_height("a<br>b") / 2, dots)
        prev_bottom = row_bottom
        y = row_bottom + GAP
    c_top, c_bottom = s.box(0.5, y, f"{tr('common.dg_concat')}<br>{_shape(n, width)}", "data")
    for x in cols:
        s.arrow(x, prev_bottom, 0.5, c_top)
    o_text = (f"{tr('common.dg_output')}<br>{tr('common.dg_wo', shape=_shape(width, dm))} → "
              f"{_shape(n, dm)}")
    o_top, o_bottom = s.box(0.5, c_bottom + GAP, o_text, "attention")
    s.arrow(0.5, c_bottom, 0.5, o_top)
    # a chapter that draws it with its own sizes says so in its own words (chapter 3)
    return describe(s.figure(tr("common.dg_flow_title"), o_bottom + 4),
                    alt=tr("common.dg_flow_alt"), caption=tr("common.dg_flow_caption"))


MAT_GAP = 46          # px between the middles of one head's W_Q, W_K and W_V
MAT_BOX = (34, 44)    # px: the most one matrix takes, wide and tall
MAT_CELL = 9          # px: the most one of its cells takes
MAT_SYMBOLIC = (20, 36)  # px: a matrix of symbolic shape (d_model × d_k), as one box


def weight_names(head) -> list[str]:
    """The names the dataflow gives head ``head``'s three weight matrices (W_Q1, W_K1, W_V1
    in both editions): the names its cells carry (``shape.name``)."""
    return [tr("common.dg_weight", which=which, h=head) for which in "QKV"]


def _weights(s: _Sketch, x: float, top: float, head, sizes: tuple[int, int] | None,
             shape_text: str) -> float:
    """Head ``head``'s W_Q, W_K and W_V side by side around ``x``, each named above its grid
    of ``sizes`` = (rows, columns) cells (one box where ``sizes`` is None, the symbolic
    d_model × d_k, or where the cells would be under 3 px), their shape below; every cell is
    a shape named after its matrix. Returns the bottom in px."""
    grid_top = top + FONT * LINE + 3
    if sizes is None:
        (w, h), rows, cols = MAT_SYMBOLIC, 1, 1
    else:
        rows, cols = sizes
        cell = min(MAT_CELL, MAT_BOX[0] / cols, MAT_BOX[1] / rows)
        w, h = max(6.0, cols * cell), max(6.0, rows * cell)
        if cell < 3:   # too many to draw: one box of the matrix's proportions
            rows = cols = 1
    fill, edge = STYLES["weight"]
    for k, name in enumerate(weight_names(head)):
        centre = (k - 1) * MAT_GAP
        s.label(x, top + FONT * LINE / 2, name, shift=centre)
        left = centre - w / 2
        for i in range(rows):
            for j in range(cols):
                s.rect(x, grid_top + i * h / rows, grid_top + (i + 1) * h / rows,
                       left + j * w / cols, left + (j + 1) * w / cols, fill, edge, name=name)
    bottom = grid_top + h + 3
    s.label(x, bottom + FONT * LINE / 2, shape_text)
    return bottom + FONT * LINE


def _dataflow_batched() -> go.Figure:
    s = _Sketch()
    heads = _shape("B", "h", "T", "d_k")
    steps = [
        (f"{tr('common.dg_input')}<br>{_shape('B', 'T', 'd_model')}", "data"),
        (f"{tr('common.dg_qkv_batched')}<br>{tr('common.dg_each', shape=heads)}", "data"),
        (f"{tr('common.dg_scores', d_k='d_k')}<br>{_shape('B', 'h', 'T', 'T')}", "attention"),
        (f"{tr('common.dg_softmax')}<br>{_shape('B', 'h', 'T', 'T')}", "attention"),
        (f"{tr('common.dg_z', h='')}<br>{_shape('B', 'h', 'T', 'd_k')}", "data"),
        (f"{tr('common.dg_concat_batched')}<br>{_shape('B', 'T', 'h·d_k')}", "data"),
        (f"{tr('common.dg_output')}<br>{_shape('B', 'T', 'd_model')}", "attention"),
    ]
    y, prev = 0.0, None
    for text, style in steps:
        top, bottom = s.box(0.5, y, text, style)
        if prev is not None:
            s.arrow(0.5, prev, 0.5, top)
        prev, y = bottom, bottom + GAP
    return s.figure(tr("common.dg_flow_title_batched"), prev + 4)


# --- b. Post-LN vs Pre-LN ---------------------------------------------------------------------

# The two blocks, top to bottom: (what, style). "add" is the residual sum; a residual line runs
# from the main path just below the step named in BRANCH to the next "add".
_POST = ("x", "attention", "add", "norm", "ff", "add", "norm", "out")
_PRE = ("x", "norm", "attention", "add", "norm", "ff", "add", "out")


def _step_text(step: str) -> tuple[str, str]:
    return {"x": (tr("common.dg_x_in"), "note"), "out": (tr("common.dg_x_out"), "note"),
            "attention": (tr("common.dg_attention"), "attention"),
            "ff": (tr("common.dg_ff"), "ff"), "norm": (tr("common.dg_layernorm"), "norm"),
            "add": (tr("common.dg_add"), "data")}[step]


def _column(s: _Sketch, x: float, steps: tuple[str, ...], top: float, post: bool, *,
            texts: list[tuple[str, str]] | None = None, entry: float | None = None,
            label: bool = False) -> float:
    """The ``steps`` of one block down from ``top`` at ``x``, each in its box (``texts``: the
    boxes' own (text, style), default the steps' names), arrows between them and a residual
    line to every "add". ``entry``: where the stream comes in from above when the column has
    no "x" box of its own (the first residual line branches between it and the first box);
    ``label``: write "residual" along each residual line. Returns the y under the last box."""
    texts = texts or [_step_text(step) for step in steps]
    widest = max(box_width(t) for t, style in texts if style != "note")
    out = widest / 2 + 12
    edges = [] if entry is None else [(entry, entry)]
    y = top
    for text, style in texts:
        edges.append(s.box(x, y, text, style))
        y = edges[-1][1] + 12
    for i in range(1 if entry is None else 2, len(edges)):
        s.arrow(x, edges[i - 1][1], x, edges[i][0])
    # residual lines: the stream branches off below ``start`` and joins the next sum; after a
    # sum, Post-LN's stream is the LayerNorm's output, Pre-LN's the sum itself
    start = 0
    first = 0 if entry is None else 1   # edges[first + i] is steps[i]'s box
    for i, step in enumerate(steps):
        if step == "add":
            at = first + i
            branch = (edges[start][1] + edges[start + 1][0]) / 2
            mid = (edges[at][0] + edges[at][1]) / 2
            s.bypass(x, branch, mid, out, box_width(tr("common.dg_add")) / 2)
            if label:
                s.label(x, (branch + mid) / 2, tr("common.dg_residual"), shift=out + 10,
                        angle=-90, color=ARROW)
            start = at + 1 if post else at
    return y


def norm_placement() -> go.Figure:
    """A Post-LN block (the 2017 paper: LayerNorm after each residual sum) beside a Pre-LN
    block (LayerNorm before each sub-layer, the residual stream left untouched), each with
    its two residual connections. Chapter 5 trains both (and says that a Pre-LN stack ends
    with one more LayerNorm). Takes no arguments."""
    s = _Sketch()
    head = FONT * LINE
    for x, key in ((0.25, "common.dg_post"), (0.75, "common.dg_pre")):
        s.label(x, head / 2, tr(key), bold=True)
    bottom = 0.0
    for x, steps in ((0.25, _POST), (0.75, _PRE)):
        bottom = max(bottom, _column(s, x, steps, head + 10, steps is _POST))
    return describe(s.figure(tr("common.dg_norm_title"), bottom - 8),
                    alt=tr("common.dg_norm_alt"), caption=tr("common.dg_norm_caption"))


# --- c. the toy model ------------------------------------------------------------------------

# one block's steps for each placement of the LayerNorm (book.toy.model.EncoderBlock.forward)
_TOY_BLOCK = {"pre": ("norm", "attention", "add", "norm", "ff", "add"),
              "post": ("attention", "add", "norm", "ff", "add", "norm"),
              "none": ("attention", "add", "ff", "add")}

TOY_KEYS = ("vocab_size", "n_labels", "d_model", "n_heads", "n_layers", "d_ff", "max_len",
            "norm")


def toy_model(config: Mapping, n_params: int | None = None) -> go.Figure:
    """The takeout-order encoder: token and position embeddings, ``n_layers`` blocks of
    self-attention and a feed-forward layer, a classifier per token; every size from
    ``config`` (a :class:`book.toy.model.EncoderConfig`, e.g. ``TinyEncoder(**MODEL).config``,
    or a dict with :data:`TOY_KEYS`). ``n_params``: the model's parameter count, for the title.

    Raises ``TypeError`` if ``config`` is not a mapping, ``ValueError`` if a key is missing,
    a size is below 1, ``d_model`` is not divisible by ``n_heads`` or ``norm`` is unknown.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping such as TinyEncoder(**MODEL).config, got "
                        f"{type(config).__name__}")
    missing = [k for k in TOY_KEYS if k not in config]
    if missing:
        raise ValueError(f"config lacks {', '.join(missing)}; pass the model's own config "
                         "(model.config) so the picture shows its sizes")
    c = {k: validate.integer(k, config[k], low=1) for k in TOY_KEYS if k != "norm"}
    norm = validate.choice("norm", config["norm"], ("pre", "post", "none"))
    d_k = validate.head_split(c["d_model"], c["n_heads"])
    if n_params is not None:
        n_params = validate.integer("n_params", n_params, low=1)
    d = c["d_model"]
    s = _Sketch()
    _, b = s.box(0.5, 0, tr("common.dg_toy_input", max_len=c["max_len"]), "data")
    y = b + GAP
    tops = []
    for x, text in ((0.27, tr("common.dg_tok_emb", vocab=c["vocab_size"], d=d)),
                    (0.73, tr("common.dg_pos_emb", max_len=c["max_len"], d=d))):
        t, eb = s.box(x, y, text, "data")
        s.arrow(0.5, b, x, t)
        tops.append(eb)
    a_top, a_bottom = s.box(0.5, max(tops) + GAP, tr("common.dg_add"), "data")
    for x, eb in zip((0.27, 0.73), tops, strict=True):
        s.arrow(x, eb, 0.5, a_top)
    f_top = a_bottom + GAP
    s.label(0.04, f_top + 4 + FONT * LINE / 2, tr("common.dg_block_frame", n=c["n_layers"]),
            anchor="left", bold=True, shift=4)
    # one block as the model runs it (book.toy.model.EncoderBlock), each sub-layer with its
    # residual connection: the stream goes around it and is added to its output
    steps = _TOY_BLOCK[norm]
    texts = {"attention": (tr("common.dg_toy_attention", h=c["n_heads"], d_k=d_k), "attention"),
             "ff": (tr("common.dg_toy_ff", d=d, d_ff=c["d_ff"]), "ff"),
             "norm": _step_text("norm"), "add": _step_text("add")}
    b_top = f_top + 8 + FONT * LINE + 6
    s.arrow(0.5, a_bottom, 0.5, b_top)
    y = _column(s, 0.5, steps, b_top, norm == "post", texts=[texts[st] for st in steps],
                entry=f_top + FONT * LINE / 2, label=True)
    f_bottom = y - 4
    s.frame(0.04, 0.96, f_top, f_bottom)
    y, prev = f_bottom + GAP, y - 12   # under the block's last box
    if norm == "pre":
        n_top, n_bottom = s.box(0.5, y, tr("common.dg_layernorm"), "norm")
        s.arrow(0.5, prev, 0.5, n_top)
        y, prev = n_bottom + GAP, n_bottom
    k_top, k_bottom = s.box(0.5, y, tr("common.dg_toy_classifier", d=d,
                                       n_labels=c["n_labels"]), "data")
    s.arrow(0.5, prev, 0.5, k_top)
    o_top, o_bottom = s.box(0.5, k_bottom + GAP, tr("common.dg_toy_output",
                                                    n_labels=c["n_labels"]), "note")
    s.arrow(0.5, k_bottom, 0.5, o_top)
    title = (tr("common.dg_toy_title", n_layers=c["n_layers"], params=n_params)
             if n_params is not None else tr("common.dg_block_frame", n=c["n_layers"]))
    return s.figure(title, o_bottom + 4)


# --- d. the KV cache -------------------------------------------------------------------------

SLOT = 30  # px: one cached key or value


def kv_cache(n_cached: int = 5, example: Mapping | None = None) -> go.Figure:
    """One layer's KV cache while token ``n_cached + 1`` is generated: only the new token's
    q, k, v are computed; its k and v join the ``n_cached`` kept ones; its query scores all
    of them. Below, the memory formula 2 · layers · tokens · d_model · bytes, worked out for
    ``example`` (a dict with ``layers``, ``tokens``, ``d_model`` and ``bytes``) if given.

    Raises ``ValueError`` for ``n_cached`` outside 1..8 (the row must fit a phone) or an
    example with a missing key or a size below 1.
    """
    n_cached = validate.integer("n_cached", n_cached, low=1, high=8)
    if example is not None:
        if not isinstance(example, Mapping):
            raise TypeError("example must be a dict with layers, tokens, d_model and bytes, "
                            f"got {type(example).__name__}")
        missing = [k for k in ("layers", "tokens", "d_model", "bytes") if k not in example]
        if missing:
            raise ValueError(f"example lacks {', '.join(missing)}; e.g. {{'layers': 2, "
                             "'tokens': 136, 'd_model': 128, 'bytes': 4}")
        example = {k: validate.integer(f"example[{k!r}]", example[k], low=1)
                   for k in ("layers", "tokens", "d_model", "bytes")}
    t = n_cached + 1
    s = _Sketch()
    _, b = s.box(0.5, 0, tr("common.dg_kv_new", t=t), "new")
    p_top, p_bottom = s.box(0.5, b + GAP, tr("common.dg_kv_project", t=t), "new")
    s.arrow(0.5, b, 0.5, p_top)
    s.arrow(0.5, p_bottom, 0.5, p_bottom + GAP - 2)   # its k and v go into the cache
    y = p_bottom + GAP
    for key, letter in (("common.dg_kv_keys", "k"), ("common.dg_kv_values", "v")):
        s.label(0.5, y + FONT * LINE / 2, tr(key, n=n_cached))
        y += FONT * LINE + 6
        left = -t * SLOT / 2
        for i in range(t):
            new = i == n_cached
            fill, edge = STYLES["new" if new else "attention"]
            s.rect(0.5, y, y + SLOT, left + i * SLOT, left + (i + 1) * SLOT, fill, edge)
            s.label(0.5, y + SLOT / 2, tr("common.dg_kv_slot", letter=letter, i=i + 1),
                    shift=left + (i + 0.5) * SLOT)
        y += SLOT + 10
    sc_top, sc_bottom = s.box(0.5, y + GAP - 10, tr("common.dg_kv_scores", n=t), "attention")
    s.arrow(0.5, y - 10, 0.5, sc_top)
    o_top, o_bottom = s.box(0.5, sc_bottom + GAP, tr("common.dg_kv_out"), "attention")
    s.arrow(0.5, sc_bottom, 0.5, o_top)
    memory = tr("common.dg_kv_memory")
    if example is not None:
        total = 2 * example["layers"] * example["tokens"] * example["d_model"] * example["bytes"]
        memory += "<br>" + tr("common.dg_kv_example", layers=example["layers"],
                              tokens=example["tokens"], d=example["d_model"],
                              bytes=example["bytes"], total=total)
    _, m_bottom = s.box(0.5, o_bottom + GAP, memory, "norm")
    return describe(s.figure(tr("common.dg_kv_title", t=t), m_bottom + 4),
                    alt=tr("common.dg_kv_alt", t=t),
                    caption=tr("common.dg_kv_caption", n=n_cached, t=t))


# --- e. the banded window ----------------------------------------------------------------------

CELL = 14  # px: one query-key pair


def window_grid(mask, window: int, query: int | None = None) -> go.Figure:
    """Which keys each query scores: the full n × n matrix beside a sliding window.

    ``mask``: the window's (n, n) boolean mask, True = query i may attend to key j (e.g.
    ``book.ideas.longctx.window_mask(8, 2)``), 2 ≤ n ≤ 10; ``window``: its w, for the labels;
    ``query``: the row to highlight (0-based; default the middle one). The counts in the
    labels are the mask's own.

    Raises ``ValueError`` for a mask that is not square, too small or too big for a phone,
    allows nothing in a row, or a ``query`` outside it.
    """
    m = validate.array("mask", mask, ndim=2)
    n = m.shape[0]
    if m.shape != (n, n) or not 2 <= n <= 10:
        raise ValueError(f"mask must be square, n × n with 2 ≤ n ≤ 10 (a phone-wide grid), got "
                         f"{m.shape}; e.g. longctx.window_mask(8, 2)")
    if not np.isin(m, (0, 1)).all():
        raise ValueError("mask must be boolean (True = may attend)")
    m = m.astype(bool)
    if not m.any(axis=1).all():
        raise ValueError("every query must see at least one key (its row of the mask has a "
                         "True)")
    window = validate.integer("window", window, low=0)
    query = n // 2 if query is None else validate.integer("query", query, low=0, high=n - 1)
    seen = np.flatnonzero(m[query])
    s = _Sketch()
    grid = n * CELL
    centres = (-(grid / 2 + 26), grid / 2 + 26)
    top = FONT * LINE * 2 + 8
    titles = (tr("common.dg_window_full", n=n, count=n * n),
              tr("common.dg_window_band", w=window, count=int(m.sum())))
    rows = (tr("common.dg_window_row_full", i=query + 1, n=n),
            tr("common.dg_window_row", i=query + 1, lo=int(seen[0]) + 1, hi=int(seen[-1]) + 1))
    s.label(0.5, FONT * LINE / 2, tr("common.dg_window_keys"))
    for centre, allowed, title, row in zip(centres, (np.ones_like(m), m), titles, rows,
                                           strict=True):
        s.label(0.5, FONT * LINE * 1.5 + 4, title, shift=centre)
        left = centre - grid / 2
        for i in range(n):
            for j in range(n):
                on = bool(allowed[i, j])
                fill = ("#c77700" if i == query else "#1f3b73") if on else "#ededed"
                s.rect(0.5, top + i * CELL, top + (i + 1) * CELL, left + j * CELL,
                       left + (j + 1) * CELL, fill, "white")
        s.label(0.5, top + grid + 6 + FONT * LINE / 2, row, shift=centre, color="#8a4f00")
    s.label(0.5, top + grid / 2, tr("common.dg_window_queries"), angle=-90,
            shift=centres[0] - grid / 2 - 12)
    return s.figure(tr("common.dg_window_title"), top + grid + 6 + FONT * LINE + 4)
