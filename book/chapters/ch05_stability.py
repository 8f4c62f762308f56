"""Chapter 5 (training stability): its static figures, live explorers and exercises."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import nn

from book.face import questions
from book.face.checks import (
    Answer,
    Is,
    NotAnswered,
    exercise,
    number_answer,
    right,
    value_exercise,
    wrong,
)
from book.face.display import table
from book.face.figures import describe
from book.face.live import LiveExplorer
from book.face.plotting import RUN_COLORS, RUN_DASHES, italic, panel_title_width, rounded, wrap
from book.kit import i18n, validate
from book.studies import stability
from book.toy import train

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

LOG_TICKS = 5  # at most about this many labelled decades on a log axis (phone-wide figures)
EXPLORER_MARGIN = {"l": 60, "r": 20, "t": 120, "b": 60}
EXPLORER_SPACING = 0.16  # between the explorer's two lower panels
EXPLORER_MENU_GAP = 46   # px from the menu to the plot: room for a two-line panel title
# the legend at the foot of the figure: plotly keeps the plot and its x axes' labels above it,
# however many rows the legend takes on a phone
FOOT_LEGEND = {"orientation": "h", "x": 0, "yref": "container", "y": 0, "yanchor": "bottom"}


def _parts(layers) -> list[str]:
    return [stability.part_name(p) for p in layers]


def _log_dtick(*curves) -> int:
    """Decades between ticks so that a log axis over ``curves`` labels about LOG_TICKS."""
    values = [v for curve in curves for v in curve if v is not None and np.isfinite(v) and v > 0]
    if not values:
        return 1
    decades = np.log10(max(values)) - np.log10(min(values))
    return max(1, int(np.ceil(decades / LOG_TICKS)))


def _stability_restyle(data: dict) -> dict:
    layers = _parts(data["layers"])
    step = i18n.tr("ch05.step", step=data["last_step"])
    return {"x": [data["steps"], layers, layers, layers, layers],
            "y": [rounded(data["loss"]), rounded(data["act_first"]), rounded(data["act_last"]),
                  rounded(data["grad_first"], 6), rounded(data["grad_last"], 6)],
            "name": [i18n.tr("ch05.loss"), i18n.tr("ch05.step", step=1), step,
                     i18n.tr("ch05.step", step=1), step]}


def _chance_line(fig, row=None, col=None) -> None:
    chance = stability.chance_loss()
    kwargs = {} if row is None else {"row": row, "col": col}
    fig.add_hline(y=chance, line_dash="dot", line_color="#7a7a7a",
                  annotation_text=i18n.tr("ch05.chance", chance=chance),
                  annotation_position="top right", annotation_font_size=11, **kwargs)


def _stability_plot(datas: list[dict], start: int) -> go.Figure:
    """The panels of ``datas[start]`` (:func:`book.studies.stability.stability_data`), their
    log axes' ticks fitted to all of ``datas``, without the menu (what both faces start
    from)."""
    first = _stability_restyle(datas[start])
    # the lower panels' titles in lines that fit their panels on a phone
    columns = panel_title_width(2, EXPLORER_SPACING, EXPLORER_MARGIN["l"], EXPLORER_MARGIN["r"],
                                size=12)
    fig = make_subplots(rows=2, cols=2, specs=[[{"colspan": 2}, None], [{}, {}]],
                        vertical_spacing=0.24, horizontal_spacing=EXPLORER_SPACING,
                        subplot_titles=[i18n.tr("ch05.explorer_loss")]
                        + [wrap(i18n.tr(f"ch05.explorer_{k}"), columns) for k in ("act", "grad")])
    styles = [("#1a56a8", "solid", "lines"), ("#7a7a7a", "dash", "lines+markers"),
              ("#b3261e", "solid", "lines+markers"), ("#7a7a7a", "dash", "lines+markers"),
              ("#b3261e", "solid", "lines+markers")]
    places = [(1, 1), (2, 1), (2, 1), (2, 2), (2, 2)]
    for i, ((color, dash, mode), (row, col)) in enumerate(zip(styles, places, strict=True)):
        fig.add_trace(go.Scatter(x=first["x"][i], y=first["y"][i], name=first["name"][i],
                                 mode=mode, line={"color": color, "dash": dash},
                                 showlegend=i in (1, 2), legendgroup=str(i % 2)),
                      row=row, col=col)
    _chance_line(fig, 1, 1)
    fig.update_xaxes(title_text=i18n.tr("ch05.training_step"), row=1, col=1)
    fig.update_xaxes(title_text=i18n.tr("ch05.output_of"), tickangle=-45, row=2, col=1)
    fig.update_xaxes(title_text=i18n.tr("ch05.parameters_of"), tickangle=-45, row=2, col=2)
    for col, keys in ((1, ("act_first", "act_last")), (2, ("grad_first", "grad_last"))):
        dtick = _log_dtick(*(d[k] for d in datas for k in keys))
        fig.update_yaxes(type="log", exponentformat="power", dtick=dtick, row=2, col=col)
    fig.update_yaxes(title_text=i18n.tr("ch05.training_loss"), rangemode="tozero",
                     row=1, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(
        height=750, title={"text": datas[start]["title"], "font": {"size": 13}, "x": 0.02,
                           "xanchor": "left", "yref": "container", "y": 0.985,
                           "yanchor": "top"},
        legend={"orientation": "h", "x": 0, "y": -0.2}, margin=dict(EXPLORER_MARGIN))
    return describe(fig, alt=i18n.tr("ch05.explorer_alt"), caption=_stability_caption(datas))


def _stability_caption(datas: list[dict]) -> str:
    """The stability explorer's caption: where its runs' loss curves end (as drawn: the
    running mean's last value), and how to read the lower panels."""
    ends = [(float(d["loss"][-1]), d["label"]) for d in datas
            if len(d["loss"]) and np.isfinite(d["loss"][-1])]
    chance = stability.chance_loss()
    if len(ends) < 2:
        return i18n.tr("ch05.explorer_caption_one", chance=chance)
    (lo, lo_label), (hi, hi_label) = min(ends), max(ends)
    return i18n.tr("ch05.explorer_caption", n=len(datas), lo=lo, lo_label=lo_label, hi=hi,
                   hi_label=hi_label)


def stability_figure(runs, start: int = 0) -> go.Figure:
    """Static explorer: a dropdown over training runs (:class:`book.studies.stability.Run`).

    Top: the loss (running mean) with the chance level ln 7. Below, left: the RMS of
    each layer's output (the residual stream) at step 1 and at the last recorded step; right:
    the gradient norm of each layer's parameters at the same two steps (log scales). The
    panels are stacked so that they stay readable on a phone.
    """
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: pass the book.studies.stability.run(...) results to show")
    start = validate.integer("start", start, low=0, high=len(runs) - 1)
    datas = [stability.stability_data(r) for r in runs]
    fig = _stability_plot(datas, start)
    buttons = [{"label": data["label"], "method": "update",
                "args": [_stability_restyle(data), {"title.text": data["title"]}]}
               for data in datas]
    # its own row, above the first panel's title: never over the title or the panel
    fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down", "showactive": True,
                                    "active": start, "x": 0, "xanchor": "left", "y": 1.0,
                                    "yanchor": "bottom", "pad": {"b": EXPLORER_MENU_GAP}}])
    return fig


