"""The live face of every explorer: a ``go.FigureWidget`` with ipywidgets controls (Jupyter).

Each chapter module builds its live explorers from :class:`LiveExplorer`; they recompute their
data with the same ``*_data`` functions (in the idea modules) as the static face, for any value of
the controls. In the book these cells are tagged ``remove-output``: a slider without a kernel
would be dead. ``explorer.update(**values)`` is what a control change calls; tests and the
benchmark call it directly to check extreme values and to time it (target ≤ 50 ms).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from IPython.display import display

from . import validate


class LiveExplorer:
    """A FigureWidget plus its controls; ``update(**values)`` redraws for new control values."""

    def __init__(self, figure: go.Figure, controls: dict[str, widgets.ValueWidget],
                 redraw: Callable[..., None]):
        self.figure = go.FigureWidget(figure)
        self.controls = controls
        self._redraw = redraw
        self._setting = False  # True while update() sets several controls: redraw once, after
        self.redraws = 0  # how many times the figure was redrawn (tests count it)
        for control in controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox(list(controls.values())), self.figure])

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

    def _ipython_display_(self):
        display(self.widget)


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


