"""Open every built page from file:// in headless Chromium with the network cut off.

Asserts per page: no console error, no request that leaves the machine, no failed local load,
MathJax output wherever the page has math, every plotly figure painted, and on every static
explorer, moving a slider or choosing a dropdown entry changes the drawn data. Then the
legibility check of tests/legibility.py on every figure in every state, at 1280 and 390 px, and
the page checks (code blocks that overflow, chapters over 15 screens); and every CJK character
the pages and figures use is in the book's own subset font.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import legibility
import pytest
from test_build import pages

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
SCREENSHOTS = os.environ.get("BOOK_SCREENSHOTS")  # a folder: save a full-page PNG of each page

# What a figure draws now, as plotly.js sees it: each trace's data and visibility, the titles.
SNAPSHOT_JS = """(gd) => JSON.stringify(gd._fullData.map(t => [t.visible].concat(
      [t.x, t.y, t.z].map(v => v == null ? null
        : Array.from(v, r => (r && r.length !== undefined) ? Array.from(r) : r)))))
    + JSON.stringify((gd.layout.annotations || []).map(a => a.text))
    + JSON.stringify(gd._fullLayout.title && gd._fullLayout.title.text)"""


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed: run `apt-get install -y chromium` (make test does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def open_page(browser, path: Path):
    """Open ``path`` with every non-local request blocked; return (page, problems dict)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems = {"console": [], "blocked": [], "failed": []}

    def route(r):
        url = r.request.url
        if url.startswith(("file://", "data:", "blob:")):
            r.continue_()
        else:
            problems["blocked"].append(url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: problems["console"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems["console"].append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems["failed"].append(f"{r.url}: {r.failure}")
            if r.url.startswith("file://") else None)
    page.goto(path.as_uri(), wait_until="load")
    return page, problems


def _page_ids(html_root):
    return [p.relative_to(html_root).as_posix() for p in pages(html_root)]


def test_every_page_in_browser(built_book, browser):
    html_root = built_book["html"]
    checked = []
    for rel in _page_ids(html_root):
        page, problems = open_page(browser, html_root / rel)
        try:
            report = check_page(page, rel)
            if SCREENSHOTS:
                Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(SCREENSHOTS) / (rel.replace("/", "_") + ".png")),
                                full_page=True)
        finally:
            page.context.close()
        assert problems["console"] == [], f"{rel}: console errors {problems['console']}"
        assert problems["blocked"] == [], f"{rel}: requests left the machine {problems['blocked']}"
        assert problems["failed"] == [], f"{rel}: failed local loads {problems['failed']}"
        checked.append((rel, report))
    print()
    for rel, report in checked:
        print(f"{rel}: {json.dumps(report)}")
    assert any(r["figures"] for _, r in checked), "no page had a plotly figure"
    assert any(r["controls_moved"] for _, r in checked), "no explorer was exercised"


def check_page(page, rel: str) -> dict:
    report = {"math": 0, "figures": 0, "controls_moved": 0}
    # Math: every math element the page holds must be typeset by MathJax (its CommonHTML output
    # draws <mjx-math> with web fonts; the SVG output drew an <svg>).
    n_math = page.locator(".math").count()
    if n_math:
        page.wait_for_function(
            "n => document.querySelectorAll('mjx-container').length >= n", arg=n_math,
            timeout=20_000)
        assert page.locator("mjx-merror").count() == 0, f"{rel}: MathJax reported an error"
        drawn = page.locator("mjx-container > mjx-math, mjx-container > svg").count()
        assert drawn >= n_math, f"{rel}: math not drawn"
        report["math"] = n_math
    # Figures: each plotly div is drawn (an SVG with traces in it).
    figures = page.locator("div.plotly-graph-div")
    report["figures"] = figures.count()
    for i in range(figures.count()):
        fig = figures.nth(i)
        fig.scroll_into_view_if_needed()
        page.wait_for_function("gd => gd._fullLayout && gd.querySelector('.main-svg')",
                               arg=fig.element_handle(), timeout=20_000)
        n_traces = fig.evaluate("gd => gd.querySelectorAll('.trace, .hm, image').length")
        assert n_traces > 0, f"{rel}: figure {i} painted no trace"
        report["controls_moved"] += exercise_controls(page, fig, rel, i)
    return report


