"""book.face.figures: the page's <figure> around each plotly figure (issue 47). What the page
script does with it is checked in a browser by tests/test_browser_figures.py."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

from book.face import display, figures
from book.kit import i18n


def _slider_figure() -> go.Figure:
    fig = go.Figure(go.Heatmap(z=[[0.2, 0.8], [0.6, 0.4]], x=["k1", "k2"], y=["q1", "q2"]))
    steps = [{"label": f"L{i}", "method": "restyle", "args": [{"z": [[[i, 0], [0, i]]]}]}
             for i in range(3)]
    fig.update_layout(height=500, xaxis_title="key", yaxis_title="query",
                      sliders=[{"active": 1, "steps": steps, "pad": {"t": 60},
                                "currentvalue": {"prefix": "layer: "}}],
                      updatemenus=[{"buttons": [{"label": "one", "method": "update", "args": []},
                                                {"label": "two <b>b</b>", "method": "update",
                                                 "args": []}], "active": 1}])
    return fig


def test_describe_keeps_both_texts_in_meta_and_returns_the_figure():
    fig = go.Figure(layout={"meta": {"book_controls": ["d_k"]}})
    assert figures.describe(fig, alt="A chart.", caption="It grows.") is fig
    assert figures.described(fig.to_dict()) == ("A chart.", "It grows.")
    assert fig.layout.meta["book_controls"] == ["d_k"]  # what was there stays


@pytest.mark.parametrize("alt, caption", [("", "c"), ("a", "  "), (None, "c"), ("a", 3)])
def test_describe_refuses_an_empty_or_missing_text(alt, caption):
    with pytest.raises(ValueError, match="non-empty sentence"):
        figures.describe(go.Figure(), alt=alt, caption=caption)


def test_describe_refuses_what_is_not_a_figure():
    with pytest.raises(TypeError, match="go.Figure"):
        figures.describe({"data": []}, alt="a", caption="c")


def test_the_page_figure_is_named_captioned_and_its_drawing_hidden():
    fig = figures.describe(_slider_figure(), alt='Heatmap of "weights" <2×2>.',
                           caption="Rows are queries & columns keys.")
    page = figures.figure_html(fig.to_dict(), '<div id="fig-1"></div>', "fig-1")
    assert page.startswith('<figure class="book-figure" aria-label="Heatmap of &quot;weights'
                           '&quot; &lt;2×2&gt;."')
    assert "data-undescribed" not in page
    assert '<div class="book-figure-plot" aria-hidden="true"><div id="fig-1"></div></div>' in page
    assert '<figcaption id="fig-1-caption">Rows are queries &amp; columns keys. <details' in page
    assert page.endswith('</div></details></figcaption><p class="book-figure-status" '
                         'role="status" aria-live="polite"></p></figure>')
    assert "aria-describedby" not in page  # the caption is read where it stands, not twice
    assert 'data-x="key" data-y="query"' in page
    assert re.search(r'<p class="book-figure-status" role="status" aria-live="polite">', page)


def test_the_plotly_controls_become_a_range_and_a_select_at_their_active_entries():
    page = figures.figure_html(_slider_figure().to_dict(), "", "fig-2")
    assert ('<label class="book-figure-control">layer <input type="range" min="0" max="2" '
            'step="1" value="1" aria-valuetext="L1" data-slider="0" data-figure="fig-2"> '
            '<span class="book-figure-value" aria-hidden="true">L1</span></label>') in page
    options = re.search(r'<select data-menu="0" data-figure="fig-2">(.*?)</select>', page)[1]
    assert options == '<option value="0">one</option><option value="1" selected>two b</option>'


def test_an_undescribed_figure_falls_back_to_its_title_and_axes_and_is_marked():
    i18n.set_language("en")
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]),
                    layout={"title": {"text": "Variance<br>grows"}, "xaxis_title": "d_k",
                            "yaxis_title": "var"})
    page = figures.figure_html(fig.to_dict(), "", "fig-3")
    assert 'aria-label="Plot (scatter) of var against d_k."' in page
    assert '<figcaption id="fig-3-caption">Variance grows <details' in page
    assert " data-undescribed" in page


def test_the_page_layout_hides_the_controls_and_gives_back_their_room():
    layout = _slider_figure().to_dict()["layout"]
    page = figures.page_layout(layout)
    assert [s["visible"] for s in page["sliders"] + page["updatemenus"]] == [False, False]
    assert page["height"] == 500 - 60  # the slider's top pad
    assert "visible" not in layout["sliders"][0] and layout["height"] == 500  # not changed


def test_the_book_renderer_wraps_the_page_html_and_leaves_jupyters_json_as_it_was():
    display.setup()
    fig = figures.describe(_slider_figure(), alt="A heatmap.", caption="It shows weights.")
    bundle = fig._repr_mimebundle_()
    page = bundle["text/html"]
    assert page.startswith('<figure class="book-figure" aria-label="A heatmap."')
    assert '"displayModeBar": false' in page
    data = bundle["application/vnd.plotly.v1+json"]
    assert "visible" not in data["layout"]["sliders"][0]   # JupyterLab keeps plotly's slider
    assert data["layout"]["height"] == 500
    assert "displayModeBar" not in data["config"]


def test_a_diagram_lists_its_words_in_order_instead_of_a_data_table():
    i18n.set_language("en")
    from book.face import diagrams

    fig = diagrams.kv_cache(n_cached=2)
    page = figures.figure_html(fig.to_dict(), "", "fig-4")
    words = re.findall(r"<li>(.*?)</li>", page)
    assert words[:3] == ["new token 3", "q, k, v of token 3 only", "keys: 2 cached + 1 new"]
    assert "book-figure-tables" not in page and "data-diagram" in page
    assert figures.described(fig.to_dict())[1].startswith("Only the new token")
    i18n.set_language("zh")
    try:
        alt, caption = figures.described(diagrams.norm_placement().to_dict())
        assert "Post-LN" in alt and "层归一化" in caption
    finally:
        i18n.set_language("en")


def test_a_menu_entry_that_sets_the_height_sets_it_lower_by_the_same_room():
    layout = _slider_figure().to_dict()["layout"]
    layout["updatemenus"][0]["buttons"][1]["args"] = [{}, {"height": 700, "margin.t": 90}]
    page = figures.page_layout(layout)
    assert page["updatemenus"][0]["buttons"][1]["args"] == [{}, {"height": 640, "margin.t": 90}]
    assert layout["updatemenus"][0]["buttons"][1]["args"][1]["height"] == 700  # not changed
