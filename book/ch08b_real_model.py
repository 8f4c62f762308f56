"""Chapter 8b's figures, live faces and exercises: all-MiniLM-L6-v2's 72 heads.

Static faces (plotly, controls that run in the browser): :func:`head_view` (dropdown =
sentence, slider = layer · head), :func:`model_view` (dropdown = sentence, slider = layer, the
layer's 12 heads side by side), :func:`stats_explorer` (dropdown = what is measured, per
layer × head), :func:`layer_profile`, :func:`relation_figure`, :func:`sink_figure`.
Live faces (ipywidgets + FigureWidget): :func:`head_view_live`, :func:`model_view_live`, for
any sentence a reader types. The numbers come from :mod:`book.pretrained` and
:mod:`book.head_stats`.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import head_stats, pretrained, validate
from .checks import NotAnswered, exercise
from .live import LiveExplorer

COLORSCALE = "Blues"  # light = low weight, dark = high: reads the same in greyscale
GRID = (3, 4)  # the model view's 12 heads
MODEL_VIEW_TOKENS = 12  # longer sentences would draw cells under 12 px in a 1280 px page
KIND_COLORS = {"[CLS]": "#1f3b73", "[SEP]": "#b3261e", "periods and commas": "#c77700",
               "previous token": "#2e7d32", "next token": "#7a4fa0", "same token": "#7a7a7a"}


def _r(a, digits: int = 2):
    """Rounded nested lists (a small page: two digits are enough to read a weight)."""
    return np.round(np.asarray(a, dtype=float), digits).tolist()


def _head(layer: int, head: int) -> str:
    return f"L{layer} H{head}"


def _views(model, texts, names):
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty: pass at least one sentence")
    names = [f"sentence {i + 1}" for i in range(len(texts))] if names is None else list(names)
    if len(names) != len(texts):
        raise ValueError(f"got {len(texts)} texts but {len(names)} names")
    return [pretrained.view_data(model, t) for t in texts], names


def _axes(labels, suffix: str = "") -> dict:
    n = len(labels)
    return {f"xaxis{suffix}.categoryarray": labels, f"xaxis{suffix}.range": [-0.5, n - 0.5],
            f"yaxis{suffix}.categoryarray": labels, f"yaxis{suffix}.range": [n - 0.5, -0.5]}


def _caption(text: str, y: float = 1.02) -> dict:
    return {"text": html.escape(text), "x": 0, "xref": "paper", "xanchor": "left", "y": y,
            "yref": "paper", "yanchor": "bottom", "showarrow": False, "font": {"size": 12}}


# --- head view and model view ---------------------------------------------------------------

def head_view(model, texts, names=None, start: tuple[int, int] = (0, 0)) -> go.Figure:
    """One head on one sentence: the dropdown picks the sentence, the slider the head (all 72,
    layer by layer). Rows = queries, columns = keys."""
    views, names = _views(model, texts, names)
    c = model.config
    layer0 = validate.integer("layer", start[0], low=0, high=c.n_layers - 1)
    head0 = validate.integer("head", start[1], low=0, high=c.n_heads - 1)
    fig = go.Figure()
    for i, v in enumerate(views):
        fig.add_trace(go.Heatmap(
            z=_r(v["maps"][layer0, head0]), x=v["labels"], y=v["labels"], zmin=0, zmax=1,
            colorscale=COLORSCALE, visible=i == 0, colorbar={"title": {"text": "weight"}},
            hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.2f}<extra></extra>"))
    buttons = [{"label": name, "method": "update",
                "args": [{"visible": [j == i for j in range(len(views))]},
                         {**_axes(v["labels"]), "annotations": [_caption(v["caption"])]}]}
               for i, (name, v) in enumerate(zip(names, views, strict=True))]
    steps = [{"label": _head(layer, head), "method": "restyle",
              "args": [{"z": [_r(v["maps"][layer, head]) for v in views]}]}
             for layer in range(c.n_layers) for head in range(c.n_heads)]
    first = _axes(views[0]["labels"])
    fig.update_layout(
        updatemenus=[{"buttons": buttons, "direction": "down", "showactive": True, "x": 0,
                      "xanchor": "left", "y": 1.14, "yanchor": "bottom"}],
        sliders=[{"active": layer0 * c.n_heads + head0, "steps": steps, "pad": {"t": 70},
                  "currentvalue": {"prefix": "head shown (L = layer, H = head, from 0): "}}],
        annotations=[_caption(views[0]["caption"])], height=700,
        xaxis={"title": "key (attended to)", "tickangle": -90, "categoryorder": "array",
               "categoryarray": first["xaxis.categoryarray"], "range": first["xaxis.range"]},
        yaxis={"title": "query (attending)", "categoryorder": "array", "automargin": True,
               "categoryarray": first["yaxis.categoryarray"], "range": first["yaxis.range"]},
        margin={"l": 40, "r": 20, "t": 130, "b": 40})
    return fig


def model_view(model, texts, names=None, layer: int = 0,
               max_tokens: int = MODEL_VIEW_TOKENS) -> go.Figure:
    """A layer's 12 heads side by side: the dropdown picks the sentence, the slider the layer.

    One heatmap per head and sentence (the dropdown shows one sentence's 12); each slider step
    restyles all of them, so the two controls combine. Sentences longer than ``max_tokens``
    tokens raise: their cells would be too small to read (use :func:`head_view`)."""
    views, names = _views(model, texts, names)
    max_tokens = validate.integer("max_tokens", max_tokens, low=1)
    for v in views:
        if len(v["labels"]) > max_tokens:
            raise ValueError(f"{v['text']!r} has {len(v['labels'])} tokens; the model view "
                             f"draws at most max_tokens={max_tokens} legibly. Use a shorter "
                             "sentence, or head_view for this one")
    c = model.config
    layer = validate.integer("layer", layer, low=0, high=c.n_layers - 1)
    rows, cols = GRID
    fig = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.03, vertical_spacing=0.08,
                        subplot_titles=[f"head {h}" for h in range(c.n_heads)])
    for i, v in enumerate(views):
        for h in range(c.n_heads):
            fig.add_trace(go.Heatmap(
                z=_r(v["maps"][layer, h]), x=v["labels"], y=v["labels"], zmin=0, zmax=1,
                colorscale=COLORSCALE, visible=i == 0, showscale=h == 0,
                colorbar={"title": {"text": "weight"}, "len": 0.4, "y": 0.8},
                hovertemplate=f"head {h}<br>query %{{y}}<br>key %{{x}}<br>weight %{{z:.2f}}"
                              "<extra></extra>"), row=h // cols + 1, col=h % cols + 1)
    fig.update_xaxes(showticklabels=False, categoryorder="array", tickfont_size=10,
                     tickangle=-90)
    fig.update_yaxes(showticklabels=False, categoryorder="array", tickfont_size=10)
    fig.update_yaxes(showticklabels=True, col=1)  # token labels on the outer edges only
    fig.update_xaxes(showticklabels=True, row=rows)
    titles = [a.to_plotly_json() for a in fig.layout.annotations]
    n_axes = c.n_heads

    def axes(labels):
        out = {}
        for k in range(n_axes):
            out.update(_axes(labels, "" if k == 0 else str(k + 1)))
        return out

    buttons = []
    for i, (name, v) in enumerate(zip(names, views, strict=True)):
        visible = [j == i for j in range(len(views)) for _ in range(c.n_heads)]
        buttons.append({"label": name, "method": "update",
                        "args": [{"visible": visible},
                                 {**axes(v["labels"]),
                                  "annotations": titles + [_caption(v["caption"], 1.06)]}]})
    steps = [{"label": f"layer {lay}", "method": "restyle",
              "args": [{"z": [_r(v["maps"][lay, h]) for v in views
                              for h in range(c.n_heads)]}]} for lay in range(c.n_layers)]
    fig.update_layout(**axes(views[0]["labels"]))
    fig.update_layout(
        annotations=titles + [_caption(views[0]["caption"], 1.06)], height=820,
        updatemenus=[{"buttons": buttons, "direction": "down", "showactive": True, "x": 0,
                      "xanchor": "left", "y": 1.12, "yanchor": "bottom"}],
        sliders=[{"active": layer, "steps": steps, "pad": {"t": 70},
                  "currentvalue": {"prefix": "layer (from 0): "}}],
        margin={"l": 70, "r": 20, "t": 120, "b": 20})
    return fig


# --- the measurements -------------------------------------------------------------------------

STAT_KINDS = ("[CLS]", "[SEP]", "periods and commas", "previous token", "same token",
              "next token")


def _stat_title(kind: str, shares: dict, entropy: dict) -> str:
    if kind == "entropy":
        return (f"mean entropy of a row (nats)<br>an even spread: {entropy['even']:.2f}")
    return f"mean share of attention on: {kind}<br>an even spread: {shares[kind]['even']:.2f}"


def stats_explorer(shares: dict, entropy: dict, start: str = "[CLS]") -> go.Figure:
    """Layer × head heatmap of one measurement (dropdown): the share on [CLS], [SEP],
    periods and commas, the previous / same / next token, or the row entropy."""
    kinds = list(STAT_KINDS) + ["entropy"]
    validate.choice("start", start, kinds)
    data = {k: shares[k]["mass"] for k in STAT_KINDS}
    data["entropy"] = entropy["all"]
    n_layers, n_heads = data["[CLS]"].shape

    def trace_args(kind):
        z = data[kind]
        top = float(max(np.log(2) if kind == "entropy" else 1.0, z.max()))
        return {"z": [_r(z)], "text": [[[f"{x:.2f}" for x in row] for row in z]],
                "zmax": [top]}

    first = trace_args(start)
    fig = go.Figure(go.Heatmap(
        z=first["z"][0], text=first["text"][0], texttemplate="%{text}", zmin=0,
        zmax=first["zmax"][0], colorscale=COLORSCALE, x=[f"head {h}" for h in range(n_heads)],
        y=[f"layer {lay}" for lay in range(n_layers)], colorbar={"title": {"text": "value"}},
        hovertemplate="%{y}, %{x}: %{z:.2f}<extra></extra>"))
    buttons = [{"label": k, "method": "update",
                "args": [trace_args(k), {"title.text": _stat_title(k, shares, entropy)}]}
               for k in kinds]
    fig.update_layout(
        title={"text": _stat_title(start, shares, entropy), "font": {"size": 13}, "y": 0.97},
        updatemenus=[{"buttons": buttons, "direction": "down", "showactive": True, "x": 0,
                      "xanchor": "left", "y": 1.22, "yanchor": "bottom"}],
        yaxis={"autorange": "reversed"}, xaxis={"side": "bottom", "tickangle": -45},
        height=430, margin={"l": 70, "r": 20, "t": 120, "b": 60})
    return fig


def layer_profile(shares: dict) -> go.Figure:
    """Mean share per layer (over its 12 heads) for each kind of key; dotted: an even spread
    (the same for the three positions)."""
    layers = head_stats.per_layer(shares)
    x = [f"layer {i}" for i in range(len(layers["[CLS]"]))]
    fig = go.Figure()
    for kind in STAT_KINDS:
        fig.add_trace(go.Scatter(x=x, y=_r(layers[kind], 3), name=kind, mode="lines+markers",
                                 line={"color": KIND_COLORS[kind]}))
    fig.add_trace(go.Scatter(x=x, y=[round(shares["[CLS]"]["even"], 3)] * len(x),
                             name="one token, even spread", mode="lines",
                             line={"color": "#7a7a7a", "dash": "dot"}))
    fig.update_layout(height=420, yaxis={"title": "mean share of attention", "range": [0, 1]},
                      legend={"orientation": "h", "y": -0.2, "x": 0, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return fig


def relation_figure(accuracy: dict) -> go.Figure:
    """Layer × head: how often a determiner's most-attended word is its noun, with the best
    fixed offset and chance in the title."""
    acc = accuracy["accuracy"]
    k, base = max(accuracy["offset"].items(), key=lambda kv: kv[1])
    n_layers, n_heads = acc.shape
    fig = go.Figure(go.Heatmap(
        z=_r(acc), text=[[f"{x:.2f}" for x in row] for row in acc], texttemplate="%{text}",
        zmin=0, zmax=1, colorscale=COLORSCALE, x=[f"head {h}" for h in range(n_heads)],
        y=[f"layer {lay}" for lay in range(n_layers)], colorbar={"title": {"text": "accuracy"}},
        hovertemplate="%{y}, %{x}: %{z:.2f}<extra></extra>"))
    fig.update_layout(
        title={"text": f"determiner → its noun, {accuracy['n']} hand-labelled pairs<br>best "
                       f"fixed offset ({k:+d}): {base:.2f}; a random other word: "
                       f"{accuracy['chance']:.2f}", "font": {"size": 13}},
        yaxis={"autorange": "reversed"}, xaxis={"tickangle": -45}, height=400,
        margin={"l": 70, "r": 20, "t": 80, "b": 60})
    return fig


def sink_figure(sink: dict) -> go.Figure:
    """For each kind of key: the attention weight that zeroing it removes, and how far the
    sentence vectors move (1 − cosine)."""
    kinds = list(sink)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.18,
                        subplot_titles=["attention weight removed (mean per row)",
                                        "sentence vectors moved (mean 1 − cosine)"])
    for col, key, color in ((1, "mass", "#9ab0d6"), (2, "change", "#1f3b73")):
        fig.add_trace(go.Bar(x=kinds, y=_r([sink[k][key] for k in kinds], 4),
                             marker_color=color, showlegend=False,
                             text=[f"{sink[k][key]:.3f}" for k in kinds], textposition="outside",
                             hovertemplate="%{x}: %{y:.4f}<extra></extra>"), row=1, col=col)
    fig.update_yaxes(range=[0, 1.15 * max(v["mass"] for v in sink.values())], row=1, col=1)
    fig.update_yaxes(range=[0, 1.25 * max(v["change"] for v in sink.values())], row=1, col=2)
    fig.update_xaxes(tickangle=-30)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=400, margin={"l": 50, "r": 20, "t": 50, "b": 60})
    return fig


# --- live faces --------------------------------------------------------------------------------

def _live_text(model, state, text, message) -> dict | None:
    """The view data of ``text`` (cached), or None with the error shown in ``message``."""
    if state.get("text") != text:
        try:
            state["data"] = pretrained.view_data(model, text)
        except (ValueError, TypeError) as err:
            message.value = f'<span style="color:#b3261e">⚠ {html.escape(str(err))}</span>'
            return None
        state["text"] = text
    return state["data"]


def head_view_live(model=None, text: str = "The animal didn't cross the street because it "
                   "was too tired.") -> LiveExplorer:
    """Type any English sentence, pick a layer and a head: its attention map."""
    model = pretrained.load() if model is None else model
    c = model.config
    message = widgets.HTML(layout={"width": "100%"})
    state: dict = {}

    def redraw(fig, text, layer, head):
        d = _live_text(model, state, text, message)
        if d is None:
            return
        t = fig.data[0]
        t.x, t.y, t.z = d["labels"], d["labels"], np.round(d["maps"][layer, head], 3)
        for key, value in _axes(d["labels"]).items():
            axis, prop = key.split(".")
            fig.layout[axis][prop] = value
        fig.layout.annotations[0].text = html.escape(d["caption"])
        message.value = f"{_head(layer, head)}: rows = queries, columns = keys"

    controls = {
        "text": widgets.Text(value=text, description="sentence", continuous_update=False,
                             layout={"width": "520px"}),
        "layer": widgets.Dropdown(options=[(f"layer {i}", i) for i in range(c.n_layers)],
                                  value=0, description="layer"),
        "head": widgets.Dropdown(options=[(f"head {i}", i) for i in range(c.n_heads)],
                                 value=2, description="head"),
    }
    fig = head_view(model, [text], start=(0, 2))
    fig.layout.updatemenus, fig.layout.sliders = [], []
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.message = message
    explorer.widget = widgets.VBox([widgets.HBox(list(controls.values())), message,
                                    explorer.figure])
    explorer.update()
    return explorer


def model_view_live(model=None, text: str = "one bowl of beef noodles, no coriander, extra "
                    "chili") -> LiveExplorer:
    """Type any English sentence, pick a layer: its 12 heads."""
    model = pretrained.load() if model is None else model
    c = model.config
    message = widgets.HTML(layout={"width": "100%"})
    state: dict = {}

    def redraw(fig, text, layer):
        d = _live_text(model, state, text, message)
        if d is None:
            return
        relabel = state.get("shown") != d["labels"]
        for h, t in enumerate(fig.data):
            t.z = np.round(d["maps"][layer, h], 3)
            if relabel:
                t.x, t.y = d["labels"], d["labels"]
        if relabel:
            for k in range(c.n_heads):
                for key, value in _axes(d["labels"], "" if k == 0 else str(k + 1)).items():
                    axis, prop = key.split(".")
                    fig.layout[axis][prop] = value
            state["shown"] = d["labels"]
        fig.layout.annotations[-1].text = html.escape(d["caption"])
        message.value = f"layer {layer}: 12 heads, rows = queries, columns = keys"

    controls = {
        "text": widgets.Text(value=text, description="sentence", continuous_update=False,
                             layout={"width": "520px"}),
        "layer": widgets.IntSlider(value=0, min=0, max=c.n_layers - 1, description="layer"),
    }
    fig = model_view(model, [text], max_tokens=pretrained.MAX_TOKENS)
    fig.layout.updatemenus, fig.layout.sliders = [], []
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.message = message
    explorer.widget = widgets.VBox([widgets.HBox(list(controls.values())), message,
                                    explorer.figure])
    explorer.update()
    return explorer


# --- exercises ----------------------------------------------------------------------------------

_CACHE: dict = {}


def _measured() -> dict:
    """The chapter's measurements on the shipped model (computed once per process)."""
    if "shares" not in _CACHE:
        model = pretrained.load()
        maps = head_stats.all_maps(model, head_stats.SENTENCES)
        _CACHE.update(model=model, maps=maps, shares=head_stats.token_shares(maps))
    return _CACHE


def _layer_entropy() -> np.ndarray:
    return head_stats.entropies(_measured()["maps"])["all"].mean(axis=1)


def _broad_layer() -> int:
    return int(np.argmax(_layer_entropy()))


def _broad_mistakes():
    e = _layer_entropy()
    second = int(np.argsort(e)[-2])
    return [int(np.argmin(e)), second, _broad_layer() + 1, "layer 0", 2.5]


@exercise("ch8b.broad_layer", "Which layer spreads its attention most (highest mean entropy)?",
          reference=_broad_layer, mistakes=_broad_mistakes)
def _broad_layer_check(answer):
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return False, "Answer with the layer's number, an integer counted from zero."
    e = _layer_entropy()
    if not 0 <= answer < len(e):
        return False, f"The model has {len(e)} layers, numbered from zero."
    if answer == _broad_layer():
        return True, f"Correct: its rows have a mean entropy of {e[answer]:.2f} nats."
    if answer == int(np.argmin(e)):
        return False, "That is the *sharpest* layer: its entropy is the lowest. Look for the top."
    if answer == _broad_layer() + 1:
        return False, "Count the layers from zero, as the figures do."
    return False, ("Close, but another layer is higher still. Pick 'entropy' in the "
                   "measurement menu and average each row.")


def _prev_head() -> tuple[int, int]:
    layer, head, _ = head_stats.positional_heads(_measured()["shares"])["previous token"][0]
    return (layer, head)


def _prev_mistakes():
    heads = head_stats.positional_heads(_measured()["shares"])
    wrong = [(1, 3), (_prev_head()[0] + 1, _prev_head()[1] + 1), "L0 H2"]
    if heads["next token"]:
        wrong.append(heads["next token"][0][:2])
    return [w for w in wrong if w != _prev_head()]


@exercise("ch8b.previous_head", "Which head looks at the previous token?",
          reference=_prev_head, mistakes=_prev_mistakes)
def _previous_head(answer):
    try:
        layer, head = (int(v) for v in answer)
    except (TypeError, ValueError):
        return False, "Answer with a pair (layer, head), both counted from 0, e.g. (3, 7)."
    shares = _measured()["shares"]
    prev, nxt = shares["previous token"]["mass"], shares["next token"]["mass"]
    if not (0 <= layer < prev.shape[0] and 0 <= head < prev.shape[1]):
        return False, f"Layers run 0–{prev.shape[0] - 1} and heads 0–{prev.shape[1] - 1}."
    if (layer, head) == _prev_head():
        return True, (f"Correct: it puts {prev[layer, head]:.2f} of every token's attention on "
                      "the token just before it.")
    if nxt[layer, head] > 0.5:
        return False, "That head looks at the *next* token. Pick 'previous token' in the menu."
    return False, ("Pick 'previous token' in the measurement menu and find the darkest cell "
                   "(layers and heads are counted from 0).")


def _word_map_reference():
    def to_words(weights, words):
        d = {"maps": np.asarray(weights, dtype=float)[None, None], "words": list(words)}
        return head_stats.word_map(d)[0, 0]

    return to_words


def _word_cases():
    rng = np.random.default_rng(4)
    cases = []
    for words in ([None, 0, 1, 1, 2, None], [None, 0, 0, 0, 1, 2, 2, None], [None, 0, None]):
        w = rng.random((len(words), len(words)))
        cases.append((w / w.sum(1, keepdims=True), words))
    return cases


def _word_map_mistakes():
    def mean_both(weights, words):  # averages the key pieces too
        ids = sorted({w for w in words if w is not None})
        m = np.array([[float(w == i) for i in ids] for w in words])
        return (m / m.sum(0)).T @ np.asarray(weights) @ (m / m.sum(0))

    def sum_both(weights, words):  # sums the query pieces too
        ids = sorted({w for w in words if w is not None})
        m = np.array([[float(w == i) for i in ids] for w in words])
        return m.T @ np.asarray(weights) @ m

    def tokens(weights, words):  # no conversion at all
        return np.asarray(weights)

    return [mean_both, sum_both, tokens]


@exercise("ch8b.word_map", "Write to_words(weights, words): a token map as a word map",
          reference=_word_map_reference, mistakes=_word_map_mistakes)
def _word_map_check(func):
    if not callable(func):
        return False, "Pass the function itself (to_words), not its result."
    ref = _word_map_reference()
    for weights, words in _word_cases():
        got = func(weights.copy(), list(words))
        if got is None:
            raise NotAnswered
        got = np.asarray(got, dtype=float)
        want = ref(weights, words)
        if got.shape != want.shape:
            return False, (f"For {len(want)} words the map is {len(want)} × {len(want)}, got "
                           f"shape {got.shape}: drop [CLS] and [SEP] (word None) and merge "
                           "each word's pieces.")
        if np.allclose(got, want, atol=1e-9):
            continue
        if not np.allclose(got.sum(1), want.sum(1), atol=1e-9):
            return False, ("A row's total is off: *from* a split word, average its pieces' "
                           "rows; *to* a split word, add its pieces' columns.")
        return False, "Close, but some entries differ: sum over key pieces, mean over query."
    return True, "Correct: this is how Clark et al. turn token maps into word maps."
