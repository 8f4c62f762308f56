"""Chapter 9 (long context): its static figures, live explorers and exercises."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.face import controls, diagrams, inpage, questions
from book.face.checks import Answer, Is, call, exercise, right, value_exercise, wrong
from book.face.figures import describe
from book.face.live import LiveExplorer, widgets_for
from book.face.plotting import make_slider, rounded
from book.ideas import longctx
from book.kit import numbers, validate
from book.kit.i18n import tr

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

METHOD_COLORS = {"full": "#b3261e", "masked": "#7a7a7a", "banded": "#1a56a8",
                 "sdpa": "#2e7d32"}
# a dash and a marker of its own per method: the lines differ without their colours
METHOD_DASH = {"full": "solid", "masked": "dash", "banded": "dashdot", "sdpa": "dot"}
METHOD_MARKER = {"full": "circle", "masked": "x", "banded": "square", "sdpa": "diamond"}
PART_COLORS = {"projections": "#9ab0d6", "attention": "#b3261e", "feed_forward": "#1f3b73"}
# and a fill pattern of its own per part (the attention's plain)
PART_PATTERNS = {"projections": "/", "attention": "", "feed_forward": "."}
# the window explorer: 0 = never computed by the banded version, 1 = computed then masked,
# 2 = allowed. White, mid blue, dark navy: three steps of lightness, readable in greyscale.
WINDOW_LEVELS = ("level_skipped", "level_masked", "level_allowed")  # ids in ch09.toml
WINDOW_COLORSCALE = [[0.0, "#ffffff"], [0.33, "#ffffff"], [0.33, "#9ab0d6"], [0.67, "#9ab0d6"],
                     [0.67, "#1f3b73"], [1.0, "#1f3b73"]]
WINDOW_STEPS = (0, 1, 2, 4, 8, 12, 16, 24, 31)
WINDOW_PATTERN_N = 32


def log2_n_axis(ns, title: str | None = None) -> dict:
    return {"type": "log", "title": title or tr("ch09.n_axis"), "tickvals": list(ns),
            "ticktext": [str(n) for n in ns]}


def attention_cost_figure(sweep: dict, measure: str, fit_from: int = 1,
                          title: str = "") -> go.Figure:
    """Cost of each attention method against n on log-log axes, with the fitted slope.

    ``sweep`` is :func:`book.ideas.longctx.cost_sweep`'s result; ``measure`` is "memory" (bytes,
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
    slopes = []
    for m in methods:
        values = np.asarray(sweep[m], dtype=float)
        slope = longctx.fit_exponent([ns[i] for i in keep], values[keep]) \
            if len(keep) >= 2 else float("nan")
        slopes.append(tr("ch09.slope_of", method=tr(f"ch09.short_{m}"), slope=slope))
        fig.add_trace(go.Scatter(
            x=ns, y=rounded(values * scale, 6), mode="lines+markers",
            name=tr("ch09.legend_slope", method=tr(f"ch09.method_{m}"), slope=slope),
            line={"color": METHOD_COLORS[m], "dash": METHOD_DASH[m]},
            marker={"symbol": METHOD_MARKER[m], "size": 8},
            hovertemplate=f"n = %{{x}}<br>%{{y:.3g}} {unit}<extra></extra>"))
    what = tr("ch09.what_memory" if measure == "memory" else "ch09.what_time")
    fig.update_layout(
        title={"text": title or what, "font": {"size": 14}}, height=470,
        xaxis=log2_n_axis(ns), yaxis={"type": "log",
                                          "title": tr("ch09.cost_yaxis", what=what, unit=unit)},
        # one method per row, at the figure's bottom edge: no entry can run into the next
        legend={"orientation": "v", "x": 0, "y": 0, "yref": "container", "yanchor": "bottom",
                "font": {"size": 12}},
        margin={"l": 60, "r": 20, "t": 60, "b": 130})
    return describe(fig, alt=tr("ch09.cost_alt", what=what, k=len(methods)),
                    caption=tr("ch09.cost_caption", slopes=tr("ch09.list_sep").join(slopes),
                               n=ns[keep[0]] if keep else ns[0]))


