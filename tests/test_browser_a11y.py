"""WCAG 2.1 AA over every page of both editions (issue 47): axe-core, reflow at 320 px and a
visible focus ring on every kind of Tab stop.

Each page is opened twice, from file://, in the test's Chromium (tests/headless.py):

* at 1280 × 900, in light mode (the theme's default): the keyboard walk, Tab from the top of
  the page to the end, and for the first element of each kind it reached (a link, a button, a
  summary, an input, a select... in each part of the page; each of the theme's header buttons
  such as "Toggle primary sidebar" and "Download this page"; the book's buttons and summaries
  by class) a screenshot of the element's box and a few px around it with keyboard focus and
  without must differ in at least as many pixels as a one-px ring around the box has
  (tests/a11y.py focus_report); then, every <details> opened, axe-core (``tests/a11y``'s pinned
  axe.min.js, installed by ``make test-deps``) with the tags wcag2a, wcag2aa, wcag21a, wcag21aa;
* at 320 × 800 CSS px (WCAG 1.4.10's reflow width), every <details> opened, in dark mode: the
  page does not scroll sideways (document.scrollingElement.scrollWidth <= clientWidth + 1; a
  wide table or code block scrolls inside its own box), no text is cut off by a box that hides
  its overflow, and axe-core again (the narrow layout has its own drawers and scroll boxes, and
  dark mode its own colours).

Every finding of every page is collected, then reported: each axe violation with its rule id,
impact, target and page. The pages are shared among a few browsers, one per thread
(``BOOK_A11Y_WORKERS``, default 3).
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from pathlib import Path

import a11y
import headless
import page_checks
import pytest

pytestmark = pytest.mark.slow  # a browser: make test runs it, make quick leaves it out

EDITION_BUILDS = ["built_book", "built_zh"]
WORKERS = int(os.environ.get("BOOK_A11Y_WORKERS", "3"))
WIDE, NARROW = {"width": 1280, "height": 900}, {"width": 320, "height": 800}
# kinds of Tab stop the walk must have checked in each edition (that it reaches them at all)
# (the theme's header buttons by class: their names are not translated everywhere)
MUST_CHECK = ("link", "button", "summary", "input:", "select", ".primary-toggle",
              ".dropdown-toggle")
REPORT = Path(__file__).resolve().parent.parent / "_build"  # a11y-<edition>.json: the findings


def edition_pages(html_root: Path) -> list[str]:
    """Every page a reader can open in the edition at ``html_root`` (search and index pages
    too), but not those of another edition published inside it (make book puts the Chinese
    one, with its own _static, under zh/ of the English)."""
    nested = {d.name for d in html_root.iterdir() if d.is_dir() and (d / "_static").is_dir()
              and d.name != "_static"}
    return sorted(p.relative_to(html_root).as_posix() for p in html_root.rglob("*.html")
                  if "_static" not in p.relative_to(html_root).parts
                  and p.relative_to(html_root).parts[0] not in nested)


def _open(browser, path: Path, viewport: dict):
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file://", "data:", "blob:")) else r.abort())
    page.goto(path.as_uri(), wait_until="load")
    # the theme fades colours in over 0.25 s: axe measures the settled ones
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    a11y.settle(page)
    return page


def check_page(browser, html_root: Path, rel: str, script: str) -> dict:
    """One page's findings: axe lines, reflow lines, focus lines, the focus rows' kinds and
    the axe counts by rule."""
    found = {"axe": [], "reflow": [], "focus": [], "kinds": set(), "counts": {}, "checked": 0,
             "seconds": {}}
    clock = [time.perf_counter()]

    def lap(name):
        now = time.perf_counter()
        found["seconds"][name] = round(now - clock[0], 2)
        clock[0] = now

    def axe(page, where):
        violations = a11y.run_axe(page, script)
        for v in violations:
            key = f"{v['id']} ({v['impact']})"
            found["counts"][key] = found["counts"].get(key, 0) + len(v["nodes"])
        found["axe"] += a11y.describe(violations, where)

    page = _open(browser, html_root / rel, WIDE)
    try:
        lap("open 1280")
        for row in a11y.focus_report(page):
            found["checked"] += 1
            found["kinds"].add(f"{row['kind']} {row['id']}")
            if row["changed"] < row["needed"]:
                found["focus"].append(
                    f"{rel}: {row['kind']} {row['id']} {row['label']!r}: focus changes "
                    f"{row['changed']} px around its box, a ring needs {row['needed']}")
        lap("focus")
        a11y.open_details(page)
        axe(page, f"{rel} [1280 px]")
        lap("axe 1280")
    finally:
        page.context.close()

    page = _open(browser, html_root / rel, NARROW)
    try:
        a11y.open_details(page)
        page_checks.set_dark(page)
        a11y.settle(page)
        lap("open 320")
        side = a11y.sideways(page)
        if side["scrollWidth"] > side["clientWidth"] + 1:
            found["reflow"].append(
                f"{rel}: scrolls sideways by {side['scrollWidth'] - side['clientWidth']} px "
                f"at 320 px: " + "; ".join(f"{b['what']} to x={b['right']} ({b['text']!r})"
                                           for b in side["boxes"]))
        found["reflow"] += [f"{rel}: cut off at 320 px: {c['what']} ({c['text']!r}) passes "
                            f"{c['in']} by {c['past']} px" for c in side["cut"]]
        axe(page, f"{rel} [320 px, dark]")
        lap("axe 320")
    finally:
        page.context.close()
    return found


def check_pages(html_root: Path, pages: list[str], workers: int = WORKERS) -> dict[str, dict]:
    """check_page for each page, shared among ``workers`` threads, each with its own browser."""
    script = a11y.axe_source()
    todo: queue.Queue[str] = queue.Queue()
    for rel in pages:
        todo.put(rel)
    results: dict[str, dict] = {}
    errors: list[BaseException] = []

    def work():
        try:
            with headless.browser() as browser:
                while True:
                    try:
                        rel = todo.get_nowait()
                    except queue.Empty:
                        return
                    results[rel] = check_page(browser, html_root, rel, script)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(max(1, min(workers, len(pages))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


@pytest.fixture(scope="module", autouse=True)
def _chromium():
    if not Path(headless.CHROMIUM).exists():
        pytest.fail("chromium is not installed: run `make test-deps` (make test does)")
    a11y.axe_source()  # raises naming `make test-deps` when axe-core is not installed


@pytest.mark.parametrize("build", EDITION_BUILDS)
def test_wcag_21_aa_on_every_page(request, build):
    html_root = request.getfixturevalue(build)["html"]
    pages = edition_pages(html_root)
    assert pages, f"no pages under {html_root}"
    started = time.perf_counter()
    results = check_pages(html_root, pages)
    seconds = time.perf_counter() - started

    counts: dict[str, int] = {}
    for r in results.values():
        for key, n in r["counts"].items():
            counts[key] = counts.get(key, 0) + n
    kinds = set().union(*(r["kinds"] for r in results.values()))
    checked = sum(r["checked"] for r in results.values())
    print(f"\n{build}: {len(pages)} pages in {seconds:.0f} s (axe-core {a11y.axe_version()}, "
          f"{WORKERS} browsers); axe violations by rule: {counts or 'none'}; "
          f"{checked} focus rings checked, {len(kinds)} kinds")

    REPORT.mkdir(exist_ok=True)
    (REPORT / f"a11y-{build}.json").write_text(json.dumps(
        {rel: {**r, "kinds": sorted(r["kinds"])} for rel, r in results.items()},
        ensure_ascii=False, indent=1), encoding="utf-8")

    failures = []
    for what, title in (("axe", "axe-core violations (rule, impact, target, page)"),
                        ("reflow", "reflow at 320 px (WCAG 1.4.10)"),
                        ("focus", "no visible focus change (WCAG 2.4.7)")):
        lines = [line for rel in pages for line in results[rel][what]]
        if lines:
            failures.append(f"{len(lines)} {title}:\n  " + "\n  ".join(lines))
    missing = [k for k in MUST_CHECK if not any(k in kind for kind in kinds)]
    if missing:
        failures.append(f"the keyboard walk checked no {missing} (kinds seen: {sorted(kinds)})")
    assert not failures, "\n".join(failures)


BARE_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>bare</title>
<style>body { margin: 8px; font: 16px sans-serif; } .plain:focus { outline: none; }
.ringed:focus-visible { outline: 3px solid #c132af; outline-offset: 2px; }
.cut { width: 120px; overflow: hidden; } .wide { width: 600px; }
details.clip { overflow: hidden; }
details.clip > summary:focus-visible { outline: 3px solid #c132af; }
</style></head><body><main>
<button class="plain">no ring</button> <button class="ringed">ring</button>
<details class="clip"><summary>clipped ring</summary>x</details>
<p><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="8" height="8"></p>
<div class="cut"><span>a_name_far_too_long_for_its_box_to_hold</span></div>
<div class="%s">wide</div></main></body></html>"""


