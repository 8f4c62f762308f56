"""One module per chapter page: its static figures, live explorers and exercises.

:data:`CHAPTERS` is the one list of the book's chapter pages. Everything that needs every
chapter reads it: the exercise registry (:func:`exercises`), the tests (each chapter page has
its module, its section of the string table and its test file) and ``tests/bench.py``. Adding a
chapter: CONTRIBUTING.md.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
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
    def badge(self) -> str:
        """Its place on the learner's path: "core", "pitfalls" or "advanced" (:data:`PATH`)."""
        return _on_path(self.page)[0]

    @property
    def minutes(self) -> int:
        """The time a reader needs for it: prose, figures and exercises (:data:`PATH`)."""
        return _on_path(self.page)[1]

    @property
    def needs(self) -> tuple[str, ...]:
        """The pages to read first (their ``page`` names, :data:`PATH`)."""
        return _on_path(self.page)[2]

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


# The learner's path, one entry per chapter page: badge, minutes, pages to read first. The
# landing page's "Start here" and the banner under every chapter's title are both drawn from
# it (:func:`setup`, a Sphinx extension of the build), so the two cannot disagree. Badges, in
# path order: core (what every reader needs), pitfalls (what goes wrong in practice), advanced
# (a real model, long context, today's variants).
BADGES = ("core", "pitfalls", "advanced")
PATH: dict[str, tuple[str, int, tuple[str, ...]]] = {
    "01_intuition": ("core", 20, ()),
    "02_scaling": ("core", 20, ("01_intuition",)),
    "03_walkthrough": ("core", 25, ("01_intuition", "02_scaling")),
    "04_pytorch": ("core", 35, ("03_walkthrough",)),
    "04b_toy_model": ("pitfalls", 20, ("04_pytorch",)),
    "05_stability": ("pitfalls", 30, ("04b_toy_model",)),
    "06_heads": ("pitfalls", 25, ("04_pytorch",)),
    "07_mask_traps": ("pitfalls", 30, ("04_pytorch",)),
    "08_seeing_attention": ("pitfalls", 30, ("04_pytorch", "06_heads")),
    "08b_real_model": ("advanced", 35, ("08_seeing_attention",)),
    "09_long_context": ("advanced", 35, ("04_pytorch",)),
    "09b_serving": ("advanced", 25, ("09_long_context",)),
    "10_beyond": ("advanced", 25, ("09_long_context",)),
    "11_modern": ("advanced", 40, ("04_pytorch", "09b_serving")),
}


def _on_path(page: str) -> tuple[str, int, tuple[str, ...]]:
    if page not in PATH:
        raise ValueError(f"chapter page {page!r} has no place on the learner's path: add it "
                         "to book.chapters.PATH (badge, minutes, pages to read first)")
    return PATH[page]


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


def concept_questions(strings: str) -> list[str]:
    """The concept questions the chapter whose string-table section is ``strings`` asks
    (book/face/questions.py), by key: they check its outcomes with no kernel, in the page."""
    from book.face import questions

    modules()   # importing a chapter module registers its questions
    return sorted(k for k in questions.registered() if k.split(".", 1)[0] == strings)


# --- the learner's path in the HTML book (a Sphinx extension: _config.yml) ----------------------

def path_parts() -> list[tuple[str, list[Chapter]]]:
    """The chapters grouped by badge, in path order (every badge, every chapter once)."""
    return [(badge, [c for c in CHAPTERS if c.badge == badge]) for badge in BADGES]


def _page_context(app, pagename, templatename, context, doctree):
    from book.face import path as drawn
    from book.kit import i18n

    if app.builder.format != "html" or "body" not in context:
        return
    i18n.set_language("zh" if (app.config.language or "en").startswith("zh") else "en")
    titles = {c.page: app.env.titles[f"chapters/{c.page}"].astext() for c in CHAPTERS
              if f"chapters/{c.page}" in app.env.titles}

    def link(page: str) -> str:
        return app.builder.get_relative_uri(pagename, f"chapters/{page}")

    own = pagename.removeprefix("chapters/")
    if pagename == app.config.root_doc:
        source = Path(app.env.doc2path(pagename))
        if drawn.PLACEHOLDER not in source.read_text(encoding="utf-8"):
            return  # not the book's landing page (a scratch book: tests/test_rebuild.py's probe)
        context["body"] = drawn.fill_map_summary(
            drawn.fill_path(context["body"], path_parts(), titles, link))
    elif pagename.startswith("chapters/") and own in PATH:
        context["body"] = drawn.add_banner(context["body"], chapter(own), titles, link)


def setup(app):
    """Sphinx (``_config.yml``'s extensions): draw the path on the landing page (in its
    ``<div class="book-path"></div>``) and a banner (badge, time, prerequisites) under each
    chapter page's title, both from :data:`PATH`."""
    app.connect("html-page-context", _page_context)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
