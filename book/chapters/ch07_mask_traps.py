"""Chapter 7 (mask traps): its static figures, live explorers and exercises."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from book.face import questions
from book.face.checks import Answer, Is, NotAnswered, exercise, right, value_exercise, wrong
from book.face.figures import describe
from book.face.live import LiveExplorer
from book.face.plotting import MASK_COLORSCALE, RUN_DASHES, TITLE_WIDTH, rounded, wrap
from book.ideas import masks
from book.kit import i18n, rounding
from book.studies import masktraps

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

BUG_TEXT_UP_TO = 10  # cells are labelled with their value up to this many tokens
# A NaN weight is drawn (plotly leaves a null cell blank: an all-NaN row, or panel, would be
# empty): it gets the value NAN_Z, past the weights' 0…1, in a red of its own on the scale.
NAN_Z = 1.25
WEIGHT_NAN_COLORSCALE = [[0.0, "#f7fbff"], [0.2, "#c6dbef"], [0.4, "#6baed6"],
                         [0.6, "#2171b5"], [0.8, "#08306b"], [0.8, "#b3261e"], [1.0, "#b3261e"]]


def _tr(msg_id: str, **values) -> str:
    return i18n.tr(f"ch07.{msg_id}", **values)


#: the string-table id of each bug of masktraps.BUGS (its menu label; + "_text": its
#: description)
BUG_IDS = {"correct": "bug_correct", "flipped": "bug_flipped",
           "flipped, no padding": "bug_flipped_nopad", "~uint8, -inf": "bug_uint8_inf",
           "~uint8, -1e9": "bug_uint8_finite", "float 0/1 added": "bug_float",
           "left pad + causal, -inf": "bug_left_inf", "left pad + causal, -1e9": "bug_left_finite",
           "right pad + causal": "bug_right"}
assert set(BUG_IDS) == set(masktraps.BUGS), "every bug needs a label in book/strings/ch07.toml"


def bug_label(bug: str) -> str:
    """The menu label of ``bug`` (a key of masktraps.BUGS) in the book's language."""
    return _tr(BUG_IDS[bug])


def _bug_title(data: dict) -> str:
    """The bug, what it does and what came out, in lines that fit a phone-wide figure."""
    colon = "：" if i18n.language() == "zh" else ": "
    head = f"<b>{bug_label(data['bug'])}</b>{colon}{_tr(BUG_IDS[data['bug']] + '_text')}"
    counts = _tr("bug_counts", nan=data["nan_rows"], uniform=data["uniform_rows"],
                 zero=data["zero_rows"])
    share = data["real_on_pad"]
    if np.isfinite(share) and data["padding"]:
        counts += _tr("bug_on_pad", share=share)
    return wrap(head, TITLE_WIDTH) + "<br>" + wrap(counts, TITLE_WIDTH)


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


def _mask_bug_plot(data: dict) -> go.Figure:
    """The two panels of one bug (:func:`book.studies.masktraps.bug_data`) and its title,
    without the menu (what both faces start from)."""
    first = _bug_traces(data)
    # stacked: both grids keep cells wide enough for their numbers on a phone
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.14,
                        subplot_titles=[_tr("bug_panel_mask"), _tr("bug_panel_weights")])
    fig.add_trace(go.Heatmap(
        x=first["x"][0], y=first["y"][0], z=first["z"][0], text=first["text"][0],
        texttemplate="%{text}", zmin=0, zmax=1, colorscale=MASK_COLORSCALE, showscale=False,
        hovertemplate=_tr("bug_hover_mask", query="%{y}", key="%{x}", value="%{z}")
        + "<extra></extra>"),
        row=1, col=1)
    fig.add_trace(go.Heatmap(
        x=first["x"][1], y=first["y"][1], z=first["z"][1], text=first["text"][1],
        texttemplate="%{text}", zmin=0, zmax=NAN_Z, colorscale=WEIGHT_NAN_COLORSCALE,
        colorbar={"title": {"text": _tr("weight"), "side": "right"}, "len": 0.42, "y": 0.21,
                  "tickvals": [0, 0.5, 1, NAN_Z], "ticktext": ["0", "0.5", "1", "NaN"]},
        hovertemplate=_tr("bug_hover_weight", query="%{y}", key="%{x}", value="%{text}")
        + "<extra></extra>"),
        row=2, col=1)
    # keys at 10 px: at 11 px "pad₁" and "pad₂" stood 2.0 px apart at 390 px (wide fallback font)
    fig.update_xaxes(title_text=_tr("key"), side="bottom", tickfont_size=10)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title_text=_tr("query"))
    fig.update_annotations(font_size=12)
    fig.update_layout(
        height=860, margin={"l": 50, "r": 20, "t": 40, "b": 40},
        title={"text": _bug_title(data), "font": {"size": 13}, "x": 0,
               "xanchor": "left", "yref": "paper", "automargin": True, "pad": {"b": 30}})
    # one text for every bug and size the controls reach (the title names the state)
    return describe(fig, alt=_tr("bug_alt"), caption=_tr("bug_caption"))


