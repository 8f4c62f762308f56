"""Chapter 10 (beyond plain attention): its static figures, live explorers and exercises."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go

from book.face import questions
from book.face.checks import Answer, Is, call, exercise, right, value_exercise, wrong
from book.face.figures import describe
from book.face.live import LiveExplorer
from book.face.plotting import RUN_DASHES, make_slider, rounded
from book.ideas import beyond, longctx
from book.kit import i18n

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

PATTERN_KINDS = ("full", "window", "dilated", "hybrid")


def _tr(msg_id: str, **values) -> str:
    return i18n.tr(f"ch10.{msg_id}", **values)


def kind_label(kind: str) -> str:
    """The name of an attention variant ("full", "window", "dilated", "hybrid", "linear") in
    the book's language; any other name is returned as it is."""
    return _tr(f"kind_{kind}") if f"ch10.kind_{kind}" in i18n.table() else kind


def _pattern_title(kind: str, window: int, data: dict) -> str:
    return _tr("pattern_title", kind=kind_label(kind), w=window, mean=data["mean_keys"],
               n=data["n"], most=data["max_keys"])


def _pattern_steps(kind: str, windows, n: int) -> list[dict]:
    """The slider's steps for one variant: each step redraws the grid and its title."""
    steps = []
    for w in windows:
        data = beyond.pattern_data(kind, w, n)
        steps.append({"label": str(w), "method": "update",
                      "args": [{"z": [data["z"].tolist()]},
                               {"title.text": _pattern_title(kind, w, data)}]})
    return steps


def _pattern_plot(window: int, n: int) -> go.Figure:
    """The sliding window's grid of ``n`` positions at ``window``, its axes and title, without
    the controls (what both faces start from)."""
    positions = list(range(n))
    first = beyond.pattern_data("window", window, n)
    fig = go.Figure(go.Heatmap(z=first["z"].tolist(), x=positions, y=positions, zmin=0, zmax=1,
                               colorscale=[[0, "#f4f4f4"], [1, "#1a3d6e"]], showscale=False,
                               xgap=1, ygap=1,
                               hovertemplate=_tr("pattern_hover", query="%{y}", key="%{x}",
                                                 value="%{z}") + "<extra></extra>"))
    axis = {"tickmode": "array", "tickvals": positions, "tickfont": {"size": 10},
            "showgrid": False, "zeroline": False, "constrain": "domain"}
    fig.update_layout(
        title={"text": _pattern_title("window", window, first), "font": {"size": 13},
               "x": 0.02, "xanchor": "left", "y": 0.98, "yanchor": "top"},
        yaxis={**axis, "autorange": "reversed", "title": _tr("pattern_y")},
        xaxis={**axis, "title": _tr("pattern_x"), "tickangle": -90},
        height=680, margin={"t": 120, "l": 60, "r": 20, "b": 20})
    # one caption for every variant and window: the keys a query sees in each variant at
    # this window (what the menu draws), stated with the window and length they hold for
    seen = _tr("list_sep").join(
        _tr("kind_keys", kind=kind_label(kind), keys=beyond.pattern_data(kind, window, n)[
            "mean_keys"]) for kind in PATTERN_KINDS)
    return describe(fig, alt=_tr("pattern_alt", n=n),
                    caption=_tr("pattern_caption", w=window, n=n, seen=seen))


def pattern_figure(windows=(1, 2, 3, 4), n: int = beyond.PATTERN_N) -> go.Figure:
    """Static explorer: a dropdown over the variants and a slider over the window size.

    One heatmap; the dropdown swaps in its variant's grid, title and slider steps (and puts the
    slider back at the first window), so the title always names what is drawn."""
    windows = list(windows)
    if not windows:
        raise ValueError("windows must hold at least one window size, e.g. (1, 2, 3, 4)")
    fig = _pattern_plot(windows[0], n)
    menu = []
    for kind in PATTERN_KINDS:
        data = beyond.pattern_data(kind, windows[0], n)
        menu.append({"label": kind_label(kind), "method": "update",
                     "args": [{"z": [data["z"].tolist()]},
                              {"title.text": _pattern_title(kind, windows[0], data),
                               "sliders[0].steps": _pattern_steps(kind, windows, n),
                               "sliders[0].active": 0}]})
    fig.update_layout(
        updatemenus=[{"buttons": menu, "active": 1, "x": 0, "xanchor": "left", "y": 1.0,
                      "yanchor": "bottom", "pad": {"b": 8}}],
        sliders=[make_slider(_pattern_steps("window", windows, n), _tr("pattern_slider"))])
    return fig


