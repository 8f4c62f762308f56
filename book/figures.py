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


# --- chapter 9: long context -----------------------------------------------------------------

METHOD_COLORS = {"full": "#b3261e", "masked": "#7a7a7a", "banded": "#1a56a8",
                 "sdpa": "#2e7d32"}
METHOD_DASH = {"full": "solid", "masked": "dash", "banded": "solid", "sdpa": "dot"}
PART_COLORS = {"projections": "#9ab0d6", "attention": "#b3261e", "feed_forward": "#1f3b73"}
PART_NAMES = {"projections": "Q, K, V and output projections",
              "attention": "attention: scores, softmax, weighted sum",
              "feed_forward": "feed-forward (d → 4d → d)"}
# the window explorer: 0 = never computed by the banded version, 1 = computed then masked,
# 2 = allowed. White, mid blue, dark navy: three steps of lightness, readable in greyscale.
WINDOW_LEVELS = ("skipped by the banded version", "computed, then masked", "may attend")
WINDOW_COLORSCALE = [[0.0, "#ffffff"], [0.33, "#ffffff"], [0.33, "#9ab0d6"], [0.67, "#9ab0d6"],
                     [0.67, "#1f3b73"], [1.0, "#1f3b73"]]
WINDOW_STEPS = (0, 1, 2, 4, 8, 12, 16, 24, 31)
WINDOW_COST_NS = tuple(2 ** p for p in range(5, 15))  # 32 … 16384
WINDOW_PATTERN_N = 32


def _log2_n_axis(ns, title: str = "sequence length n (log scale)") -> dict:
    return {"type": "log", "title": title, "tickvals": list(ns),
            "ticktext": [str(n) for n in ns]}


def attention_cost_figure(sweep: dict, measure: str, fit_from: int = 1,
                          title: str = "") -> go.Figure:
    """Cost of each attention method against n on log-log axes, with the fitted slope.

    ``sweep`` is :func:`book.longctx.cost_sweep`'s result; ``measure`` is "memory" (bytes,
    drawn in MB) or "time" (seconds, drawn in ms). The slope is fitted on n ≥ ``fit_from``;
    a slope of 2 means the cost quadruples when n doubles.
    """
    from . import longctx

    validate.choice("measure", measure, ("memory", "time"))
    ns = list(sweep["n"])
    methods = [m for m in longctx.METHODS if m in sweep]
    if not methods:
        raise ValueError(f"the sweep holds no method; expected some of {longctx.METHODS}")
    scale, unit = (1e-6, "MB") if measure == "memory" else (1e3, "ms")
    keep = [i for i, n in enumerate(ns) if n >= fit_from]
    fig = go.Figure()
    for m in methods:
        values = np.asarray(sweep[m], dtype=float)
        slope = longctx.fit_exponent([ns[i] for i in keep], values[keep]) \
            if len(keep) >= 2 else float("nan")
        fig.add_trace(go.Scatter(
            x=ns, y=_round(values * scale, 6), mode="lines+markers",
            name=f"{longctx.METHOD_NAMES[m]}: slope {slope:.2f}",
            line={"color": METHOD_COLORS[m], "dash": METHOD_DASH[m]},
            hovertemplate=f"n = %{{x}}<br>%{{y:.3g}} {unit}<extra>{m}</extra>"))
    what = "peak memory allocated" if measure == "memory" else "time, best of several runs"
    fig.update_layout(
        title={"text": title or what, "font": {"size": 14}}, height=440,
        xaxis=_log2_n_axis(ns), yaxis={"type": "log", "title": f"{what} ({unit}, log scale)"},
        legend={"orientation": "h", "y": -0.22, "x": 0, "font": {"size": 12}},
        margin={"l": 60, "r": 20, "t": 50, "b": 40})
    return fig


def block_share_figure(rows: list[dict]) -> go.Figure:
    """Where the time of one Transformer block goes, per n: stacked shares of the three parts,
    with the attention's share of the FLOPs as a line (rows from longctx.block_costs)."""
    if not rows:
        raise ValueError("rows is empty: pass longctx.block_costs([...]) for some lengths")
    from . import longctx

    x = [f"n = {r['n']}" for r in rows]
    fig = go.Figure()
    for part in longctx.BLOCK_PARTS:
        share = [100 * r[part] / r["total"] for r in rows]
        fig.add_trace(go.Bar(x=x, y=_round(share, 2), name=PART_NAMES[part],
                             marker_color=PART_COLORS[part],
                             text=[f"{s:.0f}%" for s in share], textposition="inside",
                             hovertemplate="%{x}: %{y:.1f}% of the time<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=_round([100 * r["attention_flop_share"] for r in rows], 2),
                             mode="lines+markers", name="attention's share of the FLOPs",
                             line={"color": "#000000", "dash": "dash"},
                             marker={"symbol": "diamond", "size": 9}))
    fig.update_layout(barmode="stack", height=440,
                      title={"text": "Share of one block's time (measured) and FLOPs (counted)",
                             "font": {"size": 14}},
                      yaxis={"title": "% of the block", "range": [0, 100]},
                      legend={"orientation": "h", "y": -0.15, "x": 0, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 50, "b": 40})
    return fig


def window_data(n: int, window: int, cost_ns=WINDOW_COST_NS) -> dict:
    """One sliding window of half-width ``window`` over ``n`` tokens, both ways of computing it.

    ``levels`` (n × n, rows = queries): 2 = may attend (|i − j| ≤ w), 1 = computed by
    :func:`book.longctx.banded_attention` and then masked, 0 = never computed by it (the
    masked full version computes every cell). ``keys`` is how many keys each query sees;
    ``full`` and ``banded`` are the score entries per head each version computes at every
    length of ``cost_ns``.
    """
    from . import longctx

    n = validate.integer("n", n, low=1, high=4096)
    window = validate.integer("window", window, low=0)
    allowed = longctx.window_mask(n, window).numpy()
    block = min(max(window, 16), n)
    q_block = np.arange(n) // block  # which block each query belongs to
    start = q_block * block - window  # the block's slab of keys: [start, start + block + 2w)
    j = np.arange(n)[None, :]
    computed = (j >= start[:, None]) & (j < start[:, None] + block + 2 * window)
    levels = np.where(allowed, 2, np.where(computed, 1, 0))
    cost_ns = [validate.integer("n", c, low=1) for c in cost_ns]
    return {"n": n, "window": window, "block": block, "levels": levels,
            "keys": allowed.sum(axis=1), "labels": [str(i) for i in range(n)],
            "cost_ns": cost_ns, "full": [c * c for c in cost_ns],
            "banded": [longctx.banded_score_entries(c, window) for c in cost_ns]}