def mask_bug_figure(bugs=None, length: int = 5, padding: int = 2) -> go.Figure:
    """Static explorer: a dropdown over the mask bugs of :data:`book.studies.masktraps.BUGS`.

    Left: the mask the layer applies (✓ may attend, · blocked; +1/+0 for a float mask that is
    added); right: the weights it computes, NaN cells left blank and labelled "NaN".
    """

    bugs = list(masktraps.BUGS if bugs is None else bugs)
    if not bugs:
        raise ValueError("mask_bug_figure needs at least one bug from "
                         "book.studies.masktraps.BUGS")
    frames = [masktraps.bug_data(b, length, padding) for b in bugs]
    fig = _mask_bug_plot(frames[0])
    if len(bugs) > 1:
        buttons = []
        for bug, data in zip(bugs, frames, strict=True):
            t = _bug_traces(data)
            buttons.append({"label": bug_label(bug), "method": "update",
                            "args": [{k: t[k] for k in ("x", "y", "z", "text")},
                                     {"title.text": _bug_title(data)}]})
        # under the panels: the title above grows to as many lines as a phone needs
        fig.update_layout(updatemenus=[{"buttons": buttons, "direction": "up",
                                        "showactive": True, "x": 0, "xanchor": "left",
                                        "y": 0, "yanchor": "top", "pad": {"t": 90}}])
    return fig


def mask_training_figure(histories: dict) -> go.Figure:
    """Training loss of the same model under different mask handling (one line per run);
    a run that stopped on a NaN loss ends in a cross at its last finite step."""
    if not histories:
        raise ValueError("histories is empty: pass {name: book.toy.fit.History}")
    palette = ["#1a56a8", "#b3261e", "#7a7a7a", "#2e7d32"]
    fig = go.Figure()
    finals = {}   # run -> its last finite loss (the caption's numbers)
    for i, (name, h) in enumerate(histories.items()):
        loss = np.asarray(h.loss, dtype=float)
        steps = np.arange(1, len(loss) + 1)
        label = (_tr("run_nan", name=name, step=h.steps) if h.diverged else
                 _tr("run_acc", name=name, acc=h.final_accuracy))
        color = palette[i % len(palette)]
        if h.diverged:
            fig.add_trace(go.Scatter(x=[int(h.steps)], y=[float(np.nanmax(
                np.r_[loss[np.isfinite(loss)], [3.0]]))], mode="markers", name=label,
                marker={"symbol": "x", "size": 14, "color": color}))
            continue
        if np.isfinite(loss).any():
            finals[name] = float(loss[np.isfinite(loss)][-1])
        # a dash of its own per run: the lines differ in greyscale too (WCAG 1.4.1)
        dash = RUN_DASHES[i % len(RUN_DASHES)]
        fig.add_trace(go.Scatter(x=steps.tolist(), y=rounded(loss), mode="lines", name=label,
                                 line={"color": color, "dash": dash}))
    # one legend entry per line under the plot: long run names never share a line
    fig.update_layout(height=480, xaxis={"title": _tr("train_x")},
                      yaxis={"title": _tr("train_y"), "rangemode": "tozero"},
                      legend={"orientation": "v", "y": -0.2, "x": 0, "yanchor": "top"},
                      margin={"l": 60, "r": 20, "t": 30, "b": 40})
    return describe(fig, alt=_tr("train_alt", n=len(histories)),
                    caption=_training_caption(histories, finals))