def variant_cost_figure(ns, curves: dict[str, list[float]], *, unit: str,
                        title: str) -> go.Figure:
    """Log-log cost of each method against the sequence length."""
    palette = {"full": "#b3261e", "window": "#1a56a8", "dilated": "#5f8f3e",
               "hybrid": "#8a5cc2", "linear": "#7a7a7a"}
    symbols = ("circle", "square", "diamond", "triangle-up", "x", "star")
    # a dash and a marker of its own per variant: the lines differ without their colours
    fig = go.Figure([go.Scatter(x=list(ns), y=rounded(v, 9), mode="lines+markers",
                                name=kind_label(name),
                                line={"color": palette.get(name),
                                      "dash": RUN_DASHES[i % len(RUN_DASHES)]},
                                marker={"symbol": symbols[i % len(symbols)]})
                     for i, (name, v) in enumerate(curves.items())])
    # the legend under the plot: at its right it took a third of a phone's width, and the
    # last two lengths' ticks ("1024", "2048") ran together
    fig.update_layout(xaxis={"type": "log", "title": _tr("cost_x"), "tickvals": list(ns),
                             "ticktext": [str(n) for n in ns]},
                      yaxis={"type": "log", "title": unit}, title=title, height=440,
                      legend={"orientation": "h", "x": 0, "y": -0.3, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 60, "b": 60})
    # the slopes fitted on the longer lengths (the last three), as the chapter's text fits them
    ns = list(ns)
    tail = max(len(ns) - 3, 0)
    slopes = _tr("list_sep").join(
        _tr("kind_slope", kind=kind_label(name),
            slope=longctx.fit_exponent(ns[tail:], list(v)[tail:]))
        for name, v in curves.items()) if len(ns) >= 2 else ""
    return describe(fig, alt=_tr("cost_alt", what=title, k=len(curves)),
                    caption=_tr("cost_caption", n=ns[tail], slopes=slopes, last=ns[-1],
                                unit=unit, at_last=_tr("list_sep").join(
                                    _tr("kind_value", kind=kind_label(name),
                                        value=_plain_number(list(v)[-1]))
                                    for name, v in curves.items())))


def _plain_number(value: float) -> str:
    """A cost as a caption writes it: "4,096", "12.3", "0.042" (three significant digits,
    no exponent)."""
    value = float(value)
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) >= 1e-3 else f"{value:.1e}"


def memory_figure(ns, mib: dict[str, list[float]]) -> go.Figure:
    """:func:`variant_cost_figure` of the peak memory (MiB) of one attention call."""
    return variant_cost_figure(ns, mib, unit=_tr("memory_y"), title=_tr("memory_title"))


def time_figure(ns, ms: dict[str, list[float]]) -> go.Figure:
    """:func:`variant_cost_figure` of the time (ms) of one attention call."""
    return variant_cost_figure(ns, ms, unit=_tr("time_y"), title=_tr("time_title"))


def first_win(lengths: list[int]) -> int | str:
    """The first of ``lengths`` (those where linear attention was faster), or "never"."""
    return lengths[0] if lengths else _tr("never")


def short_time_verdict(fastest: str) -> str:
    """The prose's words on the shortest length: was full attention (``fastest`` == "full")
    also the fastest there?"""
    if fastest == "full":
        return _tr("short_fastest")
    return _tr("short_not_fastest", fastest=kind_label(fastest))


def variant_name(spec: str) -> str:
    """The name of a TinyEncoder attention spec ("scratch", "window-2", "dilated-2x2",
    "hybrid-2+1", "linear") in the book's language, with its settings."""
    return _tr(f"name_{spec.split('-')[0]}")


def accuracy_table(results: dict[str, float]) -> str:
    """The held-out accuracy of each variant (``results``: spec -> accuracy) as a Markdown
    table."""
    return _tr("table_header") + "\n|---|---|\n" + "".join(
        f"| {variant_name(s)} | {100 * a:.1f} % |\n" for s, a in results.items())


