"""Chapter 4 (the PyTorch module): its static figures, live explorers and exercises."""

from __future__ import annotations

import copy

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from book.face import controls, inpage, questions
from book.face.checks import (
    GOT_DTYPE,
    GOT_SHAPE,
    Answer,
    Is,
    NotAnswered,
    exercise,
    right,
    value_exercise,
    wrong,
)
from book.face.display import table
from book.face.figures import describe
from book.face.live import LiveExplorer, widgets_for
from book.face.plotting import COLORSCALE, MASK_COLORSCALE, make_slider, rounded
from book.ideas import masks, mha
from book.kit import i18n, validate
from book.studies import masktraps
from book.toy import orders_example

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

MASK_TEXT_UP_TO = 10  # cells are labelled with their value up to this many tokens


KIND_IDS = {"none": "kind_none", "causal": "kind_causal", "padding": "kind_padding",
            "causal + padding": "kind_causal_padding"}


def kind_name(kind: str) -> str:
    """The reader's name of a mask kind of :data:`book.studies.masktraps.MASK_KINDS`."""
    return i18n.tr("ch04." + KIND_IDS[validate.choice("kind", kind, masktraps.MASK_KINDS)])


def _mask_titles(kind: str) -> list[str]:
    name = kind_name(kind)
    return [i18n.tr("ch04.title_allowed", name=name), i18n.tr("ch04.title_weights", name=name)]


def _mask_traces(data: dict) -> dict:
    """x, y, z and text of the two panels (the mask grid, the weights) for ``data``."""
    n = data["seq_len"]
    show = n <= MASK_TEXT_UP_TO
    allowed, w = data["allowed"], data["weights"]
    mask_text = [["✓" if a else "·" for a in row] if show else [""] * n for row in allowed]
    # a blocked pair gets exactly 0, shown as "0" (not "0.00", which could be rounding)
    weight_text = [[f"{v:.2f}" if v else "0" for v in row] if show else [""] * n for row in w]
    return {"x": [data["labels"]] * 2, "y": [data["labels"]] * 2,
            "z": [allowed.astype(int).tolist(), rounded(w)], "text": [mask_text, weight_text],
            "customdata": [_mask_hover_glosses(data)] * 2}


def _mask_hover_glosses(data: dict):
    """The English hover glosses of ``data``'s grid (issue 48): each cell's query and key with
    their glosses (book.toy.orders.WORDS; the padding reads as itself), as the upright keys
    have no room for one; None in Chinese (book.toy.orders_example.hover_glosses)."""
    n_pad = data["seq_len"] - data["length"]
    tokens = orders_example.TOKENS[:data["length"]] + ["pad"] * n_pad
    glossed = orders_example.labels(tokens, orders_example.GLOSSES[:data["length"]]
                                    + ["pad"] * n_pad)
    return orders_example.hover_glosses(glossed, glossed)


def mask_figure(length: int = 5, seq_lens=None, kinds=masktraps.MASK_KINDS,
                  start: int | None = None) -> go.Figure:
    """Static explorer: a dropdown over mask kinds and a slider over the padded length.

    Left: which (query, key) pairs the mask allows; right: the attention weights the layer
    computes under it. Every (kind, padded length) is precomputed with :func:`masktraps.mask_data`.
    The dropdown switches which pair of panels is visible; the slider restyles all of them, so
    the two controls combine freely in the browser.
    """
    length = validate.integer("length", length, low=1, high=masktraps.MASK_MAX_REAL)
    seq_lens = list(range(length, masktraps.MASK_MAX_REAL + 1) if seq_lens is None else seq_lens)
    kinds = [validate.choice("kind", k, masktraps.MASK_KINDS) for k in kinds]
    if not seq_lens or not kinds:
        raise ValueError("mask_figure needs at least one padded length and one mask kind")
    start = seq_lens[min(1, len(seq_lens) - 1)] if start is None else start
    if start not in seq_lens:
        raise ValueError(f"start={start} is not one of the padded lengths {seq_lens}")
    fig, traces = _mask_plot(length, seq_lens, kinds, start)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    buttons = []
    for i, kind in enumerate(kinds):
        visible = [j // 2 == i for j in range(2 * len(kinds))]
        annotations = [dict(a, text=t) for a, t in zip(base, _mask_titles(kind), strict=True)]
        label = (i18n.tr("ch04.button_none") if kind == "none"
                 else i18n.tr("ch04.button_mask", kind=kind_name(kind)))
        buttons.append({"label": label, "method": "update",
                        "args": [{"visible": visible}, {"annotations": annotations}]})
    steps = []
    for n in seq_lens:
        restyle = {key: [t[key][p] for t in traces[n] for p in (0, 1)]
                   for key in ("x", "y", "z", "text", "customdata")}
        steps.append({"label": str(n), "method": "update",
                      "args": [restyle, {"title.text": _mask_figure_title(length, n)}]})
    if len(kinds) > 1:
        # its own row, above the first panel's title: never over the title or the panel
        fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down",
                                        "showactive": True, "x": 0, "xanchor": "left",
                                        "y": 1.0, "yanchor": "bottom", "pad": {"b": 28}}])
    if len(seq_lens) > 1:
        fig.update_layout(sliders=[make_slider(steps, i18n.tr("ch04.slider_padded"),
                                               active=seq_lens.index(start))])
    return fig


