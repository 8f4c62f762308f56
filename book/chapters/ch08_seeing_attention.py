"""Chapter 8 (seeing attention): its static figures, live explorers and exercises."""

from __future__ import annotations

import html
from types import SimpleNamespace

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.face import controls, inpage, questions, views
from book.face.checks import (
    Answer,
    Is,
    NotAnswered,
    Words,
    call,
    exercise,
    right,
    value_exercise,
    wrong,
)
from book.face.figures import describe
from book.face.live import LiveExplorer, widgets_for
from book.face.plotting import (
    COLORSCALE,
    PHONE_FIGURE_WIDTH,
    RUN_DASHES,
    italic,
    panel_title_width,
    rounded,
    text_width,
    wrap,
)
from book.kit import i18n, timing, validate
from book.kit.i18n import tr
from book.studies import attention_roles
from book.toy import export, orders, orders_example, probe, train
from book.toy import model as model_mod

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

# columns (book.face.plotting.text_width: a CJK character takes two): fits beside a phone's
# row labels, in the book's font and in a wider fallback (at 34 two English glosses left the
# head view at 390 px in DejaVu Sans, and at 31 one still did)
CAPTION_WIDTH = 28
# key labels under each model-view panel: at 390 px a panel is about 110 px wide and an upright
# 10 px label takes 11 px, so a 16-token order's labels ran into each other (6.9 px apart);
# longer orders label every second key (the rows still name every one)
MODEL_VIEW_KEY_LABELS = 9
MODEL_VIEW_SPACING = (0.04, 0.07)   # between its panels, in fractions of the plot


def _wrap(text: str, width: int = CAPTION_WIDTH) -> str:
    """``text`` in lines of at most ``width`` columns, joined by <br> (book.face.plotting.wrap:
    at spaces and between words, 避头尾 in Chinese)."""
    return wrap(text, width)


def _caption(data: dict) -> str:
    """The order (in English its word-by-word gloss, in Chinese the tokens) and the model's
    predictions, wrapped, as the views' caption."""
    zh = i18n.language() == "zh"
    text = " ".join(data["order"].tokens) if zh else data["english"]
    marks = tr("ch08.caption_model", marks=("， " if zh else ", ").join(data["marks"]))
    # in a <span>: book.face.plotting.tidy leaves a text with a span as it is written, so these
    # lines are not wrapped again at a panel title's width. Italic in English only: a CJK font
    # has no italic, and the browser's slanted Chinese blurs at 11 px (plotting.italic)
    return _wrap(text) + "<br><span>" + italic(_wrap(marks)) + "</span>"


def _menu_name(name: str, width: int = 22) -> str:
    """A menu label short enough for a phone screen (long orders end in …): at 390 px the head
    view's menu starts where its plot does, right of the token labels, and a label of 28
    columns ran past the figure's right edge once measured in the CJK font it is drawn in."""
    if text_width(name) <= width:
        return name
    while text_width(name) > width - 1:
        name = name[:-1]
    return name + "…"


def _head_label(layer: int, head: int) -> str:
    return views.head_label(layer, head)


def relation_label(relation: str) -> str:
    """How the figures and tables name a relation of book.studies.attention_roles.RELATIONS."""
    ids = {"ingredient → its modifier": "ch08.rel_ing_mod",
           "dish → its quantity": "ch08.rel_dish_qty",
           "modifier → its ingredients": "ch08.rel_mod_ing",
           "quantity → its dish": "ch08.rel_qty_dish",
           "word → end of its clause": "ch08.rel_end",
           "word → start of its clause": "ch08.rel_start"}
    validate.choice("relation", relation, list(ids))
    return tr(ids[relation])


def category_label(category: str) -> str:
    """How the figures name a token category of book.toy.orders.CATEGORIES."""
    ids = {"quantity": "ch08.cat_quantity", "dish": "ch08.cat_dish",
           "adjective": "ch08.cat_adjective", "modifier": "ch08.cat_modifier",
           "ingredient": "ch08.cat_ingredient", "filler": "ch08.cat_filler",
           "punctuation": "ch08.cat_punctuation"}
    validate.choice("category", category, list(ids))
    return tr(ids[category])


def _orders_and_names(orders_, names, what: str) -> tuple[list, list[str]]:
    orders_ = list(orders_)
    if not orders_:
        raise ValueError(f"{what} needs at least one order")
    names = ([tr("ch08.order_name", i=i + 1) for i in range(len(orders_))] if names is None
             else list(names))
    if len(names) != len(orders_):
        raise ValueError(f"got {len(orders_)} orders but {len(names)} names")
    return orders_, names


