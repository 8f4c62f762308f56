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
    fig.update_layout(sliders=[_slider(steps, "number of heads: ")], height=600,
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
