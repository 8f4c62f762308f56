"""axe-core, reflow and focus-ring checks for a Playwright page (tests/test_browser_a11y.py).

axe-core is the npm package pinned in ``tests/a11y/package-lock.json`` (``make test-deps``
runs ``npm ci`` there): its ``axe.min.js`` is injected into the page and run with the WCAG 2.1
A and AA rules only (``TAGS``), so what it reports is what the issue's acceptance counts.

    import a11y
    violations = a11y.run_axe(page)           # [{id, impact, help, nodes: [{target, ...}]}]
    a11y.sideways(page)                       # 320 px: how far the page scrolls sideways
    a11y.focus_report(page)                   # every kind of Tab stop: ring visible or not

``python tests/a11y.py PAGE.html [WIDTH]`` prints one page's findings.
"""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
AXE_DIR = ROOT / "tests" / "a11y"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_source() -> str:
    """The pinned axe.min.js; raises naming the command that installs it."""
    if not AXE_JS.is_file():
        raise RuntimeError(f"{AXE_JS.relative_to(ROOT)} is missing: run `make test-deps` "
                           f"(or `cd {AXE_DIR.relative_to(ROOT)} && npm ci`)")
    return AXE_JS.read_text(encoding="utf-8")


def axe_version() -> str:
    lock = json.loads((AXE_DIR / "package-lock.json").read_text(encoding="utf-8"))
    return lock["packages"]["node_modules/axe-core"]["version"]


# preload: false — axe would fetch each stylesheet by XHR, which file:// refuses
AXE_RUN_JS = """async ([tags, rules]) => {
  const runOnly = rules ? {type: 'rule', values: rules} : {type: 'tag', values: tags};
  const r = await axe.run(document, {runOnly, resultTypes: ['violations'], preload: false});
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 200),
                              summary: (n.failureSummary || '').slice(0, 300)}))}));
}"""


SETTLE_JS = """async () => {
  const until = (ok) => new Promise(done => { const t0 = performance.now();
    const poll = () => ok() || performance.now() - t0 > 20000 ? done() : setTimeout(poll, 50);
    poll(); });
  await until(() => Array.from(document.querySelectorAll('div.plotly-graph-div'))
                         .every(g => g._fullLayout));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  // the theme marks scrollable boxes focusable 300 ms after a resize or a change of the page
  await new Promise(done => setTimeout(done, 400));
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
}"""


def settle(page) -> None:
    """Wait until the page is drawn: every plotly figure laid out, MathJax done, the fonts
    loaded and the theme's delayed scripts run."""
    page.evaluate(SETTLE_JS)


def run_axe(page, script: str | None = None, only: list[str] | None = None) -> list[dict]:
    """axe's WCAG 2.1 A/AA violations on ``page`` as it is now (every impact); ``only``: just
    these rules (e.g. ``["color-contrast"]`` again in dark mode)."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.evaluate(script if script is not None else axe_source())
    return page.evaluate(AXE_RUN_JS, [TAGS, only])


# The fade-in a fold plays as it opens (MyST-NB's collapsed-fade-in, sphinx-design's sd-fade-in)
# drawn to its end: axe measured a hidden cell's code mid-fade, at 1.4:1 (chapter 7, once in two
# clean runs). Endless animations (a loading spinner) are left running.
FINISH_ANIMATIONS_JS = """() => document.getAnimations().forEach(a => {
  if (a.effect && a.effect.getComputedTiming().endTime !== Infinity) a.finish();
})"""


def open_details(page) -> None:
    """Open every <details> (folded code, the figures' data, dropdowns), as a reader may, and
    let each fold's opening fade finish, as it has by the time a reader reads it."""
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => r()))")
    page.evaluate(FINISH_ANIMATIONS_JS)


def describe(violations: list[dict], where: str) -> list[str]:
    """One line per violating node: rule id, impact, target and page."""
    return [f"{v['id']} ({v['impact']}) {n['target']} on {where}: {n['summary'][:160]}"
            for v in violations for n in v["nodes"]]


# How far the page scrolls sideways; the boxes that reach past its right edge without a
# scrolling container of their own between them and the page (what to fix); and the text cut
# off instead: a box with text of its own whose right edge passes that of a box that hides its
# overflow (overflow hidden or clip) around it, which a reader cannot scroll to.
SIDEWAYS_JS = """() => {
  const se = document.scrollingElement, width = se.clientWidth;
  const overflowX = (e) => getComputedStyle(e).overflowX;
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (e.classList.length ? '.' + Array.from(e.classList).slice(0, 3).join('.') : '');
  const fixed = (e) => { for (; e; e = e.parentElement)
    if (getComputedStyle(e).position === 'fixed') return true; return false; };
  const shown = (e) => e.checkVisibility ? e.checkVisibility({visibilityProperty: true})
                                         : !!e.getClientRects().length;
  const out = [], cut = [];
  for (const e of document.body.querySelectorAll('*')) {
    if (e.closest('svg, .plotly-graph-div, mjx-container')) continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || !shown(e)) continue;
    let box = null;
    for (let p = e.parentElement; p && p !== document.body; p = p.parentElement)
      if (overflowX(p) !== 'visible') { box = p; break; }
    const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (box) {
      const o = overflowX(box), b = box.getBoundingClientRect();
      if (own && (o === 'hidden' || o === 'clip') && b.width > 2 && b.height > 2
          && r.right > b.right + 1 && !fixed(e))
        cut.push({what: name(e), in: name(box), past: Math.round(r.right - b.right),
                  text: e.textContent.trim().slice(0, 50)});
      continue;
    }
    if (r.right <= width + 1 + window.scrollX || fixed(e)) continue;
    if (out.length && out[out.length - 1].el.contains(e)) continue;  // the outermost only
    out.push({el: e, what: name(e), right: Math.round(r.right + window.scrollX),
              text: (e.textContent || '').trim().slice(0, 50)});
  }
  return {scrollWidth: se.scrollWidth, clientWidth: width,
          boxes: out.slice(0, 8).map(({el, ...rest}) => rest), cut: cut.slice(0, 8)};
}"""


