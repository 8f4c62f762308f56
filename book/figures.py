"""Plotly figure builders: the *static face* of every explorer.

Each explorer precomputes its frames with the same ``*_data`` function that the live widget
(``book.widgets``) calls, and wires them to sliders or dropdowns that run in the browser with
no kernel. Heatmaps put queries on rows and keys on columns, with token labels on both axes.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import orders_example, scaling, validate
from .attention import softmax

COLORSCALE = "Blues"  # light = low weight, dark = high: reads the same in greyscale
SCALE_COLORS = {"none": "#b3261e", "sqrt": "#1a56a8", "linear": "#7a7a7a"}
ILLUSTRATIVE = "illustrative weights, set by hand, not learned"


def _round(a, digits: int = 4):
    """Nested lists rounded for compact HTML (None where the value is missing)."""
    arr = np.asarray(a, dtype=float)
    out = np.round(arr, digits).astype(object)
    out[~np.isfinite(arr)] = None
    return out.tolist()


def _slider(steps: list[dict], prefix: str, active: int = 0) -> dict:
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
    fig = go.Figure(go.Heatmap(z=_round(w), x=col_labels, y=row_labels, zmin=0, zmax=zmax,
                               colorscale=COLORSCALE, colorbar={"title": {"text": "weight"}},
                               hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}"
                                             "<extra></extra>"))
    fig.update_layout(title=title, xaxis={"title": "key (attended to)", "side": "bottom"},
                      yaxis={"title": "query (attending)", "autorange": "reversed"},
                      height=460, margin={"l": 40, "r": 20, "t": 60, "b": 40})
    return fig


# --- chapter 1: how many heads -------------------------------------------------------------

MAX_HEADS = len(orders_example.RELATIONS)


def heads_data(n_heads: int) -> dict:
    """Panels for ``n_heads`` order-takers: one weight matrix (or None) and a title per panel."""
    heads = orders_example.illustrative_heads(n_heads)
    kinds = orders_example.relation_kinds_per_head(n_heads)
    z = [heads[i] if i < n_heads else None for i in range(MAX_HEADS)]
    titles = [f"head {i + 1}:<br>" + " + ".join(kinds[i]) if i < n_heads
              else f"head {i + 1}:<br>(not in this model)" for i in range(MAX_HEADS)]
    return {"z": z, "titles": titles}


def heads_explorer() -> go.Figure:
    """Static explorer: a slider over the number of heads (1–3), one heatmap per head."""
    labels = orders_example.labels()
    keys = orders_example.labels(short=True)
    fig = make_subplots(rows=1, cols=MAX_HEADS, horizontal_spacing=0.04,
                        subplot_titles=heads_data(1)["titles"])
    fig.update_annotations(font_size=12, yshift=8)
    n = len(labels)
    empty = [[None] * n for _ in range(n)]
    first = heads_data(1)
    for i in range(MAX_HEADS):
        z = _round(first["z"][i]) if first["z"][i] is not None else empty
        fig.add_trace(go.Heatmap(z=z, x=keys, y=labels, zmin=0, zmax=1, colorscale=COLORSCALE,
                                 showscale=i == MAX_HEADS - 1,
                                 colorbar={"title": {"text": "weight"}},
                                 hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}"
                                               "<extra></extra>"), row=1, col=i + 1)
        fig.update_yaxes(autorange="reversed", showticklabels=i == 0, row=1, col=i + 1)
        fig.update_xaxes(tickangle=-90, tickfont_size=11, title_text="key", row=1, col=i + 1)
    base_annotations = [a.to_plotly_json() for a in fig.layout.annotations]
    steps = []
    for h in range(1, MAX_HEADS + 1):
        data = heads_data(h)
        zs = [_round(z) if z is not None else empty for z in data["z"]]
        annotations = [dict(a, text=t) for a, t in zip(base_annotations, data["titles"],
                                                       strict=True)]
        steps.append({"label": str(h), "method": "update",
                      "args": [{"z": zs}, {"annotations": annotations}]})
    fig.update_yaxes(title_text="query", row=1, col=1)
    slider = {**_slider(steps, "number of heads: "), "pad": {"t": 80}}
    fig.update_layout(sliders=[slider], height=620,
                      title={"text": f"一碗牛肉面，不要香菜，多加辣 — {ILLUSTRATIVE}",
                             "font": {"size": 14}},
                      margin={"l": 40, "r": 20, "t": 110, "b": 40})
    return fig


def menu_figure(weights: dict[str, float]) -> go.Figure:
    """Bar chart of how much of each dish (value) the diner's request (query) picks up."""
    names, values = list(weights), list(weights.values())
    fig = go.Figure(go.Bar(x=names, y=_round(values), marker_color=SCALE_COLORS["sqrt"],
                           text=[f"{v:.2f}" for v in values], textposition="outside"))
    fig.update_layout(yaxis={"title": "attention weight", "range": [0, 1.05]},
                      xaxis={"title": "dish (key = its tags, value = the dish)"},
                      title="Request: spicy, no coriander, noodles", height=360)
    return fig


