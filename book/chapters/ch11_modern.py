"""Chapter 11 (attention as today's models use it): figures, live faces and exercises.

Computation lives in :mod:`book.ideas.positions`, :mod:`book.ideas.gqa` and
:mod:`book.ideas.flash`; this module
only draws what their ``*_data``-style functions return and registers the chapter's exercises.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from book.face import questions
from book.face.checks import Answer, Is, NotAnswered, exercise, right, value_exercise, wrong
from book.face.figures import describe
from book.face.live import LiveExplorer
from book.face.plotting import SIGNED_COLORSCALE, rounded, text_width
from book.ideas import flash, gqa, positions
from book.kit import i18n, validate

GRID_N = 16  # positions in the RoPE score grid (cells stay ≥ 12 px at 390 px wide)
GRID_KINDS = ("none", "sinusoidal", "rope")
FLASH_N_KEYS = 16
FLASH_TILE = 4
LIVE_MAX_KEYS = 64
COLORS = {"dark": "#1f3b73", "mid": "#6f8fc4", "light": "#d5deee", "red": "#b3261e",
          "grey": "#7a7a7a"}


def text(msg_id: str, **values) -> str:
    """The chapter's message ``msg_id`` (book/strings/ch11.toml) in the book's language, e.g.
    the sentences the notebook prints: ``print(text("print_gap", plain=..., sin=...))``."""
    return i18n.tr(f"ch11.{msg_id}", **values)


def grid_name(kind: str) -> str:
    """The score grid's name of position scheme ``kind`` (one of :data:`GRID_KINDS`)."""
    validate.choice("kind", kind, GRID_KINDS)
    return text(f"grid_{kind}")


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
    return text("grid_title", name=grid_name(kind), spread=data["max_spread"],
                span=data["score_range"])


def score_grid_figure(n: int = GRID_N, seed: int = 0) -> go.Figure:
    """Static face: a dropdown over no positions / sinusoidal / RoPE, one heatmap of q_m · k_n
    (rows = query position m, columns = key position n)."""
    labels = [str(i) for i in range(n)]
    datas = {kind: score_grid_data(kind, n, seed) for kind in GRID_KINDS}
    fig = go.Figure()
    for kind in GRID_KINDS:
        zmax = float(np.abs(datas[kind]["z"]).max())  # each face uses its whole scale
        fig.add_trace(go.Heatmap(
            z=rounded(datas[kind]["z"], 3), x=labels, y=labels, zmin=-zmax, zmax=zmax,
            colorscale=SIGNED_COLORSCALE, visible=kind == "rope", name=grid_name(kind),
            colorbar={"title": {"text": "q·k"}},
            hovertemplate=text("grid_hover", y="%{y}", x="%{x}", z="%{z:.3f}")
            + "<extra></extra>"))
    buttons = [{"label": grid_name(kind), "method": "update",
                "args": [{"visible": [k == kind for k in GRID_KINDS]},
                         {"title.text": _grid_title(kind, datas[kind])}]} for kind in GRID_KINDS]
    fig.update_layout(
        updatemenus=[{"buttons": buttons, "active": GRID_KINDS.index("rope"), "x": 0.0,
                      "xanchor": "left", "y": 1.02, "yanchor": "bottom"}],
        title={"text": _grid_title("rope", datas["rope"]), "font": {"size": 13}, "y": 0.97,
               "yanchor": "top"},
        xaxis={"title": text("grid_x"), "side": "bottom", "tickfont": {"size": 11}},
        yaxis={"title": text("grid_y"), "autorange": "reversed", "tickfont": {"size": 11}},
        height=540, margin={"t": 150, "l": 60, "r": 20, "b": 50})
    return describe(fig, alt=text("grid_alt", n=n), caption=text(
        "grid_caption", rope=datas["rope"]["max_spread"],
        sin=datas["sinusoidal"]["max_spread"], none=datas["none"]["max_spread"]))


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
                      xaxis={"title": text("acc_x"), "range": [0, 100]},
                      yaxis={"autorange": "reversed", "automargin": True},
                      margin={"t": 60, "l": _label_margin(fig.data[0].y), "r": 30, "b": 50})
    return fig


