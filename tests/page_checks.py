"""Page checks of the browser test beyond the figures: accessibility (axe-core), dark-mode
contrast, print layout, page weight, search from ``file://`` and the language switch.

axe-core comes from the ``axe-playwright-python`` package (requirements-dev.txt), which ships
Deque's ``axe.min.js`` (MPL-2.0) inside its wheel: nothing is fetched at test time. The script is
injected into each page and run with its default rules plus the experimental ones (the theme's
``label-content-name-mismatch`` findings are experimental in axe-core 4.12).

``python tests/page_checks.py PAGE.html`` prints every finding of one page, in both modes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import headless

BLOCKING = ("serious", "critical")
AA_NORMAL, AA_LARGE = 4.5, 3.0


def axe_script() -> str:
    from axe_playwright_python.base import AXE_FILE_PATH

    return AXE_FILE_PATH.read_text(encoding="utf-8")


# Run axe on the whole document: default rules and the experimental ones; violations only.
AXE_RUN_JS = """async (only) => {
  const experimental = axe.getRules(['experimental']).map(r => r.ruleId);
  // preload: false — axe would fetch each stylesheet by XHR, which file:// refuses (console errors)
  const options = {resultTypes: ['violations'], preload: false,
                   rules: Object.fromEntries(experimental.map(id => [id, {enabled: true}]))};
  if (only) options.runOnly = {type: 'rule', values: only};
  const r = await axe.run(document, options);
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160),
                              summary: (n.failureSummary || '').slice(0, 300)}))}));
}"""


def set_dark(page) -> None:
    """The theme's dark mode, as its switcher sets it (data-theme and data-mode on <html>)."""
    # the theme fades colours in over 0.25 s: switched off, so axe measures the settled colours
    # (with no transition they are settled at the next style recalculation; two frames on,
    # whatever the change started, such as the dark logo's load, has started too)
    page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    _set_mode(page, "dark")


def set_light(page) -> None:
    """The theme's light mode, its default (what a reader sees first and prints)."""
    _set_mode(page, "light")


def _set_mode(page, mode: str) -> None:
    page.evaluate("""(mode) => new Promise(done => {
        document.documentElement.dataset.mode = mode;
        document.documentElement.dataset.theme = mode;
        requestAnimationFrame(() => requestAnimationFrame(done));
    })""", mode)


def run_axe(page, script: str, only: list[str] | None = None) -> list[dict]:
    """axe's violations on ``page`` (every impact); ``only``: just these rule ids."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(script)
    return page.evaluate(AXE_RUN_JS, only)


def blocking(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in BLOCKING]


def count_by_rule(violations: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in violations:
        key = f"{v['id']} ({v['impact']})"
        out[key] = out.get(key, 0) + len(v["nodes"])
    return out


# The contrast of every text the book's own CSS colours (and the language switch), computed
# from the rendered colours: text colour over the first opaque background behind it.
CONTRAST_JS = r"""(selectors) => {
  const rgba = (s) => { const m = s.match(/[\d.]+/g).map(Number);
                        return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const lum = ([r, g, b]) => { const f = (c) => { c /= 255;
      return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let out = [255, 255, 255];
    for (const c of layers.reverse()) out = out.map((v, i) => c[i] * c[3] + v * (1 - c[3]));
    return out;
  };
  const found = [];
  for (const sel of selectors) {
    for (const el of document.querySelectorAll(sel)) {
      const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
      if (!own || !el.getClientRects().length) continue;
      const cs = getComputedStyle(el);
      const fg = rgba(cs.color), bg = background(el);
      const mixed = fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3]));
      const [a, b] = [lum(mixed), lum(bg)].sort((x, y) => y - x);
      const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight) >= 700;
      const large = size >= 24 || (bold && size >= 18.66);
      found.push({selector: sel, text: el.textContent.trim().slice(0, 40),
                  ratio: Math.round((a + 0.05) / (b + 0.05) * 100) / 100,
                  needed: large ? 3.0 : 4.5});
    }
  }
  return found;
}"""

# What the book's CSS colours, plus the language switch.
BOOK_TEXT = ["table.book-matrix caption", "table.book-matrix caption .shape",
             "table.book-matrix th", "table.book-matrix td", ".book-check", ".book-check *",
             ".book-language-switch a", ".book-question", ".book-question *", ".book-live-note",
             ".book-check-note", ".book-questions-fold > summary", ".book-run", ".book-run *"]


def contrast(page, selectors=BOOK_TEXT) -> list[dict]:
    return page.evaluate(CONTRAST_JS, selectors)


# Print: each figure (and image, table, code block) against the printable width of the page.
PRINT_JS = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  const sel = 'div.plotly-graph-div, div.cell_output img, article img, table, div.highlight';
  for (const el of document.querySelectorAll(sel)) {
    if (!el.getClientRects().length) continue;
    const r = el.getBoundingClientRect();
    let inner = r.right;
    for (const svg of el.querySelectorAll('svg.main-svg'))
      inner = Math.max(inner, svg.getBoundingClientRect().right);
    out.push({what: el.tagName.toLowerCase() + '.' + (el.className || '').toString().split(' ')[0],
              left: Math.round(r.left), right: Math.round(Math.max(inner, r.right)),
              scroll: el.scrollWidth > el.clientWidth + 1});
  }
  return {width, boxes: out};
}"""

