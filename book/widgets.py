"""Live ipywidgets explorers for Jupyter: the *live face* of every explorer.

Each explorer wraps a ``go.FigureWidget`` built by ``book.figures`` and recomputes its data
with the same ``book.figures.*_data`` functions as the static face, for any value of the
controls (not just the precomputed frames). In the book these cells are tagged
``remove-output``: a slider without a kernel would be dead.

``explorer.update(**values)`` is what a control change calls; tests and the benchmark call it
directly to check extreme values and to time it (target ≤ 50 ms).
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go

from . import figures, validate

LIVE_MAX_D_K = 512  # the sliders' top: every redraw stays under 50 ms on 2 CPU cores


class LiveExplorer:
    """A FigureWidget plus its controls; ``update(**values)`` redraws for new control values."""

    def __init__(self, figure: go.Figure, controls: dict[str, widgets.ValueWidget],
                 redraw: Callable[..., None]):
        self.figure = go.FigureWidget(figure)
        self.controls = controls
        self._redraw = redraw
        self._setting = False  # True while update() sets several controls: redraw once, after
        self.redraws = 0  # how many times the figure was redrawn (tests count it)
        for control in controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox(list(controls.values())), self.figure])

    def _on_change(self, _change) -> None:
        if not self._setting:
            self._draw()

    def _draw(self) -> None:
        current = {name: c.value for name, c in self.controls.items()}
        with self.figure.batch_update():
            self._redraw(self.figure, **current)
        self.redraws += 1

    def update(self, **values) -> None:
        """Set any controls given by name, then redraw once from the current control values."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; "
                             f"this explorer has {sorted(self.controls)}")
        for name, value in values.items():
            control = self.controls[name]
            if hasattr(control, "min") and not (control.min <= value <= control.max):
                raise ValueError(f"{name}={value} is outside the slider's range "
                                 f"[{control.min}, {control.max}]")
        self._setting = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._setting = False
        self._draw()

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def heads_explorer_live() -> LiveExplorer:
    """Choose 1–3 heads and see how the order-takers split the relations (illustrative)."""
    n = len(figures.orders_example.TOKENS)
    empty = [[None] * n for _ in range(n)]

    def redraw(fig, n_heads):
        data = figures.heads_data(n_heads)
        for i, z in enumerate(data["z"]):
            fig.data[i].z = figures._round(z) if z is not None else empty
            fig.layout.annotations[i].text = data["titles"][i]

    controls = {"n_heads": widgets.IntSlider(value=1, min=1, max=figures.MAX_HEADS,
                                             description="heads")}
    fig = figures.heads_explorer()
    fig.layout.sliders = []
    return LiveExplorer(fig, controls, redraw)


def dk_explorer_live() -> LiveExplorer:
    """Any d_k from 1 to 4096 and any sample size: histograms of raw and scaled q·k."""
    def redraw(fig, d_k, n):
        data = figures.dk_data(d_k, n)
        fig.data[0].x, fig.data[0].y = data["raw_x"], data["raw_y"]
        fig.data[1].x, fig.data[1].y = data["scaled_x"], data["scaled_y"]
        for annotation, title in zip(fig.layout.annotations, figures._dk_titles(data, d_k),
                                     strict=True):
            annotation.text = title
        fig.layout.xaxis.range = [-data["range"], data["range"]]

    controls = {"d_k": widgets.IntSlider(value=64, min=1, max=LIVE_MAX_D_K, description="d_k"),
                "n": widgets.IntSlider(value=2000, min=100, max=3000, step=100,
                                       description="samples")}
    fig = figures.dk_explorer([64])
    fig.layout.sliders = []
    return LiveExplorer(fig, controls, redraw)


