"""Chapter 9b (serving a model: the KV cache, seven implementations of one layer): its static
figures and exercises."""

from __future__ import annotations

from functools import cache

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from book.chapters.ch09_long_context import METHOD_COLORS, METHOD_DASH, METHOD_MARKER, log2_n_axis
from book.face import questions
from book.face.checks import Answer, Is, right, value_exercise, wrong
from book.face.figures import describe
from book.face.plotting import rounded
from book.ideas import kvcache
from book.kit import numbers, timing
from book.kit.i18n import tr

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

def _speedup_decimals(s: float) -> int:
    """The decimals a bar's speed-up label shows: one below 10×, none above."""
    return 1 if s < 10 else 0


def speedup_trend(rows: list[dict]) -> str:
    """Did the KV cache's speed-up grow with the length, read from the bars' own labels
    (rows from :func:`book.ideas.kvcache.generation_times`, by length)? "every": larger at
    each length than at the one before; "overall": larger at the last than at the first, not
    at every step; "not": no larger at the last than at the first."""
    if not rows:
        raise ValueError("rows is empty: pass kvcache.generation_times(...)")
    shown = [numbers.shown(s, _speedup_decimals(s)) for s in (r["speedup"] for r in rows)]
    if len(shown) > 1 and all(b > a for a, b in zip(shown[:-1], shown[1:], strict=True)):
        return "every"
    return "overall" if shown[-1] > shown[0] else "not"


def speedup_verdict(rows: list[dict]) -> str:
    """The sentence chapter 9b glues after its speed-ups: what :func:`speedup_trend` found."""
    trend = speedup_trend(rows)
    return tr(f"ch09b.kv_trend_{trend}", n0=rows[0]["n_new"], n1=rows[-1]["n_new"])


def same_verdict(same: bool) -> str:
    """The prose's word for the tokens generated with and without the cache: identical or
    different."""
    return tr("ch09b.identical" if same else "ch09b.different")


def all_same_verdict(rows: list[dict]) -> str:
    """Were the generated tokens identical with and without the cache at every length
    (rows from :func:`book.ideas.kvcache.generation_times`)?"""
    return tr("ch09b.identical" if all(r["same"] for r in rows) else "ch09b.not_identical")


def causal_note(ignored: bool) -> str:
    """What the prose says of nn.MultiheadAttention's fast path and ``is_causal=True``:
    ``ignored`` when it runs the same operators either way."""
    return tr("ch09b.causal_ignored" if ignored else "ch09b.causal_used")


def production_verdict(ratio: float) -> str:
    """The production module's time as a share of the minimal SDPA layer's (``ratio``, the
    median over the rounds), said as so many percent less or more."""
    if ratio < 1:
        return tr("ch09b.production_less", pct=100 * (1 - ratio))
    return tr("ch09b.production_more", pct=100 * (ratio - 1))


def production_consequence(low: float, high: float) -> str:
    """What the measured range ``low``..``high`` of that ratio over the rounds means: it costs
    more (the whole range above 1), less (below 1), or the difference is noise."""
    if low > 1:
        return tr("ch09b.production_costs_more")
    if high < 1:
        return tr("ch09b.production_costs_less")
    return tr("ch09b.production_costs_noise")


def gpu_note(gpu_name: str | None, ratio: float | None = None) -> str:
    """The sentence on the GPU: its name and the production module's time ratio there, or
    that there was none (``gpu_name`` None)."""
    if gpu_name is None:
        return tr("ch09b.gpu_absent")
    return tr("ch09b.gpu_present", gpu=gpu_name, ratio=ratio)


