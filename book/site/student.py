"""The student edition: the same book without the worked solutions (``make book-student``).

A worked solution is a code cell whose first line starts with ``# Solution`` (the chapters fold
them with the ``hide-cell`` tag, under each exercise). With ``BOOK_STUDENT=1`` in the environment
the build

* hands MyST-NB each notebook with those cells replaced by a one-line note (``source-read``), so
  the notebooks are executed and rendered without them: every exercise cell still runs and
  checks (``book.face.checks`` never needs a solution; the exercise cells are untouched);
* says so where the chapters' prose promises a folded solution (after translation, so both
  editions);
* writes the same stripped notebooks over the copies the download button serves
  (``_sources/**/*.ipynb``).

Everything else is the book as ``make book`` builds it. Both editions read the same switch.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from book.kit import i18n

ENV = "BOOK_STUDENT"
# The Chinese notebooks (book/site/zh_notebooks.py) translate the marker comment to "# 解答：…",
# and the Chinese edition's download button serves them: both words mark a solution.
SOLUTION = re.compile(r"\A\s*# (?:Solution\b|解答)")
# The chapters' sentences that promise a folded solution, in each edition's words.
PROMISES = (
    re.compile(r"The worked\s+solution\s+is\s+folded\s+below\s+(?:each\s+one|it)\."),
    re.compile(r"(?:参考解答折叠在每道题下方|每道题下方折叠着完整的解答|完整解答折叠在它下方)。"),
)


def enabled() -> bool:
    """Whether this build is the student edition (``BOOK_STUDENT=1``)."""
    value = os.environ.get(ENV, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{ENV} must be 1 (the student edition) or 0/unset, not {value!r}")
    return value == "1"


def is_solution(cell: dict) -> bool:
    """A worked solution: a code cell whose first line starts with ``# Solution`` (``# 解答`` in a
    Chinese notebook)."""
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else source
    return cell.get("cell_type") == "code" and bool(SOLUTION.match(source))


def strip_notebook(text: str, language: str = "en", *, prose: bool = False) -> tuple[str, int]:
    """The notebook JSON ``text`` with every worked solution replaced by a markdown note (in
    ``language``), and how many were replaced. ``prose=True`` also rewrites the (English)
    sentence that promises a folded solution: for the notebooks readers download; the build's
    own input keeps it, so that the catalogues still translate its paragraph."""
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not a notebook (JSON): {err}") from err
    if not isinstance(notebook, dict) or "cells" not in notebook:
        raise ValueError("not a notebook: no 'cells'")
    note = i18n.table()["guide.solution_withheld"][i18n.check_language(language)]
    cells, replaced = [], 0
    for cell in notebook["cells"]:
        if is_solution(cell):
            replaced += 1
            cells.append({"cell_type": "markdown", "id": f"{cell.get('id', replaced)}-withheld",
                          "metadata": {}, "source": note})
        elif prose and cell.get("cell_type") == "markdown":
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            cells.append({**cell, "source": without_promise(source, "en")})
        else:
            cells.append(cell)
    notebook["cells"] = cells
    return json.dumps(notebook, ensure_ascii=False, indent=1) + "\n", replaced


def without_promise(text: str, language: str = "en") -> str:
    """``text`` with the sentence that promises a folded solution replaced by the student
    edition's."""
    replacement = i18n.table()["guide.solutions_left_out"][i18n.check_language(language)]
    for pattern in PROMISES:
        text = pattern.sub(replacement, text)
    return text


# --- Sphinx side (registered by book.site.sphinxext) -------------------------------------------

def _language(app) -> str:
    from book.site.editions import edition_of

    return edition_of(app.config.language)


def _strip_source(app, docname, source) -> None:
    if enabled() and str(app.env.doc2path(docname)).endswith(".ipynb"):
        source[0], _ = strip_notebook(source[0], _language(app))


def _promise_transform():
    from docutils import nodes
    from sphinx.transforms import SphinxTransform

    class WithoutPromise(SphinxTransform):
        """The prose's "the worked solution is folded below" (after the i18n transform, so in
        the page's language) becomes the student edition's sentence."""

        default_priority = 900

        def apply(self, **kwargs) -> None:
            if not enabled():
                return
            language = edition_of_config(self.config)
            for paragraph in list(self.document.findall(nodes.paragraph)):
                rewrite_paragraph(paragraph, language)

    return WithoutPromise


def rewrite_paragraph(paragraph, language: str = "en") -> bool:
    """Replace the promise of a folded solution in a docutils ``paragraph``; whether it had
    one. MyST keeps each soft line break as a Text node of its own, so each run of Text
    siblings is joined first: a sentence over two lines is one string."""
    from docutils import nodes

    if without_promise(paragraph.astext(), language) == paragraph.astext():
        return False
    children, run = [], []
    for child in [*paragraph.children, None]:
        if isinstance(child, nodes.Text):
            run.append(str(child))
            continue
        if run:
            children.append(nodes.Text(without_promise("".join(run), language)))
            run = []
        if child is not None:
            children.append(child)
    paragraph.children = []
    paragraph.extend(children)
    return True


def edition_of_config(config) -> str:
    from book.site.editions import edition_of

    return edition_of(config.language)


def _strip_downloads(app, exception) -> None:
    """The notebooks the download button serves, without their solutions."""
    if exception is not None or not enabled() or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.ipynb"):
        text, replaced = strip_notebook(path.read_text(encoding="utf-8"), _language(app),
                                        prose=True)
        if replaced:
            path.write_text(text, encoding="utf-8")


def setup_sphinx(app) -> None:
    app.connect("source-read", _strip_source)
    app.add_transform(_promise_transform())
    app.connect("build-finished", _strip_downloads)