# --- chapter 2: scaling --------------------------------------------------------------------

def dk_data(d_k: int, n: int = 4000, bins: int = 41, seed: int = 0) -> dict:
    """Histograms of raw and scaled q·k at this d_k, with their measured variances."""
    raw = scaling.dot_products(d_k, n, seed)
    scaled = raw / np.sqrt(d_k)
    r = scaling.raw_range(d_k)
    raw_x, raw_y = scaling.histogram(raw, -r, r, bins)
    sc_x, sc_y = scaling.histogram(scaled, -4.0, 4.0, bins)
    return {"raw_x": raw_x, "raw_y": raw_y, "scaled_x": sc_x, "scaled_y": sc_y,
            "raw_var": float(raw.var()), "scaled_var": float(scaled.var()), "range": r}


def _dk_titles(data: dict, d_k: int) -> list[str]:
    return [f"raw q·k (d_k = {d_k}): variance {data['raw_var']:.1f}",
            f"q·k / √d_k: variance {data['scaled_var']:.2f}"]


def dk_explorer(d_ks=None) -> go.Figure:
    """Static explorer: slider over d_k; raw dot products spread out, scaled ones stay put."""
    d_ks = list(scaling.D_K_STEPS if d_ks is None else d_ks)
    first = dk_data(d_ks[0])
    fig = make_subplots(rows=1, cols=2, subplot_titles=_dk_titles(first, d_ks[0]),
                        horizontal_spacing=0.1)
    fig.add_trace(go.Bar(x=_round(first["raw_x"]), y=_round(first["raw_y"]), name="raw",
                         marker_color=SCALE_COLORS["none"]), row=1, col=1)
    fig.add_trace(go.Bar(x=_round(first["scaled_x"]), y=_round(first["scaled_y"]),
                         name="scaled", marker_color=SCALE_COLORS["sqrt"]), row=1, col=2)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    steps = []
    for d_k in d_ks:
        data = first if d_k == d_ks[0] else dk_data(d_k)
        annotations = [dict(a, text=t) for a, t in zip(base, _dk_titles(data, d_k), strict=True)]
        steps.append({"label": str(d_k), "method": "update",
                      "args": [{"x": [_round(data["raw_x"]), _round(data["scaled_x"])],
                                "y": [_round(data["raw_y"]), _round(data["scaled_y"])]},
                               {"annotations": annotations,
                                "xaxis.range": [-data["range"], data["range"]]}]})
    fig.update_xaxes(title_text="q·k", range=[-first["range"], first["range"]], row=1, col=1)
    fig.update_xaxes(title_text="q·k / √d_k", range=[-4, 4], row=1, col=2)
    fig.update_yaxes(title_text="density", row=1, col=1)
    fig.update_layout(sliders=[_slider(steps, "d_k = ")], showlegend=False, bargap=0.05,
                      height=430, margin={"t": 60, "b": 40})
    return fig


def softmax_row_data(d_k: int, n_keys: int = 16, seed: int = 3) -> dict:
    """One query's weights over ``n_keys`` random keys, unscaled and ÷√d_k."""
    row = scaling.score_rows(d_k, n_keys, 1, seed)[0]
    return {"none": softmax(row), "sqrt": softmax(row / np.sqrt(d_k))}