def block_share_figure(rows: list[dict]) -> go.Figure:
    """Where the time of one Transformer block goes, per n: stacked shares of the three parts,
    with the attention's share of the FLOPs as a line (rows from longctx.block_costs)."""
    if not rows:
        raise ValueError("rows is empty: pass longctx.block_costs([...]) for some lengths")

    x = [f"n = {r['n']}" for r in rows]
    fig = go.Figure()
    for part in longctx.BLOCK_PARTS:
        share = [100 * r[part] / r["total"] for r in rows]
        fig.add_trace(go.Bar(x=x, y=rounded(share, 2), name=tr(f"ch09.part_{part}"),
                             marker={"color": PART_COLORS[part],
                                     "pattern": {"shape": PART_PATTERNS[part]}},
                             text=[f"{s:.0f}%" for s in share], textposition="inside",
                             hovertemplate=tr("ch09.block_hover", x="%{x}", y="%{y:.1f}")
                             + "<extra></extra>"))
    fig.add_trace(go.Scatter(x=x, y=rounded([100 * r["attention_flop_share"] for r in rows], 2),
                             mode="lines+markers", name=tr("ch09.block_flop_line"),
                             line={"color": "#000000", "dash": "dash"},
                             marker={"symbol": "diamond", "size": 9}))
    fig.update_layout(barmode="stack", height=390,
                      title={"text": tr("ch09.block_title"), "font": {"size": 14}},
                      yaxis={"title": tr("ch09.block_yaxis"), "range": [0, 100]},
                      # the legend clear of the n = … labels (at -0.15 of a 390 px figure they
                      # stood 1.8 px apart in a wide fallback font on a phone)
                      legend={"orientation": "h", "y": -0.18, "x": 0, "font": {"size": 12}},
                      # room for a title of two lines above the top tick label ("100")
                      margin={"l": 60, "r": 20, "t": 64, "b": 40})
    first, last = rows[0], rows[-1]
    return describe(fig, alt=tr("ch09.block_alt"), caption=tr(
        "ch09.block_caption", n0=first["n"], n1=last["n"],
        a0=100 * first["attention"] / first["total"], a1=100 * last["attention"] / last["total"],
        f0=100 * first["attention_flop_share"], f1=100 * last["attention_flop_share"]))


def window_diagram(n: int = 8, window: int = 2) -> go.Figure:
    """Which keys each query scores, full vs a window of half-width ``window`` on ``n`` tokens,
    drawn from :func:`book.ideas.longctx.window_mask` (the mask the chapter computes with)."""
    n = validate.integer("n", n, low=2, high=10)
    window = validate.integer("window", window, low=0)
    mask = longctx.window_mask(n, window).numpy()
    return describe(diagrams.window_grid(mask, window),
                    alt=tr("ch09.diagram_alt", n=n, w=window),
                    caption=tr("ch09.diagram_caption", full=n * n, band=int(mask.sum()), w=window,
                               most=int(mask.sum(axis=1).max()), n=n))


def _window_titles(data: dict) -> list[str]:
    big, full, banded = data["cost_ns"][-1], data["full"][-1], data["banded"][-1]
    return [tr("ch09.window_title_pattern", window=data["window"], keys=data["keys"].max(),
               n=data["n"]),
            tr("ch09.window_title_cost", ratio=full / banded, n=big)]


