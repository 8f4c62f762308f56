"""Chapter 3 (the whole computation by hand): its static figures, live explorers and exercises."""

from __future__ import annotations

import inspect
import re

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go

from book.face import diagrams, questions
from book.face.checks import Answer, Is, array_answer, call, exercise, right, value_exercise, wrong
from book.face.display import Matrix
from book.face.figures import describe
from book.face.live import LiveExplorer
from book.face.plotting import SIGNED_COLORSCALE, TITLE_WIDTH, make_slider, rounded, wrap
from book.ideas import attention, norms, walkthrough
from book.kit.i18n import tr

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------





# the decimals the page's tables print a step with: the attention weights A1, A2, … with 3
# (the notebook's Matrix(…, digits=3)), every other matrix with Matrix's own default
WEIGHT_DIGITS = 3
VALUE_DIGITS = inspect.signature(Matrix).parameters["digits"].default


def printed_digits(name: str) -> int:
    """The decimals the walkthrough's step ``name`` is written with in its cells, as the
    chapter's tables print it (:data:`WEIGHT_DIGITS` for A1, A2, …, else :data:`VALUE_DIGITS`)."""
    return WEIGHT_DIGITS if re.fullmatch(r"A\d+", name) else VALUE_DIGITS


def cell_texts(frame: dict) -> list[list[str]]:
    """A step's values as its cells write them (:func:`printed_digits` decimals; -0 as 0)."""
    digits = printed_digits(frame["name"])
    return [[f"{x + 0.0:.{digits}f}" for x in row]
            for row in np.asarray(frame["values"], dtype=float)]


def _frame_update(frame: dict) -> dict:
    v = np.asarray(frame["values"], dtype=float)
    bound = float(np.abs(v).max()) or 1.0
    return {"z": [rounded(v, 3)], "x": [frame["cols"]], "y": [frame["rows"]],
            "text": [cell_texts(frame)], "zmin": [-bound], "zmax": [bound]}


def _frame_title(frame: dict) -> str:
    # wrapped at the width the book's renderer wraps titles to (plotting.tidy): wrapped wider,
    # each line was broken again there, leaving a short line and one more line of title
    r, c = np.shape(frame["values"])
    return f"<b>{frame['name']}</b> ({r}×{c})<br>{wrap(frame['description'], TITLE_WIDTH)}"


def _walkthrough_plot(frames: list[dict]) -> go.Figure:
    """The first step's matrix of ``frames`` (:func:`book.ideas.walkthrough.walkthrough_frames`)
    with its title, without the control (what both faces start from)."""
    first = _frame_update(frames[0])
    fig = go.Figure(go.Heatmap(
        z=first["z"][0], x=first["x"][0], y=first["y"][0], text=first["text"][0],
        texttemplate="%{text}", zmin=first["zmin"][0], zmax=first["zmax"][0],
        # no colour bar: every cell writes its value, and the bar's room (about a third of a
        # phone's width) is what lets the values fit their cells there (plotting.fit_cell_text)
        colorscale=SIGNED_COLORSCALE, showscale=False,
        hovertemplate="%{y}, %{x}: %{z:.4f}<extra></extra>"))
    # title.automargin: the book's renderer (plotting.tidy) reserves the top margin for the
    # tallest step's title, so that plotly never grows it (it would draw the cells above
    # their axis) and the cells keep one size from step to step
    fig.update_layout(title={"text": _frame_title(frames[0]), "font": {"size": 13},
                             "x": 0, "xanchor": "left", "yref": "paper", "automargin": True,
                             "pad": {"b": 16}},
                      yaxis={"autorange": "reversed", "title": tr("ch03.token_row")},
                      xaxis={"title": tr("ch03.column"), "side": "bottom"}, height=460,
                      margin={"t": 30, "l": 60, "r": 20, "b": 30})
    return describe(fig, alt=tr("ch03.walkthrough_alt", n=len(frames)),
                    caption=_walkthrough_caption(frames))


