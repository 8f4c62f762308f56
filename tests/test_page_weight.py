"""A light book: the vendored plotly.js bundle matches the installed plotly and holds
every trace type the book draws; figures embed a slim template that looks the same.

The built pages' weights (≤ 4 MB per chapter, ≤ 1.5 MB without figures, as Chromium loads them)
are checked by the slow test at the end and printed by ``make bench``.
"""

from __future__ import annotations

import hashlib
import json
import re

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from conftest import ROOT

from book.face import display
from book.site import sphinxext

BUNDLE = ROOT / "assets" / "vendor" / "plotly" / sphinxext.PLOTLY_BUNDLE
CHAPTER_LIMIT, PLAIN_LIMIT = 4_000_000, 1_500_000


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


@pytest.fixture(scope="module")
def html_roots(built_book, built_zh):
    """The html roots to measure: the English edition's, and the Chinese edition's (published
    under the English root as zh/ by ``make book``; in the tests, its own build)."""
    import bench_pages

    roots = bench_pages.html_roots(built_book["html"])
    if len(roots) == 1 and (built_zh["html"] / "index.html").is_file():
        roots.append(built_zh["html"])
    return roots


@pytest.fixture(scope="module")
def loaded_pages(html_roots):
    """Each built page as Chromium loads it from file:// (see tests/bench_pages.py), with the
    CJK font's share of it; printed."""
    import bench_pages

    rows = bench_pages.browser_roots(html_roots)
    bench_pages.report_pages(rows)
    return rows


@pytest.mark.slow
def test_pages_without_figures_are_light_and_every_figure_paints(html_roots, loaded_pages):
    """First-paint times are printed (``make bench`` reports them too) but not asserted: on a
    busy shared machine they measure the machine as much as the page."""
    assert len(html_roots) == 2, "both editions are measured"
    for root in html_roots:
        index = (root / "index.html").read_text(encoding="utf-8")
        assert "vendor/mathjax/" not in index, "the landing page holds no math: no MathJax there"
    assert {r["edition"] for r in loaded_pages} == {"en", "zh"}
    for code in ("en", "zh"):
        edition = [r for r in loaded_pages if r["edition"] == code]
        chapters = [r for r in edition if r["figures"]]
        assert len(chapters) >= 10, (code, [r["page"] for r in edition])
    for r in loaded_pages:
        if not r["figures"]:
            assert r["bytes"] <= PLAIN_LIMIT, f"{r['page']}: {r['bytes']:,} > {PLAIN_LIMIT:,}"
        else:
            assert r["first_ms"] is not None and r["last_ms"] is not None, \
                f"{r['page']}: a figure never painted"


# Chapters allowed over 4 MB until they come down, each with the most it may weigh: none now
# (the heaviest, the Chinese chapter 8b, was 4.06 MB with a CJK font of its own until the
# search index stopped loading on every page: book/site/sphinxext.py).
KNOWN_OVER: dict[str, int] = {}


@pytest.mark.slow
def test_chapter_pages_weigh_at_most_4_mb(loaded_pages):
    """Every chapter, in both editions, at most 4 MB (those of KNOWN_OVER at most their own
    limit); a Chinese page loads a CJK subset of its own characters, never the edition's
    whole one (book/site/page_fonts.py)."""
    from book.site import fonts

    over = [f"{r['page']}: {r['bytes']:,} B (CJK font {r['cjk_font']:,} B)"
            for r in loaded_pages
            if r["figures"] and r["bytes"] > KNOWN_OVER.get(r["page"], CHAPTER_LIMIT)]
    weights = {r["page"]: r["bytes"] for r in loaded_pages}
    print(f"\nchapters over 4 MB (known open): "
          f"{ {page: weights.get(page) for page in KNOWN_OVER} }")
    fixed = [page for page in KNOWN_OVER if page in weights and weights[page] <= CHAPTER_LIMIT]
    whole = [r["page"] for r in loaded_pages if r["edition"] == "zh"
             and any(f.name == fonts.SUBSET_ZH.name for f in r["cjk_fonts"])]
    assert not over, f"chapters over their limit (4 MB; {KNOWN_OVER}): {over}"
    assert not fixed, f"{fixed} now weigh at most 4 MB: drop them from KNOWN_OVER"
    assert not whole, f"Chinese pages loading the whole {fonts.SUBSET_ZH.name}: {whole}"


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
