"""Chapter 2 (why scores are divided by √d_k): its static figures, live explorers and exercises."""

from __future__ import annotations

import inspect

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.face import controls, inpage, questions
from book.face.checks import call, exercise, number_answer, value_exercise
from book.face.display import table
from book.face.figures import describe
from book.face.live import LiveExplorer, widgets_for
from book.face.plotting import SCALE_COLORS, make_slider, rounded, wrap
from book.ideas import scaling
from book.ideas.attention import softmax
from book.kit import validate
from book.kit.i18n import tr

LIVE_MAX_D_K = 512  # the live sliders' top: every redraw stays under 50 ms on 2 CPU cores
# The pairs per width of the chapter's sweep (book.ideas.scaling.sweep): the d_k sampler opens
# on those very pairs at d_k = 64, so its first title reads the variance the prose quotes.
SWEEP_PAIRS = inspect.signature(scaling.dot_products).parameters["n"].default
# Side margins of the two-panel figures: plotly's 80 px each side leave two 90 px panels on a
# phone, too narrow for the panel titles; this is room for the y axis title and tick labels.
PANEL_MARGIN = {"l": 64, "r": 16}
JACOBIAN_Y_COLUMNS = 26  # the jacobian figure's y title in lines this long: it fits the axis
# Each scaling's line style and marker besides its colour: the series read apart in greyscale
# (WCAG 1.4.1, no information by colour alone); the softmax row's unscaled bars are hatched.
SCALE_DASHES = {"none": "solid", "sqrt": "dash", "linear": "dot"}
SCALE_MARKERS = {"none": "circle", "sqrt": "square", "linear": "diamond"}
SCALE_PATTERNS = {"none": "/", "sqrt": ""}

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------


def scale_name(scale: str) -> str:
    """The legend name of a scaling ("none", "sqrt", "linear") in the book's language."""
    validate.choice("scale", scale, list(scaling.SCALE_NAMES))
    return tr(f"ch02.scale_{scale}")


def _dk_titles(data: dict, d_k: int) -> list[str]:
    return [tr("ch02.dk_raw_title", d_k=d_k, var=data["raw_var"]),
            tr("ch02.dk_scaled_title", var=data["scaled_var"])]


def _dk_plot(d_ks) -> tuple[go.Figure, list[dict]]:
    """The two histograms at ``d_ks[0]``, their axes fixed for every d_k of ``d_ks`` (what
    every face of the d_k sampler starts from), and the data of each d_k."""
    first = scaling.dk_data(d_ks[0])
    fig = make_subplots(rows=1, cols=2, subplot_titles=_dk_titles(first, d_ks[0]),
                        horizontal_spacing=0.1)
    fig.add_trace(go.Bar(x=rounded(first["raw_x"]), y=rounded(first["raw_y"]),
                         name=tr("ch02.raw"),
                         marker_color=SCALE_COLORS["none"]), row=1, col=1)
    fig.add_trace(go.Bar(x=rounded(first["scaled_x"]), y=rounded(first["scaled_y"]),
                         name=tr("ch02.scaled"), marker_color=SCALE_COLORS["sqrt"]), row=1, col=2)
    fig.update_annotations(yshift=8)
    frames = [first if d_k == d_ks[0] else scaling.dk_data(d_k) for d_k in d_ks]
    # one x range and one y range for every d_k: the raw histogram visibly widens and flattens
    # as d_k grows, instead of the axis rescaling to hide it
    reach = max(float(data["range"]) for data in frames)
    top_raw = 1.05 * max(float(np.max(data["raw_y"])) for data in frames)
    top_scaled = 1.05 * max(float(np.max(data["scaled_y"])) for data in frames)
    fig.update_xaxes(ticks="outside", ticklen=6)
    fig.update_xaxes(title_text="q·k", range=[-reach, reach],
                     row=1, col=1)
    fig.update_xaxes(title_text="q·k / √d_k", range=[-4, 4], row=1, col=2)
    fig.update_yaxes(title_text=tr("ch02.density"), range=[0, top_raw], row=1, col=1)
    fig.update_yaxes(range=[0, top_scaled], row=1, col=2)
    fig.update_layout(showlegend=False, bargap=0.05, height=480,
                      margin={"t": 90, "b": 40, **PANEL_MARGIN})
    describe(fig, alt=tr("ch02.dk_alt"), caption=tr("ch02.dk_caption"))
    return fig, frames