def _window_titles(data: dict) -> list[str]:
    big, full, banded = data["cost_ns"][-1], data["full"][-1], data["banded"][-1]
    return [f"w = {data['window']}: a query sees at most {data['keys'].max()} of "
            f"{data['n']} keys",
            f"score entries per head (n = {big}: {full / banded:.0f}× fewer banded)"]


def window_explorer(n: int = WINDOW_PATTERN_N, windows=WINDOW_STEPS,
                    cost_ns=WINDOW_COST_NS, start: int = 2) -> go.Figure:
    """Static explorer: a slider over the window half-width w.

    Left: which (query, key) pairs a window of w allows, and which cells the banded version
    computes anyway (its blocks of queries meet whole slabs of keys). Right: how many score
    entries full (or masked) attention and the banded version compute, against n.
    """
    windows = [validate.integer("window", w, low=0) for w in windows]
    if not windows:
        raise ValueError("windows must hold at least one window size")
    start = validate.integer("start", start, low=0, high=len(windows) - 1)
    frames = [window_data(n, w, cost_ns) for w in windows]
    first = frames[start]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14, column_widths=[0.45, 0.55],
                        subplot_titles=_window_titles(first))
    fig.add_trace(go.Heatmap(
        z=first["levels"].tolist(), x=first["labels"], y=first["labels"], zmin=0, zmax=2,
        colorscale=WINDOW_COLORSCALE, xgap=1, ygap=1, showscale=False,
        hovertemplate="query %{y}<br>key %{x}<br>%{z}: 2 = may attend, 1 = computed then "
                      "masked, 0 = skipped<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=first["cost_ns"], y=first["full"], mode="lines+markers",
                             name="full, or window as a mask: n²", legendgroup="cost",
                             line={"color": METHOD_COLORS["full"]}), row=1, col=2)
    fig.add_trace(go.Scatter(x=first["cost_ns"], y=first["banded"], mode="lines+markers",
                             name="banded: ≈ n · (block + 2w)", legendgroup="cost",
                             line={"color": METHOD_COLORS["banded"]}), row=1, col=2)
    for level in (2, 1, 0):  # legend keys for the heatmap's three colours
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name=WINDOW_LEVELS[level], legendgroup="grid",
            marker={"symbol": "square", "size": 13, "color": WINDOW_COLORSCALE[2 * level][1],
                    "line": {"color": "#1f3b73", "width": 1}}, hoverinfo="skip"),
            row=1, col=1)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    steps = []
    for w, data in zip(windows, frames, strict=True):
        annotations = [dict(a, text=t) for a, t in zip(base, _window_titles(data), strict=True)]
        steps.append({"label": str(w), "method": "update",
                      "args": [{"z": [data["levels"].tolist(), None],
                                "y": [data["labels"], data["banded"]]},
                               {"annotations": annotations}, [0, 2]]})
    fig.update_xaxes(title_text="key position", tickfont_size=10, row=1, col=1)
    fig.update_yaxes(title_text="query position", autorange="reversed", tickfont_size=10,
                     row=1, col=1)
    fig.update_xaxes(row=1, col=2, **_log2_n_axis(cost_ns, "sequence length n (log scale)"),
                     tickangle=-45)
    fig.update_yaxes(type="log", title_text="score entries per head (log scale)", row=1, col=2)
    fig.update_annotations(font_size=12)
    slider = {**_slider(steps, "window half-width w = ", active=start), "pad": {"t": 170}}
    fig.update_layout(sliders=[slider], height=720,
                      legend={"orientation": "h", "x": 0, "y": -0.2, "font": {"size": 12}},
                      margin={"l": 50, "r": 20, "t": 60, "b": 40})
    return fig


def kv_speedup_figure(rows: list[dict]) -> go.Figure:
    """Generation time with and without the KV cache, and the speed-up, per generated length
    (rows from :func:`book.kvcache.generation_times`)."""
    if not rows:
        raise ValueError("rows is empty: pass kvcache.generation_times(...)")
    lengths = [r["n_new"] for r in rows]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["time to generate (s, log scale)",
                                        "speed-up of the cache (×)"])
    for key, name, color in (("full", "recompute every step", METHOD_COLORS["full"]),
                             ("cached", "with the KV cache", METHOD_COLORS["banded"])):
        fig.add_trace(go.Scatter(x=lengths, y=_round([r[key] for r in rows], 6),
                                 mode="lines+markers", name=name, line={"color": color},
                                 hovertemplate="%{x} tokens: %{y:.3g} s<extra></extra>"),
                      row=1, col=1)
    speedup = [r["speedup"] for r in rows]
    fig.add_trace(go.Bar(x=[str(n) for n in lengths], y=_round(speedup, 3), showlegend=False,
                         marker_color="#1f3b73", text=[f"{s:.1f}×" for s in speedup],
                         textposition="outside",
                         hovertemplate="%{x} tokens: %{y:.2f}×<extra></extra>"), row=1, col=2)
    fig.update_xaxes(row=1, col=1, **_log2_n_axis(lengths, "new tokens generated"))
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_xaxes(title_text="new tokens generated", type="category", row=1, col=2)
    fig.update_yaxes(range=[0, 1.2 * max(speedup)], row=1, col=2)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=400, legend={"orientation": "h", "y": -0.25, "x": 0},
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


IMPLEMENTATION_LABELS = {"loop": "loop over heads", "batched": "batched heads (lesson)",
                         "fused_qkv": "fused QKV projection", "einsum": "einsum",
                         "sdpa": "SDPA inside (production)",
                         "torch_mha_weights": "nn.MHA, need_weights=True",
                         "torch_mha": "nn.MHA, need_weights=False"}


def implementations_figure(rows: list[dict], budget: float = 1.1) -> go.Figure:
    """Each implementation's time relative to nn.MultiheadAttention(need_weights=False), as
    horizontal bars (rows from :func:`book.efficient.benchmark`, any devices)."""
    if not rows:
        raise ValueError("rows is empty: pass efficient.benchmark(...)")
    devices = sorted({r["device"] for r in rows})
    ordered = sorted(rows, key=lambda r: (r["device"], -r["vs_torch_mha"]))
    labels = [IMPLEMENTATION_LABELS.get(r["variant"], r["variant"])
              + (f" [{r['device']}]" if len(devices) > 1 else "") for r in ordered]
    ratios = [r["vs_torch_mha"] for r in ordered]
    colors = ["#b3261e" if r["variant"] == "sdpa" else
              "#7a7a7a" if r["variant"] == "torch_mha" else "#1a56a8" for r in ordered]
    fig = go.Figure(go.Bar(x=_round(ratios, 3), y=labels, orientation="h", marker_color=colors,
                           text=[f"{v:.2f}×" for v in ratios], textposition="inside",
                           insidetextanchor="middle", textfont={"color": "#ffffff"},
                           customdata=[r["label"] for r in ordered],
                           hovertemplate="%{customdata}: %{x:.2f}× the time<extra></extra>"))
    fig.add_vline(x=1.0, line_dash="dash", line_color="#7a7a7a")
    fig.add_vline(x=budget, line_dash="dot", line_color="#b3261e",
                  annotation_text=f"{budget:g}×", annotation_position="top")
    fig.update_layout(height=120 + 40 * len(rows),
                      title={"text": "Time relative to nn.MultiheadAttention(need_weights=False)"
                                     " — shorter is faster", "font": {"size": 14}},
                      xaxis={"title": "time ÷ time of nn.MultiheadAttention("
                                      "need_weights=False)",
                             "range": [0, 1.15 * max(max(ratios), budget)]},
                      yaxis={"automargin": True}, margin={"l": 20, "r": 20, "t": 60, "b": 40})
    return fig


