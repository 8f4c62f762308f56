"""Chapter 4 (the PyTorch module): its static figures, live explorers and exercises."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from . import masks, masktraps, mha, validate
from .checks import NotAnswered, exercise
from .live import LiveExplorer
from .plotting import COLORSCALE, MASK_COLORSCALE, make_slider, rounded

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

MASK_TEXT_UP_TO = 10  # cells are labelled with their value up to this many tokens


def _mask_titles(kind: str) -> list[str]:
    name = "no mask" if kind == "none" else kind
    return [f"may attend? — {name}", f"weights — {name}"]


def _mask_traces(data: dict) -> dict:
    """x, y, z and text of the two panels (the mask grid, the weights) for ``data``."""
    n = data["seq_len"]
    show = n <= MASK_TEXT_UP_TO
    allowed, w = data["allowed"], data["weights"]
    mask_text = [["✓" if a else "·" for a in row] if show else [""] * n for row in allowed]
    # a blocked pair gets exactly 0, shown as "0" (not "0.00", which could be rounding)
    weight_text = [[f"{v:.2f}" if v else "0" for v in row] if show else [""] * n for row in w]
    return {"x": [data["labels"]] * 2, "y": [data["labels"]] * 2,
            "z": [allowed.astype(int).tolist(), rounded(w)], "text": [mask_text, weight_text]}


def mask_explorer(length: int = 5, seq_lens=None, kinds=masktraps.MASK_KINDS,
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
        raise ValueError("mask_explorer needs at least one padded length and one mask kind")
    start = seq_lens[min(1, len(seq_lens) - 1)] if start is None else start
    if start not in seq_lens:
        raise ValueError(f"start={start} is not one of the padded lengths {seq_lens}")
    traces = {n: [_mask_traces(masktraps.mask_data(k, length, n)) for k in kinds] for n in seq_lens}
    # stacked, not side by side: both grids stay readable on a phone
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.12,
                        subplot_titles=_mask_titles(kinds[0]))
    fig.update_annotations(font_size=13, x=0, xanchor="left")  # before the buttons copy them
    for i, t in enumerate(traces[start]):
        visible = i == 0
        fig.add_trace(go.Heatmap(
            x=t["x"][0], y=t["y"][0], z=t["z"][0], text=t["text"][0], texttemplate="%{text}",
            zmin=0, zmax=1, colorscale=MASK_COLORSCALE, showscale=False, visible=visible,
            hovertemplate="query %{y}<br>key %{x}<br>%{z}: 1 = may attend<extra></extra>"),
            row=1, col=1)
        fig.add_trace(go.Heatmap(
            x=t["x"][1], y=t["y"][1], z=t["z"][1], text=t["text"][1], texttemplate="%{text}",
            zmin=0, zmax=1, colorscale=COLORSCALE, visible=visible,
            colorbar={"title": {"text": "weight"}, "len": 0.42, "y": 0.21},
            hovertemplate="query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"),
            row=2, col=1)
    base = [a.to_plotly_json() for a in fig.layout.annotations]
    buttons = []
    for i, kind in enumerate(kinds):
        visible = [j // 2 == i for j in range(2 * len(kinds))]
        annotations = [dict(a, text=t) for a, t in zip(base, _mask_titles(kind), strict=True)]
        buttons.append({"label": f"mask: {kind}", "method": "update",
                        "args": [{"visible": visible}, {"annotations": annotations}]})
    steps = []
    for n in seq_lens:
        restyle = {key: [t[key][p] for t in traces[n] for p in (0, 1)]
                   for key in ("x", "y", "z", "text")}
        steps.append({"label": str(n), "method": "update",
                      "args": [restyle, {"title.text": _mask_figure_title(length, n)}]})
    fig.update_xaxes(tickangle=-45, side="bottom")
    fig.update_yaxes(autorange="reversed", title_text="query")
    fig.update_xaxes(title_text="key", row=2, col=1)
    fig.update_layout(height=840, margin={"l": 60, "r": 20, "t": 130, "b": 40},
                      title={"text": _mask_figure_title(length, start), "font": {"size": 13},
                             "x": 0.02, "xanchor": "left", "yref": "container", "y": 0.985,
                             "yanchor": "top"})
    if len(kinds) > 1:
        # its own row, above the first panel's title: never over the title or the panel
        fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "down",
                                        "showactive": True, "x": 0, "xanchor": "left",
                                        "y": 1.0, "yanchor": "bottom", "pad": {"b": 28}}])
    if len(seq_lens) > 1:
        fig.update_layout(sliders=[make_slider(steps, "padded length: ",
                                               active=seq_lens.index(start))])
    return fig


def _mask_figure_title(length: int, seq_len: int) -> str:
    return f"{length} real tokens, padded to {seq_len} (rows = queries)"


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def mask_explorer_live() -> LiveExplorer:
    """Any mask kind, 1–8 real tokens and 0–8 padding positions: the mask and the weights.

    The controls are the number of real tokens and the amount of padding (the padded length is
    their sum), so every combination of slider positions is a valid sequence.
    """
    def redraw(fig, kind, length, padding):
        data = masktraps.mask_data(kind, length, length + padding)
        traces = _mask_traces(data)
        for i, trace in enumerate(fig.data):
            trace.x, trace.y = traces["x"][i], traces["y"][i]
            trace.z, trace.text = traces["z"][i], traces["text"][i]
        for annotation, title in zip(fig.layout.annotations, _mask_titles(kind),
                                     strict=True):
            annotation.text = title
        fig.layout.title.text = _mask_figure_title(length, length + padding)

    controls = {
        "kind": widgets.Dropdown(options=list(masktraps.MASK_KINDS), value="causal + padding",
                                 description="mask"),
        "length": widgets.IntSlider(value=5, min=1, max=masktraps.MASK_MAX_REAL,
                                    description="real tokens"),
        "padding": widgets.IntSlider(value=2, min=0, max=masktraps.MASK_MAX_PAD,
                                     description="padding"),
    }
    fig = mask_explorer(5, [7], ["causal + padding"])
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer


# --- exercises (registered with book.checks) ------------------------------------------------------

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


@exercise("ch4.causal_mask", "The causal mask for 5 tokens, in this book's convention",
          reference=_ch4_causal_reference, mistakes=_ch4_causal_mistakes)
def _ch4_causal_mask(answer):
    arr = np.asarray(answer.detach().cpu() if hasattr(answer, "detach") else answer)
    if arr.dtype.kind == "f" and np.isneginf(arr).any():
        return False, ("That is an additive float mask (0 / -inf), which is added to the scores. "
                       "This exercise wants the boolean mask: True = the query may attend.")
    if arr.shape != (5, 5):
        return False, (f"Expected a 5 × 5 mask (rows = queries, columns = keys), got shape "
                       f"{arr.shape}.")
    want = np.tril(np.ones((5, 5), dtype=bool))
    if arr.dtype != bool:
        if arr.dtype.kind in "iuf" and np.array_equal(arr != 0, want):
            return False, ("The pattern is right but it is stored as numbers; the book's masks "
                           "are booleans (torch: .bool(), numpy: .astype(bool)).")
        return False, f"A mask holds booleans (True = may attend), got dtype {arr.dtype}."
    if np.array_equal(arr, want):
        return True, "Correct: query i may attend to keys 0…i."
    if np.array_equal(arr, ~want):
        return False, ("That is nn.MultiheadAttention's convention, where True means BLOCKED. In "
                       "this book (and in F.scaled_dot_product_attention) True means may attend.")
    if np.array_equal(arr, want.T):
        return False, ("This lets every query see itself and the LATER tokens — the future. Row i "
                       "is query i: which keys has it already seen when it is produced?")
    if np.array_equal(arr, np.tril(want, -1)):
        return False, ("Almost: a token may also attend to itself (the diagonal). Without it the "
                       "first query would have no key at all, and softmax would give NaN.")
    return False, "Row i (query i) must allow the columns 0…i and block every later column."


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
        return False, "Pass the function itself (split_heads), not its result."
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
                return False, ("That is (batch, seq, heads, d_k): the heads axis must come "
                               "before the sequence axis — swap axes 1 and 2.")
            return False, (f"For x of shape {tuple(x.shape)} and {n_heads} heads, expected "
                           f"(batch, heads, seq, d_k) = {tuple(want.shape)}; got "
                           f"{tuple(out.shape)}.")
        out = out.to(want.dtype)
        if torch.allclose(out, x.reshape(batch, n_heads, seq, d_k)):
            return False, ("Right shape, wrong contents: reshaping straight to (batch, heads, "
                           "seq, d_k) cuts each sequence's memory into consecutive chunks, so a "
                           "'head' gets pieces of several tokens. Split each token's features "
                           "first, (batch, seq, heads, d_k), then move the heads axis forward.")
        if torch.allclose(out, x.view(batch, seq, d_k, n_heads).permute(0, 3, 1, 2)):
            return False, ("The heads are interleaved: head h must own the consecutive columns "
                           "h·d_k … (h+1)·d_k − 1 of d_model, so the heads axis comes before d_k "
                           "when you split the last axis.")
        if not torch.allclose(out, want):
            return False, ("The values are off: out[b, h, i] must equal the columns "
                           "h·d_k … (h+1)·d_k − 1 of x[b, i].")
    return True, "Correct: every head sees its own d_k columns of every token."


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
        return False, "Pass the function itself (to_attn_mask), not its result."
    for mask in _ch4_attn_mask_cases():
        n = mask.shape[0]
        converted = func(mask.clone())
        if converted is None:
            raise NotAnswered
        if not isinstance(converted, torch.Tensor):
            return False, f"Return a torch tensor, got {type(converted).__name__}."
        if tuple(converted.shape) != (n, n):
            return False, (f"For a {n} × {n} mask, return a {n} × {n} attn_mask (queries × "
                           f"keys); got shape {tuple(converted.shape)}.")
        if converted.dtype != torch.bool and not converted.is_floating_point():
            return False, (f"nn.MultiheadAttention accepts a boolean or a float attn_mask, not "
                           f"{converted.dtype}.")
        layer, torch_mha, x = _ch4_mha_layer(n)
        with torch.no_grad():
            want = layer(x, mask=mask)
            got = torch_mha(x, x, x, attn_mask=converted.to(x.dtype)
                            if converted.is_floating_point() else converted,
                            need_weights=False)[0]
        if bool(torch.isfinite(got).all()) and torch.allclose(got, want, atol=1e-9):
            continue
        if converted.dtype == torch.bool and torch.equal(converted, mask):
            return False, ("nn.MultiheadAttention reads a boolean attn_mask the other way round: "
                           "True = NOT allowed. Your mask blocks exactly the pairs that should "
                           "attend.")
        if converted.is_floating_point() and not bool(torch.isinf(converted).any()):
            return False, ("A float attn_mask is ADDED to the scores: adding 0 or 1 barely "
                           "changes them, so nothing is blocked — the classic silent bug. Return "
                           "a boolean mask, or a float one with -inf on the blocked pairs.")
        return False, ("nn.MultiheadAttention with your attn_mask does not compute what the "
                       "book's layer computes with the original mask. In the book True = may "
                       "attend; what does True mean for nn.MultiheadAttention?")
    return True, "Correct: nn.MultiheadAttention now computes exactly what the book's layer does."


def _ch4_scores_shape() -> tuple[int, ...]:
    steps = dict(mha.shape_trace(batch=3, seq=10, d_model=512, n_heads=8))
    return next(shape for name, shape in steps.items() if name.startswith("scores"))


@exercise("ch4.scores_shape", "The shape of the scores for x of shape (3, 10, 512), 8 heads",
          reference=_ch4_scores_shape,
          mistakes=lambda: [(3, 10, 10), (3, 8, 10, 64), (3, 10, 8, 10), (3, 10, 512), 80])
def _ch4_scores_shape_check(answer):
    try:
        shape = tuple(int(v) for v in answer)
    except TypeError:
        return False, "Give the shape as a tuple of integers, one per axis."
    if shape == _ch4_scores_shape():
        return True, "Correct: one seq × seq grid of scores per sequence and per head."
    if len(shape) == 3 and shape[1] == shape[2]:
        return False, ("That is one grid per sequence; but each head scores separately. Where "
                       "does the heads axis go?")
    if len(shape) == 4 and shape[1] != 8 and 8 in shape:
        return False, ("The axes are (batch, heads, queries, keys): after transpose(1, 2) the "
                       "heads axis comes right after the batch axis.")
    if len(shape) == 4 and shape[-1] != shape[-2]:
        return False, ("That is the shape of q (or of the context): the scores compare every "
                       "query with every key, so the last two axes are both the sequence.")
    return False, ("Follow the shape trace: q is (batch, heads, seq, d_k) and the scores are "
                   "q @ k.transpose(-2, -1).")