def dk_figure(d_ks=None) -> go.Figure:
    """Static explorer: slider over d_k; raw dot products spread out, scaled ones stay put."""
    d_ks = list(scaling.D_K_STEPS if d_ks is None else d_ks)
    fig, frames = _dk_plot(d_ks)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    steps = []
    for d_k, data in zip(d_ks, frames, strict=True):
        annotations = [dict(a, text=t) for a, t in zip(base, _dk_titles(data, d_k), strict=True)]
        steps.append({"label": str(d_k), "method": "update",
                      "args": [{"x": [rounded(data["raw_x"]), rounded(data["scaled_x"])],
                                "y": [rounded(data["raw_y"]), rounded(data["scaled_y"])]},
                               {"annotations": annotations}]})
    fig.update_layout(sliders=[make_slider(steps, "d_k = ")])
    return fig


def _softmax_row_plot(d_k: int, n_keys: int) -> go.Figure:
    """One softmax row at ``d_k``, unscaled and scaled (what every face of it starts from)."""
    keys = [f"k{j + 1}" for j in range(n_keys)]
    first = scaling.softmax_row_data(d_k, n_keys)
    fig = go.Figure()
    for scale in ("none", "sqrt"):
        fig.add_trace(go.Bar(x=keys, y=rounded(first[scale]), name=scale_name(scale),
                             marker={"color": SCALE_COLORS[scale],
                                     "pattern": {"shape": SCALE_PATTERNS[scale]}}))
    fig.update_layout(barmode="group", title=_row_title(first, d_k), height=420,
                      yaxis={"title": tr("ch02.attention_weight"), "range": [0, 1]},
                      # the labels a little below the axis: "k1" clear of the y axis' "0"
                      xaxis={"title": tr("ch02.key"), "ticklabelstandoff": 6},
                      legend={"orientation": "h", "y": 1.12})
    return describe(fig, alt=tr("ch02.row_alt"), caption=tr("ch02.row_caption"))


def softmax_row_figure(d_ks=None, n_keys: int = 16) -> go.Figure:
    """Static explorer: one softmax row, unscaled vs scaled, as d_k grows."""
    d_ks = list(scaling.D_K_STEPS if d_ks is None else d_ks)
    fig = _softmax_row_plot(d_ks[0], n_keys)
    steps = []
    for d_k in d_ks:
        data = scaling.softmax_row_data(d_k, n_keys)
        steps.append({"label": str(d_k), "method": "update",
                      "args": [{"y": [rounded(data["none"]), rounded(data["sqrt"])]},
                               {"title.text": _row_title(data, d_k)}]})
    fig.update_layout(sliders=[make_slider(steps, "d_k = ")])
    return fig


def _row_title(data: dict, d_k: int) -> str:
    return tr("ch02.row_title", d_k=d_k, none=data["none"].max(), sqrt=data["sqrt"].max())


def _log2_axis(d_ks) -> dict:
    shown = list(d_ks)[::2] if len(d_ks) > 6 else list(d_ks)  # room for each label on a phone
    return {"type": "log", "title": tr("ch02.log_axis"), "tickvals": shown,
            "ticktext": [str(d) for d in shown]}


