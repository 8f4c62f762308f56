"""A light book: the vendored plotly.js bundle matches the installed plotly and holds
every trace type the book draws; figures embed a slim template that looks the same.

The built pages' weights (≤ 4 MB per chapter, ≤ 1.5 MB without figures, as Chromium loads them)
are checked in the browser test's visit of every page (tests/test_browser.py,
page_checks.page_weight_problems, whose limits are tried here) and printed by ``make bench``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from conftest import ROOT

from book.face import display
from book.site import sphinxext

BUNDLE = ROOT / "assets" / "vendor" / "plotly" / sphinxext.PLOTLY_BUNDLE


def test_vendored_plotlyjs_is_the_installed_plotlys_version():
    import plotly.offline

    assert sphinxext.vendored_plotlyjs_version() == plotly.offline.get_plotlyjs_version(), (
        "the vendored bundle differs from the plotly.js that plotly generates figures "
        "for; run `python assets/vendor/plotly/refresh.py`")
    source = json.loads((BUNDLE.parent / "SOURCE.json").read_text(encoding="utf-8"))
    assert source["version"] == sphinxext.vendored_plotlyjs_version()
    assert source["sha256"] == hashlib.sha256(BUNDLE.read_bytes()).hexdigest()
    assert "MIT" in (BUNDLE.parent / "LICENSE").read_text(encoding="utf-8")
    # every package whose code is in the bundle has its licence shipped beside it
    third_party = (BUNDLE.parent / "THIRD_PARTY_LICENSES.txt").read_text(encoding="utf-8")
    others = {k: v for k, v in source["bundled"].items() if k != "plotly.js"}
    assert others, "SOURCE.json lists no bundled package"
    for name, info in others.items():
        assert f"\n{name} {info['version']} ({info['license']})\n" in third_party, name
    # the traces it was built with are the ones it registers, and the ones the book draws
    assert set(source["traces"]) == _bundle_traces() == set(display.TEMPLATE_TRACES)


def test_a_mismatched_bundle_stops_the_build(tmp_path, monkeypatch):
    fake = tmp_path / "plotly" / sphinxext.PLOTLY_BUNDLE
    fake.parent.mkdir()
    fake.write_text("/**\n* plotly.js (book: scatter - minified) v0.0.1\n*/\n", encoding="utf-8")
    monkeypatch.setattr(sphinxext, "VENDOR", tmp_path)
    with pytest.raises(RuntimeError, match="refresh.py"):
        sphinxext.plotly_js_path()
    fake.write_text("not plotly", encoding="utf-8")
    with pytest.raises(ValueError, match="banner"):
        sphinxext.vendored_plotlyjs_version(fake)


def _bundle_traces() -> set[str]:
    text = BUNDLE.read_text(encoding="utf-8")
    return set(re.findall(r'moduleType:"trace",name:"(\w+)"', text))


def _traces_in_sources() -> set[str]:
    """Trace types the book's code and notebooks construct (go.X(...), add_x(...), type=...)."""
    found = set()
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "book").rglob("*.py")]
    sources += [p.read_text(encoding="utf-8") for p in (ROOT / "chapters").glob("*.ipynb")]
    for text in sources:
        for name in re.findall(r"\bgo\.([A-Z][A-Za-z0-9]*)\(", text):
            if name not in {"Figure", "FigureWidget", "Layout"}:
                found.add(name.lower())
        found.update(re.findall(r"\.add_(scatter|bar|heatmap|histogram\w*|box|violin|pie|"
                                r"contour|image|scatter\w+|surface|mesh3d)\(", text))
        found.update(re.findall(r"""["']type["']\s*:\s*["'](scatter\w*|bar|heatmap|pie|box)""",
                                text))
    assert "plotly.express" not in " ".join(sources), "px figures: check their trace types"
    return found


def test_every_trace_type_the_book_draws_is_in_the_bundle_and_the_template():
    used = _traces_in_sources()
    assert used >= {"scatter", "heatmap", "bar"}, used  # the scan finds what is there
    assert used <= _bundle_traces(), f"not in the vendored bundle: {used - _bundle_traces()}"
    assert used <= set(display.TEMPLATE_TRACES)


