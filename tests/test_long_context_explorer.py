"""Chapter 9's figures and the window explorer (static and live faces)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from book import ch09_long_context, efficient, longctx


def test_window_data_levels():
    data = longctx.window_data(40, 3)
    levels = data["levels"]
    allowed = longctx.window_mask(40, 3).numpy()
    assert np.array_equal(levels == 2, allowed)
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
    fig = ch09_long_context.window_explorer()
    steps = fig.layout.sliders[0].steps
    assert [int(s.label) for s in steps] == list(ch09_long_context.WINDOW_STEPS)
    for step in (steps[0], steps[-1]):
        w = int(step.label)
        data = longctx.window_data(ch09_long_context.WINDOW_PATTERN_N, w)
        restyle, _, traces = step.args
        assert list(traces) == [0, 2]
        assert np.array_equal(np.asarray(restyle["z"][0]), data["levels"])
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
    explorer = ch09_long_context.window_explorer_live()
    extremes = [{"window": 0, "n": 8}, {"window": ch09_long_context.WINDOW_LIVE_MAX_W,
                                        "n": ch09_long_context.WINDOW_LIVE_MAX_N},
                {"window": 0, "n": ch09_long_context.WINDOW_LIVE_MAX_N},
                {"window": ch09_long_context.WINDOW_LIVE_MAX_W, "n": 8}]
    drawn = []
    for values in extremes:
        explorer.update(**values)
        heat = explorer.figure.data[0]
        data = longctx.window_data(values["n"], values["window"])
        assert np.array_equal(np.asarray(heat.z), data["levels"])
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
    assert list(ch09_long_context.kv_speedup_figure(kv_rows).data[2].y) == [2.0, 4.0]
    impl = efficient.benchmark(batch=1, seq_len=4, d_model=8, n_heads=2, repeats=1)
    fig = ch09_long_context.implementations_figure(impl)
    assert len(fig.data[0].y) == len(efficient.NAMES)
    assert "need_weights=False" in " ".join(fig.data[0].y)
    gpu = [dict(r, device="cuda") for r in impl]
    assert "[cuda]" in " ".join(ch09_long_context.implementations_figure(impl + gpu).data[0].y)
    for make in (ch09_long_context.block_share_figure, ch09_long_context.kv_speedup_figure,
                 ch09_long_context.implementations_figure):
        with pytest.raises(ValueError, match="empty"):
            make([])
    assert isinstance(fig, go.Figure)
