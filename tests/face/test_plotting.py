"""book.face.plotting: the attention heatmap's axes, labels and input checks."""

from __future__ import annotations

import numpy as np
import pytest

from book.face import plotting
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


# --- fitted to a phone: cell values, controls, colour bars, Chinese ticks (issue 32) ----------

def _grid(n_cols: int, n_rows: int = 3, fmt: str = "{:.2f}", **layout) -> dict:
    z = [[(r * n_cols + c) / (n_rows * n_cols) for c in range(n_cols)] for r in range(n_rows)]
    return {"data": [{"type": "heatmap", "z": z, "text": [[fmt.format(v) for v in row]
                                                          for row in z],
                      "texttemplate": "%{text}", "textfont": {"size": 11}}],
            "layout": {"height": 400, "margin": {"l": 40, "r": 20, "t": 40, "b": 40},
                       **layout}}


def test_text_px_is_an_upper_bound_in_dejavu_widths():
    assert plotting.text_px("0.14", 10) == pytest.approx(10 * (3 * 0.64 + 0.32))
    assert plotting.text_px("一碗", 11) == 22
    assert plotting.text_px("<b>1</b>", 10) == pytest.approx(6.4)
    with pytest.raises(TypeError):
        plotting.text_px(1.0, 10)


def test_short_value_drops_leading_zeros_only():
    assert [plotting.short_value(s) for s in ("0.14", "-0.5", "10.25", "0", "1.00", "0.0")] == \
        [".14", "-.5", "10.25", "0", "1.00", ".0"]


def test_fit_cell_text_keeps_values_that_fit():
    fig = plotting.fit_cell_text(_grid(4))
    assert fig["data"][0]["texttemplate"] == "%{text}"
    assert fig["data"][0]["text"][0][1] == "0.08"


def test_fit_cell_text_drops_leading_zeros_where_only_that_fits():
    # 10 columns in (342 - 40 - 85.2) px: 21.7 px cells, "0.14" needs 24.6 + 4, ".14" 17.6 + 4
    fig = plotting.fit_cell_text(_grid(10))
    assert fig["data"][0]["texttemplate"] == "%{text}"
    assert fig["data"][0]["text"][0][1] == ".03"


def test_fit_cell_text_takes_the_smallest_font_before_the_hover():
    """Whole numbers have no shorter form: 10 px (MIN_FONT) where 11 px does not fit."""
    # no colour bar: 282 px of plot; 16 columns: 17.6 px cells, "50" needs 14.1 + 4 px at
    # 11 px, 12.8 + 4 at 10 px
    def percents(n_cols):
        fig = _grid(n_cols)
        fig["data"][0].update(showscale=False,
                              text=[[f"{50 + c}" for c in range(n_cols)]] * 3)
        return plotting.fit_cell_text(fig)["data"][0]

    trace = percents(16)
    assert trace["texttemplate"] == "%{text}" and trace["textfont"]["size"] == plotting.MIN_FONT
    assert trace["text"][0][0] == "50"
    assert percents(15)["textfont"]["size"] == 11
    assert percents(18)["texttemplate"] == ""  # 15.7 px: not even at 10 px


def test_colorbar_room_counts_its_labels_and_a_title_beside_it():
    plain = plotting._colorbar_px({"z": [[0, 1]]})
    assert plain == pytest.approx(30 + plotting.text_px("0.5", 12) + plotting.COLORBAR_PAD)
    percent = plotting._colorbar_px({"zmin": 0, "zmax": 100})
    assert percent == pytest.approx(30 + plotting.text_px("100", 12) + plotting.COLORBAR_PAD)
    # chapter 7's bar: NaN among its labels, its title beside it (measured 103 px at 390 px)
    nan = plotting._colorbar_px({"colorbar": {"ticktext": ["0", "0.5", "1", "NaN"],
                                              "title": {"text": "weight", "side": "right"}}})
    assert nan > plain + plotting.text_px("NaN", 12) - plotting.text_px("0.5", 12) + 15


