"""book/site/static_figures.py: a figure's still (controls off, one line naming them), the
names make figures gives its files, and the figures it finds in an executed notebook."""

from __future__ import annotations

import json

import pytest

from book.kit import i18n
from book.site import static_figures


def _slider_figure() -> dict:
    steps = [{"label": f"{d}", "method": "update",
              "args": [{"visible": [i == j for j in range(3)]}]}
             for i, d in enumerate((1, 64, 512))]
    return {"data": [{"type": "bar", "y": [1, 2]}],
            "layout": {"title": {"text": "var(q·k)"}, "margin": {"b": 160},
                       "sliders": [{"active": 0, "currentvalue": {"prefix": "d_k = "},
                                    "steps": steps}],
                       "updatemenus": [{"buttons": [{"label": "raw"}, {"label": "scaled"}]}]},
            "config": {"responsive": True}}


def test_still_takes_the_controls_off_and_names_them():
    fig = _slider_figure()
    i18n.set_language("en")
    picture, note = static_figures.still(fig)
    assert "sliders" not in picture["layout"] and "updatemenus" not in picture["layout"]
    assert "config" not in picture and picture["data"] == fig["data"]
    assert picture["layout"]["margin"]["b"] == 80  # the controls' room below the plot is freed
    assert "d_k = (1 … 512)" in note and "raw, scaled" in note, note
    assert "sliders" in fig["layout"], "the page's figure itself is left as it was"
    i18n.set_language("zh")
    try:
        assert static_figures.still(fig)[1].startswith("在 HTML 版和 Jupyter 中可以调节")
    finally:
        i18n.set_language("en")


def test_a_figure_without_controls_gets_no_note():
    picture, note = static_figures.still({"data": [], "layout": {"height": 300}})
    assert note == "" and static_figures.size(picture) == (static_figures.DEFAULT_WIDTH, 300)


@pytest.mark.parametrize("bad", [None, [], "fig", {"layout": {}}])
def test_still_rejects_what_is_not_a_figure(bad):
    with pytest.raises(TypeError, match="plotly figure as a dict"):
        static_figures.still(bad)


def test_figure_names_say_chapter_place_and_title():
    fig = {"data": [], "layout": {"title": {"text": "Weights <b>per</b> head: 一碗"}}}
    assert static_figures.figure_name("03_walkthrough", 2, fig) == \
        "03_walkthrough-fig02-weights-per-head-一碗"
    assert static_figures.figure_name("01_intuition", 11, {"data": []}) == "01_intuition-fig11"


def test_notebook_figures_in_page_order_with_pasted_glue_without_live_faces(tmp_path):
    def cell(n, tags=()):
        return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": "",
                "outputs": [{"output_type": "display_data",
                             "data": {static_figures.PLOTLY_MIME: {"data": [], "n": n},
                                      "text/html": "<div></div>"}}]}
    nb = {"cells": [cell(1), {"cell_type": "markdown", "metadata": {}, "source": "x"},
                    cell(2, ["remove-output"]), cell(3)], "metadata": {}}
    nb["cells"][1]["source"] = "text\n```{glue} fig_a\n```\n"
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    glued = {"fig_a": {"data": {static_figures.PLOTLY_MIME: {"data": [], "n": "a"}}},
             "fig_b": {"data": {static_figures.PLOTLY_MIME: {"data": [], "n": "b"}}}}
    (tmp_path / "nb.glue.json").write_text(json.dumps(glued), encoding="utf-8")
    # the glued figure where the markdown pastes it; fig_b is glued but never pasted
    assert [f["n"] for f in static_figures.notebook_figures(path)] == [1, "a", 3]


def test_exporter_refuses_an_unknown_format(tmp_path):
    exporter = static_figures.Exporter()
    exporter._started = True  # no browser needed to refuse the format
    with pytest.raises(ValueError, match="png, svg or pdf"):
        exporter.write({"data": []}, tmp_path / "x.gif")
