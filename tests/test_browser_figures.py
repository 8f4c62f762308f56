"""Every figure of both editions as a screen reader and a keyboard meet it (issue 47, WCAG 2.1
AA 1.1.1, 2.1.1, 4.1.2, 4.1.3; book/face/figures.py writes the markup, figures.js runs it).

For every page of both editions that holds a figure, in one visit:

* every plotly figure sits in a ``<figure>`` named by its text alternative (``aria-label``) with a
  non-empty caption, written by the chapter (no ``data-undescribed`` fallback), its drawing
  hidden from the accessibility tree;
* its "data" disclosure, opened from the keyboard, holds tables that agree with what the
  figure draws as it opens (heatmaps: one row per y label, one column per x label, every cell
  the value or cell text; lines and bars: a column per series with its values, a row per x
  value); a diagram's (book.face.diagrams: no numbers) lists its words in drawing order;
* Tab reaches every control of the page's explorers and figures (the book's own HTML controls,
  plotly's own sliders and menus are not drawn), and each one, moved by the keyboard alone
  (arrow keys on ranges, number boxes and menus; typing in a text box), redraws its figure and
  fills the figure's polite live region with what it now shows.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import headless
import pytest
from test_build import pages

pytestmark = pytest.mark.slow

EDITION_BUILDS = ["built_book", "built_zh"]
TAB_LIMIT = 600  # Tab presses before the walk gives up (a chapter has ~100 stops)

# What a figure draws now: each trace's kind, visibility and arrays (typed arrays decoded).
DRAWN_JS = """gd => gd._fullData.map(t => ({type: t.type, visible: t.visible,
    orientation: t.orientation || 'v',
    x: t.x == null ? null : Array.from(t.x), y: t.y == null ? null : Array.from(t.y),
    z: t.z == null ? null : Array.from(t.z, r => Array.from(r)),
    text: Array.isArray(t.text) ? Array.from(t.text, r => Array.isArray(r) ? Array.from(r) : r)
                                : null}))"""
TABLES_JS = """f => Array.from(f.querySelectorAll('table.book-figure-table'), t => ({
    caption: t.caption ? t.caption.textContent : '',
    head: Array.from(t.tHead.rows[0].cells, c => c.textContent),
    rows: Array.from(t.tBodies[0].rows, r => Array.from(r.cells, c => c.textContent))}))"""
_TAGS = re.compile(r"<[^>]+>")


@pytest.fixture(scope="module")
def browser():
    if not Path(headless.CHROMIUM).exists():
        pytest.fail("chromium is not installed: run `make test-deps` (make test does)")
    with headless.browser() as launched:
        yield launched


def plain(value) -> str:
    if value is None:
        return ""
    return " ".join(_TAGS.sub("", re.sub(r"<br\s*/?>", " ", str(value))).split())


def same_number(cell: str, value) -> bool:
    if value is None:
        return cell == "–"
    try:
        shown = float(cell)
    except ValueError:
        return False
    return math.isclose(shown, value, rel_tol=1e-3, abs_tol=1e-12)


def same_label(cell: str, value) -> bool:
    return same_number(cell, value) if isinstance(value, (int, float)) else cell == plain(value)


def table_problems(drawn: list[dict], tables: list[dict]) -> list[str]:
    """What disagrees between the figure's traces as drawn and the tables of its disclosure."""
    problems = []
    shown = [t for t in drawn if t["visible"] is True]
    heatmaps = [t for t in shown if t["type"] == "heatmap"]
    if not tables and shown:
        return ["no data table"]
    for k, trace in enumerate(heatmaps):
        if k >= len(tables):
            problems.append(f"heatmap {k}: no table")
            continue
        table, z = tables[k], trace["z"]
        if len(table["rows"]) != len(z) or len(table["head"]) != len(z[0]) + 1:
            problems.append(f"heatmap {k}: table {len(table['rows'])}×{len(table['head']) - 1}"
                            f", figure {len(z)}×{len(z[0])}")
            continue
        xs = trace["x"] or list(range(len(z[0])))
        ys = trace["y"] or list(range(len(z)))
        if not all(same_label(c, x) for c, x in zip(table["head"][1:], xs, strict=True)):
            problems.append(f"heatmap {k}: column labels {table['head'][1:]} ≠ {xs}")
        for i, row in enumerate(table["rows"]):
            if not same_label(row[0], ys[i]):
                problems.append(f"heatmap {k} row {i}: label {row[0]!r} ≠ {ys[i]!r}")
            for j, cell in enumerate(row[1:]):
                text = (trace["text"] or [[]] * len(z))[i]
                text = text[j] if isinstance(text, list) and j < len(text) else None
                ok = cell == plain(text) if text not in (None, "") else same_number(cell, z[i][j])
                if not ok:
                    problems.append(f"heatmap {k} cell ({i}, {j}): {cell!r}, figure "
                                    f"{text if text not in (None, '') else z[i][j]!r}")
                    break
    series_tables = tables[len(heatmaps):]
    for k, trace in enumerate(t for t in shown if t["type"] != "heatmap"):
        xs, ys = trace["x"], trace["y"]
        if trace["orientation"] == "h":
            xs, ys = ys, xs
        if ys is None:
            continue
        found = False
        for table in series_tables:
            if len(table["rows"]) != len(ys):
                continue
            if xs is not None and not all(same_label(r[0], x)
                                          for r, x in zip(table["rows"], xs, strict=True)):
                continue
            for col in range(1, len(table["head"])):
                if all(same_number(r[col], y) for r, y in zip(table["rows"], ys, strict=True)):
                    found = True
                    break
            if found:
                break
        if not found:
            problems.append(f"series {k} ({trace['type']}, {len(ys)} values): no table column "
                            "holds its values against its x values")
    return problems