def test_fit_cell_text_keeps_neighbours_a_gap_apart():
    """The widest value and CELL_TEXT_GAP fit the cell: two neighbours stand that far apart."""
    for cols in range(2, 16):
        trace = plotting.fit_cell_text(_grid(cols))["data"][0]
        if not trace["texttemplate"]:
            continue
        cell = (plotting.PHONE_FIGURE_WIDTH - 40 - plotting._colorbar_px(trace)) / cols
        size = trace["textfont"]["size"]
        widest = max(plotting.text_px(v, size) for row in trace["text"] for v in row)
        assert cell - widest >= plotting.CELL_TEXT_GAP >= 3, (cols, cell, widest)


def test_text_px_reads_capitals_wide():
    assert plotting.text_px("NaN", 10) == pytest.approx(10 * (0.79 + 0.62 + 0.79))


def test_fit_cell_text_leaves_narrow_cells_to_the_hover():
    fig = plotting.fit_cell_text(_grid(12))
    assert fig["data"][0]["texttemplate"] == ""
    assert fig["data"][0]["text"][0][1] == "0.03"  # still there for a hover template


def test_fit_cell_text_decides_over_every_state_of_the_controls():
    """A slider step with more columns decides for the trace, and its texts shorten too."""
    fig = _grid(4)
    wide = _grid(10)["data"][0]
    fig["layout"]["sliders"] = [{"steps": [
        {"method": "restyle", "args": [{"z": [fig["data"][0]["z"]],
                                        "text": [fig["data"][0]["text"]]}]},
        {"method": "restyle", "args": [{"z": [wide["z"]], "text": [wide["text"]]}]}]}]
    plotting.fit_cell_text(fig)
    assert fig["data"][0]["text"][0][1] == ".08"
    assert fig["layout"]["sliders"][0]["steps"][1]["args"][0]["text"][0][0][1] == ".03"


def test_fit_cell_text_bad_input():
    with pytest.raises(TypeError, match="figure dict"):
        plotting.fit_cell_text([])


def test_clear_controls_moves_a_slider_below_the_x_axis():
    fig = {"data": [{"type": "heatmap", "z": [[1, 2]], "x": ["一碗", "牛肉面"]}],
           "layout": {"xaxis": {"title": {"text": "key"}, "tickangle": -90},
                      "sliders": [{"pad": {"t": 10}, "steps": []}],
                      "updatemenus": [{"y": 1.1, "yanchor": "bottom", "buttons": []}]}}
    depth = plotting.x_axis_depth(fig)
    # the rotated labels (3 characters at 12 px) and a title of 14 px
    assert depth == pytest.approx(6 + 36 + 10 + 1.3 * 14, abs=0.01)
    plotting.clear_controls(fig)
    assert fig["layout"]["sliders"][0]["pad"]["t"] >= depth + plotting.SLIDER_GAP
    assert "pad" not in fig["layout"]["updatemenus"][0]  # above the plot: left alone


def test_clear_colorbar_titles():
    fig = {"data": [{"type": "heatmap", "z": [[1]], "colorbar": {"title": {"text": "weight"}}},
                    {"type": "heatmap", "z": [[1]], "colorbar": {"title": {"text": "w",
                                                                           "side": "right"}}}]}
    plotting.clear_colorbar_titles(fig)
    assert fig["data"][0]["colorbar"]["ticklabelposition"] == "outside bottom"
    assert "ticklabelposition" not in fig["data"][1]["colorbar"]


def test_upright_keeps_subscripts_with_their_character():
    assert plotting.stacked("牛肉面") == "牛<br>肉<br>面"
    assert plotting.stacked("，₂") == "，₂"


