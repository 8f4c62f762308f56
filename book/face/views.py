"""The head view and the model view, written once: every layer and head of a model's attention
on a few sentences, as static plotly figures whose dropdown and slider run in the browser.

The views draw plain arrays, never a model: a chapter module turns its model's output into one
:class:`Sentence` per sentence (or order) — the weights of every layer and head, the token labels,
a caption — and passes them here with the options its page needs (chapter 8 draws the trained
toy encoder, :mod:`book.chapters.ch08_seeing_attention`; chapter 8b the pretrained model,
:mod:`book.chapters.ch08b_real_model`).

* :func:`head_view`: one map at a time; the dropdown picks the sentence, the slider the head
  (every layer's, in order). One heatmap per sentence: the dropdown shows one and sets the axes,
  each slider step restyles all of them, so the two controls combine.
* :func:`model_view`: the heads of one layer side by side on a grid; the slider picks the layer,
  the dropdown the sentence. ``one_trace_per`` says which control restyles the heatmaps.

Rows = queries, columns = keys; the token labels must be unique (plotly merges equal
categories). The figures are drawn in the book's language (:mod:`book.kit.i18n`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.face.plotting import COLORSCALE, rounded
from book.kit import validate
from book.kit.i18n import tr

TRACES_PER = ("sentence", "layer")


@dataclass(frozen=True)
class Sentence:
    """One sentence (or order) as the views draw it.

    Args:
        maps: attention weights of every layer and head, (layers, heads, n_queries, n_keys);
            rows = queries, columns = keys.
        keys: the n_keys column labels (unique).
        caption: the text (plotly HTML) shown above the maps while this sentence is chosen.
        queries: the n_queries row labels (unique); None: the keys. The model view labels both
            axes with the keys (its panels are small).
    """

    maps: np.ndarray
    keys: Sequence[str]
    caption: str = ""
    queries: Sequence[str] | None = None

    def __post_init__(self):
        maps = validate.array("maps", self.maps, ndim=4)
        keys = validate.labels("keys", self.keys)
        queries = keys if self.queries is None else validate.labels("queries", self.queries)
        if maps.shape[2:] != (len(queries), len(keys)):
            raise ValueError(f"maps has shape {maps.shape}, (layers, heads, queries, keys), but "
                             f"there are {len(queries)} query and {len(keys)} key labels; pass "
                             "one label per row and column of the maps")
        if not isinstance(self.caption, str):
            raise TypeError(f"caption must be a str (plotly HTML), got "
                            f"{type(self.caption).__name__}")
        object.__setattr__(self, "maps", maps)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "queries", queries)


def head_label(layer: int, head: int) -> str:
    """``"layer 1 · head 3"``: how the views name a head (its title and hover text)."""
    return tr("common.head_label", layer=layer, head=head)


def category_axes(keys, queries=None, suffix: str = "") -> dict:
    """The layout entries that show ``keys`` along x and ``queries`` (default: the keys) down y,
    in order, one cell each, the first query on top; ``suffix`` names the axes of a subplot
    (``"2"`` for ``xaxis2``/``yaxis2``). Dotted keys, as an ``update`` button's layout takes."""
    keys = list(keys)
    queries = keys if queries is None else list(queries)
    return {f"xaxis{suffix}.categoryarray": keys, f"xaxis{suffix}.range": [-0.5, len(keys) - 0.5],
            f"yaxis{suffix}.categoryarray": queries,
            f"yaxis{suffix}.range": [len(queries) - 0.5, -0.5]}


def _hover(digits: int) -> str:
    return tr("common.hover_map", q="%{y}", k="%{x}", w=f"%{{z:.{digits}f}}") + "<extra></extra>"


