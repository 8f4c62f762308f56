"""Chapter 9's figures, the window explorer (static and live faces) and its exercise checkers
(each typical slip gets its own hint; equivalent answers pass; tests/face/test_checks.py runs
the generic checks over every registered exercise)."""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from conftest import check_message as message
from tolerance import assert_same_run

from book.chapters import ch09_long_context, ch09b_serving
from book.face import checks
from book.ideas import efficient, kvcache, longctx


def test_window_data_levels():
    data = longctx.window_data(40, 3)
    levels = data["levels"]
    allowed = longctx.window_mask(40, 3).numpy()
    assert np.array_equal(levels == 2, allowed)  # exact: boolean masks
    assert data["block"] == 16 and list(data["keys"][:2]) == [4, 5] and data["keys"].max() == 7
    # every allowed pair lies inside the slab its query block computes
    first_block = levels[:16]
    assert (first_block[:, : 16 + 3] >= 1).all() and (first_block[:, 16 + 3:] == 0).all()
    # the banded count covers every computed cell inside the sequence
    assert (levels >= 1).sum() <= longctx.banded_score_entries(40, 3)
    assert data["full"] == [n * n for n in data["cost_ns"]]


def test_window_data_wide_window_allows_everything():
    data = longctx.window_data(10, 12)
    assert (data["levels"] == 2).all() and data["keys"].min() == 10


def test_window_explorer_steps_match_window_data():
    fig = ch09_long_context.window_figure()
    steps = fig.layout.sliders[0].steps
    assert [int(s.label) for s in steps] == list(ch09_long_context.WINDOW_STEPS)
    for step in (steps[0], steps[-1]):
        w = int(step.label)
        data = longctx.window_data(ch09_long_context.WINDOW_PATTERN_N, w)
        restyle, _, traces = step.args
        assert list(traces) == [0, 2]
        assert np.array_equal(np.asarray(restyle["z"][0]), data["levels"])  # integer levels
        assert list(restyle["y"][1]) == data["banded"]
    assert steps[0].args[0]["z"] != steps[-1].args[0]["z"]
    assert fig.layout.sliders[0].active == 2
    json.loads(fig.to_json())
    assert len(fig.to_json()) < 200_000


@pytest.mark.parametrize("bad,err", [({"n": 0, "window": 1}, ValueError),
                                     ({"n": 8, "window": -1}, ValueError),
                                     ({"n": 8.5, "window": 1}, TypeError)])
def test_window_data_bad_input(bad, err):
    with pytest.raises(err):
        longctx.window_data(**bad)


def test_live_window_explorer_extremes():
    explorer = ch09_long_context.window_live()
    extremes = [{"window": 0, "n": 8}, {"window": ch09_long_context.WINDOW_LIVE_MAX_W,
                                        "n": ch09_long_context.WINDOW_LIVE_MAX_N},
                {"window": 0, "n": ch09_long_context.WINDOW_LIVE_MAX_N},
                {"window": ch09_long_context.WINDOW_LIVE_MAX_W, "n": 8}]
    drawn = []
    for values in extremes:
        explorer.update(**values)
        heat = explorer.figure.data[0]
        data = longctx.window_data(values["n"], values["window"])
        assert np.array_equal(np.asarray(heat.z), data["levels"])  # exact: integer levels
        assert list(explorer.figure.data[2].y) == data["banded"]
        drawn.append(json.dumps(np.asarray(heat.z).tolist()))
    assert len(set(drawn)) == len(drawn)
    explorer.controls["window"].value = 5  # a reader moving the slider redraws too
    assert explorer.figure.layout.annotations[0].text.startswith("w = 5:")
    with pytest.raises(ValueError, match="outside the slider's range"):
        explorer.update(n=ch09_long_context.WINDOW_LIVE_MAX_N + 1)


def sweep():
    return {"n": [128, 256, 512], "full": [1e6, 4e6, 16e6], "banded": [1e6, 2e6, 4e6]}