def sideways(page) -> dict:
    """{"scrollWidth", "clientWidth", "boxes": [what reaches past the right edge], "cut":
    [text cut off by a box that hides its overflow]}."""
    return page.evaluate(SIDEWAYS_JS)


# --- focus rings ------------------------------------------------------------------------------

# Records every element Tab focuses (focusin), in order: its kind (tag and, for buttons and
# summaries, what they are), the part of the page it is in, a name for messages and a mark
# (data-a11y-seen) to find it again. The walk itself only presses Tab (a round trip per key).
RECORD_JS = """() => {
  window.__a11yTabs = [];
  window.__a11yRecord = (ev) => {
    const e = ev.target;
    if (!e || e === document.body || e === document.documentElement) return;
    const seen = e.hasAttribute('data-a11y-seen');
    const mark = seen ? e.getAttribute('data-a11y-seen') : String(window.__a11yTabs.length);
    if (!seen) e.setAttribute('data-a11y-seen', mark);
    const tag = e.tagName.toLowerCase(), role = e.getAttribute('role');
    const label = (e.getAttribute('aria-label') || e.getAttribute('title')
                   || e.getAttribute('data-bs-original-title') || e.textContent || e.value
                   || '').trim().replace(/\\s+/g, ' ').slice(0, 40);
    const region = e.closest('.skip-link') ? 'skip link'
      : e.closest('.bd-header-article') ? 'article header'
      : e.closest('.bd-header') ? 'header'
      : e.closest('.bd-sidebar-primary') ? 'primary sidebar'
      : e.closest('.bd-sidebar-secondary') ? 'secondary sidebar'
      : e.closest('.prev-next-area, footer') ? 'footer' : 'article';
    let kind = tag === 'a' ? 'link' : tag === 'button' || role === 'button' ? 'button'
      : tag === 'summary' ? 'summary' : tag === 'select' ? 'select'
      : tag === 'textarea' ? 'textarea' : tag === 'input' ? 'input:' + (e.type || 'text')
      : 'other:' + tag + (role ? '[' + role + ']' : '');
    // each of the theme's header buttons is a kind of its own; the book's buttons and
    // summaries by their class (a fold's summary, a figure's data summary, a copy button...)
    if (kind === 'button' && region.endsWith('header')) kind += ' "' + label + '"';
    else if (kind === 'button') kind += '.' + (e.classList[0] || '');
    else if (kind === 'summary') kind += ' of details.' + (e.parentElement.classList[0] || '');
    const id = tag + (e.id ? '#' + e.id : '') +
      (e.classList.length ? '.' + Array.from(e.classList).join('.') : '');
    window.__a11yTabs.push({kind: region + ': ' + kind, id, label, seen, mark});
  };
  document.addEventListener('focusin', window.__a11yRecord, true);
  document.activeElement && document.activeElement.blur();
  window.scrollTo(0, 0);
}"""

# Focus one recorded element again (after Tab presses: a keyboard focus, :focus-visible),
# scrolled into view where nothing covers its middle (the theme's sticky header would); its box
# in viewport px.
FOCUS_JS = """(mark) => {
  const e = document.querySelector(`[data-a11y-seen="${mark}"]`);
  if (!e) return null;
  e.focus({preventScroll: true});
  const hit = (r) => { const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const top = document.elementFromPoint(x, y); return top && (top === e || e.contains(top)
      || top.contains(e)); };
  let r = e.getBoundingClientRect();
  if (r.width && r.height && (r.top < 0 || r.bottom > innerHeight || r.left < 0
                              || r.right > innerWidth || !hit(r))) {
    e.scrollIntoView({block: 'center', inline: 'nearest'});
    r = e.getBoundingClientRect();
  }
  return {x: r.left, y: r.top, w: r.width, h: r.height, vw: innerWidth, vh: innerHeight,
          focused: document.activeElement === e, visible: e.matches(':focus-visible'),
          covered: !!(r.width && r.height && !hit(r))};
}"""