def _merged(base: dict, extra: dict | None, name: str) -> dict:
    """``base`` with ``extra`` laid over it, nested dicts merged key by key."""
    if extra is None:
        return base
    if not isinstance(extra, dict):
        raise TypeError(f"{name} must be a dict of plotly properties or None, got "
                        f"{type(extra).__name__}")
    out = dict(base)
    for key, value in extra.items():
        out[key] = (_merged(out[key], value, f"{name}[{key!r}]")
                    if isinstance(value, dict) and isinstance(out.get(key), dict)
                    else copy.deepcopy(value))
    return out


def _checked(sentences, names) -> tuple[list[Sentence], list[str], int, int]:
    sentences = validate.listed("sentences", sentences, "[views.Sentence(maps, keys)]",
                                allow_empty=False)
    for i, s in enumerate(sentences):
        if not isinstance(s, Sentence):
            raise TypeError(f"sentences[{i}] must be a book.face.views.Sentence, got "
                            f"{type(s).__name__}")
    names = validate.listed("names", names, "['sentence 1', 'sentence 2']")
    if len(names) != len(sentences):
        raise ValueError(f"got {len(sentences)} sentences but {len(names)} names; pass one "
                         "menu name per sentence")
    n_layers, n_heads = sentences[0].maps.shape[:2]
    for i, s in enumerate(sentences):
        if s.maps.shape[:2] != (n_layers, n_heads):
            raise ValueError(f"sentences[{i}] has {s.maps.shape[0]} layers × {s.maps.shape[1]} "
                             f"heads but sentences[0] has {n_layers} × {n_heads}; draw the "
                             "maps of one model")
    return sentences, [str(n) for n in names], n_layers, n_heads


def _title(text: str) -> dict:
    return {"text": text, "font": {"size": 13}, "x": 0, "xanchor": "left", "y": 0.99,
            "yanchor": "top", "yref": "container"}


def _caption(text: str, style: dict) -> dict:
    """The caption annotation: ``style`` (its ``y``, ``font`` …) over the defaults."""
    base = {"text": text, "x": 0, "xref": "paper", "xanchor": "left", "y": 1.02,
            "yref": "paper", "yanchor": "bottom", "showarrow": False, "align": "left",
            "font": {"size": 12}}
    return _merged(base, style, "caption")