@pytest.mark.parametrize("n_keys,angle,ticktext", [
    (2, 0, None),                     # level: "牛肉面" fits its 111 px category
    (8, 0, "牛<br>肉<br>面"),          # one character fits its 27.75 px: upright
    (40, -90, None),                  # not even one: left rotated
])
def test_level_cjk_ticks(n_keys, angle, ticktext):
    keys = ["牛肉面"] + [f"香{chr(0x4e00 + i)}" for i in range(n_keys - 1)]
    fig = {"data": [{"type": "heatmap", "z": [[0] * n_keys], "x": keys}],
           "layout": {"margin": {"l": 40, "r": 20}, "xaxis": {"tickangle": -90}}}
    plotting.level_cjk_ticks(fig)
    axis = fig["layout"]["xaxis"]
    assert axis["tickangle"] == angle
    assert (axis.get("ticktext") or [None])[0] == ticktext


def test_level_cjk_ticks_fits_the_narrowest_layout_of_the_controls():
    """A step that lays the axis out on half the width decides: "牛肉面" fits 2 keys on the
    whole plot level, not on a sixth of it; a hidden axis' domain does not count."""
    keys = ["牛肉面", "香菜"]

    def fig(domain, visible=True):
        return {"data": [{"type": "heatmap", "z": [[0, 0]], "x": keys}],
                "layout": {"margin": {"l": 40, "r": 20}, "xaxis": {"tickangle": -90},
                           "sliders": [{"steps": [{"method": "update", "args": [
                               {}, {"xaxis.domain": domain, "xaxis.visible": visible}]}]}]}}

    level = plotting.level_cjk_ticks(fig([0, 1]))["layout"]["xaxis"]
    assert level["tickangle"] == 0 and "ticktext" not in level
    narrow = plotting.level_cjk_ticks(fig([0, 0.15]))["layout"]["xaxis"]
    assert narrow["ticktext"][0] == "牛<br>肉<br>面"  # 16.7 px a key: one character a line
    hidden = plotting.level_cjk_ticks(fig([0, 0.15], visible=False))["layout"]["xaxis"]
    assert hidden == {"tickangle": 0}
    # a step that narrows the axis but draws no tick labels on it does not count either
    unlabelled = fig([0, 0.15])
    unlabelled["layout"]["sliders"][0]["steps"][0]["args"][1]["xaxis.showticklabels"] = False
    assert plotting.level_cjk_ticks(unlabelled)["layout"]["xaxis"] == {"tickangle": 0}


@pytest.mark.parametrize("n_keys,size", [(21, 11), (24, 10), (30, 11)])
def test_level_cjk_ticks_keeps_rotated_labels_apart(n_keys, size):
    """Too narrow for one character level: rotated (0.82 font sizes across; 21 keys: 13.4 px
    each, room for 11 px labels), at MIN_FONT where
    at 11 px they would stand under TICK_GAP apart (24 keys: 11.75 px each, 9.0 px labels),
    left as they are where not even that keeps them 2.5 px apart (30 keys: 9.4 px)."""
    keys = [f"牛肉{chr(0x4e00 + i)}" for i in range(n_keys)]
    fig = {"data": [{"type": "heatmap", "z": [[0] * n_keys], "x": keys, "showscale": False}],
           "layout": {"margin": {"l": 40, "r": 20},
                      "xaxis": {"tickangle": -90, "tickfont": {"size": 11}}}}
    axis = plotting.level_cjk_ticks(fig)["layout"]["xaxis"]
    assert axis["tickangle"] == -90 and axis["tickfont"]["size"] == size
    category = (plotting.PHONE_FIGURE_WIDTH - 60) / n_keys
    if size == plotting.MIN_FONT:
        assert category - size * plotting.ROTATED_EM >= 2.5


def test_stacked_sets_subscripts_apart_on_request():
    assert plotting.stacked("，₁", subscripts_apart=True) == "，<br>₁"
    assert plotting.stacked("香菜₂", subscripts_apart=True) == "香<br>菜<br>₂"
    assert plotting.stacked("牛肉面", subscripts_apart=True) == "牛<br>肉<br>面"