def top_weights(sentences) -> list[float]:
    """Per layer: a row's largest weight, averaged over every row, head and sentence of
    ``sentences`` (views.Sentence): 1 = each row on one key, 1/n = an even spread."""
    maps = [np.asarray(s.maps, dtype=float).max(axis=-1) for s in sentences]  # (L, H, n)
    return [float(np.mean(np.concatenate([m[layer].ravel() for m in maps])))
            for layer in range(maps[0].shape[0])]


def _top_text(sentences, verdict: bool = False) -> str:
    """"0.41 in layer 0, 0.83 in layer 1": :func:`top_weights` for a caption; ``verdict``:
    with "(the last layer is sharper)" where the numbers say so."""
    tops = top_weights(sentences)
    text = tr("ch08.list_sep").join(tr("ch08.top_in_layer", w=w, layer=layer)
                                    for layer, w in enumerate(tops))
    sharper = verdict and len(tops) > 1 and tops[-1] > tops[0]
    return text + (tr("ch08.top_sharper") if sharper else "")


def _hover_glosses(data: dict):
    """An order's hover glosses (book.toy.orders_example.hover_glosses; None in Chinese): each
    cell's query and key, each token with its gloss (``rows``: the order's glossed labels)."""
    return orders_example.hover_glosses(list(data["rows"]), list(data["rows"]))


def _gloss_model_view(fig: go.Figure, datas: list[dict], n_heads: int) -> None:
    """The model view's English glosses, in place: its panels have no room for them on the
    axes, and a hover gloss a cell for every order of its menu would weigh hundreds of KB, so
    each map's categories are the glossed labels (the hover's %{x} and %{y} name them) while
    the ticks show the bare tokens (``ticktext``). The Chinese edition: as drawn."""
    if i18n.language() == "zh":
        return

    def ticks(data: dict, layout: dict) -> dict:
        bare, glossed = list(data["cols"]), list(data["rows"])
        out = {}
        for k in range(n_heads):
            suffix = "" if k == 0 else str(k + 1)
            shown = layout.get(f"xaxis{suffix}.tickvals")
            shown = bare if shown is None else list(shown)
            out.update({f"xaxis{suffix}.tickmode": "array",
                        f"xaxis{suffix}.tickvals": [glossed[bare.index(v)] for v in shown],
                        f"xaxis{suffix}.ticktext": shown,
                        f"yaxis{suffix}.tickmode": "array", f"yaxis{suffix}.tickvals": glossed,
                        f"yaxis{suffix}.ticktext": bare})
        return out

    first = {f"xaxis{'' if k == 0 else k + 1}.tickvals": fig.layout[
        f"xaxis{'' if k == 0 else k + 1}"].tickvals for k in range(n_heads)}
    fig.update_traces(x=list(datas[0]["rows"]), y=list(datas[0]["rows"]))
    fig.update_layout(ticks(datas[0], first))
    for button, data in zip(fig.layout.updatemenus[0].buttons if fig.layout.updatemenus else [],
                            datas, strict=False):
        restyle, relayout = dict(button.args[0]), dict(button.args[1])
        restyle["x"] = restyle["y"] = [list(data["rows"])] * len(restyle.get("x", fig.data))
        relayout.update(ticks(data, relayout))
        button.args = [restyle, relayout, *button.args[2:]]


def _sentence(data: dict, queries: bool = True) -> views.Sentence:
    """An order's view data (book.studies.attention_roles.order_view_data) as the views draw
    it: keys = tokens, queries = tokens with their gloss, the caption."""
    return views.Sentence(data["maps"], data["cols"], _caption(data),
                          data["rows"] if queries else None)


def head_view_figure(model, orders_, names=None, start: tuple[int, int] = (1, 1)) -> go.Figure:
    """Static head view (:func:`book.face.views.head_view`) of the trained encoder: one
    attention map; a dropdown picks the order, a slider the head. The dropdown sits below the
    plot (one dropdown per figure: plotly draws all dropdowns of a figure in one container)."""
    return _head_view_plot(model, orders_, names, start)


def _head_view_plot(model, orders_, names=None, start: tuple[int, int] = (1, 1),
                    controls: bool = True) -> go.Figure:
    orders_, names = _orders_and_names(orders_, names, "head_view")
    datas = [attention_roles.order_view_data(model, o) for o in orders_]
    sentences = [_sentence(d) for d in datas]
    fig = views.head_view(
        sentences, [_menu_name(name) for name in names], start=start, digits=3,
        slider_prefix=tr("ch08.slider_head"), slider_pad=85,
        menu={"direction": "up", "y": 0, "yanchor": "top", "pad": {"t": 240}},
        caption={"font": {"size": 11}},
        key_axis={"title": {"standoff": 14}, "automargin": True, "tickfont": {"size": 10}},
        # the top margin holds the title and the caption's lines (the menu's nine: 160 px)
        layout={"height": 636, "margin": {"t": 160}}, controls=controls)
    # the English hover names each cell's query and key with their glosses (the upright keys
    # have no room for one), one order a trace
    for trace, data in zip(fig.data, datas, strict=True):
        trace.update(customdata=_hover_glosses(data),
                     hovertemplate=orders_example.glossed_hover(trace.hovertemplate))
    return describe(fig, alt=tr("ch08.head_view_alt"),
                    caption=tr("ch08.head_view_caption", top=_top_text(sentences, verdict=True)))


