"""Notebook plumbing: seeding, the plotly renderer, glued numbers and source listings."""

from __future__ import annotations

import hashlib
import inspect
import json
import random
import textwrap

import numpy as np

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True,
                 "modeBarButtonsToRemove": ["sendDataToCloud"]}
SEED = 0
_figure_counter = 0


def setup(seed: int = SEED) -> None:
    """Seed python, numpy and torch, and make plotly figures render in Jupyter *and* the book.

    Plotly's default renderer under nbclient emits only ``application/vnd.plotly.v1+json``,
    which MyST-NB does not render. The ``book`` renderer adds a ``text/html`` bundle that
    expects plotly.js to be on the page already (the book's Sphinx extension puts it there,
    from the build's own ``_static``; no CDN). JupyterLab keeps using the plotly mimetype.
    """
    global _figure_counter
    from . import validate

    seed = validate.integer("seed", seed, low=0)
    random.seed(seed)
    np.random.seed(seed)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency, but chapters 1-2 need little
        torch = None
    if torch is not None:
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True, warn_only=True)
    _figure_counter = 0
    _register_renderer()
    _use_slim_template()


def _register_renderer() -> None:
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    class BookRenderer(MimetypeRenderer):
        def to_mimebundle(self, fig_dict):
            global _figure_counter
            _figure_counter += 1
            payload = pio.to_json(fig_dict, validate=False)
            digest = hashlib.sha1(payload.encode()).hexdigest()[:8]
            div_id = f"fig-{_figure_counter}-{digest}"  # deterministic: same output twice
            html = pio.to_html(fig_dict, include_plotlyjs=False, full_html=False,
                               config=PLOTLY_CONFIG, div_id=div_id, validate=False)
            data = json.loads(payload)
            data["config"] = PLOTLY_CONFIG
            return {"application/vnd.plotly.v1+json": data, "text/html": html}

    pio.renderers["book"] = BookRenderer()
    pio.renderers.default = "book"


# Every figure embeds its template. Plotly's default one styles ~30 trace types and 3-D, polar,
# ternary and map axes (7 KB per figure); the book draws only these traces on x/y axes.
TEMPLATE_TRACES = ("scatter", "heatmap", "bar")
_TEMPLATE_LAYOUT_DROP = ("polar", "ternary", "scene", "geo")


def slim_template():
    """Plotly's default template cut to what the book's figures use: the same look, ~2.5 KB."""
    import plotly.graph_objects as go
    import plotly.io as pio

    full = pio.templates["plotly"].to_plotly_json()
    data = {k: v for k, v in full["data"].items() if k in TEMPLATE_TRACES}
    layout = {k: v for k, v in full["layout"].items() if k not in _TEMPLATE_LAYOUT_DROP}
    return go.layout.Template(data=data, layout=layout)


def _use_slim_template() -> None:
    import plotly.io as pio

    if "book" not in pio.templates:
        pio.templates["book"] = slim_template()
    pio.templates.default = "book"


def glue(name: str, value, display: bool = False) -> None:
    """Store ``value`` under ``name`` for the prose (``{glue:text}`name:.2f```).

    Uses MyST-NB's glue when it is installed (the book build); in a plain Jupyter session it
    does nothing, so the notebook runs without the build tools. Returns None, so a cell that
    ends with a glue call shows nothing extra.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"glue name must be a Python identifier, got {name!r}")
    if isinstance(value, np.generic):  # np.float64(…) reprs would not format in the prose
        value = value.item()
    if hasattr(value, "_ipython_display_") and hasattr(value, "_repr_mimebundle_"):
        value = _RichOnly(value)  # a plotly figure: glue its bundle, don't show it here
    try:
        from myst_nb import glue as _glue
    except ImportError:
        return None
    _glue(name, value, display=display)
    return None


class _RichOnly:
    """Only the rich representation of ``obj``, for glue.

    IPython prefers an object's ``_ipython_display_`` to its mime bundle: a plotly figure
    glued as it is would be *shown* in the cell (and nothing stored). This wrapper offers the
    bundle alone, so ``glue("fig", fig)`` stores the figure for a ```{glue} fig``` directive.
    """

    def __init__(self, obj):
        self._obj = obj

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self._obj._repr_mimebundle_()

    def __repr__(self) -> str:  # the text/plain twin: the same on every run
        return f"<{type(self._obj).__name__}>"


def show_source(obj) -> None:
    """Display the source of a function or class of ``book`` as a highlighted listing.

    The chapter shows the one copy that the tests exercise, never a pasted twin.
    """
    from IPython.display import Markdown, display

    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as err:
        raise TypeError(f"show_source needs a function, class or module defined in a file, "
                        f"got {obj!r}: {err}") from None
    display(Markdown(f"```python\n{textwrap.dedent(source).rstrip()}\n```"))


class Matrix:
    """A labelled matrix for the page: a small HTML table with its name and shape (and text)."""

    def __init__(self, name: str, values, rows=None, cols=None, digits: int = 2):
        from . import validate

        self.values = validate.array(name, values, ndim=2)
        n, m = self.values.shape
        self.name = name
        self.rows = [str(r) for r in (range(n) if rows is None else rows)]
        self.cols = [str(c) for c in (range(m) if cols is None else cols)]
        if len(self.rows) != n or len(self.cols) != m:
            raise ValueError(f"{name} is {n}×{m} but got {len(self.rows)} row and "
                             f"{len(self.cols)} column labels; pass one label per row/column")
        self.digits = validate.integer("digits", digits, low=0, high=8)

    def _fmt(self, v: float) -> str:
        return f"{v + 0.0:.{self.digits}f}"  # + 0.0 turns -0.0 into 0.0

    def __repr__(self) -> str:
        width = max(len(self._fmt(v)) for v in self.values.ravel())
        lines = [f"{self.name}  ({self.values.shape[0]}×{self.values.shape[1]})"]
        for label, row in zip(self.rows, self.values, strict=True):
            lines.append(f"  {label:>8}  " + " ".join(f"{self._fmt(v):>{width}}" for v in row))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.cols)
        body = "".join(
            f"<tr><th>{html.escape(r)}</th>"
            + "".join(f"<td>{self._fmt(v)}</td>" for v in row) + "</tr>"
            for r, row in zip(self.rows, self.values, strict=True))
        shape = f"{self.values.shape[0]}×{self.values.shape[1]}"
        return (f'<table class="book-matrix"><caption>{html.escape(self.name)} '
                f'<span class="shape">({shape})</span></caption>'
                f"<thead><tr><th></th>{head}</tr></thead><tbody>{body}</tbody></table>")