def _label_margin(labels) -> int:
    """A left margin that holds the longest bar label at 12 px (CJK characters count double),
    set up front: automargin alone measures before the web font has loaded."""
    width = max(text_width(str(label)) for label in labels)
    return int(16 + 6.5 * width)


def positions_accuracy_figure(accuracy: dict, steps: int, layers: int = 1) -> go.Figure:
    """:func:`accuracy_figure` of the position schemes (keys of :data:`book.ideas.positions.KINDS`)
    after ``steps`` training steps of a ``layers``-layer encoder."""
    names = {kind: text(f"pos_{kind}") for kind in positions.KINDS}
    unknown = sorted(set(accuracy) - set(names)) if isinstance(accuracy, dict) else []
    if unknown:
        raise ValueError(f"accuracy has unknown position schemes {unknown}; use keys of "
                         f"book.ideas.positions.KINDS {list(positions.KINDS)}")
    layers = validate.integer("layers", layers, low=1)
    title = (text("pos_title_1", steps=steps) if layers == 1
             else text("pos_title_n", layers=layers, steps=steps))
    return _described_accuracy(accuracy_figure(accuracy, names, title), accuracy, names,
                               text("pos_alt", steps=steps))


def gqa_accuracy_figure(accuracy: dict, n_heads: int, steps: int) -> go.Figure:
    """:func:`accuracy_figure` of encoders with ``n_heads`` query heads and each number of
    key/value heads in ``accuracy`` (its keys) after ``steps`` training steps."""
    n_heads = validate.integer("n_heads", n_heads, low=1)
    if not isinstance(accuracy, dict) or not accuracy:
        raise TypeError("accuracy must be a non-empty dict of key/value heads -> accuracy "
                        "(0..1)")
    names = {}
    for n_kv in accuracy:
        gqa.check_groups(n_heads, n_kv)
        kind = "MHA" if n_kv == n_heads else "GQA"
        names[n_kv] = text("gqa_kv_1") if n_kv == 1 else text("gqa_kv_n", n=n_kv, kind=kind)
    return _described_accuracy(
        accuracy_figure(accuracy, names, text("gqa_title", heads=n_heads, steps=steps)),
        accuracy, names, text("gqa_alt", heads=n_heads, steps=steps))


def _described_accuracy(fig, accuracy: dict, names: dict, alt: str):
    """An accuracy figure with its text alternative and a caption naming the highest and
    lowest bar (as drawn: one decimal) and the points between them."""
    shown = {k: round(100 * v, 1) for k, v in accuracy.items()}
    best, worst = max(shown, key=shown.get), min(shown, key=shown.get)
    return describe(fig, alt=alt, caption=text(
        "acc_caption", best=names[best], best_acc=shown[best], worst=names[worst],
        worst_acc=shown[worst], spread=shown[best] - shown[worst]))


def _markdown_table(header: str, rows: list[str]) -> str:
    columns = header.count("|") - 1
    return header + "\n" + "|---" * columns + "|\n" + "".join(f"{r}\n" for r in rows)


def kv_cache_table(rows: list[tuple[int, int]], n_heads: int) -> str:
    """A Markdown table of (key/value heads, bytes of one sequence's KV cache) rows, each named
    multi-head (``n_heads`` KV heads), multi-query (1) or grouped-query (between)."""
    if not rows:
        raise ValueError("rows must hold at least one (n_kv_heads, bytes) pair, e.g. from "
                         "book.ideas.gqa.kv_cache_bytes")
    lines = []
    for n_kv, nbytes in rows:
        kind = ("ll_mha" if n_kv == n_heads else "ll_mqa" if n_kv == 1 else "ll_gqa")
        lines.append(f"| {n_kv} | {text(kind)} | {nbytes / 2**30:.3f} GiB |")
    return _markdown_table(text("ll_header"), lines)


