"""Build and page benchmarks (``make bench``; asserts nothing): cold build, rebuilds, page weight
and first paint, measured in Chromium from ``file://``.

* builds run ``jupyter-book build -nW --keep-going`` in a scratch copy of the repository (its
  ``book/`` first on PYTHONPATH, so editing it there is what the build sees): a cold build, a
  rebuild of the unchanged tree, and a rebuild after appending a line to ``book/scaling.py``;
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
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parent.parent
JB = Path(sys.executable).parent / "jupyter-book"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
CHAPTER_LIMIT, PLAIN_LIMIT, PAINT_LIMIT_MS = 4_000_000, 1_500_000, 1000
COPY = ["book", "chapters", "assets", "_config.yml", "_toc.yml", "index.md", "pyproject.toml"]

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


def build(root: Path) -> dict:
    """One ``jupyter-book build`` of ``root``: wall and CPU seconds, notebooks executed."""
    env = dict(os.environ, PYTHONPATH=str(root), PYDEVD_DISABLE_FILE_VALIDATION="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(JB), "build", str(root), "-nW", "--keep-going"], env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = proc.stdout + proc.stderr
    if proc.returncode != 0:
        print(log[-4000:])
        raise SystemExit("the book did not build; see the log above")
    executed = sorted(set(re.findall(r"(chapters/\w+)\.ipynb: Executing notebook", log)))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "read": executed, "log": log}


def pages(html_root: Path) -> list[Path]:
    return sorted(p for p in html_root.rglob("*.html")
                  if "_static" not in p.parts and p.name not in {"genindex.html", "search.html"})


def browser_pages(html_root: Path) -> list[dict]:
    """Per page: bytes loaded (HTML + local files fetched), figures, first/last figure paint."""
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        for path in pages(html_root):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            page = context.new_page()
            loaded: set[Path] = set()

            def route(r):
                if r.request.url.startswith(("file://", "data:", "blob:")):
                    r.continue_()
                else:
                    r.abort()

            def finished(request, loaded=loaded):
                url = urlparse(request.url)
                if url.scheme == "file":
                    loaded.add(Path(unquote(url.path)))

            page.route("**/*", route)
            page.on("requestfinished", finished)
            page.add_init_script(PAINT_PROBE)
            page.goto(path.as_uri(), wait_until="load")
            try:
                page.wait_for_function("() => !window.__bookPaint.figures || "
                                       "window.__bookPaint.last !== null", timeout=30_000)
            except Exception:  # noqa: BLE001 - report what was reached
                pass
            page.wait_for_timeout(300)  # late font loads
            paint = page.evaluate("() => window.__bookPaint")
            loaded.add(path)
            weight = sum(f.stat().st_size for f in loaded if f.is_file())
            rows.append({"page": path.relative_to(html_root).as_posix(), "bytes": weight,
                         "files": len(loaded), "figures": paint["figures"],
                         "first_ms": paint["first"], "last_ms": paint["last"]})
            context.close()
        browser.close()
    return rows


def report_pages(rows: list[dict]) -> None:
    print(f"\npages from file:// in Chromium: weight = HTML + every local file loaded "
          f"(limits: chapter ≤ {CHAPTER_LIMIT / 1e6:.1f} MB, no figures ≤ "
          f"{PLAIN_LIMIT / 1e6:.1f} MB); first/last figure painted (limit first ≤ "
          f"{PAINT_LIMIT_MS} ms)")
    print(f"  {'page':34}{'MB':>7}{'files':>7}{'figures':>9}{'first ms':>10}{'last ms':>9}")
    for r in rows:
        limit = CHAPTER_LIMIT if r["figures"] else PLAIN_LIMIT
        first = "—" if r["first_ms"] is None else f"{r['first_ms']:.0f}"
        last = "—" if r["last_ms"] is None else f"{r['last_ms']:.0f}"
        slow = r["figures"] and (r["first_ms"] is None or r["first_ms"] > PAINT_LIMIT_MS)
        verdict = "OVER" if r["bytes"] > limit or slow else "ok"
        print(f"  {r['page']:34}{r['bytes'] / 1e6:7.2f}{r['files']:7}{r['figures']:9}"
              f"{first:>10}{last:>9}  {verdict}")


def main(argv: list[str] | None = None) -> None:
    if argv and argv[0] == "--html":  # only the page measurements, on a book built already
        report_pages(browser_pages(Path(argv[1])))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = scratch_copy(Path(tmp))
        cold = build(root)
        print(f"\ncold build (jupyter-book build -nW, executes every notebook): "
              f"{cold['wall']:.1f} s wall, {cold['cpu']:.1f} s CPU")
        same = build(root)
        print(f"rebuild, unchanged tree: {same['wall']:.1f} s wall, {same['cpu']:.1f} s CPU, "
              f"{len(same['read'])} notebook(s) re-executed")
        with open(root / "book" / "scaling.py", "a", encoding="utf-8") as f:
            f.write("\n# an edit to book/ (bench)\n")
        edit = build(root)
        print(f"rebuild after editing book/scaling.py: {edit['wall']:.1f} s wall, "
              f"{edit['cpu']:.1f} s CPU, {len(edit['read'])} notebook(s) re-executed "
              f"({', '.join(edit['read'])})")
        report_pages(browser_pages(root / "_build" / "html"))


if __name__ == "__main__":
    main(sys.argv[1:])