def _mask_plot(length: int, seq_lens, kinds, start: int) -> tuple[go.Figure, dict]:
    """The two panels (mask, weights) of every kind at padded length ``start``, the first
    kind's visible (what every face of the mask explorer starts from), and each padded
    length's traces."""
    traces = {n: [_mask_traces(masktraps.mask_data(k, length, n)) for k in kinds] for n in seq_lens}
    # stacked, not side by side: both grids stay readable on a phone
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.18,
                        subplot_titles=_mask_titles(kinds[0]))
    fig.update_annotations(font_size=13, x=0, xanchor="left")  # before the buttons copy them
    query, key, weight = (i18n.tr(f"ch04.{k}") for k in ("query", "key", "weight"))
    for i, t in enumerate(traces[start]):
        visible = i == 0
        fig.add_trace(go.Heatmap(
            x=t["x"][0], y=t["y"][0], z=t["z"][0], text=t["text"][0], texttemplate="%{text}",
            zmin=0, zmax=1, colorscale=MASK_COLORSCALE, showscale=False, visible=visible,
            customdata=t["customdata"][0],
            hovertemplate=orders_example.glossed_hover(
                f"{query} %{{y}}<br>{key} %{{x}}<br>%{{z}}: "
                f"{i18n.tr('ch04.one_may_attend')}<extra></extra>")),
            row=1, col=1)
        fig.add_trace(go.Heatmap(
            x=t["x"][1], y=t["y"][1], z=t["z"][1], text=t["text"][1], texttemplate="%{text}",
            zmin=0, zmax=1, colorscale=COLORSCALE, visible=visible,
            colorbar={"title": {"text": weight}, "len": 0.42, "y": 0.21},
            customdata=t["customdata"][1],
            hovertemplate=orders_example.glossed_hover(
                f"{query} %{{y}}<br>{key} %{{x}}<br>{weight} %{{z:.3f}}<extra></extra>")),
            row=2, col=1)
    fig.update_xaxes(tickangle=-45, side="bottom")
    fig.update_yaxes(autorange="reversed", title_text=query)
    fig.update_xaxes(title_text=key, row=2, col=1)
    fig.update_layout(height=660, margin={"l": 60, "r": 20, "t": 130, "b": 40},
                      title={"text": _mask_figure_title(length, start), "font": {"size": 13},
                             "x": 0.02, "xanchor": "left", "yref": "container", "y": 0.985,
                             "yanchor": "top"})
    describe(fig, alt=i18n.tr("ch04.mask_alt"), caption=_mask_caption(length, start, kinds))
    return fig, traces


def _mask_caption(length: int, seq_len: int, kinds) -> str:
    """The mask explorer's caption: what a blocked pair gets, and (where the controls reach no
    mask with padding) how much weight a real token puts on the padding without one."""
    if "none" not in kinds or seq_len == length:
        return i18n.tr("ch04.mask_caption")
    share = masktraps.mask_data("none", length, seq_len)["pad_share"]
    return i18n.tr("ch04.mask_caption_padding", length=length, pad=seq_len - length,
                   share=share)


