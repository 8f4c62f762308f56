"""book.glue with a plotly figure stores the figure's bundle (for a ```{glue} name``` directive)
instead of showing it in the cell, which IPython would do through the figure's
``_ipython_display_``."""

from __future__ import annotations

import IPython
import plotly.graph_objects as go
import pytest

import book
from book.face import display


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

    monkeypatch.setenv("BOOK_BUILD", "1")  # as in the build's kernels
    monkeypatch.setattr(myst_nb, "glue", fake_glue)
    fig = go.Figure(go.Bar(y=[1]))
    book.glue("fig", fig)
    book.glue("x", 1.5)
    assert isinstance(stored["fig"], display._RichOnly) and stored["fig"]._obj is fig
    assert stored["x"] == 1.5


def test_outside_the_build_glue_shows_figures_and_keeps_values_for_glued(monkeypatch):
    """In JupyterLab a glued figure is shown where it is computed (the ```{glue}``` directive
    is the book's), and every glued value is what {eval}`book.glued("key")` shows."""
    import myst_nb

    monkeypatch.delenv("BOOK_BUILD", raising=False)
    shown, stored = [], {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: stored.update(
        {name: value}))
    monkeypatch.setattr("IPython.display.display", lambda value: shown.append(value))
    fig = go.Figure(go.Bar(y=[1]))
    book.glue("fig_x", fig)
    book.glue("pi_ish", 3.14159)
    book.glue("label", "close to 2")
    book.glue("count", 12)
    assert shown == [fig] and stored == {}  # shown here, not glued for a page
    assert str(book.glued("pi_ish:.2f")) == "3.14" and repr(book.glued("pi_ish")) == "3.14159"
    assert str(book.glued("label")) == "close to 2"  # a string: no quotes, as {glue:text}
    assert str(book.glued("count:.1f")) == "12.0" and str(book.glued("count:,")) == "12"
    assert str(book.glued("09_long_context.ipynb::pi_ish:.1f")) == "3.1"
    with pytest.raises(KeyError, match="Run All"):
        book.glued("never_glued:.1f")
    with pytest.raises(ValueError, match="not a glue name"):
        book.glued("1bad")
    with pytest.raises(ValueError, match="cannot format"):
        book.glued("label:.2f")
    with pytest.raises(TypeError, match="glue key"):
        book.glued(3)


def test_glued_formats_like_myst_nbs_glue_text():
    from myst_nb.core.variables import format_plain_text

    for value, spec in [(3.14159, ".2f"), (12, ".0f"), (0.5, ".1%"), (2.0, "d"), (1234567, ","),
                        (1e-9, ".1e"), ("text", ""), (7, "")]:
        assert display.format_like_glue(value, spec) == format_plain_text(repr(value), spec)