@pytest.mark.parametrize("n_keys,first", [
    (8, "，₁"),         # 24.75 px of room: "，₁" (19.4 px at 12 px) fits beside its comma
    (13, "，<br>₁"),    # 14.1 px: one character fits, the comma and its subscript do not
])
def test_level_cjk_ticks_sets_a_subscript_below_where_beside_does_not_fit(n_keys, first):
    keys = ["，₁"] + [f"牛肉{chr(0x4e00 + i)}" for i in range(n_keys - 1)]  # too wide level
    fig = {"data": [{"type": "heatmap", "z": [[0] * n_keys], "x": keys}],
           "layout": {"margin": {"l": 40, "r": 20}, "xaxis": {"tickangle": -90}}}
    axis = plotting.level_cjk_ticks(fig)["layout"]["xaxis"]
    assert axis["tickangle"] == 0 and axis["tickvals"] == keys
    assert axis["ticktext"][0] == first
    lines = [line for t in axis["ticktext"] for line in t.split("<br>")]
    # less the colour bar's room, and TICK_GAP between two labels
    bar = plotting._colorbar_px(fig["data"][0])
    room = (plotting.PHONE_FIGURE_WIDTH - 40 - bar) / n_keys - plotting.TICK_GAP
    assert plotting.TICK_GAP >= 2
    assert max(plotting.text_px(line, 12) for line in lines) <= room


def test_panel_title_width_fits_one_panel_of_a_row():
    # chapter 5's explorer: two panels under 60 + 20 px of margins, 0.16 apart, 12 px titles
    columns = plotting.panel_title_width(2, 0.16, 60, 20, size=12)
    panel = (plotting.PHONE_FIGURE_PX - 80) * 0.84 / 2
    assert columns == 16
    assert columns * plotting.COLUMN_EM * 12 <= panel - plotting.EDGE_PX
    assert (columns + 1) * plotting.COLUMN_EM * 12 > panel - plotting.EDGE_PX
    assert plotting.panel_title_width(1, 0, 60, 20, size=12) > 2 * columns
    assert plotting.panel_title_width(3, 0.1, size=16) == 8  # plotly's margins: the floor
    lines = plotting.wrap("gradient norm per layer", columns).split("<br>")
    assert len(lines) == 2 and max(plotting.text_width(line) for line in lines) <= columns


@pytest.mark.parametrize("kwargs,error", [
    ({"n_panels": 0, "spacing": 0.1}, ValueError), ({"n_panels": 2, "spacing": 1}, ValueError),
    ({"n_panels": 2, "spacing": "0.1"}, TypeError), ({"n_panels": 2, "spacing": 0.1, "size": 0},
                                                    ValueError),
])
def test_panel_title_width_bad_input(kwargs, error):
    with pytest.raises(error):
        plotting.panel_title_width(**kwargs)


def test_level_cjk_ticks_leaves_latin_and_changing_labels():
    latin = {"data": [{"type": "heatmap", "z": [[0, 0]], "x": ["pad₁", "一碗"]}],
             "layout": {"xaxis": {"tickangle": -90}}}
    assert plotting.level_cjk_ticks(latin)["layout"]["xaxis"] == {"tickangle": -90}
    changing = {"data": [{"type": "heatmap", "z": [[0, 0]], "x": ["一碗", "辣"]}],
                "layout": {"xaxis": {"tickangle": -90}, "sliders": [{"steps": [
                    {"method": "restyle", "args": [{"x": [["香菜", "辣"]]}]}]}]}}
    assert plotting.level_cjk_ticks(changing)["layout"]["xaxis"] == {"tickangle": -90}


def test_tidy_fits_every_heatmap():
    fig = plotting.tidy(_grid(12))
    assert fig["data"][0]["texttemplate"] == ""