def exercise_controls(page, fig, rel: str, i: int) -> int:
    """Move each slider to its far end and pick each dropdown's last entry, like a reader."""
    moved = 0
    n_sliders = fig.evaluate("gd => (gd.layout.sliders || []).length")
    for s in range(n_sliders):
        before = fig.evaluate(SNAPSHOT_JS)
        rail = fig.locator("g.slider-container").nth(s).locator("rect.slider-rail-touch-rect")
        box = rail.bounding_box()
        assert box is not None, f"{rel}: figure {i} slider {s} is not drawn"
        # move to the far end away from where the slider starts (a figure may open at its last
        # step, where a click on the right end would change nothing)
        at_end = fig.evaluate(f"""gd => (gd.layout.sliders[{s}].active || 0)
                                     === gd.layout.sliders[{s}].steps.length - 1""")
        x = box["x"] + 3 if at_end else box["x"] + box["width"] - 3
        page.mouse.click(x, box["y"] + box["height"] / 2)
        page.wait_for_timeout(150)
        after = fig.evaluate(SNAPSHOT_JS)
        assert after != before, f"{rel}: figure {i} slider {s} changed nothing"
        moved += 1
    n_menus = fig.evaluate("gd => (gd.layout.updatemenus || []).length")
    for m in range(n_menus):
        before = fig.evaluate(SNAPSHOT_JS)
        menu = fig.locator("g.updatemenu-container").nth(m)
        menu.locator("g.updatemenu-header-group").click()
        buttons = menu.locator("g.updatemenu-dropdown-button")  # entries of a dropdown menu
        assert buttons.count() > 1, f"{rel}: figure {i} dropdown {m} has no entries"
        # the last entry, or the first when the figure opens at its last entry
        active = fig.evaluate(f"gd => gd.layout.updatemenus[{m}].active || 0")
        buttons.nth(0 if active == buttons.count() - 1 else buttons.count() - 1).click()
        page.wait_for_timeout(150)
        after = fig.evaluate(SNAPSHOT_JS)
        assert after != before, f"{rel}: figure {i} dropdown {m} changed nothing"
        moved += 1
    return moved


# Findings still open (issue 10) in the merged book: 1280 + 390 px, every state of every figure.
KNOWN_OPEN = {"collision": 161, "out_of_bounds": 21, "stale_title": 22, "too_long": 6}


def test_every_figure_is_legible(built_book, browser, tmp_path):
    """No colliding or clipped text, no text under 10 px, heatmap cells >= 12 px, titles that
    follow their data, in every state of every figure at both widths; no wide code blocks and no
    overlong chapters. A failure names page, figure, state and the two texts, with screenshots."""
    html_root = built_book["html"]
    shots = Path(SCREENSHOTS or tmp_path) / "legibility"
    results = []
    for rel in _page_ids(html_root):
        for width in (legibility.DESKTOP, legibility.PHONE):
            results.append(legibility.check_page(browser, html_root / rel, width, shots, rel))
    totals = legibility.totals(results)
    print(f"\nlegibility: {json.dumps(totals)}")
    findings = [f for r in results for f in r["findings"]]
    for f in findings:
        print(legibility.describe(f))
    # A ratchet while issue 10 is open: the kinds already fixed stay at 0, the others may not
    # grow beyond what the merged book had when this was written (see the closing note).
    over = {k: (totals[k], KNOWN_OPEN.get(k, 0)) for k in legibility.KINDS
            if totals[k] > KNOWN_OPEN.get(k, 0)}
    listed = "\n".join(legibility.describe(f) for f in findings
                       if f["kind"] in over)
    assert not over, (f"legibility findings above the known open ones {over} (screenshots in "
                      f"{shots}):\n{listed[:8000]}")


def test_cjk_characters_are_in_the_book_font(built_book):
    """Every CJK character that a page or a figure shows has a glyph in the shipped subset."""
    from book import fonts

    have = fonts.subset_chars(built_book["html"] / "_static" / "fonts" / fonts.SUBSET.name)
    missing = {}
    for page in pages(built_book["html"]):
        text = page.read_text(encoding="utf-8")
        # figure JSON may spell characters as \\uXXXX escapes
        text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
        lacking = fonts.cjk_chars(text) - have
        if lacking:
            missing[page.name] = "".join(sorted(lacking))
    assert not missing, (f"characters missing from the book font: {missing}; regenerate it "
                         "with `python -m book.fonts NotoSansCJK-Regular.ttc`")