def _training_caption(histories: dict, finals: dict) -> str:
    """The training figure's caption: the lowest final loss and its run, and the runs that
    stopped on a NaN (numbers from the histories the figure draws)."""
    text = ""
    if finals:
        best = min(finals, key=finals.get)
        text = _tr("train_caption_best", run=best, loss=finals[best])
    stopped = [_tr("run_nan", name=name, step=h.steps) for name, h in histories.items()
               if h.diverged]
    if stopped:
        return text + _tr("train_caption_nan", runs=_tr("list_sep").join(stopped))
    return text + _tr("train_caption_all")




# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------

def mask_bug_live() -> LiveExplorer:
    """Any mask bug with 1–8 real tokens and 0–8 padding positions: mask and weights."""

    def redraw(fig, bug, length, padding):
        data = masktraps.bug_data(bug, length, padding)
        traces = _bug_traces(data)
        for i, trace in enumerate(fig.data):
            trace.x, trace.y = traces["x"][i], traces["y"][i]
            trace.z, trace.text = traces["z"][i], traces["text"][i]
        fig.layout.title.text = _bug_title(data)

    controls = {
        "bug": widgets.Dropdown(options=[(bug_label(b), b) for b in masktraps.BUGS],
                                value="flipped", description=_tr("live_bug")),
        "length": widgets.IntSlider(value=5, min=1, max=masktraps.BUG_MAX_REAL,
                                    description=_tr("live_length")),
        "padding": widgets.IntSlider(value=2, min=0, max=masktraps.BUG_MAX_PAD,
                                     description=_tr("live_padding")),
    }
    first = masktraps.bug_data(controls["bug"].value, controls["length"].value,
                               controls["padding"].value)
    explorer = LiveExplorer(_mask_bug_plot(first), controls, redraw,
                            adds=_tr("live_adds_bug", real=masktraps.BUG_MAX_REAL,
                                     pad=masktraps.BUG_MAX_PAD))
    explorer.update()
    return explorer




# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

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
        return False, _tr("ex_kpm_callable")
    for keep in _ch7_keep_cases():
        out = func(keep.clone())
        if out is None:
            raise NotAnswered
        if not isinstance(out, torch.Tensor):
            return False, _tr("ex_kpm_tensor", kind=type(out).__name__)
        if tuple(out.shape) != tuple(keep.shape):
            return False, _tr("ex_kpm_shape", want=tuple(keep.shape), got=tuple(out.shape))
        want = keep == 0
        if out.dtype != torch.bool:
            if out.dtype == torch.uint8 and bool((out >= 254).all()):
                return False, _tr("ex_kpm_bits")
            return False, _tr("ex_kpm_dtype", dtype=out.dtype)
        if torch.equal(out, want):
            continue
        if torch.equal(out, ~want):
            return False, _tr("ex_kpm_flipped")
        if bool(out.all()):
            return False, _tr("ex_kpm_all")
        return False, _tr("ex_kpm_wrong")
    return True, _tr("ex_kpm_ok")


def _ch7_left_pad_answer() -> Answer:
    allowed = masks.combine(masks.causal_mask(7), masks.padding_mask([3], 7, side="left"))
    return Answer("number", [
        (Is.equal(len(masks.fully_masked_rows(allowed))), right("ch07.ex_rows_ok")),
        (Is.equal(0), wrong("ch07.ex_rows_zero")),
        (Is.equal(7), wrong("ch07.ex_rows_all"))], otherwise=wrong("ch07.ex_rows_hint"))


