"""Chapter 8b's figures, live faces and exercises: all-MiniLM-L6-v2's 72 heads.

Static faces (plotly, controls that run in the browser): :func:`head_view_figure`
(dropdown = sentence, slider = layer · head), :func:`model_view_figure` (dropdown = sentence,
slider = layer, the layer's 12 heads side by side), :func:`stats_figure` (dropdown = what is
measured, per layer × head), :func:`layer_profile`, :func:`relation_figure`, :func:`sink_figure`.
Live faces (ipywidgets + FigureWidget): :func:`head_view_live`, :func:`model_view_live`, for
any sentence a reader types. The numbers come from :mod:`book.real.pretrained` and
:mod:`book.real.head_stats`.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.face import questions, views
from book.face.checks import NotAnswered, call, exercise
from book.face.display import table
from book.face.figures import describe
from book.face.live import LiveExplorer
from book.face.plotting import RUN_DASHES, wrap
from book.kit import validate
from book.kit.i18n import tr
from book.real import head_stats, pretrained

COLORSCALE = "Blues"  # light = low weight, dark = high: reads the same in greyscale
GRID = (3, 4)  # the model view's 12 heads
MODEL_VIEW_TOKENS = 12  # longer sentences would draw cells under 12 px in a 1280 px page
CAPTION_WIDTH = 36  # columns (book.face.plotting.text_width) per line of the sentence caption
KIND_COLORS = {"[CLS]": "#1f3b73", "[SEP]": "#b3261e", "periods and commas": "#c77700",
               "previous token": "#2e7d32", "next token": "#7a4fa0", "same token": "#7a7a7a"}


def _r(a, digits: int = 2):
    """Rounded nested lists (a small page: two digits are enough to read a weight)."""
    return np.round(np.asarray(a, dtype=float), digits).tolist()


def _head(layer: int, head: int) -> str:
    return f"L{layer} H{head}"


def kind_label(kind: str) -> str:
    """How the figures name a kind of key ("[CLS]", "periods and commas", "one word", …)."""
    ids = {"periods and commas": "ch08b.kind_punct", "previous token": "ch08b.kind_previous",
           "same token": "ch08b.kind_same", "next token": "ch08b.kind_next",
           "entropy": "ch08b.kind_entropy", "one word": "ch08b.kind_word"}
    return tr(ids[kind]) if kind in ids else kind


def _views(model, texts, names):
    texts = list(texts)
    if not texts:
        raise ValueError("texts is empty: pass at least one sentence")
    names = ([tr("ch08b.sentence_name", i=i + 1) for i in range(len(texts))] if names is None
             else list(names))
    if len(names) != len(texts):
        raise ValueError(f"got {len(texts)} texts but {len(names)} names")
    return [pretrained.view_data(model, t) for t in texts], names


def _caption(text: str) -> str:
    """The sentence above the maps, wrapped to fit a phone screen (in a <span>, which
    book.face.plotting.tidy leaves as written: it would wrap it to a panel title's width).
    CAPTION_WIDTH columns at 12 px stay inside a 358 px figure in DejaVu Sans, the widest
    fallback font, from where the plot starts."""
    lines = "<br>".join(html.escape(line) for line in wrap(text, CAPTION_WIDTH).split("<br>"))
    return f"<span>{lines}</span>"


def cls_weight(sentences) -> np.ndarray:
    """Per layer: the weight a row puts on the first key ([CLS]), averaged over every row,
    head and sentence of ``sentences`` (views.Sentence)."""
    return np.mean([np.asarray(s.maps, dtype=float)[..., 0].mean(axis=(1, 2))
                    for s in sentences], axis=0)


def _described_view(fig, sentences, alt: str, typed: bool):
    """A head or model view with its text alternative and a caption that holds for every
    layer, head and sentence the controls reach: the [CLS] column, per layer (``typed``: a
    live face, whose sentence the reader replaces: "at first")."""
    cls = cls_weight(sentences)
    top = int(np.argmax(cls))
    msg = "ch08b.view_caption_first" if typed else "ch08b.view_caption"
    return describe(fig, alt=alt, caption=tr(msg, lo=float(cls.min()),
                                             hi=float(cls.max()), layer=top))


def _sentences(model, texts, names) -> tuple[list[views.Sentence], list[str]]:
    """The view data of ``texts`` (book.real.pretrained.view_data) as the views draw it."""
    data, names = _views(model, texts, names)
    return [views.Sentence(d["maps"], d["labels"], _caption(d["caption"])) for d in data], names


# --- head view and model view ---------------------------------------------------------------

def _head_view_plot(model, texts, names=None, start: tuple[int, int] = (0, 0),
                    controls: bool = True) -> go.Figure:
    """The head view of ``texts`` as :func:`book.face.views.head_view` draws it (what both
    faces start from; ``controls``: its dropdown and slider, which the live face does without)."""
    sentences, names = _sentences(model, texts, names)
    # the menu a little higher than the views' default: a caption of three lines (a long
    # sentence at CAPTION_WIDTH) fits between it and the map
    fig = views.head_view(sentences, names, start=start,
                          slider_prefix=tr("ch08b.slider_head"), menu={"y": 1.19},
                          controls=controls)
    n_layers, n_heads = sentences[0].maps.shape[:2]
    return _described_view(fig, sentences, tr("ch08b.head_view_alt", n=n_layers * n_heads),
                           typed=not controls)


def head_view_figure(model, texts, names=None, start: tuple[int, int] = (0, 0)) -> go.Figure:
    """One head on one sentence (:func:`book.face.views.head_view`): the dropdown picks the
    sentence, the slider the head (all 72, layer by layer). Rows = queries, columns = keys."""
    return _head_view_plot(model, texts, names, start)


def _model_view_plot(model, texts, names=None, layer: int = 0,
                     max_tokens: int = MODEL_VIEW_TOKENS, controls: bool = True) -> go.Figure:
    """The model view of ``texts`` as :func:`book.face.views.model_view` draws it (what both
    faces start from; ``controls``: its dropdown and slider, which the live face does
    without). Sentences longer than ``max_tokens`` tokens raise."""
    max_tokens = validate.integer("max_tokens", max_tokens, low=1)
    data, names = _views(model, texts, names)
    for d in data:
        if len(d["labels"]) > max_tokens:
            raise ValueError(f"{d['text']!r} has {len(d['labels'])} tokens; the model view "
                             f"draws at most max_tokens={max_tokens} legibly. Use a shorter "
                             "sentence, or head_view_figure for this one")
    sentences = [views.Sentence(d["maps"], d["labels"], _caption(d["caption"])) for d in data]
    c = model.config
    fig = views.model_view(
        sentences, names, layer=layer, one_trace_per="sentence", grid=GRID,
        panel_titles=[tr("ch08b.head_short", head=h) for h in range(c.n_heads)],
        slider_prefix=tr("ch08b.slider_layer"), controls=controls)
    return _described_view(fig, sentences, tr("ch08b.model_view_alt", n=c.n_heads),
                           typed=not controls)


def model_view_figure(model, texts, names=None, layer: int = 0,
               max_tokens: int = MODEL_VIEW_TOKENS) -> go.Figure:
    """A layer's 12 heads side by side (:func:`book.face.views.model_view`): the dropdown
    picks the sentence, the slider the layer.

    One heatmap per head and sentence (the dropdown shows one sentence's 12); each slider step
    restyles all of them, so the two controls combine. Sentences longer than ``max_tokens``
    tokens raise: their cells would be too small to read (use :func:`head_view_figure`)."""
    return _model_view_plot(model, texts, names, layer, max_tokens)


# --- the measurements -------------------------------------------------------------------------

STAT_KINDS = ("[CLS]", "[SEP]", "periods and commas", "previous token", "same token",
              "next token")


def _stat_title(kind: str, shares: dict, entropy: dict) -> str:
    if kind == "entropy":
        return tr("ch08b.entropy_title", even=entropy["even"])
    return tr("ch08b.share_title", kind=kind_label(kind), even=shares[kind]["even"])


def stats_figure(shares: dict, entropy: dict, start: str = "[CLS]") -> go.Figure:
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
        zmax=first["zmax"][0], colorscale=COLORSCALE,
        x=[tr("ch08.head", head=h) for h in range(n_heads)],
        y=[tr("common.layer", layer=lay) for lay in range(n_layers)],
        colorbar={"title": {"text": tr("ch08b.value")}},
        hovertemplate="%{y}, %{x}: %{z:.2f}<extra></extra>"))
    buttons = [{"label": kind_label(k), "method": "update",
                "args": [trace_args(k), {"title.text": _stat_title(k, shares, entropy)}]}
               for k in kinds]
    fig.update_layout(
        title={"text": _stat_title(start, shares, entropy), "font": {"size": 13}, "y": 0.97},
        updatemenus=[{"buttons": buttons, "direction": "down", "showactive": True, "x": 0,
                      "xanchor": "left", "y": 1.22, "yanchor": "bottom"}],
        yaxis={"autorange": "reversed"}, xaxis={"side": "bottom", "tickangle": -90},
        height=400, margin={"l": 70, "r": 20, "t": 120, "b": 60})
    z = data[start]
    layer, head = np.unravel_index(int(np.argmax(z)), z.shape)
    return describe(fig, alt=tr("ch08b.stats_alt"),
                    caption=tr("ch08b.stats_caption", kind=kind_label(start), value=float(z.max()),
                               head=_head(int(layer), int(head))))


def layer_profile(shares: dict) -> go.Figure:
    """Mean share per layer (over its 12 heads) for each kind of key; dotted: an even spread
    (the same for the three positions)."""
    layers = head_stats.per_layer(shares)
    x = [tr("common.layer", layer=i) for i in range(len(layers["[CLS]"]))]
    fig = go.Figure()
    # a dash and a marker of its own per kind: the lines differ without their colours
    symbols = ("circle", "square", "diamond", "triangle-up", "x", "triangle-down")
    for i, kind in enumerate(STAT_KINDS):
        fig.add_trace(go.Scatter(x=x, y=_r(layers[kind], 3), name=kind_label(kind),
                                 mode="lines+markers", marker={"symbol": symbols[i]},
                                 line={"color": KIND_COLORS[kind], "dash": RUN_DASHES[i]}))
    fig.add_trace(go.Scatter(x=x, y=[round(shares["[CLS]"]["even"], 3)] * len(x),
                             name=tr("ch08b.even_one"), mode="lines",
                             line={"color": "#7a7a7a", "dash": "dot"}))
    # the ticks are the layers' numbers under an axis title: "layer 0" at the first one ran
    # into the y axis' "0" on a phone (the hover text keeps "layer 0")
    fig.update_layout(height=400, yaxis={"title": tr("ch08b.mean_share"), "range": [0, 1]},
                      xaxis={"title": tr("ch08b.layer_axis"), "tickvals": x,
                             "ticktext": [str(i) for i in range(len(x))]},
                      legend={"orientation": "h", "y": -0.25, "x": 0, "font": {"size": 12}},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    top = {kind: float(np.max(layers[kind])) for kind in STAT_KINDS}
    most = max(top, key=top.get)
    return describe(fig, alt=tr("ch08b.profile_alt"),
                    caption=tr("ch08b.profile_caption", kind=kind_label(most), share=top[most],
                               layer=int(np.argmax(layers[most])),
                               even=float(shares["[CLS]"]["even"])))


def relation_figure(accuracy: dict) -> go.Figure:
    """Layer × head: how often (%) a determiner's most-attended word is its noun, with the best
    fixed offset and chance in the title. Whole percents keep the cell texts inside their
    cells on a phone."""
    acc = 100 * np.asarray(accuracy["accuracy"], dtype=float)
    k, base = max(accuracy["offset"].items(), key=lambda kv: kv[1])
    n_layers, n_heads = acc.shape
    fig = go.Figure(go.Heatmap(
        z=_r(acc, 1), text=[[f"{x:.0f}" for x in row] for row in acc], texttemplate="%{text}",
        zmin=0, zmax=100, colorscale=COLORSCALE,
        x=[tr("ch08.head", head=h) for h in range(n_heads)],
        y=[tr("common.layer", layer=lay) for lay in range(n_layers)],
        # the bar's title beside it, not above: above, "accuracy (%)" widened the bar's room
        # and left the cells too narrow for their numbers on a phone
        colorbar={"title": {"text": tr("ch08b.accuracy"), "side": "right"}, "thickness": 16},
        hovertemplate="%{y}, %{x}: %{z:.0f} %<extra></extra>"))
    fig.update_layout(
        title={"text": tr("ch08b.det_title", n=accuracy["n"], k=f"{k:+d}", base=100 * base,
                          chance=100 * accuracy["chance"]), "font": {"size": 13},
               # anchored at the figure's top (book.face.plotting.tidy reserves the room): a
               # title of several lines otherwise grows down from its first line, into the plot
               "automargin": True},
        yaxis={"autorange": "reversed"}, xaxis={"tickangle": -90}, height=400,
        # room for the title's four lines (on a phone) above the bar's top label
        margin={"l": 70, "r": 20, "t": 96, "b": 60})
    layer, head = np.unravel_index(int(np.argmax(acc)), acc.shape)
    return describe(fig, alt=tr("ch08b.det_alt"),
                    caption=tr("ch08b.det_caption", head=_head(int(layer), int(head)),
                               acc=float(acc.max()), n=accuracy["n"], base=100 * base,
                               chance=100 * accuracy["chance"]))


def sink_figure(sink: dict) -> go.Figure:
    """For each kind of key: the attention weight that zeroing it removes, and how far the
    sentence vectors move (1 − cosine)."""
    kinds = list(sink)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.18,
                        subplot_titles=[tr("ch08b.removed"), tr("ch08b.moved")])
    for col, key, color in ((1, "mass", "#9ab0d6"), (2, "change", "#1f3b73")):
        fig.add_trace(go.Bar(x=[kind_label(k) for k in kinds],
                             y=_r([sink[k][key] for k in kinds], 4),
                             marker_color=color, showlegend=False,
                             text=[f"{sink[k][key]:.3f}" for k in kinds], textposition="outside",
                             hovertemplate="%{x}: %{y:.4f}<extra></extra>"), row=1, col=col)
    fig.update_yaxes(range=[0, 1.15 * max(v["mass"] for v in sink.values())], row=1, col=1)
    fig.update_yaxes(range=[0, 1.25 * max(v["change"] for v in sink.values())], row=1, col=2)
    fig.update_xaxes(tickangle=-30)
    # the panels' titles a little higher: the top tick label ("0.06") reaches half a line
    # above its panel, into a title as wide as the panel
    fig.update_annotations(font_size=12, yshift=8)
    fig.update_layout(height=380, margin={"l": 50, "r": 20, "t": 78, "b": 60})
    return describe(fig, alt=tr("ch08b.sink_alt"), caption=_sink_caption(sink))


def _sink_caption(sink: dict) -> str:
    """How far the vectors move per unit of weight removed: [CLS] against one word (where
    both were measured), from the numbers the bars draw."""
    def per_weight(kind):
        return sink[kind]["change"] / sink[kind]["mass"] if sink[kind]["mass"] else 0.0

    if "[CLS]" in sink and "one word" in sink and per_weight("[CLS]") > 0:
        ratio = per_weight("one word") / per_weight("[CLS]")
        return tr("ch08b.sink_caption" if ratio > 1 else "ch08b.sink_caption_not",
                  mass=sink["[CLS]"]["mass"], change=sink["[CLS]"]["change"], ratio=ratio)
    return tr("ch08b.sink_caption_plain")


# --- what the notebook prints and tabulates --------------------------------------------------

_NAMES = {"noodles": "ch08b.name_noodles", "tired": "ch08b.name_tired",
          "wide": "ch08b.name_wide", "fruit": "ch08b.name_fruit",
          "company": "ch08b.name_company", "cat": "ch08b.name_cat"}
_PAIRS = {"paraphrase": "ch08b.pair_paraphrase", "one_word": "ch08b.pair_one_word",
          "apple": "ch08b.pair_apple", "fruits": "ch08b.pair_fruits",
          "chinese": "ch08b.pair_chinese", "unrelated": "ch08b.pair_unrelated"}


def names(*keys: str) -> list[str]:
    """The menu names of the chapter's sentences (``"tired"`` → "animal … tired")."""
    return [tr(_NAMES[validate.choice("sentence", k, list(_NAMES))]) for k in keys]


def sha_status(ok: bool) -> str:
    """"matches" or "does NOT match" (the weights' SHA-256 against the published value)."""
    return tr("ch08b.sha_matches") if ok else tr("ch08b.sha_differs")


def sha_line(sha: str) -> str:
    return tr("ch08b.sha_line", sha=sha)


def diff_line(diff: float) -> str:
    return tr("ch08b.diff_line", diff=diff)


def similarity_table(rows):
    """``rows`` of (pair key, sentence A, sentence B, cosine) as a table; the key names the
    pair (``"paraphrase"``, ``"one_word"``, ``"apple"``, ``"fruits"``, ``"chinese"``,
    ``"unrelated"``)."""
    return table([tr("ch08b.col_pair"), tr("ch08b.col_a"), tr("ch08b.col_b"),
                  tr("ch08b.col_cosine")],
                 [(tr(_PAIRS[validate.choice("pair", k, list(_PAIRS))]), a, b, cos)
                  for k, a, b, cos in rows], formats=["", "", "", ".2f"])


def paper_table(shares: dict, entropy: dict):
    """Clark et al.'s findings on BERT-base beside the same measurements here
    (``shares``: :func:`book.real.head_stats.token_shares`, ``entropy``:
    :func:`book.real.head_stats.entropies`)."""
    layers = head_stats.per_layer(shares)
    pos = head_stats.positional_heads(shares)

    def heads(kind):
        return tr("ch08b.ours_heads", n=len(pos[kind]), heads=", ".join(
            f"L{lay} H{h} ({s:.2f})" for lay, h, s in pos[kind]))

    sep, cls, punct = layers["[SEP]"], layers["[CLS]"], layers["periods and commas"]
    ours = {
        "sep_layers": tr("ch08b.ours_sep_layers", lo=sep.min(), hi=sep.max(),
                         cls_lo=cls[1:5].min(), cls_hi=cls[1:5].max()),
        "cls_early": tr("ch08b.ours_cls_early", lo=punct.min(), hi=punct.max()),
        "sep_self": tr("ch08b.ours_sep_self", most=shares["[SEP] → [SEP]"]["mass"].max()),
        "prev_heads": heads("previous token"),
        "next_heads": heads("next token"),
        "cls_entropy": tr("ch08b.ours_cls_entropy", cls=entropy["cls"][-1].mean(),
                          even=entropy["even"]),
    }
    claims = {"sep_layers": "ch08b.paper_sep_layers", "cls_early": "ch08b.paper_cls_early",
              "sep_self": "ch08b.paper_sep_self", "prev_heads": "ch08b.paper_prev_heads",
              "next_heads": "ch08b.paper_next_heads",
              "cls_entropy": "ch08b.paper_cls_entropy"}
    rows = [(tr("ch08b.claim_where", claim=tr(claims[key]),
                where=head_stats.PAPER[key][1].replace("Figure", tr("ch08b.figure"))), text)
            for key, text in ours.items()]
    return table([tr("ch08b.col_paper"), tr("ch08b.col_ours")], rows)


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


def _live(model, text: str, make_figure, redraw, controls, adds: str) -> LiveExplorer:
    """The live faces' shared setup: a message line, the cached view data of the typed text,
    the view's figure without its controls, and the widget (controls, message, figure).

    ``make_figure(text)`` builds the figure (``_head_view_plot``, ``_model_view_plot``: never
    the static face); ``redraw(fig, d, **values)`` draws the view data
    ``d`` of the typed text (a bad text leaves the last map and shows the error)."""
    message = widgets.HTML(layout={"width": "100%"})
    state: dict = {}

    def update(fig, text, **values):
        d = _live_text(model, state, text, message)
        if d is not None:
            message.value = redraw(fig, d, **values)

    controls = {"text": widgets.Text(value=text, description=tr("ch08b.sentence_box"),
                                     continuous_update=False, layout={"width": "520px"}),
                **controls}
    fig = make_figure(text)
    explorer = LiveExplorer(fig, controls, update, adds=adds)
    explorer.message = message
    explorer.widget = widgets.VBox([widgets.HBox(list(controls.values())), message,
                                    explorer.figure])
    explorer.update()
    return explorer


def head_view_live(model=None, text: str = "The animal didn't cross the street because it "
                   "was too tired.") -> LiveExplorer:
    """Type any English sentence, pick a layer and a head: its attention map."""
    model = pretrained.load() if model is None else model
    c = model.config

    def redraw(fig, d, layer, head):
        t = fig.data[0]
        t.x, t.y, t.z = d["labels"], d["labels"], np.round(d["maps"][layer, head], 3)
        for key, value in views.category_axes(d["labels"]).items():
            axis, prop = key.split(".")
            fig.layout[axis][prop] = value
        fig.layout.annotations[0].text = _caption(d["caption"])
        return tr("ch08.rows_cols", head=_head(layer, head))

    controls = {
        "layer": widgets.Dropdown(options=[(tr("common.layer", layer=i), i)
                                           for i in range(c.n_layers)],
                                  value=0, description=tr("ch08.layer_box")),
        "head": widgets.Dropdown(options=[(tr("ch08.head", head=i), i)
                                          for i in range(c.n_heads)],
                                 value=2, description=tr("ch08.head_box")),
    }
    return _live(model, text, lambda t: _head_view_plot(model, [t], start=(0, 2), controls=False),
                 redraw,
                 controls, adds=tr("ch08b.live_adds_head"))


def model_view_live(model=None, text: str = "one bowl of beef noodles, no coriander, extra "
                    "chili") -> LiveExplorer:
    """Type any English sentence, pick a layer: its 12 heads."""
    model = pretrained.load() if model is None else model
    c = model.config
    shown: dict = {}

    def redraw(fig, d, layer):
        relabel = shown.get("labels") != d["labels"]
        for h, t in enumerate(fig.data):
            t.z = np.round(d["maps"][layer, h], 3)
            if relabel:
                t.x, t.y = d["labels"], d["labels"]
        if relabel:
            for k in range(c.n_heads):
                for key, value in views.category_axes(d["labels"], suffix="" if k == 0
                                                      else str(k + 1)).items():
                    axis, prop = key.split(".")
                    fig.layout[axis][prop] = value
            shown["labels"] = d["labels"]
        fig.layout.annotations[-1].text = _caption(d["caption"])
        return tr("ch08b.layer_rows_cols", layer=layer, n=c.n_heads)

    controls = {"layer": widgets.IntSlider(value=0, min=0, max=c.n_layers - 1,
                                           description=tr("ch08.layer_box"))}
    return _live(model, text,
                 lambda t: _model_view_plot(model, [t], max_tokens=pretrained.MAX_TOKENS,
                                           controls=False),
                 redraw, controls, adds=tr("ch08b.live_adds_model"))


# --- exercises ----------------------------------------------------------------------------------

def _one_sentence(maps) -> list[dict]:
    """A reader's (layers, heads, n, n) array as the one-sentence list head_stats reads."""
    w = np.asarray(maps, dtype=float)
    n = w.shape[-1]
    return [{"maps": w, "tokens": [f"t{i}" for i in range(n)], "words": list(range(n))}]


def _map_cases() -> list[np.ndarray]:
    """Maps (layers, heads, n, n) the two exercises are checked on: random rows, rows with
    exact zeros (a causal mask's) and one-hot rows, so that 0 · log 0 and token 0 both matter."""
    rng = np.random.default_rng(8)
    cases = []
    for layers, heads, n in ((2, 3, 5), (3, 2, 4), (1, 4, 6)):
        w = rng.random((layers, heads, n, n)) ** 3
        w[0, 0] = np.tril(w[0, 0])                        # a causal head: zeros above
        w[-1, -1] = np.eye(n)[rng.integers(0, n, n)]      # a one-hot head
        cases.append(w / w.sum(-1, keepdims=True))
    return cases


def _layer_entropy_reference():
    def layer_entropy(maps):
        return head_stats.entropies(_one_sentence(maps))["all"].mean(axis=1)

    return layer_entropy


def _layer_entropy_mistakes():
    def nan_at_zero(w):  # 0 · log 0 is nan in numpy
        with np.errstate(divide="ignore", invalid="ignore"):
            return -(w * np.log(w)).sum(-1).mean(axis=(1, 2))

    def _plogp(w, log=np.log):
        return np.where(w > 0, w * log(np.where(w > 0, w, 1.0)), 0.0)

    return [nan_at_zero,
            lambda w: -_plogp(w, np.log2).sum(-1).mean(axis=(1, 2)),   # bits
            lambda w: -_plogp(w).sum(-1).mean(-1),                     # per head
            lambda w: -_plogp(w).sum(axis=(-1, -2)).mean(1),           # rows added
            lambda w: _plogp(w).sum(-1).mean(axis=(1, 2))]             # sign


@exercise("ch8b.layer_entropy", "Write layer_entropy(maps): each layer's mean row entropy",
          reference=_layer_entropy_reference, mistakes=_layer_entropy_mistakes)
def _layer_entropy_check(func):
    if not callable(func):
        return False, tr("ch08b.ex_pass_function", name="layer_entropy")
    want = _layer_entropy_reference()
    for maps in _map_cases():
        with np.errstate(divide="ignore", invalid="ignore"):
            got = call(func, maps)
        expected = want(maps)
        layers, heads = maps.shape[:2]
        if got.shape != expected.shape:
            hint = "ex_entropy_per_head" if got.shape == (layers, heads) else "ex_entropy_shape"
            return False, tr(f"ch08b.{hint}", layers=layers, shape=tuple(got.shape))
        if not np.isfinite(got).all():
            return False, tr("ch08b.ex_entropy_nan")
        if np.allclose(got, expected, atol=1e-9):
            continue
        if np.allclose(got, -expected, atol=1e-9):
            return False, tr("ch08b.ex_entropy_sign")
        if np.allclose(got, expected / np.log(2), atol=1e-9):
            return False, tr("ch08b.ex_entropy_bits")
        if np.allclose(got, expected * maps.shape[-1], atol=1e-9):
            return False, tr("ch08b.ex_entropy_rows_added")
        return False, tr("ch08b.ex_entropy_close")
    return True, tr("ch08b.ex_entropy_ok")


def _previous_reference():
    def previous_share(maps):
        return head_stats.token_shares(_one_sentence(maps))["previous token"]["mass"]

    return previous_share


def _after(w):
    """The queries 1 … n − 1 of maps ``w``: those with a token before them."""
    return np.arange(1, w.shape[-1])


# The slips the previous-share check recognises, each with its hint: the exercise's listed
# mistakes are these functions, and the check names the one a reader's answer equals.
_PREVIOUS_SLIPS = [
    (lambda w: w[..., _after(w), _after(w)].mean(-1), "ex_prev_self"),        # itself
    (lambda w: w[..., _after(w) - 1, _after(w)].mean(-1), "ex_prev_next"),    # next token
    (lambda w: w[..., np.arange(w.shape[-1]), np.arange(w.shape[-1]) - 1].mean(-1),
     "ex_prev_wrapped"),                                                       # index -1
    (lambda w: w[..., _after(w), _after(w) - 1].sum(-1) / w.shape[-1], "ex_prev_divide"),
]


def _previous_mistakes():
    return [slip for slip, _ in _PREVIOUS_SLIPS]


@exercise("ch8b.previous_share", "Write previous_share(maps): each head's weight on the "
          "previous token", reference=_previous_reference, mistakes=_previous_mistakes)
def _previous_check(func):
    if not callable(func):
        return False, tr("ch08b.ex_pass_function", name="previous_share")
    want = _previous_reference()
    for maps in _map_cases():
        got = call(func, maps)
        expected = want(maps)
        if got.shape != expected.shape:
            return False, tr("ch08b.ex_prev_shape", layers=maps.shape[0], heads=maps.shape[1],
                             shape=tuple(got.shape))
        if np.allclose(got, expected, atol=1e-9):
            continue
        for slip, hint in _PREVIOUS_SLIPS:
            if np.allclose(got, slip(maps), atol=1e-9):
                return False, tr(f"ch08b.{hint}")
        return False, tr("ch08b.ex_prev_close")
    return True, tr("ch08b.ex_prev_ok")


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
        return False, tr("ch08b.ex_pass_function", name="to_words")
    ref = _word_map_reference()
    for weights, words in _word_cases():
        got = func(weights.copy(), list(words))
        if got is None:
            raise NotAnswered
        got = np.asarray(got, dtype=float)
        want = ref(weights, words)
        if got.shape != want.shape:
            return False, tr("ch08b.ex_word_shape", n=len(want), shape=got.shape)
        if np.allclose(got, want, atol=1e-9):
            continue
        if not np.allclose(got.sum(1), want.sum(1), atol=1e-9):
            return False, tr("ch08b.ex_word_rows")
        return False, tr("ch08b.ex_word_close")
    return True, tr("ch08b.ex_word_ok")


# --- concept questions (book/face/questions.py; their words: book/strings/ch08b.toml) ---
questions.question("ch08b.unk", kind="predict", right=2,
                   answered_in="2d636b70")
questions.question("ch08b.it_animal", kind="explain", right=3)
questions.question("ch08b.bug_importance", kind="bug", right=1, code="""\
received = weights.mean(dim=(0, 1, 2))
most_important = tokens[received.argmax()]
""")