def _walkthrough_caption(frames: list[dict]) -> str:
    """The walkthrough's caption: its steps, and the shapes they pass through (read from the
    frames: the rows stay one per token, the columns go d_model → d_k → h·d_k → d_model)."""
    shapes = {f["name"]: np.shape(f["values"]) for f in frames}
    rows = {r for r, _ in shapes.values()}
    if len(rows) != 1:
        raise ValueError(f"every step of the walkthrough has one row per token, got {rows}")
    heads = sum(1 for name in shapes if re.fullmatch(r"A\d+", name))
    return tr("ch03.walkthrough_caption", n=len(frames), heads=heads, first=frames[0]["name"],
              last=frames[-1]["name"], rows=rows.pop(), d_model=shapes["X"][1],
              d_k=shapes["Q1"][1], concat=shapes["Z"][1], out=shapes[frames[-1]["name"]][1],
              weight_digits=WEIGHT_DIGITS, value_digits=VALUE_DIGITS)


def walkthrough_figure(ex=None) -> go.Figure:
    """Static explorer: a slider through every step of the walkthrough, one matrix per step."""
    frames = walkthrough.walkthrough_frames(ex)
    fig = _walkthrough_plot(frames)
    steps = [{"label": f["name"], "method": "update",
              "args": [_frame_update(f), {"title.text": _frame_title(f)}]} for f in frames]
    fig.update_layout(sliders=[make_slider(steps, tr("ch03.slider_step"))])
    return fig


_NORM_IDS = {"LayerNorm (d_model)": "ch03.norm_layer",
             "BatchNorm (batch × positions)": "ch03.norm_batch",
             "normalised over the sequence": "ch03.norm_sequence"}


def dataflow_diagram(ex=None) -> go.Figure:
    """The multi-head dataflow with this chapter's shapes, read from the walkthrough's example
    (``ex``, default :func:`book.ideas.walkthrough.example`): tokens and d_model from X, the
    heads and d_k from their weights."""
    ex = walkthrough.example() if ex is None else _checked_example(ex)
    n_tokens, d_model = ex.X.shape
    n_heads, d_k = len(ex.heads), ex.heads[0][0].shape[1]
    w_rows, w_cols = ex.heads[0][0].shape   # W_Q1, as the diagram draws it: d_model × d_k
    sizes = {"n": n_tokens, "d_model": d_model, "h": n_heads, "d_k": d_k, "width": n_heads * d_k,
             "w_rows": w_rows, "w_cols": w_cols, "cells": w_rows * w_cols}
    return describe(diagrams.multihead_dataflow(n_tokens, d_model, n_heads, d_k),
                    alt=tr("ch03.dataflow_alt", **sizes),
                    caption=tr("ch03.dataflow_caption", **sizes))


def _checked_example(ex):
    if not isinstance(ex, walkthrough.Example):
        raise TypeError(f"ex must be a book.ideas.walkthrough.Example (walkthrough.example()), "
                        f"got {type(ex).__name__}")
    return ex


def padding_table(moves: dict) -> str:
    """The padding experiment (:func:`book.ideas.norms.padding_experiment`) as a Markdown table: the
    largest change of our three tokens under each normalisation and each change of the batch."""
    if not isinstance(moves, dict) or not set(moves) <= set(_NORM_IDS):
        raise ValueError("moves must be the dict book.ideas.norms.padding_experiment() returns, "
                         "with "
                         f"the keys {list(_NORM_IDS)}")
    head = [tr("ch03.table_norm"), tr("ch03.table_padding"), tr("ch03.table_mate"),
            tr("ch03.table_word")]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|"]
    for name, r in moves.items():
        cells = [r["more_padding"], r["other_batch_mate"], r["one_more_word"]]
        lines.append(f"| {tr(_NORM_IDS[name])} | " + " | ".join(f"{v:.3f}" for v in cells)
                     + " |")
    return "\n".join(lines) + "\n"


def same_or_different(same: bool) -> str:
    """The words the prose glues in for "我 leaves with ___ vector in both sentences"."""
    return tr("ch03.order_same" if same else "ch03.order_different")