value_exercise("ch7.left_pad_rows", "Left padding + causal mask: how many query rows see no key?",
               reference=lambda: 4, mistakes=lambda: [0, 3, 7, 1], answer=_ch7_left_pad_answer)


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
        return False, _tr("ex_sm_callable")
    scores, allowed = _ch7_softmax_cases()
    out = func(scores.clone(), allowed.clone())
    if out is None:
        raise NotAnswered
    out = torch.as_tensor(out, dtype=torch.float32)
    if tuple(out.shape) != tuple(scores.shape):
        return False, _tr("ex_sm_shape", shape=tuple(scores.shape))
    want = masktraps.masked_weights(scores, allowed, "sdpa")
    empty = ~allowed.any(dim=-1)
    if bool(torch.isnan(out).any()):
        return False, _tr("ex_sm_nan")
    if torch.allclose(out[empty], torch.full_like(out[empty], 1 / scores.shape[-1])):
        return False, _tr("ex_sm_uniform")
    if bool((out[~allowed] != 0).any()):
        return False, _tr("ex_sm_blocked")
    if not torch.allclose(out, want, atol=1e-6):
        return False, _tr("ex_sm_sum")
    return True, _tr("ex_sm_ok")




_MEANING_IDS = {"True = fill (blocked)": "meaning_fill", "True = may attend": "meaning_attend",
                "True = blocked": "meaning_blocked",
                "True = padding (blocked)": "meaning_padding"}


def api_meaning(api: str) -> str:
    """What ``True`` means to ``api`` (a key of masktraps.API_MEANING), in the book's
    language."""
    if api not in masktraps.API_MEANING:
        raise ValueError(f"api must be one of {sorted(masktraps.API_MEANING)}, not {api!r}")
    return _tr(_MEANING_IDS[masktraps.API_MEANING[api]])


def dtype_outcome_table(table: list[dict]) -> str:
    """The mask dtypes experiment (:func:`book.studies.masktraps.dtype_table`) as a Markdown
    table: each API with each non-boolean mask dtype, and what happens (it raises, it gives
    the boolean mask's result, or it runs with a different result)."""
    lines = [_tr("dtype_header"), "|---|---|---|"]
    for r in table:
        if r["dtype"] != "bool":
            api = f"`{r['api']}` ({api_meaning(r['api'])})"
            lines.append(f"| {api} | `{r['dtype']}` | {_outcome(r)} |")
    return "\n".join(lines) + "\n"


def _outcome(r: dict) -> str:
    if r["raised"]:
        message = r["message"].split(",")[0]  # the rest names the dtype again
        return _tr("outcome_raises", error=r["error"], message=message)
    if r["same_as_bool"]:
        return _tr("outcome_same", same=rounding.agreement(r["max_diff"]))
    return _tr("outcome_differs", diff=r["max_diff"])


#: the string-table id of each training run of the chapter (its label in the figure)
_RUN_IDS = {"right": "run_right", "zeros": "run_zeros", "finite": "run_finite",
            "inf": "run_inf"}


def run_labels(histories: dict) -> dict:
    """The chapter's training histories (keyed "right", "zeros", "finite", "inf") keyed by
    their labels in the book's language, as :func:`mask_training_figure` takes them."""
    unknown = set(histories) - set(_RUN_IDS)
    if unknown:
        raise ValueError(f"histories must be keyed by {list(_RUN_IDS)}, got {sorted(unknown)}")
    return {_tr(_RUN_IDS[key]): h for key, h in histories.items()}


# --- concept questions (book/face/questions.py; their words: book/strings/ch07.toml) ---
questions.question("ch07.full_row", kind="predict", right=2,
                   answered_in="c010")
questions.question("ch07.invert", kind="explain", right=3)
questions.question("ch07.bug_fill", kind="bug", right=1, code="""\
pad = tokens == PAD
scores = scores.masked_fill(~pad, float("-inf"))
""")