def model_view_figure(model, orders_, names=None, start_layer: int = 0) -> go.Figure:
    """Static model view (:func:`book.face.views.model_view`) of the trained encoder: the heads
    of one layer of one order, on a two-column grid (cells large enough to read); a slider
    picks the layer, a dropdown the order (each button redraws every map of every layer, so
    the two controls combine)."""
    return _model_view_plot(model, orders_, names, start_layer)


def _model_view_plot(model, orders_, names=None, start_layer: int = 0) -> go.Figure:
    orders_, names = _orders_and_names(orders_, names, "model_view")
    datas = [attention_roles.order_view_data(model, o) for o in orders_]
    sentences = [_sentence(d, queries=False) for d in datas]
    n_layers, n_heads = sentences[0].maps.shape[:2]
    start_layer = validate.integer("start_layer", start_layer, low=0, high=n_layers - 1)
    fig = views.model_view(
        sentences, [_menu_name(name) for name in names], layer=start_layer,
        one_trace_per="layer", spacing=MODEL_VIEW_SPACING,
        panel_titles=[tr("ch08.head", head=head) for head in range(n_heads)],
        panel_title_size=12, digits=3,
        # a thin bar: at 390 px the 16-token orders' upright key labels had 0.9 px between them
        colorbar={"title": {"side": "right"}, "len": 0.5, "y": 0.75, "thickness": 14},
        slider_pad=60,
        menu={"direction": "up", "y": 0, "yanchor": "top", "pad": {"t": 200}},
        caption={"y": 1.06, "font": {"size": 11}}, key_labels=MODEL_VIEW_KEY_LABELS,
        layout={"height": 860, "margin": {"l": 40, "t": 190, "b": 40}})
    _gloss_model_view(fig, datas, n_heads)
    return describe(fig, alt=tr("ch08.model_view_alt", n=n_heads),
                    caption=tr("ch08.model_view_caption", top=_top_text(sentences)))