# --- chapter 10: beyond plain attention -----------------------------------------------------

PATTERN_KINDS = ("full", "window", "dilated", "hybrid")
PATTERN_N = 24


def pattern_data(kind: str, window: int, n: int = PATTERN_N, dilation: int = 2,
                 n_global: int = 2) -> dict:
    """The allowed pattern of a variant (1 = may attend) and how many keys each query sees."""
    from . import beyond

    n = validate.integer("n", n, low=1, high=512)
    mask = beyond.pattern_mask(kind, n, window=window, dilation=dilation, n_global=n_global)
    keys = mask.sum(-1)
    return {"z": mask.int().numpy(), "mean_keys": float(keys.float().mean()),
            "max_keys": int(keys.max()), "n": n}


def _pattern_title(kind: str, window: int, data: dict) -> str:
    return (f"{kind}, w = {window}: a query sees {data['mean_keys']:.1f} of {data['n']} keys "
            f"on average (at most {data['max_keys']})")


def pattern_explorer(windows=(1, 2, 3, 4), n: int = PATTERN_N) -> go.Figure:
    """Static explorer: a dropdown over the variants and a slider over the window size."""
    windows = list(windows)
    labels = [f"t{i}" for i in range(n)]
    fig = go.Figure()
    for i, kind in enumerate(PATTERN_KINDS):
        data = pattern_data(kind, windows[0], n)
        fig.add_trace(go.Heatmap(z=data["z"], x=labels, y=labels, zmin=0, zmax=1,
                                 colorscale=[[0, "#f4f4f4"], [1, "#1a3d6e"]], showscale=False,
                                 visible=i == 1, name=kind,
                                 hovertemplate="query %{y}, key %{x}: %{z}<extra></extra>"))
    menu = [{"label": kind, "method": "update",
             "args": [{"visible": [k == kind for k in PATTERN_KINDS]},
                      {"title.text": _pattern_title(kind, windows[0],
                                                    pattern_data(kind, windows[0], n))}]}
            for kind in PATTERN_KINDS]
    steps = [{"label": str(w), "method": "restyle",
              "args": [{"z": [pattern_data(kind, w, n)["z"].tolist()
                              for kind in PATTERN_KINDS]}]} for w in windows]
    fig.update_layout(
        updatemenus=[{"buttons": menu, "active": 1, "x": 1.0, "xanchor": "right", "y": 1.16,
                      "yanchor": "top"}],
        sliders=[_slider(steps, "window w = ")],
        title={"text": _pattern_title("window", windows[0], pattern_data("window", windows[0],
                                                                          n)),
               "font": {"size": 13}},
        yaxis={"autorange": "reversed", "title": "query", "showticklabels": False},
        xaxis={"title": "key", "showticklabels": False}, height=520,
        margin={"t": 90, "l": 50, "r": 20, "b": 40})
    return fig


def variant_cost_figure(ns, curves: dict[str, list[float]], *, unit: str,
                        title: str) -> go.Figure:
    """Log-log cost of each method against the sequence length."""
    palette = {"full": "#b3261e", "window": "#1a56a8", "dilated": "#5f8f3e",
               "hybrid": "#8a5cc2", "linear": "#7a7a7a"}
    fig = go.Figure([go.Scatter(x=list(ns), y=_round(v, 9), mode="lines+markers", name=name,
                                line={"color": palette.get(name)})
                     for name, v in curves.items()])
    fig.update_layout(xaxis={"type": "log", "title": "sequence length n", "tickvals": list(ns),
                             "ticktext": [str(n) for n in ns]},
                      yaxis={"type": "log", "title": unit}, title=title, height=400)
    return fig


# --- chapter 7: mask traps ---------------------------------------------------------------------

BUG_TEXT_UP_TO = 10  # cells are labelled with their value up to this many tokens


def _bug_title(data: dict) -> str:
    import textwrap

    desc = "<br>".join(textwrap.wrap(data["description"], 95))
    counts = (f"NaN rows: {data['nan_rows']} · uniform rows: {data['uniform_rows']} · "
              f"all-zero rows: {data['zero_rows']}")
    share = data["real_on_pad"]
    if np.isfinite(share) and data["padding"]:
        counts += f" · largest weight of a real token on padding: {share:.2f}"
    return f"<b>{data['bug']}</b>: {desc}<br><sup>{counts}</sup>"


def _bug_traces(data: dict) -> dict:
    """x, y, z and text of the two panels (what the layer applies, the weights)."""
    n = len(data["labels"])
    show = n <= BUG_TEXT_UP_TO
    allowed, w, bias = data["allowed"], data["weights"], data["bias"]
    if bias is not None:   # a float mask is added, not applied: show what it adds
        mask_text = [[f"+{b:g}" for b in row] for row in bias]
    else:
        mask_text = [["✓" if a else "·" for a in row] for row in allowed]
    weight_text = [["NaN" if not np.isfinite(v) else (f"{v:.2f}" if v else "0")
                    for v in row] for row in w]
    if not show:
        mask_text = [[""] * n for _ in range(n)]
        weight_text = [["NaN" if t == "NaN" else "" for t in row] for row in weight_text]
    return {"x": [data["labels"]] * 2, "y": [data["labels"]] * 2,
            "z": [allowed.astype(int).tolist(), _round(w)], "text": [mask_text, weight_text]}