def mla_table(rows: list[dict]) -> str:
    """A Markdown table of latent widths: numbers cached per token and layer, and the largest
    difference to the multi-head layer (rows with keys d_latent, cached, vs_mha)."""
    if not rows:
        raise ValueError("rows must hold at least one dict with d_latent, cached and vs_mha")
    lines = [f"| {r['d_latent']} | {r['cached']} | {r['vs_mha']:.1e} |" for r in rows]
    return _markdown_table(text("mla_header"), lines)


# --- grouped-query attention ----------------------------------------------------------------

def kv_figure(rows: list[dict], seconds: bool = True) -> go.Figure:
    """Cache bytes (measured tensors, formula) and, if ``seconds``, time per decoded token,
    against the number of key/value heads."""
    if not rows:
        raise ValueError("rows must hold at least one measurement from book.ideas.gqa.decode_times")
    labels = [str(r["n_kv_heads"]) for r in rows]
    cols = 2 if seconds else 1
    fig = make_subplots(rows=1, cols=cols, horizontal_spacing=0.18,
                        subplot_titles=[text("kv_panel_cache"),
                                        text("kv_panel_time")][:cols])
    fig.add_trace(go.Bar(x=labels, y=[r["cache_bytes"] / 1024 for r in rows],
                         name=text("kv_cache_name"), marker_color=COLORS["dark"],
                         hovertemplate=text("kv_hover_cache", x="%{x}", y="%{y:.0f}")
                         + "<extra></extra>"), 1, 1)
    fig.add_trace(go.Scatter(x=labels, y=[r["formula_bytes"] / 1024 for r in rows],
                             mode="markers", name=text("kv_formula_name"), marker={
                                 "symbol": "x", "size": 12, "color": COLORS["red"]},
                             hovertemplate=text("kv_hover_formula", y="%{y:.0f}")
                             + "<extra></extra>"), 1, 1)
    if seconds:
        fig.add_trace(go.Bar(x=labels, y=[1e3 * r["seconds_per_token"] for r in rows],
                             name=text("kv_time_name"), marker_color=COLORS["mid"],
                             hovertemplate=text("kv_hover_time", x="%{x}", y="%{y:.2f}")
                             + "<extra></extra>"), 1, 2)
        fig.update_xaxes(title_text=text("kv_x"), type="category", row=1, col=2)
    fig.update_xaxes(title_text=text("kv_x"), type="category", row=1, col=1)
    # the panel titles 8 px above the plot: a top tick half a line above its edge (where the
    # measured times put it: "2" of 1.9 ms) ran into "ms per new token" on a phone
    fig.update_annotations(yshift=8)
    fig.update_layout(height=380, legend={"orientation": "h", "y": -0.3},
                      margin={"t": 68, "l": 50, "r": 20, "b": 60})
    most = max(rows, key=lambda r: r["n_kv_heads"])
    least = min(rows, key=lambda r: r["n_kv_heads"])
    caption = text("kv_caption", most=most["n_kv_heads"], most_kib=most["cache_bytes"] / 1024,
                   least=least["n_kv_heads"], least_kib=least["cache_bytes"] / 1024)
    if seconds:
        caption += text("kv_caption_time", most_ms=1e3 * most["seconds_per_token"],
                        least_ms=1e3 * least["seconds_per_token"])
    return describe(fig, alt=text("kv_alt" if seconds else "kv_alt_bytes"), caption=caption)


# --- FlashAttention: memory and the step-through explorer -----------------------------------