def softmax_row_explorer(d_ks=None, n_keys: int = 16) -> go.Figure:
    """Static explorer: one softmax row, unscaled vs scaled, as d_k grows."""
    d_ks = list(scaling.D_K_STEPS if d_ks is None else d_ks)
    keys = [f"k{j + 1}" for j in range(n_keys)]
    first = softmax_row_data(d_ks[0], n_keys)
    fig = go.Figure()
    for scale in ("none", "sqrt"):
        fig.add_trace(go.Bar(x=keys, y=_round(first[scale]), name=scaling.SCALE_NAMES[scale],
                             marker_color=SCALE_COLORS[scale]))
    steps = []
    for d_k in d_ks:
        data = softmax_row_data(d_k, n_keys)
        steps.append({"label": str(d_k), "method": "update",
                      "args": [{"y": [_round(data["none"]), _round(data["sqrt"])]},
                               {"title.text": _row_title(data, d_k)}]})
    fig.update_layout(sliders=[_slider(steps, "d_k = ")], barmode="group",
                      title=_row_title(first, d_ks[0]), height=420,
                      yaxis={"title": "attention weight", "range": [0, 1]},
                      xaxis={"title": "key"}, legend={"orientation": "h", "y": 1.12})
    return fig


def _row_title(data: dict, d_k: int) -> str:
    return (f"d_k = {d_k}: largest weight {data['none'].max():.2f} unscaled, "
            f"{data['sqrt'].max():.2f} scaled")


def _log2_axis(d_ks) -> dict:
    return {"type": "log", "title": "d_k (log scale)", "tickvals": list(d_ks),
            "ticktext": [str(d) for d in d_ks]}


def variance_figure(sweep: dict) -> go.Figure:
    """Measured var(q·k) against d_k, with the line var = d_k."""
    d_ks = sweep["d_k"]
    fig = go.Figure([go.Scatter(x=d_ks, y=d_ks, mode="lines", name="var = d_k (theory)",
                                line={"dash": "dash", "color": "#7a7a7a"}),
                     go.Scatter(x=d_ks, y=_round(sweep["variance"]), mode="markers",
                                name="measured", marker={"size": 9,
                                                         "color": SCALE_COLORS["none"]})])
    fig.update_layout(xaxis=_log2_axis(d_ks), yaxis={"type": "log", "title": "var(q·k)"},
                      height=380, title="The variance of a dot product grows like d_k")
    return fig


def saturation_figure(sweep: dict) -> go.Figure:
    """Largest weight and entropy of softmax rows against d_k, for the three scalings."""
    d_ks = sweep["d_k"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=["mean largest weight",
                                                        "mean entropy (nats)"])
    for scale in scaling.SCALES:
        style = {"color": SCALE_COLORS[scale]}
        fig.add_trace(go.Scatter(x=d_ks, y=_round(sweep["max_weight"][scale]), mode="lines+markers",
                                 name=scaling.SCALE_NAMES[scale], line=style, legendgroup=scale),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=d_ks, y=_round(sweep["entropy"][scale]), mode="lines+markers",
                                 name=scaling.SCALE_NAMES[scale], line=style, legendgroup=scale,
                                 showlegend=False), row=1, col=2)
    fig.add_hline(y=sweep["uniform_entropy"], line_dash="dot", row=1, col=2,
                  annotation_text="uniform (ln 16)", annotation_position="bottom right")
    fig.update_xaxes(**_log2_axis(d_ks))
    fig.update_yaxes(title_text="weight", range=[0, 1.02], row=1, col=1)
    fig.update_yaxes(title_text="nats", row=1, col=2)
    fig.update_layout(height=400, legend={"orientation": "h", "y": -0.3})
    return fig


def jacobian_figure(sweep: dict) -> go.Figure:
    """Size of softmax's Jacobian (the gradient that reaches the scores) against d_k."""
    d_ks = sweep["d_k"]
    fig = go.Figure([go.Scatter(x=d_ks, y=_round(sweep["jacobian"][s], 6), mode="lines+markers",
                                name=scaling.SCALE_NAMES[s], line={"color": SCALE_COLORS[s]})
                     for s in scaling.SCALES])
    fig.update_layout(xaxis=_log2_axis(d_ks),
                      yaxis={"title": "mean ‖∂softmax/∂scores‖ (Frobenius)", "rangemode": "tozero"},
                      height=380, title="Gradient through softmax, measured with autograd")
    return fig


