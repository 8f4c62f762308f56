"""Chapter 7 (mask traps): its static figures, live explorers and exercises."""

from __future__ import annotations

import textwrap

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from . import masks, masktraps
from .checks import NotAnswered, exercise, number
from .live import LiveExplorer
from .plotting import MASK_COLORSCALE, rounded

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

BUG_TEXT_UP_TO = 10  # cells are labelled with their value up to this many tokens
# A NaN weight is drawn (plotly leaves a null cell blank: an all-NaN row, or panel, would be
# empty): it gets the value NAN_Z, past the weights' 0…1, in a red of its own on the scale.
NAN_Z = 1.25
WEIGHT_NAN_COLORSCALE = [[0.0, "#f7fbff"], [0.2, "#c6dbef"], [0.4, "#6baed6"],
                         [0.6, "#2171b5"], [0.8, "#08306b"], [0.8, "#b3261e"], [1.0, "#b3261e"]]


def _bug_title(data: dict) -> str:
    desc = "<br>".join(textwrap.wrap(data["description"], 95))
    counts = (f"NaN rows: {data['nan_rows']} · uniform rows: {data['uniform_rows']} · "
              f"all-zero rows: {data['zero_rows']}")
    share = data["real_on_pad"]
    if np.isfinite(share) and data["padding"]:
        counts += f" · largest weight of a real token on padding: {share:.2f}"
    return f"<b>{data['bug']}</b>: {desc}<br><sup>{counts}</sup>"


def _bug_traces(data: dict) -> dict:
    """x, y, z and text of the two panels (what the layer applies, the weights)."""
    n = len(data["labels"])
    show = n <= BUG_TEXT_UP_TO
    allowed, w, bias = data["allowed"], data["weights"], data["bias"]
    if bias is not None:   # a float mask is added, not applied: show what it adds
        mask_text = [[f"+{b:g}" for b in row] for row in bias]
    else:
        mask_text = [["✓" if a else "·" for a in row] for row in allowed]
    weight_text = [["NaN" if not np.isfinite(v) else (f"{v:.2f}" if v else "0")
                    for v in row] for row in w]
    if not show:
        mask_text = [[""] * n for _ in range(n)]
        weight_text = [["NaN" if t == "NaN" else "" for t in row] for row in weight_text]
    z = np.where(np.isfinite(w), w, NAN_Z)
    return {"x": [data["labels"]] * 2, "y": [data["labels"]] * 2,
            "z": [allowed.astype(int).tolist(), rounded(z)], "text": [mask_text, weight_text]}


def mask_bug_explorer(bugs=None, length: int = 5, padding: int = 2) -> go.Figure:
    """Static explorer: a dropdown over the mask bugs of :data:`book.masktraps.BUGS`.

    Left: the mask the layer applies (✓ may attend, · blocked; +1/+0 for a float mask that is
    added); right: the weights it computes, NaN cells left blank and labelled "NaN".
    """

    bugs = list(masktraps.BUGS if bugs is None else bugs)
    if not bugs:
        raise ValueError("mask_bug_explorer needs at least one bug from book.masktraps.BUGS")
    frames = [masktraps.bug_data(b, length, padding) for b in bugs]
    first = _bug_traces(frames[0])
    # stacked: both grids keep cells wide enough for their numbers on a phone
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.14,
                        subplot_titles=["mask the layer applies", "attention weights"])
    fig.add_trace(go.Heatmap(
        x=first["x"][0], y=first["y"][0], z=first["z"][0], text=first["text"][0],
        texttemplate="%{text}", zmin=0, zmax=1, colorscale=MASK_COLORSCALE, showscale=False,
        hovertemplate="query %{y}<br>key %{x}<br>%{z}: 1 = may attend<extra></extra>"),
        row=1, col=1)
    fig.add_trace(go.Heatmap(
        x=first["x"][1], y=first["y"][1], z=first["z"][1], text=first["text"][1],
        texttemplate="%{text}", zmin=0, zmax=NAN_Z, colorscale=WEIGHT_NAN_COLORSCALE,
        colorbar={"title": {"text": "weight", "side": "right"}, "len": 0.42, "y": 0.21,
                  "tickvals": [0, 0.5, 1, NAN_Z], "ticktext": ["0", "0.5", "1", "NaN"]},
        hovertemplate="query %{y}<br>key %{x}<br>weight %{text}<extra></extra>"),
        row=2, col=1)
    buttons = []
    for bug, data in zip(bugs, frames, strict=True):
        t = _bug_traces(data)
        buttons.append({"label": bug, "method": "update",
                        "args": [{k: t[k] for k in ("x", "y", "z", "text")},
                                 {"title.text": _bug_title(data)}]})
    fig.update_xaxes(title_text="key", side="bottom")
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title_text="query")
    fig.update_annotations(font_size=12)
    fig.update_layout(
        height=860, margin={"l": 50, "r": 20, "t": 40, "b": 40},
        title={"text": _bug_title(frames[0]), "font": {"size": 13}, "x": 0,
               "xanchor": "left", "yref": "paper", "automargin": True, "pad": {"b": 30}})
    if len(bugs) > 1:
        # under the panels: the title above grows to as many lines as a phone needs
        fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "up",
                                        "showactive": True, "x": 0, "xanchor": "left",
                                        "y": 0, "yanchor": "top", "pad": {"t": 90}}])
    return fig