def head_view(sentences, names, *, start: tuple[int, int] = (0, 0), digits: int = 2,
              slider_prefix: str = "", slider_pad: int = 70, menu: dict | None = None,
              caption: dict | None = None, key_axis: dict | None = None,
              layout: dict | None = None, controls: bool = True) -> go.Figure:
    """One head on one sentence: the dropdown picks the sentence, the slider the head (all of
    them, layer by layer: ``L0 H0``, ``L0 H1``, …). Rows = queries, columns = keys.

    Args:
        sentences: the :class:`Sentence` list (at least one), all from one model.
        names: their menu labels, one per sentence.
        start: the (layer, head) shown first.
        digits: decimals the weights are rounded to (and shown with on hover).
        slider_prefix: the text before the slider's current value.
        slider_pad: px between the plot and the slider.
        menu: plotly ``updatemenu`` properties laid over the default placement (left, just
            above the plot, opening downwards), e.g. ``{"direction": "up", "y": 0}``.
        caption: annotation properties laid over the caption's default (12 px, just above the
            plot, left-aligned).
        key_axis: x-axis properties laid over its default (title, labels turned upright),
            e.g. ``{"title": {"standoff": 28}, "automargin": True}``.
        layout: layout properties applied last (``fig.update_layout(layout)``: nested dicts
            merge), e.g. ``{"margin": {"t": 190}}``.
        controls: False draws the first state without the dropdown and the slider (a face
            with controls of its own: ipywidgets, or the page's).

    Returns:
        A ``go.Figure`` 680 px tall whose controls run without a kernel.
    """
    sentences, names, n_layers, n_heads = _checked(sentences, names)
    if isinstance(start, (str, bytes)) or not isinstance(start, Sequence) or len(start) != 2:
        raise TypeError(f"start must be a (layer, head) pair such as (0, 3), got {start!r}")
    layer0 = validate.integer("layer", start[0], low=0, high=n_layers - 1)
    head0 = validate.integer("head", start[1], low=0, high=n_heads - 1)
    digits = validate.integer("digits", digits, low=0, high=6)
    caption_style = _merged({}, caption, "caption")
    fig = go.Figure()
    for i, s in enumerate(sentences):
        fig.add_trace(go.Heatmap(
            z=rounded(s.maps[layer0, head0], digits), x=s.keys, y=s.queries, zmin=0, zmax=1,
            colorscale=COLORSCALE, visible=i == 0,
            colorbar={"title": {"text": tr("common.weight")}}, hovertemplate=_hover(digits)))
    buttons = [{"label": name, "method": "update",
                "args": [{"visible": [j == i for j in range(len(sentences))]},
                         {**category_axes(s.keys, s.queries),
                          "annotations": [_caption(s.caption, caption_style)]}]}
               for i, (name, s) in enumerate(zip(names, sentences, strict=True))]
    steps = [{"label": f"L{layer} H{head}", "method": "update",
              "args": [{"z": [rounded(s.maps[layer, head], digits) for s in sentences]},
                       {"title.text": head_label(layer, head)}]}
             for layer in range(n_layers) for head in range(n_heads)]
    first = category_axes(sentences[0].keys, sentences[0].queries)
    if validate.boolean("controls", controls):
        fig.update_layout(
            updatemenus=[_merged({"buttons": buttons, "direction": "down", "showactive": True,
                                  "x": 0, "xanchor": "left", "y": 1.14, "yanchor": "bottom",
                                  "name": tr("common.view_menu")}, menu, "menu")],
            sliders=[{"active": layer0 * n_heads + head0, "steps": steps,
                      "name": tr("common.view_slider_head"),
                      "pad": {"t": validate.integer("slider_pad", slider_pad, low=0)},
                      "currentvalue": {"prefix": _text("slider_prefix", slider_prefix)}}])
    fig.update_layout(
        annotations=[_caption(sentences[0].caption, caption_style)], height=680,
        title=_title(head_label(layer0, head0)),
        xaxis={**_merged({"title": {"text": tr("common.key_axis")}, "tickangle": -90,
                          "categoryorder": "array"}, key_axis, "key_axis"),
               "categoryarray": first["xaxis.categoryarray"], "range": first["xaxis.range"]},
        yaxis={"title": tr("common.query_axis"), "categoryorder": "array", "automargin": True,
               "categoryarray": first["yaxis.categoryarray"], "range": first["yaxis.range"]},
        margin={"l": 40, "r": 20, "t": 150, "b": 40})
    if layout is not None:
        fig.update_layout(_merged({}, layout, "layout"))
    return fig