def mask_bug_explorer(bugs=None, length: int = 5, padding: int = 2) -> go.Figure:
    """Static explorer: a dropdown over the mask bugs of :data:`book.masktraps.BUGS`.

    Left: the mask the layer applies (✓ may attend, · blocked; +1/+0 for a float mask that is
    added); right: the weights it computes, NaN cells left blank and labelled "NaN".
    """
    from . import masktraps

    bugs = list(masktraps.BUGS if bugs is None else bugs)
    if not bugs:
        raise ValueError("mask_bug_explorer needs at least one bug from book.masktraps.BUGS")
    frames = [masktraps.bug_data(b, length, padding) for b in bugs]
    first = _bug_traces(frames[0])
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["mask the layer applies", "attention weights"])
    fig.add_trace(go.Heatmap(
        x=first["x"][0], y=first["y"][0], z=first["z"][0], text=first["text"][0],
        texttemplate="%{text}", zmin=0, zmax=1, colorscale=MASK_COLORSCALE, showscale=False,
        hovertemplate="query %{y}<br>key %{x}<br>%{z}: 1 = may attend<extra></extra>"),
        row=1, col=1)
    fig.add_trace(go.Heatmap(
        x=first["x"][1], y=first["y"][1], z=first["z"][1], text=first["text"][1],
        texttemplate="%{text}", zmin=0, zmax=1, colorscale=COLORSCALE,
        colorbar={"title": {"text": "weight"}, "len": 0.8},
        hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"),
        row=1, col=2)
    buttons = []
    for bug, data in zip(bugs, frames, strict=True):
        t = _bug_traces(data)
        buttons.append({"label": bug, "method": "update",
                        "args": [{k: t[k] for k in ("x", "y", "z", "text")},
                                 {"title.text": _bug_title(data)}]})
    fig.update_xaxes(title_text="key", side="bottom")
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title_text="query", row=1, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(
        height=560, margin={"l": 50, "r": 20, "t": 130, "b": 40},
        title={"text": _bug_title(frames[0]), "font": {"size": 13}, "x": 0.02,
               "xanchor": "left", "y": 0.98, "yanchor": "top"})
    if len(bugs) > 1:
        fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down",
                                        "showactive": True, "x": 0, "xanchor": "left",
                                        "y": 1.1, "yanchor": "bottom"}])
    return fig


def mask_training_figure(histories: dict) -> go.Figure:
    """Training loss of the same model under different mask handling (one line per run);
    a run that stopped on a NaN loss ends in a cross at its last finite step."""
    if not histories:
        raise ValueError("histories is empty: pass {name: book.train.History}")
    palette = ["#1a56a8", "#b3261e", "#7a7a7a", "#2e7d32"]
    dashes = ["solid", "solid", "dash", "dot"]
    fig = go.Figure()
    for i, (name, h) in enumerate(histories.items()):
        loss = np.asarray(h.loss, dtype=float)
        steps = np.arange(1, len(loss) + 1)
        label = name + (f" — NaN at step {h.steps}" if h.diverged else
                        f" — held-out accuracy {h.final_accuracy:.1%}")
        color = palette[i % len(palette)]
        if h.diverged:
            fig.add_trace(go.Scatter(x=[int(h.steps)], y=[float(np.nanmax(
                np.r_[loss[np.isfinite(loss)], [3.0]]))], mode="markers", name=label,
                marker={"symbol": "x", "size": 14, "color": color}))
            continue
        fig.add_trace(go.Scatter(x=steps.tolist(), y=_round(loss), mode="lines", name=label,
                                 line={"color": color, "dash": dashes[i % len(dashes)]}))
    fig.update_layout(height=420, xaxis={"title": "training step"},
                      yaxis={"title": "training loss (cross-entropy)", "rangemode": "tozero"},
                      legend={"orientation": "h", "y": -0.2, "x": 0},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return fig


# --- chapter 5: training stability ------------------------------------------------------------

RUN_COLORS = ("#1a56a8", "#b3261e", "#2e7d32", "#7a4fa0", "#c77700", "#4d4d4d", "#0f8b8d",
              "#a0522d")
RUN_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid", "dash")
LOSS_SMOOTHING = 10  # the curves show a running mean over this many steps


def stability_data(run) -> dict:
    """What the stability explorer draws for one :class:`book.stability.Run`: the running-mean
    loss per step, and per layer the activation RMS and gradient norm at the first and the
    last recorded step (empty lists if the run diverged before anything was recorded)."""
    from . import stability

    if not isinstance(run, stability.Run):
        raise TypeError(f"run must be a book.stability.Run, got {type(run).__name__}")
    steps = list(range(1, len(run.loss) + 1))
    loss = stability.smooth(run.loss, LOSS_SMOOTHING)
    last = run.norm_steps[-1] if run.norm_steps else None
    if run.diverged:
        verdict = f"diverged at step {len(run.loss)} (loss {run.loss[-1]:g})"
    else:
        verdict = (f"final loss {run.final_loss():.2f}, held-out accuracy "
                   f"{100 * run.accuracy:.1f} %")
    return {"label": run.label, "steps": steps, "loss": loss, "layers": run.layers,
            "act_first": run.profile("activation", "first"),
            "act_last": run.profile("activation", "last"),
            "grad_first": run.profile("gradient", "first"),
            "grad_last": run.profile("gradient", "last"), "last_step": last,
            "title": f"{run.label}: {verdict}"}


def _stability_restyle(data: dict) -> dict:
    layers = data["layers"]
    return {"x": [data["steps"], layers, layers, layers, layers],
            "y": [_round(data["loss"]), _round(data["act_first"]), _round(data["act_last"]),
                  _round(data["grad_first"], 6), _round(data["grad_last"], 6)],
            "name": ["loss", "step 1", f"step {data['last_step']}", "step 1",
                     f"step {data['last_step']}"]}


def _chance_line(fig, row=None, col=None) -> None:
    from . import stability

    chance = stability.chance_loss()
    kwargs = {} if row is None else {"row": row, "col": col}
    fig.add_hline(y=chance, line_dash="dot", line_color="#7a7a7a",
                  annotation_text=f"chance: ln 7 = {chance:.2f}",
                  annotation_position="top right", annotation_font_size=11, **kwargs)


def stability_explorer(runs, start: int = 0) -> go.Figure:
    """Static explorer: a dropdown over training runs (:class:`book.stability.Run`).

    Left: the loss (running mean) with the chance level ln 7. Middle: the RMS of
    each layer's output (the residual stream) at step 1 and at the last recorded step. Right:
    the gradient norm of each layer's parameters at the same two steps (log scales).
    """
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: pass the book.stability.run(...) results to show")
    start = validate.integer("start", start, low=0, high=len(runs) - 1)
    datas = [stability_data(r) for r in runs]
    first = _stability_restyle(datas[start])
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.09, column_widths=[0.4, 0.3, 0.3],
                        subplot_titles=["loss (running mean of 10 steps)",
                                        "activation RMS per layer", "gradient norm per layer"])
    styles = [("#1a56a8", "solid", "lines"), ("#7a7a7a", "dash", "lines+markers"),
              ("#b3261e", "solid", "lines+markers"), ("#7a7a7a", "dash", "lines+markers"),
              ("#b3261e", "solid", "lines+markers")]
    for i, (color, dash, mode) in enumerate(styles):
        fig.add_trace(go.Scatter(x=first["x"][i], y=first["y"][i], name=first["name"][i],
                                 mode=mode, line={"color": color, "dash": dash},
                                 showlegend=i in (1, 2), legendgroup=str(i % 2)),
                      row=1, col=1 if i == 0 else 2 if i < 3 else 3)
    _chance_line(fig, 1, 1)
    buttons = []
    for data in datas:
        buttons.append({"label": data["label"], "method": "update",
                        "args": [_stability_restyle(data), {"title.text": data["title"]}]})
    fig.update_xaxes(title_text="training step", row=1, col=1)
    fig.update_xaxes(title_text="output of", tickangle=-45, row=1, col=2)
    fig.update_xaxes(title_text="parameters of", tickangle=-45, row=1, col=3)
    for col in (2, 3):
        fig.update_yaxes(type="log", exponentformat="power", row=1, col=col)
    fig.update_yaxes(title_text="training loss", rangemode="tozero", row=1, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(
        height=500, title={"text": datas[start]["title"], "font": {"size": 13}, "x": 0.02,
                           "xanchor": "left", "y": 0.97},
        updatemenus=[{"buttons": buttons, "direction": "down", "showactive": True,
                      "active": start, "x": 0, "xanchor": "left", "y": 1.28,
                      "yanchor": "top"}],
        legend={"orientation": "h", "x": 0.45, "y": -0.32},
        margin={"l": 60, "r": 20, "t": 130, "b": 60})
    return fig


def loss_curves_figure(runs, title: str = "") -> go.Figure:
    """Several runs' loss curves (running mean of 10 steps) on one plot, with the
    chance level ln 7. A diverged run ends where its loss stopped being finite."""
    from . import stability

    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: pass some book.stability.run(...) results")
    fig = go.Figure()
    for i, run in enumerate(runs):
        fig.add_trace(go.Scatter(
            x=list(range(1, len(run.loss) + 1)),
            y=_round(stability.smooth(run.loss, LOSS_SMOOTHING)), mode="lines", name=run.label,
            line={"color": RUN_COLORS[i % len(RUN_COLORS)],
                  "dash": RUN_DASHES[i % len(RUN_DASHES)], "width": 2.5},
            hovertemplate="step %{x}: loss %{y:.3f}<extra>" + run.label + "</extra>"))
    _chance_line(fig)
    fig.update_layout(height=420, title={"text": title, "font": {"size": 14}},
                      xaxis={"title": "training step"},
                      yaxis={"title": "training loss (running mean)", "rangemode": "tozero"},
                      legend={"orientation": "h", "y": -0.2, "x": 0, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 50, "b": 40})
    return fig


def layer_norms_figure(runs, when: str = "first", title: str = "") -> go.Figure:
    """Per-layer activation RMS and gradient norm of several runs at their "first" or "last"
    recorded step, one line per run, log scales."""
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: pass some book.stability Run objects")
    validate.choice("when", when, ("first", "last"))
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["activation RMS (output of each part)",
                                        "gradient norm (parameters of each part)"])
    for i, run in enumerate(runs):
        style = {"color": RUN_COLORS[i % len(RUN_COLORS)],
                 "dash": RUN_DASHES[i % len(RUN_DASHES)]}
        for col, what in ((1, "activation"), (2, "gradient")):
            fig.add_trace(go.Scatter(x=run.layers, y=_round(run.profile(what, when), 6),
                                     mode="lines+markers", name=run.label, line=style,
                                     legendgroup=run.label, showlegend=col == 1,
                                     hovertemplate="%{x}: %{y:.3g}<extra>" + run.label
                                                   + "</extra>"), row=1, col=col)
    fig.update_yaxes(type="log", exponentformat="power", title_text="RMS (log scale)",
                     row=1, col=1)
    fig.update_yaxes(type="log", exponentformat="power", title_text="L2 norm (log scale)",
                     row=1, col=2)
    fig.update_xaxes(tickangle=-45)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=440, title={"text": title, "font": {"size": 14}},
                      legend={"orientation": "h", "y": -0.3, "x": 0, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 60, "b": 40})
    return fig