def tab_walk(page) -> tuple[list[str], int]:
    """Tab from the top of the page to its end: the ids (set here) of the controls reached, in
    order, and how many Tab stops the page has."""
    page.evaluate("""() => { document.querySelectorAll(
        '.book-figure-controls input, .book-figure-controls select, .book-inpage input,'
        + ' .book-inpage select, .book-inpage textarea').forEach((el, i) => {
          el.dataset.walk = String(i); });
        if (document.activeElement) document.activeElement.blur();
        window.scrollTo(0, 0); window.bookSeen = new Set(); }""")
    reached, stops = [], 0
    for _ in range(TAB_LIMIT):
        page.keyboard.press("Tab")
        step = page.evaluate("""() => { const a = document.activeElement;
            if (!a || a === document.body || window.bookSeen.has(a)) return null;
            window.bookSeen.add(a); return {walk: a.dataset.walk || null}; }""")
        if step is None:
            break
        stops += 1
        if step["walk"] is not None:
            reached.append(step["walk"])
    return reached, stops


def operate(page, control) -> str:
    """Move one control with the keyboard alone, as a reader would; returns what was done."""
    kind = control.evaluate("e => e.tagName === 'SELECT' ? 'select' : e.type")
    control.focus()
    if kind == "select":
        last = control.evaluate("e => e.selectedIndex === e.options.length - 1")
        page.keyboard.press("ArrowUp" if last else "ArrowDown")
    elif kind in ("range", "number"):
        top = control.evaluate("e => Number(e.value) >= Number(e.max)")
        page.keyboard.press(("ArrowLeft" if kind == "range" else "ArrowDown") if top
                            else ("ArrowRight" if kind == "range" else "ArrowUp"))
    else:  # a text box: take its last character away
        page.keyboard.press("End")
        page.keyboard.press("Backspace")
    return f"{kind} moved"


@pytest.mark.parametrize("build", EDITION_BUILDS)
def test_every_figure_named_tabled_and_keyboard_operable(request, build, browser):
    html_root = request.getfixturevalue(build)["html"]
    found: list[str] = []
    counts = {"figures": 0, "tables": 0, "controls": 0, "announced": 0}
    with_figures = [p for p in pages(html_root)
                    if 'class="plotly-graph-div' in p.read_text(encoding="utf-8")]
    assert with_figures, f"{html_root}: no page holds a figure"
    for path in with_figures:
        rel = path.relative_to(html_root).as_posix()
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            ("file://", "data:", "blob:")) else r.abort())
        try:
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_function("() => Array.from(document.querySelectorAll("
                                   "'.js-plotly-plot')).every(g => g._fullLayout)",
                                   timeout=30_000)
            # the Tab walk first: it starts where a fresh page's focus starts
            found += check_controls(page, rel, counts)
            found += check_figures(page, rel, counts)
        finally:
            context.close()
    print(f"{html_root}: {counts}")
    assert not found, "\n".join(found[:80])
    assert counts["controls"] > 0 and counts["announced"] == counts["controls"]