def exam_figure(d_k: int = 100, n_students: int = 8, seed: int = 5) -> go.Figure:
    """The 1000-point vs 100-point exam: the same ranking, a tenfold smaller spread."""
    d_k = validate.integer("d_k", d_k, low=1, high=scaling.MAX_D_K)
    row = scaling.score_rows(d_k, n_students, 1, seed)[0]
    students = [f"student {i + 1}" for i in range(n_students)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[
        f"'1000-point exam': raw scores (÷1) → largest weight {softmax(row).max():.2f}",
        f"'100-point exam': ÷√{d_k} = ÷{np.sqrt(d_k):g} → largest weight "
        f"{softmax(row / np.sqrt(d_k)).max():.2f}"])
    fig.add_trace(go.Bar(x=students, y=_round(softmax(row)), marker_color=SCALE_COLORS["none"],
                         name="raw"), row=1, col=1)
    fig.add_trace(go.Bar(x=students, y=_round(softmax(row / np.sqrt(d_k))),
                         marker_color=SCALE_COLORS["sqrt"], name="scaled"), row=1, col=2)
    fig.update_yaxes(title_text="softmax weight", range=[0, 1], row=1, col=1)
    fig.update_yaxes(range=[0, 1], row=1, col=2)
    fig.update_layout(showlegend=False, height=380)
    fig.update_annotations(font_size=12)
    return fig


# --- chapter 3: the walkthrough, step by step ------------------------------------------------

SIGNED_COLORSCALE = "Cividis"  # monotonic lightness: negative = dark, positive = light


def walkthrough_frames(ex=None) -> list[dict]:
    """Every step of the 3-token, 2-head walkthrough as a labelled matrix, in order.

    Each frame: ``name``, ``description``, ``values`` and unique ``rows`` / ``cols`` labels.
    ``ex`` is a :class:`book.walkthrough.Example` (default: ``walkthrough.example()``).
    """
    from . import walkthrough as wt

    ex = wt.example() if ex is None else ex
    if not isinstance(ex, wt.Example):
        raise TypeError(f"ex must be a book.walkthrough.Example, got {type(ex).__name__}; "
                        "build one with book.walkthrough.example()")
    steps = wt.walkthrough(ex.X, ex.heads, ex.W_O)
    tokens = [f"{t} ({g})" for t, g in zip(ex.tokens, ex.glosses, strict=True)]
    d_model = ex.X.shape[1]
    features = [f"d{j + 1}" for j in range(d_model)]
    frames = [{"name": "X", "description": "the input: one row of d_model numbers per token",
               "values": ex.X, "rows": tokens, "cols": features}]
    for name, values in steps.items():
        if name in ("Z", "output", "residual", "layer_norm"):
            if name == "Z":
                widths = [h[2].shape[1] for h in ex.heads]
                cols = [f"h{h + 1}·{j + 1}" for h, w in enumerate(widths) for j in range(w)]
            else:
                cols = features
        elif name[0] in "SA":
            cols = [f"key {t}" for t in ex.tokens]
        else:
            cols = [f"{name[0]}{j + 1}" for j in range(values.shape[1])]
        frames.append({"name": name, "description": wt.describe(name), "values": values,
                       "rows": tokens, "cols": cols})
    return frames


def _frame_update(frame: dict) -> dict:
    v = np.asarray(frame["values"], dtype=float)
    bound = float(np.abs(v).max()) or 1.0
    return {"z": [_round(v, 3)], "x": [frame["cols"]], "y": [frame["rows"]],
            "text": [[[f"{x + 0.0:.2f}" for x in row] for row in v]],
            "zmin": [-bound], "zmax": [bound]}


def _frame_title(frame: dict) -> str:
    r, c = np.shape(frame["values"])
    return f"<b>{frame['name']}</b> ({r}×{c})<br>{frame['description']}"


