"""Chapter 9b (serving a model: the KV cache, seven implementations of one layer): its static
figures and exercises."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from book.chapters.ch09_long_context import METHOD_COLORS, log2_n_axis
from book.face import questions
from book.face.checks import exercise, number
from book.face.plotting import rounded
from book.ideas import kvcache
from book.kit.i18n import tr

# --- static figures (plotly: the book's face, no kernel needed) -----------------------------------

def kv_speedup_figure(rows: list[dict]) -> go.Figure:
    """Generation time with and without the KV cache, and the speed-up, per generated length
    (rows from :func:`book.ideas.kvcache.generation_times`)."""
    if not rows:
        raise ValueError("rows is empty: pass kvcache.generation_times(...)")
    lengths = [r["n_new"] for r in rows]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=[tr("ch09b.kv_title_time"),
                                        tr("ch09b.kv_title_speedup")])
    for key, name, color in (("full", tr("ch09b.kv_full"), METHOD_COLORS["full"]),
                             ("cached", tr("ch09b.kv_cached"), METHOD_COLORS["banded"])):
        fig.add_trace(go.Scatter(x=lengths, y=rounded([r[key] for r in rows], 6),
                                 mode="lines+markers", name=name, line={"color": color},
                                 hovertemplate=tr("ch09b.kv_hover_time", x="%{x}", y="%{y:.3g}")
                                 + "<extra></extra>"),
                      row=1, col=1)
    speedup = [r["speedup"] for r in rows]
    fig.add_trace(go.Bar(x=[str(n) for n in lengths], y=rounded(speedup, 3), showlegend=False,
                         marker_color="#1f3b73", text=[f"{s:.1f}×" for s in speedup],
                         textposition="outside",
                         hovertemplate=tr("ch09b.kv_hover_speedup", x="%{x}", y="%{y:.2f}")
                         + "<extra></extra>"),
                  row=1, col=2)
    fig.update_xaxes(row=1, col=1, **log2_n_axis(lengths, tr("ch09b.kv_new_tokens")))
    fig.update_yaxes(type="log", row=1, col=1)
    fig.update_xaxes(title_text=tr("ch09b.kv_new_tokens"), type="category", row=1, col=2)
    fig.update_yaxes(range=[0, 1.2 * max(speedup)], row=1, col=2)
    fig.update_annotations(font_size=12)
    fig.update_layout(height=400, legend={"orientation": "h", "y": -0.25, "x": 0},
                      margin={"l": 50, "r": 20, "t": 50, "b": 40})
    return fig


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
    return fig


# --- exercises (registered with book.face.checks)
# --------------------------------------------------

def _ch9_cache_bytes() -> int:
    return kvcache.cache_bytes(24, 4096, 2048, 2)


@exercise("ch9.cache_bytes", "Bytes of the KV cache: 24 layers, d_model 2048, 4096 tokens, "
          "float16", reference=_ch9_cache_bytes,
          mistakes=lambda: [_ch9_cache_bytes() // 2, _ch9_cache_bytes() * 2,
                            _ch9_cache_bytes() // 24, _ch9_cache_bytes() // 2**20])
def _ch9_cache_bytes_check(answer):
    value = number(answer)
    expected = _ch9_cache_bytes()
    if value == expected:
        return True, tr("ch09b.ex_cache_ok")
    if value == expected // 2:
        return False, tr("ch09b.ex_cache_half")
    if value == expected * 2:
        return False, tr("ch09b.ex_cache_double")
    if value == expected // 24:
        return False, tr("ch09b.ex_cache_layers")
    if value == expected // 2**20:
        return False, tr("ch09b.ex_cache_mib")
    return False, tr("ch09b.ex_cache_hint")


# --- concept questions (book/face/questions.py; their words: book/strings/ch09b.toml) ---
questions.question("ch09b.same_tokens", kind="predict", right=1)
questions.question("ch09b.not_free", kind="explain", right=2)
questions.question("ch09b.bug_cache", kind="bug", right=3, code="""\
def step(x_new, cache):
    k, v = w_k(x_new), w_v(x_new)
    cache["k"], cache["v"] = k, v
    q = w_q(x_new)
    return attention(q, cache["k"], cache["v"])
""")