def _mask_figure_title(length: int, seq_len: int) -> str:
    return i18n.tr("ch04.figure_title", length=length, seq_len=seq_len)


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def _mask_redraw(fig, kind, length, padding):
    data = masktraps.mask_data(kind, length, length + padding)
    traces = _mask_traces(data)
    for i, trace in enumerate(fig.data):
        trace.x, trace.y = traces["x"][i], traces["y"][i]
        trace.z, trace.text = traces["z"][i], traces["text"][i]
        trace.customdata = traces["customdata"][i]
    for annotation, title in zip(fig.layout.annotations, _mask_titles(kind), strict=True):
        annotation.text = title
    fig.layout.title.text = _mask_figure_title(length, length + padding)


def _mask_controls() -> list:
    """The number of real tokens and the amount of padding (the padded length is their sum),
    so every combination of slider positions is a valid sequence. The first state is the one
    the page's prose describes (:func:`mask_first_data`): no mask, 5 real tokens padded to 8."""
    return [controls.Choice(name="kind", label=i18n.tr("ch04.live_mask"),
                            options=[(k, kind_name(k)) for k in masktraps.MASK_KINDS],
                            value="none"),
            controls.Slider(name="length", label=i18n.tr("ch04.live_real_tokens"), low=1,
                            high=masktraps.MASK_MAX_REAL, value=5),
            controls.Slider(name="padding", label=i18n.tr("ch04.live_padding"), low=0,
                            high=masktraps.MASK_MAX_PAD, value=3)]


def mask_first_data() -> dict:
    """:func:`masktraps.mask_data` of the mask explorer's first state (every face opens on
    it): the numbers the page's prose quotes about the figure as it opens."""
    first = controls.first_values(_mask_controls())
    return masktraps.mask_data(first["kind"], first["length"],
                               first["length"] + first["padding"])


def _mask_first_plot() -> go.Figure:
    """The mask explorer drawn at its controls' first state."""
    first = controls.first_values(_mask_controls())
    padded = first["length"] + first["padding"]
    fig = _mask_plot(first["length"], [padded], [first["kind"]], padded)[0]
    # its controls reach every mask kind, the one drawn first and no mask among them
    return describe(fig, alt=i18n.tr("ch04.mask_alt"),
                    caption=_mask_caption(first["length"], padded, masktraps.MASK_KINDS))


def _mask_adds() -> str:
    return i18n.tr("ch04.live_adds_mask", real=masktraps.MASK_MAX_REAL,
                   pad=masktraps.MASK_MAX_PAD)


def mask_live() -> LiveExplorer:
    """Any mask kind, 1–8 real tokens and 0–8 padding positions: the mask and the weights."""
    return LiveExplorer(_mask_first_plot(), widgets_for(_mask_controls()), _mask_redraw,
                        adds=_mask_adds())


# --- in-page explorer (the book's HTML: book/face/inpage/ recomputes it, no kernel) ----------

MIN_CELL_PX = 12  # the smallest heatmap cell the book draws (tests/legibility.py checks it)


def _mask_text_modes(figure) -> list:
    """How the book's renderer (``book.face.plotting.tidy``) writes the cell values of
    ``figure``'s two panels (the mask explorer's) when they hold n positions: for each n, a
    pair of modes per panel, "full", "short" (no leading zero) or "none" (hover only), the
    first for weights written "0.xx" only, the second for a grid that holds a "1.00" too (a
    one-hot row: "1.00" has no leading zero to drop, so it may not fit where ".xx" does)."""
    from book.face.plotting import tidy

    base = figure.to_dict()
    modes: list = [None]  # no sequence of length 0
    for n in range(1, masktraps.MASK_MAX_REAL + masktraps.MASK_MAX_PAD + 1):
        traces = _mask_traces(masktraps.mask_data("none", 1, n))
        pair = []
        for one_hot in (False, True):
            texts = copy.deepcopy(traces["text"])
            if one_hot and texts[1][0][0]:
                texts[1][0][0] = "1.00"
            fig = copy.deepcopy(base)
            for i, trace in enumerate(fig["data"]):
                trace.update(x=traces["x"][i], y=traces["y"][i], z=traces["z"][i],
                             text=texts[i], texttemplate="%{text}")
            tidy(fig)
            pair.append(["none" if not t["texttemplate"] else
                         "short" if t["text"] != texts[i] else "full"
                         for i, t in enumerate(fig["data"])])
        modes.append(pair)
    return modes