def test_cost_figure_reports_slopes_in_the_legend():
    fig = ch09_long_context.attention_cost_figure(sweep(), "memory")
    names = [t.name for t in fig.data]
    assert names[0].endswith("slope 2.00") and names[1].endswith("slope 1.00")
    assert list(fig.data[0].y) == [1.0, 4.0, 16.0]  # drawn in MB
    time_fig = ch09_long_context.attention_cost_figure(sweep(), "time", fit_from=256)
    assert time_fig.data[0].y[0] == 1e9  # drawn in ms
    with pytest.raises(ValueError, match="not one of"):
        ch09_long_context.attention_cost_figure(sweep(), "flops")
    with pytest.raises(ValueError, match="no method"):
        ch09_long_context.attention_cost_figure({"n": [1, 2]}, "time")


def test_block_share_kv_and_implementations_figures():
    rows = longctx.block_costs([8, 16], d_model=16, n_heads=2, repeats=1)
    fig = ch09_long_context.block_share_figure(rows)
    stacked = np.sum([np.asarray(t.y, dtype=float) for t in fig.data[:3]], axis=0)
    np.testing.assert_allclose(stacked, 100, atol=0.05)
    kv_rows = [{"n_new": 4, "cached": 0.1, "full": 0.2, "speedup": 2.0, "same": True},
               {"n_new": 8, "cached": 0.2, "full": 0.8, "speedup": 4.0, "same": True}]
    assert list(ch09b_serving.kv_speedup_figure(kv_rows).data[2].y) == [2.0, 4.0]
    # from 10× on, whole numbers: "21.3×" did not fit its bar on a phone and was hidden
    kv_rows[1]["speedup"] = 21.3
    assert list(ch09b_serving.kv_speedup_figure(kv_rows).data[2].text) == ["2.0×", "21×"]
    impl = efficient.benchmark(batch=1, seq_len=4, d_model=8, n_heads=2, rounds=1,
                               min_run_time=0.001)
    fig = ch09b_serving.implementations_figure(impl)
    assert len(fig.data[0].y) == len(efficient.NAMES)
    assert "need_weights=False" in " ".join(fig.data[0].y)
    assert "minimal SDPA" in fig.layout.title.text
    gpu = [dict(r, device="cuda") for r in impl]
    assert "[cuda]" in " ".join(ch09b_serving.implementations_figure(impl + gpu).data[0].y)
    for make in (ch09_long_context.block_share_figure, ch09b_serving.kv_speedup_figure,
                 ch09b_serving.implementations_figure):
        with pytest.raises(ValueError, match="empty"):
            make([])
    assert isinstance(fig, go.Figure)


# --- the Chinese edition: every figure and message of the chapter in Chinese -------------------

ENGLISH_WORD = re.compile(r"[A-Za-z_]{3,}")
# code, formulas and units the Chinese edition keeps as they are
KEPT = {"softmax", "FLOPs", "SDPA", "einsum", "need_weights", "True", "False", "MHA", "QKV",
        "grad", "no_grad", "log", "block", "window_mask", "longctx", "block_flops", "d_model",
        "float16", "MiB", "extra", "customdata", "scaled_dot_product_attention", "fused",
        "cuda", "cpu"}


def _texts(fig) -> list[str]:
    layout = fig.layout
    out = [layout.title.text or ""] + [a.text for a in layout.annotations]
    for axis in (k for k in layout if k.startswith(("xaxis", "yaxis"))):
        out.append(layout[axis].title.text or "")
    out += [t.name or "" for t in fig.data] + [t.hovertemplate or "" for t in fig.data]
    for trace in fig.data:
        if getattr(trace, "y", None) is not None and isinstance(trace, go.Bar) \
                and trace.orientation == "h":
            out += list(trace.y)
    for slider in layout.sliders:
        out.append(slider.currentvalue.prefix or "")
    return out


def _english(texts) -> list[str]:
    words = []
    for text in texts:
        text = re.sub(r"%\{[^}]*\}|<[^>]*>|F\.\w+|nn\.\w+|\w+=\w+", " ", text)
        words += [w for w in ENGLISH_WORD.findall(text) if w not in KEPT]
    return words