def loss_curves_figure(runs, title: str = "") -> go.Figure:
    """Several runs' loss curves (running mean of 10 steps) on one plot, with the
    chance level ln 7. A diverged run ends where its loss stopped being finite."""

    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: pass some book.studies.stability.run(...) results")
    fig = go.Figure()
    step, loss = i18n.tr("ch05.hover_step_loss"), i18n.tr("ch05.loss")
    for i, run in enumerate(runs):
        fig.add_trace(go.Scatter(
            x=list(range(1, len(run.loss) + 1)),
            y=rounded(stability.smooth(run.loss, stability.LOSS_SMOOTHING)), mode="lines",
            name=run.label,
            line={"color": RUN_COLORS[i % len(RUN_COLORS)],
                  "dash": RUN_DASHES[i % len(RUN_DASHES)], "width": 2.5},
            hovertemplate=f"{step} %{{x}}: {loss} %{{y:.3f}}<extra>{run.label}</extra>"))
    _chance_line(fig)
    fig.update_layout(height=385, title={"text": title, "font": {"size": 14}},
                      xaxis={"title": i18n.tr("ch05.training_step")},
                      yaxis={"title": i18n.tr("ch05.training_loss_mean"),
                             "rangemode": "tozero"},
                      legend={"orientation": "h", "y": -0.2, "x": 0, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 50, "b": 40})
    names = _short_labels(runs)
    ends = i18n.tr("ch05.caption_join").join(   # each curve's last value, as drawn
        i18n.tr("ch05.caption_end_diverged", label=name)
        if run.diverged or trace.y[-1] is None
        else i18n.tr("ch05.caption_end", label=name, loss=trace.y[-1])
        for run, trace, name in zip(runs, fig.data, names, strict=False))
    return describe(fig, alt=i18n.tr("ch05.curves_alt", n=len(runs),
                                     window=stability.LOSS_SMOOTHING),
                    caption=i18n.tr("ch05.curves_caption", ends=ends,
                                    chance=stability.chance_loss()))