def mask_inpage() -> inpage.InPage:
    """The mask explorer in the book's page: the live explorer's controls and first state; the
    page masks and normalises the seeded layer's scores itself (its projected q and k of every
    position come with the page)."""
    fig = _mask_first_plot()
    layer, x = masktraps.seeded_layer(4, masktraps.MASK_MAX_REAL + masktraps.MASK_MAX_PAD)
    if layer.n_heads != 1:
        raise ValueError("the page's mask explorer draws one head")
    with torch.no_grad():
        q, k = layer.w_q(x)[0], layer.w_k(x)[0]
    kinds = {}
    for kind in masktraps.MASK_KINDS:
        allowed, weights = _mask_titles(kind)
        titles = inpage.templates(fig, {"annotations[0]": allowed,
                                                "annotations[1]": weights})
        kinds[kind] = {"causal": "causal" in kind, "padding": "padding" in kind,
                       "titles": [titles["annotations[0]"], titles["annotations[1]"]]}
    longest = masktraps.MASK_MAX_REAL + masktraps.MASK_MAX_PAD
    title = inpage.templates(fig, {"title": ("ch04.figure_title", {
        "length": str(masktraps.MASK_MAX_REAL), "seq_len": str(longest)})})["title"]
    # the figure grows with the padded length, so that every row keeps room for its tick label
    # (a 12 px cell is the least; 16 rows of 12 px labels touch on a phone); past the static
    # explorer's longest sequence the key labels stand upright, clear of each other on a phone
    layout = fig.layout
    domain = layout.yaxis.domain
    spec = {"height": layout.height, "margin": layout.margin.t + layout.margin.b,
            "panel_share": domain[1] - domain[0], "cell_px": MIN_CELL_PX + 4,
            "angled_up_to": masktraps.MASK_MAX_REAL, "tickangle": layout.xaxis.tickangle,
            "q": q.double().tolist(), "k": k.double().tolist(), "kinds": kinds,
            "tokens": list(orders_example.TOKENS), "pad": "pad", "title": title,
            # the English hover's glosses (issue 48); the Chinese reads the tokens
            "glosses": None if i18n.language() == "zh" else list(orders_example.GLOSSES),
            "text_up_to": MASK_TEXT_UP_TO, "text_modes": _mask_text_modes(fig)}
    return inpage.InPage("mask", fig, inpage.page_controls(_mask_controls()), spec,
                         _mask_adds())


def mask_explorer():
    """The mask explorer: recomputed in the book's page, the live explorer in Jupyter."""
    return inpage.either(mask_live, mask_inpage)


# --- the page's tables and glued words --------------------------------------------------------

def conventions_table(rows: list[dict]):
    """:func:`book.ideas.agreement.mask_conventions`'s rows as a Markdown table: where, which
    argument, and the readings that match the ground truth ("—" when none does)."""
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and {"where", "argument", "right"} <= set(r) for r in rows):
        raise ValueError("rows must be the list book.ideas.agreement.mask_conventions() "
                         "returns: dicts with 'where', 'argument' and 'right'")
    return table([i18n.tr("ch04.col_where"), i18n.tr("ch04.col_argument"),
                  i18n.tr("ch04.col_right")],
                 [(r["where"], r["argument"], ", ".join(r["right"]) or "—") for r in rows])


def speed_verdict(ratio: float) -> str:
    """The words the prose glues in for "the loop was ___ the batched layer", from the ratio
    loop time ÷ batched time (within 10 % of 1 reads as "about as fast as")."""
    ratio = validate.real("ratio", ratio, low=0.0)
    if ratio > 1.1:
        return i18n.tr("ch04.timing_slower")
    if ratio < 0.9:
        return i18n.tr("ch04.timing_faster")
    return i18n.tr("ch04.timing_same")


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

