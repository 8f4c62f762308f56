"""From the page to a running notebook, in the built book (book/site/launch.py).

* ``make book`` (no class server): every chapter page of both editions has the "run this
  chapter" box under its banner with ``make lab CHAPTER=..`` of that page, and no launch button
  (``repository.url`` is empty); the box fits a 320 px screen without sideways scrolling.
* built with ``BOOK_HUB_URL`` (an extra build of each edition: ``make test-all`` and CI): every
  chapter page has sphinx-book-theme's JupyterHub button and the box, both with nbgitpuller's
  link to that chapter in the course (``zh/chapters/`` on the Chinese edition), the other pages
  neither; and those pages pass the browser test's page checks (axe-core WCAG 2.1 AA in light
  and dark mode, AA contrast, no console error, no request leaving the machine).

The hub builds reuse what the two ``make book`` builds executed (``BOOK_EXECUTION_CACHE``), so
they render the pages without running a kernel; ``BOOK_TEST_BUILDS`` keeps them across runs.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import headless
import page_checks
import pytest
from conftest import ROOT, _builds_dir

from book.chapters import CHAPTERS
from book.site import launch

pytestmark = pytest.mark.slow

HUB = launch.Hub("http://127.0.0.1:8000", launch.DEFAULT_COURSE)
NOT_CHAPTERS = ["index.html", "glossary.html", "chapters/teachers_guide.html",
                "chapters/class_server.html"]
BUILD_TIMEOUT_S = 1800


def _page(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def _box(text: str) -> str | None:
    found = re.findall(r'<div class="book-run [^"]*" role="note".*?</div>', text, re.S)
    assert len(found) <= 1, "more than one 'run this chapter' box"
    return found[0] if found else None


def _launch_links(text: str) -> list[str]:
    """The links of the theme's launch menu (its header's rocket)."""
    menu = re.search(r'<div class="dropdown dropdown-launch-buttons">(.*?)</ul>', text, re.S)
    return [html.unescape(u) for u in re.findall(r'<a href="([^"]+)"', menu.group(1))] \
        if menu else []


def _check_local(root: Path, edition: str) -> None:
    for c in CHAPTERS:
        text = _page(root, f"chapters/{c.page}.html")
        box = _box(text)
        assert box is not None, f"{edition} {c.page}: no 'run this chapter' box"
        banner_end = text.index("</p>", text.index('class="book-path-banner"')) + len("</p>")
        assert text[banner_end:].startswith(box), f"{edition} {c.page}: the box is not under " \
            "the banner"
        code = re.findall(r"<code[^>]*>(.*?)</code>", box, re.S)
        assert [html.unescape(x) for x in code] == [launch.lab_command(c.page, edition)], \
            (edition, c.page, box)
        assert "git clone" not in box, "repository.url is empty: no clone line"
        assert not _launch_links(text), f"{edition} {c.page}: a launch button with no server"
    for rel in NOT_CHAPTERS:
        assert _box(_page(root, rel)) is None, f"{edition} {rel} is no chapter: no box"


def test_every_chapter_says_how_to_run_it_locally(built_book, built_zh):
    for build, edition in ((built_book, "en"), (built_zh, "zh")):
        assert build["returncode"] == 0, build["log"][-3000:]
        _check_local(build["html"], edition)


@pytest.fixture(scope="module")
def browser():
    with headless.browser() as launched:
        yield launched


def _fits(browser, path: Path, width: int = 320) -> dict:
    page = browser.new_page(viewport={"width": width, "height": 800})
    try:
        page.goto(path.as_uri(), wait_until="load")
        return page.evaluate("""() => { const box = document.querySelector('.book-run');
            const r = box.getBoundingClientRect();
            const inner = [box, ...box.querySelectorAll('*')];
            return {left: r.left, right: r.right, width: innerWidth,
                    scrolls: inner.filter(e => e.scrollWidth > e.clientWidth + 1)
                                  .map(e => e.tagName)}; }""")
    finally:
        page.close()


def test_the_local_box_fits_320_px(built_book, built_zh, browser):
    """The longest command (chapter 4b's, in Chinese) wraps inside the box: nothing scrolls."""
    for build, page in ((built_book, "04b_toy_model"), (built_zh, "04b_toy_model")):
        found = _fits(browser, build["html"] / "chapters" / f"{page}.html")
        assert 0 <= found["left"] and found["right"] <= found["width"], found
        assert not found["scrolls"], found


# --- built for a class server (extended) --------------------------------------------------------

def _hub_build(config, edition: str, source: dict) -> dict:
    """``edition`` built with BOOK_HUB_URL into the test builds' folder, reusing what ``source``
    (the same edition's make-book build) executed; waits for a build another process started."""
    from filelock import FileLock

    out = _builds_dir(config) / f"book-hub-{edition}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent / "builds.lock")):
        if not (out / "started").exists():
            out.mkdir(parents=True, exist_ok=True)
            (out / "started").write_text(str(os.getpid()), encoding="utf-8")
            env = {**os.environ, launch.HUB_URL_ENV: HUB.url, launch.HUB_COURSE_ENV: HUB.course,
                   "BOOK_EXECUTION_CACHE": str(source["html"].parent / ".book-executed")}
            log = open(out / "runner.log", "w", encoding="utf-8")  # noqa: SIM115 - the child's
            subprocess.Popen([sys.executable, str(ROOT / "tests" / "build_edition.py"),
                              edition, str(out)], stdout=log, stderr=subprocess.STDOUT,
                             cwd=ROOT, env=env)
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while not (out / "result.json").exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the hub build of {edition} did not finish; see {out / 'runner.log'}")
        time.sleep(1)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return {**result, "html": out / "_build" / "html"}


@pytest.fixture(scope="module")
def hub_builds(request, built_book, built_zh):
    """Both editions built for HUB (started together, after the make-book builds)."""
    for edition, source in (("en", built_book), ("zh", built_zh)):
        _hub_build(request.config, edition, source)   # starts it; the wait below is short
    return {edition: _hub_build(request.config, edition, source)
            for edition, source in (("en", built_book), ("zh", built_zh))}


@pytest.mark.extended
def test_hub_builds_have_the_launch_button_on_every_chapter(hub_builds):
    for edition, build in hub_builds.items():
        assert build["returncode"] == 0, build["log"][-4000:]
        assert build["warnings"] == 0, build["log"][-4000:]
        assert "Executing notebook" not in build["log"], "the hub build ran kernels again"
        root = build["html"]
        for c in CHAPTERS:
            text = _page(root, f"chapters/{c.page}.html")
            url = launch.launch_url(HUB, c.page, edition)
            assert _launch_links(text) == [url], (edition, c.page, _launch_links(text))
            box = _box(text)
            assert box is not None and "book-run-hub" in box, (edition, c.page)
            assert [html.unescape(h) for h in re.findall(r'href="([^"]+)"', box)] == [url]
            assert "make lab" not in box
        for rel in NOT_CHAPTERS:
            text = _page(root, rel)
            assert not _launch_links(text) and _box(text) is None, (edition, rel)


@pytest.mark.extended
def test_hub_builds_chapter_pages_pass_the_page_checks(hub_builds, browser):
    from test_browser import accessibility_of, open_page

    script = page_checks.axe_script()
    found = {"counts": {"light": {}, "dark": {}}, "lowest": {}, "failures": [], "low": []}
    problems = []
    for edition, build in hub_builds.items():
        for c in CHAPTERS:
            rel = f"chapters/{c.page}.html"
            page, seen = open_page(browser, build["html"] / rel)
            try:
                accessibility_of(page, f"{edition} {rel}", script, found)
                page_checks.set_light(page)
                page.locator(".dropdown-launch-buttons button").click()
                item = page.locator(".dropdown-launch-buttons a.dropdown-item")
                item.wait_for(state="visible", timeout=5_000)
                assert item.get_attribute("href") == launch.launch_url(HUB, c.page, edition)
                fits = page.evaluate("document.documentElement.scrollWidth")
                assert fits <= 1280, f"{edition} {rel}: {fits} px wide at 1280"
            finally:
                page.context.close()
            problems += [f"{edition} {rel}: {key} {seen[key]}" for key in seen if seen[key]]
        found_320 = _fits(browser, build["html"] / "chapters" / "04b_toy_model.html")
        assert found_320["right"] <= found_320["width"] and not found_320["scrolls"], found_320
    print(f"\naxe on the hub builds' chapter pages: {json.dumps(found['counts'])}")
    assert not (problems or found["failures"] or found["low"]), "\n".join(
        problems + found["failures"] + found["low"])