def walkthrough_explorer(ex=None) -> go.Figure:
    """Static explorer: a slider through every step of the walkthrough, one matrix per step."""
    frames = walkthrough_frames(ex)
    first = _frame_update(frames[0])
    fig = go.Figure(go.Heatmap(
        z=first["z"][0], x=first["x"][0], y=first["y"][0], text=first["text"][0],
        texttemplate="%{text}", zmin=first["zmin"][0], zmax=first["zmax"][0],
        colorscale=SIGNED_COLORSCALE, colorbar={"title": {"text": "value"}},
        hovertemplate="%{y}, %{x}: %{z:.4f}<extra></extra>"))
    steps = [{"label": f["name"], "method": "update",
              "args": [_frame_update(f), {"title.text": _frame_title(f)}]} for f in frames]
    fig.update_layout(sliders=[_slider(steps, "step: ")], title={"text": _frame_title(frames[0]),
                                                                  "font": {"size": 13}},
                      yaxis={"autorange": "reversed", "title": "token (row)"},
                      xaxis={"title": "column", "side": "top"}, height=430,
                      margin={"t": 110, "l": 60, "r": 20, "b": 30})
    return fig


# --- chapter 4: masks -----------------------------------------------------------------------

MASK_KINDS = ("none", "causal", "padding", "causal + padding")
MASK_MAX_REAL = len(orders_example.TOKENS)  # the real tokens are a prefix of the takeout order
MASK_MAX_PAD = 8
MASK_TEXT_UP_TO = 10  # cells are labelled with their value up to this many tokens
# blocked = light grey, allowed = dark navy: the two read apart in greyscale, and the cells
# carry ✓ / · as well, so colour is never the only cue.
MASK_COLORSCALE = [[0.0, "#ededed"], [0.5, "#ededed"], [0.5, "#1f3b73"], [1.0, "#1f3b73"]]


_MASK_LAYER = None


def _mask_layer():
    """The seeded, untrained one-head layer and token vectors behind the explorer's weights."""
    global _MASK_LAYER
    if _MASK_LAYER is None:
        import torch

        from .mha import MultiHeadSelfAttention

        with torch.random.fork_rng(devices=[]):  # leave the reader's random stream alone
            torch.manual_seed(4)
            layer = MultiHeadSelfAttention(8, 1).eval()
        x = torch.randn(1, MASK_MAX_REAL + MASK_MAX_PAD, 8,
                        generator=torch.Generator().manual_seed(4))
        _MASK_LAYER = (layer, x)
    return _MASK_LAYER


def mask_data(kind: str, length: int, seq_len: int) -> dict:
    """One sequence of ``length`` real tokens padded to ``seq_len``, under mask ``kind``.

    Returns the unique token ``labels``, the boolean grid ``allowed`` (rows = queries, columns =
    keys, True = may attend, built with :mod:`book.masks`), the attention ``weights`` that
    :class:`book.mha.MultiHeadSelfAttention` computes with that mask (a seeded, untrained
    one-head layer), ``pad_share`` (the largest share of weight a real token puts on padding)
    and ``future_share`` (the largest share a real token puts on the tokens after it).
    """
    import torch

    from . import masks

    validate.choice("kind", kind, MASK_KINDS)
    length = validate.integer("length", length, low=1, high=MASK_MAX_REAL)
    seq_len = validate.integer("seq_len", seq_len, low=1, high=MASK_MAX_REAL + MASK_MAX_PAD)
    if seq_len < length:
        raise ValueError(f"seq_len={seq_len} is shorter than length={length}: the padded length "
                         "must hold every real token (padding adds seq_len - length positions)")
    causal = masks.causal_mask(seq_len) if "causal" in kind else None
    padding = masks.padding_mask([length], seq_len) if "padding" in kind else None
    if causal is None and padding is None:
        allowed = torch.ones(seq_len, seq_len, dtype=torch.bool)
    else:
        allowed = masks.combine(causal, padding)[0, 0]
    layer, x = _mask_layer()
    with torch.no_grad():
        _, weights = layer(x[:, :seq_len], mask=causal, padding_mask=padding, need_weights=True)
    w = weights[0, 0].double().numpy()
    n_pad = seq_len - length
    tokens = orders_example.TOKENS[:length] + ["pad"] * n_pad
    labels = orders_example.labels(tokens, tokens, short=True)
    return {"kind": kind, "length": length, "seq_len": seq_len, "labels": labels,
            "allowed": allowed.numpy(), "weights": w,
            "pad_share": float(w[:length, length:].sum(axis=1).max()) if n_pad else 0.0,
            "future_share": float(np.triu(w, k=1)[:length].sum(axis=1).max())}


def _mask_titles(kind: str) -> list[str]:
    name = "no mask" if kind == "none" else kind
    return [f"may attend? — {name}", f"weights — {name}"]


