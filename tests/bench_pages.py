"""Build and page benchmarks (``make bench``; asserts nothing): cold build, rebuilds, page weight
and first paint, measured in Chromium from ``file://``.

* builds run ``jupyter-book build -nW --keep-going`` in a scratch copy of the repository (its
  ``book/`` first on PYTHONPATH, so editing it there is what the build sees): a cold build, a
  rebuild of the unchanged tree, and a rebuild after appending a line to ``book/ideas/scaling.py``;
* page weight is the HTML plus every local file the browser actually loaded for it (scripts,
  stylesheets, fonts, images), summed from the files on disk; limits: a chapter ≤ 4 MB, a page
  without figures ≤ 1.5 MB;
* first paint is the time from navigation start until the page's first plotly figure has drawn
  its SVG (and until the last one has), in headless Chromium, network cut off.

Run alone: ``python tests/bench_pages.py`` (builds into a temporary folder), or
``python tests/bench_pages.py --html _build/html`` (pages only, of a book built already).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import headless

ROOT = Path(__file__).resolve().parent.parent
JB = Path(sys.executable).parent / "jupyter-book"
CHAPTER_LIMIT, PLAIN_LIMIT, PAINT_LIMIT_MS = 4_000_000, 1_500_000, 1000
LOADS = 3  # each page opened this many times by make bench; paint times are the medians
COPY = ["book", "chapters", "assets", "locale", "_config.yml", "_toc.yml", "index.md",
        "glossary.md", "pyproject.toml"]
CJK = re.compile(r"[\u4e00-\u9fff]")

# Records, from the start of navigation, when the first and the last plotly figure drew.
PAINT_PROBE = """
(() => {
  const t = window.__bookPaint = {first: null, last: null, figures: 0};
  const check = () => {
    const divs = document.querySelectorAll('.plotly-graph-div');
    const drawn = Array.from(divs).filter(d => d.querySelector('.main-svg')).length;
    t.figures = divs.length;
    if (drawn && t.first === null) t.first = performance.now();
    if (divs.length && drawn === divs.length && document.readyState !== 'loading') {
      t.last = performance.now();
      return;
    }
    requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
})();
"""


def scratch_copy(target: Path) -> Path:
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, target / name,
                            ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        elif src.exists():
            shutil.copy2(src, target / name)
    return target


def build(root: Path, edition: str = "en") -> dict:
    """One ``jupyter-book build`` of ``root`` (``make book``'s command for that edition): wall
    and CPU seconds, notebooks executed."""
    env = dict(os.environ, PYTHONPATH=str(root), PYDEVD_DISABLE_FILE_VALIDATION="1")
    extra = []
    if edition != "en":
        # cwd: ``python -m`` puts the working folder before PYTHONPATH on sys.path
        config = subprocess.run([sys.executable, "-m", "book.site.editions", "config", edition],
                                env=env, cwd=root, capture_output=True, text=True, check=True)
        extra = ["--config", config.stdout.strip(), "--path-output",
                 str(root / "_build" / edition)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(JB), "build", str(root), "-nW", "--keep-going", *extra], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        print(log[-4000:])
        raise SystemExit(f"the {edition} edition did not build; see the log above")
    executed = sorted(set(re.findall(r"(chapters/\w+)\.ipynb: Executing notebook", log)))
    if edition == "zh":  # the prose must be the translation, not English with Chinese figures
        index = root / "_build" / "zh" / "_build" / "html" / "index.html"
        prose = re.sub(r"<script.*?</script>", "", index.read_text(encoding="utf-8"), flags=re.S)
        if len(CJK.findall(prose)) < 200:
            raise SystemExit(f"{index} holds {len(CJK.findall(prose))} Chinese characters: the "
                             "Chinese edition was built without its catalogues (locale/)")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "read": executed, "log": log}


def pages(html_root: Path) -> list[Path]:
    """The book's pages under ``html_root``, without another edition published inside it."""
    nested = {d for d in html_root.iterdir() if d.is_dir() and (d / "_static").is_dir()}
    return sorted(p for p in html_root.rglob("*.html")
                  if "_static" not in p.relative_to(html_root).parts
                  and not any(d in p.parents for d in nested)
                  and p.name not in {"genindex.html", "search.html"})


def html_roots(html_root: Path) -> list[Path]:
    """The English edition's root and, when published there (``make book``), the Chinese
    edition under its ``zh/``."""
    return [html_root] + [d for d in [html_root / "zh"] if (d / "index.html").is_file()]


FONT_SUFFIXES = (".woff", ".woff2", ".ttf", ".otf")
CJK_FONT = "NotoSansSC"  # the book's CJK subset font(s), book/site/fonts.py


def browser_pages(html_root: Path, browser=None, loads: int = 1) -> list[dict]:
    """Per page: bytes loaded (HTML + local files fetched), figures, first/last figure paint,
    and the CJK font files it loaded (``cjk_fonts``, their paths). ``browser``: a Playwright
    Chromium to use (one is launched when None). ``loads`` > 1: each page is opened that many
    times (a fresh browser context each) and the paint times are the medians, with the range of
    the first paint in ``first_range`` (one load varies by ±30 % on a 2-core machine)."""
    if browser is None:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = headless.launch(p)
            try:
                return browser_pages(html_root, browser, loads)
            finally:
                browser.close()
    rows = []
    for path in pages(html_root):
        runs = [_load_page(browser, path, html_root) for _ in range(loads)]
        row = dict(runs[0], loads=loads)
        firsts, lasts = [r["first_ms"] for r in runs], [r["last_ms"] for r in runs]
        if None in firsts:  # a load that never painted (or a page without figures)
            row["first_ms"] = row["last_ms"] = None
        else:
            row["first_ms"], row["first_range"] = statistics.median(firsts), (min(firsts),
                                                                              max(firsts))
            row["last_ms"] = None if None in lasts else statistics.median(lasts)
        rows.append(row)
    return rows


def record_loads(page, loaded: set[Path]) -> None:
    """Before ``page`` navigates: put the paint probe in it, and have ``loaded`` receive the path
    of every local file it fetches (what :func:`page_row` weighs)."""
    def finished(request):
        url = urlparse(request.url)
        if url.scheme == "file":
            loaded.add(Path(unquote(url.path)))

    page.on("requestfinished", finished)
    page.add_init_script(PAINT_PROBE)


def page_row(page, path: Path, html_root: Path, loaded: set[Path]) -> dict:
    """Once ``path`` has loaded in ``page`` (set up by :func:`record_loads`): wait until its
    figures have painted, then its weight (the HTML and every local file fetched, sizes on
    disk), the CJK font's share and the paint times."""
    try:
        page.wait_for_function("() => !window.__bookPaint.figures || "
                               "window.__bookPaint.last !== null", timeout=30_000)
    except Exception:  # noqa: BLE001 - report what was reached
        pass
    page.wait_for_timeout(300)  # late font loads
    paint = page.evaluate("() => window.__bookPaint")
    files = {f: f.stat().st_size for f in loaded | {path} if f.is_file()}
    cjk_fonts = sorted(f for f in files if f.name.startswith(CJK_FONT))
    return {"page": path.relative_to(html_root).as_posix(), "root": html_root,
            "bytes": sum(files.values()), "files": len(files),
            "cjk_font": sum(files[f] for f in cjk_fonts), "cjk_fonts": cjk_fonts,
            "fonts": sum(n for f, n in files.items() if f.suffix in FONT_SUFFIXES),
            "mathjax": sum(n for f, n in files.items() if "mathjax" in f.parts),
            "plotly": sum(n for f, n in files.items() if "plotly" in f.name),
            "figures": paint["figures"],
            "first_ms": paint["first"], "last_ms": paint["last"]}


def _load_page(browser, path: Path, html_root: Path) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    loaded: set[Path] = set()

    def route(r):
        if r.request.url.startswith(("file://", "data:", "blob:")):
            r.continue_()
        else:
            r.abort()

    page.route("**/*", route)
    record_loads(page, loaded)
    try:
        page.goto(path.as_uri(), wait_until="load")
        return page_row(page, path, html_root, loaded)
    finally:
        context.close()


def edition(html_root: Path) -> str:
    """The edition of a built html root, from its landing page's ``<html lang>``."""
    head = (html_root / "index.html").read_text(encoding="utf-8")[:2000]
    found = re.search(r'<html[^>]*\blang="([a-zA-Z]+)', head)
    return (found.group(1).lower() if found else "en")


def browser_roots(html_roots_: list[Path], loads: int = 1) -> list[dict]:
    """:func:`browser_pages` of several html roots (editions), one list; each row names its
    ``edition`` and, past English, its page starts with the edition's folder (``zh/…``)."""
    rows = []
    for root in html_roots_:
        code = edition(root)
        prefix = "" if code == "en" else f"{code}/"
        for r in browser_pages(root, loads=loads):
            rows.append({**r, "edition": code, "page": prefix + r["page"]})
    return rows


def report_pages(rows: list[dict]) -> None:
    print(f"\npages from file:// in Chromium: weight = HTML + every local file loaded "
          f"(limits: chapter ≤ {CHAPTER_LIMIT / 1e6:.1f} MB, no figures ≤ "
          f"{PLAIN_LIMIT / 1e6:.1f} MB); of it MathJax, plotly.js, the CJK font (its share); "
          f"first/last figure painted (limit first ≤ {PAINT_LIMIT_MS} ms; the median of "
          f"{rows[0].get('loads', 1) if rows else 1} loads, the first's range)")
    print(f"  {'page':38}{'MB':>6}{'files':>6}{'MathJax':>8}{'plotly':>7}{'CJK font':>9}"
          f"{'share':>7}{'figures':>8}{'first ms':>9}{'range':>11}{'last ms':>8}")
    for r in rows:
        limit = CHAPTER_LIMIT if r["figures"] else PLAIN_LIMIT
        first = "—" if r["first_ms"] is None else f"{r['first_ms']:.0f}"
        last = "—" if r["last_ms"] is None else f"{r['last_ms']:.0f}"
        spread = "" if "first_range" not in r else "{:.0f}–{:.0f}".format(*r["first_range"])
        slow = r["figures"] and (r["first_ms"] is None or r["first_ms"] > PAINT_LIMIT_MS)
        verdict = "OVER" if r["bytes"] > limit else "SLOW" if slow else "ok"
        print(f"  {r['page']:38}{r['bytes'] / 1e6:6.2f}{r['files']:6}"
              f"{r.get('mathjax', 0) / 1e6:8.2f}{r.get('plotly', 0) / 1e6:7.2f}"
              f"{r.get('cjk_font', 0) / 1e6:9.3f}{100 * r.get('cjk_font', 0) / r['bytes']:6.1f}%"
              f"{r['figures']:8}{first:>9}{spread:>11}{last:>8}  {verdict}")
    figures = [r for r in rows if r["figures"]]
    if figures:
        heaviest = max(figures, key=lambda r: r["bytes"])
        firsts = [r["first_ms"] for r in figures if r["first_ms"] is not None]
        within = sum(f <= PAINT_LIMIT_MS for f in firsts)
        print(f"  chapters: heaviest {heaviest['page']} {heaviest['bytes'] / 1e6:.2f} MB; "
              f"first paint {min(firsts, default=0):.0f}–{max(firsts, default=0):.0f} ms, "
              f"{within} of {len(figures)} pages within {PAINT_LIMIT_MS} ms; "
              f"load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        for code in sorted({r.get("edition", "en") for r in figures}):
            mine = [r for r in figures if r.get("edition", "en") == code]
            top = max(mine, key=lambda r: r["bytes"])
            room = (CHAPTER_LIMIT - top["bytes"]) / 1e3
            print(f"  {code}: the heaviest chapter leaves {room:.0f} kB under the limit for a "
                  f"larger CJK font (now {top['cjk_font'] / 1e3:.0f} kB)")


def report_builds(rows: list[tuple[str, str, dict]]) -> None:
    print("\nbuilds (jupyter-book build -nW --keep-going, as make book; a scratch copy of the "
          f"repository; load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())})")
    print(f"  {'edition':8}{'build':34}{'wall s':>8}{'CPU s':>8}{'executed':>10}")
    for edition, what, r in rows:
        print(f"  {edition:8}{what:34}{r['wall']:8.1f}{r['cpu']:8.1f}{len(r['read']):10}")


def main(argv: list[str] | None = None) -> None:
    """``--html DIR``: pages only, of a book built already (its zh/ too when published there);
    ``--zh``: the Chinese edition's builds and pages as well."""
    argv = list(argv or [])
    if argv and argv[0] == "--html":
        report_pages(browser_roots(html_roots(Path(argv[1])), loads=LOADS))
        return
    editions = ["en", "zh"] if "--zh" in argv else ["en"]
    with tempfile.TemporaryDirectory() as tmp:
        root = scratch_copy(Path(tmp))
        rows = []
        for edition in editions:
            rows.append((edition, "cold (executes every notebook)", build(root, edition)))
        for edition in editions:
            rows.append((edition, "rebuild, unchanged tree", build(root, edition)))
        with open(root / "book" / "scaling.py", "a", encoding="utf-8") as f:
            f.write("\n# an edit to book/ (bench)\n")
        for edition in editions:
            rows.append((edition, "rebuild after editing "
                                  "book/ideas/scaling.py", build(root, edition)))
        report_builds(rows)
        if "zh" in editions:
            published = subprocess.run([sys.executable, "-m", "book.site.editions", "publish"],
                                       env=dict(os.environ, PYTHONPATH=str(root)), cwd=root,
                                       capture_output=True, text=True)
            if published.returncode != 0:
                print(published.stdout + published.stderr)
                raise SystemExit("publishing the Chinese edition failed; see the log above")
        report_pages(browser_roots(html_roots(root / "_build" / "html"), loads=LOADS))


if __name__ == "__main__":
    main(sys.argv[1:])