def kv_speedup_figure(rows: list[dict]) -> go.Figure:
    """Generation time with and without the KV cache, and the speed-up, per generated length
    (rows from :func:`book.ideas.kvcache.generation_times`)."""
    if not rows:
        raise ValueError("rows is empty: pass kvcache.generation_times(...)")
    lengths = [r["n_new"] for r in rows]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=[tr("ch09b.kv_title_time"),
                                        tr("ch09b.kv_title_speedup")])
    # the two lines differ by dash and marker, not by colour alone
    for key, name, style in (("full", tr("ch09b.kv_full"), "full"),
                             ("cached", tr("ch09b.kv_cached"), "banded")):
        fig.add_trace(go.Scatter(x=lengths, y=rounded([r[key] for r in rows], 6),
                                 mode="lines+markers", name=name,
                                 line={"color": METHOD_COLORS[style], "dash": METHOD_DASH[style]},
                                 marker={"symbol": METHOD_MARKER[style]},
                                 hovertemplate=tr("ch09b.kv_hover_time", x="%{x}", y="%{y:.3g}")
                                 + "<extra></extra>"),
                      row=1, col=1)
    speedup = [r["speedup"] for r in rows]
    fig.add_trace(go.Bar(x=[str(n) for n in lengths], y=rounded(speedup, 3), showlegend=False,
                         marker_color="#1f3b73",
                         text=[f"{s:.{_speedup_decimals(s)}f}×" for s in speedup],
                         textposition="outside",
                         hovertemplate=tr("ch09b.kv_hover_speedup", x="%{x}", y="%{y:.2f}")
                         + "<extra></extra>"),
                  row=1, col=2)
    fig.update_xaxes(row=1, col=1, **log2_n_axis(lengths, tr("ch09b.kv_new_tokens")))
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_xaxes(title_text=tr("ch09b.kv_new_tokens"), type="category", row=1, col=2)
    fig.update_yaxes(range=[0, 1.2 * max(speedup)], row=1, col=2)
    # the panel titles 8 px above the plot, clear of a top tick at its edge (its value is
    # measured: "25" of a 20× speed-up ran into the title on a phone)
    fig.update_annotations(font_size=12, yshift=8)
    fig.update_layout(height=400, legend={"orientation": "h", "y": -0.25, "x": 0},
                      margin={"l": 50, "r": 20, "t": 58, "b": 40})
    first, last = rows[0], rows[-1]
    grows = speedup_trend(rows) == "every"
    return describe(fig, alt=tr("ch09b.kv_alt"), caption=tr(
        "ch09b.kv_caption_grows" if grows else "ch09b.kv_caption", a=first["speedup"],
        n0=first["n_new"], b=last["speedup"], n1=last["n_new"]))


def implementations_figure(rows: list[dict]) -> go.Figure:
    """Each implementation's time relative to the minimal SDPA layer (median ratio over
    interleaved rounds, with its range), as horizontal bars (rows from
    :func:`book.ideas.efficient.benchmark`, any devices)."""
    if not rows:
        raise ValueError("rows is empty: pass efficient.benchmark(...)")
    devices = sorted({r["device"] for r in rows})
    ordered = sorted(rows, key=lambda r: (r["device"], -r["vs_minimal"]))
    labels = [tr(f"ch09b.impl_{r['variant']}")
              + (f" [{r['device']}]" if len(devices) > 1 else "") for r in ordered]
    ratios = [r["vs_minimal"] for r in ordered]
    colors = ["#b3261e" if r["variant"] == "sdpa" else
              "#7a7a7a" if r["variant"] == "minimal_sdpa" else "#1a56a8" for r in ordered]
    fig = go.Figure(go.Bar(
        x=rounded(ratios, 3), y=labels, orientation="h", marker_color=colors,
        error_x={"type": "data", "symmetric": False, "color": "#000000", "thickness": 1.5,
                 "array": rounded([r["vs_minimal_high"] - r["vs_minimal"] for r in ordered], 3),
                 "arrayminus": rounded([r["vs_minimal"] - r["vs_minimal_low"]
                                        for r in ordered], 3)},
        text=[f"{v:.2f}×" for v in ratios], textposition="inside", insidetextanchor="start",
        textfont={"color": "#ffffff"},
        customdata=[f"{label.replace('<br>', ' ')} ({1000 * r['seconds']:.2f} ms)"
                    for label, r in zip(labels, ordered, strict=True)],
        hovertemplate=tr("ch09b.impl_hover", name="%{customdata}", x="%{x:.2f}")
        + "<extra></extra>"))
    fig.add_vline(x=1.0, line_dash="dash", line_color="#7a7a7a")
    high = max(r["vs_minimal_high"] for r in ordered)
    fig.update_layout(height=140 + 40 * len(rows),
                      title={"text": tr("ch09b.impl_title"), "font": {"size": 14}},
                      xaxis={"title": tr("ch09b.impl_xaxis"), "range": [0, 1.08 * high],
                             "automargin": True},
                      yaxis={"automargin": True}, margin={"l": 20, "r": 20, "t": 60, "b": 50})
    slow = max(ordered, key=lambda r: r["vs_minimal"])
    fast = min(ordered, key=lambda r: r["vs_minimal"])
    return describe(fig, alt=tr("ch09b.impl_alt", n=len(rows)), caption=tr(
        "ch09b.impl_caption", slow=labels[ordered.index(slow)].replace("<br>", " "),
        slow_x=slow["vs_minimal"], fast=labels[ordered.index(fast)].replace("<br>", " "),
        fast_x=fast["vs_minimal"]))