def _png_pixels(data: bytes) -> np.ndarray:
    """An 8-bit, non-interlaced RGB(A) PNG (what Chromium's screenshots are) as an array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and not interlace, (depth, colour, interlace)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:  # Sub, Average, Paeth: each byte depends on the one bpp before it
            cur = line.copy()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                b = prev[i]
                if f == 1:
                    cur[i] = (cur[i] + a) & 255
                elif f == 3:
                    cur[i] = (cur[i] + ((a + b) >> 1)) & 255
                else:
                    c = prev[i - bpp] if i >= bpp else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out[y] = cur
        prev = cur
    return out.reshape(height, width, bpp)[:, :, :3]


def changed_pixels(a: bytes, b: bytes) -> int:
    """How many pixels differ between two PNG screenshots of the same clip."""
    if a == b:
        return 0
    pa, pb = _png_pixels(a), _png_pixels(b)
    if pa.shape != pb.shape:
        return pa.size
    return int(np.any(np.abs(pa.astype(int) - pb.astype(int)) > 8, axis=2).sum())


def _shot(page, clip: dict) -> bytes:
    return page.screenshot(clip=clip, animations="disabled", caret="hide", scale="css")


MARGIN = 6  # px of the screenshot around the element's box (an outline sits outside it)


def tab_walk(page, max_tabs: int = 300) -> list[dict]:
    """Tab from the top of the page until focus comes back to an element it has been on (or
    ``max_tabs`` presses): each element once, in order, as RECORD_JS describes it."""
    page.evaluate(RECORD_JS)
    page.mouse.move(0, 0)
    pressed = 0
    while pressed < max_tabs:
        for _ in range(20):
            page.keyboard.press("Tab")
        pressed += 20
        if page.evaluate("() => window.__a11yTabs.some(t => t.seen)"):
            break
    tabs = page.evaluate("() => { document.removeEventListener('focusin', window.__a11yRecord,"
                         " true); return window.__a11yTabs; }")
    first_again = next((i for i, t in enumerate(tabs) if t["seen"]), len(tabs))
    return tabs[:first_again]


def focus_report(page, per_kind: int = 1, max_tabs: int = 300) -> list[dict]:
    """Walk the page with Tab (tab_walk); for the first ``per_kind`` elements of each kind (a
    link, a select, an input:range... in each part of the page: header, sidebars, article,
    footer; each of the theme's header buttons; the book's buttons and summaries by class),
    compare a screenshot of the element's box (``MARGIN`` px around it) with keyboard focus and
    after blur. Returns one row per element checked: kind, id, label, the box, the pixels
    changed and the number needed (the box's perimeter: a ring one px wide around it)."""
    tabs = tab_walk(page, max_tabs)
    counts: dict[str, int] = {}
    rows = []
    for tab in tabs:
        if counts.get(tab["kind"], 0) >= per_kind:
            continue
        box = page.evaluate(FOCUS_JS, tab["mark"])
        if not box or not box["focused"] or box["w"] < 1 or box["h"] < 1 or box["covered"]:
            continue
        x0, y0 = max(0, box["x"] - MARGIN), max(0, box["y"] - MARGIN)
        x1 = min(box["vw"], box["x"] + box["w"] + MARGIN)
        y1 = min(box["vh"], box["y"] + box["h"] + MARGIN)
        if x1 - x0 < 1 or y1 - y0 < 1:  # off screen (a visually hidden skip link shows on focus)
            continue
        counts[tab["kind"]] = counts.get(tab["kind"], 0) + 1
        clip = {"x": x0, "y": y0, "width": x1 - x0, "height": y1 - y0}
        focused = _shot(page, clip)
        page.evaluate("() => document.activeElement.blur()")
        blurred = _shot(page, clip)
        needed = max(4, round(box["w"] + box["h"]) * 2)
        rows.append({**tab, **box, "changed": changed_pixels(focused, blurred),
                     "needed": needed, "png": (focused, blurred)})
    page.evaluate("() => document.querySelectorAll('[data-a11y-seen]')"
                  ".forEach(e => e.removeAttribute('data-a11y-seen'))")
    return rows


def invisible(rows: list[dict]) -> list[dict]:
    """The rows of focus_report whose focus changed fewer pixels than a one-px ring."""
    return [r for r in rows if r["changed"] < r["needed"]]


def main(argv: list[str]) -> None:
    import headless
    from playwright.sync_api import sync_playwright

    path = Path(argv[0]).resolve()
    width = int(argv[1]) if len(argv) > 1 else 1280
    with sync_playwright() as p:
        browser = headless.launch(p)
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(path.as_uri(), wait_until="load")
        for line in describe(run_axe(page), path.name):
            print(line)
        print("sideways:", json.dumps(sideways(page)))
        for r in focus_report(page):
            flag = "OK " if r["changed"] >= r["needed"] else "NO "
            print(flag, r["kind"], r["id"], repr(r["label"]), r["changed"], "/", r["needed"],
                  "" if r["visible"] else "(not :focus-visible)")
            if flag == "NO ":
                for tag, png in zip(("focus", "blur"), r["png"], strict=True):
                    out = Path("/tmp") / f"focus-{r['id']}-{tag}.png".replace("/", "_")
                    out.write_bytes(png)
        browser.close()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main(sys.argv[1:])
