"""book.display: the renderer emits both faces of a figure, deterministically; glue and source."""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
import pytest

import book
from book import display


def render(fig):
    return pio.renderers["book"].to_mimebundle(fig.to_dict())


def test_renderer_emits_html_without_plotlyjs_and_json():
    book.setup()
    bundle = render(go.Figure(go.Bar(y=[1, 2])))
    assert set(bundle) == {"text/html", "application/vnd.plotly.v1+json"}
    html = bundle["text/html"]
    assert "Plotly.newPlot" in html and "cdn" not in html.lower()
    assert len(html) < 20_000  # the library itself is not inlined
    assert pio.renderers.default == "book"


def test_renderer_output_repeats_after_setup():
    book.setup()
    first = render(go.Figure(go.Bar(y=[1, 2])))["text/html"]
    book.setup()
    assert render(go.Figure(go.Bar(y=[1, 2])))["text/html"] == first


def test_setup_seeds_everything():
    import numpy as np
    import torch

    book.setup(3)
    a = (np.random.rand(), torch.rand(1).item())
    book.setup(3)
    assert (np.random.rand(), torch.rand(1).item()) == a
    with pytest.raises(ValueError):
        book.setup(-1)


def test_glue_returns_plain_values_and_checks_names():
    assert display.glue("x_1", 2.5) is None  # a cell ending in glue shows nothing
    with pytest.raises(ValueError, match="identifier"):
        display.glue("not a name", 1)


def test_show_source(capsys):
    book.show_source(display.glue)
    with pytest.raises(TypeError, match="defined in a file"):
        book.show_source(3)
