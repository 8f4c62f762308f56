"""Progress bars for long work, and whether the code runs in a kernel of the book build.

A bar helps a reader who waits in Jupyter or a terminal. In the book build it would be a
snapshot of no use to a reader, and worse, one that depends on timing: both editions' kernels
share their expensive results (:mod:`book.kit.memo`), so the kernel that trains a model would
show a bar and the one that loads the result would not, and the build's pages would differ
from a clean run's by which edition happened to compute first. So :func:`bar` is silent in
the build (and in the tests' runs of the notebooks, which set the same variable).
"""

from __future__ import annotations

import os

from book.kit import validate

BUILD_ENV = "BOOK_BUILD"  # set by book.site.sphinxext for the build's kernels (and by the tests)


def in_build() -> bool:
    """True in a kernel of the book build (``book.site.sphinxext`` sets ``BOOK_BUILD=1``)."""
    return os.environ.get(BUILD_ENV, "") == "1"


def bar(total: int, desc: str | None = None, *, show: bool = True, **options):
    """A ``tqdm.auto`` bar of ``total`` steps (a widget in Jupyter, text in a terminal), shown
    when ``show`` is true and the code is not running in the book build; ``options`` go to
    tqdm (``unit``, ``leave`` ...)."""
    validate.boolean("show", show)
    validate.integer("total", total, low=0)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not show or in_build(), **options)