def softmax_row_live() -> LiveExplorer:
    """One query over any number of keys at any d_k: how peaked is softmax, scaled or not?"""
    def redraw(fig, d_k, n_keys, seed):
        data = figures.softmax_row_data(d_k, n_keys, seed)
        keys = [f"k{j + 1}" for j in range(n_keys)]
        for trace, scale in zip(fig.data, ("none", "sqrt"), strict=True):
            trace.x, trace.y = keys, data[scale]
        fig.layout.title.text = figures._row_title(data, d_k)

    controls = {"d_k": widgets.IntSlider(value=64, min=1, max=LIVE_MAX_D_K, description="d_k"),
                "n_keys": widgets.IntSlider(value=16, min=1, max=128, description="keys"),
                "seed": widgets.IntSlider(value=3, min=0, max=99, description="seed")}
    fig = figures.softmax_row_explorer([64])
    fig.layout.sliders = []
    return LiveExplorer(fig, controls, redraw)


def latency(explorer: LiveExplorer, values: list[dict], repeats: int = 3) -> np.ndarray:
    """Seconds per ``explorer.update(**v)`` call over ``values`` × ``repeats`` (for benchmarks)."""
    import time

    repeats = validate.integer("repeats", repeats, low=1, high=1000)
    times = []
    for _ in range(repeats):
        for v in values:
            start = time.perf_counter()
            explorer.update(**v)
            times.append(time.perf_counter() - start)
    return np.array(times)


# --- chapter 3: edit an input, watch every step recompute ---------------------------------

WALKTHROUGH_MATRICES = ("X", "W_Q1", "W_K1", "W_V1", "W_Q2", "W_K2", "W_V2", "W_O")


def edited_example(matrix: str, row: int, col: int, value: float, ex=None):
    """A copy of the walkthrough example with one entry replaced; row/col are clamped to the
    chosen matrix's shape (X is 3×4, each W 4×3, W_O 6×4), so any slider position is valid."""
    import dataclasses

    from . import walkthrough as wt

    ex = wt.example() if ex is None else ex
    validate.choice("matrix", matrix, WALKTHROUGH_MATRICES)
    row = validate.integer("row", row, low=0)
    col = validate.integer("col", col, low=0)
    value = validate.real("value", value, low=-10.0, high=10.0)
    X, heads, W_O = ex.X.copy(), [[w.copy() for w in h] for h in ex.heads], ex.W_O.copy()
    if matrix == "X":
        target = X
    elif matrix == "W_O":
        target = W_O
    else:
        target = heads[int(matrix[-1]) - 1]["QKV".index(matrix[2])]
    r, c = min(row, target.shape[0] - 1), min(col, target.shape[1] - 1)
    target[r, c] = value
    edited = dataclasses.replace(ex, X=X, heads=tuple(tuple(h) for h in heads), W_O=W_O)
    return edited, (r, c)


def walkthrough_live() -> LiveExplorer:
    """Pick a step, and edit one entry of X or of any weight matrix: every step recomputes."""
    from . import walkthrough as wt

    base = wt.example()
    names = [f["name"] for f in figures.walkthrough_frames(base)]

    def redraw(fig, step, matrix, row, col, value):
        ex, (r, c) = edited_example(matrix, row, col, value, base)
        frame = next(f for f in figures.walkthrough_frames(ex) if f["name"] == step)
        update = figures._frame_update(frame)
        trace = fig.data[0]
        trace.z, trace.x, trace.y = update["z"][0], update["x"][0], update["y"][0]
        trace.text, trace.zmin, trace.zmax = update["text"][0], update["zmin"][0], update["zmax"][0]
        fig.layout.title.text = f"{figures._frame_title(frame)}<br>(edited {matrix}[{r}, {c}]" \
                                f" = {value:.1f})"

    controls = {
        "step": widgets.Dropdown(options=names, value="A1", description="step"),
        "matrix": widgets.Dropdown(options=WALKTHROUGH_MATRICES, value="X", description="edit"),
        "row": widgets.IntSlider(value=0, min=0, max=5, description="row"),
        "col": widgets.IntSlider(value=0, min=0, max=3, description="column"),
        "value": widgets.FloatSlider(value=float(base.X[0, 0]), min=-3.0, max=3.0, step=0.1,
                                     description="value"),
    }
    fig = figures.walkthrough_explorer(base)
    fig.layout.sliders = []
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- chapter 4: masks -----------------------------------------------------------------------

