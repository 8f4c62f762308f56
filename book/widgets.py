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


# --- chapter 7: mask traps ---------------------------------------------------------------------

def mask_bug_explorer_live() -> LiveExplorer:
    """Any mask bug with 1–8 real tokens and 0–8 padding positions: mask and weights."""
    from . import masktraps

    def redraw(fig, bug, length, padding):
        data = masktraps.bug_data(bug, length, padding)
        traces = figures._bug_traces(data)
        for i, trace in enumerate(fig.data):
            trace.x, trace.y = traces["x"][i], traces["y"][i]
            trace.z, trace.text = traces["z"][i], traces["text"][i]
        fig.layout.title.text = figures._bug_title(data)

    controls = {
        "bug": widgets.Dropdown(options=list(masktraps.BUGS), value="flipped",
                                description="bug"),
        "length": widgets.IntSlider(value=5, min=1, max=masktraps.BUG_MAX_REAL,
                                    description="real tokens"),
        "padding": widgets.IntSlider(value=2, min=0, max=masktraps.BUG_MAX_PAD,
                                     description="padding"),
    }
    fig = figures.mask_bug_explorer(["flipped"])
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- chapter 5: training stability ---------------------------------------------------------

STABILITY_LRS = (3e-3, 1e-2, 3e-2)
STABILITY_LIVE_MAX_LAYERS = 8


class TrainingExplorer(LiveExplorer):
    """The stability explorer's live face. Choosing a configuration that was already trained
    redraws at once (no training in a control change); any other configuration shows an empty
    plot until the button "train this configuration" trains it (a short run with a progress
    bar, :func:`book.stability.run`) and adds it to :attr:`runs`."""

    def __init__(self, runs, data=None, steps: int | None = None):
        from . import stability

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
            "norm": widgets.Dropdown(options=[(v, k) for k, v in stability.NORM_NAMES.items()],
                                     value=first.norm, description="norm"),
            "init": widgets.Dropdown(options=[(v, k) for k, v in stability.INIT_NAMES.items()],
                                     value=first.init, description="init"),
            "n_layers": widgets.IntSlider(value=first.n_layers, min=1,
                                          max=STABILITY_LIVE_MAX_LAYERS, description="layers"),
            "lr": widgets.Dropdown(options=[(f"{lr:g}", lr) for lr in lrs], value=first.lr,
                                   description="lr"),
        }
        fig = figures.stability_explorer([first])
        fig.layout.updatemenus = []
        super().__init__(fig, controls, self._redraw_run)
        self.button = widgets.Button(description="train this configuration", icon="play",
                                     layout={"width": "240px"})
        self.button.on_click(lambda _button: self.train())
        self.status = widgets.HTML()
        self.output = widgets.Output()
        self.widget = widgets.VBox([widgets.HBox(list(controls.values())),
                                    widgets.HBox([self.button, self.status]), self.output,
                                    self.figure])
        self._draw()

    def _redraw_run(self, fig, norm, init, n_layers, lr):
        from . import stability

        run = self.runs.get((norm, init, n_layers, lr))
        if run is None:
            label = stability.config_label(norm, init, n_layers, lr)
            for trace in fig.data:
                trace.x, trace.y = [], []
            fig.layout.title.text = (f"{label}: not trained yet — press “train this "
                                     f"configuration” ({self.steps} steps)")
            self.status.value = "<i>not trained yet</i>"
            return
        data = figures.stability_data(run)
        restyle = figures._stability_restyle(data)
        for i, trace in enumerate(fig.data):
            trace.x, trace.y, trace.name = (restyle["x"][i], restyle["y"][i],
                                            restyle["name"][i])
        fig.layout.title.text = data["title"]
        self.status.value = f"trained in {run.wall_time:.1f} s"

    def train(self):
        """Train the configuration the controls show (if it is new), then draw it."""
        from . import stability

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


# --- chapter 6: how many heads -------------------------------------------------------------

HEAD_MAPS_ORDER = "两碗招牌牛肉面，香菜和葱都不要，多加辣。"


