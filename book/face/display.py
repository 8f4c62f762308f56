"""Notebook plumbing: seeding, the plotly renderer, glued numbers and source listings."""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import torch

from book.face import figures
from book.face.plotting import FONT_FAMILY
from book.kit import codetext, i18n, validate
from book.kit.progress import BUILD_ENV, in_build  # noqa: F401 - the face's names for them

# The config of the plotly mimetype bundle (what JupyterLab, Notebook 7 and VS Code render).
# Never "responsive": there the output area has no height of its own, so a responsive figure's
# container becomes height: 100% of nothing and collapses to 0 px at the first slider step.
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["sendDataToCloud"]}
# The book's text/html twin stays responsive: the page gives each figure's container a size
# (the layout height, a width from the text column), so the figure reflows down to 390 px.
# No toolbar on the page: its 8–10 buttons per figure were half a page's Tab stops and named
# nothing a reader needs (the numbers are in each figure's data table; drag still zooms and a
# double click resets).
HTML_CONFIG = {**PLOTLY_CONFIG, "responsive": True, "displayModeBar": False}
SEED = 0
_figure_counter = 0
_glued: dict[str, object] = {}  # every value glued in this kernel, for book.glued()


def setup(seed: int = SEED, language: str | None = None) -> None:
    """Seed python, numpy and torch, choose the language of figures and messages, and make
    plotly figures render in Jupyter *and* the book.

    ``language`` is "en" or "zh"; None takes the build's (BOOK_LANG, set by the Chinese
    edition's build), English by default (``book.kit.i18n.language()`` says which is in use).

    Plotly's default renderer under nbclient emits only ``application/vnd.plotly.v1+json``,
    which MyST-NB does not render. The ``book`` renderer adds a ``text/html`` bundle that
    expects plotly.js to be on the page already (the book's Sphinx extension puts it there,
    from the build's own ``_static``; no CDN). JupyterLab keeps using the plotly mimetype.
    """
    global _figure_counter
    seed = validate.integer("seed", seed, low=0, high=2**32 - 1)   # numpy's legacy limit
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    # torch.use_deterministic_algorithms(True, warn_only=True) also sets torch.compile's
    # (inductor's) flag, and importing inductor for it takes ~1.2 s of every kernel's start;
    # the book runs eager torch only, where the flag below is the whole effect.
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None:   # a torch without it: the public call
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        set_flag(True, warn_only=True)
    _figure_counter = 0
    i18n.set_language(language)
    _register_renderer()
    _use_slim_template()


def _register_renderer() -> None:
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    class BookRenderer(MimetypeRenderer):
        def to_mimebundle(self, fig_dict):
            global _figure_counter
            from book.face.plotting import tidy

            _figure_counter += 1
            if in_build():
                _check_traces(fig_dict)
            tidy(fig_dict)  # short title lines, no text under 10 px (legible on a phone)
            payload = pio.to_json(fig_dict, validate=False)
            digest = hashlib.sha1(payload.encode()).hexdigest()[:8]
            div_id = f"fig-{_figure_counter}-{digest}"  # deterministic: same output twice
            # to_html writes into the config it is given (setdefault("responsive", True)):
            # hand it a copy, so the mimetype bundle's config never turns responsive.
            page = {**fig_dict, "layout": figures.page_layout(fig_dict.get("layout") or {})}
            html = figures.figure_html(
                fig_dict, pio.to_html(page, include_plotlyjs=False, full_html=False,
                                      config=copy.deepcopy(HTML_CONFIG), div_id=div_id,
                                      validate=False), div_id)
            data = json.loads(payload)
            data["config"] = copy.deepcopy(PLOTLY_CONFIG)
            return {"application/vnd.plotly.v1+json": data, "text/html": html}

    pio.renderers["book"] = BookRenderer()
    pio.renderers.default = "book"


def _check_traces(fig_dict: dict) -> None:
    """The book's pages load a plotly.js bundle of just ``TEMPLATE_TRACES``: a figure of another
    trace type would be blank there, so the build stops on it."""
    types = {trace.get("type", "scatter") for trace in fig_dict.get("data", ())}
    missing = sorted(types - set(TEMPLATE_TRACES))
    if missing:
        raise ValueError(f"this figure draws {', '.join(missing)} traces, which the book's "
                         f"plotly.js bundle does not hold (it draws {', '.join(TEMPLATE_TRACES)}):"
                         " use one of those, or add the trace to "
                         "book.face.display.TEMPLATE_TRACES and "
                         "rebuild the bundle with assets/vendor/plotly/refresh.py")


# Every figure embeds its template. Plotly's default one styles ~30 trace types and 3-D, polar,
# ternary and map axes (7 KB per figure); the book draws only these traces on x/y axes.
TEMPLATE_TRACES = ("scatter", "heatmap", "bar")  # also the traces of the pages' plotly.js bundle
_TEMPLATE_LAYOUT_DROP = ("polar", "ternary", "scene", "geo")


def slim_template():
    """Plotly's default template cut to what the book's figures use: the same look, ~2.5 KB."""
    import plotly.graph_objects as go
    import plotly.io as pio

    full = pio.templates["plotly"].to_plotly_json()
    data = {k: v for k, v in full["data"].items() if k in TEMPLATE_TRACES}
    layout = {k: v for k, v in full["layout"].items() if k not in _TEMPLATE_LAYOUT_DROP}
    layout["font"] = {**layout.get("font", {}), "family": FONT_FAMILY}  # the book's CJK font
    return go.layout.Template(data=data, layout=layout)


