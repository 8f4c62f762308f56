"""The face a chapter notebook uses; the computation lives in the sub-packages below it.

``book.setup()`` is the first call of every chapter notebook: it seeds every generator, picks
the language and registers the plotly renderer that works both in Jupyter and in the static
HTML book. ``glue``/``glued`` carry the prose's numbers, ``show_source`` shows the code that is
the lesson, ``check`` answers an exercise, ``ask`` shows concept questions (answered with no
kernel) and ``tr`` reads the string table.

The floors, each importing only those below it (tests/test_layers.py checks it)::

    book.chapters                      one module per chapter page
    book.studies  book.site  book.classroom
    book.toy  book.real                the takeout-order model; the pretrained model
    book.ideas  book.face              what attention computes; drawing and exercises
    book.kit                           validation, settings, strings, timing
"""

from __future__ import annotations

from book.face.checks import check
from book.face.display import Matrix, glue, glue_all, glued, setup, show_source, table
from book.face.questions import ask
from book.kit.i18n import tr

__all__ = ["setup", "glue", "glue_all", "glued", "table", "show_source", "Matrix", "check", "ask",
           "tr"]