# --- chapter 6: how many heads ----------------------------------------------------------------

HEAD_GRID = (4, 4)   # the head-maps explorer shows up to 16 heads
MAX_GRID_HEADS = HEAD_GRID[0] * HEAD_GRID[1]


def _head_count_label(n_heads: int, d_k: int) -> str:
    return f"{n_heads} head{'s' if n_heads > 1 else ''}<br>d_k = {d_k}"


def heads_sweep_figure(runs) -> go.Figure:
    """Held-out accuracy and loss of the models of :func:`book.heads.sweep` (a dict
    {n_heads: HeadRun}), one bar per head count, labelled with d_k."""
    runs = dict(runs)
    if not runs:
        raise ValueError("runs is empty: pass book.heads.sweep(...)")
    x = [_head_count_label(h, r.d_k) for h, r in runs.items()]
    acc = [100 * r.accuracy for r in runs.values()]
    loss = [r.loss for r in runs.values()]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=["held-out token accuracy (%)",
                                        "held-out loss (lower is better)"])
    fig.add_trace(go.Bar(x=x, y=_round(acc, 2), marker_color="#1a56a8",
                         text=[f"{a:.1f}" for a in acc], textposition="outside",
                         hovertemplate="%{x}: %{y:.2f} %<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=x, y=_round(loss, 4), marker_color="#7a7a7a",
                         text=[f"{v:.3f}" for v in loss], textposition="outside",
                         hovertemplate="%{x}: %{y:.3f}<extra></extra>"), row=1, col=2)
    low = max(0.0, min(acc) - 15)
    fig.update_yaxes(range=[low, min(100, max(acc) + 6)], row=1, col=1)
    fig.update_yaxes(range=[0, 1.2 * max(loss)], row=1, col=2)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=400, showlegend=False,
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


def head_maps_data(model, order, layer: int) -> dict:
    """Every head's attention map of ``layer`` for one order (text, tokens or an Order):
    ``maps`` (H, n, n), unique token ``labels``, and ``js``, the mean Jensen–Shannon
    divergence between the heads' rows on this order (NaN for one head)."""
    from . import heads, train

    model = train._model(model)
    order = train._one_order(order)
    layer = validate.integer("layer", layer, low=0, high=model.n_layers - 1)
    if model.n_heads > MAX_GRID_HEADS:
        raise ValueError(f"the grid shows at most {MAX_GRID_HEADS} heads; this model has "
                         f"{model.n_heads}")
    maps = train.attention_maps(model, order)[layer]
    n = model.n_heads
    js = heads.pairwise(maps, "js")[~np.eye(n, dtype=bool)].mean() if n > 1 else float("nan")
    labels = orders_example.labels(order.tokens, order.tokens, short=True)
    return {"maps": maps, "labels": labels, "n_heads": n, "layer": layer, "js": float(js),
            "text": order.text}


def _head_maps_title(data: dict) -> str:
    n = data["n_heads"]
    js = "" if n == 1 else f"; mean JS divergence between its heads {data['js']:.3f} nats"
    return (f"{n} head{'s' if n > 1 else ''}, layer {data['layer']}{js}"
            f"<br><sup>{data['text']} — rows = queries, columns = keys</sup>")


def _head_maps_update(data: dict) -> dict:
    """z, x, y of the 16 panels; the panels of heads the model does not have are empty."""
    used = range(data["n_heads"])
    return {"z": [_round(data["maps"][h], 3) if h in used else [] for h in range(MAX_GRID_HEADS)],
            "x": [data["labels"] if h in used else [] for h in range(MAX_GRID_HEADS)],
            "y": [data["labels"] if h in used else [] for h in range(MAX_GRID_HEADS)]}


def _head_axes_visible(n_heads: int) -> dict:
    """Layout updates for a model with ``n_heads`` heads: hide the axes of the panels it has
    no head for, and label the keys (x axis) under the last row of heads only."""
    out = {}
    last_row = (n_heads - 1) // HEAD_GRID[1]
    for h in range(MAX_GRID_HEADS):
        suffix = "" if h == 0 else str(h + 1)
        out[f"xaxis{suffix}.visible"] = out[f"yaxis{suffix}.visible"] = h < n_heads
        out[f"xaxis{suffix}.showticklabels"] = h // HEAD_GRID[1] == last_row
    return out


def _head_panel_titles(n_heads: int) -> list[str]:
    return [f"head {h}" if h < n_heads else "" for h in range(MAX_GRID_HEADS)]


def head_maps_explorer(models: dict, order, layers=(0, 1), start: int = 0) -> go.Figure:
    """Static explorer: a slider over (number of heads, layer); a 4 × 4 grid shows each head's
    attention map for ``order`` (``models``: {n_heads: TinyEncoder}, at most 16 heads)."""
    models = dict(models)
    if not models:
        raise ValueError("models is empty: pass {n_heads: trained TinyEncoder}")
    frames = [head_maps_data(m, order, layer) for m in models.values() for layer in layers]
    start = validate.integer("start", start, low=0, high=len(frames) - 1)
    rows, cols = HEAD_GRID
    fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.03, vertical_spacing=0.035,
                        subplot_titles=_head_panel_titles(MAX_GRID_HEADS))
    first = _head_maps_update(frames[start])
    for h in range(MAX_GRID_HEADS):
        fig.add_trace(go.Heatmap(
            z=first["z"][h], x=first["x"][h], y=first["y"][h], zmin=0, zmax=1,
            colorscale=COLORSCALE, showscale=h == 0, colorbar={"title": {"text": "weight"},
                                                               "len": 0.5, "y": 0.75},
            hovertemplate=f"head {h}<br>query %{{y}}<br>key %{{x}}<br>"
                          "weight %{z:.3f}<extra></extra>"),
            row=h // cols + 1, col=h % cols + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False, tickfont_size=9,
                     showgrid=False, zeroline=False, dtick=1)
    fig.update_xaxes(tickfont_size=9, tickangle=-90, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=True, col=1)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    steps = []
    for data in frames:
        annotations = [dict(a, text=t, yshift=-2) for a, t in
                       zip(base, _head_panel_titles(data["n_heads"]), strict=True)]
        steps.append({"label": f"{data['n_heads']} · layer {data['layer']}", "method": "update",
                      "args": [_head_maps_update(data),
                               {"annotations": annotations, "title.text":
                                _head_maps_title(data), **_head_axes_visible(data["n_heads"])}]})
    fig.update_annotations(font_size=11)
    for a, t in zip(fig.layout.annotations, _head_panel_titles(frames[start]["n_heads"]),
                    strict=True):
        a.text = t
    fig.update_layout(_head_axes_visible(frames[start]["n_heads"]))
    slider = {**_slider(steps, "heads · layer: ", active=start), "pad": {"t": 70}}
    fig.update_layout(sliders=[slider], height=860, plot_bgcolor="#ffffff",
                      title={"text": _head_maps_title(frames[start]), "font": {"size": 13},
                             "x": 0.02, "xanchor": "left"},
                      margin={"l": 50, "r": 20, "t": 95, "b": 20})
    return fig


def _ablation_frame(n_heads: int, result: dict) -> dict:
    drop = np.asarray(result["drop"], dtype=float)
    n_layers = drop.shape[0]
    return {"z": [_round(drop, 3)], "x": [[f"head {h}" for h in range(n_heads)]],
            "y": [[f"layer {i}" for i in range(n_layers)]],
            "text": [[[f"{v:+.1f}" for v in row] for row in drop]]}


def _ablation_title(n_heads: int, result: dict) -> str:
    drop = np.asarray(result["drop"], dtype=float)
    return (f"{n_heads} head{'s' if n_heads > 1 else ''}: intact model "
            f"{100 * result['base_accuracy']:.1f} %; removing one head costs at most "
            f"{drop.max():.1f} points (mean {drop.mean():.1f})")


def ablation_explorer(ablations: dict, start: int = 0) -> go.Figure:
    """Static explorer: a slider over the number of heads; a heatmap (layer × head) of how
    many accuracy points the model loses when that one head is zeroed
    (``ablations``: {n_heads: book.heads.ablation(...)})."""
    ablations = dict(ablations)
    if not ablations:
        raise ValueError("ablations is empty: pass {n_heads: book.heads.ablation(model, orders)}")
    keys = list(ablations)
    start = validate.integer("start", start, low=0, high=len(keys) - 1)
    top = max(float(np.max(r["drop"])) for r in ablations.values())
    frames = {h: _ablation_frame(h, r) for h, r in ablations.items()}
    first = frames[keys[start]]
    fig = go.Figure(go.Heatmap(
        z=first["z"][0], x=first["x"][0], y=first["y"][0], text=first["text"][0],
        texttemplate="%{text}", zmin=0, zmax=max(top, 1e-6), colorscale=COLORSCALE,
        colorbar={"title": {"text": "points lost"}},
        hovertemplate="%{y}, %{x} removed: %{z:.2f} points lost<extra></extra>"))
    steps = [{"label": str(h), "method": "update",
              "args": [frames[h], {"title.text": _ablation_title(h, ablations[h])}]}
             for h in keys]
    fig.update_layout(sliders=[_slider(steps, "number of heads: ", active=start)],
                      title={"text": _ablation_title(keys[start], ablations[keys[start]]),
                             "font": {"size": 13}},
                      yaxis={"autorange": "reversed"}, xaxis={"side": "top"}, height=340,
                      margin={"l": 70, "r": 20, "t": 90, "b": 20})
    return fig