def window_figure(n: int = WINDOW_PATTERN_N, windows=WINDOW_STEPS,
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
    fig = _window_plot(frames[start], n, cost_ns)
    positions = list(range(n))
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    steps = []
    for w, data in zip(windows, frames, strict=True):
        annotations = [dict(a, text=t) for a, t in zip(base, _window_titles(data), strict=True)]
        steps.append({"label": str(w), "method": "update",
                      "args": [{"z": [data["levels"].tolist(), None],
                                "y": [positions, data["banded"]]},
                               {"annotations": annotations}, [0, 2]]})
    slider = {**make_slider(steps, tr("ch09.window_slider"), active=start),
              "pad": {"t": 0, "b": 34}, "y": 1.0, "yanchor": "bottom"}
    fig.update_layout(sliders=[slider])
    return fig


def _window_plot(first: dict, n: int, cost_ns) -> go.Figure:
    """The window's pattern over ``n`` positions and the cost panel, drawn for ``first`` (what
    every face of the window explorer starts from)."""
    positions = list(range(n))  # numeric axes: plotly thins the ticks on a narrow screen
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.14, row_heights=[0.78, 0.22],
                        subplot_titles=_window_titles(first))
    fig.update_annotations(font_size=12)  # before the steps copy the annotations
    # the cost panel's title a little higher: its top tick label ("1B") reaches half a line
    # above the panel, into a title as wide as the panel
    fig.layout.annotations[1].yshift = 8
    fig.add_trace(go.Heatmap(
        z=first["levels"].tolist(), x=positions, y=positions, zmin=0, zmax=2,
        colorscale=WINDOW_COLORSCALE, xgap=1, ygap=1, showscale=False,
        hovertemplate=tr("ch09.window_hover", x="%{x}", y="%{y}", z="%{z}")
        + "<extra></extra>"), row=1, col=1)
    for key, name in (("full", "ch09.window_full"), ("banded", "ch09.window_banded")):
        fig.add_trace(go.Scatter(x=first["cost_ns"], y=first[key], mode="lines+markers",
                                 name=tr(name), legendgroup="cost",
                                 line={"color": METHOD_COLORS[key], "dash": METHOD_DASH[key]},
                                 marker={"symbol": METHOD_MARKER[key]}), row=2, col=1)
    for level in (2, 1, 0):  # legend keys for the heatmap's three colours
        fig.add_trace(go.Scatter(
            x=[None], y=[None], mode="markers", name=tr(f"ch09.{WINDOW_LEVELS[level]}"),
            legendgroup="grid",
            marker={"symbol": "square", "size": 13, "color": WINDOW_COLORSCALE[2 * level][1],
                    "line": {"color": "#1f3b73", "width": 1}}, hoverinfo="skip"),
            row=1, col=1)
    fig.update_xaxes(title_text=tr("ch09.key_position"), tickfont_size=10, showgrid=False,
                     zeroline=False, constrain="domain", scaleanchor="y", row=1, col=1)
    fig.update_yaxes(title_text=tr("ch09.query_position"), autorange="reversed", tickfont_size=10,
                     showgrid=False, zeroline=False, constrain="domain", row=1, col=1)
    fig.update_xaxes(row=2, col=1, **log2_n_axis(cost_ns))
    fig.update_yaxes(type="log", title_text=tr("ch09.entries_axis"), row=2, col=1)
    fig.update_layout(height=850,
                      # the legend sits at the figure's bottom edge, one key per row, in a
                      # margin tall enough for its five rows (a horizontal legend that wraps
                      # was placed as if it had fewer rows, and its last key was cut off)
                      legend={"orientation": "v", "x": 0, "y": 0, "yref": "container",
                              "yanchor": "bottom", "traceorder": "normal",
                              "font": {"size": 12}, "tracegroupgap": 0},
                      margin={"l": 60, "r": 20, "t": 90, "b": 150})
    # one caption for every w and n the controls reach: the numbers are the first state's
    return describe(fig, alt=tr("ch09.window_alt"), caption=tr(
        "ch09.window_caption", w=first["window"], n=first["n"], big=first["cost_ns"][-1],
        full=numbers.large(first["full"][-1]), banded=numbers.large(first["banded"][-1])))


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