def head_maps_live(models: dict, order: str = HEAD_MAPS_ORDER) -> LiveExplorer:
    """Pick a trained model (its number of heads), a layer, and type any order: every head's
    attention map recomputes (one forward pass of the small model)."""
    models = dict(models)
    if not models:
        raise ValueError("models is empty: pass {n_heads: trained TinyEncoder}")
    counts = list(models)
    n_layers = next(iter(models.values())).n_layers

    shown = {"labels": None, "titles": None, "heads": figures.MAX_GRID_HEADS, "axes": {}}

    def redraw(fig, n_heads, layer, order):
        from .timing import torch_threads

        try:
            with torch_threads(1):   # a tiny forward pass: extra threads only wait for cores
                data = figures.head_maps_data(models[n_heads], order, layer)
        except (ValueError, TypeError) as err:
            message = str(err)
            message = message if len(message) < 120 else message[:117] + "…"
            fig.layout.title.text = f"cannot read this order: {message}"
            return
        # numpy arrays skip plotly's per-element validation, and only what changed is sent:
        # a redraw of 16 heads stays well under 50 ms
        relabel = data["labels"] != shown["labels"]
        for h, trace in enumerate(fig.data):
            if h < data["n_heads"]:
                trace.z = np.round(data["maps"][h], 3)
                if relabel or h >= shown["heads"]:
                    trace.x, trace.y = data["labels"], data["labels"]
            elif h < shown["heads"]:   # a panel this model has no head for: empty it
                trace.z, trace.x, trace.y = None, [], []
        titles = figures._head_panel_titles(data["n_heads"])
        if titles != shown["titles"]:
            for annotation, title in zip(fig.layout.annotations, titles, strict=True):
                annotation.text = title
            axes = figures._head_axes_visible(data["n_heads"])
            for key, value in axes.items():   # only the axis properties that change
                if shown["axes"].get(key) != value:
                    axis, prop = key.split(".")
                    fig.layout[axis][prop] = value
            shown["axes"] = axes
        fig.layout.title.text = figures._head_maps_title(data)
        shown.update(labels=data["labels"], titles=titles, heads=data["n_heads"])

    controls = {
        "n_heads": widgets.SelectionSlider(options=counts, value=counts[0],
                                           description="heads"),
        "layer": widgets.IntSlider(value=n_layers - 1, min=0, max=n_layers - 1,
                                   description="layer"),
        "order": widgets.Text(value=order, description="order", continuous_update=False,
                              layout={"width": "420px"}),
    }
    fig = figures.head_maps_explorer({counts[0]: models[counts[0]]}, order,
                                     layers=(n_layers - 1,))
    fig.layout.sliders = []
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- chapter 8: seeing attention ---------------------------------------------------------------

def attention_live(model=None, text: str | None = None) -> LiveExplorer:
    """Type an order, pick a layer and a head: its attention map and the model's labels.

    Bad input (an unknown word, an empty box, too many words) is reported in the widget's
    ``message`` line, and the last good map stays on screen.
    """
    import html

    from . import attention_roles as roles
    from . import timing, train

    model = train.pretrained() if model is None else roles._check_model(model)
    text = roles.EXAMPLE if text is None else text
    n_layers, n_heads = model.n_layers, model.n_heads
    message = widgets.HTML(layout={"width": "100%"})
    state = {}

    def redraw(fig, text, layer, head):
        try:
            if state.get("text") != text:
                with timing.torch_threads(1):   # a tiny forward pass: one thread is fastest
                    state["data"] = figures.order_view_data(model, text)
                state["text"] = text
        except ValueError as err:
            state.pop("text", None)
            message.value = (f'<span style="color:#b3261e">⚠ {html.escape(str(err))}</span>')
            return
        data = state["data"]
        trace = fig.data[0]
        trace.x, trace.y = data["cols"], data["rows"]
        trace.z = figures._round(data["maps"][layer, head], 3)
        n = len(data["cols"])
        fig.layout.xaxis.categoryarray, fig.layout.yaxis.categoryarray = data["cols"], \
            data["rows"]
        fig.layout.xaxis.range, fig.layout.yaxis.range = [-0.5, n - 0.5], [n - 0.5, -0.5]
        fig.layout.annotations[0].text = data["caption"]
        message.value = f"{figures._head_label(layer, head)}: rows = queries, columns = keys"

    controls = {
        "text": widgets.Text(value=text, description="order", continuous_update=False,
                             layout={"width": "460px"}),
        "layer": widgets.Dropdown(options=[(f"layer {i}", i) for i in range(n_layers)],
                                  value=min(1, n_layers - 1), description="layer"),
        "head": widgets.Dropdown(options=[(f"head {i}", i) for i in range(n_heads)],
                                 value=min(1, n_heads - 1), description="head"),
    }
    fig = figures.head_view(model, [roles.EXAMPLE], start=(0, 0))
    fig.layout.updatemenus, fig.layout.sliders = [], []
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.message = message
    explorer.widget = widgets.VBox([widgets.HBox(list(controls.values())), message,
                                    explorer.figure])
    explorer.update()
    return explorer