def test_figures_have_no_english_in_chinese(chinese):
    rows = [{"n": n, "projections": 1.0, "attention": 1.0, "feed_forward": 2.0, "total": 4.0,
             "attention_share": 0.25, "attention_flop_share": 0.2} for n in (8, 16)]
    kv_rows = [{"n_new": 4, "cached": 0.1, "full": 0.2, "speedup": 2.0, "same": True}]
    impl = [{"variant": v, "label": v, "seconds": 1.0, "vs_minimal": 1.0, "vs_minimal_low": 0.9,
             "vs_minimal_high": 1.1, "device": "cpu"} for v in efficient.NAMES]
    figures = {"cost": ch09_long_context.attention_cost_figure(sweep(), "memory"),
               "time": ch09_long_context.attention_cost_figure(sweep(), "time"),
               "block": ch09_long_context.block_share_figure(rows),
               "window": ch09_long_context.window_figure(),
               "kv": ch09b_serving.kv_speedup_figure(kv_rows),
               "impl": ch09b_serving.implementations_figure(impl)}
    for name, fig in figures.items():
        texts = _texts(fig)
        assert any(re.search("[\u4e00-\u9fff]", t) for t in texts), name
        assert not _english(texts), (name, _english(texts))
    steps = figures["window"].layout.sliders[0].steps
    for step in steps:
        assert not _english(a["text"] for a in step.args[1]["annotations"])


def test_the_prose_words_follow_the_numbers():
    """The words the lesson's cells pick from their measurements (ch09_long_context's helpers,
    so that the cells hold no string-table keys, issue 49)."""
    assert ch09_long_context.time_shape(2.3).startswith("steeper than 2")
    assert ch09_long_context.time_shape(1.7).startswith("flatter than 2")
    assert ch09_long_context.time_shape(2.0).startswith("close to 2")
    assert ch09_long_context.attention_note(4.6).startswith("more than the 4")
    assert ch09_long_context.attention_note(3.4).startswith("less than the 4")
    assert ch09_long_context.attention_note(4.0) == "close to the 4 that the arithmetic predicts"
    assert ch09_long_context.half_time([1024, 2048]) == "n = 1024"
    assert ch09_long_context.half_time([]) == "none of these lengths"
    assert ch09_long_context.kernel_verdict(1.0, 2.0).startswith("faster")
    assert ch09_long_context.kernel_verdict(2.0, 1.0).startswith("slower")
    assert ch09_long_context.cost_title("time").startswith("Time of one attention call")
    with pytest.raises(ValueError, match="not one of"):
        ch09_long_context.cost_title("flops")


def test_the_prose_words_in_chinese(chinese):
    words = [ch09_long_context.time_shape(2.3), ch09_long_context.attention_note(4.0),
             ch09_long_context.half_time([]), ch09_long_context.kernel_verdict(2.0, 1.0),
             ch09_long_context.cost_title("memory")]
    assert all(re.search("[\u4e00-\u9fff]", w) for w in words), words


def test_exercise_messages_are_chinese(chinese):
    for key, wrong in (("ch9.keys_per_query", 256), ("ch9.crossover", 768),
                       ("ch9b.cache_bytes", 1), ("ch9.window_mask", "mask")):
        for answer in (checks.reference(key), wrong):
            message = checks.check(key, answer).message
            assert re.search("[\u4e00-\u9fff]", message), (key, message)
            assert not _english([message]), (key, message)


def test_references_agree_with_the_library():
    assert checks.reference("ch9.keys_per_query") == 2 * 128 + 1
    assert checks.reference("ch9.crossover") == 6 * 768
    assert checks.reference("ch9b.cache_bytes") == kvcache.cache_bytes(24, 4096, 2048, 2)
    mask = checks.reference("ch9.window_mask")(7, 2)
    assert_same_run(np.asarray(mask), longctx.window_mask(7, 2).numpy(),
                    why="boolean masks: no rounding")


@pytest.mark.parametrize("answer,text", [(256, "its own position"), (129, "causal window"),
                                         (128, "both sides"), (1000, "Count the j")])
def test_keys_per_query_hints(answer, text):
    assert text in message("ch9.keys_per_query", answer)


@pytest.mark.parametrize("answer,text", [(768, "Count both sides"), (3072, "four projections"),
                                         (100, "Set attention")])
def test_crossover_hints(answer, text):
    assert text in message("ch9.crossover", answer)