WINDOW_LIVE_MAX_N = 96  # a 96 × 96 grid redraws well under 50 ms
WINDOW_LIVE_MAX_W = 64


def _window_redraw(fig, window, n):
    data = longctx.window_data(n, window)
    heat = fig.data[0]
    positions = list(range(n))
    heat.z, heat.x, heat.y = data["levels"].tolist(), positions, positions
    fig.data[2].y = data["banded"]
    for annotation, title in zip(fig.layout.annotations, _window_titles(data), strict=True):
        annotation.text = title


def _window_controls() -> list:
    return [controls.Slider(name="window", label=tr("ch09.live_window"), low=0,
                            high=WINDOW_LIVE_MAX_W, value=4),
            controls.Slider(name="n", label=tr("ch09.live_tokens"), low=8,
                            high=WINDOW_LIVE_MAX_N, value=WINDOW_PATTERN_N)]


def _window_first_plot() -> go.Figure:
    """The window explorer drawn at its controls' first state."""
    first = controls.first_values(_window_controls())
    return _window_plot(longctx.window_data(first["n"], first["window"], longctx.WINDOW_COST_NS),
                        first["n"], longctx.WINDOW_COST_NS)


def _window_adds() -> str:
    return tr("ch09.live_adds_window", w=WINDOW_LIVE_MAX_W, n=WINDOW_LIVE_MAX_N)


def window_live() -> LiveExplorer:
    """Any window half-width 0–64 over 8–96 tokens: the allowed pattern, what the banded
    version computes, and the score entries of both versions against n."""
    return LiveExplorer(_window_first_plot(), widgets_for(_window_controls()), _window_redraw,
                        adds=_window_adds())


# --- in-page explorer (the book's HTML: book/face/inpage/ recomputes it, no kernel) ----------

def window_inpage() -> inpage.InPage:
    """The window explorer in the book's page: the live face's controls and first state. The
    grid shows at most WINDOW_PATTERN_N positions at a time (cells stay legible), dragged to pan."""
    fig = _window_first_plot()
    last = longctx.WINDOW_COST_NS[-1]
    titles = inpage.templates(fig, {
        "annotations[0]": ("ch09.window_title_pattern", {
            "window": str(WINDOW_LIVE_MAX_W), "keys": str(WINDOW_LIVE_MAX_N),
            "n": str(WINDOW_LIVE_MAX_N)}),
        "annotations[1]": ("ch09.window_title_cost", {"ratio": str(last), "n": str(last)})})
    fig.layout.dragmode = "pan"
    spec = {"cost_ns": list(longctx.WINDOW_COST_NS), "view": WINDOW_PATTERN_N,
            "titles": [titles["annotations[0]"], titles["annotations[1]"]],
            "status": tr("ch09.inpage_window_shown", shown="{shown}", n="{n}")}
    return inpage.InPage("window", fig, inpage.page_controls(_window_controls()), spec,
                         _window_adds())


def window_explorer():
    """The window explorer: recomputed in the book's page, the live explorer in Jupyter."""
    return inpage.either(window_live, window_inpage)


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

def _ch9_keys_per_query() -> int:
    return int(longctx.window_keys(1001, 128)[500])  # a query far from both ends


def _ch9_keys_answer() -> Answer:
    expected = _ch9_keys_per_query()
    return Answer("number", [
        (Is.equal(expected), right("ch09.ex_keys_ok")),
        (Is.equal(expected - 1), wrong("ch09.ex_keys_almost")),
        (Is.equal(128 + 1), wrong("ch09.ex_keys_causal")),
        (Is.equal(128), wrong("ch09.ex_keys_one_side"))], otherwise=wrong("ch09.ex_keys_hint"))


value_exercise("ch9.keys_per_query", "Keys per query in a sliding window with w = 128",
               reference=_ch9_keys_per_query, mistakes=lambda: [128, 256, 129, 2048],
               answer=_ch9_keys_answer)