def layer_norms_figure(runs, when: str = "first", title: str = "") -> go.Figure:
    """Per-layer activation RMS and gradient norm of several runs at their "first" or "last"
    recorded step, one line per run, log scales."""
    runs = list(runs)
    if not runs:
        raise ValueError("runs is empty: pass some book.studies.stability Run objects")
    validate.choice("when", when, ("first", "last"))
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=[i18n.tr("ch05.norms_act"), i18n.tr("ch05.norms_grad")])
    for i, run in enumerate(runs):
        style = {"color": RUN_COLORS[i % len(RUN_COLORS)],
                 "dash": RUN_DASHES[i % len(RUN_DASHES)]}
        for col, what in ((1, "activation"), (2, "gradient")):
            fig.add_trace(go.Scatter(x=_parts(run.layers), y=rounded(run.profile(what, when), 6),
                                     mode="lines+markers", name=run.label, line=style,
                                     legendgroup=run.label, showlegend=col == 1,
                                     hovertemplate="%{x}: %{y:.3g}<extra>" + run.label
                                                   + "</extra>"), row=1, col=col)
    for col, what in ((1, "activation"), (2, "gradient")):
        dtick = _log_dtick(*(run.profile(what, when) for run in runs))
        fig.update_yaxes(type="log", exponentformat="power", dtick=dtick, row=1, col=col)
    fig.update_xaxes(tickangle=-45)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=390 + 10 * len(runs),
                      title={"text": title, "font": {"size": 14}, "x": 0.02, "xanchor": "left",
                             "yref": "container", "y": 0.97, "yanchor": "top"},
                      legend={**FOOT_LEGEND, "font": {"size": 12}},
                      margin={"l": 50, "r": 20, "t": 80, "b": 10})
    return describe(fig, alt=i18n.tr("ch05.norms_alt", n=len(runs),
                                     when=i18n.tr(f"ch05.norms_when_{when}")),
                    caption=_layer_norms_caption(runs, when))


def _short_labels(runs) -> list[str]:
    """The runs' labels for a caption: without the learning rate where they all share it
    (the legend keeps it)."""
    if len({run.lr for run in runs}) == 1:
        return [stability.config_label(run.norm, run.init, run.n_layers) for run in runs]
    return [run.label for run in runs]


