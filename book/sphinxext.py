"""A small Sphinx extension that makes the HTML book work offline, from ``file://``.

* plotly.js is copied from the *installed* plotly package (so the figure JSON and the library
  always match) into ``_static/vendor/`` and loaded only on pages that hold a plotly figure;
* MathJax 3 (SVG output: no web fonts to fetch) is copied from the ``django-static-mathjax``
  package into ``_static/vendor/mathjax/``; Sphinx's own mathjax extension loads it only on
  pages with math, via ``mathjax_path``.

The vendored trees stay out of ``html_static_path`` on purpose: Jupyter Book adds every ``.js``
file found there to every page.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

PLOTLY_JS = "vendor/plotly.min.js"
MATHJAX_JS = "vendor/mathjax/tex-svg.js"
# MathJax parts the SVG build never loads: the speech engine and the all-in-one bundles.
_MATHJAX_SKIP = ("sre", "*-full*.js", "*-speech*.js", "node-main.js", "mml-*.js", "*chtml*")


def plotly_js_path() -> Path:
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"plotly.min.js not found at {path}; reinstall plotly")
    return path


def mathjax_dir() -> Path:
    try:
        import mathjax  # the django-static-mathjax distribution
    except ImportError:
        raise ImportError("MathJax for the offline book comes from the PyPI package "
                          "django-static-mathjax; run `make book` (or pip install "
                          "-r requirements-dev.txt)") from None
    path = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (path / "tex-svg.js").is_file():
        raise FileNotFoundError(f"MathJax 3 es5 files not found under {path}")
    return path


def _page_has_plotly(context: dict) -> bool:
    return "plotly-graph-div" in (context.get("body") or "")


def _add_plotly(app, pagename, templatename, context, doctree):
    if app.builder.format == "html" and _page_has_plotly(context):
        # Loaded synchronously in <head>: each figure's inline script calls Plotly.newPlot.
        app.builder.add_js_file(PLOTLY_JS, priority=100)


def _is_thebe(asset) -> bool:
    return "thebe" in (getattr(asset, "filename", None) or "") or \
        "THEBE_JS_URL" in (getattr(asset, "attributes", {}).get("body", "") or "")


def _drop_thebe(app, pagename, templatename, context, doctree):
    """Jupyter Book 1 always loads sphinx-thebe, and declares its ``const THEBE_JS_URL`` twice
    per page (a console error). The book has no live kernel in the page: drop its assets."""
    for key in ("script_files", "css_files"):
        if key in context:
            context[key][:] = [a for a in context[key] if not _is_thebe(a)]


def _copy_vendored(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    vendor = Path(app.outdir) / "_static" / "vendor"
    vendor.mkdir(parents=True, exist_ok=True)
    shutil.copy2(plotly_js_path(), vendor / "plotly.min.js")
    target = vendor / "mathjax"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(mathjax_dir(), target, ignore=shutil.ignore_patterns(*_MATHJAX_SKIP))


def _use_local_mathjax(app, config):
    config.mathjax_path = MATHJAX_JS


# The prose's numbers: {eval}`book.glued("name:.2f")`. jupyterlab-myst evaluates that in the
# reader's kernel; the build reads it as MyST-NB's {glue:text}`name:.2f` (glued outputs, no
# kernel at render time, so any nb_execution_mode works, "cache" included).
GLUED_ROLE = re.compile(r"""^book\.glued\((["'])(?P<key>[^"']+)\1\)$""")


def _glued_role():
    from myst_nb.ext.glue.roles import PasteTextRole
    from myst_nb.ext.glue.utils import glue_warning

    class GluedRole(PasteTextRole):
        """``{eval}`book.glued("key")``` pasted as ``{glue:text}`key```; nothing else is
        evaluated (the build never runs code from the prose)."""

        def run(self):
            match = GLUED_ROLE.match(self.text.strip())
            if match is None:
                return [], [glue_warning(
                    f"{{eval}}`{self.text}`: the book only evaluates book.glued(\"name:format\") "
                    "in the prose; glue the value in a code cell (book.glue) and write "
                    "{eval}`book.glued(\"name:.2f\")`", self.document, self.line)]
            self.text = match.group("key")
            return super().run()

    return GluedRole


def setup(app):
    # The build's kernels inherit this: book.glue then glues for the page (MyST-NB) instead of
    # showing figures in place, as it does in JupyterLab.
    os.environ["BOOK_BUILD"] = "1"
    app.add_role("eval", _glued_role()(), override=True)
    app.connect("config-inited", _use_local_mathjax)
    app.connect("html-page-context", _add_plotly)
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("build-finished", _copy_vendored)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


class PlotlyJsonMime:
    """MyST-NB mime plugin (registered in pyproject.toml): plotly's JSON output is for JupyterLab;
    the book shows the ``text/html`` twin that ``book.setup()``'s renderer emits beside it.
    Returning no nodes (rather than leaving the type unknown) keeps ``-W`` builds warning-free."""

    mime_priority_overrides = ()

    @staticmethod
    def handle_mime(renderer, data, inline):
        return [] if data.mime_type == "application/vnd.plotly.v1+json" else None


def _make_renderer():
    from myst_nb.core.render import NbElementRenderer

    class BookRenderer(NbElementRenderer):
        """MyST-NB renderer (``nb_render_plugin: book``) that never embeds ipywidgets state.

        Live widgets are the Jupyter face of an explorer; their outputs are removed from the
        book (``remove-output``). Executing them still leaves their state — the ~5 MB plotly
        FigureWidget bundle among it — in the notebook metadata, and MyST-NB would embed it in
        the page with the widget manager from a CDN. The static face is what the book shows.
        """

        def render_nb_finalise(self, metadata: dict) -> None:
            super().render_nb_finalise({k: v for k, v in metadata.items() if k != "widgets"})

    return BookRenderer


BookRenderer = _make_renderer()