# A4 at 96 px per inch with the browser's default 1 cm margins, as Chromium lays out print.
PRINT_WIDTH_PX = round((210 - 20) / 25.4 * 96)


def print_layout(page) -> dict:
    """Lay the page out as a browser prints it on A4 and measure what leaves the paper.

    A browser prints by laying the page out again at the paper's width under print media,
    after firing ``beforeprint``; the window keeps its size (no resize event, so plotly does not
    redraw its figures). The same here: print media, ``beforeprint``, then the root element
    held to the printable width while the viewport stays as it was."""
    page.emulate_media(media="print")
    page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    page.evaluate(f"""() => {{ const s = document.documentElement.style;
        s.width = '{PRINT_WIDTH_PX}px'; s.maxWidth = '{PRINT_WIDTH_PX}px'; }}""")
    page.wait_for_timeout(300)
    measured = page.evaluate(PRINT_JS)
    measured["width"] = PRINT_WIDTH_PX
    measured["overflow"] = [b for b in measured["boxes"]
                            if b["left"] < -1 or b["right"] > PRINT_WIDTH_PX + 1]
    return measured


def after_print(page) -> None:
    page.evaluate("""() => { document.documentElement.style.width = '';
        document.documentElement.style.maxWidth = '';
        window.dispatchEvent(new Event('afterprint')); }""")
    page.emulate_media(media="screen")


# Chapters allowed over 4 MB until they come down, each with the most it may weigh ("zh/…" for
# a Chinese page): none now (the heaviest, the Chinese chapter 8b, was 4.06 MB with a CJK font of
# its own until the search index stopped loading on every page: book/site/sphinxext.py).
KNOWN_OVER: dict[str, int] = {}


def page_weight_problems(html_root: Path, rows: list[dict]) -> list[str]:
    """What is wrong with the pages' weights, as bench_pages.page_row measures them (every page
    of one edition's ``html_root``): a chapter over 4 MB (those of KNOWN_OVER over their own
    limit, or back under 4 MB), a page without figures over 1.5 MB, a figure that never painted,
    a Chinese page that loads the edition's whole CJK subset instead of its own, MathJax on the
    landing page, fewer than 10 chapters with figures. Empty when all is well."""
    from bench_pages import CHAPTER_LIMIT, PLAIN_LIMIT

    from book.site import fonts

    out = []
    if "vendor/mathjax/" in (html_root / "index.html").read_text(encoding="utf-8"):
        out.append("index.html: the landing page holds no math, yet loads MathJax")
    chapters = [r for r in rows if r["figures"]]
    if len(chapters) < 10:
        out.append(f"{len(chapters)} pages with figures (at least 10): "
                   f"{[r['page'] for r in rows]}")
    for r in rows:
        if r["edition"] == "zh" and any(f.name == fonts.SUBSET_ZH.name for f in r["cjk_fonts"]):
            out.append(f"{r['page']}: loads the whole {fonts.SUBSET_ZH.name}, not its own subset")
        if not r["figures"]:
            if r["bytes"] > PLAIN_LIMIT:
                out.append(f"{r['page']}: {r['bytes']:,} B without figures > {PLAIN_LIMIT:,}")
            continue
        limit = KNOWN_OVER.get(r["page"], CHAPTER_LIMIT)
        if r["bytes"] > limit:
            out.append(f"{r['page']}: {r['bytes']:,} B (CJK font {r['cjk_font']:,} B) > "
                       f"{limit:,}")
        elif r["page"] in KNOWN_OVER and r["bytes"] <= CHAPTER_LIMIT:
            out.append(f"{r['page']} now weighs at most 4 MB: drop it from KNOWN_OVER")
        if r["first_ms"] is None or r["last_ms"] is None:
            out.append(f"{r['page']}: a figure never painted")
    return out


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    script = axe_script()
    with sync_playwright() as p:
        browser = headless.launch(p)
        for arg in argv:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(Path(arg).resolve().as_uri(), wait_until="load")
            print(arg, "light:", json.dumps(count_by_rule(run_axe(page, script))))
            for v in run_axe(page, script):
                for n in v["nodes"][:3]:
                    print(f"  {v['id']} ({v['impact']}): {n['target']}  {n['html']}")
            set_dark(page)
            print(arg, "dark:", json.dumps(count_by_rule(run_axe(page, script))))
            print("  contrast:", json.dumps(contrast(page), ensure_ascii=False)[:1500])
            page.close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