def flash_memory_figure(sweep: dict, exponents: dict, *, heads: int = 4,
                        d: int = 32) -> go.Figure:
    """Log-log peak memory of textbook vs tiled attention with the fitted exponents
    (``heads`` and ``d``: the shape :func:`book.ideas.flash.memory_sweep` measured, for the
    title)."""
    ns = sweep["n"]
    names = {"full": text("mem_full"), "tiled": text("mem_tiled")}
    colors = {"full": COLORS["red"], "tiled": COLORS["dark"]}
    # a dash and a marker of their own: the two lines differ without their colours
    styles = {"full": ("solid", "circle"), "tiled": ("dash", "square")}
    fig = go.Figure([go.Scatter(
        x=ns, y=rounded(np.asarray(sweep[m]) / 2**20, 4), mode="lines+markers",
        name=text("mem_name", name=names[m], exp=exponents[m]),
        line={"color": colors[m], "dash": styles[m][0]}, marker={"symbol": styles[m][1]},
        hovertemplate="n = %{x}: %{y:.2f} MiB<extra></extra>") for m in ("full", "tiled")])
    fig.update_layout(xaxis={"type": "log", "title": text("mem_x"), "tickvals": ns,
                             "ticktext": [str(n) for n in ns]},
                      yaxis={"type": "log", "title": text("mem_y")}, height=380,
                      title={"text": text("mem_title", heads=heads, d=d),
                             "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.25},
                      margin={"t": 60, "l": 60, "r": 20, "b": 60})
    return describe(fig, alt=text("mem_alt"), caption=text(
        "mem_caption", full=exponents["full"], tiled=exponents["tiled"], n=ns[-1],
        full_mib=sweep["full"][-1] / 2**20, tiled_mib=sweep["tiled"][-1] / 2**20))


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
    return text("flash_title", i=i + 1, n=len(data["steps"]), start=s["start"],
                stop=s["stop"] - 1, m=s["m"], ell=s["ell"], rescale=s["rescale"],
                error=s["error"], exact=text("flash_exact") if last else "")


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


def _flash_x(data: dict, traces: dict) -> list:
    """Each trace's x (in the order the figure adds the traces): the keys, the running max's
    span, the keys twice, the output's components twice."""
    keys = list(range(data["n_keys"]))
    comps = [f"o[{j}]" for j in range(len(data["exact"]))]
    return [keys, traces["x"][1], keys, keys, comps, comps]


def _flash_plot(data: dict) -> go.Figure:
    """The first tile of ``data`` (:func:`flash_step_data`) in the three panels, their axes
    fitted to every tile, without the control (what both faces start from)."""
    n_keys = data["n_keys"]
    # gaps that hold the keys' labels, their title and the next panel's title on a phone
    fig = make_subplots(rows=3, cols=1, vertical_spacing=0.13,
                        subplot_titles=[text("flash_p1"), text("flash_p2"),
                                        text("flash_p3")])
    first = _flash_traces(data, 0)
    xs = _flash_x(data, first)
    fig.add_trace(go.Bar(x=xs[0], y=first["y"][0], marker_color=first["marker.color"][0],
                         name=text("flash_score_name"), showlegend=False,
                         hovertemplate=text("flash_hover_score", x="%{x}", y="%{y:.2f}")
                         + "<extra></extra>"), 1, 1)
    fig.add_trace(go.Scatter(x=xs[1], y=first["y"][1], mode="lines",
                             name=text("flash_max_name"),
                             line={"color": COLORS["red"], "dash": "dash"}, showlegend=False,
                             hovertemplate="m = %{y:.2f}<extra></extra>"), 1, 1)
    fig.add_trace(go.Bar(x=xs[2], y=first["y"][2], marker_color=first["marker.color"][2],
                         showlegend=False,
                         hovertemplate=text("flash_hover_weight", x="%{x}", y="%{y:.3f}")
                         + "<extra></extra>"), 2, 1)
    fig.add_trace(go.Scatter(x=xs[3], y=first["y"][3], mode="markers", showlegend=False,
                             marker={"symbol": "x", "color": COLORS["red"], "size": 9},
                             hovertemplate=text("flash_hover_exact", x="%{x}", y="%{y:.3f}")
                             + "<extra></extra>"), 2, 1)
    fig.add_trace(go.Bar(x=xs[4], y=first["y"][4], marker_color=COLORS["dark"],
                         showlegend=False,
                         hovertemplate=text("flash_hover_out", x="%{x}", y="%{y:.3f}")
                         + "<extra></extra>"), 3, 1)
    fig.add_trace(go.Scatter(x=xs[5], y=first["y"][5], mode="markers", showlegend=False,
                             marker={"symbol": "x", "color": COLORS["red"], "size": 11},
                             hovertemplate=text("flash_hover_out_exact", x="%{x}",
                                                y="%{y:.3f}") + "<extra></extra>"), 3, 1)
    wmax = float(max(data["exact_weights"].max(), max(s["weights"].max()
                                                      for s in data["steps"])))
    omax = float(max(np.abs(s["output"]).max() for s in data["steps"]))
    fig.update_yaxes(title_text=text("flash_y_score"), row=1, col=1)
    fig.update_yaxes(title_text=text("flash_y_weight"), range=[0, 1.1 * wmax], row=2, col=1)
    fig.update_yaxes(title_text=text("flash_y_value"), range=[-1.15 * omax, 1.15 * omax],
                     row=3, col=1)
    for row in (1, 2):  # rows 1 and 2 share the keys: one axis title, under row 2
        fig.update_xaxes(dtick=1 if n_keys <= 24 else None, range=[-0.5, n_keys - 0.5],
                         row=row, col=1)
    fig.update_xaxes(title_text=text("flash_x_key"), row=2, col=1)
    # the keys a little below the axis: the first "0" clear of the y axis' "0" at the corner
    fig.update_xaxes(ticklabelstandoff=4)
    fig.update_annotations(font_size=12)
    fig.update_layout(title={"text": _flash_title(data, 0), "font": {"size": 12}},
                      height=780, margin={"t": 120, "l": 60, "r": 20, "b": 40})
    # one caption for every tile the controls reach: the numbers are the first row's
    return describe(fig, alt=text("flash_alt"), caption=text(
        "flash_caption", n_keys=n_keys, tile=data["tile"], steps=len(data["steps"]),
        error=data["steps"][-1]["error"]))


def flash_figure(tile: int = FLASH_TILE, n_keys: int = FLASH_N_KEYS,
                   seed: int = 0) -> go.Figure:
    """Static face: a slider over the tiles of one query row. Top: the scores (seen tiles mid,
    current tile dark, unseen light) and the running max; middle: the weights implied so far
    next to the exact softmax; bottom: the output so far next to the exact output."""
    data = flash_step_data(tile, n_keys, seed)
    fig = _flash_plot(data)
    steps = []
    for i in range(len(data["steps"])):
        tr = _flash_traces(data, i)
        steps.append({"label": str(i + 1), "method": "update",
                      "args": [{"x": _flash_x(data, tr), "y": tr["y"], "marker.color": [
                                    tr["marker.color"][0], None, tr["marker.color"][2],
                                    COLORS["red"], COLORS["dark"], COLORS["red"]]},
                               {"title.text": _flash_title(data, i)}]})
    fig.update_layout(
        sliders=[{"active": 0, "currentvalue": {"prefix": text("flash_slider", tile=tile)},
                  "pad": {"t": 40}, "steps": steps}])
    return fig


def flash_live() -> LiveExplorer:
    """Live face: any tile size, number of keys, seed and step (up to 64 keys)."""
    def redraw(fig, tile, step, n_keys, seed):
        data = flash_step_data(tile, n_keys, seed)
        i = min(step, len(data["steps"])) - 1
        tr = _flash_traces(data, i)
        for j, (trace, x) in enumerate(zip(fig.data, _flash_x(data, tr), strict=True)):
            trace.x, trace.y = x, tr["y"][j]
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
        "tile": widgets.IntSlider(value=FLASH_TILE, min=1, max=32,
                                  description=text("live_tile")),
        "step": widgets.IntSlider(value=1, min=1, max=LIVE_MAX_KEYS,
                                  description=text("live_step")),
        "n_keys": widgets.IntSlider(value=FLASH_N_KEYS, min=2, max=LIVE_MAX_KEYS,
                                    description=text("live_keys")),
        "seed": widgets.IntSlider(value=0, min=0, max=20, description=text("live_seed")),
    }
    explorer = LiveExplorer(_flash_plot(flash_step_data()), controls, redraw,
                            adds=text("live_adds_flash"))
    explorer.update()
    return explorer


