"""The code every chapter of the book uses. Chapters hold narrative; the computation lives here.

``book.setup()`` is the first call of every chapter notebook: it seeds every generator and
registers the plotly renderer that works both in Jupyter and in the static HTML book.
"""

from __future__ import annotations

from .display import Matrix, glue, glue_all, glued, setup, show_source, table

__all__ = ["setup", "glue", "glue_all", "glued", "table", "show_source", "Matrix"]