def test_slim_template_styles_the_used_traces_like_plotlys_default():
    full = pio.templates["plotly"]
    slim = display.slim_template()
    assert len(json.dumps(slim.to_plotly_json())) < len(json.dumps(full.to_plotly_json())) / 2
    for trace in display.TEMPLATE_TRACES:
        assert slim.data[trace] == full.data[trace]
    for key in ("colorway", "xaxis", "yaxis", "colorscale", "plot_bgcolor",
                "paper_bgcolor", "hoverlabel", "annotationdefaults"):
        assert slim.layout[key] == full.layout[key], key
    # the one change: the font family names the book's CJK subset font first
    assert slim.layout.font.color == full.layout.font.color
    assert slim.layout.font.family.startswith('"Book Noto Sans SC"')


def test_setup_makes_figures_embed_the_slim_template():
    before = pio.templates.default
    try:
        display.setup()
        fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
        embedded = fig.to_plotly_json()["layout"]["template"]
        assert embedded == display.slim_template().to_plotly_json()
        assert len(json.dumps(embedded)) < 3000
    finally:
        pio.templates.default = before


def test_page_weight_problems_names_each_kind(tmp_path):
    """The built pages' weights are checked in test_browser.py's visit of every page
    (page_checks.page_weight_problems): here, that each limit it holds can fail."""
    import page_checks

    from book.site import fonts

    (tmp_path / "index.html").write_text('<script src="_static/vendor/mathjax/tex.js">',
                                          encoding="utf-8")

    def row(page, mb, figures=1, painted=True, cjk=()):
        return {"page": page, "edition": "zh" if page.startswith("zh/") else "en",
                "bytes": round(mb * 1e6), "cjk_font": 0, "cjk_fonts": [Path(c) for c in cjk],
                "figures": figures, "first_ms": 5.0 if painted else None,
                "last_ms": 9.0 if painted else None}

    light = [row(f"chapters/{i:02}.html", 3.9) for i in range(10)]
    assert page_checks.page_weight_problems(tmp_path, light) == [
        "index.html: the landing page holds no math, yet loads MathJax"]
    (tmp_path / "index.html").write_text("<p>no math</p>", encoding="utf-8")
    assert page_checks.page_weight_problems(tmp_path, light) == []
    found = page_checks.page_weight_problems(tmp_path, light[1:] + [
        row("chapters/heavy.html", 4.1), row("glossary.html", 1.6, figures=0),
        row("chapters/blank.html", 1.0, painted=False),
        row("zh/glossary.html", 0.5, figures=0, cjk=[fonts.SUBSET_ZH.name])])
    assert found == ["chapters/heavy.html: 4,100,000 B (CJK font 0 B) > 4,000,000",
                     "glossary.html: 1,600,000 B without figures > 1,500,000",
                     "chapters/blank.html: a figure never painted",
                     f"zh/glossary.html: loads the whole {fonts.SUBSET_ZH.name}, not its own "
                     "subset"], found
    assert page_checks.page_weight_problems(tmp_path, light[:9])[0].startswith(
        "9 pages with figures (at least 10)")


def test_the_build_stops_on_a_trace_the_bundle_lacks(monkeypatch):
    """In the build's kernels a figure the pages could not draw is an error naming the fix; in
    a reader's Jupyter (full plotly.js) the same figure is shown."""
    display.setup()
    renderer = pio.renderers["book"]
    pie = go.Figure(go.Pie(values=[1, 2])).to_plotly_json()
    heatmap = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])).to_plotly_json()
    monkeypatch.setenv(display.BUILD_ENV, "1")
    with pytest.raises(ValueError, match=r"pie traces.*refresh\.py"):
        renderer.to_mimebundle(pie)
    assert "Plotly.newPlot" in renderer.to_mimebundle(heatmap)["text/html"]
    monkeypatch.setenv(display.BUILD_ENV, "0")
    assert "Plotly.newPlot" in renderer.to_mimebundle(pie)["text/html"]
