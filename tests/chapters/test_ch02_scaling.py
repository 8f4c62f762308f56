"""book.figures (static face) and book.widgets (live face): same data, extremes survive."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from book.chapters import ch01_intuition, ch02_scaling, ch10_beyond
from book.face import plotting
from book.ideas import beyond, scaling
from book.toy import orders_example


def test_heatmap_axes_and_labels():
    labels = orders_example.labels()
    fig = plotting.attention_heatmap(np.eye(len(labels)), labels, title="t")
    assert list(fig.data[0].x) == labels and list(fig.data[0].y) == labels
    assert fig.layout.yaxis.autorange == "reversed"


@pytest.mark.parametrize("weights,labels,msg", [
    (np.eye(2), ["a", "a"], "unique"),
    (np.eye(2), ["a", "b", "c"], "one label per row"),
])
def test_heatmap_bad_input(weights, labels, msg):
    with pytest.raises(ValueError, match=msg):
        plotting.attention_heatmap(weights, labels)


def test_heads_explorer_steps_carry_each_head_count():
    fig = ch01_intuition.heads_explorer()
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["1", "2", "3"]
    for h, step in enumerate(steps, start=1):
        zs = step.args[0]["z"]
        drawn = [z for z in zs if any(v is not None for row in z for v in row)]
        assert len(drawn) == h
        np.testing.assert_allclose(np.array(drawn[0], dtype=float),
                                   orders_example.heads_data(h)["z"][0], atol=1e-4)


def test_dk_explorer_frames_differ_and_json_is_small():
    fig = ch02_scaling.dk_explorer()
    steps = fig.layout.sliders[0].steps
    assert [int(s.label) for s in steps] == scaling.D_K_STEPS
    assert steps[0].args[0]["x"] != steps[-1].args[0]["x"]
    assert len(fig.to_json()) < 200_000


def test_softmax_row_explorer_shows_saturation():
    fig = ch02_scaling.softmax_row_explorer()
    last = fig.layout.sliders[0].steps[-1].args[0]["y"]
    assert max(last[0]) > 0.9 > max(last[1])


def test_summary_figures_build():
    sweep = scaling.sweep([1, 8, 64], n_rows=20)
    for fig in (ch02_scaling.variance_figure(sweep), ch02_scaling.saturation_figure(sweep),
                ch02_scaling.jacobian_figure(sweep), ch02_scaling.exam_figure(),
                ch01_intuition.menu_figure(orders_example.menu_match())):
        assert isinstance(fig, go.Figure) and len(fig.data) > 0
        json.loads(fig.to_json())  # serialisable, no NaN literals


def _data(fig) -> str:
    """What the figure draws, as text (NaN, for an empty panel, compares equal to itself)."""
    drawn = []
    for t in fig.data:
        values = t.y if getattr(t, "z", None) is None else t.z
        drawn.append((list(t.x) if t.x is not None else None,
                      np.asarray(values, dtype=float).tolist()))
    return json.dumps(drawn)


@pytest.mark.parametrize("make,extremes", [
    (ch01_intuition.heads_explorer_live, [{"n_heads": 1}, {"n_heads": orders_example.MAX_HEADS}]),
    (ch02_scaling.dk_explorer_live, [{"d_k": 1, "n": 100},
                                     {"d_k": ch02_scaling.LIVE_MAX_D_K, "n": 3000}]),
    (ch02_scaling.softmax_row_live, [{"d_k": 1, "n_keys": 1, "seed": 0},
                                {"d_k": ch02_scaling.LIVE_MAX_D_K, "n_keys": 128, "seed": 99}]),
])
def test_live_explorers_survive_extremes_and_redraw(make, extremes):
    explorer = make()
    drawn = []
    for values in extremes:
        explorer.update(**values)
        drawn.append(_data(explorer.figure))
        for name, value in values.items():
            assert explorer.controls[name].value == value
    assert drawn[0] != drawn[1]
    for name, value in extremes[0].items():  # moving the controls themselves redraws
        explorer.controls[name].value = value
    assert _data(explorer.figure) == drawn[0]


def test_live_matches_static_data():
    live = ch02_scaling.dk_explorer_live()
    live.update(d_k=64, n=3000)
    static = scaling.dk_data(64, 3000)
    np.testing.assert_allclose(live.figure.data[0].y, static["raw_y"])


def test_live_bad_input():
    explorer = ch02_scaling.dk_explorer_live()
    with pytest.raises(ValueError, match="outside the slider's range"):
        explorer.update(d_k=0)
    with pytest.raises(ValueError, match="unknown control"):
        explorer.update(heads=2)


def test_update_redraws_once_however_many_controls_change():
    explorer = ch02_scaling.softmax_row_live()
    before = explorer.redraws
    explorer.update(d_k=8, n_keys=4, seed=1)
    assert explorer.redraws == before + 1
    explorer.controls["d_k"].value = 9  # a reader moving one slider: one redraw
    assert explorer.redraws == before + 2


def test_pattern_explorer_controls_change_the_pattern():
    fig = ch10_beyond.pattern_explorer()
    assert [b.label for b in fig.layout.updatemenus[0].buttons] == list(ch10_beyond.PATTERN_KINDS)
    steps = fig.layout.sliders[0].steps
    assert steps[0].args[0]["z"] != steps[-1].args[0]["z"]
    # each variant's button swaps in its grid, its title and its own slider steps, so the
    # title names what is drawn whichever control moved last
    buttons = fig.layout.updatemenus[0].buttons
    assert len({json.dumps(b.args[0]["z"]) for b in buttons}) == len(buttons)
    for kind, button in zip(ch10_beyond.PATTERN_KINDS, buttons, strict=True):
        layout = button.args[1]
        assert layout["title.text"].startswith(f"{kind}, w = 1")
        assert [s["args"][1]["title.text"].split(":")[0] for s in layout["sliders[0].steps"]] \
            == [f"{kind}, w = {w}" for w in (1, 2, 3, 4)]
        assert layout["sliders[0].active"] == 0


def test_pattern_data_counts_keys():
    data = beyond.pattern_data("dilated", 2, n=50, dilation=3)
    assert data["max_keys"] == 5
    assert beyond.pattern_data("full", 1, n=7)["mean_keys"] == 7
    with pytest.raises(ValueError, match="not one of"):
        beyond.pattern_data("sparse", 1)


def test_pattern_live_extremes():
    live = ch10_beyond.pattern_live()
    for values in ({"kind": "hybrid", "window": 16, "dilation": 8, "n_global": 8, "n": 1},
                   {"kind": "dilated", "window": 0, "dilation": 1, "n_global": 0, "n": 128}):
        live.update(**values)
        z = np.asarray(live.figure.data[0].z)
        assert z.shape == (values["n"], values["n"]) and z.diagonal().all()