def mask_training_figure(histories: dict) -> go.Figure:
    """Training loss of the same model under different mask handling (one line per run);
    a run that stopped on a NaN loss ends in a cross at its last finite step."""
    if not histories:
        raise ValueError("histories is empty: pass {name: book.train.History}")
    palette = ["#1a56a8", "#b3261e", "#7a7a7a", "#2e7d32"]
    dashes = ["solid", "solid", "dash", "dot"]
    fig = go.Figure()
    for i, (name, h) in enumerate(histories.items()):
        loss = np.asarray(h.loss, dtype=float)
        steps = np.arange(1, len(loss) + 1)
        label = name + (f" — NaN at step {h.steps}" if h.diverged else
                        f" — held-out accuracy {h.final_accuracy:.1%}")
        color = palette[i % len(palette)]
        if h.diverged:
            fig.add_trace(go.Scatter(x=[int(h.steps)], y=[float(np.nanmax(
                np.r_[loss[np.isfinite(loss)], [3.0]]))], mode="markers", name=label,
                marker={"symbol": "x", "size": 14, "color": color}))
            continue
        fig.add_trace(go.Scatter(x=steps.tolist(), y=rounded(loss), mode="lines", name=label,
                                 line={"color": color, "dash": dashes[i % len(dashes)]}))
    fig.update_layout(height=420, xaxis={"title": "training step"},
                      yaxis={"title": "training loss (cross-entropy)", "rangemode": "tozero"},
                      legend={"orientation": "h", "y": -0.2, "x": 0},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return fig




# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def mask_bug_explorer_live() -> LiveExplorer:
    """Any mask bug with 1–8 real tokens and 0–8 padding positions: mask and weights."""

    def redraw(fig, bug, length, padding):
        data = masktraps.bug_data(bug, length, padding)
        traces = _bug_traces(data)
        for i, trace in enumerate(fig.data):
            trace.x, trace.y = traces["x"][i], traces["y"][i]
            trace.z, trace.text = traces["z"][i], traces["text"][i]
        fig.layout.title.text = _bug_title(data)

    controls = {
        "bug": widgets.Dropdown(options=list(masktraps.BUGS), value="flipped",
                                description="bug"),
        "length": widgets.IntSlider(value=5, min=1, max=masktraps.BUG_MAX_REAL,
                                    description="real tokens"),
        "padding": widgets.IntSlider(value=2, min=0, max=masktraps.BUG_MAX_PAD,
                                     description="padding"),
    }
    fig = mask_bug_explorer(["flipped"])
    explorer = LiveExplorer(fig, controls, redraw)
    explorer.update()
    return explorer




# --- exercises (registered with book.checks) ------------------------------------------------------

def _ch7_keep_cases():
    gen = torch.Generator().manual_seed(7)
    keep = (torch.rand(3, 6, generator=gen) < 0.7).to(torch.uint8)
    keep[:, 0] = 1   # every sequence keeps its first token
    return [torch.tensor([[1, 1, 1, 0, 0]], dtype=torch.uint8), keep]


def _ch7_key_padding_reference():
    return lambda keep: keep == 0


@exercise("ch7.key_padding_mask", "From a uint8 'keep' mask to nn.MultiheadAttention's "
          "key_padding_mask", reference=_ch7_key_padding_reference,
          mistakes=lambda: [lambda k: ~k, lambda k: k.bool(), lambda k: (~k).bool(),
                            lambda k: 1 - k, "mask"])
def _ch7_key_padding_mask(func):
    if not callable(func):
        return False, "Pass the function itself (to_key_padding_mask), not its result."
    for keep in _ch7_keep_cases():
        out = func(keep.clone())
        if out is None:
            raise NotAnswered
        if not isinstance(out, torch.Tensor):
            return False, f"Return a torch tensor, got {type(out).__name__}."
        if tuple(out.shape) != tuple(keep.shape):
            return False, (f"key_padding_mask has one entry per (sequence, key): shape "
                           f"{tuple(keep.shape)}, got {tuple(out.shape)}.")
        want = keep == 0
        if out.dtype != torch.bool:
            if out.dtype == torch.uint8 and bool((out >= 254).all()):
                return False, ("~ on a uint8 tensor flips all 8 bits: 1 becomes 254 and 0 "
                               "becomes 255, both non-zero. Turn the 0/1 numbers into booleans "
                               "first, then invert.")
            return False, (f"nn.MultiheadAttention refuses a {out.dtype} key_padding_mask "
                           "(only bool, or float that is ADDED to the scores). Return a "
                           "boolean tensor.")
        if torch.equal(out, want):
            continue
        if torch.equal(out, ~want):
            return False, ("That mask is True on the real tokens, and nn.MultiheadAttention "
                           "reads True in key_padding_mask as 'padding, ignore it': it would "
                           "attend only to the padding.")
        if bool(out.all()):
            return False, ("Every entry is True: every key is ignored, so every row is fully "
                           "masked (NaN). Did ~ run on the numbers before .bool()?")
        return False, "True must mark exactly the padding positions (where keep is 0)."
    return True, "Correct: True marks the padding, as nn.MultiheadAttention expects."


@exercise("ch7.left_pad_rows", "Left padding + causal mask: how many query rows see no key?",
          reference=lambda: 4, mistakes=lambda: [0, 3, 7, 1])
def _ch7_left_pad_rows(answer):
    value = number(answer)
    allowed = masks.combine(masks.causal_mask(7), masks.padding_mask([3], 7, side="left"))
    want = len(masks.fully_masked_rows(allowed))
    if value == want:
        return True, ("Correct: every padding query comes before the first real token, so the "
                      "causal mask leaves it only padding keys, and those are blocked.")
    if value == 0:
        return False, ("With RIGHT padding no row would be empty. Here the padding comes first: "
                       "what may the very first query (a padding position) attend to?")
    if value == 7:
        return False, ("The real tokens still see themselves and the real tokens before them. "
                       "Count only the rows with nothing left.")
    return False, ("Draw the 7 × 7 grid: allowed = (key ≤ query) AND (key is a real token). "
                   "Count the rows with no allowed cell.")


def _ch7_softmax_reference():
    return lambda scores, allowed: masktraps.masked_weights(scores, allowed, "sdpa")


def _ch7_softmax_cases():
    gen = torch.Generator().manual_seed(11)
    scores = 3 * torch.randn(2, 5, 5, generator=gen)
    allowed = torch.rand(2, 5, 5, generator=gen) < 0.6
    allowed[0, 1] = False            # a fully masked row
    allowed[1, 3] = False            # another one
    allowed[0, 2] = True             # a row with every key allowed
    return scores, allowed


def _ch7_softmax_mistakes():
    def minus_inf(s, a):
        return torch.softmax(s.masked_fill(~a, float("-inf")), dim=-1)

    def finite(s, a):
        return torch.softmax(s.masked_fill(~a, -1e9), dim=-1)

    def flipped(s, a):
        return torch.softmax(s.masked_fill(a, float("-inf")), dim=-1).nan_to_num(0.0)

    def multiply(s, a):
        return torch.softmax(s, dim=-1) * a

    return [minus_inf, finite, flipped, multiply, 0.5]


@exercise("ch7.masked_softmax", "Write masked_softmax(scores, allowed): zeros, not NaN, for "
          "a row with nothing allowed", reference=_ch7_softmax_reference,
          mistakes=_ch7_softmax_mistakes)
def _ch7_masked_softmax(func):
    if not callable(func):
        return False, "Pass the function itself (masked_softmax), not its result."
    scores, allowed = _ch7_softmax_cases()
    out = func(scores.clone(), allowed.clone())
    if out is None:
        raise NotAnswered
    out = torch.as_tensor(out, dtype=torch.float32)
    if tuple(out.shape) != tuple(scores.shape):
        return False, f"Return one weight per score: shape {tuple(scores.shape)}."
    want = masktraps.masked_weights(scores, allowed, "sdpa")
    empty = ~allowed.any(dim=-1)
    if bool(torch.isnan(out).any()):
        return False, ("Some rows are NaN: a row whose keys are all blocked is all -inf, and "
                       "softmax divides 0 by 0 there. Those rows must come out as zeros.")
    if torch.allclose(out[empty], torch.full_like(out[empty], 1 / scores.shape[-1])):
        return False, ("The rows with nothing allowed came out uniform — a finite fill such as "
                       "-1e9 does that, and it makes the query attend to keys it must not see. "
                       "Those rows must be all zeros.")
    if bool((out[~allowed] != 0).any()):
        return False, "A blocked key must get weight exactly 0."
    if not torch.allclose(out, want, atol=1e-6):
        return False, ("The allowed weights of a row must sum to 1 (softmax over the allowed "
                       "keys only), except in a row with nothing allowed.")
    return True, "Correct: exact softmax over the allowed keys, and zeros where none is allowed."


