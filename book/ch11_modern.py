"""Chapter 11 (attention as today's models use it): figures, live faces and exercises.

Computation lives in :mod:`book.positions`, :mod:`book.gqa` and :mod:`book.flash`; this module
only draws what their ``*_data``-style functions return and registers the chapter's exercises.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from . import flash, gqa, positions, validate
from .checks import NotAnswered, exercise, number
from .live import LiveExplorer
from .plotting import SIGNED_COLORSCALE, rounded

GRID_N = 16  # positions in the RoPE score grid (cells stay ≥ 12 px at 390 px wide)
GRID_KINDS = ("none", "sinusoidal", "rope")
GRID_NAMES = {"none": "no positions", "sinusoidal": "sinusoidal table added",
              "rope": "RoPE (rotated q and k)"}
FLASH_N_KEYS = 16
FLASH_TILE = 4
LIVE_MAX_KEYS = 64
COLORS = {"dark": "#1f3b73", "mid": "#6f8fc4", "light": "#d5deee", "red": "#b3261e",
          "grey": "#7a7a7a"}


# --- positions: the score of one query/key pair at every (m, n) --------------------------------

def score_grid_data(kind: str, n: int = GRID_N, seed: int = 0, d: int = 16) -> dict:
    """The (n, n) scores of one seeded query/key pair at query position m and key position n,
    and how far each diagonal (one offset m − n) spreads (float64)."""
    validate.choice("kind", kind, GRID_KINDS)
    n = validate.integer("n", n, low=2, high=64)
    seed = validate.integer("seed", seed, low=0)
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(validate.integer("d", d, low=2), generator=g, dtype=torch.float64)
            for _ in range(2))
    grid = positions.score_grid(q, k, n, kind)
    spread = positions.relative_spread(grid)
    return {"z": grid.numpy(), "max_spread": spread["max_spread"],
            "score_range": spread["score_range"], "n": n}


def _grid_title(kind: str, data: dict) -> str:
    return (f"{GRID_NAMES[kind]}<br>along a diagonal (one offset m − n)<br>the score varies "
            f"by ≤ {data['max_spread']:.1e} (span {data['score_range']:.1f})")


def score_grid_explorer(n: int = GRID_N, seed: int = 0) -> go.Figure:
    """Static face: a dropdown over no positions / sinusoidal / RoPE, one heatmap of q_m · k_n
    (rows = query position m, columns = key position n)."""
    labels = [str(i) for i in range(n)]
    datas = {kind: score_grid_data(kind, n, seed) for kind in GRID_KINDS}
    fig = go.Figure()
    for kind in GRID_KINDS:
        zmax = float(np.abs(datas[kind]["z"]).max())  # each face uses its whole scale
        fig.add_trace(go.Heatmap(
            z=rounded(datas[kind]["z"], 3), x=labels, y=labels, zmin=-zmax, zmax=zmax,
            colorscale=SIGNED_COLORSCALE, visible=kind == "rope", name=GRID_NAMES[kind],
            colorbar={"title": {"text": "q·k"}},
            hovertemplate="query at %{y}, key at %{x}<br>score %{z:.3f}<extra></extra>"))
    buttons = [{"label": GRID_NAMES[kind], "method": "update",
                "args": [{"visible": [k == kind for k in GRID_KINDS]},
                         {"title.text": _grid_title(kind, datas[kind])}]} for kind in GRID_KINDS]
    fig.update_layout(
        updatemenus=[{"buttons": buttons, "active": GRID_KINDS.index("rope"), "x": 0.0,
                      "xanchor": "left", "y": 1.02, "yanchor": "bottom"}],
        title={"text": _grid_title("rope", datas["rope"]), "font": {"size": 13}, "y": 0.97,
               "yanchor": "top"},
        xaxis={"title": "key position n", "side": "bottom", "tickfont": {"size": 11}},
        yaxis={"title": "query position m", "autorange": "reversed", "tickfont": {"size": 11}},
        height=640, margin={"t": 150, "l": 60, "r": 20, "b": 50})
    return fig


def accuracy_figure(results: dict, names: dict, title: str, baseline: float | None = None,
                    baseline_name: str = "") -> go.Figure:
    """Horizontal bars: held-out token accuracy (%) of each trained variant."""
    if not isinstance(results, dict) or not results:
        raise TypeError("results must be a non-empty dict of variant -> accuracy (0..1)")
    keys = list(results)
    values = [100 * results[k] for k in keys]
    fig = go.Figure(go.Bar(x=rounded(values, 2), y=[names.get(k, str(k)) for k in keys],
                           orientation="h", marker_color=COLORS["dark"],
                           text=[f"{v:.1f} %" for v in values], textposition="inside",
                           insidetextanchor="end", textfont={"color": "white", "size": 12},
                           hovertemplate="%{y}: %{x:.1f} %<extra></extra>"))
    if baseline is not None:
        fig.add_vline(x=100 * baseline, line_dash="dot", line_color=COLORS["red"],
                      annotation_text=baseline_name, annotation_position="bottom right",
                      annotation_font_size=11)
    fig.update_layout(title={"text": title, "font": {"size": 13}}, height=120 + 45 * len(keys),
                      xaxis={"title": "held-out token accuracy (%)", "range": [0, 100]},
                      yaxis={"autorange": "reversed", "automargin": True},
                      margin={"t": 60, "l": 20, "r": 30, "b": 50})
    return fig


# --- grouped-query attention ----------------------------------------------------------------

def kv_figure(rows: list[dict], seconds: bool = True) -> go.Figure:
    """Cache bytes (measured tensors, formula) and, if ``seconds``, time per decoded token,
    against the number of key/value heads."""
    if not rows:
        raise ValueError("rows must hold at least one measurement from book.gqa.decode_times")
    labels = [str(r["n_kv_heads"]) for r in rows]
    cols = 2 if seconds else 1
    fig = make_subplots(rows=1, cols=cols, horizontal_spacing=0.18,
                        subplot_titles=["KV cache (KiB)", "ms per new token"][:cols])
    fig.add_trace(go.Bar(x=labels, y=[r["cache_bytes"] / 1024 for r in rows],
                         name="cache tensors", marker_color=COLORS["dark"],
                         hovertemplate="%{x} KV heads: %{y:.0f} KiB<extra></extra>"), 1, 1)
    fig.add_trace(go.Scatter(x=labels, y=[r["formula_bytes"] / 1024 for r in rows],
                             mode="markers", name="formula", marker={
                                 "symbol": "x", "size": 12, "color": COLORS["red"]},
                             hovertemplate="formula: %{y:.0f} KiB<extra></extra>"), 1, 1)
    if seconds:
        fig.add_trace(go.Bar(x=labels, y=[1e3 * r["seconds_per_token"] for r in rows],
                             name="decode time", marker_color=COLORS["mid"],
                             hovertemplate="%{x} KV heads: %{y:.2f} ms<extra></extra>"), 1, 2)
        fig.update_xaxes(title_text="key/value heads", type="category", row=1, col=2)
    fig.update_xaxes(title_text="key/value heads", type="category", row=1, col=1)
    fig.update_layout(height=420, legend={"orientation": "h", "y": -0.3},
                      margin={"t": 60, "l": 50, "r": 20, "b": 60})
    return fig


# --- FlashAttention: memory and the step-through explorer -----------------------------------

def flash_memory_figure(sweep: dict, exponents: dict) -> go.Figure:
    """Log-log peak memory of textbook vs tiled attention with the fitted exponents."""
    ns = sweep["n"]
    names = {"full": "textbook (n × n scores)", "tiled": "tiled, online softmax"}
    colors = {"full": COLORS["red"], "tiled": COLORS["dark"]}
    fig = go.Figure([go.Scatter(
        x=ns, y=rounded(np.asarray(sweep[m]) / 2**20, 4), mode="lines+markers",
        name=f"{names[m]}: ∝ n^{exponents[m]:.2f}", line={"color": colors[m]},
        hovertemplate="n = %{x}: %{y:.2f} MiB<extra></extra>") for m in ("full", "tiled")])
    fig.update_layout(xaxis={"type": "log", "title": "sequence length n", "tickvals": ns,
                             "ticktext": [str(n) for n in ns]},
                      yaxis={"type": "log", "title": "peak memory (MiB)"}, height=420,
                      title={"text": "Peak memory of one attention call (4 heads, d = 32)",
                             "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.25},
                      margin={"t": 60, "l": 60, "r": 20, "b": 60})
    return fig


def flash_step_data(tile: int = FLASH_TILE, n_keys: int = FLASH_N_KEYS, seed: int = 0) -> dict:
    """Everything the explorer shows, for each tile of one query row: the scores, which keys
    each step has seen, the running max m and sum ℓ, the weights and output so far."""
    scores, values = flash.example_row(n_keys, seed=seed)
    steps = flash.row_trace(scores, values, tile)
    exact_w = np.exp(scores - scores.max())
    exact_w /= exact_w.sum()
    return {"scores": scores, "steps": steps, "exact_weights": exact_w,
            "exact": steps[-1]["exact"], "tile": tile, "n_keys": n_keys}


def _flash_title(data: dict, i: int) -> str:
    s = data["steps"][i]
    last = i == len(data["steps"]) - 1
    return (f"tile {i + 1} of {len(data['steps'])} (keys {s['start']}–{s['stop'] - 1})<br>"
            f"max m = {s['m']:.2f}, sum ℓ = {s['ell']:.2f}, old terms × {s['rescale']:.2f}<br>"
            f"largest |output − exact| = {s['error']:.1e}" + (": exact" if last else ""))


def _flash_traces(data: dict, i: int) -> dict:
    """The per-trace arrays of step ``i`` (in the order the figure adds the traces)."""
    s = data["steps"][i]
    n = data["n_keys"]
    state = np.where(np.arange(n) < s["start"], 1, np.where(np.arange(n) < s["stop"], 2, 0))
    colors = [{0: COLORS["light"], 1: COLORS["mid"], 2: COLORS["dark"]}[c] for c in state]
    d_v = len(s["output"])
    return {"x": [None, [-0.5, n - 0.5], None, None, None, None],
            "y": [rounded(data["scores"], 3), [round(s["m"], 3)] * 2, rounded(s["weights"]),
                  rounded(data["exact_weights"]), rounded(s["output"]), rounded(data["exact"])],
            "marker.color": [colors, None, colors, None, None, None],
            "_d_v": d_v}


def flash_explorer(tile: int = FLASH_TILE, n_keys: int = FLASH_N_KEYS,
                   seed: int = 0) -> go.Figure:
    """Static face: a slider over the tiles of one query row. Top: the scores (seen tiles mid,
    current tile dark, unseen light) and the running max; middle: the weights implied so far
    next to the exact softmax; bottom: the output so far next to the exact output."""
    data = flash_step_data(tile, n_keys, seed)
    keys = list(range(n_keys))
    d_v = len(data["exact"])
    fig = make_subplots(rows=3, cols=1, vertical_spacing=0.11,
                        subplot_titles=["scores of one query row, and the running max m",
                                        "weights so far (bars) vs softmax over all keys (×)",
                                        "output so far (bars) vs exact output (×)"])
    first = _flash_traces(data, 0)
    fig.add_trace(go.Bar(x=keys, y=first["y"][0], marker_color=first["marker.color"][0],
                         name="score", showlegend=False,
                         hovertemplate="key %{x}: score %{y:.2f}<extra></extra>"), 1, 1)
    fig.add_trace(go.Scatter(x=first["x"][1], y=first["y"][1], mode="lines", name="running max",
                             line={"color": COLORS["red"], "dash": "dash"}, showlegend=False,
                             hovertemplate="m = %{y:.2f}<extra></extra>"), 1, 1)
    fig.add_trace(go.Bar(x=keys, y=first["y"][2], marker_color=first["marker.color"][2],
                         showlegend=False,
                         hovertemplate="key %{x}: weight so far %{y:.3f}<extra></extra>"), 2, 1)
    fig.add_trace(go.Scatter(x=keys, y=first["y"][3], mode="markers", showlegend=False,
                             marker={"symbol": "x", "color": COLORS["red"], "size": 9},
                             hovertemplate="key %{x}: exact %{y:.3f}<extra></extra>"), 2, 1)
    comps = [f"o[{j}]" for j in range(d_v)]
    fig.add_trace(go.Bar(x=comps, y=first["y"][4], marker_color=COLORS["dark"],
                         showlegend=False,
                         hovertemplate="%{x} so far %{y:.3f}<extra></extra>"), 3, 1)
    fig.add_trace(go.Scatter(x=comps, y=first["y"][5], mode="markers", showlegend=False,
                             marker={"symbol": "x", "color": COLORS["red"], "size": 11},
                             hovertemplate="%{x} exact %{y:.3f}<extra></extra>"), 3, 1)
    steps = []
    for i in range(len(data["steps"])):
        tr = _flash_traces(data, i)
        steps.append({"label": str(i + 1), "method": "update",
                      "args": [{"x": [keys, tr["x"][1], keys, keys, comps, comps],
                                "y": tr["y"], "marker.color": [
                                    tr["marker.color"][0], None, tr["marker.color"][2],
                                    COLORS["red"], COLORS["dark"], COLORS["red"]]},
                               {"title.text": _flash_title(data, i)}]})
    wmax = float(max(data["exact_weights"].max(), max(s["weights"].max()
                                                      for s in data["steps"])))
    omax = float(max(np.abs(s["output"]).max() for s in data["steps"]))
    fig.update_yaxes(title_text="score", row=1, col=1)
    fig.update_yaxes(title_text="weight", range=[0, 1.1 * wmax], row=2, col=1)
    fig.update_yaxes(title_text="value", range=[-1.15 * omax, 1.15 * omax], row=3, col=1)
    for row in (1, 2):
        fig.update_xaxes(title_text="key", dtick=1 if n_keys <= 24 else None,
                         range=[-0.5, n_keys - 0.5], row=row, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(
        sliders=[{"active": 0, "currentvalue": {"prefix": f"tiles of {tile} keys processed: "},
                  "pad": {"t": 40}, "steps": steps}],
        title={"text": _flash_title(data, 0), "font": {"size": 12}},
        height=860, margin={"t": 120, "l": 60, "r": 20, "b": 40})
    return fig


def flash_live() -> LiveExplorer:
    """Live face: any tile size, number of keys, seed and step (up to 64 keys)."""
    fig = flash_explorer()
    fig.layout.sliders = []

    def redraw(fig, tile, step, n_keys, seed):
        data = flash_step_data(tile, n_keys, seed)
        i = min(step, len(data["steps"])) - 1
        tr = _flash_traces(data, i)
        keys = list(range(n_keys))
        d_v = len(data["exact"])
        comps = [f"o[{j}]" for j in range(d_v)]
        xs = [keys, tr["x"][1], keys, keys, comps, comps]
        for j, trace in enumerate(fig.data):
            trace.x, trace.y = xs[j], tr["y"][j]
            if tr["marker.color"][j] is not None:
                trace.marker.color = tr["marker.color"][j]
        wmax = float(max(data["exact_weights"].max(), data["steps"][i]["weights"].max()))
        omax = float(max(np.abs(s["output"]).max() for s in data["steps"]))
        fig.layout.yaxis2.range = [0, 1.1 * wmax]
        fig.layout.yaxis3.range = [-1.15 * omax, 1.15 * omax]
        for axis in (fig.layout.xaxis, fig.layout.xaxis2):
            axis.dtick = 1 if n_keys <= 24 else None
            axis.range = [-0.5, n_keys - 0.5]
        fig.layout.title.text = _flash_title(data, i)

    controls = {
        "tile": widgets.IntSlider(value=FLASH_TILE, min=1, max=32, description="tile"),
        "step": widgets.IntSlider(value=1, min=1, max=LIVE_MAX_KEYS, description="step"),
        "n_keys": widgets.IntSlider(value=FLASH_N_KEYS, min=2, max=LIVE_MAX_KEYS,
                                    description="keys"),
        "seed": widgets.IntSlider(value=0, min=0, max=20, description="seed"),
    }
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- exercises --------------------------------------------------------------------------------

@exercise("ch11.kv_head", "Grouped-query attention: which key/value head does query head 13 "
          "read, with 32 query heads and 8 key/value heads?",
          reference=lambda: gqa.kv_head_of(13, 32, 8), mistakes=lambda: [5, 1, 13, 4, 8])
def _ch11_kv_head(answer):
    value = number(answer)
    if value == 13 % 8:
        return False, ("That deals the heads out in turn (head mod groups). Here the groups are "
                       "blocks of consecutive query heads: which block holds that head?")
    ok = value == gqa.kv_head_of(13, 32, 8)
    return ok, ("Correct: four consecutive query heads share each key/value head." if ok else
                "Each key/value head serves n_heads / n_kv_heads consecutive query heads, "
                "counted from head 0: divide and round down.")


def _llama_bytes_per_token() -> int:
    s = gqa.LLAMA_STYLE
    return gqa.kv_cache_bytes(s["n_layers"], 1, s["n_kv_heads"], s["d_head"],
                              s["bytes_per_number"])


@exercise("ch11.kv_bytes", "KV-cache bytes per token of the Llama-style shape (GQA)",
          reference=_llama_bytes_per_token,
          mistakes=lambda: [4 * _llama_bytes_per_token(), _llama_bytes_per_token() // 2,
                            2 * _llama_bytes_per_token()])
def _ch11_kv_bytes(answer):
    value = number(answer)
    want = _llama_bytes_per_token()
    if value == 4 * want:
        return False, ("That is the multi-head cache: only the key/value heads are stored, "
                       "not every query head.")
    if value == want // 2:
        return False, "Keys *and* values are cached: count both."
    if value == 2 * want:
        return False, "The numbers are 16-bit: two bytes each, not four."
    ok = value == want
    return ok, ("Correct: keys and values × layers × KV heads × head width × bytes." if ok else
                "Multiply: 2 (K and V) × layers × key/value heads × head width × bytes per "
                "number, for one token.")


MERGE_CASES = ((1.0, 2.5, 3.0, 1.2), (2.0, 1.0, -1.0, 4.0), (0.0, 1.0, 0.0, 1.0),
               (-5.0, 7.0, 10.0, 0.5), (4.0, 3.0, 4.0, 2.0))


def _merge_reference(m1, l1, m2, l2):
    m = max(m1, m2)
    return m, l1 * np.exp(m1 - m) + l2 * np.exp(m2 - m)


@exercise("ch11.online_merge", "Write merge(m1, l1, m2, l2) for the online softmax",
          reference=lambda: _merge_reference,
          mistakes=lambda: [lambda m1, l1, m2, l2: (max(m1, m2), l1 + l2),
                            lambda m1, l1, m2, l2: (m1 + m2, l1 + l2),
                            lambda m1, l1, m2, l2: (max(m1, m2),
                                                    l1 * np.exp(m1) + l2 * np.exp(m2)),
                            "merge"])
def _ch11_online_merge(func):
    if not callable(func):
        return False, "Pass the function itself (merge), not its result."
    for m1, l1, m2, l2 in MERGE_CASES:
        got = func(m1, l1, m2, l2)
        if got is None:
            raise NotAnswered
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return False, "Return two numbers: the merged maximum and the merged sum."
        want = _merge_reference(m1, l1, m2, l2)
        if not np.isclose(float(got[0]), want[0]):
            return False, ("The merged maximum is wrong: it is the larger of the two running "
                           "maxima.")
        if not np.isclose(float(got[1]), want[1], rtol=1e-9):
            return False, (f"The merged sum is wrong for m1={m1}, l1={l1}, m2={m2}, l2={l2}: "
                           "each sum was taken relative to its own maximum; rescale it by "
                           "exp(old max − new max) before adding.")
    return True, "Correct: this is the whole trick — every tile's sum is rescaled, nothing lost."


@exercise("ch11.rope_offset", "RoPE: q at position 7 and k at position 2 give score s. At "
          "which key position does q at position 20 give the same score?",
          reference=lambda: 15, mistakes=lambda: [2, 25, 13, 22])
def _ch11_rope_offset(answer):
    value = number(answer)
    ok = value == 20 - (7 - 2)
    if value == 2:
        return False, ("The key's absolute position is not what RoPE keeps fixed; the offset "
                       "m − n is.")
    return ok, ("Correct: with RoPE the score depends on m − n only." if ok else
                "Keep the offset query position − key position unchanged.")