def _ch4_causal_reference():
    return masks.causal_mask(5)


def _ch4_causal_mistakes():
    causal = masks.causal_mask(5)
    ones = torch.ones(5, 5, dtype=torch.bool)
    return [~causal,                  # nn.MultiheadAttention's convention (True = blocked)
            ones.triu(),              # the upper triangle: every token sees the future
            ones.tril(-1),            # no diagonal: a token may not see itself
            masks.to_additive(causal),  # an additive float mask
            causal.int(),             # the right pattern, as integers
            np.ones((4, 4), dtype=bool)]


def _ch4_causal_answer() -> Answer:
    want = np.tril(np.ones((5, 5), dtype=bool))
    return Answer("mask", [
        (Is.has_neginf(), wrong("ch04.causal_additive")),
        (Is.not_(Is.shape(5, 5)), wrong(("ch04.causal_shape", {"shape": GOT_SHAPE}))),
        (Is.all(Is.not_(Is.dtype("bool")), Is.nonzero_is(want)), wrong("ch04.causal_numbers")),
        (Is.not_(Is.dtype("bool")), wrong(("ch04.causal_dtype", {"dtype": GOT_DTYPE}))),
        (Is.equal(want), right("ch04.causal_ok")),
        (Is.equal(~want), wrong("ch04.causal_torch")),
        (Is.equal(want.T), wrong("ch04.causal_future")),
        (Is.equal(np.tril(want, -1)), wrong("ch04.causal_diagonal"))],
        otherwise=wrong("ch04.causal_rows"))


value_exercise("ch4.causal_mask", "The causal mask for 5 tokens, in this book's convention",
               reference=_ch4_causal_reference, mistakes=_ch4_causal_mistakes,
               answer=_ch4_causal_answer)


def _ch4_split_reference(x, n_heads):
    batch, seq, d_model = x.shape
    return x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)