# --- exercises (registered with book.face.checks)
# --------------------------------------------------

def _ch9b_cache_bytes() -> int:
    return kvcache.cache_bytes(24, 4096, 2048, 2)


def _ch9b_cache_answer() -> Answer:
    expected = _ch9b_cache_bytes()
    return Answer("number", [
        (Is.equal(expected), right("ch09b.ex_cache_ok")),
        (Is.equal(expected // 2), wrong("ch09b.ex_cache_half")),
        (Is.equal(expected * 2), wrong("ch09b.ex_cache_double")),
        (Is.equal(expected // 24), wrong("ch09b.ex_cache_layers")),
        (Is.equal(expected // 2**20), wrong("ch09b.ex_cache_mib"))],
        otherwise=wrong("ch09b.ex_cache_hint"))


value_exercise("ch9b.cache_bytes", "Bytes of the KV cache: 24 layers, d_model 2048, 4096 tokens, "
               "float16", reference=_ch9b_cache_bytes,
               mistakes=lambda: [_ch9b_cache_bytes() // 2, _ch9b_cache_bytes() * 2,
                                 _ch9b_cache_bytes() // 24, _ch9b_cache_bytes() // 2**20],
               answer=_ch9b_cache_answer)


# the decode step of exercise 2: a prompt of PROMPT_LEN tokens, DONE tokens generated already
PROMPT_LEN, DONE = 8, 100


@cache
def _ch9b_step_positions() -> tuple[int, int]:
    """Positions the next decode step runs through the layers, (without, with) the cache,
    counted on the book's TinyDecoder (kvcache.positions_per_step). On one thread: a tiny model
    gains nothing from more, and on a busy machine they make each small step much slower."""
    model, prompt = kvcache.TinyDecoder(), torch.arange(PROMPT_LEN)
    with timing.torch_threads(1):
        return tuple(kvcache.positions_per_step(model, prompt, DONE + 1, use_cache=use)[DONE]
                     for use in (False, True))


def _ch9b_step_mistakes() -> list:
    without, with_cache = _ch9b_step_positions()
    return [(without - PROMPT_LEN, with_cache), (without - 1, with_cache),
            (without, without), (with_cache, without), (without, 0), without]


def _ch9b_steps_answer() -> Answer:
    right_without, right_with = _ch9b_step_positions()
    return Answer("number_pair", [
        (Is.equal((right_without, right_with)), right("ch09b.ex_steps_ok")),
        (Is.equal((right_with, right_without)), wrong("ch09b.ex_steps_swapped")),
        (Is.at(1, Is.equal(0)), wrong("ch09b.ex_steps_zero")),
        (Is.not_(Is.at(1, Is.equal(right_with))), wrong("ch09b.ex_steps_cached")),
        (Is.at(0, Is.equal(right_without - PROMPT_LEN)), wrong("ch09b.ex_steps_prompt")),
        (Is.at(0, Is.one_of(right_without - 1, right_without + 1)),
         wrong("ch09b.ex_steps_off_by_one"))],
        otherwise=wrong("ch09b.ex_steps_hint"), wrong_kind=wrong("ch09b.ex_steps_pair"))


value_exercise("ch9b.step_positions", f"Positions one decode step computes after a {PROMPT_LEN}-"
               f"token prompt and {DONE} generated tokens, (without, with) the KV cache",
               reference=_ch9b_step_positions, mistakes=_ch9b_step_mistakes,
               answer=_ch9b_steps_answer)


# exercise 3: a Llama-2-7B-like shape (as in the worked example above it), float16 throughout
LLAMA_LAYERS, LLAMA_D, FP16 = 32, 4096, 2


def _ch9b_block_weight_bytes(per_layer: int = 12) -> int:
    """Bytes of the blocks' weights: ``per_layer`` · d² per layer (4 d² attention + 8 d²
    feed-forward), float16."""
    return LLAMA_LAYERS * per_layer * LLAMA_D * LLAMA_D * FP16


def _ch9b_cache_vs_weights() -> int:
    per_token = kvcache.cache_bytes(LLAMA_LAYERS, 1, LLAMA_D, FP16)
    return _ch9b_block_weight_bytes() // per_token


def _ch9b_weights_mistakes() -> list:
    per_token = kvcache.cache_bytes(LLAMA_LAYERS, 1, LLAMA_D, FP16)
    return [_ch9b_block_weight_bytes() // (per_token // 2),            # keys only
            _ch9b_block_weight_bytes() // (per_token // LLAMA_LAYERS),  # one layer's cache
            _ch9b_block_weight_bytes(per_layer=4) // per_token,         # attention weights only
            _ch9b_block_weight_bytes() // FP16]                          # weights, not tokens


def _ch9b_weights_answer() -> Answer:
    per_token = kvcache.cache_bytes(LLAMA_LAYERS, 1, LLAMA_D, FP16)
    weights = _ch9b_block_weight_bytes()
    return Answer("number", [
        (Is.equal(_ch9b_cache_vs_weights()), right("ch09b.ex_weights_ok")),
        (Is.equal(weights // (per_token // 2)), wrong("ch09b.ex_weights_keys_only")),
        (Is.equal(weights // (per_token // LLAMA_LAYERS)), wrong("ch09b.ex_weights_one_layer")),
        (Is.equal(_ch9b_block_weight_bytes(per_layer=4) // per_token),
         wrong("ch09b.ex_weights_attention_only")),
        (Is.one_of(weights // FP16, weights), wrong("ch09b.ex_weights_not_tokens"))],
        otherwise=wrong("ch09b.ex_weights_hint"))


value_exercise("ch9b.cache_vs_weights", "Tokens of KV cache that weigh as much as the blocks' "
               "weights (32 layers, d_model 4096, float16)", reference=_ch9b_cache_vs_weights,
               mistakes=_ch9b_weights_mistakes, answer=_ch9b_weights_answer)

# --- concept questions (book/face/questions.py; their words: book/strings/ch09b.toml) ---
questions.question("ch09b.same_tokens", kind="predict", right=1,
                   answered_in="c023a")
questions.question("ch09b.not_free", kind="explain", right=2)
questions.question("ch09b.bug_cache", kind="bug", right=3, code="""\
def step(x_new, cache):
    k, v = w_k(x_new), w_v(x_new)
    cache["k"], cache["v"] = k, v
    q = w_q(x_new)
    return attention(q, cache["k"], cache["v"])
""")