def _layer_norms_caption(runs, when: str) -> str:
    """The layer-norms figure's caption: the range of the RMS and of the gradient norms it
    draws, each extreme with its run and layer, and how to read them."""
    found = {}
    for what in ("activation", "gradient"):
        points = [(v, label, part) for run, label in zip(runs, _short_labels(runs), strict=True)
                  for v, part in zip(run.profile(what, when), _parts(run.layers),
                                     strict=False)
                  if np.isfinite(v) and v > 0]
        if not points:
            return i18n.tr("ch05.norms_caption_none")
        found[what] = (min(points), max(points))
    (a_lo, _, _), (a_hi, a_label, a_part) = found["activation"]
    (g_lo, g_label, g_part), (g_hi, _, _) = found["gradient"]
    return i18n.tr("ch05.norms_caption", a_lo=a_lo, a_hi=a_hi, a_label=a_label, a_part=a_part,
                   g_lo=g_lo, g_hi=g_hi, g_label=g_label, g_part=g_part)


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

STABILITY_LRS = (3e-3, 1e-2, 3e-2)
STABILITY_LIVE_MAX_LAYERS = 8


class TrainingExplorer(LiveExplorer):
    """The stability explorer's live face. Choosing a configuration that was already trained
    redraws at once (no training in a control change); any other configuration shows an empty
    plot until the button "train this configuration" trains it (a short run with a progress
    bar, :func:`book.studies.stability.run`) and adds it to :attr:`runs`."""

    def __init__(self, runs, data=None, steps: int | None = None):
        runs = list(runs)
        if not runs:
            raise ValueError("runs is empty: pass the runs the chapter trained")
        self.runs = {r.key: r for r in runs}
        self.data = data
        self.steps = stability.SETTINGS["steps"] if steps is None else \
            validate.integer("steps", steps, low=1)
        first = runs[0]
        lrs = sorted(set(STABILITY_LRS) | {r.lr for r in runs})
        controls = {
            "norm": widgets.Dropdown(options=[(stability.norm_name(k), k)
                                              for k in stability.NORM_NAMES],
                                     value=first.norm, description=i18n.tr("ch05.live_norm")),
            "init": widgets.Dropdown(options=[(stability.init_name(k), k)
                                              for k in stability.INIT_NAMES],
                                     value=first.init, description=i18n.tr("ch05.live_init")),
            "n_layers": widgets.IntSlider(value=first.n_layers, min=1,
                                          max=STABILITY_LIVE_MAX_LAYERS,
                                          description=i18n.tr("ch05.live_layers")),
            "lr": widgets.Dropdown(options=[(f"{lr:g}", lr) for lr in lrs], value=first.lr,
                                   description="lr"),
        }
        super().__init__(_stability_plot([stability.stability_data(first)], 0), controls,
                         self._redraw_run,
                         adds=i18n.tr("ch05.live_adds_train"))
        self.button = widgets.Button(description=i18n.tr("ch05.train_button"), icon="play",
                                     layout={"width": "240px"})
        self.button.on_click(lambda _button: self.train())
        self.status = widgets.HTML()
        self.output = widgets.Output()
        self.widget = widgets.VBox([widgets.HBox(list(controls.values())),
                                    widgets.HBox([self.button, self.status]), self.output,
                                    self.figure])
        self._draw()

    def _redraw_run(self, fig, norm, init, n_layers, lr):
        run = self.runs.get((norm, init, n_layers, lr))
        if run is None:
            label = stability.config_label(norm, init, n_layers, lr)
            for trace in fig.data:
                trace.x, trace.y = [], []
            fig.layout.title.text = i18n.tr("ch05.not_trained_title", label=label,
                                            steps=self.steps)
            self.status.value = italic(i18n.tr("ch05.not_trained"))   # upright in Chinese
            return
        data = stability.stability_data(run)
        restyle = _stability_restyle(data)
        for i, trace in enumerate(fig.data):
            trace.x, trace.y, trace.name = (restyle["x"][i], restyle["y"][i],
                                            restyle["name"][i])
        fig.layout.title.text = data["title"]
        self.status.value = i18n.tr("ch05.trained_in", seconds=run.wall_time)

    def train(self):
        """Train the configuration the controls show (if it is new), then draw it."""

        values = {name: c.value for name, c in self.controls.items()}
        key = (values["norm"], values["init"], values["n_layers"], values["lr"])
        if key not in self.runs:
            self.button.disabled = True
            try:
                with self.output:
                    self.output.clear_output()
                    self.runs[key] = stability.run(*key, steps=self.steps, data=self.data,
                                                   progress=True)
            finally:
                self.button.disabled = False
        self._draw()
        return self.runs[key]


