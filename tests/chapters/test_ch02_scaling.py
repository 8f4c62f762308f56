"""Chapter 2's explorers, static and live faces: same data, extremes survive; the live faces of
chapters 1 and 2 at their extremes, and chapter 2's summary figures (with chapter 1's menu)."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from book.chapters import ch01_intuition, ch02_scaling
from book.ideas import scaling
from book.toy import orders_example


def test_dk_explorer_frames_differ_and_json_is_small():
    fig = ch02_scaling.dk_figure()
    steps = fig.layout.sliders[0].steps
    assert [int(s.label) for s in steps] == scaling.D_K_STEPS
    assert steps[0].args[0]["x"] != steps[-1].args[0]["x"]
    assert len(fig.to_json()) < 200_000


def test_softmax_row_explorer_shows_saturation():
    fig = ch02_scaling.softmax_row_figure()
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
    (ch01_intuition.heads_live, [{"n_heads": 1}, {"n_heads": orders_example.MAX_HEADS}]),
    (ch02_scaling.dk_live, [{"d_k": 1, "n": 100},
                            {"d_k": ch02_scaling.LIVE_MAX_D_K, "n": ch02_scaling.SWEEP_PAIRS}]),
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
    live = ch02_scaling.dk_live()
    live.update(d_k=64, n=3000)
    static = scaling.dk_data(64, 3000)
    np.testing.assert_allclose(live.figure.data[0].y, static["raw_y"])


def test_the_sampler_opens_on_the_sweeps_pairs():
    """Its first state is the sweep's own pairs at d_k = 64, so its first title reads the
    variance the prose quotes from the sweep; the page shows that state as Python drew it and
    draws its own pairs only once the reader moves a control (tests/face/test_first_frames.py
    checks the prose against it)."""
    first = ch02_scaling.dk_first_data()
    assert (first["d_k"], first["n"]) == (64, ch02_scaling.SWEEP_PAIRS)
    sweep = scaling.sweep([64], n_rows=2)
    assert first["raw_var"] == pytest.approx(sweep["variance"][0], rel=1e-12)
    cell = ch02_scaling.dk_inpage()
    assert json.loads(cell.spec_json)["redraw_at_load"] is False
    assert {c["name"]: c["value"] for c in cell.controls} == {"d_k": 64, "n": first["n"]}
    for fig in (cell.figure, ch02_scaling.dk_live().figure):
        assert f"d_k = 64<br>variance {first['raw_var']:.1f}" in fig.layout.annotations[0].text
        np.testing.assert_allclose(fig.data[0].y, first["raw_y"])


def test_live_bad_input():
    explorer = ch02_scaling.dk_live()
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


# --- figures as a screen reader meets them (issue 47): every figure described, both editions ---

def _described_faces():
    sweep = scaling.sweep([1, 8, 64], n_rows=20)
    return {"variance": ch02_scaling.variance_figure(sweep),
            "saturation": ch02_scaling.saturation_figure(sweep),
            "jacobian": ch02_scaling.jacobian_figure(sweep),
            "exam": ch02_scaling.exam_figure(),
            "dk": ch02_scaling.dk_figure([1, 64]),
            "dk_live": ch02_scaling.dk_live().figure,
            "dk_inpage": ch02_scaling.dk_inpage().figure,
            "row": ch02_scaling.softmax_row_figure([1, 64]),
            "row_live": ch02_scaling.softmax_row_live().figure,
            "row_inpage": ch02_scaling.softmax_row_inpage().figure}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_figure_is_described(language):
    from book.face.figures import described
    from book.kit import i18n

    i18n.set_language(language)
    try:
        texts = {name: described(fig.to_dict()) for name, fig in _described_faces().items()}
    finally:
        i18n.set_language("en")
    assert all(texts.values()), [name for name, t in texts.items() if t is None]
    if language == "zh":  # drawn in the edition's language
        assert all(any("\u4e00" <= c <= "\u9fff" for c in alt + caption)
                   for alt, caption in texts.values())


def test_captions_quote_the_drawn_numbers():
    from book.face.figures import described

    sweep = scaling.sweep([1, 8, 64], n_rows=20)
    fig = ch02_scaling.jacobian_figure(sweep)
    none, sqrt = (fig.data[i].y[-1] for i in (0, 1))
    caption = described(fig.to_dict())[1]
    assert f"{none:.3f} unscaled and {sqrt:.3f} ÷ √d_k" in caption
    assert f"{sqrt / none:.1f} times as much" in caption and sqrt > none
    fig = ch02_scaling.saturation_figure(sweep)
    drawn = {t.name: t.y[-1] for t in fig.data if t.showlegend is not False}
    caption = described(fig.to_dict())[1]
    assert f"largest weight is {drawn[ch02_scaling.scale_name('none')]:.2f} unscaled" in caption
    assert (drawn[ch02_scaling.scale_name("none")] > drawn[ch02_scaling.scale_name("sqrt")]
            > drawn[ch02_scaling.scale_name("linear")])  # "saturate", "flattens"
    fig = ch02_scaling.exam_figure()
    raw, scaled = max(fig.data[0].y), max(fig.data[1].y)
    assert f"takes {raw:.2f} of the weight" in described(fig.to_dict())[1] and raw > scaled
    fig = ch02_scaling.variance_figure(sweep)
    assert f"{fig.data[1].y[-1]:.0f} at d_k = 64" in described(fig.to_dict())[1]
    assert f"{fig.data[1].y[0]:.2f} at d_k = 1" in described(fig.to_dict())[1]


def test_scalings_differ_by_more_than_colour():
    """WCAG 1.4.1: each scaling's series has its own dash and marker (and the softmax row's
    unscaled bars a hatch), so they read apart in greyscale."""
    sweep = scaling.sweep([1, 8], n_rows=20)
    for fig in (ch02_scaling.saturation_figure(sweep), ch02_scaling.jacobian_figure(sweep)):
        styles = {(t.line.dash, t.marker.symbol) for t in fig.data if t.showlegend is not False}
        assert len(styles) == len(scaling.SCALES)
    bars = ch02_scaling.softmax_row_figure([1, 8]).data
    assert len({t.marker.pattern.shape or "" for t in bars}) == 2