def check_figures(page, rel: str, counts: dict) -> list[str]:
    found = []
    plots = page.locator(".js-plotly-plot")
    for i in range(plots.count()):
        gd = plots.nth(i)
        counts["figures"] += 1
        info = gd.evaluate("""gd => { const f = gd.closest('figure.book-figure');
            return f && {label: f.getAttribute('aria-label') || '',
                         caption: (f.querySelector('figcaption') || {}).textContent || '',
                         undescribed: f.hasAttribute('data-undescribed'),
                         hidden: !!gd.closest('[aria-hidden=true]')}; }""")
        where = f"{rel} figure {i + 1}"
        if not info:
            found.append(f"{where}: not inside a <figure class=book-figure>")
            continue
        if not info["label"].strip() or not info["caption"].strip():
            found.append(f"{where}: no text alternative or no caption")
        if info["undescribed"]:
            found.append(f"{where}: described by the fallback (title and axes), not by its "
                         "chapter: book.face.figures.describe(fig, alt=..., caption=...)")
        if not info["hidden"]:
            found.append(f"{where}: the drawing is not hidden from the accessibility tree")
        figure = gd.locator("xpath=ancestor::figure[1]")
        if figure.locator("details.book-figure-data[data-diagram]").count():
            # a diagram (book.face.diagrams) has no numbers: its boxes' words, in order
            if not figure.locator("ol.book-figure-words > li").count():
                found.append(f"{where}: a diagram without its words")
            continue
        summary = figure.locator("details.book-figure-data > summary")
        summary.focus()
        page.keyboard.press("Enter")
        try:  # the tables are built on the disclosure's toggle event, just after it opens
            page.wait_for_function("f => f.querySelector('details.book-figure-data').open && "
                                   "f.querySelector('table.book-figure-table')",
                                   arg=figure.element_handle(), timeout=5_000)
        except Exception:  # noqa: BLE001 - reported below as the figure's missing table
            pass
        tables = figure.evaluate(TABLES_JS)
        counts["tables"] += len(tables)
        found += [f"{where}: {p}" for p in table_problems(gd.evaluate(DRAWN_JS), tables)]
        page.keyboard.press("Enter")  # closed again, as it was
    return found


def check_controls(page, rel: str, counts: dict) -> list[str]:
    found = []
    controls = page.locator(".book-figure-controls input, .book-figure-controls select, "
                            ".book-inpage input, .book-inpage select, .book-inpage textarea")
    if not controls.count():
        return found
    walked, stops = tab_walk(page)
    reached = set(walked)
    counts["tab_stops"] = counts.get("tab_stops", 0) + stops
    for k in range(controls.count()):
        control = controls.nth(k)
        name = control.evaluate("e => (e.closest('label') || e).textContent.trim().slice(0, 40)"
                                " || e.getAttribute('aria-label') || e.name")
        where = f"{rel} control {k + 1} ({name!r})"
        counts["controls"] += 1
        if control.get_attribute("data-walk") not in reached:
            found.append(f"{where}: Tab does not reach it")
        figure = control.evaluate_handle("""e => { const h = e.closest('.book-inpage')
            || e.closest('figure.book-figure'); return h.matches('figure') ? h
            : h.querySelector('figure.book-figure'); }""")
        before = figure.evaluate("""f => { const gd = f.querySelector('.js-plotly-plot');
            gd.bookRedraws = 0; if (!gd.bookCounting) { gd.bookCounting = true;
              gd.on('plotly_afterplot', () => gd.bookRedraws++);
              gd.on('plotly_animated', () => gd.bookRedraws++); }
            const inpage = f.closest('.book-inpage');
            const said = inpage && inpage.querySelector('.book-inpage-status');
            return [f.querySelector('.book-figure-status').textContent,
                    said ? said.textContent : '']; }""")
        operate(page, control)
        try:
            # redrawn and announced, or (a typed word the model refuses) the explorer's own
            # status line says why the figure stays
            page.wait_for_function("""([f, before]) => {
                const s = f.querySelector('.book-figure-status').textContent;
                const inpage = f.closest('.book-inpage');
                const said = inpage ? inpage.querySelector('.book-inpage-status').textContent
                                    : '';
                return (s && s !== before[0] && f.querySelector('.js-plotly-plot').bookRedraws)
                    || (said.trim() && said !== before[1]); }""", arg=[figure, before],
                timeout=5_000)
            counts["announced"] += 1
        except Exception:  # noqa: BLE001 - reported with the control's name below
            found.append(f"{where}: moved by the keyboard, but the figure did not redraw and "
                         "announce it in its live region within 5 s")
    return found