def test_the_checks_see_what_they_must(tmp_path):
    """The checker itself, on a bare page: a button whose ring is switched off, and a summary
    whose ring its box's overflow clips, are found, a ringed button is not; an image without
    a text alternative is an axe violation; a box 600 px wide scrolls a 320 px page sideways,
    and text that runs out of a box hiding its overflow is cut off."""
    with headless.browser() as browser:
        for wide in (True, False):
            path = tmp_path / f"bare-{wide}.html"
            path.write_text(BARE_PAGE % ("wide" if wide else ""), encoding="utf-8")
            page = browser.new_page(viewport=NARROW)
            try:
                page.goto(path.as_uri(), wait_until="load")
                rows = {r["label"]: r for r in a11y.focus_report(page)}
                assert rows["no ring"]["changed"] < rows["no ring"]["needed"], rows["no ring"]
                assert rows["ring"]["changed"] >= rows["ring"]["needed"], rows["ring"]
                summary = rows["clipped ring"]
                assert summary["changed"] < summary["needed"], summary
                assert "image-alt" in {v["id"] for v in a11y.run_axe(page)}
                side = a11y.sideways(page)
                assert (side["scrollWidth"] > side["clientWidth"] + 1) is wide, side
                assert [c["in"] for c in side["cut"]] == ["div.cut"], side
            finally:
                page.close()
