"""Chapter 6 (how many heads): its static figures, live explorers and exercises."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.face import controls, inpage, questions
from book.face.checks import Answer, Is, call, exercise, right, value_exercise, wrong
from book.face.figures import describe
from book.face.live import LiveExplorer, widgets_for
from book.face.plotting import COLORSCALE, RUN_COLORS, make_slider, rounded, wrap
from book.kit import i18n, numbers, timing, validate
from book.studies import heads
from book.toy import export, orders, orders_example

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

HEAD_GRID = (4, 4)   # the head-maps explorer shows up to 16 heads
MAX_GRID_HEADS = HEAD_GRID[0] * HEAD_GRID[1]
REDUNDANCY_Y_COLUMNS = 24  # the redundancy figure's y title in lines this long: it fits the axis
# each layer's marker besides its colour (the untrained ones open): the layers read apart in
# greyscale (WCAG 1.4.1, no information by colour alone)
LAYER_MARKERS = ("circle", "square", "diamond", "triangle-up")
assert MAX_GRID_HEADS == heads.MAX_MAP_HEADS, "the grid must hold every head the data allows"


def _tr(msg_id: str, **values) -> str:
    return i18n.tr(f"ch06.{msg_id}", **values)


def head_count(n_heads: int) -> str:
    """"1 head", "4 heads" (in the book's language)."""
    return _tr("heads_1") if n_heads == 1 else _tr("heads_n", n=n_heads)


def _head_count_label(n_heads: int, d_k: int) -> str:
    return _tr("sweep_x", heads=head_count(n_heads), d_k=d_k)


def heads_sweep_figure(runs) -> go.Figure:
    """Held-out accuracy and loss of the models of :func:`book.studies.heads.sweep` (a dict
    {n_heads: HeadRun}), one bar per head count, labelled with d_k."""
    runs = dict(runs)
    if not runs:
        raise ValueError("runs is empty: pass book.studies.heads.sweep(...)")
    x = [_head_count_label(h, r.d_k) for h, r in runs.items()]
    acc = [100 * r.accuracy for r in runs.values()]
    loss = [r.loss for r in runs.values()]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=[_tr("sweep_acc"), _tr("sweep_loss")])
    fig.add_trace(go.Bar(x=x, y=rounded(acc, 2), marker_color="#1a56a8",
                         # 10 px: at 390 px the accuracies, all near 63, stood 1.7 px apart
                         text=[f"{a:.1f}" for a in acc], textposition="outside", textfont_size=10,
                         hovertemplate="%{x}: %{y:.2f} %<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=x, y=rounded(loss, 4), marker_color="#7a7a7a",
                         text=[f"{v:.3f}" for v in loss], textposition="outside",
                         hovertemplate="%{x}: %{y:.3f}<extra></extra>"), row=1, col=2)
    # from 0: a bar's length is its accuracy, so a spread the text calls noise looks like one
    fig.update_yaxes(range=[0, 108], row=1, col=1)
    fig.update_yaxes(range=[0, 1.2 * max(loss)], row=1, col=2)
    fig.update_annotations(font_size=12)
    # two lines a label: at 10 px five of them fit a phone's panel on end, and a desktop's level
    fig.update_xaxes(tickfont_size=10, ticklabelstandoff=4)  # and clear of the y axis' "0"
    fig.update_layout(height=400, showlegend=False,
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    best = max(runs, key=lambda h: runs[h].accuracy)
    worst = min(runs, key=lambda h: runs[h].accuracy)
    return describe(fig, alt=_tr("sweep_alt", counts=_tr("list_join").join(map(str, runs))),
                    caption=_tr("sweep_caption", best=head_count(best),
                                acc_best=100 * runs[best].accuracy, worst=head_count(worst),
                                acc_worst=100 * runs[worst].accuracy,
                                spread=100 * (runs[best].accuracy - runs[worst].accuracy)))


def _head_maps_title(data: dict) -> str:
    n = data["n_heads"]
    js = "" if n == 1 else _tr("maps_js", js=data["js"])
    return _tr("maps_title", heads=head_count(n), layer=data["layer"], js=js,
               text=data["text"])


def _head_grid(n_heads: int) -> tuple[int, int]:
    """(rows, columns) of the panels for ``n_heads`` heads: as few columns as fill the figure,
    so one head gets one large map and 16 heads a 4 × 4 grid."""
    cols = 1 if n_heads == 1 else 2 if n_heads <= 4 else 3 if n_heads <= 9 else HEAD_GRID[1]
    return -(-n_heads // cols), cols


def _head_maps_update(data: dict) -> dict:
    """z, x, y of the 16 panels; the panels of heads the model does not have are empty. With
    one column (one head) the query axis shows each token with its English gloss; with two the
    glosses would take the room the keys' labels need on a phone, and stay in the hover text
    (``customdata``, English edition: each cell's query and key with their glosses,
    book.toy.orders_example.hover_glosses)."""
    used = range(data["n_heads"])
    rows = data["glossed"] if _head_grid(data["n_heads"])[1] == 1 else data["labels"]
    glossed = orders_example.hover_glosses(list(data["glossed"]), list(data["glossed"]))
    return {"z": [rounded(data["maps"][h], 3) if h in used else [] for h in range(MAX_GRID_HEADS)],
            "x": [data["labels"] if h in used else [] for h in range(MAX_GRID_HEADS)],
            "y": [rows if h in used else [] for h in range(MAX_GRID_HEADS)],
            "customdata": [glossed if h in used else None for h in range(MAX_GRID_HEADS)]}


GRID_GAP = (0.01, 0.025)  # between panels (x, y), in fractions of the plot area (x: at 0.02
# the 16 heads' 4 columns drew 11.9 px cells at 1280 px, under MIN_CELL_PX)


def _head_axes_visible(n_heads: int) -> dict:
    """Layout updates for a model with ``n_heads`` heads: lay its panels out on the grid of
    :func:`_head_grid` (the others hidden), queries labelled in the first column, keys under
    the last row while there is room for one label per key (two columns or fewer)."""
    out = {}
    n_rows, n_cols = _head_grid(n_heads)
    gx, gy = GRID_GAP
    bottom = 0.1 if n_cols <= 2 else 0.0  # room for the key labels under the last row
    width = (1 - gx * (n_cols - 1)) / n_cols
    height = (1 - bottom - gy * (n_rows - 1)) / n_rows
    for h in range(MAX_GRID_HEADS):
        suffix = "" if h == 0 else str(h + 1)
        shown = h < n_heads
        out[f"xaxis{suffix}.visible"] = out[f"yaxis{suffix}.visible"] = shown
        r, c = divmod(h, n_cols) if shown else (0, 0)
        x0, y1 = c * (width + gx), 1 - r * (height + gy)
        out[f"xaxis{suffix}.domain"] = [round(x0, 4), round(x0 + width, 4)] if shown else [0, 0.01]
        out[f"yaxis{suffix}.domain"] = [round(y1 - height, 4), round(y1, 4)] if shown else [0, 0.01]
        # keys under the panels with none below them, while a label per key fits
        out[f"xaxis{suffix}.showticklabels"] = shown and n_cols <= 2 and h + n_cols >= n_heads
        # 16 heads: the grid needs the width for 12 px cells; the tokens are in the hover
        out[f"yaxis{suffix}.showticklabels"] = shown and c == 0 and n_cols <= 3
    out["margin.l"] = 8 if n_cols > 3 else 44  # room for the query labels when shown
    return out


def _head_panel_titles(n_heads: int) -> list[str]:
    return [_tr("maps_panel", h=h) if h < n_heads else "" for h in range(MAX_GRID_HEADS)]


def _head_panel_annotations(n_heads: int) -> list[dict]:
    """The panel titles, each above its panel's top-left corner (wherever the grid puts it)."""
    axes = _head_axes_visible(n_heads)
    out = []
    for h, text in enumerate(_head_panel_titles(n_heads)):
        suffix = "" if h == 0 else str(h + 1)
        x0 = axes[f"xaxis{suffix}.domain"][0]
        y1 = axes[f"yaxis{suffix}.domain"][1]
        out.append({"text": text, "x": x0, "y": y1, "xref": "paper", "yref": "paper",
                    "xanchor": "left", "yanchor": "bottom", "showarrow": False,
                    "font": {"size": 12}, "yshift": 1})
    return out


def head_maps_figure(models: dict, order, layers=(0, 1), start: int = 0) -> go.Figure:
    """Static explorer: a slider over (number of heads, layer); the heads' attention maps for
    ``order`` on a grid sized to the head count (``models``: {n_heads: TinyEncoder}, at most
    16 heads)."""
    models = _head_maps_models(models)
    frames = [heads.head_maps_data(m, order, layer) for m in models.values() for layer in layers]
    start = validate.integer("start", start, low=0, high=len(frames) - 1)
    fig = _head_maps_plot(frames, start)
    steps = []
    for data in frames:
        steps.append({"label": f"{data['n_heads']}·{data['layer']}", "method": "update",
                      "args": [{k: v for k, v in _head_maps_update(data).items()
                                if k in ("z", "y")},
                               {"annotations": _head_panel_annotations(data["n_heads"]),
                                "title.text": _head_maps_title(data),
                                **_head_axes_visible(data["n_heads"])}]})
    slider = {**make_slider(steps, _tr("maps_slider"), active=start), "pad": {"t": 8},
              "font": {"size": 11}}
    fig.update_layout(sliders=[slider])
    return fig


def _head_maps_plot(frames: list[dict], start: int) -> go.Figure:
    """The grid of 16 panels showing ``frames[start]`` (every face of the head maps starts
    from it), each panel's keys and hover glosses those of the order of ``frames``."""
    rows, cols = HEAD_GRID
    fig = make_subplots(rows=rows, cols=cols)
    first = _head_maps_update(frames[start])
    # one order in every frame: each panel's keys and hover glosses are written once, here, and
    # a step restyles the maps and the query labels only (the glosses in every step of all ten
    # frames weighed 200 KB of the chapter's page)
    every = _head_maps_update({**frames[start], "n_heads": MAX_GRID_HEADS,
                               "maps": np.zeros((MAX_GRID_HEADS, 1, 1))})
    for h in range(MAX_GRID_HEADS):
        fig.add_trace(go.Heatmap(
            z=first["z"][h], x=every["x"][h], y=first["y"][h] or every["y"][h],
            customdata=every["customdata"][h],
            # no colour bar: it would take the width the 16-head grid needs for 12 px cells;
            # the title names the scale and the hover gives each weight
            zmin=0, zmax=1, colorscale=COLORSCALE, showscale=False,
            hovertemplate=orders_example.glossed_hover(
                _tr("maps_hover", h=h, query="%{y}", weight="%{z:.3f}", key="%{x}"))
            + "<extra></extra>"),
            row=h // cols + 1, col=h % cols + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=False, tickfont_size=11,
                     showgrid=False, zeroline=False, dtick=1, automargin=True)
    fig.update_xaxes(tickfont_size=11, tickangle=-90, showgrid=False, zeroline=False, dtick=1,
                     automargin=True)
    fig.update_layout(_head_axes_visible(frames[start]["n_heads"]))
    fig.update_layout(annotations=_head_panel_annotations(frames[start]["n_heads"]))
    fig.update_layout(height=880, plot_bgcolor="#ffffff",
                      title={"text": _head_maps_title(frames[start]), "font": {"size": 13},
                             "x": 0, "xanchor": "left", "yref": "paper", "automargin": True,
                             "pad": {"b": 22}},
                      margin={"l": _head_axes_visible(frames[start]["n_heads"])["margin.l"],
                              "r": 8, "t": 20, "b": 10})
    return describe(fig, alt=_tr("maps_alt"), caption=_tr("maps_caption", ln2=float(np.log(2))))


def _ablation_frame(n_heads: int, result: dict) -> dict:
    drop = np.asarray(result["drop"], dtype=float)
    n_layers = drop.shape[0]
    # heads down the rows, layers across: 16 heads stay legible on a phone (two wide columns
    # of 16 rows rather than 16 columns of 9 px)
    return {"z": [rounded(drop.T, 3)], "x": [[_tr("ablation_layer", i=i) for i in range(n_layers)]],
            "y": [[_tr("ablation_head", h=h) for h in range(n_heads)]],
            "text": [[[f"{v:+.1f}" for v in row] for row in drop.T]]}


def _ablation_title(n_heads: int, result: dict) -> str:
    drop = np.asarray(result["drop"], dtype=float)
    return _tr("ablation_title", heads=head_count(n_heads), acc=100 * result["base_accuracy"],
               top=drop.max(), mean=drop.mean())


def ablation_figure(ablations: dict, start: int = 0) -> go.Figure:
    """Static explorer: a slider over the number of heads; a heatmap (head × layer) of how
    many accuracy points the model loses when that one head is zeroed
    (``ablations``: {n_heads: book.studies.heads.ablation(...)})."""
    ablations = dict(ablations)
    if not ablations:
        raise ValueError("ablations is empty: pass {n_heads: book.studies.heads.ablation(model, "
                         "orders)}")
    keys = list(ablations)
    start = validate.integer("start", start, low=0, high=len(keys) - 1)
    top = max(float(np.max(r["drop"])) for r in ablations.values())
    frames = {h: _ablation_frame(h, r) for h, r in ablations.items()}
    first = frames[keys[start]]
    fig = go.Figure(go.Heatmap(
        z=first["z"][0], x=first["x"][0], y=first["y"][0], text=first["text"][0],
        texttemplate="%{text}", zmin=0, zmax=max(top, 1e-6), colorscale=COLORSCALE,
        colorbar={"title": {"text": _tr("ablation_colorbar")}},
        hovertemplate=_tr("ablation_hover", layer="%{x}", head="%{y}", points="%{z:.2f}")
        + "<extra></extra>"))
    steps = [{"label": str(h), "method": "update",
              "args": [frames[h], {"title.text": _ablation_title(h, ablations[h])}]}
             for h in keys]
    fig.update_layout(sliders=[make_slider(steps, _tr("ablation_slider"), active=start)],
                      title={"text": _ablation_title(keys[start], ablations[keys[start]]),
                             "font": {"size": 13}, "yref": "paper", "automargin": True,
                             "pad": {"b": 30}},
                      yaxis={"autorange": "reversed"}, xaxis={"side": "bottom"}, height=560,
                      margin={"l": 70, "r": 20, "t": 40, "b": 20})
    return describe(fig, alt=_tr("ablation_alt"), caption=_ablation_caption(ablations))


def _ablation_caption(ablations: dict) -> str:
    """The ablation explorer's caption: the costliest head of the fewest and of the most
    heads, and which way it went."""
    few, most = min(ablations), max(ablations)
    top = {h: float(np.max(ablations[h]["drop"])) for h in (few, most)}
    if few == most:
        return _tr("ablation_caption_one", heads=head_count(few), top=top[few])
    # compared as the caption shows them (one decimal)
    verdict = _tr("ablation_less" if round(top[most], 1) < round(top[few], 1)
                  else "ablation_not_less")
    return _tr("ablation_caption", few=head_count(few), top_few=top[few],
               most=head_count(most), top_most=top[most], verdict=verdict)


def redundancy_figure(trained: dict, untrained: dict | None = None) -> go.Figure:
    """Mean Jensen–Shannon divergence between the heads of each layer against the number of
    heads (``trained``: {n_heads: (n_layers,) array from book.studies.heads.redundancy}); dashed:
    the same models before training. 0 = the heads attend identically; ln 2 = disjointly."""
    trained = {h: np.asarray(v, dtype=float) for h, v in dict(trained).items() if h > 1}
    if not trained:
        raise ValueError("trained needs at least one model with two or more heads")
    x = [str(h) for h in trained]
    n_layers = len(next(iter(trained.values())))
    fig = go.Figure()
    for layer in range(n_layers):
        color = RUN_COLORS[layer % len(RUN_COLORS)]
        symbol = LAYER_MARKERS[layer % len(LAYER_MARKERS)]
        fig.add_trace(go.Scatter(x=x, y=rounded([v[layer] for v in trained.values()]),
                                 mode="lines+markers", name=_tr("redundancy_trained", layer=layer),
                                 line={"color": color},
                                 marker={"symbol": symbol, "size": 8}))
        if untrained:
            fig.add_trace(go.Scatter(
                x=x, y=rounded([np.asarray(untrained[h], dtype=float)[layer] for h in trained]),
                mode="lines+markers", name=_tr("redundancy_fresh", layer=layer),
                line={"color": color, "dash": "dot"},
                marker={"symbol": f"{symbol}-open", "size": 8}))
    fig.add_hline(y=float(np.log(2)), line_dash="dash", line_color="#7a7a7a",
                  annotation_text=_tr("redundancy_ln2"),
                  annotation_position="bottom left", annotation_font_size=11)
    fig.update_layout(height=400, xaxis={"title": _tr("redundancy_x"),
                                         "type": "category"},
                      # in two lines: in one it is longer than the axis on a phone
                      yaxis={"title": wrap(_tr("redundancy_y"), REDUNDANCY_Y_COLUMNS),
                             "range": [0, 0.75]},
                      legend={"orientation": "h", "y": -0.25, "x": 0, "font": {"size": 12}},
                      margin={"l": 76, "r": 20, "t": 30, "b": 40})
    return describe(fig, alt=_tr("redundancy_alt", counts=_tr("list_join").join(x)),
                    caption=_redundancy_caption(trained, untrained))


def _redundancy_caption(trained: dict, untrained: dict | None) -> str:
    """The redundancy figure's caption: the range of the trained (and untrained) divergences
    it draws, against ln 2, and which way training moved the heads."""
    values = np.concatenate(list(trained.values()))
    ln2 = float(np.log(2))
    text = _tr("redundancy_caption", ln2=ln2, lo=values.min(), hi=values.max())
    if untrained:
        fresh = np.concatenate([np.asarray(untrained[h], dtype=float) for h in trained])
        means = round(float(values.mean()), 2), round(float(fresh.mean()), 2)  # as shown
        way = ("redundancy_apart" if means[0] > means[1] else
               "redundancy_closer" if means[0] < means[1] else "redundancy_same")
        text += _tr("redundancy_caption_fresh", lo=fresh.min(), hi=fresh.max(),
                    trained=values.mean(), fresh=fresh.mean(), way=_tr(way))
    return text


def size_table(rows, n_tokens: int) -> str:
    """The size table of chapter 6's first cell as Markdown: ``rows`` of (d_model, heads, d_k,
    parameters of one attention layer, attention weights per order of ``n_tokens`` tokens)."""
    lines = [_tr("table_header", n=n_tokens), "|---|---|---|---|---|"]
    for d_model, n_heads, d_k, params, weights in rows:
        lines.append(f"| {d_model} | {n_heads} | {d_k} | {params:,} | {weights:,} |")
    return "\n".join(lines) + "\n"


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

HEAD_MAPS_ORDER = "两碗招牌牛肉面，香菜和葱都不要，多加辣。"


def _head_maps_redrawer(models: dict):
    """The redraw of the head maps for ``models`` ({n_heads: TinyEncoder}): one forward pass,
    then only what changed is sent (it remembers what the figure shows)."""
    shown = {"labels": None, "titles": None, "heads": MAX_GRID_HEADS, "axes": {}}

    def redraw(fig, n_heads, layer, order):
        try:
            with timing.torch_threads(1):   # a tiny forward pass: extra threads only wait for cores
                data = heads.head_maps_data(models[n_heads], order, layer)
        except (ValueError, TypeError) as err:
            message = str(err)
            message = message if len(message) < 120 else message[:117] + "…"
            fig.layout.title.text = _tr("maps_error", message=message)
            return
        # numpy arrays skip plotly's per-element validation, and only what changed is sent:
        # a redraw of 16 heads stays well under 50 ms
        relabel = data["labels"] != shown["labels"] or data["n_heads"] != shown["heads"]
        panel = _head_maps_update(data)
        for h, trace in enumerate(fig.data):
            if h < data["n_heads"]:
                trace.z = np.round(data["maps"][h], 3)
                if relabel or h >= shown["heads"]:
                    trace.x, trace.y = panel["x"][h], panel["y"][h]
                    trace.customdata = panel["customdata"][h]
            elif h < shown["heads"]:   # a panel this model has no head for: empty it
                trace.z, trace.x, trace.y, trace.customdata = None, [], [], None
        titles = _head_panel_titles(data["n_heads"])
        if titles != shown["titles"]:
            for annotation, new in zip(fig.layout.annotations,
                                       _head_panel_annotations(data["n_heads"]), strict=True):
                annotation.update(text=new["text"], x=new["x"], y=new["y"])
            axes = _head_axes_visible(data["n_heads"])
            for key, value in axes.items():   # only the axis properties that change
                if shown["axes"].get(key) != value:
                    axis, prop = key.split(".")
                    fig.layout[axis][prop] = value
            shown["axes"] = axes
        fig.layout.title.text = _head_maps_title(data)
        shown.update(labels=data["labels"], titles=titles, heads=data["n_heads"])

    return redraw


def _head_maps_models(models) -> dict:
    models = dict(models)
    if not models:
        raise ValueError("models is empty: pass {n_heads: trained TinyEncoder}")
    return models


def _head_maps_controls(models: dict, order: str) -> list:
    counts = list(models)
    last = next(iter(models.values())).n_layers - 1
    return [controls.Choice(name="n_heads", label=_tr("live_heads"), slider=True,
                            options=[(h, head_count(h)) for h in counts], value=counts[0]),
            controls.Slider(name="layer", label=_tr("live_layer"), low=0, high=last,
                            value=last, page_menu=True),
            controls.TextBox(name="order", label=_tr("live_order"), value=order,
                             width="420px")]


def _head_maps_first(models: dict, order: str):
    """The first state's figure (the first model's last layer, as every face opens), its
    controls and the redraw that drew it."""
    first_controls = _head_maps_controls(models, order)
    first = controls.first_values(first_controls)
    fig = _head_maps_plot([heads.head_maps_data(models[first["n_heads"]], order,
                                                first["layer"])], 0)
    redraw = _head_maps_redrawer(models)
    redraw(fig, **first)
    return fig, first_controls, redraw


def head_maps_live(models: dict, order: str = HEAD_MAPS_ORDER) -> LiveExplorer:
    """Pick a trained model (its number of heads), a layer, and type any order: every head's
    attention map recomputes (one forward pass of the small model)."""
    fig, first_controls, redraw = _head_maps_first(_head_maps_models(models), order)
    return LiveExplorer(fig, widgets_for(first_controls), redraw,
                        adds=i18n.tr("ch06.live_adds_maps"))


# The head maps in the HTML book: the page runs the chosen model on the typed order. Each cell
# keeps at least 12 px on a desktop (tests/legibility.py's MIN_CELL_PX; the plot is 636 px wide
# there, measured in the built book at 1280 px; 672 px with 16 heads, whose grid has no query
# labels), so a model draws orders of at most as many words as its grid's columns leave room
# for (48: the generator's longest).
HEAD_MAPS_PLOT_PX, HEAD_MAPS_WIDE_PLOT_PX, HEAD_MAPS_CELL_PX = 636, 672, 12
HEAD_MAPS_TITLE_COLUMNS = 40   # the typed order's line of the title (book.face.plotting.wrap)


def head_maps_max_words(n_heads: int) -> int:
    """The longest order the page draws for a model of ``n_heads`` heads (cells ≥ 12 px)."""
    cols = _head_grid(validate.integer("n_heads", n_heads, low=1, high=MAX_GRID_HEADS))[1]
    plot = HEAD_MAPS_WIDE_PLOT_PX if cols > 3 else HEAD_MAPS_PLOT_PX
    panel = plot * (1 - GRID_GAP[0] * (cols - 1)) / cols
    return min(orders.MAX_LEN, int(panel // HEAD_MAPS_CELL_PX))


def head_maps_inpage(models: dict, order: str = HEAD_MAPS_ORDER) -> inpage.InPage:
    """The HTML book's twin of :func:`head_maps_live`: the page runs the chosen model
    (book/toy/export.py's weights, book/face/inpage/encoder.js) on the order the reader
    types and redraws every head's map of the chosen layer, the grid laid out as here."""
    models = _head_maps_models(models)
    fig, first_controls, _ = _head_maps_first(models, order)
    counts = list(models)
    example = "三盘饺子，多放醋，不要蒜。"
    # each model's weights as far as its last attention map (the maps are all the page draws)
    spec = {"models": {str(h): export.page_model(m, maps_only=True) for h, m in models.items()},
            "language": export.page_language(), "zh": i18n.language() == "zh",
            "grids": {str(h): {**_head_axes_visible(h),
                               "annotations": _head_panel_annotations(h)} for h in counts},
            "columns": {str(h): _head_grid(h)[1] for h in counts},
            "max_words": {str(h): head_maps_max_words(h) for h in counts},
            "heads": {str(h): head_count(h) for h in counts}, "panels": MAX_GRID_HEADS,
            "title_columns": HEAD_MAPS_TITLE_COLUMNS, "key_px": 14, "gap": GRID_GAP[0],
            "messages": {
                "title": _tr("maps_title", heads="{heads}", layer="{layer}", js="{js}",
                             text="{text}"),
                "js": i18n.table()["ch06.maps_js"].get(i18n.language())
                or i18n.table()["ch06.maps_js"]["en"],
                "empty": _tr("inpage_empty", example=example),
                "unknown": _tr("inpage_unknown", word="{word}", words=orders.word_list()),
                "long": _tr("inpage_long", heads="{heads}", max_words="{max_words}", n="{n}")}}
    return inpage.InPage("head_maps", fig, inpage.page_controls(first_controls), spec,
                         _tr("inpage_adds"))


def head_maps_explorer(models: dict, order: str = HEAD_MAPS_ORDER):
    """Type an order: in the book's HTML the page computes every head's map
    (:func:`head_maps_inpage`), in Jupyter the kernel does (:func:`head_maps_live`)."""
    return inpage.either(lambda: head_maps_live(models, order),
                         lambda: head_maps_inpage(models, order))


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

def _ch6_max_heads(d_model: int = 128, min_d_k: int = 16) -> int:
    return max(h for h in range(1, d_model + 1) if d_model % h == 0 and d_model // h >= min_d_k)


value_exercise("ch6.max_heads", "d_model = 128: the most heads that keep d_k ≥ 16",
               reference=_ch6_max_heads, mistakes=lambda: [16, 128 * 16, 4, 7],
               answer=lambda: Answer("number", [
                   (Is.equal(_ch6_max_heads()), right("ch06.ex_max_heads_ok")),
                   (Is.equal(16), wrong("ch06.ex_max_heads_16")),
                   (Is.above(128), wrong("ch06.ex_max_heads_times")),
                   (Is.all(Is.below(_ch6_max_heads()), Is.divides(128)),
                    wrong("ch06.ex_max_heads_small"))],
                   otherwise=wrong("ch06.ex_max_heads_hint")))


def _ch6_parameters() -> int:
    return heads.attention_parameters(64, 16)


value_exercise("ch6.parameters", "Parameters of mha.MultiHeadSelfAttention(64, 16)",
               reference=_ch6_parameters,
               mistakes=lambda: [4 * 64 * 64, 16 * 4 * (4 * 4 + 4), 16 * 4 * (64 * 64 + 64),
                                 3 * (64 * 64 + 64)],
               answer=lambda: Answer("number", [
                   (Is.equal(_ch6_parameters()), right("ch06.ex_params_ok")),
                   (Is.equal(4 * 64 * 64), wrong("ch06.ex_params_bias")),
                   (Is.equal(3 * (64 * 64 + 64)), wrong("ch06.ex_params_wo")),
                   (Is.above(_ch6_parameters()), wrong("ch06.ex_params_big"))],
                   otherwise=wrong("ch06.ex_params_hint")))


def _ch6_js(p, q):
    return float(heads.js_divergence(p, q))


def _ch6_js_mistakes():
    def kl(p, q):
        p, q = np.asarray(p, float), np.asarray(q, float)
        keep = p > 0
        with np.errstate(divide="ignore"):
            return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))

    def bits(p, q):
        return _ch6_js(p, q) / np.log(2)

    def symmetric_kl(p, q):
        return 0.5 * (kl(p, q) + kl(q, p))

    return [kl, bits, symmetric_kl, lambda p, q: float(np.abs(np.subtract(p, q)).sum()), 0.5]


@exercise("ch6.js", "Write js_divergence(p, q) in nats", reference=lambda: _ch6_js,
          mistakes=_ch6_js_mistakes)
def _ch6_js_check(func):
    if not callable(func):
        return False, _tr("ex_js_callable")
    cases = [([0.5, 0.5], [0.5, 0.5]), ([1.0, 0.0], [0.0, 1.0]), ([0.7, 0.2, 0.1], [0.1, 0.3, 0.6]),
             ([0.25, 0.25, 0.5, 0.0], [0.0, 0.5, 0.25, 0.25]), ([1.0, 0.0, 0.0], [0.2, 0.3, 0.5])]
    for p, q in cases:
        got = float(call(func, p, q).reshape(()))
        want = _ch6_js(p, q)
        if np.isclose(got, want, atol=1e-9):
            continue
        if not np.isfinite(got):
            return False, _tr("ex_js_nan", p=p, q=q)
        if np.isclose(got, want / np.log(2), atol=1e-9):
            return False, _tr("ex_js_bits")
        if not np.isclose(float(call(func, q, p).reshape(())), got, atol=1e-9):
            return False, _tr("ex_js_symmetric")
        return False, _tr("ex_js_wrong", p=p, q=q)
    return True, _tr("ex_js_ok")


# --- the prose's verdicts (the chapter's claims follow its own numbers) ----------------------

JS_SAME = 0.03  # nats: two redundancies closer than this read as "about as different"


def sweep_verdicts(runs: dict, reseeded) -> dict[str, str]:
    """The sentences chapter 6 glues into its prose about the sweep: is more heads worse,
    beyond the noise between two seeds, and did the narrowest heads come last? ``runs``:
    :func:`book.studies.heads.sweep`; ``reseeded``: the one-head run with another seed."""
    runs = dict(runs)
    if 1 not in runs or len(runs) < 2:
        raise ValueError("runs must hold the one-head model and at least one other: pass "
                         "book.studies.heads.sweep((1, 2, 4, 8, 16), ...)")
    # percentages as the page shows them (one decimal): the words follow the printed numbers
    acc = {h: 100 * r.accuracy for h, r in runs.items()}
    worst = min(acc, key=acc.get)
    spread = numbers.shown_gap(max(acc.values()), acc[worst])
    beyond = spread > numbers.shown_gap(acc[1], 100 * reseeded.accuracy)
    narrow_last = worst == max(runs)
    worse = "worse_no" if not narrow_last else "worse_yes" if beyond else "worse_little"
    # the held-out loss may show a direction that accuracy does not: down or up with every
    # added head (runs without a loss, e.g. in a test, are judged by accuracy alone)
    counts = sorted(runs)
    losses = [getattr(runs[h], "loss", None) for h in counts]
    trend = None
    if all(loss is not None for loss in losses):
        if all(b < a for a, b in zip(losses[:-1], losses[1:], strict=True)):
            trend = "loss_down"
        elif all(b > a for a, b in zip(losses[:-1], losses[1:], strict=True)):
            trend = "loss_up"
    side = "yes" if narrow_last else trend or "no"
    facts = {"first": losses[0], "last": losses[-1], "most": counts[-1]} if trend else {}
    return {"worse_verdict": _tr(worse),
            "noise_verdict": _tr("noise_beyond" if beyond else "noise_within"),
            "direction_verdict": _tr(f"direction_{side}", **facts),
            "summary_direction": _tr(f"summary_direction_{side}", **facts)}


def js_verdict(few, many) -> str:
    """Compare the per-layer redundancy (book.studies.heads.redundancy) of a model with few heads
    (``few``) and one with many (``many``): about the same, or where they differ most."""
    few, many = np.asarray(few, dtype=float), np.asarray(many, dtype=float)
    if few.shape != many.shape or few.ndim != 1:
        raise ValueError("few and many must be book.studies.heads.redundancy(...) of two models "
                         "with "
                         f"the same layers, got shapes {few.shape} and {many.shape}")
    layer = int(np.argmax(np.abs(many - few)))
    gap = many[layer] - few[layer]
    if abs(gap) < JS_SAME:
        return _tr("js_same")
    return _tr("js_less" if gap < 0 else "js_more", layer=layer, many=many[layer],
               few=few[layer])


def gap_verdict(gap: float, seed_gap: float) -> str:
    """Is the accuracy gap between one and two heads within the gap between two seeds?"""
    return _tr("gap_within" if gap <= seed_gap else "gap_outside")


def slower_verdict(slower: bool) -> str:
    """The prose's answer to "is the model with 16 heads slower?"."""
    return _tr("slower_yes" if slower else "slower_no")


# --- concept questions (book/face/questions.py; their words: book/strings/ch06.toml) ---
questions.question("ch06.params", kind="predict", right=2,
                   answered_in="c003")
questions.question("ch06.grows", kind="explain", right=3)
questions.question("ch06.bug_split", kind="bug", right=1, code="""\
d_model, n_heads = 64, 6
d_k = d_model // n_heads
""")