def mask_explorer_live() -> LiveExplorer:
    """Any mask kind, 1–8 real tokens and 0–8 padding positions: the mask and the weights.

    The controls are the number of real tokens and the amount of padding (the padded length is
    their sum), so every combination of slider positions is a valid sequence.
    """
    def redraw(fig, kind, length, padding):
        data = figures.mask_data(kind, length, length + padding)
        traces = figures._mask_traces(data)
        for i, trace in enumerate(fig.data):
            trace.x, trace.y = traces["x"][i], traces["y"][i]
            trace.z, trace.text = traces["z"][i], traces["text"][i]
        for annotation, title in zip(fig.layout.annotations, figures._mask_titles(kind),
                                     strict=True):
            annotation.text = title
        fig.layout.title.text = (f"{length} real tokens + {padding} padding = padded length "
                                 f"{length + padding}<br><sup>rows = queries, columns = keys"
                                 "</sup>")

    controls = {
        "kind": widgets.Dropdown(options=list(figures.MASK_KINDS), value="causal + padding",
                                 description="mask"),
        "length": widgets.IntSlider(value=5, min=1, max=figures.MASK_MAX_REAL,
                                    description="real tokens"),
        "padding": widgets.IntSlider(value=2, min=0, max=figures.MASK_MAX_PAD,
                                     description="padding"),
    }
    fig = figures.mask_explorer(5, [7], ["causal + padding"])
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- chapter 9: long context ---------------------------------------------------------------

WINDOW_LIVE_MAX_N = 96  # a 96 × 96 grid redraws well under 50 ms
WINDOW_LIVE_MAX_W = 64


def window_explorer_live() -> LiveExplorer:
    """Any window half-width 0–64 over 8–96 tokens: the allowed pattern, what the banded
    version computes, and the score entries of both versions against n."""
    def redraw(fig, window, n):
        data = figures.window_data(n, window)
        heat = fig.data[0]
        heat.z, heat.x, heat.y = data["levels"].tolist(), data["labels"], data["labels"]
        fig.data[2].y = data["banded"]
        for annotation, title in zip(fig.layout.annotations, figures._window_titles(data),
                                     strict=True):
            annotation.text = title

    controls = {"window": widgets.IntSlider(value=4, min=0, max=WINDOW_LIVE_MAX_W,
                                            description="window w"),
                "n": widgets.IntSlider(value=figures.WINDOW_PATTERN_N, min=8,
                                       max=WINDOW_LIVE_MAX_N, description="tokens n")}
    fig = figures.window_explorer(windows=[4], start=0)
    fig.layout.sliders = []
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- chapter 10: attention patterns ---------------------------------------------------------

def pattern_live() -> LiveExplorer:
    """Any variant, window, dilation, number of global tokens and length (up to 128)."""
    def redraw(fig, kind, window, dilation, n_global, n):
        data = figures.pattern_data(kind, window, n, dilation, min(n_global, n))
        labels = [f"t{i}" for i in range(n)]
        trace = fig.data[0]
        trace.z, trace.x, trace.y = data["z"], labels, labels
        fig.layout.title.text = figures._pattern_title(kind, window, data)

    controls = {
        "kind": widgets.Dropdown(options=list(figures.PATTERN_KINDS), value="dilated",
                                 description="variant"),
        "window": widgets.IntSlider(value=2, min=0, max=16, description="window w"),
        "dilation": widgets.IntSlider(value=2, min=1, max=8, description="dilation"),
        "n_global": widgets.IntSlider(value=2, min=0, max=8, description="global"),
        "n": widgets.IntSlider(value=32, min=1, max=128, description="length n"),
    }
    fig = figures.pattern_explorer(windows=(2,))
    fig.layout.sliders, fig.layout.updatemenus = [], []
    for i, trace in enumerate(fig.data):
        trace.visible = i == 0
    fig = go.Figure(fig.data[:1], fig.layout)
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer
