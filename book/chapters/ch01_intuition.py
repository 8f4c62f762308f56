"""Chapter 1 (what self-attention does): its static figures, live explorers and exercises."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.face import plotting, questions
from book.face.checks import Answer, Is, array_answer, call, exercise, right, value_exercise, wrong
from book.face.figures import describe, plain
from book.face.live import LiveExplorer
from book.face.plotting import COLORSCALE, SCALE_COLORS, make_slider, rounded, wrap
from book.ideas import attention
from book.kit.i18n import pick, tr
from book.toy import orders, orders_example

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------




HEADS_FIRST_PANEL = 0.6   # of the heads explorer's width: room for its keys' labels upright
# at 11 px on a phone (8 keys in 342 px: 14.1 px each, TICK_GAP apart), with panels
# HEADS_SPACING apart (at 0.04 a key missed by 0.01 px; a wider first panel left the others
# cells of 11.8 px at 1280 px)
HEADS_SPACING = 0.035
HEADS_SHORT_LABEL = 8     # columns: query labels this short leave room for a wider first panel


def _heads_titles(n_heads: int) -> tuple[list[str], str, dict]:
    """Short panel titles and a figure title that lists what each head links."""
    data = orders_example.heads_data(n_heads)
    kinds = orders_example.relation_kinds_per_head(n_heads)
    panels = [tr("ch01.head_panel", head=i + 1) if i < n_heads
              else tr("ch01.head_panel_none")
              for i in range(orders_example.MAX_HEADS)]
    join = tr("ch01.kind_join")
    lines = [wrap(tr("ch01.head_line", head=i + 1,
                     kinds=join.join(orders_example.kind_name(k) for k in kinds[i])), 46)
             for i in range(n_heads)]
    which = "ch01.heads_title_one" if n_heads == 1 else "ch01.heads_title_many"
    title = (wrap(tr(which, n=n_heads, illustrative=tr("ch01.illustrative")), 46) + "<br>"
             + "<br>".join(lines))
    return panels, title, data


def _hover() -> str:
    """The maps' hover text: in English the query and the key each with its gloss (the keys'
    upright labels have no room for one), from :func:`_hover_glosses`."""
    return orders_example.glossed_hover(tr("ch01.hover", extra="<extra></extra>"))


def _hover_glosses():
    glossed = orders_example.labels()
    return orders_example.hover_glosses(glossed, glossed)


def one_head_figure(weights) -> go.Figure:
    """The order's attention map for one head that tracks every relation (illustrative)."""
    labels = orders_example.labels()
    title = wrap(tr("ch01.one_head_title", illustrative=tr("ch01.illustrative")), 46)
    fig = plotting.attention_heatmap(weights, labels, orders_example.labels(short=True),
                                     title=title)
    fig.update_traces(hovertemplate=_hover(), customdata=_hover_glosses(),
                      colorbar_title_text=tr("ch01.weight"))
    # as in the heads explorer below: keys rotated, short axis titles
    fig.update_xaxes(tickangle=-90, tickfont_size=11)
    fig.update_layout(xaxis_title_text=tr("ch01.key"), yaxis_title_text=tr("ch01.query"),
                      title={"font": {"size": 13}, "x": 0, "xanchor": "left", "automargin": True,
                             "yref": "paper", "pad": {"b": 16}}, margin={"t": 40, "b": 40})
    w = np.asarray(weights, dtype=float)
    query, key = np.unravel_index(int(np.argmax(w)), w.shape)
    return describe(fig, alt=tr("ch01.one_head_alt", n=len(labels)),
                    caption=tr("ch01.one_head_caption", query=labels[query], key=labels[key],
                               w=w[query, key]))


def _heads_zs(data: dict) -> list:
    """Each panel's weights (rounded); a panel past the number of heads is empty."""
    n = len(orders_example.TOKENS)
    empty = [[None] * n for _ in range(n)]
    return [rounded(z) if z is not None else empty for z in data["z"]]


def _heads_plot() -> go.Figure:
    """The heads explorer at one head, without its control: one heatmap per head (the panels
    past the number of heads empty), the axes, the title (what both faces start from)."""
    labels = orders_example.labels()
    keys = orders_example.labels(short=True)
    panels, title, first = _heads_titles(1)
    # the first panel wider, with the keys' labels (upright Chinese, book.face.plotting.
    # level_cjk_ticks); the others share its keys and leave them to the hover text. Where the
    # query labels carry a gloss ("一碗 (a bowl of)") they take that room: equal panels.
    short = max(plotting.text_width(s) for s in labels) <= HEADS_SHORT_LABEL
    wide = HEADS_FIRST_PANEL if short else 1 / orders_example.MAX_HEADS
    rest = (1 - wide) / (orders_example.MAX_HEADS - 1)
    fig = make_subplots(rows=1, cols=orders_example.MAX_HEADS, horizontal_spacing=HEADS_SPACING,
                        subplot_titles=panels,
                        column_widths=[wide] + [rest] * (orders_example.MAX_HEADS - 1))
    # before the steps copy the annotations; 10 px over the equal (glossed) panels, where at
    # 390 px "head 1" and "head 2" ran into each other in a wide fallback font
    fig.update_annotations(font_size=11 if short else 10, yshift=4)
    for i, z in enumerate(_heads_zs(first)):
        fig.add_trace(go.Heatmap(z=z, x=keys, y=labels, zmin=0, zmax=1, colorscale=COLORSCALE,
                                 showscale=i == orders_example.MAX_HEADS - 1,
                                 colorbar={"title": {"text": tr("ch01.weight")},
                                           "thickness": 12},
                                 customdata=_hover_glosses(), hovertemplate=_hover()),
                      row=1, col=i + 1)
        fig.update_yaxes(autorange="reversed", showticklabels=i == 0, row=1, col=i + 1)
        fig.update_xaxes(tickangle=-90, tickfont_size=11, title_text=tr("ch01.key"),
                         showticklabels=i == 0 or not short, row=1, col=i + 1)
    fig.update_yaxes(title_text=tr("ch01.query"), row=1, col=1)
    fig.update_layout(height=640,
                      title={"text": title, "font": {"size": 13}, "x": 0, "xanchor": "left",
                             "yref": "paper", "automargin": True, "pad": {"b": 20}},
                      margin={"l": 40, "r": 20, "t": 30, "b": 40})
    return describe(fig, alt=tr("ch01.heads_alt", max=orders_example.MAX_HEADS),
                    caption=_heads_caption())


CORIANDER, NO, NOODLES = 4, 3, 1  # token positions of 香菜, 不要 and 牛肉面 in the order


def _heads_caption() -> str:
    """What the heads explorer shows at one head and at the most: 香菜's weight on 不要 and on
    牛肉面 (:func:`book.toy.orders_example.partner_share`, the best head for each)."""
    share = orders_example.partner_share
    most = orders_example.MAX_HEADS
    return tr("ch01.heads_caption", max=most, one_no=share(1, CORIANDER, NO),
              one_dish=share(1, CORIANDER, NOODLES), many_no=share(most, CORIANDER, NO),
              many_dish=share(most, CORIANDER, NOODLES))


def heads_figure() -> go.Figure:
    """Static explorer: a slider over the number of heads (1–3), one heatmap per head."""
    fig = _heads_plot()
    base_annotations = [a.to_plotly_json() for a in fig.layout.annotations]
    steps = []
    for h in range(1, orders_example.MAX_HEADS + 1):
        panels, title, data = _heads_titles(h)
        annotations = [dict(a, text=t) for a, t in zip(base_annotations, panels, strict=True)]
        steps.append({"label": str(h), "method": "update",
                      "args": [{"z": _heads_zs(data)},
                               {"annotations": annotations, "title.text": title}]})
    fig.update_layout(sliders=[{**make_slider(steps, tr("ch01.slider_heads")), "pad": {"t": 80}}])
    return fig


def menu_figure(weights: dict[str, float]) -> go.Figure:
    """Bar chart of how much of each dish (value) the diner's request (query) picks up: one
    horizontal bar per dish, so that its name and gloss have a row of their own."""
    names = [orders_example.dish_name(n) if n in orders_example.MENU_IDS else n
             for n in weights]
    values = list(weights.values())
    fig = go.Figure(go.Bar(y=names, x=rounded(values), orientation="h",
                           marker_color=SCALE_COLORS["sqrt"],
                           text=[f"{v:.2f}" for v in values], textposition="outside"))
    fig.update_layout(xaxis={"title": tr("ch01.menu_y"), "range": [0, 1.15]},
                      yaxis={"autorange": "reversed", "automargin": True},
                      title={"text": tr("ch01.menu_title") + "<br><sup>"
                             + wrap(tr("ch01.menu_x"), 46) + "</sup>",
                             "x": 0, "xanchor": "left"},
                      # room for the longest line of a label (automargin measures the first)
                      height=360, margin={"l": 120, "r": 20, "t": 70, "b": 50})
    best = int(np.argmax(values))
    return describe(fig, alt=tr("ch01.menu_alt", n=len(values)),
                    caption=tr("ch01.menu_caption", best=plain(names[best]), w=values[best],
                               low=min(values)))


# --- words the page prints or glues in (the lesson cells print plain Python) ---------------------

def token_glosses() -> list[str]:
    """The gloss printed beside each token of the order (``orders_example.TOKENS``), from the
    one gloss table; the Chinese edition reads the tokens natively: no glosses there."""
    return pick(list(orders_example.GLOSSES), [""] * len(orders_example.TOKENS))


def symmetric_or_not(symmetric: bool) -> str:
    """The words the prose glues in for "and X Xᵀ ___": whether the raw scores are symmetric."""
    return tr("ch01.ramp_symmetric" if symmetric else "ch01.ramp_not_symmetric")


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def heads_live() -> LiveExplorer:
    """Choose 1–3 heads and see how the order-takers split the relations (illustrative)."""
    def redraw(fig, n_heads):
        panels, title, data = _heads_titles(n_heads)
        for i, z in enumerate(_heads_zs(data)):
            fig.data[i].z = z
            fig.layout.annotations[i].text = panels[i]
        fig.layout.title.text = title

    controls = {"n_heads": widgets.IntSlider(value=1, min=1, max=orders_example.MAX_HEADS,
                                             description=tr("ch01.live_heads"))}
    return LiveExplorer(_heads_plot(), controls, redraw, adds=tr("ch01.live_adds_heads"))


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