def stability_live(runs, data=None, steps: int | None = None) -> TrainingExplorer:
    """Norm, init, depth and learning rate: the runs already trained show at once; the button
    trains a new configuration (about 1–3 s on a laptop CPU)."""
    return TrainingExplorer(runs, data, steps)


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

value_exercise("ch5.large_rms", "RMS after a 32 → 32 linear layer with N(0, 1) weights",
               reference=lambda: float(np.sqrt(32)), mistakes=lambda: [32, 1, 1 / np.sqrt(32)],
               answer=lambda: number_answer(float(np.sqrt(32)), 0.03, "ch05.rms_hint",
                                            "ch05.rms_ok", first=[
                   (Is.near(32, 0.5, strict=True), wrong("ch05.rms_variance")),
                   (Is.near(1 / np.sqrt(32), 0.01, strict=True), wrong("ch05.rms_shrink"))]))

value_exercise("ch5.xavier_std", "Standard deviation of Xavier weights in a 32 × 32 layer",
               reference=lambda: float(np.sqrt(2 / 64)),
               mistakes=lambda: [1 / 32, float(np.sqrt(6 / 64)), 1, float(np.sqrt(32))],
               answer=lambda: number_answer(float(np.sqrt(2 / 64)), 0.02, "ch05.xavier_hint",
                                            "ch05.xavier_ok", first=[
                   (Is.near(1 / 32, 1e-3, strict=True), wrong("ch05.xavier_variance")),
                   (Is.near(np.sqrt(6 / 64), 1e-3, strict=True),
                    wrong("ch05.xavier_uniform_bound"))]))

_CH5_CACHE: dict = {}


def chapter_data():
    """The book's (train, test) data (:func:`book.toy.train.default_data`), built once per
    process: the page's runs and the exercises' references share it."""
    if "data" not in _CH5_CACHE:
        _CH5_CACHE["data"] = train.default_data()
    return _CH5_CACHE["data"]


# ch5.diagnose: read a run's per-layer gradient norms, name the layer and the chapter's fix
FIXES = ("pre_ln", "smaller_init", "clipping")   # the answer's fix numbers 1, 2, 3
EXPLODED = 10.0    # a gradient norm this many times the healthy run's has exploded
VANISHED = 0.01    # ... and one this small a fraction of it has vanished


def layer_grads(run, when: str = "last") -> list[float]:
    """``run``'s gradient norms of its blocks, layer 0 first (the embedding left out), at its
    "first" or "last" recorded step."""
    validate.choice("when", when, ("first", "last"))
    index = 0 if when == "first" else -1
    return [float(values[index]) for part, values in run.grad_norm.items()
            if part.startswith("layer ") and values]


def grads_text(run, when: str = "first") -> str:
    """The blocks' gradient norms as the exercise's question lists them (2 significant
    digits, in the reader's language)."""
    return i18n.tr("ch05.diag_join").join(f"{g:.3g}" for g in layer_grads(run, when))


