"""How long the core path is: the landing page and the core chapters (``book.chapters.PATH``,
badge "core"), measured in headless Chromium from a built book, in screens of a 1280 × 800 px
viewport. Folded content (a closed dropdown or a hidden cell's toggle) does not count: the page
is measured as a reader first sees it.

Run alone: ``python tests/core_path.py _build/html`` (prints one line per page and the total);
``tests/test_learner_path.py`` holds the total to :data:`MAX_SCREENS`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import headless
import legibility

from book.chapters import CHAPTERS

WIDTH, HEIGHT = 1280, 800
MAX_SCREENS = 70


def core_pages() -> list[str]:
    """The pages of the core path, in reading order, relative to the HTML folder."""
    return ["index.html", *(f"chapters/{c.page}.html" for c in CHAPTERS if c.badge == "core")]


def screens(html: Path, pages: list[str] | None = None, width: int = WIDTH,
            height: int = HEIGHT) -> dict[str, float]:
    """Each page's height in screens of ``height`` px at ``width`` px (every figure drawn),
    without the sections its headings mark optional (legibility.OPTIONAL_JS): the core path
    is what a learner must read."""
    from playwright.sync_api import sync_playwright

    html = Path(html)
    pages = core_pages() if pages is None else pages
    missing = [p for p in pages if not (html / p).is_file()]
    if missing:
        raise FileNotFoundError(f"{html} lacks {missing}: build the book first")
    out = {}
    with sync_playwright() as p:
        browser = headless.launch(p)
        try:
            context = browser.new_context(viewport={"width": width, "height": height})
            page = context.new_page()
            for rel in pages:
                page.goto((html / rel).resolve().as_uri(), wait_until="load")
                page.wait_for_function(
                    "() => [...document.querySelectorAll('.plotly-graph-div')]"
                    ".every(d => d.querySelector('.main-svg'))", timeout=60_000)
                page.wait_for_timeout(300)
                optional = page.evaluate(legibility.OPTIONAL_JS)
                out[rel] = (page.evaluate("document.documentElement.scrollHeight")
                            - optional) / height
        finally:
            browser.close()
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/core_path.py HTML_FOLDER", file=sys.stderr)
        return 2
    result = screens(Path(argv[0]))
    for rel, n in result.items():
        print(f"{n:6.1f} screens  {rel}")
    total = sum(result.values())
    print(f"{total:6.1f} screens  core path at {WIDTH} × {HEIGHT} px (limit {MAX_SCREENS})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
