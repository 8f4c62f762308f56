"""The live face of every explorer: a ``go.FigureWidget`` with ipywidgets controls (Jupyter).

Each chapter module builds its live explorers from :class:`LiveExplorer`; they recompute their
data with the same ``*_data`` functions (in the idea modules) as the static face, for any value of
the controls. A slider without a kernel would be dead, so in the book build (``in_build()``) an
explorer shows, in its cell's place, one line saying what Jupyter adds (``adds``, from the
string table), and no widget. ``explorer.update(**values)`` is what a control change calls;
tests and the benchmark call it directly to check extreme values and to time it (target ≤ 50 ms).
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from IPython.display import HTML, display

from book.face import controls as controls_mod
from book.face.display import in_build
from book.kit import i18n, validate


def stale_hint() -> str:
    """What the static page says under a live explorer (it needs a running kernel)."""
    return i18n.tr("common.stale_hint")


def widgets_for(controls) -> dict[str, widgets.ValueWidget]:
    """The live face's ipywidgets of ``controls`` (:mod:`book.face.controls`), by name: a
    slider, a menu (or a slider over an ordered choice), a text box that redraws on Enter."""
    out = {}
    for c in controls_mod.check(controls):
        if isinstance(c, controls_mod.Slider):
            out[c.name] = widgets.IntSlider(value=c.value, min=c.low, max=c.high, step=c.step,
                                            description=c.label)
        elif isinstance(c, controls_mod.Choice):
            options = [(text, value) for value, text in c.options]
            make = widgets.SelectionSlider if c.slider else widgets.Dropdown
            out[c.name] = make(options=options, value=c.value, description=c.label)
        else:
            out[c.name] = widgets.Text(value=c.value, description=c.label,
                                       continuous_update=False,
                                       **({"layout": {"width": c.width}} if c.width else {}))
    return out


class LiveExplorer:
    """A FigureWidget plus its controls; ``update(**values)`` redraws for new control values."""

    def __init__(self, figure: go.Figure, controls: dict[str, widgets.ValueWidget],
                 redraw: Callable[..., None], rows: list[list[str]] | None = None,
                 adds: str | None = None):
        if adds is not None and (not isinstance(adds, str) or not adds.strip()):
            raise TypeError(f"adds must be one sentence (from the string table) saying what "
                            f"the live face adds in Jupyter, or None; got {adds!r}")
        # what the book's page says in this cell's place: the page has no kernel to run it
        self.adds = adds if adds is not None else i18n.tr("common.live_default")
        if rows is not None:
            flat = [name for row in rows for name in row]
            if sorted(flat) != sorted(controls) or len(flat) != len(set(flat)):
                raise ValueError(f"rows must name every control once, got {rows!r} for "
                                 f"controls {sorted(controls)}")
        self.figure = go.FigureWidget(figure)
        self.controls = controls
        self._redraw = redraw
        self._setting = False  # True while update() sets several controls: redraw once, after
        self.redraws = 0  # how many times the figure was redrawn (tests count it)
        for control in controls.values():
            control.observe(self._on_change, names="value")
        rows = [list(controls)] if rows is None else rows
        # rows of controls that wrap onto a new line rather than squeeze sliders to nothing
        self.control_rows = [widgets.HBox([controls[name] for name in row],
                                          layout={"flex_flow": "row wrap"}) for row in rows]
        self.widget = widgets.VBox([*self.control_rows, self.figure])

    def _on_change(self, _change) -> None:
        if not self._setting:
            self._draw()

    def _draw(self) -> None:
        current = {name: c.value for name, c in self.controls.items()}
        with self.figure.batch_update():
            self._redraw(self.figure, **current)
        self.redraws += 1

    def update(self, **values) -> None:
        """Set any controls given by name, then redraw once from the current control values."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; "
                             f"this explorer has {sorted(self.controls)}")
        for name, value in values.items():
            control = self.controls[name]
            if hasattr(control, "min") and not (control.min <= value <= control.max):
                raise ValueError(f"{name}={value} is outside the slider's range "
                                 f"[{control.min}, {control.max}]")
        self._setting = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._setting = False
        self._draw()

    def _repr_mimebundle_(self, include=None, exclude=None):
        """The widget's bundle, with the stale hint as its text/plain twin (what a front-end
        without the widget's model shows: GitHub, nbviewer, a reopened notebook in VS Code).
        In the book build: one line saying what Jupyter adds (the page has no kernel)."""
        if in_build():
            return {"text/html": f'<p class="book-live-note">{html.escape(self.adds)}</p>',
                    "text/plain": self.adds}
        bundle = self.widget._repr_mimebundle_()
        data = dict(bundle[0] if isinstance(bundle, tuple) else bundle)
        data["text/plain"] = stale_hint()
        return data

    def _ipython_display_(self):
        display(self._repr_mimebundle_(), raw=True)
        if in_build():
            return
        # JupyterLab shows "Error displaying widget: model not found" for a widget saved from
        # an earlier kernel, and never the text/plain twin: say so under the explorer.
        display(HTML(f'<div class="book-live-hint" style="font-size: 12px; color: #555">'
                     f"{stale_hint()}</div>"))


def latency(explorer: LiveExplorer, values: list[dict], repeats: int = 3) -> np.ndarray:
    """Seconds per ``explorer.update(**v)`` call over ``values`` × ``repeats`` (for benchmarks)."""
    repeats = validate.integer("repeats", repeats, low=1, high=1000)
    times = []
    for _ in range(repeats):
        for v in values:
            start = time.perf_counter()
            explorer.update(**v)
            times.append(time.perf_counter() - start)
    return np.array(times)