def _mask_traces(data: dict) -> dict:
    """x, y, z and text of the two panels (the mask grid, the weights) for ``data``."""
    n = data["seq_len"]
    show = n <= MASK_TEXT_UP_TO
    allowed, w = data["allowed"], data["weights"]
    mask_text = [["✓" if a else "·" for a in row] if show else [""] * n for row in allowed]
    # a blocked pair gets exactly 0, shown as "0" (not "0.00", which could be rounding)
    weight_text = [[f"{v:.2f}" if v else "0" for v in row] if show else [""] * n for row in w]
    return {"x": [data["labels"]] * 2, "y": [data["labels"]] * 2,
            "z": [allowed.astype(int).tolist(), _round(w)], "text": [mask_text, weight_text]}


def mask_explorer(length: int = 5, seq_lens=None, kinds=MASK_KINDS,
                  start: int | None = None) -> go.Figure:
    """Static explorer: a dropdown over mask kinds and a slider over the padded length.

    Left: which (query, key) pairs the mask allows; right: the attention weights the layer
    computes under it. Every (kind, padded length) is precomputed with :func:`mask_data`.
    The dropdown switches which pair of panels is visible; the slider restyles all of them, so
    the two controls combine freely in the browser.
    """
    length = validate.integer("length", length, low=1, high=MASK_MAX_REAL)
    seq_lens = list(range(length, MASK_MAX_REAL + 1) if seq_lens is None else seq_lens)
    kinds = [validate.choice("kind", k, MASK_KINDS) for k in kinds]
    if not seq_lens or not kinds:
        raise ValueError("mask_explorer needs at least one padded length and one mask kind")
    start = seq_lens[min(1, len(seq_lens) - 1)] if start is None else start
    if start not in seq_lens:
        raise ValueError(f"start={start} is not one of the padded lengths {seq_lens}")
    traces = {n: [_mask_traces(mask_data(k, length, n)) for k in kinds] for n in seq_lens}
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=_mask_titles(kinds[0]))
    for i, t in enumerate(traces[start]):
        visible = i == 0
        fig.add_trace(go.Heatmap(
            x=t["x"][0], y=t["y"][0], z=t["z"][0], text=t["text"][0], texttemplate="%{text}",
            zmin=0, zmax=1, colorscale=MASK_COLORSCALE, showscale=False, visible=visible,
            hovertemplate="query %{y}<br>key %{x}<br>%{z}: 1 = may attend<extra></extra>"),
            row=1, col=1)
        fig.add_trace(go.Heatmap(
            x=t["x"][1], y=t["y"][1], z=t["z"][1], text=t["text"][1], texttemplate="%{text}",
            zmin=0, zmax=1, colorscale=COLORSCALE, visible=visible,
            colorbar={"title": {"text": "weight"}, "len": 0.9},
            hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"),
            row=1, col=2)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    buttons = []
    for i, kind in enumerate(kinds):
        visible = [j // 2 == i for j in range(2 * len(kinds))]
        annotations = [dict(a, text=t) for a, t in zip(base, _mask_titles(kind), strict=True)]
        buttons.append({"label": f"mask: {kind}", "method": "update",
                        "args": [{"visible": visible}, {"annotations": annotations}]})
    steps = []
    for n in seq_lens:
        restyle = {key: [t[key][p] for t in traces[n] for p in (0, 1)]
                   for key in ("x", "y", "z", "text")}
        steps.append({"label": str(n), "method": "restyle", "args": [restyle]})
    fig.update_xaxes(title_text="key", tickangle=-45, side="bottom")
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title_text="query", row=1, col=1)
    fig.update_layout(height=540, margin={"l": 50, "r": 20, "t": 130, "b": 40},
                      title={"text": f"{length} real tokens of the order, padded<br>"
                                     "<sup>rows = queries, columns = keys</sup>",
                             "font": {"size": 14}, "x": 0.02, "xanchor": "left"})
    if len(kinds) > 1:
        fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down",
                                        "showactive": True, "x": 1, "xanchor": "right",
                                        "y": 1.3, "yanchor": "top"}])
    if len(seq_lens) > 1:
        fig.update_layout(sliders=[_slider(steps, "padded length: ",
                                           active=seq_lens.index(start))])
    return fig