def _use_slim_template() -> None:
    import plotly.io as pio

    if "book" not in pio.templates:
        pio.templates["book"] = slim_template()
    pio.templates.default = "book"


def glue(name: str, value, display: bool = False) -> None:
    """Store ``value`` under ``name`` for the prose.

    The prose names it as ``{eval}`book.glued("name:.2f")``` (see :func:`glued`). In the book
    build this is MyST-NB's glue, which the page pastes. Outside the build (JupyterLab,
    Notebook 7, VS Code) the value is kept for :func:`glued`, which the markdown cells evaluate
    through jupyterlab-myst, and a glued *figure* is shown right here, in the cell that computes
    it, since the ```{glue}``` directive that pastes it in the book is the book's alone.
    Returns None, so a cell that ends with a glue call shows nothing extra.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str (a Python identifier such as 'n_heads'), got "
                        f"{type(name).__name__}")
    if not name.isidentifier():
        raise ValueError(f"glue name must be a Python identifier, got {name!r}; use letters, "
                         "digits and _ (e.g. 'max_weight')")
    validate.boolean("display", display)
    if isinstance(value, np.generic):  # np.float64(…) reprs would not format in the prose
        value = value.item()
    _glued[name] = value
    figure = hasattr(value, "_ipython_display_") and hasattr(value, "_repr_mimebundle_")
    if not in_build():
        if figure or display:
            from IPython.display import display as show

            show(value)
        return None
    if figure:
        value = _RichOnly(value)  # a plotly figure: glue its bundle, don't show it here
    try:
        from myst_nb import glue as _glue
    except ImportError:  # pragma: no cover - the build has MyST-NB
        return None
    _glue(name, value, display=display)
    return None


def format_like_glue(value, spec: str) -> str:
    """``value`` formatted as MyST-NB's ``{glue:text}`name:spec``` formats its text/plain."""
    if spec == "":
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


class Glued:
    """A glued value as the prose shows it: its text, formatted like ``{glue:text}`` would."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:  # jupyterlab-myst shows an expression's text/plain
        return self.text

    def __str__(self) -> str:
        return self.text


def glued(key: str) -> Glued:
    """The glued value ``key`` formatted for the prose: ``glued("var_64:.1f")`` → ``12.3``.

    ``key`` is what MyST-NB's ``{glue:text}`` role takes: ``name``, ``name:format`` or
    ``notebook.ipynb::name:format`` (the notebook part is for the book build, which resolves
    it across pages; in the notebook the value comes from this kernel). The markdown cells
    write ``{eval}`book.glued("name:.2f")```: jupyterlab-myst evaluates it in the kernel, and
    the book build (``book.site.sphinxext``) turns it into the ``{glue:text}`` role.
    """
    if not isinstance(key, str) or not key:
        raise TypeError(f"glued takes the glue key as a string like 'var_64:.1f', got {key!r}")
    name = key.split("::", 1)[-1]
    name, _, spec = name.partition(":")
    if not name.isidentifier():
        raise ValueError(f"glued({key!r}): {name!r} is not a glue name; write 'name' or "
                         "'name:format', e.g. 'var_64:.1f'")
    if name not in _glued:
        raise KeyError(f"nothing glued as {name!r} yet in this kernel: run the cells above "
                       "(Run All) and then this markdown cell again")
    try:
        return Glued(format_like_glue(_glued[name], spec))
    except (TypeError, ValueError) as err:
        raise ValueError(f"glued({key!r}): cannot format {_glued[name]!r} with {spec!r}: {err}") \
            from None


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
    named in a comment, not printed. In the Chinese edition its comments and docstrings are
    the Chinese ones of locale/zh_CN/code (book.kit.codetext); the code is the same.
    """
    from IPython.display import Markdown, display  # IPython: only where a listing is shown

    source = codetext.listing(obj, members)
    if i18n.language() == "zh":
        source = codetext.translate(source, codetext.catalogue(), printed=False)
    display(Markdown(f"```python\n{source}\n```"))


class Matrix:
    """A labelled matrix for the page: a small HTML table with its name and shape (and text)."""

    def __init__(self, name: str, values, rows=None, cols=None, digits: int = 2):
        if not isinstance(name, str):
            raise TypeError(f"name must be a str such as 'Q', got {type(name).__name__}")
        self.values = validate.array(f"values ({name})", values, ndim=2)
        for which, labels in (("rows", rows), ("cols", cols)):
            if labels is not None and (isinstance(labels, (str, bytes))
                                       or not hasattr(labels, "__len__")):
                raise TypeError(f"{which} must be a list with one label per "
                                f"{which[:-1]}, got {labels!r}")
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


def compared(a, b, digits: int = 2) -> str:
    """The words that compare ``a`` with ``b`` as the prose shows them (rounded to ``digits``
    decimals): "more than", "less than" or "as much as", in the book's language. A sentence
    that compares two glued numbers glues this word too, so the claim follows the numbers."""
    a = validate.real("a", a)
    b = validate.real("b", b)
    digits = validate.integer("digits", digits, low=0, high=12)
    ra, rb = round(a, digits), round(b, digits)
    return i18n.tr("common.cmp_more" if ra > rb else "common.cmp_less" if ra < rb
                   else "common.cmp_same")

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