def variance_figure(sweep: dict) -> go.Figure:
    """Measured var(q·k) against d_k, with the line var = d_k."""
    d_ks = sweep["d_k"]
    fig = go.Figure([go.Scatter(x=d_ks, y=d_ks, mode="lines", name=tr("ch02.theory"),
                                line={"dash": "dash", "color": "#7a7a7a"}),
                     go.Scatter(x=d_ks, y=rounded(sweep["variance"]), mode="markers",
                                name=tr("ch02.measured"), marker={"size": 9,
                                                         "color": SCALE_COLORS["none"]})])
    fig.update_layout(xaxis=_log2_axis(d_ks), yaxis={"type": "log", "title": "var(q·k)"},
                      height=380, title=tr("ch02.variance_title"),
                      # inside the plot's empty top-left corner: no room taken from the plot
                      legend={"x": 0.02, "y": 0.98, "xanchor": "left", "yanchor": "top",
                              "bgcolor": "rgba(255,255,255,0.7)"})
    return describe(fig, alt=tr("ch02.variance_alt", low=d_ks[0], high=d_ks[-1]),
                    caption=tr("ch02.variance_caption", n=SWEEP_PAIRS, low=d_ks[0],
                               var_low=sweep["variance"][0], high=d_ks[-1],
                               var_high=sweep["variance"][-1]))


def saturation_figure(sweep: dict) -> go.Figure:
    """Largest weight and entropy of softmax rows against d_k, for the three scalings."""
    d_ks = sweep["d_k"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[tr("ch02.mean_largest"),
                                                        tr("ch02.mean_entropy")])
    for scale in scaling.SCALES:
        style = {"line": {"color": SCALE_COLORS[scale], "dash": SCALE_DASHES[scale]},
                 "marker": {"symbol": SCALE_MARKERS[scale], "size": 7}}
        fig.add_trace(go.Scatter(x=d_ks, y=rounded(sweep["max_weight"][scale]),
                                 mode="lines+markers",
                                 name=scale_name(scale), legendgroup=scale, **style),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=d_ks, y=rounded(sweep["entropy"][scale]), mode="lines+markers",
                                 name=scale_name(scale), legendgroup=scale,
                                 showlegend=False, **style), row=1, col=2)
    fig.add_hline(y=sweep["uniform_entropy"], line_dash="dot", row=1, col=2,
                  annotation_text=tr("ch02.uniform_line"), annotation_position="bottom right")
    fig.update_xaxes(**_log2_axis(d_ks))
    fig.update_yaxes(title_text=tr("ch02.weight"), range=[0, 1.02], row=1, col=1)
    fig.update_yaxes(title_text=tr("ch02.nats"), row=1, col=2)
    # the legend at the foot of the figure: plotly keeps the plot and its x axes above it
    fig.update_layout(height=400, legend={"orientation": "h", "yref": "container", "y": 0,
                                          "yanchor": "bottom"},
                      margin={"b": 10, **PANEL_MARGIN})
    largest = {f"w_{s}": sweep["max_weight"][s][-1] for s in scaling.SCALES}  # at the top d_k
    return describe(fig, alt=tr("ch02.saturation_alt", n_keys=_n_keys(sweep)),
                    caption=tr("ch02.saturation_caption", d_k=d_ks[-1], **largest,
                               uniform_w=1 / _n_keys(sweep)))


def _n_keys(sweep: dict) -> int:
    """The number of keys per row the sweep used (its uniform entropy is ln n_keys)."""
    return round(float(np.exp(sweep["uniform_entropy"])))


def jacobian_figure(sweep: dict) -> go.Figure:
    """Size of softmax's Jacobian (the gradient that reaches the scores) against d_k."""
    d_ks = sweep["d_k"]
    fig = go.Figure([go.Scatter(x=d_ks, y=rounded(sweep["jacobian"][s], 6), mode="lines+markers",
                                name=scale_name(s),
                                line={"color": SCALE_COLORS[s], "dash": SCALE_DASHES[s]},
                                marker={"symbol": SCALE_MARKERS[s], "size": 7})
                     for s in scaling.SCALES])
    # the legend under the plot (beside it, it took half a phone's width) and the y title in
    # two lines: in one it ran past the plot's top into the title
    fig.update_layout(xaxis=_log2_axis(d_ks),
                      yaxis={"title": wrap(tr("ch02.jacobian_y"), JACOBIAN_Y_COLUMNS),
                             "rangemode": "tozero"},
                      legend={"orientation": "h", "yref": "container", "y": 0,
                              "yanchor": "bottom"},
                      height=420, title=tr("ch02.jacobian_title"),
                      margin={"l": 80, "r": 16, "b": 10})
    none, sqrt = sweep["jacobian"]["none"][-1], sweep["jacobian"]["sqrt"][-1]
    return describe(fig, alt=tr("ch02.jacobian_alt"),
                    caption=tr("ch02.jacobian_caption", d_k=d_ks[-1], none=none, sqrt=sqrt,
                               ratio=sqrt / none))


