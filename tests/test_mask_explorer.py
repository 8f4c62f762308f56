"""Chapter 4's mask explorer: masktraps.mask_data (the one computation), its static face
(dropdown over mask kinds + slider over the padded length) and its live face."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from tolerance import assert_same_run

from book.chapters import ch04_pytorch
from book.ideas import masks
from book.studies import masktraps

MAX_LEN = masktraps.MASK_MAX_REAL + masktraps.MASK_MAX_PAD
EXTREMES = [(1, 1), (1, MAX_LEN), (masktraps.MASK_MAX_REAL, masktraps.MASK_MAX_REAL),
            (masktraps.MASK_MAX_REAL, MAX_LEN), (5, 7)]


@pytest.mark.parametrize("kind", masktraps.MASK_KINDS)
@pytest.mark.parametrize("length,seq_len", EXTREMES)
def test_mask_data_follows_the_book_masks(kind, length, seq_len):
    d = masktraps.mask_data(kind, length, seq_len)
    allowed, w = d["allowed"], d["weights"]
    assert allowed.shape == w.shape == (seq_len, seq_len) and allowed.dtype == bool
    want = np.ones((seq_len, seq_len), dtype=bool)
    if "causal" in kind:
        want &= masks.causal_mask(seq_len).numpy()
    if "padding" in kind:
        want &= masks.padding_mask([length], seq_len).numpy()[0][None, :]
    np.testing.assert_array_equal(allowed, want)  # exact: boolean masks
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-6)
    assert np.all(w[~allowed] == 0.0)  # blocked means exactly zero, not small
    assert np.all(w[allowed] > 0)
    assert len(set(d["labels"])) == seq_len  # plotly merges equal category labels
    if "padding" in kind or seq_len == length:
        assert d["pad_share"] == 0.0
    if "causal" in kind:
        assert d["future_share"] == 0.0


def test_without_a_mask_attention_leaks_to_padding_and_future():
    d = masktraps.mask_data("none", 5, 8)
    assert d["pad_share"] > 0.1 and d["future_share"] > 0.1
    assert d["labels"][:5] == ["一碗", "牛肉面", "，", "不要", "香菜"]
    assert d["labels"][5:] == ["pad₁", "pad₂", "pad₃"]


def test_mask_data_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(1)
    torch.manual_seed(0)
    masktraps._seeded_layer.cache_clear()  # force the layer to be built again
    masktraps.mask_data("causal", 3, 4)
    assert_same_run(torch.rand(1), expected, why="the same RNG state draws the same number")


@pytest.mark.parametrize("args,err,text", [
    (("causal+padding", 3, 4), ValueError, "not one of"),
    (("none", 0, 4), ValueError, "at least 1"),
    (("none", masktraps.MASK_MAX_REAL + 1, MAX_LEN), ValueError, "at most"),
    (("none", 5, 3), ValueError, "shorter than length"),
    (("none", 3, MAX_LEN + 1), ValueError, "at most"),
    (("none", 2.0, 4), TypeError, "integer"),
])
def test_mask_data_bad_input(args, err, text):
    with pytest.raises(err, match=text):
        masktraps.mask_data(*args)


def test_static_explorer_has_a_dropdown_and_a_slider_that_combine():
    fig = ch04_pytorch.mask_explorer()
    kinds = masktraps.MASK_KINDS
    assert len(fig.data) == 2 * len(kinds)
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == [f"mask: {k}" for k in kinds]
    titles = set()
    for i, button in enumerate(menu.buttons):
        visible = button.args[0]["visible"]
        assert [j for j, v in enumerate(visible) if v] == [2 * i, 2 * i + 1]
        titles.add(tuple(a["text"] for a in button.args[1]["annotations"]))
    assert len(titles) == len(kinds)  # the panel titles name the chosen mask
    (slider,) = fig.layout.sliders
    seq_lens = [int(s.label) for s in slider.steps]
    assert seq_lens == list(range(5, masktraps.MASK_MAX_REAL + 1))
    assert slider.active != len(seq_lens) - 1  # moving to the far end changes the drawing
    for step, n in zip(slider.steps, seq_lens, strict=True):
        restyle = step.args[0]
        assert len(restyle["z"]) == len(fig.data)  # every kind follows the slider
        for i, kind in enumerate(kinds):
            d = masktraps.mask_data(kind, 5, n)
            assert restyle["x"][2 * i] == restyle["y"][2 * i] == d["labels"]
            # exact: 0/1 mask cells
            np.testing.assert_array_equal(restyle["z"][2 * i], d["allowed"].astype(int))
            np.testing.assert_allclose(restyle["z"][2 * i + 1], d["weights"], atol=1e-4)
    assert len(fig.to_json()) < 200_000
    json.loads(fig.to_json())


def test_static_explorer_initial_drawing_matches_its_start():
    fig = ch04_pytorch.mask_explorer(3, [3, 6], ["padding", "none"], start=6)
    d = masktraps.mask_data("padding", 3, 6)
    assert list(fig.data[0].x) == d["labels"] and fig.data[0].visible
    assert not fig.data[2].visible
    np.testing.assert_allclose(np.array(fig.data[1].z, dtype=float), d["weights"], atol=1e-4)


def test_single_kind_and_length_have_no_controls():
    fig = ch04_pytorch.mask_explorer(2, [2], ["causal"])
    assert len(fig.data) == 2 and not fig.layout.updatemenus and not fig.layout.sliders


def test_large_grids_drop_the_cell_text():
    traces = ch04_pytorch._mask_traces(masktraps.mask_data("none", 8, MAX_LEN))
    assert all(t == "" for row in traces["text"][1] for t in row)
    traces = ch04_pytorch._mask_traces(masktraps.mask_data("causal", 2, 3))
    assert traces["text"][0][0] == ["✓", "·", "·"]
    assert traces["text"][1][0][1] == "0"  # a blocked weight reads as an exact 0


@pytest.mark.parametrize("kwargs,text", [
    ({"start": 4}, "not one of the padded lengths"),
    ({"kinds": []}, "at least one"),
    ({"seq_lens": []}, "at least one"),
    ({"kinds": ["future"]}, "not one of"),
])
def test_static_explorer_bad_input(kwargs, text):
    with pytest.raises(ValueError, match=text):
        ch04_pytorch.mask_explorer(**kwargs)


LIVE_EXTREMES = [{"kind": k, "length": n, "padding": p} for k in masktraps.MASK_KINDS
                 for n in (1, masktraps.MASK_MAX_REAL) for p in (0, masktraps.MASK_MAX_PAD)]


def _drawn(fig) -> str:
    return json.dumps([[list(t.x), np.asarray(t.z, dtype=float).tolist()] for t in fig.data]
                      + [a.text for a in fig.layout.annotations])


def test_live_explorer_survives_extremes_and_matches_the_data():
    explorer = ch04_pytorch.mask_explorer_live()
    drawn = set()
    for values in LIVE_EXTREMES:
        explorer.update(**values)
        d = masktraps.mask_data(values["kind"], values["length"],
                              values["length"] + values["padding"])
        assert list(explorer.figure.data[0].x) == d["labels"]
        # exact: 0/1 mask cells
        np.testing.assert_array_equal(np.asarray(explorer.figure.data[0].z), d["allowed"])
        np.testing.assert_allclose(np.asarray(explorer.figure.data[1].z, dtype=float),
                                   d["weights"], atol=1e-4)
        assert values["kind"] in explorer.figure.layout.annotations[1].text or \
            values["kind"] == "none"
        drawn.add(_drawn(explorer.figure))
    assert len(drawn) == len(LIVE_EXTREMES)  # every combination draws something different


def test_live_controls_redraw_by_themselves():
    explorer = ch04_pytorch.mask_explorer_live()
    explorer.update(kind="none", length=3, padding=2)
    expected = _drawn(explorer.figure)
    explorer.update(kind="causal", length=8, padding=8)
    explorer.controls["kind"].value = "none"
    explorer.controls["length"].value = 3
    explorer.controls["padding"].value = 2
    assert _drawn(explorer.figure) == expected


def test_live_explorer_bad_input():
    explorer = ch04_pytorch.mask_explorer_live()
    with pytest.raises(ValueError, match="outside the slider's range"):
        explorer.update(padding=masktraps.MASK_MAX_PAD + 1)
    with pytest.raises(ValueError, match="unknown control"):
        explorer.update(seq_len=4)
