"""The book on paper: what the LaTeX builder needs (``make pdf``).

* One execution serves the HTML and the PDF. A chapter's figure output holds the figure's JSON
  (``application/vnd.plotly.v1+json``) beside the page's ``text/html``; MyST-NB keeps every mime
  type of an output in the doctree and picks one per builder when it writes. For HTML that is
  ``text/html`` (the JSON is dropped, as before); for LaTeX it is the JSON, which
  :class:`StillsForLatex` draws as a PNG of the state the page first shows (kaleido, the system
  Chromium, nothing fetched: book/site/static_figures.py) with one line under it saying what
  the page lets you vary. ``make pdf`` after ``make book`` therefore executes nothing: it reuses
  the build's environment (``--path-output`` is the same).
* Fonts: xelatex with xeCJK and Debian's Noto CJK fonts (fonts-noto-cjk), in both editions —
  the English edition's examples keep their Chinese tokens (一碗 牛肉面 …).
* Code listings wrap inside the text width (Sphinx's verbatim line wrapping, forced on).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

from book.kit import i18n
from book.site import static_figures

logger = logging.getLogger(__name__)
LATEX_BUILDERS = ("latex",)
# MyST-NB's mime plugins may reorder a builder's choice: LaTeX prefers the figure's JSON (drawn
# as a still) to the output's text/plain (book.site.sphinxext.PlotlyJsonMime carries this).
MIME_PRIORITY = (("latex", static_figures.PLOTLY_MIME, 1),)

# xeCJK for the Chinese characters of both editions (Sphinx loads it itself for Chinese; a second
# \usepackage is a no-op), Debian's Noto CJK faces, and no synthetic bold/italic for CJK.
CJK_PREAMBLE = r"""
\usepackage{xeCJK}
\setCJKmainfont{Noto Serif CJK SC}[BoldFont={Noto Serif CJK SC Bold}]
\setCJKsansfont{Noto Sans CJK SC}[BoldFont={Noto Sans CJK SC Bold}]
\setCJKmonofont{Noto Sans Mono CJK SC}
\xeCJKsetup{CJKecglue={ }}
% the code listings' and outputs' font: DejaVu Sans Mono has the superscripts and subscripts
% they print (ᵀ, ⱼ) that FreeMono lacks; the two emoji of the exercise checks from fonts that
% have them, and no emoji variation selector (U+FE0F), which no text font draws
\setmonofont{DejaVu Sans Mono}[Scale=0.88]
\usepackage{newunicodechar}
\newunicodechar{✅}{{\fontspec{FreeSerif}✅}}
\newunicodechar{❌}{{\fontspec{FreeSerif}❌}}
\newunicodechar{✍}{{\fontspec{DejaVu Sans}✍}}
\newunicodechar{^^^^fe0f}{}
"""


class plotly_still(nodes.General, nodes.Element):  # noqa: N801 - docutils names nodes this way
    """A plotly figure's JSON, kept in the doctree for the builders that draw it as an image."""


def still_node(figure, source: str = "") -> plotly_still:
    """The node for one figure output; ``source`` is its page's file (it names the image)."""
    text = figure if isinstance(figure, str) else json.dumps(figure, sort_keys=True)
    page = Path(str(source)).stem if source else ""
    return plotly_still(figure=text, page=page)


def _skip(self, node):
    raise nodes.SkipNode


class StillsForLatex(SphinxPostTransform):
    """Each plotly figure the LaTeX builder selected becomes a PNG and a one-line note."""

    default_priority = 20   # after MyST-NB's SelectMimeType (4) chose the figure's JSON
    builders = LATEX_BUILDERS

    def run(self, **kwargs) -> None:
        app = self.app
        exporter = getattr(app, "_book_stills", None)
        if exporter is None:
            exporter = app._book_stills = static_figures.Exporter()
        # the note under a still speaks the edition's language (the Sphinx process itself draws
        # in English unless told: BOOK_LANG is for the kernels)
        edition = "zh" if str(self.config.language or "").startswith("zh") else "en"
        before = i18n.language()
        i18n.set_language(edition)
        try:
            self._replace(app, exporter)
        finally:
            i18n.set_language(before)

    def _replace(self, app, exporter) -> None:
        numbers: dict[str, int] = {}
        for node in list(self.document.findall(plotly_still)):
            page = node.get("page") or self.env.docname.replace("/", "-")
            number = numbers[page] = numbers.get(page, 0) + 1
            figure = json.loads(node["figure"])
            picture, note = static_figures.still(figure)
            digest = hashlib.sha1(node["figure"].encode()).hexdigest()[:8]
            name = f"stills/{page}-fig{number:02d}-{digest}.png"
            target = app.builder.outdir / name
            if not target.is_file():
                exporter.write(picture, target)
            image = nodes.image(uri=name, candidates={"*": name}, width="100%",
                                alt=static_figures.figure_name(page, number, figure))
            replacement: list[nodes.Node] = [image]
            if note:
                replacement.append(nodes.paragraph("", "", nodes.emphasis(note, note),
                                                   classes=["still-note"]))
            node.replace_self(replacement)


def _close_exporter(app, exception) -> None:
    exporter = getattr(app, "_book_stills", None)
    if exporter is not None:
        exporter.close()
        app._book_stills = None


def _latex_settings(app, config) -> None:
    """Set for every builder (only LaTeX reads them), so that the HTML build's environment and
    the PDF's are the same and ``make pdf`` re-reads nothing."""
    elements = dict(config.latex_elements or {})
    elements["preamble"] = elements.get("preamble", "") + CJK_PREAMBLE
    if not str(config.language or "").startswith("zh"):
        # xeCJK sets curly quotes, dashes and the ellipsis as full-width CJK punctuation
        # ("token’ s"); English text keeps them in its own font
        elements["preamble"] += ('\\xeCJKDeclareCharClass{Default}'
                                 '{"2014, "2018, "2019, "201C, "201D, "2026}\n')
    # long code lines wrap inside the text width instead of running off the page
    elements.setdefault("sphinxsetup", "verbatimwrapslines=true, verbatimforcewraps=true")
    elements.setdefault("papersize", "a4paper")
    # no blank left-hand pages before chapters; the chapters number themselves ("2. Why …")
    elements.setdefault("extraclassoptions", "openany,oneside")
    elements["preamble"] += "\\setcounter{secnumdepth}{-1}\n"
    elements.setdefault("pointsize", "10pt")
    config.latex_elements = elements
    config.latex_engine = "xelatex"


def setup_sphinx(app) -> None:
    app.add_node(plotly_still, html=(_skip, None), latex=(_skip, None), text=(_skip, None),
                 man=(_skip, None), texinfo=(_skip, None))
    app.add_post_transform(StillsForLatex)
    app.connect("config-inited", _latex_settings)
    app.connect("build-finished", _close_exporter)
