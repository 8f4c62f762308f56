"""book.glue with a plotly figure stores the figure's bundle (for a ```{glue} name``` directive)
instead of showing it in the cell, which IPython would do through the figure's
``_ipython_display_``."""

from __future__ import annotations

import IPython
import plotly.graph_objects as go

import book
from book import display


def test_rich_only_offers_the_book_renderers_bundle_and_a_stable_repr():
    book.setup()
    fig = go.Figure(go.Bar(y=[1, 2]))
    bundle, _ = IPython.core.formatters.format_display_data(display._RichOnly(fig))
    assert {"text/html", "application/vnd.plotly.v1+json"} <= set(bundle)
    assert "Plotly.newPlot" in bundle["text/html"]
    assert bundle["text/plain"] == "<Figure>"


def test_glue_wraps_figures_and_leaves_numbers_alone(monkeypatch):
    stored = {}

    def fake_glue(name, value, display=True):
        stored[name] = value

    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", fake_glue)
    fig = go.Figure(go.Bar(y=[1]))
    book.glue("fig", fig)
    book.glue("x", 1.5)
    assert isinstance(stored["fig"], display._RichOnly) and stored["fig"]._obj is fig
    assert stored["x"] == 1.5
