"""Chapter 9 (long context): its static figures, live explorers and exercises."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import kvcache, longctx, validate
from .checks import call, exercise, number
from .live import LiveExplorer
from .plotting import make_slider, rounded

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

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
            x=ns, y=rounded(values * scale, 6), mode="lines+markers",
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

    x = [f"n = {r['n']}" for r in rows]
    fig = go.Figure()
    for part in longctx.BLOCK_PARTS:
        share = [100 * r[part] / r["total"] for r in rows]
        fig.add_trace(go.Bar(x=x, y=rounded(share, 2), name=PART_NAMES[part],
                             marker_color=PART_COLORS[part],
                             text=[f"{s:.0f}%" for s in share], textposition="inside",
                             hovertemplate="%{x}: %{y:.1f}% of the time<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=rounded([100 * r["attention_flop_share"] for r in rows], 2),
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


def _window_titles(data: dict) -> list[str]:
    big, full, banded = data["cost_ns"][-1], data["full"][-1], data["banded"][-1]
    return [f"w = {data['window']}: a query sees at most {data['keys'].max()} of "
            f"{data['n']} keys",
            f"score entries per head; banded: {full / banded:.0f}× fewer at n = {big}"]


def window_explorer(n: int = WINDOW_PATTERN_N, windows=WINDOW_STEPS,
                    cost_ns=longctx.WINDOW_COST_NS, start: int = 2) -> go.Figure:
    """Static explorer: a slider over the window half-width w.

    Top: which (query, key) pairs a window of w allows, and which cells the banded version
    computes anyway (its blocks of queries meet whole slabs of keys). Bottom: how many score
    entries full (or masked) attention and the banded version compute, against n.
    """
    windows = [validate.integer("window", w, low=0) for w in windows]
    if not windows:
        raise ValueError("windows must hold at least one window size")
    start = validate.integer("start", start, low=0, high=len(windows) - 1)
    frames = [longctx.window_data(n, w, cost_ns) for w in windows]
    first = frames[start]
    positions = list(range(n))  # numeric axes: plotly thins the ticks on a narrow screen
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.12, row_heights=[0.75, 0.25],
                        subplot_titles=_window_titles(first))
    fig.update_annotations(font_size=12)  # before the steps copy the annotations
    fig.add_trace(go.Heatmap(
        z=first["levels"].tolist(), x=positions, y=positions, zmin=0, zmax=2,
        colorscale=WINDOW_COLORSCALE, xgap=1, ygap=1, showscale=False,
        hovertemplate="query %{y}<br>key %{x}<br>%{z}: 2 = may attend, 1 = computed then "
                      "masked, 0 = skipped<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(x=first["cost_ns"], y=first["full"], mode="lines+markers",
                             name="full, or window as a mask: n²", legendgroup="cost",
                             line={"color": METHOD_COLORS["full"]}), row=2, col=1)
    fig.add_trace(go.Scatter(x=first["cost_ns"], y=first["banded"], mode="lines+markers",
                             name="banded: ≈ n · (block + 2w)", legendgroup="cost",
                             line={"color": METHOD_COLORS["banded"]}), row=2, col=1)
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
                                "y": [positions, data["banded"]]},
                               {"annotations": annotations}, [0, 2]]})
    fig.update_xaxes(title_text="key position", tickfont_size=10, showgrid=False,
                     zeroline=False, constrain="domain", scaleanchor="y", row=1, col=1)
    fig.update_yaxes(title_text="query position", autorange="reversed", tickfont_size=10,
                     showgrid=False, zeroline=False, row=1, col=1)
    fig.update_xaxes(row=2, col=1, **_log2_n_axis(cost_ns, "sequence length n (log scale)"),
                     tickangle=-45)
    fig.update_yaxes(type="log", title_text="entries (log)", row=2, col=1)
    slider = {**make_slider(steps, "window half-width w = ", active=start),
              "pad": {"t": 0, "b": 34}, "y": 1.0, "yanchor": "bottom"}
    fig.update_layout(sliders=[slider], height=880,
                      legend={"orientation": "h", "x": 0, "y": -0.12, "yanchor": "top",
                              "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 120, "b": 10})
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
        fig.add_trace(go.Scatter(x=lengths, y=rounded([r[key] for r in rows], 6),
                                 mode="lines+markers", name=name, line={"color": color},
                                 hovertemplate="%{x} tokens: %{y:.3g} s<extra></extra>"),
                      row=1, col=1)
    speedup = [r["speedup"] for r in rows]
    fig.add_trace(go.Bar(x=[str(n) for n in lengths], y=rounded(speedup, 3), showlegend=False,
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
    fig = go.Figure(go.Bar(x=rounded(ratios, 3), y=labels, orientation="h", marker_color=colors,
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


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

WINDOW_LIVE_MAX_N = 96  # a 96 × 96 grid redraws well under 50 ms
WINDOW_LIVE_MAX_W = 64


def window_explorer_live() -> LiveExplorer:
    """Any window half-width 0–64 over 8–96 tokens: the allowed pattern, what the banded
    version computes, and the score entries of both versions against n."""
    def redraw(fig, window, n):
        data = longctx.window_data(n, window)
        heat = fig.data[0]
        positions = list(range(n))
        heat.z, heat.x, heat.y = data["levels"].tolist(), positions, positions
        fig.data[2].y = data["banded"]
        for annotation, title in zip(fig.layout.annotations, _window_titles(data),
                                     strict=True):
            annotation.text = title

    controls = {"window": widgets.IntSlider(value=4, min=0, max=WINDOW_LIVE_MAX_W,
                                            description="window w"),
                "n": widgets.IntSlider(value=WINDOW_PATTERN_N, min=8,
                                       max=WINDOW_LIVE_MAX_N, description="tokens n")}
    fig = window_explorer(windows=[4], start=0)
    fig.layout.sliders = []
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- exercises (registered with book.checks) ------------------------------------------------------

def _ch9_keys_per_query() -> int:
    return int(longctx.window_keys(1001, 128)[500])  # a query far from both ends


@exercise("ch9.keys_per_query", "Keys per query in a sliding window with w = 128",
          reference=_ch9_keys_per_query, mistakes=lambda: [128, 256, 129, 2048])
def _ch9_keys_per_query_check(answer):
    value = number(answer)
    expected = _ch9_keys_per_query()
    if value == expected:
        return True, "Correct: w keys on each side, and the query's own position."
    if value == expected - 1:
        return False, "Almost: a query also attends to its own position (|i − j| = 0)."
    if value == 128 + 1:
        return False, ("That counts one side and the query itself, the causal window. This "
                       "window looks both ways: |i − j| ≤ 128.")
    if value == 128:
        return False, "The condition |i − j| ≤ w allows keys on both sides of the query."
    return False, ("Count the j with |i − j| ≤ 128 for a query i in the middle of a long "
                   "document: how many lie before i, how many after, and i itself?")


def _ch9_crossover(d_model: int = 768) -> int:
    """The n at which attention's FLOPs equal the rest of the block's (n = 6 · d_model)."""

    return next(n for n in range(1, 100 * d_model)
                if 2 * longctx.block_flops(n, d_model)["attention"]
                >= sum(longctx.block_flops(n, d_model).values()))


@exercise("ch9.crossover", "At what n does attention take half of a block's FLOPs "
          "(d_model = 768)?", reference=_ch9_crossover, mistakes=lambda: [768, 3072, 1536, 512])
def _ch9_crossover_check(answer):
    value = number(answer)
    expected = _ch9_crossover()
    if value == expected:
        return True, "Correct: 4n²d = 24nd² gives n = 6d."
    if value == 768:
        return False, ("At n = d_model attention is still a small share. Count both sides: the "
                       "projections (8nd²) and the feed-forward (16nd²) against 4n²d.")
    if value == 4 * 768:
        return False, ("That balances attention against the feed-forward alone; the four "
                       "projections (8nd²) belong to the rest of the block too.")
    return False, ("Set attention's 4n²d equal to the rest, 8nd² + 16nd², and solve for n "
                   "(see longctx.block_flops).")


def _ch9_cache_bytes() -> int:
    return kvcache.cache_bytes(24, 4096, 2048, 2)


@exercise("ch9.cache_bytes", "Bytes of the KV cache: 24 layers, d_model 2048, 4096 tokens, "
          "float16", reference=_ch9_cache_bytes,
          mistakes=lambda: [_ch9_cache_bytes() // 2, _ch9_cache_bytes() * 2,
                            _ch9_cache_bytes() // 24, _ch9_cache_bytes() // 2**20])
def _ch9_cache_bytes_check(answer):
    value = number(answer)
    expected = _ch9_cache_bytes()
    if value == expected:
        return True, "Correct: 2 · layers · tokens · d_model · bytes per number."
    if value == expected // 2:
        return False, "The cache holds keys AND values: one of each per layer and token."
    if value == expected * 2:
        return False, "float16 takes 2 bytes per number, not 4."
    if value == expected // 24:
        return False, "Every layer has its own keys and values: multiply by the layers."
    if value == expected // 2**20:
        return False, "Answer in bytes, not MiB."
    return False, "Multiply: 2 (K and V) · layers · tokens · d_model · bytes per number."


def _ch9_window_mask(n, w):
    i = np.arange(int(n))[:, None]
    j = np.arange(int(n))[None, :]
    return np.abs(i - j) <= int(w)


@exercise("ch9.window_mask", "Write window_mask(n, w): True where |i − j| ≤ w",
          reference=lambda: _ch9_window_mask,
          mistakes=lambda: [lambda n, w: _ch9_window_mask(n, w - 1),
                            lambda n, w: np.tril(_ch9_window_mask(n, w)),
                            lambda n, w: np.ones((int(n), int(n)), dtype=bool), "mask"])
def _ch9_window_mask_check(func):
    if not callable(func):
        return False, "Pass the function itself (window_mask), not its result."
    for n, w in [(6, 1), (5, 0), (7, 2), (4, 10), (1, 3)]:
        got = call(func, n, w)
        want = _ch9_window_mask(n, w)
        if got.shape != want.shape:
            return False, f"For n = {n} the mask is {n} × {n} (queries × keys); got {got.shape}."
        if np.array_equal(got != 0, want):
            continue
        if np.array_equal(got != 0, _ch9_window_mask(n, w - 1)) and w > 0:
            return False, "Off by one: |i − j| = w is still inside the window (≤, not <)."
        if np.array_equal(got != 0, np.tril(want)):
            return False, ("That is the causal window (keys j ≤ i only); this one looks both "
                           "ways.")
        return False, (f"For n = {n}, w = {w} some cells are wrong: row i must be True exactly "
                       "for the columns i − w … i + w that exist.")
    return True, "Correct."