def relation_figure(stats: dict) -> go.Figure:
    """Attention mass of each relation per layer × head (from
    :func:`book.studies.attention_roles.relation_mass`), with its chance level in the title."""
    relations = list(stats)
    if not relations:
        raise ValueError("stats is empty: pass book.studies.attention_roles.relation_mass(...)")
    cols = 2
    rows = -(-len(relations) // cols)
    # panels 0.16 apart: at 0.12 the two columns' titles came within 0.9 px of each other at
    # 390 px in a wide fallback font (DejaVu Sans); each title wrapped to its own panel at
    # 390 px (tidy's shared width let them collide in the fallback font, touch in Chinese)
    spacing = 0.16
    columns = panel_title_width(cols, spacing, 60, 20, size=12, figure_px=PHONE_FIGURE_WIDTH)
    titles = [wrap(tr("ch08.even_title", relation=relation_label(r),
                      chance=f"{stats[r]['chance']:.2f}"), columns) for r in relations]
    # rows 0.22 apart: room for a three-line title over a phone's rotated "head 0" labels
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=spacing,
                        vertical_spacing=0.22)
    for i, r in enumerate(relations):
        mass = np.asarray(stats[r]["mass"])
        n_layers, n_heads = mass.shape
        fig.add_trace(go.Heatmap(
            z=rounded(mass, 3), x=[tr("ch08.head", head=h) for h in range(n_heads)],
            y=[tr("common.layer", layer=layer) for layer in range(n_layers)], zmin=0, zmax=1,
            colorscale=COLORSCALE, showscale=i == 0, text=[[f"{v:.2f}" for v in row]
                                                           for row in mass],
            texttemplate="%{text}", colorbar={"title": {"text": tr("ch08.mass")}},
            hovertemplate=f"{relation_label(r)}<br>%{{y}}, %{{x}}: %{{z:.3f}}<extra></extra>"),
            row=i // cols + 1, col=i % cols + 1)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(showticklabels=False, col=2)  # the panels share their layers
    fig.update_annotations(font_size=12)
    fig.update_layout(height=190 * rows + 80, margin={"l": 60, "r": 20, "t": 60, "b": 30})
    # the caption's numbers: the panel whose best head is furthest above its chance level
    lift = {r: float(np.max(stats[r]["mass"])) / stats[r]["chance"] for r in relations}
    best = max(lift, key=lift.get)
    mass = np.asarray(stats[best]["mass"])
    layer, head = np.unravel_index(int(np.argmax(mass)), mass.shape)
    return describe(fig, alt=tr("ch08.relation_alt", n=len(relations)),
                    caption=tr("ch08.relation_caption", head=_head_label(int(layer), int(head)),
                               relation=relation_label(best), mass=float(mass[layer, head]),
                               chance=stats[best]["chance"]))


def category_figure(cats: dict) -> go.Figure:
    """Share of the scored tokens' attention on each category of key, per head, with the
    share an even spread would give as the last row (from
    :func:`book.studies.attention_roles.category_mass`)."""
    mass = np.asarray(cats["mass"])          # (categories, layers, heads)
    _, n_layers, n_heads = mass.shape
    rows = [_head_label(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    z = mass.reshape(len(cats["categories"]), -1).T
    z = np.vstack([z, np.asarray(cats["chance"])[None, :]])
    rows.append(tr("ch08.even_spread"))
    fig = go.Figure(go.Heatmap(
        z=rounded(z, 3), x=[category_label(c) for c in cats["categories"]], y=rows, zmin=0,
        zmax=float(z.max()),
        colorscale=COLORSCALE, text=[[f"{v:.2f}" for v in row] for row in z],
        texttemplate="%{text}", colorbar={"title": {"text": tr("ch08.share")}},
        hovertemplate=tr("ch08.hover_keys", row="%{y}", x="%{x}", z="%{z:.3f}")
        + "<extra></extra>"))
    fig.update_layout(height=120 + 26 * len(rows), yaxis={"autorange": "reversed"},
                      xaxis={"title": tr("ch08.key_category"), "side": "top"},
                      margin={"l": 40, "r": 20, "t": 70, "b": 20})
    heads = z[:-1]
    row, col = np.unravel_index(int(np.argmax(heads)), heads.shape)
    return describe(fig, alt=tr("ch08.category_alt"),
                    caption=tr("ch08.category_caption", head=rows[row],
                               category=category_label(cats["categories"][col]),
                               share=float(heads[row, col]), even=float(z[-1, col])))


def entropy_figure(record: dict, final: np.ndarray | None = None,
                   final_step: int | None = None) -> go.Figure:
    """Mean attention entropy per layer against the training step (``record``: step →
    (layers, heads) from :func:`book.studies.attention_roles.entropy_during_training`); ``final``
    (the trained model's) is drawn at ``final_step`` as diamonds."""
    if not record:
        raise ValueError("record is empty: pass {step: entropy array}")
    steps = sorted(record)
    n_layers = np.asarray(record[steps[0]]).shape[0]
    colors = ["#9ab0d6", "#1f3b73", "#b3261e", "#7a7a7a"]
    symbols = ["circle", "square", "triangle-up", "x"]
    fig = go.Figure()
    ends = []
    for layer in range(n_layers):
        # a dash and a marker of its own per layer, and the trained model's diamond labelled
        # with its layer: the layers differ without their colours (WCAG 1.4.1)
        color = colors[layer % len(colors)]
        means = [float(np.mean(record[s][layer])) for s in steps]
        ends.append(tr("ch08.entropy_change", layer=layer, start=means[0], end=means[-1]))
        fig.add_trace(go.Scatter(x=steps, y=rounded(means), mode="lines+markers",
                                 name=tr("ch08.short_run", layer=layer),
                                 line={"color": color, "dash": RUN_DASHES[layer % len(RUN_DASHES)]},
                                 marker={"symbol": symbols[layer % len(symbols)]}))
        if final is not None:
            fig.add_trace(go.Scatter(
                x=[final_step], y=[round(float(np.mean(final[layer])), 4)],
                mode="markers+text", text=[f"L{layer}"], textposition="middle left",
                name=tr("ch08.trained_run", layer=layer, steps=final_step),
                marker={"symbol": "diamond", "size": 12, "color": color,
                        "line": {"color": "#000000", "width": 1}}))
    fig.add_hline(y=1.0, line_dash="dot", line_color="#7a7a7a",
                  annotation_text=tr("ch08.uniform"), annotation_position="bottom right")
    fig.update_layout(height=370, xaxis={"title": tr("ch08.training_step")},
                      yaxis={"title": tr("ch08.entropy_axis"), "range": [0, 1.05]},
                      legend={"orientation": "h", "y": -0.22, "x": 0},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return describe(fig, alt=tr("ch08.entropy_alt"),
                    caption=tr("ch08.entropy_caption", steps=steps[-1],
                               layers=tr("ch08.list_sep").join(ends)))


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def _head_view_redrawer(model, message):
    """The typed order's redraw (``message.value`` says what went wrong or what the map shows;
    the last good map stays): one forward pass a new order, none a new head."""
    state = {}

    def redraw(fig, text, layer, head):
        try:
            if state.get("text") != text:
                with timing.torch_threads(1):   # a tiny forward pass: one thread is fastest
                    state["data"] = attention_roles.order_view_data(model, text)
                state["text"] = text
        except ValueError as err:
            state.pop("text", None)
            message.value = (f'<span style="color:#b3261e">⚠ {html.escape(str(err))}</span>')
            return
        data = state["data"]
        trace = fig.data[0]
        trace.x, trace.y = data["cols"], data["rows"]
        trace.customdata = _hover_glosses(data)
        trace.z = rounded(data["maps"][layer, head], 3)
        n = len(data["cols"])
        fig.layout.xaxis.categoryarray, fig.layout.yaxis.categoryarray = data["cols"], \
            data["rows"]
        fig.layout.xaxis.range, fig.layout.yaxis.range = [-0.5, n - 0.5], [n - 0.5, -0.5]
        fig.layout.annotations[0].text = _caption(data)
        fig.layout.title.text = _head_label(layer, head)
        message.value = tr("ch08.rows_cols", head=_head_label(layer, head))

    return redraw


def _head_view_controls(model, text: str) -> list:
    n_layers, n_heads = model.n_layers, model.n_heads
    return [controls.TextBox(name="text", label=tr("ch08.order_box"), value=text,
                             width="460px"),
            controls.Choice(name="layer", label=tr("ch08.layer_box"),
                            options=[(i, tr("common.layer", layer=i)) for i in range(n_layers)],
                            value=min(1, n_layers - 1)),
            controls.Choice(name="head", label=tr("ch08.head_box"),
                            options=[(i, tr("ch08.head", head=i)) for i in range(n_heads)],
                            value=min(1, n_heads - 1))]


def _head_view_first(model, text: str | None, message):
    """The typed order's first figure (its first state drawn), its controls and its redraw."""
    text = attention_roles.EXAMPLE if text is None else text
    fig = _head_view_plot(model, [attention_roles.EXAMPLE], start=(0, 0), controls=False)
    # the static view's top margin holds its dropdown; here only the caption needs room
    fig.layout.margin.t, fig.layout.height = 140, 640
    first_controls = _head_view_controls(model, text)
    redraw = _head_view_redrawer(model, message)
    redraw(fig, **controls.first_values(first_controls))
    # the caption holds for every order typed: its numbers are the first order's, said so
    try:
        first = [_sentence(attention_roles.order_view_data(model, text))]
        caption = tr("ch08.typed_caption", top=_top_text(first))
    except ValueError:      # a bad first order: its message is shown instead of a map
        caption = tr("ch08.typed_caption_plain")
    describe(fig, alt=tr("ch08.head_view_alt"), caption=caption)
    return fig, first_controls, redraw


def head_view_live(model=None, text: str | None = None) -> LiveExplorer:
    """Type an order, pick a layer and a head: its attention map and the model's labels.

    Bad input (an unknown word, an empty box, too many words) is reported in the widget's
    ``message`` line, and the last good map stays on screen.
    """
    model = train.pretrained() if model is None else model_mod.check_encoder(model)
    message = widgets.HTML(layout={"width": "100%"})
    fig, first_controls, redraw = _head_view_first(model, text, message)
    explorer = LiveExplorer(fig, widgets_for(first_controls), redraw,
                            adds=tr("ch08.live_adds_order"))
    explorer.message = message
    explorer.widget = widgets.VBox([*explorer.control_rows, message, explorer.figure])
    return explorer


# The in-page order explorer's layout: the caption's lines (11 px) above the plot, under the
# title (the first state's 6 lines took the live figure's 140 px top margin), and a row for each
# token under the key labels and axis title
ORDER_TOP_PX, ORDER_LINE_PX, ORDER_BELOW_PX, ORDER_ROW_PX = 50, 15, 180, 18
ORDER_MIN_HEIGHT = 420
# The page draws orders up to the generator's longest (48 words: cells of 12 px at the desktop
# width; the model takes 64, in Jupyter); where it glosses the queries and how far apart it
# labels the keys is the page's own (book/face/inpage/explorers/order.js, LAYOUT)
ORDER_MAX_WORDS = orders.MAX_LEN


def _order_spec(model, max_words: int) -> dict:
    """What both in-page views of a typed order need (book/face/inpage/typed_order.js): the
    checkpoint's weights, the order language, the labels' names, the messages, the caption's
    width and line height, the longest order the view draws (``max_words``)."""
    max_words = min(max_words, model.config.max_len)
    return {"model": export.page_model(model), "language": export.page_language(),
            "zh": i18n.language() == "zh",
            "label_names": {label: attention_roles.label_name(label)
                            for label in orders.LABELS},
            "messages": {
                "empty": tr("ch08.empty_order", example=attention_roles.EXAMPLE),
                "unknown": tr("ch08.unknown_word", word="{word}", words=orders.word_list()),
                "long": tr("ch08.long_order", n="{n}", max_len="{max_len}"),
                "page_long": tr("ch08.page_long_order", n="{n}", max_words=max_words,
                                max_len=model.config.max_len),
                "should_be": tr("ch08.should_be", label="{label}"),
                "caption_model": tr("ch08.caption_model", marks="{marks}"),
                "rows_cols": tr("ch08.rows_cols", head="{head}"),
                "head_label": tr("common.head_label", layer="{layer}", head="{head}"),
                "model_typed": tr("ch08.model_typed")},
            "caption_width": CAPTION_WIDTH, "line_px": ORDER_LINE_PX, "max_words": max_words}


def head_view_inpage(model=None, text: str | None = None) -> inpage.InPage:
    """The HTML book's twin of :func:`head_view_live`: the page itself runs the trained
    encoder (book/toy/export.py's weights, book/face/inpage/encoder.js) on the order the
    reader types, and redraws the head's map, the caption and the model's labels."""
    model = train.pretrained() if model is None else model_mod.check_encoder(model)
    fig, first_controls, _ = _head_view_first(model, text, SimpleNamespace(value=""))
    key_font = fig.layout.xaxis.tickfont.size
    # the first state laid out as the page lays out every typed one (explorers/order.js: the
    # caption's lines set the top margin, the tokens the height)
    top = ORDER_TOP_PX + ORDER_LINE_PX * (fig.layout.annotations[0].text.count("<br>") + 1)
    n = len(fig.data[0].x)
    fig.update_layout(margin_t=top, height=max(ORDER_MIN_HEIGHT,
                                               top + ORDER_BELOW_PX + ORDER_ROW_PX * n))
    spec = {**_order_spec(model, ORDER_MAX_WORDS), "top": ORDER_TOP_PX, "below": ORDER_BELOW_PX,
            "row_px": ORDER_ROW_PX, "key_font": key_font, "height": ORDER_MIN_HEIGHT}
    return inpage.InPage("order", fig, inpage.page_controls(first_controls), spec,
                         tr("ch08.live_adds_order"))


# The page's model view draws orders of up to 22 words: the panels (two a row) keep cells of
# 12 px at the desktop width (taller panels for longer orders and the caption's room under the
# title are the page's own: book/face/inpage/explorers/order_model.js, LAYOUT)
MODEL_VIEW_MAX_WORDS = 22


def model_view_inpage(model, orders_, names=None, weights_on_page: bool = False
                      ) -> inpage.InPage:
    """The HTML book's model view (:func:`model_view_figure`, the orders drawn in the build, first)
    with a text box above it: the page runs the trained encoder on the order the reader types
    and redraws every head of every layer (book/face/inpage/explorers/order_model.js); the
    figure's slider still picks the layer, its menu brings back the orders drawn in the build.
    ``weights_on_page``: another cell of the page (the chapter's :func:`head_view_explorer`)
    carries the model's weights; this one refers to them (the page holds one copy, 393 KiB)."""
    model = model_mod.check_encoder(model)
    orders_, names = _orders_and_names(orders_, names, "model_view_inpage")
    fig = _model_view_plot(model, orders_, names)
    layout = fig.layout
    n_heads = model.n_heads
    plot_px = layout.height - layout.margin.t - layout.margin.b
    caption = len(layout.annotations) - 1     # after the panels' titles
    # the menu's orders put back what a typed order changes: the top margin, the height
    for button in layout.updatemenus[0].buttons:
        button.args = [button.args[0], {**button.args[1], "margin.t": layout.margin.t,
                                        "height": layout.height}]
    first = orders_[0].text if isinstance(orders_[0], orders.Order) else str(orders_[0])
    rows = -(-n_heads // 2)               # views.model_view's grid: two panels a row
    spec = {**_order_spec(model, MODEL_VIEW_MAX_WORDS),
            **({"model": export.page_model_ref(model)} if validate.boolean(
                "weights_on_page", weights_on_page) else {}),
            "model_view": {"n_heads": n_heads, "caption": caption, "top": layout.margin.t,
                           "plot": plot_px, "bottom": layout.margin.b,
                           "panel_share": (1 - MODEL_VIEW_SPACING[1] * (rows - 1)) / rows,
                           "caption_y": layout.annotations[caption].y - 1,
                           "key_labels": MODEL_VIEW_KEY_LABELS}}
    return inpage.InPage("order_model", fig,
                         [inpage.text_box("text", tr("ch08.order_box"), first)], spec,
                         tr("ch08.model_view_adds"))


def model_view_explorer(model, orders_, names=None):
    """The model view: in the book's HTML with a box for the reader's own order
    (:func:`model_view_inpage`, reading the weights that the chapter's
    :func:`head_view_explorer` carries on the same page), in Jupyter the figure
    (:func:`head_view_explorer` types orders there)."""
    return inpage.either(lambda: model_view_figure(model, orders_, names),
                         lambda: model_view_inpage(model, orders_, names, weights_on_page=True))


def page_model_kib(model=None) -> float:
    """KiB of the page's copy of the trained encoder (its weights as
    :func:`book.toy.export.page_model` writes them into the page, JSON included)."""
    import json

    model = train.pretrained() if model is None else model_mod.check_encoder(model)
    return len(json.dumps(export.page_model(model), separators=(",", ":"))) / 1024


def head_view_explorer(model=None, text: str | None = None):
    """Type an order: in the book's HTML the page computes it (:func:`head_view_inpage`), in
    Jupyter the kernel does (:func:`head_view_live`)."""
    return inpage.either(lambda: head_view_live(model, text),
                         lambda: head_view_inpage(model, text))


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

_CH8_CACHE: dict = {}


def _ch8_modifier_mass():
    """relation_mass of the shipped model on the held-out orders (computed once)."""
    if "mass" not in _CH8_CACHE:
        _, test = train.default_data()
        stats = attention_roles.relation_mass(train.pretrained(), test)
        _CH8_CACHE["mass"] = {r: s["mass"] for r, s in stats.items()}
    return _CH8_CACHE["mass"]


def _ch8_best_head():
    mass = _ch8_modifier_mass()["ingredient → its modifier"]
    layer, head = np.unravel_index(int(np.argmax(mass)), mass.shape)
    return (int(layer), int(head))


def _ch8_best_head_mistakes():
    mass = _ch8_modifier_mass()
    ing = mass["ingredient → its modifier"]
    dish = mass["dish → its quantity"]
    second = np.unravel_index(int(np.argsort(ing, axis=None)[-2]), ing.shape)
    dish_best = np.unravel_index(int(np.argmax(dish)), dish.shape)
    out = [(0, 0), (int(second[0]), int(second[1])), 3, "layer 1"]
    if tuple(int(v) for v in dish_best) != _ch8_best_head():
        out.append((int(dish_best[0]), int(dish_best[1])))
    return out


def _ch8_best_head_answer() -> Answer:
    mass = _ch8_modifier_mass()
    ing, dish = mass["ingredient → its modifier"], mass["dish → its quantity"]
    layers, heads = ing.shape
    # the heads that look more at a dish's quantity (and at least half of it) than at this
    dish_heads = [(layer, head) for layer in range(layers) for head in range(heads)
                  if dish[layer, head] > ing[layer, head] and dish[layer, head] >= 0.5]
    best = _ch8_best_head()
    panel = Words("ch08.rel_ing_mod")  # relation_label("ingredient → its modifier")
    return Answer("int_pair", [
        (Is.not_(Is.all(Is.at(0, Is.in_range(0, layers)), Is.at(1, Is.in_range(0, heads)))),
         wrong(("ch08.ex_range", {"layers": layers, "heads": heads}))),
        (Is.equal(best), right(("ch08.ex_best_ok", {"mass": float(ing[best])}))),
        (Is.one_of(*dish_heads), wrong(("ch08.ex_best_dish", {"panel": panel}))),
        (Is.at(0, Is.equal(0)), wrong("ch08.ex_best_layer0"))],
        otherwise=wrong(("ch08.ex_best_other", {"panel": panel})),
        wrong_kind=wrong("ch08.ex_pair"))


value_exercise("ch8.best_head", "Which head puts the most weight on an ingredient's modifier?",
               reference=_ch8_best_head, mistakes=_ch8_best_head_mistakes,
               answer=_ch8_best_head_answer)


def _ch8_top_maps():
    """(tokens, head, map) for every head of the shipped model on three orders (once)."""
    if "maps" not in _CH8_CACHE:
        model = train.pretrained()
        texts = ["一碗牛肉面，不要香菜，多加辣。", "两份招牌炒饭，葱和蒜都不要，辣多放一点。",
                 "馄饨一份不要香菜，醋多放。"]
        out = []
        for text in texts:
            order = orders.Order.from_text(text)
            maps = probe.attention_maps(model, order)
            out += [(order.tokens, (layer, head), maps[layer, head])
                    for layer in range(maps.shape[0]) for head in range(maps.shape[1])]
        _CH8_CACHE["maps"] = out
    return _CH8_CACHE["maps"]


def _ch8_top_reference():
    def top_keys(weights, tokens):
        # row i is query i's attention: its largest weight names the key it reads most
        return [tokens[int(j)] for j in np.asarray(weights).argmax(axis=1)]

    return top_keys


def _ch8_top_mistakes():
    ref = _ch8_top_reference()

    def columns(w, tokens):   # the transpose: which query attends most to each key
        return ref(np.asarray(w).T, tokens)

    def positions(w, tokens):
        return [int(j) for j in np.asarray(w).argmax(axis=1)]

    def not_itself(w, tokens):   # skips the diagonal, as if a token could not read itself
        w = np.array(w, dtype=float)
        np.fill_diagonal(w, -1.0)
        return ref(w, tokens)

    return [columns, positions, not_itself, "香菜"]


@exercise("ch8.top_keys", "Write top_keys(weights, tokens): for each query, the key token "
          "it attends to most", reference=_ch8_top_reference, mistakes=_ch8_top_mistakes)
def _ch8_top_keys(func):
    if not callable(func):
        return False, tr("ch08.ex_pass_function", name="top_keys")
    ref = _ch8_top_reference()
    for tokens, (layer, head), w in _ch8_top_maps():
        got = func(w.copy(), list(tokens))
        if got is None:
            raise NotAnswered
        got = list(got) if isinstance(got, (list, tuple, np.ndarray)) else None
        if got is None or len(got) != len(tokens):
            return False, tr("ch08.ex_top_length", n=len(tokens))
        if any(isinstance(g, (int, np.integer)) for g in got):
            return False, tr("ch08.ex_top_positions")
        got, want = [str(g) for g in got], ref(w, tokens)
        if got == want:
            continue
        if got == ref(w.T, tokens):
            return False, tr("ch08.ex_top_columns")
        no_self = w.astype(float).copy()
        np.fill_diagonal(no_self, -1.0)
        if got == ref(no_self, tokens):
            return False, tr("ch08.ex_top_self")
        i = next(i for i, (g, t) in enumerate(zip(got, want, strict=True)) if g != t)
        return False, tr("ch08.ex_top_wrong", text="".join(tokens),
                         head=attention_roles.head_name(layer, head), token=tokens[i])
    return True, tr("ch08.ex_top_ok")


def _ch8_entropy_reference():
    def entropy(row):
        p = np.asarray(row, dtype=float)
        nz = p[p > 0]
        return float(-(nz * np.log(nz)).sum())

    return entropy


@exercise("ch8.row_entropy", "Write entropy(row): nats, with 0 · log 0 = 0",
          reference=_ch8_entropy_reference,
          mistakes=lambda: [lambda p: -(p * np.log(p)).sum(),
                            lambda p: -(p[p > 0] * np.log2(p[p > 0])).sum(),
                            lambda p: (p[p > 0] * np.log(p[p > 0])).sum(),
                            lambda p: np.log(len(p)), 1.0])
def _ch8_row_entropy(func):
    if not callable(func):
        return False, tr("ch08.ex_pass_function", name="entropy")
    rows = [np.full(4, 0.25), np.array([1.0, 0.0, 0.0]), np.array([0.5, 0.25, 0.25, 0.0]),
            np.array([0.7, 0.2, 0.1])]
    want = _ch8_entropy_reference()
    for row in rows:
        with np.errstate(divide="ignore", invalid="ignore"):
            got = call(func, row)
        if got.size != 1:
            return False, tr("ch08.ex_one_number")
        value, expected = float(got.reshape(())), want(row)
        if not np.isfinite(value):
            return False, tr("ch08.ex_entropy_nan")
        if abs(value - expected) < 1e-9:
            continue
        if abs(value + expected) < 1e-9 and expected:
            return False, tr("ch08.ex_entropy_sign")
        if expected and abs(value - expected / np.log(2)) < 1e-9:
            return False, tr("ch08.ex_entropy_bits")
        return False, tr("ch08.ex_entropy_wrong", row=row.tolist())
    return True, tr("ch08.ex_entropy_ok")


# --- concept questions (book/face/questions.py; their words: book/strings/ch08.toml) ---
questions.question("ch08.entropy", kind="predict", right=3,
                   answered_in="c025")
questions.question("ch08.weight_not_importance", kind="explain", right=1)
questions.question("ch08.bug_heatmap", kind="bug", right=2, code="""\
fig = go.Figure(go.Heatmap(z=w.T, x=tokens, y=tokens))
fig.update_layout(xaxis_title="key", yaxis_title="query")
""")
