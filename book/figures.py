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