def test_window_mask_hints_and_equivalent_answers():
    assert "Off by one" in message(
        "ch9.window_mask", lambda n, w: longctx.window_mask(int(n), int(w) - 1).numpy()
        if w > 0 else np.zeros((int(n), int(n)), dtype=bool))
    assert "causal window" in message(
        "ch9.window_mask", lambda n, w: longctx.window_mask(int(n), int(w), causal=True))
    assert "function itself" in message("ch9.window_mask", np.ones((3, 3)))
    assert "6 × 6" in message("ch9.window_mask", lambda n, w: np.ones((2, 2)))
    # the library's torch mask, 0/1 integers and nested lists are all fine
    assert checks.check("ch9.window_mask",
                        lambda n, w: longctx.window_mask(int(n), int(w))).ok
    assert checks.check("ch9.window_mask", lambda n, w: torch.tensor(
        [[int(abs(i - j) <= w) for j in range(n)] for i in range(n)])).ok
    assert checks.check("ch9.window_mask", lambda n, w: None).status == "todo"


# --- text alternatives and captions (book.face.figures.describe), colour never alone ---------

def _ch09_figures():
    rows = longctx.block_costs([8, 16], d_model=16, n_heads=2, repeats=1)
    return {"memory": ch09_long_context.attention_cost_figure(
                {**sweep(), "sdpa": [1e6, 2e6, 4e6], "masked": [1e6, 4e6, 16e6]}, "memory",
                fit_from=256),
            "time": ch09_long_context.attention_cost_figure(sweep(), "time"),
            "block": ch09_long_context.block_share_figure(rows),
            "diagram": ch09_long_context.window_diagram(),
            "window": ch09_long_context.window_figure(),
            "window, live": ch09_long_context.window_live().figure,
            "window, page": ch09_long_context.window_inpage().figure}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_figure_is_described_in_both_languages(language):
    from book.face.figures import described
    from book.kit import i18n

    try:
        i18n.set_language(language)
        for name, fig in _ch09_figures().items():
            fig = fig.to_dict() if hasattr(fig, "to_dict") else fig
            texts = described(fig)
            assert texts is not None, name
            has_cjk = [bool(re.search("[\u4e00-\u9fff]", t)) for t in texts]
            assert has_cjk == [language == "zh"] * 2, (name, texts)
    finally:
        i18n.set_language("en")


def test_caption_numbers_are_the_figures_data():
    from book.face.figures import described
    from book.kit import numbers

    figs = _ch09_figures()
    # the slopes in the caption are the legend's (fitted on the same points)
    fig = figs["memory"]
    caption = described(fig.to_dict())[1]
    for trace in fig.data:
        slope = re.search(r"slope ([\d.]+)", trace.name)[1]
        assert slope in caption
    assert "from n = 256 on" in caption
    # the block's shares: attention's bar at the first and last length
    fig = figs["block"]
    attention = next(t for t in fig.data if t.name.startswith("attention"))
    flops = fig.data[-1]
    caption = described(fig.to_dict())[1]
    assert f"{attention.y[0]:.0f} % of the block's time at n = 8" in caption
    assert f"{attention.y[-1]:.0f} % at n = 16" in caption
    assert f"its share is {flops.y[0]:.0f} % and {flops.y[-1]:.0f} %" in caption
    # the window's first state: the cost panel's last point, both lines
    fig = figs["window"]
    full, banded = fig.data[1].y[-1], fig.data[2].y[-1]
    caption = described(fig.to_dict())[1]
    assert numbers.large(full) in caption and numbers.large(banded) in caption
    # the diagram's counts are its mask's
    mask = longctx.window_mask(8, 2).numpy()
    caption = described(ch09_long_context.window_diagram().to_dict())[1]
    assert f"all {mask.size} pairs" in caption and f"scores {int(mask.sum())}," in caption


def test_series_differ_by_more_than_colour():
    figs = _ch09_figures()
    lines = figs["memory"].data
    assert len({t.line.dash for t in lines}) == len(lines)
    assert len({t.marker.symbol for t in lines}) == len(lines)
    cost = figs["window"].data[1:3]
    assert cost[0].line.dash != cost[1].line.dash
    bars = [t for t in figs["block"].data if isinstance(t, go.Bar)]
    assert len({t.marker.pattern.shape for t in bars}) == len(bars)
    kv = ch09b_serving.kv_speedup_figure(
        [{"n_new": 4, "cached": 0.1, "full": 0.2, "speedup": 2.0, "same": True}])
    assert kv.data[0].line.dash != kv.data[1].line.dash