def accuracy_claim(results: dict[str, float]) -> str:
    """The summary's claim about full attention ("scratch") from ``results``: the variants
    that scored higher, or that none did."""
    ahead = [variant_name(s) for s in results if results[s] > results["scratch"]]
    if ahead:
        return _tr("claim_behind", ahead=_tr("list_sep").join(ahead))
    return _tr("claim_best")


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def pattern_live() -> LiveExplorer:
    """Any variant, window, dilation, number of global tokens and length (up to 128)."""
    def redraw(fig, kind, window, dilation, n_global, n):
        data = beyond.pattern_data(kind, window, n, dilation, min(n_global, n))
        positions = list(range(n))
        trace = fig.data[0]
        trace.z, trace.x, trace.y = data["z"], positions, positions
        ticks = positions if n <= beyond.PATTERN_N else None  # longer: plotly picks the ticks
        fig.layout.xaxis.tickvals = fig.layout.yaxis.tickvals = ticks
        fig.layout.xaxis.tickmode = fig.layout.yaxis.tickmode = "array" if ticks else "auto"
        fig.layout.title.text = _pattern_title(kind, window, data)
        # a slider that changes nothing for this variant is greyed out, not left to mislead
        controls["dilation"].disabled = kind != "dilated"
        controls["n_global"].disabled = kind != "hybrid"

    controls = {
        "kind": widgets.Dropdown(options=[(kind_label(k), k) for k in PATTERN_KINDS],
                                 value="dilated", description=_tr("live_variant")),
        "window": widgets.IntSlider(value=2, min=0, max=16, description=_tr("live_window")),
        "dilation": widgets.IntSlider(value=2, min=1, max=8,
                                      description=_tr("live_dilation")),
        "n_global": widgets.IntSlider(value=2, min=0, max=8, description=_tr("live_global")),
        "n": widgets.IntSlider(value=32, min=1, max=128, description=_tr("live_n")),
    }
    explorer = LiveExplorer(_pattern_plot(2, beyond.PATTERN_N), controls, redraw,
                            rows=[["kind", "n", "window"], ["dilation", "n_global"]],
                            adds=_tr("live_adds_pattern"))
    explorer.update()
    return explorer


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

value_exercise("ch10.dilated_keys", "Keys seen by a query: dilated attention, w = 2, r = 3",
               reference=lambda: 2 * 2 + 1, mistakes=lambda: [3, 7, 13, 6],
               answer=lambda: Answer("number", [
                   (Is.equal(len(beyond.dilated_offsets(2, 3))), right("ch10.ex_keys_ok"))],
                   otherwise=wrong("ch10.ex_keys_hint")))

value_exercise("ch10.dilated_reach", "Farthest key of dilated attention, w = 2, r = 3",
               reference=lambda: 6, mistakes=lambda: [2, 3, 5, 12],
               answer=lambda: Answer("number", [
                   (Is.equal(int(beyond.dilated_offsets(2, 3).max())), right("ch10.ex_reach_ok"))],
                   otherwise=wrong("ch10.ex_reach_hint")))

value_exercise("ch10.linear_state", "Size of φ(K)ᵀV for d_k = d_v = 64 and 10 000 tokens",
               reference=lambda: 64 * 64, mistakes=lambda: [10_000 * 64, 10_000 ** 2, 128, 64],
               answer=lambda: Answer("number", [
                   (Is.one_of(10_000 * 64, 10_000 ** 2), wrong("ch10.ex_state_grows")),
                   (Is.equal(64 * 64), right("ch10.ex_state_ok"))],
                   otherwise=wrong("ch10.ex_state_hint")))


def _dilated_mask_reference(n, w, r):
    return beyond.dilated_mask(n, w, r).numpy()


@exercise("ch10.dilated_mask", "Write dilated_mask(n, w, r)",
          reference=lambda: _dilated_mask_reference,
          mistakes=lambda: [lambda n, w, r: np.abs(np.subtract.outer(range(n), range(n))) <= w,
                            lambda n, w, r: np.abs(np.subtract.outer(range(n), range(n)))
                            % r == 0, "mask"])
def _ch10_dilated_mask(func):
    if not callable(func):
        return False, _tr("ex_mask_callable")
    for n, w, r in [(10, 2, 3), (7, 1, 1), (12, 0, 4), (1, 3, 2)]:
        got = call(func, n, w, r)
        want = _dilated_mask_reference(n, w, r).astype(float)
        if got.shape != want.shape:
            return False, _tr("ex_mask_shape", n=n, want=want.shape, got=got.shape)
        if not np.array_equal(got != 0, want != 0):
            return False, _tr("ex_mask_wrong", n=n, w=w, r=r)
    return True, _tr("ex_mask_ok")


# --- concept questions (book/face/questions.py; their words: book/strings/ch10.toml) ---
questions.question("ch10.linear_equal", kind="predict", right=1,
                   answered_in="c003")
questions.question("ch10.short", kind="explain", right=2)
questions.question("ch10.bug_phi", kind="bug", right=3, code="""\
phi = lambda x: x
num = phi(q) @ (phi(k).T @ v)
den = phi(q) @ phi(k).sum(0)
out = num / den[:, None]
""")