def _ch4_split_mistakes():
    def reshape_only(x, n_heads):
        b, n, d = x.shape
        return x.reshape(b, n_heads, n, d // n_heads)

    def no_transpose(x, n_heads):
        b, n, d = x.shape
        return x.view(b, n, n_heads, d // n_heads)

    def interleaved(x, n_heads):
        b, n, d = x.shape
        return x.view(b, n, d // n_heads, n_heads).permute(0, 3, 1, 2)

    return [reshape_only, no_transpose, interleaved, 3]


@exercise("ch4.split_heads", "Repair split_heads(x, n_heads): (batch, seq, d_model) → "
          "(batch, heads, seq, d_k)", reference=lambda: _ch4_split_reference,
          mistakes=_ch4_split_mistakes)
def _ch4_split_heads(func):
    if not callable(func):
        return False, i18n.tr("ch04.pass_function", name="split_heads")
    gen = torch.Generator().manual_seed(4)
    for batch, seq, d_model, n_heads in [(2, 4, 8, 2), (1, 3, 6, 3), (3, 5, 12, 4)]:
        d_k = d_model // n_heads
        x = torch.randn(batch, seq, d_model, generator=gen)
        out = func(x.clone(), n_heads)
        if out is None:
            raise NotAnswered
        out = torch.as_tensor(out)
        want = _ch4_split_reference(x, n_heads)
        if tuple(out.shape) != tuple(want.shape):
            if tuple(out.shape) == (batch, seq, n_heads, d_k):
                return False, i18n.tr("ch04.split_seq_first")
            return False, i18n.tr("ch04.split_shape", x_shape=tuple(x.shape), n_heads=n_heads,
                                  want=tuple(want.shape), got=tuple(out.shape))
        out = out.to(want.dtype)
        if torch.allclose(out, x.reshape(batch, n_heads, seq, d_k)):
            return False, i18n.tr("ch04.split_reshape")
        if torch.allclose(out, x.view(batch, seq, d_k, n_heads).permute(0, 3, 1, 2)):
            return False, i18n.tr("ch04.split_interleaved")
        if not torch.allclose(out, want):
            return False, i18n.tr("ch04.split_values")
    return True, i18n.tr("ch04.split_ok")


def _ch4_mha_layer(n: int):
    """A seeded float64 layer, its nn.MultiheadAttention twin and an input of n tokens."""

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(n)
        layer = mha.MultiHeadSelfAttention(8, 2, dtype=torch.float64).eval()
    x = torch.randn(1, n, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    return layer, mha.copy_to_torch_mha(layer).eval(), x


def _ch4_attn_mask_cases():
    gen = torch.Generator().manual_seed(7)
    random = (torch.rand(6, 6, generator=gen) < 0.5) | torch.eye(6, dtype=torch.bool)
    return [masks.causal_mask(5), random]


def _ch4_attn_mask_reference():
    return masks.to_torch_attn_mask


@exercise("ch4.torch_attn_mask", "Convert a book mask into nn.MultiheadAttention's attn_mask",
          reference=_ch4_attn_mask_reference,
          mistakes=lambda: [lambda m: m, lambda m: (~m).float(), lambda m: (~m).int(),
                            "mask"])
def _ch4_torch_attn_mask(func):
    if not callable(func):
        return False, i18n.tr("ch04.pass_function", name="to_attn_mask")
    for mask in _ch4_attn_mask_cases():
        n = mask.shape[0]
        converted = func(mask.clone())
        if converted is None:
            raise NotAnswered
        if not isinstance(converted, torch.Tensor):
            return False, i18n.tr("ch04.attn_tensor", type=type(converted).__name__)
        if tuple(converted.shape) != (n, n):
            return False, i18n.tr("ch04.attn_shape", n=n, shape=tuple(converted.shape))
        if converted.dtype != torch.bool and not converted.is_floating_point():
            return False, i18n.tr("ch04.attn_dtype", dtype=converted.dtype)
        layer, torch_mha, x = _ch4_mha_layer(n)
        with torch.no_grad():
            want = layer(x, mask=mask)
            got = torch_mha(x, x, x, attn_mask=converted.to(x.dtype)
                            if converted.is_floating_point() else converted,
                            need_weights=False)[0]
        if bool(torch.isfinite(got).all()) and torch.allclose(got, want, atol=1e-9):
            continue
        if converted.dtype == torch.bool and torch.equal(converted, mask):
            return False, i18n.tr("ch04.attn_same")
        if converted.is_floating_point() and not bool(torch.isinf(converted).any()):
            return False, i18n.tr("ch04.attn_float")
        return False, i18n.tr("ch04.attn_other")
    return True, i18n.tr("ch04.attn_ok")


def _ch4_scores_shape() -> tuple[int, ...]:
    steps = dict(mha.shape_trace(batch=3, seq=10, d_model=512, n_heads=8))
    return next(shape for name, shape in steps.items() if name.startswith("scores"))


def _ch4_scores_answer() -> Answer:
    return Answer("shape", [
        (Is.equal(_ch4_scores_shape()), right("ch04.scores_ok")),
        (Is.all(Is.length(3), Is.same(1, 2)), wrong("ch04.scores_no_heads")),
        (Is.all(Is.length(4), Is.not_(Is.at(1, Is.equal(8))), Is.has(8)),
         wrong("ch04.scores_order")),
        (Is.all(Is.length(4), Is.not_(Is.same(-1, -2))), wrong("ch04.scores_q"))],
        otherwise=wrong("ch04.scores_trace"), wrong_kind=wrong("ch04.scores_tuple"))


value_exercise("ch4.scores_shape", "The shape of the scores for x of shape (3, 10, 512), 8 heads",
               reference=_ch4_scores_shape,
               mistakes=lambda: [(3, 10, 10), (3, 8, 10, 64), (3, 10, 8, 10), (3, 10, 512), 80],
               answer=_ch4_scores_answer)


# --- concept questions (book/face/questions.py; their words: book/strings/ch04.toml) ---
questions.question("ch04.causal_zeros", kind="predict", right=2,
                   answered_in="c017")
questions.question("ch04.dropout", kind="explain", right=3)
questions.question("ch04.bug_view", kind="bug", right=2, code="""\
q = self.w_q(x)
q = q.view(B, self.n_heads, T, self.d_k)
""")