def diagnosis(run, healthy) -> tuple[int, int]:
    """(layer, fix) for ``run``'s gradient norms at its last recorded step, against those of
    ``healthy`` (the same model where it trains): the block furthest from its healthy norm
    (counted from 0), and the number (1-based, :data:`FIXES`) of the chapter's fix for its
    symptom: a gradient that exploded before any update comes from weights that start too
    large (a smaller init); one that exploded during training is capped by clipping; one that
    vanished needs an identity path down to its layer (Pre-LN)."""
    got, ref = np.array(layer_grads(run)), np.array(layer_grads(healthy))
    if got.shape != ref.shape or not got.size:
        raise ValueError("run and healthy must record the same blocks")
    ratio = got / ref
    layer = int(np.argmax(np.abs(np.log(ratio))))
    if ratio[layer] >= EXPLODED:
        fix = "smaller_init" if len(run.norm_steps) == 1 else "clipping"
    elif ratio[layer] <= VANISHED:
        fix = "pre_ln"
    else:
        raise ValueError("no block's gradient norm has exploded or vanished")
    return layer, FIXES.index(fix) + 1


def _ch5_diagnose_runs():
    """The exercise's run (Post-LN, N(0, 1) weights, at step 1) and its healthy twin (Xavier),
    as the page computes them (book.studies.stability.at_init, a fraction of a second)."""
    if "runs" not in _CH5_CACHE:
        _CH5_CACHE["runs"] = tuple(stability.at_init("post", init, 4, data=chapter_data())
                                   for init in ("large", "xavier"))
    return _CH5_CACHE["runs"]




def _ch5_diagnose() -> tuple[int, int]:
    return diagnosis(*_ch5_diagnose_runs())


def _ch5_diagnose_mistakes() -> list[tuple[int, int]]:
    layer, fix = _ch5_diagnose()
    grads = layer_grads(_ch5_diagnose_runs()[0])
    smallest = int(np.argmin(grads))
    others = [f for f in range(1, len(FIXES) + 1) if f != fix]
    return [(smallest, fix), (layer + 1, fix), *((layer, f) for f in others)]


def _ch5_diagnose_answer() -> Answer:
    layer, fix = _ch5_diagnose()
    n = len(layer_grads(_ch5_diagnose_runs()[0]))
    smallest = int(np.argmin(layer_grads(_ch5_diagnose_runs()[0])))
    fix_hints = [(Is.equal((layer, f)), wrong(f"ch05.diag_{name}"))
                 for f, name in enumerate(FIXES, 1) if f != fix]
    return Answer("int_pair", [
        (Is.not_(Is.all(Is.at(0, Is.in_range(0, n)), Is.at(1, Is.in_range(1, len(FIXES) + 1)))),
         wrong(("ch05.diag_range", {"last": n - 1, "fixes": len(FIXES)}))),
        (Is.equal((layer, fix)), right("ch05.diag_ok")),
        *fix_hints,
        (Is.at(0, Is.equal(smallest)), wrong("ch05.diag_smallest")),
        (Is.at(0, Is.equal(layer + 1)), wrong("ch05.diag_from_one"))],
        otherwise=wrong("ch05.diag_hint"), wrong_kind=wrong("ch05.diag_pair"))


value_exercise("ch5.diagnose", "Which block's gradient explodes at step 1, and which fix?",
               reference=_ch5_diagnose, mistakes=_ch5_diagnose_mistakes,
               answer=_ch5_diagnose_answer)


def _ch5_pre_ln(x, sublayer, norm):
    return x + sublayer(norm(x))


def _ch5_modules(seed: int):
    """A seeded LayerNorm with non-trivial affine weights and a small sub-layer."""

    gen = torch.Generator().manual_seed(seed)
    norm = nn.LayerNorm(6)
    sublayer = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
    with torch.no_grad():
        for p in list(norm.parameters()) + list(sublayer.parameters()):
            p.copy_(torch.randn(p.shape, generator=gen))
    x = 3 * torch.randn(2, 4, 6, generator=gen) + 1
    return x, sublayer, norm


@exercise("ch5.pre_ln", "Write pre_ln(x, sublayer, norm): one Pre-LN residual step",
          reference=lambda: _ch5_pre_ln,
          mistakes=lambda: [lambda x, s, n: n(x + s(x)), lambda x, s, n: s(n(x)),
                            lambda x, s, n: x + n(s(x)), lambda x, s, n: n(x) + s(n(x)), 3])