# --- exercises --------------------------------------------------------------------------------

value_exercise("ch11.kv_head", "Grouped-query attention: which key/value head does query head "
               "13 read, with 32 query heads and 8 key/value heads?",
               reference=lambda: gqa.kv_head_of(13, 32, 8), mistakes=lambda: [5, 1, 13, 4, 8],
               answer=lambda: Answer("number", [
                   (Is.equal(13 % 8), wrong("ch11.ex_kv_head_mod")),
                   (Is.equal(gqa.kv_head_of(13, 32, 8)), right("ch11.ex_kv_head_ok"))],
                   otherwise=wrong("ch11.ex_kv_head_hint")))


def _llama_bytes_per_token() -> int:
    s = gqa.LLAMA_STYLE
    return gqa.kv_cache_bytes(s["n_layers"], 1, s["n_kv_heads"], s["d_head"],
                              s["bytes_per_number"])


def _kv_bytes_answer() -> Answer:
    want = _llama_bytes_per_token()
    return Answer("number", [
        (Is.equal(4 * want), wrong("ch11.ex_bytes_mha")),
        (Is.equal(want // 2), wrong("ch11.ex_bytes_half")),
        (Is.equal(2 * want), wrong("ch11.ex_bytes_double")),
        (Is.equal(want), right("ch11.ex_bytes_ok"))], otherwise=wrong("ch11.ex_bytes_hint"))


value_exercise("ch11.kv_bytes", "KV-cache bytes per token of the Llama-style shape (GQA)",
               reference=_llama_bytes_per_token,
               mistakes=lambda: [4 * _llama_bytes_per_token(), _llama_bytes_per_token() // 2,
                                 2 * _llama_bytes_per_token()],
               answer=_kv_bytes_answer)


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
        return False, text("ex_merge_callable")
    for m1, l1, m2, l2 in MERGE_CASES:
        got = func(m1, l1, m2, l2)
        if got is None:
            raise NotAnswered
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            return False, text("ex_merge_two")
        want = _merge_reference(m1, l1, m2, l2)
        if not np.isclose(float(got[0]), want[0]):
            return False, text("ex_merge_max")
        if not np.isclose(float(got[1]), want[1], rtol=1e-9):
            return False, text("ex_merge_sum", m1=m1, l1=l1, m2=m2, l2=l2)
    return True, text("ex_merge_ok")


value_exercise("ch11.rope_offset", "RoPE: q at position 7 and k at position 2 give score s. "
               "At which key position does q at position 20 give the same score?",
               reference=lambda: 15, mistakes=lambda: [2, 25, 13, 22],
               answer=lambda: Answer("number", [
                   (Is.equal(2), wrong("ch11.ex_rope_abs")),
                   (Is.equal(20 - (7 - 2)), right("ch11.ex_rope_ok"))],
                   otherwise=wrong("ch11.ex_rope_hint")))


# --- concept questions (book/face/questions.py; their words: book/strings/ch11.toml) ---
questions.question("ch11.shuffle", kind="predict", right=1,
                   answered_in="4b542184")
questions.question("ch11.causal_order", kind="explain", right=3)
questions.question("ch11.bug_online", kind="bug", right=2, code="""\
m, s, o = -math.inf, 0.0, 0.0
for scores, values in tiles:
    m_new = max(m, scores.max())
    p = torch.exp(scores - m_new)
    s = s + p.sum()
    o = o + p @ values
    m = m_new
out = o / s
""")
