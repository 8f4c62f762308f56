"""One module per chapter page: its static figures, live explorers and exercises.

:data:`CHAPTERS` is the one list of the book's chapter pages. Everything that needs every
chapter reads it: the exercise registry (:func:`exercises`), the tests (each chapter page has
its module, its section of the string table and its test file) and ``tests/bench.py``. Adding a
chapter: CONTRIBUTING.md.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Chapter:
    """A chapter page and the files that belong to it.

    ``page``: the notebook ``chapters/<page>.ipynb``; ``module``: ``book.chapters.<module>``;
    ``strings``: the string table's section ``book/strings/<strings>.toml``; ``key``: the prefix of
    its exercise keys (``"ch2"`` for ``check("ch2.variance", …)``).
    """

    page: str
    module: str
    strings: str
    key: str

    @property
    def test_file(self) -> str:
        """Its test file, relative to the repository root."""
        return f"tests/chapters/test_{self.module}.py"


CHAPTERS: tuple[Chapter, ...] = (
    Chapter("01_intuition", "ch01_intuition", "ch01", "ch1"),
    Chapter("02_scaling", "ch02_scaling", "ch02", "ch2"),
    Chapter("03_walkthrough", "ch03_walkthrough", "ch03", "ch3"),
    Chapter("04_pytorch", "ch04_pytorch", "ch04", "ch4"),
    Chapter("04b_toy_model", "ch04b_toy_model", "ch04b", "ch4b"),
    Chapter("05_stability", "ch05_stability", "ch05", "ch5"),
    Chapter("06_heads", "ch06_heads", "ch06", "ch6"),
    Chapter("07_mask_traps", "ch07_mask_traps", "ch07", "ch7"),
    Chapter("08_seeing_attention", "ch08_seeing_attention", "ch08", "ch8"),
    Chapter("08b_real_model", "ch08b_real_model", "ch08b", "ch8b"),
    Chapter("09_long_context", "ch09_long_context", "ch09", "ch9"),
    Chapter("09b_serving", "ch09b_serving", "ch09b", "ch9b"),
    Chapter("10_beyond", "ch10_beyond", "ch10", "ch10"),
    Chapter("11_modern", "ch11_modern", "ch11", "ch11"),
)


def chapter(page: str) -> Chapter:
    """The chapter whose notebook is ``chapters/<page>.ipynb``."""
    for entry in CHAPTERS:
        if entry.page == page:
            return entry
    raise ValueError(f"no chapter page {page!r}; the chapters are "
                     f"{', '.join(c.page for c in CHAPTERS)} (book.chapters.CHAPTERS)")


def modules() -> list[ModuleType]:
    """Every chapter module, imported (which registers its exercises)."""
    return [importlib.import_module(f"{__name__}.{entry.module}") for entry in CHAPTERS]


def exercises() -> dict:
    """All exercises of every chapter, by key (:func:`book.face.checks.registered` after
    importing every chapter module)."""
    from book.face import checks

    modules()
    return checks.registered()