def _naive_softmax(x):
    """The textbook formula without the max shift: overflows on large scores."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(np.asarray(x, dtype=float))
        return e / e.sum()


value_exercise("ch1.softmax_row", "Softmax of the scores [2, 1, 0]",
               reference=lambda: attention.softmax([2.0, 1.0, 0.0]),
               mistakes=lambda: [[0.5, 0.3, 0.2], [2, 1, 0], [0.67, 0.24]],
               answer=lambda: array_answer(attention.softmax([2.0, 1.0, 0.0]), 5e-3,
                                           "ch01.softmax_hint", "ch01.correct"))

value_exercise("ch1.pair_count", "How many weights does one head compute for a 10-token sentence?",
               reference=lambda: 10 * 10, mistakes=lambda: [90, 10, 20],
               answer=lambda: Answer("number", [(Is.equal(10 * 10), right("ch01.pairs_ok")),
                                                (Is.equal(10 * 9), wrong("ch01.pairs_close"))],
                                     otherwise=wrong("ch01.pairs_hint")))


@exercise("ch1.my_softmax", "Write softmax(x) that survives large scores",
          reference=lambda: attention.softmax,
          mistakes=lambda: [_naive_softmax, lambda x: x, 3])
def _ch1_my_softmax(func):
    if not callable(func):
        return False, tr("ch01.pass_function", name="my_softmax")
    rng = np.random.default_rng(1)
    cases = [np.array([2.0, 1.0, 0.0]), rng.standard_normal(7), np.array([1000.0, 999.0, 0.0]),
             np.array([-1000.0, -1001.0]), np.array([5.0])]
    for x in cases:
        got = call(func, x)
        want = attention.softmax(x)
        if got.shape != want.shape:
            return False, tr("ch01.shape_wrong", shape=x.shape, got=got.shape)
        if not np.all(np.isfinite(got)):
            return False, tr("ch01.overflow")
        if not np.allclose(got, want, atol=1e-9):
            return False, tr("ch01.values_off")
    return True, tr("ch01.stable_ok")


def _heads_needed(threshold: float = 0.8) -> int:
    """Fewest heads at which 香菜 (coriander) puts ≥ threshold on both 不要 and 牛肉面."""
    coriander, no, noodles = 4, 3, 1
    return min(h for h in range(1, len(orders_example.RELATIONS) + 1)
               if orders_example.partner_share(h, coriander, no) >= threshold
               and orders_example.partner_share(h, coriander, noodles) >= threshold)


# The smallest head count at which 香菜 puts ≥ 0.8 on both 不要 and 牛肉面 in some head.
value_exercise("ch1.heads_needed",
               "香菜 needs its modifier and its dish: how many heads keep both sharp?",
               reference=lambda: _heads_needed(), mistakes=lambda: [1, 3],
               answer=lambda: Answer("number", [(Is.equal(_heads_needed()), right("ch01.correct"))],
                                     otherwise=wrong("ch01.heads_hint")))


# An order the page has not shown (its words from the toy vocabulary): 醋 (vinegar) takes its
# label from the modifier of its clause, which here comes after it.
QKV_ORDER = "两盘饺子，醋少放"


def qkv_order_text() -> str:
    """The exercise's order as the page prints it: each token with its gloss in English, the
    tokens alone in Chinese."""
    tokens = orders.tokenize(QKV_ORDER)
    return " ".join(pick([f"{t} ({orders.gloss(t)})" if orders.category(t) != "punctuation"
                          else t for t in tokens], tokens))


def _qkv_parts() -> dict[str, str]:
    """The order's ingredient, its dish and the modifier of the ingredient's clause (the token
    whose key the ingredient's query should match, by the order language's grammar)."""
    tokens = orders.tokenize(QKV_ORDER)
    ingredient = next(i for i, t in enumerate(tokens) if orders.category(t) == "ingredient")
    start, stop = next(c for c in orders.clauses(tokens) if c[0] <= ingredient < c[1])
    modifier = next(t for t in tokens[start:stop] if orders.category(t) == "modifier")
    dish = next(t for t in tokens if orders.category(t) == "dish")
    return {"ingredient": tokens[ingredient], "modifier": modifier, "dish": dish}


def _qkv_answer() -> Answer:
    p = _qkv_parts()
    return Answer("labels", [
        (Is.equal([p["modifier"], p["modifier"]]), right("ch01.qkv_ok")),
        (Is.not_(Is.length(2)), wrong("ch01.qkv_two")),
        (Is.at(0, Is.equal(p["ingredient"])), wrong(("ch01.qkv_self", {"token": p["ingredient"]}))),
        (Is.at(0, Is.equal(p["dish"])), wrong(("ch01.qkv_dish", {"dish": p["dish"]}))),
        (Is.at(0, Is.equal(p["modifier"])), wrong("ch01.qkv_value"))],
        otherwise=wrong(("ch01.qkv_hint", {"token": p["ingredient"]})),
        wrong_kind=wrong("ch01.qkv_two"))


value_exercise("ch1.qkv_order", f"In {QKV_ORDER}: whose key does the ingredient's query match, "
               "whose value does it copy?",
               reference=lambda: [_qkv_parts()["modifier"]] * 2,
               mistakes=lambda: [[_qkv_parts()["ingredient"]] * 2, [_qkv_parts()["dish"]] * 2,
                                 [_qkv_parts()["modifier"], _qkv_parts()["ingredient"]],
                                 [_qkv_parts()["modifier"]], _qkv_parts()["modifier"]],
               answer=_qkv_answer)


# --- concept questions (book/face/questions.py; their words: book/strings/ch01.toml) ---
questions.question("ch01.apple", kind="predict", right=2,
                   answered_in="c007")
questions.question("ch01.one_key", kind="explain", right=1)
questions.question("ch01.bug_axis", kind="bug", right=1, code="""\
scores = Q @ K.T
weights = softmax(scores, axis=0)
Z = weights @ V
""")