def exam_figure(d_k: int = 100, n_students: int = 8, seed: int = 5) -> go.Figure:
    """The 1000-point vs 100-point exam: the same ranking, a tenfold smaller spread."""
    d_k = validate.integer("d_k", d_k, low=1, high=scaling.MAX_D_K)
    row = scaling.score_rows(d_k, n_students, 1, seed)[0]
    students = [tr("ch02.student", i=i + 1) for i in range(n_students)]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=[
        tr("ch02.exam_1000", w=softmax(row).max()),
        tr("ch02.exam_100", d_k=d_k, root=float(np.sqrt(d_k)),
           w=softmax(row / np.sqrt(d_k)).max())])
    fig.add_trace(go.Bar(x=students, y=rounded(softmax(row)), marker_color=SCALE_COLORS["none"],
                         name=tr("ch02.raw")), row=1, col=1)
    fig.add_trace(go.Bar(x=students, y=rounded(softmax(row / np.sqrt(d_k))),
                         marker_color=SCALE_COLORS["sqrt"], name=tr("ch02.scaled")),
                  row=1, col=2)
    fig.update_yaxes(title_text=tr("ch02.softmax_weight"), range=[0, 1], row=1, col=1)
    fig.update_yaxes(range=[0, 1], row=1, col=2)
    # on end: at 45° the eight labels of a phone-wide panel touch their neighbours
    fig.update_xaxes(tickangle=-90)
    fig.update_layout(showlegend=False, height=420, margin={"t": 90, **PANEL_MARGIN})
    fig.update_annotations(font_size=12, yshift=8)
    return describe(fig, alt=tr("ch02.exam_alt", n=n_students, root=float(np.sqrt(d_k))),
                    caption=tr("ch02.exam_caption", raw=softmax(row).max(),
                               scaled=softmax(row / np.sqrt(d_k)).max(),
                               root=float(np.sqrt(d_k))))


def spread_table(sweep: dict, d_ks) -> object:
    """:func:`book.ideas.score_functions.spread_sweep`'s standard deviations as a Markdown table,
    one
    row per kind of score, one column per d_k."""
    d_ks = list(d_ks)
    names = {"additive": tr("ch02.kind_additive"), "bilinear": tr("ch02.kind_bilinear"),
             "dot": tr("ch02.kind_dot_raw"), "dot_scaled": tr("ch02.kind_dot_scaled")}
    if not isinstance(sweep, dict) or set(sweep) != set(names):
        raise ValueError("sweep must be the dict book.ideas.score_functions.spread_sweep(d_ks) "
                         f"returns, with the keys {sorted(names)}")
    if any(len(values) != len(d_ks) for values in sweep.values()):
        raise ValueError(f"sweep holds another number of widths than d_ks={d_ks}; pass the "
                         "d_ks the sweep was made with")
    return table([tr("ch02.spread_score")] + [tr("ch02.spread_col", d_k=d) for d in d_ks],
                 [[names[kind]] + list(sweep[kind]) for kind in names],
                 [""] + [".2f"] * len(d_ks))


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def _dk_redraw(fig, d_k, n):
    data = scaling.dk_data(d_k, n)
    fig.data[0].x, fig.data[0].y = data["raw_x"], data["raw_y"]
    fig.data[1].x, fig.data[1].y = data["scaled_x"], data["scaled_y"]
    for annotation, title in zip(fig.layout.annotations, _dk_titles(data, d_k), strict=True):
        annotation.text = title