def model_view(sentences, names, *, layer: int = 0, one_trace_per: str = "sentence",
               grid: tuple[int, int] | None = None, spacing: tuple[float, float] = (0.03, 0.08),
               panel_titles=None, panel_title_size: int | None = None, digits: int = 2,
               colorbar: dict | None = None, slider_prefix: str = "", slider_pad: int = 70,
               menu: dict | None = None, caption: dict | None = None,
               key_labels: int | None = None, layout: dict | None = None,
               controls: bool = True) -> go.Figure:
    """The heads of one layer side by side: the slider picks the layer, the dropdown the
    sentence. Both axes of every panel show the keys.

    Args:
        sentences, names, digits, slider_prefix, slider_pad, menu, caption, layout: as in
            :func:`head_view` (the caption sits a little higher by default, at y = 1.04).
        layer: the layer shown first.
        one_trace_per: ``"sentence"``: one heatmap per sentence and head; the dropdown shows
            one sentence's (and sets every panel's axes), each slider step restyles them all
            (for many layers and few sentences). ``"layer"``: one heatmap per layer and head of
            the chosen sentence; the slider shows one layer's, each dropdown button restyles
            them all (for few layers and many sentences). Either way the controls combine.
        grid: (rows, columns) of panels; None: two columns.
        spacing: (horizontal, vertical) space between panels, as fractions of the figure.
        panel_titles: one title per head (default ``"H0"``, ``"H1"``, …).
        panel_title_size: their font size in px (None: plotly's).
        colorbar: colour-bar properties laid over the default (the first panel's bar, 40 % of
            the figure tall, near its top).
        key_labels: at most this many key labels under each panel: a longer sentence labels
            every second (third …) key, starting with the first (hover names every cell; the
            rows name every key). None: plotly's own ticks (with no ``dtick`` set, plotly
            leaves out labels that would collide).
        controls: False draws the first state without the dropdown and the slider.

    Returns:
        A ``go.Figure`` 780 px tall whose controls run without a kernel.
    """
    sentences, names, n_layers, n_heads = _checked(sentences, names)
    layer = validate.integer("layer", layer, low=0, high=n_layers - 1)
    validate.choice("one_trace_per", one_trace_per, TRACES_PER)
    digits = validate.integer("digits", digits, low=0, high=6)
    rows, cols = _grid(grid, n_heads)
    titles = ([f"H{h}" for h in range(n_heads)] if panel_titles is None
              else [str(t) for t in validate.listed("panel_titles", panel_titles, "['H0', 'H1']")])
    if len(titles) != n_heads:
        raise ValueError(f"got {len(titles)} panel_titles for {n_heads} heads; pass one per head")
    if isinstance(spacing, (str, bytes)) or not isinstance(spacing, Sequence) or len(spacing) != 2:
        raise TypeError(f"spacing must be a (horizontal, vertical) pair such as (0.03, 0.08), "
                        f"got {spacing!r}")
    fig = make_subplots(rows=rows, cols=cols,
                        horizontal_spacing=validate.real("spacing[0]", spacing[0], low=0),
                        vertical_spacing=validate.real("spacing[1]", spacing[1], low=0),
                        subplot_titles=titles)
    if panel_title_size is not None:
        fig.update_annotations(font_size=validate.integer("panel_title_size", panel_title_size,
                                                          low=1))
    bar = _merged({"title": {"text": tr("common.weight")}, "len": 0.4, "y": 0.8}, colorbar,
                  "colorbar")
    caption_style = _merged({"y": 1.04}, caption, "caption")
    hover = _hover(digits)
    first = sentences[0]
    by_layer = one_trace_per == "layer"
    if by_layer:
        traces = [(lay, h) for lay in range(n_layers) for h in range(n_heads)]
        for lay, h in traces:
            fig.add_trace(go.Heatmap(
                z=rounded(first.maps[lay, h], digits), x=first.keys, y=first.keys, zmin=0,
                zmax=1, colorscale=COLORSCALE, showscale=(lay, h) == (0, 0),
                visible=lay == layer, colorbar=bar,
                hovertemplate=f"{head_label(lay, h)}<br>{hover}"),
                row=h // cols + 1, col=h % cols + 1)
    else:
        for i, s in enumerate(sentences):
            for h in range(n_heads):
                fig.add_trace(go.Heatmap(
                    z=rounded(s.maps[layer, h], digits), x=s.keys, y=s.keys, zmin=0, zmax=1,
                    colorscale=COLORSCALE, visible=i == 0, showscale=h == 0, colorbar=bar,
                    hovertemplate=titles[h] + "<br>" + hover),
                    row=h // cols + 1, col=h % cols + 1)
    if by_layer:   # the axes follow each trace's categories
        fig.update_yaxes(autorange="reversed", tickfont_size=10, showticklabels=False, dtick=1)
        fig.update_xaxes(tickfont_size=10, tickangle=-90, showticklabels=False, dtick=1)
    else:          # hidden sentences' traces share the axes: each button sets their categories
        fig.update_xaxes(showticklabels=False, categoryorder="array", tickfont_size=10,
                         tickangle=-90)
        fig.update_yaxes(showticklabels=False, categoryorder="array", tickfont_size=10)
    fig.update_yaxes(showticklabels=True, col=1)  # token labels on the outer edges only
    fig.update_xaxes(showticklabels=True, row=rows)
    panel_annotations = [a.to_plotly_json() for a in fig.layout.annotations]
    if key_labels is not None:
        key_labels = validate.integer("key_labels", key_labels, low=1)

    def labelled(keys):
        """The x axes' tick values, every n-th key when there are more than key_labels; none
        set without key_labels (plotly's own category ticks, which skip labels that would
        collide where no dtick is set)."""
        if key_labels is None:
            return {}
        keys = list(keys)
        step = -(-len(keys) // key_labels)
        return {f"xaxis{'' if k == 0 else k + 1}.tickvals": keys[::step]
                for k in range(n_heads)}

    def axes(keys):
        out = {}
        for k in range(n_heads):
            out.update(category_axes(keys, keys, "" if k == 0 else str(k + 1)))
        return {**out, **labelled(keys)}

    buttons = []
    for i, (name, s) in enumerate(zip(names, sentences, strict=True)):
        notes = {"annotations": panel_annotations + [_caption(s.caption, caption_style)]}
        if by_layer:
            args = [{"z": [rounded(s.maps[lh], digits) for lh in traces],
                     "x": [s.keys] * len(traces), "y": [s.keys] * len(traces)},
                    {**notes, **labelled(s.keys)}]
        else:
            args = [{"visible": [j == i for j in range(len(sentences)) for _ in range(n_heads)]},
                    {**axes(s.keys), **notes}]
        buttons.append({"label": name, "method": "update", "args": args})
    steps = []
    for lay in range(n_layers):
        if by_layer:
            restyle = {"visible": [lh[0] == lay for lh in traces]}
        else:
            restyle = {"z": [rounded(s.maps[lay, h], digits) for s in sentences
                             for h in range(n_heads)]}
        steps.append({"label": tr("common.layer", layer=lay), "method": "update",
                      "args": [restyle,
                               {"title.text": tr("common.layer_heads", layer=lay, n=n_heads)}]})
    fig.update_layout(**(labelled(first.keys) if by_layer else axes(first.keys)))
    fig.update_layout(
        annotations=panel_annotations + [_caption(first.caption, caption_style)], height=780,
        title=_title(tr("common.layer_heads", layer=layer, n=n_heads)),
        **({"updatemenus": [_merged({"buttons": buttons, "direction": "down",
                                     "showactive": True, "x": 0, "xanchor": "left",
                                     "y": 1.13, "yanchor": "bottom",
                                     "name": tr("common.view_menu")}, menu, "menu")],
            "sliders": [{"active": layer, "steps": steps,
                         "name": tr("common.view_slider_layer"),
                         "pad": {"t": validate.integer("slider_pad", slider_pad, low=0)},
                         "currentvalue": {"prefix": _text("slider_prefix", slider_prefix)}}]}
           if validate.boolean("controls", controls) else {}),
        margin={"l": 70, "r": 20, "t": 145, "b": 20})
    if layout is not None:
        fig.update_layout(_merged({}, layout, "layout"))
    return fig


def _grid(grid, n_heads: int) -> tuple[int, int]:
    if grid is None:
        cols = min(2, n_heads)
        return math.ceil(n_heads / cols), cols
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or len(grid) != 2:
        raise TypeError(f"grid must be a (rows, columns) pair such as (3, 4), got {grid!r}")
    rows = validate.integer("grid[0]", grid[0], low=1)
    cols = validate.integer("grid[1]", grid[1], low=1)
    if rows * cols < n_heads:
        raise ValueError(f"grid={tuple(grid)} has {rows * cols} panels for {n_heads} heads; "
                         f"use at least {math.ceil(n_heads / cols)} rows of {cols}")
    return rows, cols


def _text(name: str, value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value