def redundancy_figure(trained: dict, untrained: dict | None = None) -> go.Figure:
    """Mean Jensen–Shannon divergence between the heads of each layer against the number of
    heads (``trained``: {n_heads: (n_layers,) array from book.heads.redundancy}); dashed:
    the same models before training. 0 = the heads attend identically; ln 2 = disjointly."""
    trained = {h: np.asarray(v, dtype=float) for h, v in dict(trained).items() if h > 1}
    if not trained:
        raise ValueError("trained needs at least one model with two or more heads")
    x = [str(h) for h in trained]
    n_layers = len(next(iter(trained.values())))
    fig = go.Figure()
    for layer in range(n_layers):
        color = RUN_COLORS[layer % len(RUN_COLORS)]
        fig.add_trace(go.Scatter(x=x, y=_round([v[layer] for v in trained.values()]),
                                 mode="lines+markers", name=f"layer {layer}, trained",
                                 line={"color": color}))
        if untrained:
            fig.add_trace(go.Scatter(
                x=x, y=_round([np.asarray(untrained[h], dtype=float)[layer] for h in trained]),
                mode="lines+markers", name=f"layer {layer}, before training",
                line={"color": color, "dash": "dot"}, marker={"symbol": "circle-open"}))
    fig.add_hline(y=float(np.log(2)), line_dash="dash", line_color="#7a7a7a",
                  annotation_text="ln 2: heads look at disjoint words",
                  annotation_position="bottom right", annotation_font_size=11)
    fig.update_layout(height=400, xaxis={"title": "number of heads (d_model fixed)",
                                         "type": "category"},
                      yaxis={"title": "mean JS divergence between heads (nats)",
                             "range": [0, 0.75]},
                      legend={"orientation": "h", "y": -0.25, "x": 0, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return fig


# --- chapter 8: seeing attention ---------------------------------------------------------------

def _wrap(text: str, width: int = 110) -> str:
    import textwrap

    return "<br>".join(textwrap.wrap(text, width))


def order_view_data(model, order) -> dict:
    """What the head and model views draw for one order (text or Order): ``labels`` (keys:
    tokens; ``rows``: token with gloss), ``maps`` (layers, heads, n, n), ``caption``."""
    from . import attention_roles as roles

    d = roles.order_maps(model, order)
    o = d["order"]
    marks = []
    for tok, pred, rule in zip(o.tokens, d["predictions"], d["rules"] or [None] * len(o),
                               strict=True):
        if pred != "-":
            ok = "" if rule is None else (" ✓" if pred == rule else f" ✗ (should be {rule})")
            marks.append(f"{tok} → {pred}{ok}")
    caption = _wrap(o.english) + "<br><i>model: " + ", ".join(marks) + "</i>"
    return {"order": o, "cols": roles.token_labels(o), "rows": roles.token_labels(o, gloss=True),
            "maps": d["maps"], "caption": caption}


def _head_label(layer: int, head: int) -> str:
    return f"layer {layer} · head {head}"


def _order_axes(data: dict) -> dict:
    n = len(data["cols"])
    return {"xaxis.categoryarray": data["cols"], "xaxis.range": [-0.5, n - 0.5],
            "yaxis.categoryarray": data["rows"], "yaxis.range": [n - 0.5, -0.5]}


def head_view(model, orders_, names=None, start: tuple[int, int] = (1, 1)) -> go.Figure:
    """Static head view: one attention map; a dropdown picks the order, a slider the head.

    One heatmap per order (the dropdown shows one of them and sets the axes); the slider
    restyles every order's heatmap to that layer and head, so the two controls combine.
    (One dropdown per figure: plotly draws all dropdowns of a figure in one container.)
    """
    orders_ = list(orders_)
    if not orders_:
        raise ValueError("head_view needs at least one order")
    names = [f"order {i + 1}" for i in range(len(orders_))] if names is None else list(names)
    if len(names) != len(orders_):
        raise ValueError(f"got {len(orders_)} orders but {len(names)} names")
    data = [order_view_data(model, o) for o in orders_]
    n_layers, n_heads = data[0]["maps"].shape[:2]
    layer0 = validate.integer("layer", start[0], low=0, high=n_layers - 1)
    head0 = validate.integer("head", start[1], low=0, high=n_heads - 1)
    fig = go.Figure()
    for i, d in enumerate(data):
        fig.add_trace(go.Heatmap(
            z=_round(d["maps"][layer0, head0], 3), x=d["cols"], y=d["rows"], zmin=0, zmax=1,
            colorscale=COLORSCALE, visible=i == 0, colorbar={"title": {"text": "weight"}},
            hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"))
    caption = {"text": data[0]["caption"], "x": 0, "xref": "paper", "xanchor": "left",
               "y": 1.02, "yref": "paper", "yanchor": "bottom", "showarrow": False,
               "align": "left", "font": {"size": 11}}
    order_buttons = [{"label": name, "method": "update",
                      "args": [{"visible": [j == i for j in range(len(data))]},
                               {**_order_axes(d), "annotations": [dict(caption,
                                                                       text=d["caption"])]}]}
                     for i, (name, d) in enumerate(zip(names, data, strict=True))]
    head_steps = [{"label": f"L{layer} H{head}", "method": "restyle",
                   "args": [{"z": [_round(d["maps"][layer, head], 3) for d in data]}]}
                  for layer in range(n_layers) for head in range(n_heads)]
    fig.update_layout(
        updatemenus=[{"buttons": order_buttons, "direction": "down", "showactive": True,
                      "x": 0, "xanchor": "left", "y": 1.17, "yanchor": "bottom"}],
        sliders=[{**_slider(head_steps, "head shown (L = layer, H = head): ",
                            active=layer0 * n_heads + head0), "pad": {"t": 60}}],
        annotations=[caption], height=680,
        xaxis={"title": "key (attended to)", "tickangle": -90, "categoryorder": "array",
               **{k[6:]: v for k, v in _order_axes(data[0]).items() if k.startswith("xaxis")}},
        yaxis={"title": "query (attending)", "categoryorder": "array", "automargin": True,
               **{k[6:]: v for k, v in _order_axes(data[0]).items() if k.startswith("yaxis")}},
        margin={"l": 40, "r": 20, "t": 170, "b": 40})
    return fig


def model_view(model, orders_, names=None) -> go.Figure:
    """Static model view: every layer × head of one order as a grid; a dropdown picks the
    order (each button redraws all the maps)."""
    orders_ = list(orders_)
    if not orders_:
        raise ValueError("model_view needs at least one order")
    names = [f"order {i + 1}" for i in range(len(orders_))] if names is None else list(names)
    if len(names) != len(orders_):
        raise ValueError(f"got {len(orders_)} orders but {len(names)} names")
    data = [order_view_data(model, o) for o in orders_]
    n_layers, n_heads = data[0]["maps"].shape[:2]
    fig = make_subplots(rows=n_layers, cols=n_heads, horizontal_spacing=0.03,
                        vertical_spacing=0.1,
                        subplot_titles=[_head_label(layer, head) for layer in range(n_layers)
                                        for head in range(n_heads)])
    first = data[0]
    for layer in range(n_layers):
        for head in range(n_heads):
            fig.add_trace(go.Heatmap(
                z=_round(first["maps"][layer, head], 3), x=first["cols"], y=first["cols"],
                zmin=0, zmax=1, colorscale=COLORSCALE, showscale=layer == head == 0,
                colorbar={"title": {"text": "weight"}, "len": 0.5, "y": 0.75},
                hovertemplate=f"{_head_label(layer, head)}<br>query %{{y}}<br>key %{{x}}"
                              "<br>weight %{z:.3f}<extra></extra>"),
                row=layer + 1, col=head + 1)
    fig.update_yaxes(autorange="reversed", tickfont_size=9, showticklabels=False)
    fig.update_yaxes(showticklabels=True, col=1)
    fig.update_xaxes(tickfont_size=9, tickangle=-90, showticklabels=False)
    fig.update_xaxes(showticklabels=True, row=n_layers)
    fig.update_annotations(font_size=12)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    caption = {"text": first["caption"], "x": 0, "xref": "paper", "xanchor": "left",
               "y": 1.06, "yref": "paper", "yanchor": "bottom", "showarrow": False,
               "align": "left", "font": {"size": 11}}
    buttons = []
    for name, d in zip(names, data, strict=True):
        traces = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
        buttons.append({"label": name, "method": "update",
                        "args": [{"z": [_round(d["maps"][lh], 3) for lh in traces],
                                  "x": [d["cols"]] * len(traces),
                                  "y": [d["cols"]] * len(traces)},
                                 {"annotations": base + [dict(caption, text=d["caption"])]}]})
    fig.update_layout(annotations=base + [caption], height=330 * n_layers + 170,
                      updatemenus=[{"buttons": buttons, "direction": "down", "showactive": True,
                                    "x": 0, "xanchor": "left", "y": 1.16,
                                    "yanchor": "bottom"}],
                      margin={"l": 40, "r": 20, "t": 170, "b": 40})
    return fig


def relation_figure(stats: dict) -> go.Figure:
    """Attention mass of each relation per layer × head (from
    :func:`book.attention_roles.relation_mass`), with its chance level in the title."""
    relations = list(stats)
    if not relations:
        raise ValueError("stats is empty: pass book.attention_roles.relation_mass(...)")
    cols = 2
    rows = -(-len(relations) // cols)
    titles = [f"{r}<br>(even spread: {stats[r]['chance']:.2f})" for r in relations]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.12,
                        vertical_spacing=0.16)
    for i, r in enumerate(relations):
        mass = np.asarray(stats[r]["mass"])
        n_layers, n_heads = mass.shape
        fig.add_trace(go.Heatmap(
            z=_round(mass, 3), x=[f"head {h}" for h in range(n_heads)],
            y=[f"layer {layer}" for layer in range(n_layers)], zmin=0, zmax=1,
            colorscale=COLORSCALE, showscale=i == 0, text=[[f"{v:.2f}" for v in row]
                                                           for row in mass],
            texttemplate="%{text}", colorbar={"title": {"text": "mass"}},
            hovertemplate=f"{r}<br>%{{y}}, %{{x}}: %{{z:.3f}}<extra></extra>"),
            row=i // cols + 1, col=i % cols + 1)
    fig.update_yaxes(autorange="reversed")
    fig.update_annotations(font_size=12)
    fig.update_layout(height=230 * rows + 80, margin={"l": 60, "r": 20, "t": 60, "b": 30})
    return fig


def category_figure(cats: dict) -> go.Figure:
    """Share of the scored tokens' attention on each category of key, per head, with the
    share an even spread would give as the last row (from
    :func:`book.attention_roles.category_mass`)."""
    mass = np.asarray(cats["mass"])          # (categories, layers, heads)
    _, n_layers, n_heads = mass.shape
    rows = [_head_label(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    z = mass.reshape(len(cats["categories"]), -1).T
    z = np.vstack([z, np.asarray(cats["chance"])[None, :]])
    rows.append("even spread")
    fig = go.Figure(go.Heatmap(
        z=_round(z, 3), x=list(cats["categories"]), y=rows, zmin=0, zmax=float(z.max()),
        colorscale=COLORSCALE, text=[[f"{v:.2f}" for v in row] for row in z],
        texttemplate="%{text}", colorbar={"title": {"text": "share"}},
        hovertemplate="%{y}<br>keys: %{x}<br>share %{z:.3f}<extra></extra>"))
    fig.update_layout(height=120 + 34 * len(rows), yaxis={"autorange": "reversed"},
                      xaxis={"title": "category of the key", "side": "top"},
                      margin={"l": 40, "r": 20, "t": 70, "b": 20})
    return fig


def entropy_figure(record: dict, final: np.ndarray | None = None,
                   final_step: int | None = None) -> go.Figure:
    """Mean attention entropy per layer against the training step (``record``: step →
    (layers, heads) from :func:`book.attention_roles.entropy_during_training`); ``final``
    (the trained model's) is drawn at ``final_step`` as diamonds."""
    if not record:
        raise ValueError("record is empty: pass {step: entropy array}")
    steps = sorted(record)
    n_layers = np.asarray(record[steps[0]]).shape[0]
    colors = ["#9ab0d6", "#1f3b73", "#b3261e", "#7a7a7a"]
    fig = go.Figure()
    for layer in range(n_layers):
        color = colors[layer % len(colors)]
        means = [float(np.mean(record[s][layer])) for s in steps]
        fig.add_trace(go.Scatter(x=steps, y=_round(means), mode="lines+markers",
                                 name=f"layer {layer}, short run", line={"color": color}))
        if final is not None:
            fig.add_trace(go.Scatter(
                x=[final_step], y=[round(float(np.mean(final[layer])), 4)], mode="markers",
                name=f"layer {layer}, trained model ({final_step} steps)",
                marker={"symbol": "diamond", "size": 12, "color": color,
                        "line": {"color": "#000000", "width": 1}}))
    fig.add_hline(y=1.0, line_dash="dot", line_color="#7a7a7a",
                  annotation_text="uniform (even spread)", annotation_position="bottom right")
    fig.update_layout(height=420, xaxis={"title": "training step"},
                      yaxis={"title": "attention entropy ÷ log(keys)", "range": [0, 1.05]},
                      legend={"orientation": "h", "y": -0.22, "x": 0},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return fig