def _dk_controls() -> list:
    """d_k and the number of pairs; the first state is the sweep's pairs at d_k = 64."""
    return [controls.Slider(name="d_k", label="d_k", low=1, high=LIVE_MAX_D_K, value=64,
                            page_high=scaling.MAX_D_K),
            controls.Slider(name="n", label=tr("ch02.samples"), low=100, high=SWEEP_PAIRS,
                            value=SWEEP_PAIRS, step=100)]


def dk_first_data() -> dict:
    """:func:`scaling.dk_data` of the d_k sampler's first state, what every face of it opens
    on (the page too: it draws its own pairs only once the reader moves a control)."""
    first = controls.first_values(_dk_controls())
    return {**scaling.dk_data(first["d_k"], first["n"]), **first}


def _dk_first_plot() -> go.Figure:
    """The d_k sampler's first state, its axes fixed for every d_k the live sliders reach."""
    fig = _dk_plot([1, LIVE_MAX_D_K])[0]
    _dk_redraw(fig, **controls.first_values(_dk_controls()))
    return fig


def dk_live() -> LiveExplorer:
    """Any d_k from 1 to 4096 and any sample size: histograms of raw and scaled q·k."""
    return LiveExplorer(_dk_first_plot(), widgets_for(_dk_controls()), _dk_redraw,
                        adds=tr("ch02.live_adds_dk", d_k=LIVE_MAX_D_K))


def _softmax_row_redraw(fig, d_k, n_keys, seed):
    data = scaling.softmax_row_data(d_k, n_keys, seed)
    keys = [f"k{j + 1}" for j in range(n_keys)]
    for trace, scale in zip(fig.data, ("none", "sqrt"), strict=True):
        trace.x, trace.y = keys, data[scale]
    fig.layout.title.text = _row_title(data, d_k)


def _softmax_row_controls() -> list:
    return [controls.Slider(name="d_k", label="d_k", low=1, high=LIVE_MAX_D_K, value=64,
                            page_high=scaling.MAX_D_K),
            controls.Slider(name="n_keys", label=tr("ch02.keys"), low=1, high=128, value=16),
            controls.Slider(name="seed", label=tr("ch02.seed"), low=0, high=99, value=3)]


def _softmax_row_first_plot() -> go.Figure:
    """The softmax row at the controls' first d_k and key count (the page redraws it at load
    with its own generator)."""
    first = controls.first_values(_softmax_row_controls())
    return _softmax_row_plot(first["d_k"], first["n_keys"])


def softmax_row_live() -> LiveExplorer:
    """One query over any number of keys at any d_k: how peaked is softmax, scaled or not?"""
    return LiveExplorer(_softmax_row_first_plot(), widgets_for(_softmax_row_controls()),
                        _softmax_row_redraw, adds=tr("ch02.live_adds_row"))


# --- in-page explorers (the book's HTML: book/face/inpage/ recomputes them, no kernel) ------

def dk_inpage() -> inpage.InPage:
    """The d_k sampler in the book's page: the live face's controls and first state (drawn
    here, with torch's pairs: the page does not redraw it at load), d_k up to 4096; once the
    reader moves a control, the page draws the q, k pairs from its own seeded generator."""
    fig = _dk_first_plot()
    titles = inpage.templates(fig, {
        "annotations[0]": ("ch02.dk_raw_title", {"d_k": str(scaling.MAX_D_K), "var": "99999.9"}),
        "annotations[1]": ("ch02.dk_scaled_title", {"var": "99.99"})})
    spec = {"seed": 0, "bins": len(fig.data[0].x), "redraw_at_load": False,
            "reach": scaling.raw_range(LIVE_MAX_D_K),
            "top": [fig.layout.yaxis.range[1], fig.layout.yaxis2.range[1]],
            "titles": [titles["annotations[0]"], titles["annotations[1]"]]}
    return inpage.InPage("dk", fig, inpage.page_controls(_dk_controls()), spec,
                         tr("ch02.live_adds_dk", d_k=LIVE_MAX_D_K))