def _ch5_pre_ln_check(func):
    if not callable(func):
        return False, i18n.tr("ch05.pass_function")
    for seed in (0, 1):
        x, sublayer, norm = _ch5_modules(seed)
        with torch.no_grad():
            out = func(x.clone(), sublayer, norm)
            if out is None:
                raise NotAnswered
            out = torch.as_tensor(out)
            if out.shape != x.shape:
                return False, i18n.tr("ch05.pre_shape", want=tuple(x.shape),
                                      got=tuple(out.shape))

            def same(y, out=out):
                return bool(torch.allclose(out, y, atol=1e-5))

            if same(norm(x + sublayer(x))):
                return False, i18n.tr("ch05.pre_post_ln")
            if same(sublayer(norm(x))):
                return False, i18n.tr("ch05.pre_no_residual")
            if same(x + norm(sublayer(x))):
                return False, i18n.tr("ch05.pre_output_norm")
            if same(norm(x) + sublayer(norm(x))):
                return False, i18n.tr("ch05.pre_normed_stream")
            if not same(_ch5_pre_ln(x, sublayer, norm)):
                return False, i18n.tr("ch05.pre_other")
    return True, i18n.tr("ch05.pre_ok")


# --- concept questions (book/face/questions.py; their words: book/strings/ch05.toml) ---
questions.question("ch05.depth", kind="predict", right=2,
                   answered_in="c006")
questions.question("ch05.ln_init", kind="explain", right=1)
questions.question("ch05.bug_preln", kind="bug", right=3, code="""\
def forward(self, x):
    x = x + self.attn(self.norm1(x))
    x = self.norm2(x + self.ff(x))
    return x
""")


# --- the prose's verdicts: where a final loss sits against the two reference levels -------------

def loss_level(loss: float, chance: float, frequency: float, digits: int = 3) -> str:
    """Where ``loss`` sits, as the prose says it (compared at the ``digits`` it shows): above
    ln 7 (``chance``, a uniform guess), between ln 7 and the label-frequency loss
    (``frequency``), or below both."""
    loss, chance, frequency = (validate.real(name, v) for name, v in
                               (("loss", loss), ("chance", chance), ("frequency", frequency)))
    loss, chance, frequency = (round(v, digits) for v in (loss, chance, frequency))
    if loss > chance:
        return i18n.tr("ch05.level_above")
    if loss >= frequency:
        return i18n.tr("ch05.level_between")
    return i18n.tr("ch05.level_below")


def large_verdict(stuck: bool) -> str:
    """The prose's verdict on the two N(0, 1) runs: ``stuck`` when neither ends below the
    label-frequency loss."""
    return i18n.tr("ch05.learnt_nothing" if stuck else "ch05.learnt_something")


# --- the words of the lesson's figures and tables -----------------------------------------------

def title(name: str, **fields) -> str:
    """A figure's title in the reader's language: ``"post_depth"``, ``"post_pre"``,
    ``"first"``, ``"last"`` (with ``step=``), ``"at_init"`` or ``"large"``."""
    validate.choice("title", name, ("post_depth", "post_pre", "first", "last", "at_init",
                                    "large"))
    return i18n.tr(f"ch05.title_{name}", **fields)


INIT_TABLE_NAMES = ("torch", "xavier_uniform", "kaiming", "large")


def init_table(rows):
    """The initialisations' table: ``rows`` of (initialisation, weight std, RMS out ÷ RMS in),
    the initialisation one of :data:`INIT_TABLE_NAMES`, named in the reader's language."""
    named = [(i18n.tr("ch05.init_" + validate.choice("initialisation", name, INIT_TABLE_NAMES)),
              std, gain) for name, std, gain in rows]
    return table([i18n.tr(f"ch05.col_{c}") for c in ("init", "std", "gain")], named,
                 ["", ".3f", ".2f"])