def identical_or_different(same: bool) -> str:
    """The word the prose glues in for "the two attention maps are ___"."""
    return tr("ch03.identical" if same else "ch03.different")


# --- live explorers (ipywidgets + FigureWidget, in Jupyter) ---------------------------------------


def walkthrough_live() -> LiveExplorer:
    """Pick a step, and edit one entry of X or of any weight matrix: every step recomputes."""

    base = walkthrough.example()
    frames = walkthrough.walkthrough_frames(base)
    names = [f["name"] for f in frames]

    def redraw(fig, step, matrix, row, col, value):
        ex, (r, c) = walkthrough.edited_example(matrix, row, col, value, base)
        frame = next(f for f in walkthrough.walkthrough_frames(ex) if f["name"] == step)
        update = _frame_update(frame)
        trace = fig.data[0]
        trace.z, trace.x, trace.y = update["z"][0], update["x"][0], update["y"][0]
        trace.text, trace.zmin, trace.zmax = update["text"][0], update["zmin"][0], update["zmax"][0]
        fig.layout.title.text = (f"{_frame_title(frame)}<br>"
                                 + tr("ch03.edited", matrix=matrix, r=r, c=c, value=value))

    controls = {
        "step": widgets.Dropdown(options=names, value="A1", description=tr("ch03.w_step")),
        "matrix": widgets.Dropdown(options=walkthrough.WALKTHROUGH_MATRICES, value="X",
                                   description=tr("ch03.w_edit")),
        "row": widgets.IntSlider(value=0, min=0, max=5, description=tr("ch03.w_row")),
        "col": widgets.IntSlider(value=0, min=0, max=3, description=tr("ch03.w_column")),
        "value": widgets.FloatSlider(value=float(base.X[0, 0]), min=-3.0, max=3.0, step=0.1,
                                     description=tr("ch03.w_value")),
    }
    # two rows: what to show, then which entry to edit (five in a row squeeze the sliders)
    explorer = LiveExplorer(_walkthrough_plot(frames), controls, redraw,
                            rows=[["step", "matrix"], ["row", "col", "value"]],
                            adds=tr("ch03.live_adds_walkthrough"))
    explorer.update()
    return explorer


# --- exercises (registered with book.face.checks)
# ------------------------------------------------------

def _walkthrough_steps():
    ex = walkthrough.example()
    return walkthrough.walkthrough(ex.X, ex.heads, ex.W_O), ex


def _ch3_softmax_answer():
    steps, _ = _walkthrough_steps()
    # np.allclose's own relative tolerance (1e-5) as well, as the hand-written check had
    return array_answer(steps["A1"][1], 5e-3, "ch03.softmax_hint", "ch03.correct", first=[
        (Is.close(attention.softmax(steps["S1"][1]), 5e-3, 1e-5), wrong("ch03.unscaled_softmax")),
        (Is.close(steps["A1"][0], 5e-3, 1e-5), wrong("ch03.first_row"))])


value_exercise("ch3.softmax_row", "Softmax of the second row of S1 / √d_k (the query 爱)",
               reference=lambda: _walkthrough_steps()[0]["A1"][1],
               mistakes=lambda: [_walkthrough_steps()[0]["S1_scaled"][1],
                                 attention.softmax(_walkthrough_steps()[0]["S1"][1]),
                                 _walkthrough_steps()[0]["A1"][0], [1 / 3] * 3],
               answer=_ch3_softmax_answer)

def z_row_tolerance() -> float:
    """How far an answer to ch3.z_row may be from the exact Z1 row of 爱: the worst error that
    computing from the printed A1 and V1 (each entry off by up to half a unit of its
    :func:`printed_digits`) can give, Σ_j |δa_j|·|v_j| + |a_j|·|δv_j| + |δa_j|·|δv_j|, plus half
    a unit of Z1's own printed decimals (an answer written as the page writes Z1)."""
    steps, _ = _walkthrough_steps()
    da, dv = 0.5 * 10.0 ** -printed_digits("A1"), 0.5 * 10.0 ** -printed_digits("V1")
    a, v = np.abs(steps["A1"][1]), np.abs(steps["V1"])
    bound = da * v.sum(axis=0) + dv * a.sum() + da * dv * len(a)
    return float(bound.max() + 0.5 * 10.0 ** -printed_digits("Z1"))


