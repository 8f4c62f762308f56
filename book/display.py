"""Notebook plumbing: seeding, the plotly renderer, glued numbers and source listings."""

from __future__ import annotations

import hashlib
import inspect
import json
import random
import textwrap
from collections.abc import Iterable, Mapping, Sequence

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
    from .plotting import use_book_template

    use_book_template()


def _register_renderer() -> None:
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    class BookRenderer(MimetypeRenderer):
        def to_mimebundle(self, fig_dict):
            global _figure_counter
            from .plotting import tidy

            _figure_counter += 1
            tidy(fig_dict)  # short title lines, no text under 10 px (legible on a phone)
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


def show_source(obj, members: Sequence[str] | None = None) -> None:
    """Display the source of a function or class of ``book`` as a highlighted listing.

    The chapter shows the one copy that the tests exercise, never a pasted twin. For a class,
    ``members`` (e.g. ``["__init__", "forward"]``) limits the listing to the class line, the
    first paragraph of its docstring and those methods; the rest (validation, helpers) is
    named in a comment, not printed.
    """
    from IPython.display import Markdown, display

    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as err:
        raise TypeError(f"show_source needs a function, class or module defined in a file, "
                        f"got {obj!r}: {err}") from None
    if members is not None:
        source = _class_excerpt(obj, members)
    display(Markdown(f"```python\n{textwrap.dedent(source).rstrip()}\n```"))


def _class_excerpt(cls, members: Sequence[str]) -> str:
    if not inspect.isclass(cls):
        raise TypeError(f"members= works on a class, got {cls!r}; drop members= for a function")
    if isinstance(members, str) or not members:
        raise TypeError(f"members must be a list of method names, got {members!r}")
    missing = [m for m in members if m not in vars(cls)]
    if missing:
        raise ValueError(f"{cls.__name__} defines no {missing}; it has "
                         f"{sorted(n for n, v in vars(cls).items() if callable(v))}")
    bases = ", ".join(b.__name__ if b.__module__ == cls.__module__ else
                      f"nn.{b.__name__}" if b.__module__.startswith("torch.nn.") else
                      f"{b.__module__}.{b.__name__}" for b in cls.__bases__)
    summary = (inspect.getdoc(cls) or "").split("\n\n")[0]
    lines = [f"class {cls.__name__}({bases}):"]
    if summary:
        lines.append(textwrap.indent(f'"""{summary}"""', "    "))
    others = sorted(n for n, v in vars(cls).items()
                    if inspect.isfunction(v) and n not in members and not n.startswith("__"))
    for name in members:
        lines += ["", textwrap.indent(textwrap.dedent(inspect.getsource(vars(cls)[name])),
                                      "    ").rstrip()]
    if others:
        lines += ["", f"    # also defined, not shown: {', '.join(others)}"]
    return "\n".join(lines)


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


def glue_all(values: Mapping[str, object] | None = None, /, **named) -> None:
    """Glue several values in one call, for the prose's ``{glue:text}`` roles.

    ``glue_all(var_64=v64, var_512=v512)`` or ``glue_all({"acc_full": 73.6, ...})`` (a mapping,
    for names built in a loop) is ``glue(name, value)`` for each pair, in order.
    """
    if values is not None and not isinstance(values, Mapping):
        raise TypeError(f"glue_all takes a mapping of name → value (or keyword arguments), got "
                        f"{type(values).__name__}; e.g. glue_all(var_64=v) or glue_all({{'a': 1}})")
    pairs = {**(values or {}), **named}
    if not pairs:
        raise ValueError("glue_all got nothing to glue; pass name=value pairs")
    for name, value in pairs.items():
        glue(name, value)


def table(columns: Sequence[str], rows: Iterable[Sequence], formats: Sequence[str] | None = None):
    """A Markdown table (shown by Jupyter and the book) from a header and rows of cells.

    ``formats`` gives one format spec per column (``".3f"``, ``","``, ``""`` for as is);
    numbers are formatted with it, strings are shown as they are.
    """
    from IPython.display import Markdown  # IPython comes with Jupyter; book/ works without it

    columns = [str(c) for c in columns]
    if not columns:
        raise ValueError("table needs at least one column name")
    formats = [""] * len(columns) if formats is None else list(formats)
    if len(formats) != len(columns):
        raise ValueError(f"formats has {len(formats)} entries for {len(columns)} columns; "
                         "give one format spec per column ('' keeps a cell as it is)")
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for i, row in enumerate(rows):
        row = list(row)
        if len(row) != len(columns):
            raise ValueError(f"row {i} has {len(row)} cells for {len(columns)} columns: {row!r}")
        cells = [format(c, f) if f and not isinstance(c, str) else str(c)
                 for c, f in zip(row, formats, strict=True)]
        lines.append("| " + " | ".join(cells) + " |")
    return Markdown("\n".join(lines))
