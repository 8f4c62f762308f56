"""The live explorers' layout in Jupyter: rows of controls, the stale-widget hint, and controls
that only matter for some settings greyed out when they don't."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from book.chapters import ch03_walkthrough, ch10_beyond
from book.face import live


def _explorer(rows=None):
    import ipywidgets as widgets

    controls = {"a": widgets.IntSlider(value=1, min=0, max=3),
                "b": widgets.IntSlider(value=2, min=0, max=3)}
    return live.LiveExplorer(go.Figure(go.Bar(y=[1, 2])), controls,
                             lambda fig, a, b: setattr(fig.data[0], "y", [a, b]), rows=rows)


def test_rows_must_name_every_control_once():
    assert len(_explorer().control_rows) == 1
    assert [len(r.children) for r in _explorer([["a"], ["b"]]).control_rows] == [1, 1]
    for bad in ([["a"]], [["a", "a"], ["b"]], [["a", "b", "c"]]):
        with pytest.raises(ValueError, match="rows must name every control once"):
            _explorer(bad)


def test_stale_hint_is_the_text_twin_and_shown_under_the_explorer(monkeypatch):
    explorer = _explorer()
    bundle = explorer._repr_mimebundle_()
    assert bundle["text/plain"] == live.stale_hint() and "run this cell" in live.stale_hint()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    shown = []
    monkeypatch.setattr(live, "display",
                        lambda obj, raw=False: shown.append((obj, raw)))
    explorer._ipython_display_()
    assert shown[0] == (bundle, True)
    assert live.stale_hint() in shown[1][0].data


def test_walkthrough_controls_in_two_rows():
    explorer = ch03_walkthrough.walkthrough_live()
    assert [[c.description for c in row.children] for row in explorer.control_rows] == \
        [["step", "edit"], ["row", "column", "value"]]


def test_pattern_explorer_greys_out_sliders_that_do_nothing():
    explorer = ch10_beyond.pattern_live()
    c = explorer.controls
    expected = {"full": (True, True), "window": (True, True), "dilated": (False, True),
                "hybrid": (True, False)}
    for kind, (dilation_off, global_off) in expected.items():
        explorer.update(kind=kind)
        assert (c["dilation"].disabled, c["n_global"].disabled) == (dilation_off, global_off)


def test_the_book_shows_what_jupyter_adds_in_place_of_the_widget(monkeypatch):
    """In the book build an explorer shows one line (its ``adds``, from the string table) and
    no widget; in Jupyter the widget and the stale hint. Every chapter's explorer names its own
    line."""
    from book.kit import i18n

    shown = []
    monkeypatch.setattr(live, "display", lambda obj, raw=False: shown.append((obj, raw)))
    monkeypatch.setenv("BOOK_BUILD", "1")
    explorer = ch03_walkthrough.walkthrough_live()
    bundle = explorer._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"] == i18n.tr("ch03.live_adds_walkthrough")
    assert bundle["text/plain"].startswith("In Jupyter, this cell")
    assert bundle["text/html"] == (f'<p class="book-live-note">{bundle["text/plain"]}</p>')
    explorer._ipython_display_()
    assert shown == [(bundle, True)]
    assert _explorer()._repr_mimebundle_()["text/plain"] == i18n.tr("common.live_default")
    monkeypatch.setenv("BOOK_BUILD", "0")
    assert "application/vnd.jupyter.widget-view+json" in explorer._repr_mimebundle_()
    with pytest.raises(TypeError, match="adds must be one sentence"):
        live.LiveExplorer(go.Figure(), {}, lambda fig: None, adds="")


def test_every_live_face_says_what_it_adds():
    """Each ``*_live`` function of the chapter modules passes its own line to LiveExplorer."""
    import ast
    from pathlib import Path

    from book.kit import i18n

    missing, found = [], 0
    for path in sorted((Path(live.__file__).parents[1] / "chapters").glob("ch*.py")):
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            builds = (isinstance(func, ast.Name) and func.id == "LiveExplorer") or (
                isinstance(func, ast.Attribute) and func.attr == "__init__"
                and isinstance(func.value, ast.Call) and getattr(func.value.func, "id", "")
                == "super" and "(LiveExplorer)" in source)
            if builds:
                found += 1
                if not any(k.arg == "adds" for k in node.keywords):
                    missing.append(f"{path.name}:{node.lineno}")
    assert found >= 13 and not missing, f"LiveExplorer without adds= at {missing}"
    adds = [k for k in i18n.table() if ".live_adds_" in k]
    assert len(adds) >= 14, adds