def _z_row_mistakes():
    """The wrong rows ch3.z_row recognises, each with its hint's string id."""
    steps, _ = _walkthrough_steps()
    a, v = steps["A1"], steps["V1"]
    return [(attention.softmax(steps["S1"][1]) @ v, "ch03.z_unscaled"),
            (a[:, 1] @ v, "ch03.z_column"),
            (v[1], "ch03.z_own_value"),
            (a[1] @ steps["K1"], "ch03.z_keys"),
            (steps["S1_scaled"][1] @ v, "ch03.z_scores")]


value_exercise("ch3.z_row", "Z1's row for the query 爱, by hand from A1 and V1",
               reference=lambda: _walkthrough_steps()[0]["Z1"][1],
               mistakes=lambda: [m for m, _ in _z_row_mistakes()],
               answer=lambda: array_answer(
                   _walkthrough_steps()[0]["Z1"][1], z_row_tolerance(), "ch03.z_hint",
                   "ch03.correct",
                   first=[(Is.close(m, z_row_tolerance()), wrong(hint))
                          for m, hint in _z_row_mistakes()]))

value_exercise("ch3.concat_shape", "Shape of the concatenated heads Z",
               reference=lambda: (3, 6), mistakes=lambda: [(3, 3), (6, 3), (3, 4), 18],
               answer=lambda: Answer("shape", [(Is.equal((3, 6)), right("ch03.concat_ok")),
                                               (Is.equal((6, 3)), wrong("ch03.rows_are_tokens"))],
                                     otherwise=wrong("ch03.one_row_per_token"),
                                     wrong_kind=wrong("ch03.tuple_hint")))


@exercise("ch3.layer_norm", "Write layer_norm(r): per token, over the features",
          reference=lambda: norms.layer_norm,
          mistakes=lambda: [lambda r: (r - r.mean(0)) / np.sqrt(r.var(0) + 1e-5),
                            lambda r: (r - r.mean(-1, keepdims=True))
                            / np.sqrt(r.var(-1, ddof=1, keepdims=True) + 1e-5),
                            lambda r: r / np.sqrt(r.var(-1, keepdims=True) + 1e-5), 3])
def _ch3_layer_norm(func):
    if not callable(func):
        return False, tr("ch03.pass_function", name="layer_norm")
    rng = np.random.default_rng(3)
    for shape in [(3, 4), (1, 8), (5, 2)]:
        r = rng.normal(loc=1.0, scale=2.0, size=shape)
        got = call(func, r)
        if got.shape != r.shape:
            return False, tr("ch03.keep_shape", shape=shape, got=got.shape)
        if not np.allclose(got, norms.layer_norm(r), atol=1e-6):
            if shape[0] > 1 and np.allclose(got.mean(axis=0), 0, atol=1e-6):
                return False, tr("ch03.over_tokens")
            return False, tr("ch03.ln_steps")
    return True, tr("ch03.correct")


value_exercise("ch3.w_o_size", "How many numbers does W_O hold?",
               reference=lambda: _walkthrough_steps()[1].W_O.size, mistakes=lambda: [16, 12, 36],
               answer=lambda: Answer("number", [(Is.equal(_walkthrough_steps()[1].W_O.size),
                                                 right("ch03.correct"))],
                                     otherwise=wrong("ch03.w_o_hint")))


# --- concept questions (book/face/questions.py; their words: book/strings/ch03.toml) ---
questions.question("ch03.concat_shape", kind="predict", right=2,
                   answered_in="dg03b")
questions.question("ch03.own_weights", kind="explain", right=3)
questions.question("ch03.bug_norm", kind="bug", right=1, code="""\
mean = x.mean(dim=(0, 1), keepdim=True)
std = x.std(dim=(0, 1), keepdim=True)
x = (x - mean) / (std + 1e-5)
""")