def softmax_row_inpage() -> inpage.InPage:
    """One softmax row in the book's page: the live face's controls and first state, d_k up
    to 4096; the page draws the query and keys from its own seeded generator."""
    fig = _softmax_row_first_plot()
    title = inpage.templates(fig, {"title": ("ch02.row_title", {
        "d_k": str(scaling.MAX_D_K), "none": "1.00", "sqrt": "1.00"})})["title"]
    spec = {"title": title, "key": "k", "salt": 1, "redraw_at_load": True}
    return inpage.InPage("softmax_row", fig, inpage.page_controls(_softmax_row_controls()),
                         spec, tr("ch02.live_adds_row"))


def dk_explorer():
    """The d_k sampler: recomputed in the book's page, the live explorer in Jupyter."""
    return inpage.either(dk_live, dk_inpage)


def softmax_row_explorer():
    """One softmax row: recomputed in the book's page, the live explorer in Jupyter."""
    return inpage.either(softmax_row_live, softmax_row_inpage)


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

def _scaled_scores(q, k):
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    return q @ k.T / np.sqrt(q.shape[1])


value_exercise("ch2.variance", "Variance of q·k for d_k = 64 with unit-variance entries",
               reference=lambda: 64.0, mistakes=lambda: [8, 1, 4096],
               answer=lambda: number_answer(64.0, 0.05, "ch02.variance_hint", "ch02.correct"))

value_exercise("ch2.divisor", "What do you divide the scores by when d_k = 256?",
               reference=lambda: float(np.sqrt(256)), mistakes=lambda: [256, 4],
               answer=lambda: number_answer(float(np.sqrt(256)), 1e-6, "ch02.divisor_hint",
                                            "ch02.correct"))

# the scores divided by d_k → ∞: all 16 weights equal, entropy ln 16
value_exercise("ch2.uniform_entropy",
               "Entropy (nats) of the weights when scores are divided by d_k → ∞",
               reference=lambda: scaling.saturation(1, "linear", 16)["uniform_entropy"],
               mistakes=lambda: [0, 16, 1],
               answer=lambda: number_answer(float(np.log(16)), 1e-3, "ch02.entropy_hint",
                                            "ch02.correct"))


@exercise("ch2.scaled_scores", "Write scaled_scores(Q, K) = Q Kᵀ / √d_k",
          reference=lambda: _scaled_scores,
          mistakes=lambda: [lambda q, k: q @ k.T, lambda q, k: q @ k.T / q.shape[1],
                            lambda q, k: k @ q.T / np.sqrt(q.shape[1]), "x"])
def _ch2_scaled_scores(func):
    if not callable(func):
        return False, tr("ch02.pass_function", name="scaled_scores")
    rng = np.random.default_rng(2)
    for n_q, n_k, d_k in [(3, 3, 4), (1, 5, 1), (4, 2, 64)]:
        q, k = rng.standard_normal((n_q, d_k)), rng.standard_normal((n_k, d_k))
        got = call(func, q, k)
        want = q @ k.T / np.sqrt(d_k)
        if got.shape != want.shape:
            return False, tr("ch02.scores_shape", q=q.shape, k=k.shape, want=want.shape,
                             got=got.shape)
        if np.allclose(got, q @ k.T / d_k) and d_k > 1:
            return False, tr("ch02.divided_dk")
        if np.allclose(got, q @ k.T) and d_k > 1:
            return False, tr("ch02.raw_scores")
        if not np.allclose(got, want):
            return False, tr("ch02.numbers_off")
    return True, tr("ch02.correct")


# --- concept questions (book/face/questions.py; their words: book/strings/ch02.toml) ---
questions.question("ch02.saturate", kind="predict", right=3,
                   answered_in="c008")
questions.question("ch02.why_sqrt", kind="explain", right=2)
questions.question("ch02.bug_scale", kind="bug", right=1, code="""\
scores = q @ k.T / math.sqrt(q.shape[0])
weights = scores.softmax(dim=-1)
""")