def _ch9_crossover(d_model: int = 768) -> int:
    """The n at which attention's FLOPs equal the rest of the block's (n = 6 · d_model)."""

    return next(n for n in range(1, 100 * d_model)
                if 2 * longctx.block_flops(n, d_model)["attention"]
                >= sum(longctx.block_flops(n, d_model).values()))


value_exercise("ch9.crossover", "At what n does attention take half of a block's FLOPs "
               "(d_model = 768)?", reference=_ch9_crossover,
               mistakes=lambda: [768, 3072, 1536, 512],
               answer=lambda: Answer("number", [
                   (Is.equal(_ch9_crossover()), right("ch09.ex_cross_ok")),
                   (Is.equal(768), wrong("ch09.ex_cross_d")),
                   (Is.equal(4 * 768), wrong("ch09.ex_cross_ff"))],
                   otherwise=wrong("ch09.ex_cross_hint")))


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
        return False, tr("ch09.ex_mask_callable")
    for n, w in [(6, 1), (5, 0), (7, 2), (4, 10), (1, 3)]:
        got = call(func, n, w)
        want = _ch9_window_mask(n, w)
        if got.shape != want.shape:
            return False, tr("ch09.ex_mask_shape", n=n, shape=got.shape)
        if np.array_equal(got != 0, want):
            continue
        if np.array_equal(got != 0, _ch9_window_mask(n, w - 1)) and w > 0:
            return False, tr("ch09.ex_mask_off_by_one")
        if np.array_equal(got != 0, np.tril(want)):
            return False, tr("ch09.ex_mask_causal")
        return False, tr("ch09.ex_mask_wrong", n=n, w=w)
    return True, tr("ch09.ex_mask_ok")


# --- concept questions (book/face/questions.py; their words: book/strings/ch09.toml) ---
questions.question("ch09.double", kind="predict", right=3,
                   answered_in="c007b")
questions.question("ch09.fused", kind="explain", right=2)
questions.question("ch09.bug_window", kind="bug", right=1, code="""\
scores = q @ k.T / math.sqrt(d_k)
far = (i - j).abs() > w
scores = scores.masked_fill(far, float("-inf"))
weights = scores.softmax(dim=-1)
""")


# --- the words the lesson's cells pick from their measured numbers (in the reader's language) ---

def cost_title(measure: str) -> str:
    """The title of :func:`attention_cost_figure` for ``measure`` "memory" or "time"."""
    return tr(f"ch09.title_{validate.choice('measure', measure, ('memory', 'time'))}")


def time_shape(slope: float) -> str:
    """What the fitted time slope of full attention says: steeper than 2 (above 2.25),
    flatter (below 1.75) or close to 2."""
    slope = validate.real("slope", slope)
    if slope > 2.25:
        return tr("ch09.shape_steep")
    if slope < 1.75:
        return tr("ch09.shape_flat")
    return tr("ch09.shape_two")


def attention_note(ratio: float) -> str:
    """How attention's time grew from 512 to 1024 tokens (``ratio``) against the 4 that the
    arithmetic predicts: more (above 4.5), less (below 3.5) or close to it."""
    ratio = validate.real("ratio", ratio)
    if ratio > 4.5:
        return tr("ch09.attn_more")
    if ratio < 3.5:
        return tr("ch09.attn_less")
    return tr("ch09.attn_four")


def half_time(lengths) -> str:
    """The first of ``lengths`` at which attention takes half the block's time, or none."""
    lengths = list(lengths)
    return tr("ch09.half_at", n=lengths[0]) if lengths else tr("ch09.half_none")


def kernel_verdict(window_ms: float, banded_ms: float) -> str:
    """Is SDPA with a window mask faster than the banded version (times in ms)?"""
    return tr("ch09.window_sdpa_faster" if window_ms < banded_ms else "ch09.window_sdpa_slower")
