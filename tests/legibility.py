"""What a reader sees: the legibility check of every plotly figure on a page, in every state.

For each figure: its initial state, up to six steps of each slider (both ends and between) and
every entry of each dropdown or button menu. In each state one ``page.evaluate`` collects every
visible text box of the figure (titles, subplot titles and annotations, axis titles, tick labels,
legend, slider and menu labels, colorbar, cell text) as a rotated rectangle and reports

* ``collision``: two text boxes that overlap (by more than 1.5 px each way),
* ``touching``: two text boxes closer than 2 px (``TOUCH_PX``) without overlapping that much
  (glyphs that run into each other, "，₂" against "多加", tick labels "牛肉面饺子" in a row),
* ``cell_text``: text drawn in a heatmap's cells (its ``texttemplate``, or an annotation placed
  on the heatmap's axes) closer than 3 px (``CELL_GAP_PX``) to a neighbour's beside it in its
  row (closer than ``TOUCH_PX`` to one above or below), or that leaves its own cell
  ("0.140.070.23…" on a phone, or "0.14 0.07" 1.6 px apart: one number to the eye),
* ``control_label``: a slider's current-value label or a dropdown's header within 1 px of an
  axis title or a tick label ("padded length: 8" on the x axis title),
* ``too_wide``: a figure wider than the column it sits in (or than the window),
* ``out_of_bounds``: a text box that leaves the figure's svg,
* ``tiny_text``: visible text under 10 px,
* ``small_cells``: heatmap cells under 12 px on screen: every heatmap at the desktop width, and
  at 390 px a heatmap that writes values in its cells (see ``PHONE_CELLS`` for why the others
  may draw smaller cells on a phone),
* ``misplaced_cells``: a heatmap's drawn cells (its ``<image>``) not where its own axes put
  them: an edge more than 2.5 px from the first or last cell edge mapped by the axis (the
  position its tick labels and plot area use), e.g. cells drawn 30 px above their y axis with a
  strip of background below them and each row's tick label at its cell's lower edge,
* ``stale_title``: a control changed the drawn data but no title, subplot title or axis title
  changed with it.

Each page is checked twice at each width: in the book's own fonts, and with a wide fallback
(``FALLBACK``: DejaVu Sans drawn for every Latin family the figures ask for, as a reader's
browser without the page's first font draws them; the book's CJK web font stays first).

Per page: ``code_overflow`` (a code block wider than its column, at the desktop width) and
``too_long`` (a chapter whose lesson is over 15 screens at the desktop width, or whose whole page
is over 25: a section whose heading starts "Optional:" / "选读：" is material a reader may skip,
and counts only towards the 25; issue 49 moves chapter 4's extras there).

Used by tests/test_browser.py on the built book and by ``python tests/legibility.py PAGE.html``
while iterating on one figure.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import headless

DESKTOP, PHONE = 1280, 390
SCREEN_HEIGHT = 900
MAX_SCREENS = 15
MAX_PAGE_SCREENS = 25   # the whole page, optional sections included
# A section (h2 or h3) marked optional by its heading; the page's own marking, in both editions
OPTIONAL_JS = r"""() => {
  const marked = [...document.querySelectorAll('section > h2, section > h3')]
    .filter(h => /^(Optional:|选读：)/.test(h.textContent.trim())).map(h => h.parentElement);
  return marked.filter(s => !marked.some(o => o !== s && o.contains(s)))
    .reduce((sum, s) => sum + s.getBoundingClientRect().height, 0);
}"""
MIN_FONT_PX = 10
MIN_CELL_PX = 12
# PHONE_CELLS: at 390 px only a heatmap whose cells carry text is held to MIN_CELL_PX. A value
# needs a cell that big to be read (book.face.plotting.fit_cell_text drops the values of
# smaller cells, leaving them to the hover and the data table). A heatmap without values in its
# cells may draw them smaller on a phone (down to 3.7 px: chapter 1's heads side by side): its
# rows × columns are its meaning, which WCAG 1.4.10 exempts as content that needs a
# two-dimensional layout (it cannot reflow into one column without losing the comparison
# across rows and heads), and every value it shows is text in the figure's data table (its
# "data" disclosure, issue 47), which reflows at 320 px and zooms with the page (1.4.4).
PHONE_CELLS = "with text"
CELL_TOLERANCE_PX = 2.5  # plotly rounds the heatmap image to whole pixels
MAX_STEPS = 6
# Glyph boxes closer than this touch. The boxes are plotly's text boxes (advance widths, so a
# glyph's side bearings are inside them) less 1.5 px of line box above and below: 2 px is about
# two thirds of a word space at the figures' 11-12 px (Open Sans' space is 0.26 em, 2.9-3.1 px),
# the least that reads as two labels rather than one run of text ("牛肉面饺子", "，₂多加": tick
# labels 1 px apart at 390 px read as one word).
TOUCH_PX = 2.0
# Values written in neighbouring heatmap cells of one row, side by side, keep at least this
# much between them: a word space at the cells' 11-12 px (Open Sans 0.26 em = 2.9-3.1 px,
# DejaVu Sans 0.32 em = 3.5-3.8 px). Closer, "0.14" and "0.07" 1.6-2 px apart read as one
# number "0.140.07"; a space's width apart they read as two, as text sets numbers apart.
# Rows above and below are kept apart by the cells' height and the line box, as tick labels
# are: TOUCH_PX there.
CELL_GAP_PX = 3.0
KINDS = ("collision", "touching", "cell_text", "control_label", "too_wide", "out_of_bounds",
         "tiny_text", "small_cells", "misplaced_cells", "stale_title", "code_overflow",
         "too_long")
FONTS = ("book", "fallback")
FALLBACK_FILE = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
# The Latin families of book.face.plotting.FONT_FAMILY (after the book's CJK web font): the
# fallback draws each of them in DejaVu Sans.
FALLBACK_FAMILIES = ("Open Sans", "verdana", "arial")

# One state of one figure: every visible text as a quad in page pixels, checked in the page.
STATE_JS = r"""([gd, minFont, minCell, allCells, cellTolerance, touchPx, cellGap]) => {
  const svg = gd.querySelector('.main-svg');
  if (!svg) return {error: 'no svg'};
  const frame = svg.getBoundingClientRect();
  const kindOf = (el) => {
    const pairs = [['.gtitle', 'title'], ['.g-gtitle', 'title'], ['.annotation', 'annotation'],
      ['.slider-container', 'slider'], ['.updatemenu-container', 'menu'],
      ['.colorbar', 'colorbar'], ['.legend', 'legend'], ['.g-xtitle', 'axis title'],
      ['.g-ytitle', 'axis title'], ['[class*="title"]', 'axis title'], ['.xtick', 'x tick'],
      ['.ytick', 'y tick'], ['[class$="tick"]', 'tick'], ['.textpoint', 'cell text'],
      ['.hm', 'cell text'], ['.trace', 'trace text']];
    for (const [sel, name] of pairs) if (el.closest(sel)) return name;
    return 'text';
  };
  const fl = gd._fullLayout;
  // an annotation placed on a heatmap's own axes is a value written in its cells
  const heatAxes = new Set((gd._fullData || []).filter(t => t.type === 'heatmap' &&
      t.visible === true).map(t => (t.xaxis || 'x') + (t.yaxis || 'y')));
  const valuedAxes = new Set();  // the heatmap axes with a value written on them
  const cellAnnotation = (el) => {
    const g = el.closest('.annotation');
    if (!g) return false;
    const a = (fl.annotations || [])[+g.getAttribute('data-index')];
    if (!a || a.xref === 'paper' || a.yref === 'paper') return false;
    const on = a.xref.replace(' domain', '') + a.yref.replace(' domain', '');
    if (heatAxes.has(on)) valuedAxes.add(on);
    return heatAxes.has(on);
  };
  // the label that shows a control's current entry
  // (plotly's slider draws it as a slider-label straight in the slider's group, the step
  // labels in their own groups; a dropdown shows its entry in its header)
  const isCurrent = (el) => !!(el.matches('.slider-group > text.slider-label') ||
                               el.closest('.updatemenu-header'));
  const hidden = (el) => {
    for (let e = el; e && e !== gd; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0)
        return true;
    }
    return false;
  };
  const boxes = [];
  // a menu's button box hides what is under it, like text does
  for (const el of gd.querySelectorAll('.updatemenu-container rect.updatemenu-item-rect')) {
    if (hidden(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const label = 'box of ' + ((el.parentElement.textContent || '').trim() || 'a menu button');
    boxes.push({label, kind: 'menu', q: [[r.left, r.top], [r.right, r.top], [r.right, r.bottom],
                [r.left, r.bottom]], font: 99});
  }
  // a legend entry's line and marker hide what is under them, like text does
  for (const el of gd.querySelectorAll('.legend .legendpoints, .legend .legendlines')) {
    if (hidden(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const entry = el.closest('.traces');
    const label = 'key of ' + ((entry && entry.textContent || '').trim() || 'a legend entry');
    boxes.push({label, kind: 'legend key', q: [[r.left, r.top], [r.right, r.top],
                [r.right, r.bottom], [r.left, r.bottom]], font: 99});
  }
  for (const el of gd.querySelectorAll('svg text')) {
    if (el.closest('.hoverlayer') || el.closest('.modebar')) continue;
    const label = (el.textContent || '').trim();
    if (!label || hidden(el)) continue;
    let bb;
    try { bb = el.getBBox(); } catch (e) { continue; }
    if (!bb || bb.width === 0 || bb.height === 0) continue;
    const m = el.getScreenCTM();
    if (!m) continue;
    const pt = (x, y) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f];
    // the glyph box, less a little of the line box above and below the letters
    const pad = Math.min(1.5, bb.height / 6);
    const q = [pt(bb.x, bb.y + pad), pt(bb.x + bb.width, bb.y + pad),
               pt(bb.x + bb.width, bb.y + bb.height - pad), pt(bb.x, bb.y + bb.height - pad)];
    const scale = Math.hypot(m.a, m.b);
    const font = parseFloat(getComputedStyle(el).fontSize) * scale;
    const kind = cellAnnotation(el) ? 'cell text' : kindOf(el);
    boxes.push({label, kind, q, font, current: isCurrent(el)});
  }
  const proj = (q, ax) => { let lo = Infinity, hi = -Infinity;
    for (const p of q) {
      const v = p[0] * ax[0] + p[1] * ax[1]; lo = Math.min(lo, v); hi = Math.max(hi, v);
    }
    return [lo, hi]; };
  const axes = (q) => [0, 1].map(i => {
    const dx = q[i + 1][0] - q[i][0], dy = q[i + 1][1] - q[i][1];
    const n = Math.hypot(dx, dy) || 1; return [-dy / n, dx / n]; });
  // the gap between two boxes: > 0 apart (the widest separating axis), < 0 overlapping
  const enough = Math.max(touchPx, cellGap);
  const gap = (a, b) => { let most = -Infinity;
    for (const ax of axes(a.q).concat(axes(b.q))) {
      const [a0, a1] = proj(a.q, ax), [b0, b1] = proj(b.q, ax);
      most = Math.max(most, Math.max(a0, b0) - Math.min(a1, b1));
      if (most >= enough) return most;
    }
    return most; };
  // two boxes side by side: their extents down the screen overlap (values in one row)
  const sideBySide = (a, b) => {
    const [a0, a1] = proj(a.q, [0, 1]), [b0, b1] = proj(b.q, [0, 1]);
    return Math.min(a1, b1) - Math.max(a0, b0) > 0;
  };
  const out = {collision: [], touching: [], cell_text: [], control_label: [], too_wide: [],
               out_of_bounds: [], tiny_text: [], small_cells: [], misplaced_cells: []};
  const axisText = (k) => k === 'axis title' || /tick$/.test(k);
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i];
    for (let j = i + 1; j < boxes.length; j++) {
      const b = boxes[j];
      if (a.kind === 'menu' && b.kind === 'menu') continue;  // a button and its own label
      if (a.kind === 'legend key' && b.kind === 'legend key') continue;  // line + marker
      const g = gap(a, b);
      const cells = a.kind === 'cell text' && b.kind === 'cell text';
      if (g >= (cells && sideBySide(a, b) ? cellGap : touchPx)) continue;
      const pair = `${a.kind} "${a.label}" × ${b.kind} "${b.label}"`;
      const how = g < -0.05 ? `overlap ${(-g).toFixed(1)} px`
                            : `${Math.max(g, 0).toFixed(1)} px apart`;
      if (cells) out.cell_text.push(`${pair} (${how})`);
      else if ((a.current && axisText(b.kind)) || (b.current && axisText(a.kind)))
        out.control_label.push(`${pair} (${how})`);
      else if (g < -1.5) out.collision.push(pair);
      else out.touching.push(`${pair} (${how})`);
    }
    const xs = a.q.map(p => p[0]), ys = a.q.map(p => p[1]);
    if (Math.min(...xs) < frame.left - 1 || Math.max(...xs) > frame.right + 1 ||
        Math.min(...ys) < frame.top - 1 || Math.max(...ys) > frame.bottom + 1)
      out.out_of_bounds.push(`${a.kind} "${a.label}"`);
    if (a.font < minFont - 0.01)
      out.tiny_text.push(`${a.kind} "${a.label}" ${a.font.toFixed(1)} px`);
  }
  // each value written in a heatmap's cells stays in its cell
  const cellsOf = [];
  for (const g of gd.querySelectorAll('.heatmaplayer g.hm')) {
    const cd = g.__data__ && g.__data__[0], t = cd && cd.trace;
    if (!t || t.visible !== true || !cd.x || !cd.y) continue;
    const xa = fl[(t.xaxis || 'x').replace('x', 'xaxis')];
    const ya = fl[(t.yaxis || 'y').replace('y', 'yaxis')];
    if (!xa || !ya || !xa._length || !ya._length) continue;
    const edges = (ax, vs, origin) => Array.from(vs, v => origin + ax._offset + ax.c2p(v))
      .filter(Number.isFinite).sort((p, q) => p - q);
    cellsOf.push({xs: edges(xa, cd.x, frame.left), ys: edges(ya, cd.y, frame.top)});
  }
  const within = (v, es) => { for (let k = 0; k + 1 < es.length; k++)
    if (v >= es[k] && v < es[k + 1]) return [es[k], es[k + 1]]; return null; };
  for (const a of boxes) {
    if (a.kind !== 'cell text') continue;
    const xs = a.q.map(p => p[0]), ys = a.q.map(p => p[1]);
    const cx = (Math.min(...xs) + Math.max(...xs)) / 2;
    const cy = (Math.min(...ys) + Math.max(...ys)) / 2;
    for (const c of cellsOf) {
      const bx = within(cx, c.xs), by = within(cy, c.ys);
      if (!bx || !by) continue;
      const over = Math.max(bx[0] - Math.min(...xs), Math.max(...xs) - bx[1],
                            by[0] - Math.min(...ys), Math.max(...ys) - by[1]);
      if (over > 0.5)
        out.cell_text.push(`cell text "${a.label}" leaves its ` +
          `${(bx[1] - bx[0]).toFixed(0)}×${(by[1] - by[0]).toFixed(0)} px cell by ` +
          `${over.toFixed(1)} px`);
      break;
    }
  }
  // the figure within its column and the window
  let host = gd.parentElement;
  while (host && host !== document.body && !host.matches('.cell_output, .output, article, main'))
    host = host.parentElement;
  if (host) {
    const hr = host.getBoundingClientRect(), cs = getComputedStyle(host);
    const left = hr.left + parseFloat(cs.paddingLeft);
    const right = hr.right - parseFloat(cs.paddingRight);
    const most = Math.min(right, document.documentElement.clientWidth);
    if (frame.right > most + 1 || frame.left < Math.max(left, 0) - 1)
      out.too_wide.push(`figure ${frame.width.toFixed(0)} px wide in a column of ` +
        `${(right - left).toFixed(0)} px (${Math.max(0, left - frame.left).toFixed(0)} px out ` +
        `on the left, ${Math.max(0, frame.right - most).toFixed(0)} px on the right)`);
  }
  for (const t of gd._fullData) {
    if (t.type !== 'heatmap' || t.visible !== true || !t.z || !t.z.length) continue;
    const xa = fl[(t.xaxis || 'x').replace('x', 'xaxis')];
    const ya = fl[(t.yaxis || 'y').replace('y', 'yaxis')];
    if (!xa || !ya) continue;
    const nx = t.z[0].length, ny = t.z.length;
    const [x0, x1] = xa.range, [y0, y1] = ya.range;
    const w = xa._length / Math.abs(x1 - x0), h = ya._length / Math.abs(y1 - y0);
    // on a phone, only cells that carry a value (PHONE_CELLS)
    const written = t.texttemplate || valuedAxes.has((t.xaxis || 'x') + (t.yaxis || 'y'));
    if (Math.min(w, h) < minCell && (allCells || written))
      out.small_cells.push(
        `heatmap "${t.name || ''}" ${ny}×${nx}: cells ${w.toFixed(1)}×${h.toFixed(1)} px`);
  }
  // Each heatmap's drawn cells against its axes: plotly draws a heatmap as one <image> in its
  // subplot's group; the cells' first and last edges (the trace's bricks), mapped by the axes
  // as the ticks and the plot area are, say where that image belongs on screen.
  for (const g of gd.querySelectorAll('.heatmaplayer g.hm')) {
    const cd = g.__data__ && g.__data__[0], img = g.querySelector('image');
    const t = cd && cd.trace;
    if (!t || t.visible !== true || !img || !cd.x || !cd.y || hidden(img)) continue;
    const xa = fl[(t.xaxis || 'x').replace('x', 'xaxis')];
    const ya = fl[(t.yaxis || 'y').replace('y', 'yaxis')];
    if (!xa || !ya || !xa._length || !ya._length) continue;
    const drawn = img.getBoundingClientRect();
    if (drawn.width === 0 || drawn.height === 0) continue;
    const sides = [];
    const compare = (ax, edges, origin, lo, hi, names) => {
      // the first and the last edge the axis can place, as plotly's heatmap finds them
      const placed = Array.from(edges, v => ax.c2p(v)).filter(Number.isFinite);
      if (!placed.length) return null;
      const px = [placed[0], placed[placed.length - 1]].sort((a, b) => a - b);
      const want = [], got = [lo - origin, hi - origin];
      for (let k = 0; k < 2; k++) {
        // cells beyond the axis' range: the image need only reach the edge of the plot area
        const clipped = k === 0 ? px[0] < 0 : px[1] > ax._length;
        const at = ax._offset + Math.min(Math.max(px[k], 0), ax._length);
        want.push(at);
        const off = got[k] - at;
        if (clipped ? (k === 0 ? off > cellTolerance : off < -cellTolerance)
                    : Math.abs(off) > cellTolerance)
          sides.push(`${names[k]} edge ${Math.abs(off).toFixed(0)} px ` +
                     (off < 0 ? names[2] : names[3]));
      }
      return want;
    };
    const wx = compare(xa, cd.x, frame.left, drawn.left, drawn.right,
                       ['left', 'right', 'too far left', 'too far right']);
    const wy = compare(ya, cd.y, frame.top, drawn.top, drawn.bottom,
                       ['top', 'bottom', 'too high', 'too low']);
    if (sides.length && wx && wy) {
      const span = (a, b) => `${a.toFixed(0)}–${b.toFixed(0)}`;
      out.misplaced_cells.push(
        `heatmap "${t.name || ''}" ${cd.z.length}×${(cd.z[0] || []).length}: cells drawn off ` +
        `their axes (${sides.join(', ')}): drawn at x ` +
        `${span(drawn.left - frame.left, drawn.right - frame.left)}, y ` +
        `${span(drawn.top - frame.top, drawn.bottom - frame.top)} px in the figure, its axes ` +
        `put them at x ${span(wx[0], wx[1])}, y ${span(wy[0], wy[1])} px`);
    }
  }
  return out;
}"""

# What the figure draws now (its data) and what its titles say.
SNAPSHOT_JS = r"""(gd) => {
  const data = JSON.stringify(gd._fullData.map(t => [t.visible].concat(
      [t.x, t.y, t.z, t.text].map(v => v == null ? null
        : Array.from(v, r => (r && r.length !== undefined && typeof r !== 'string')
          ? Array.from(r) : r)))));
  const fl = gd._fullLayout;
  const axisTitles = Object.keys(fl).filter(k => /^[xy]axis\d*$/.test(k))
      .map(k => fl[k].title && fl[k].title.text);
  const titles = JSON.stringify([fl.title && fl.title.text,
      (fl.annotations || []).map(a => a.text), axisTitles]);
  return {data, titles};
}"""

# Put a slider or menu at one entry, as a click on it would (plotly runs the step's method).
APPLY_JS = r"""async ([gd, kind, idx, k]) => {
  const ctl = gd.layout[kind][idx];
  const entry = (kind === 'sliders' ? ctl.steps : ctl.buttons)[k];
  await Plotly.relayout(gd, {[`${kind}[${idx}].active`]: k});
  if (entry.method && entry.method !== 'skip')
    await Plotly[entry.method](gd, ...(entry.args || []));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""

PAGE_JS = r"""([screen]) => {
  const wide = [];
  for (const pre of document.querySelectorAll('div.highlight pre, .cell_output pre')) {
    if (pre.scrollWidth > pre.clientWidth + 2) {
      const line = (pre.textContent.split('\n').sort((a, b) => b.length - a.length)[0] || '');
      wide.push(`${pre.scrollWidth - pre.clientWidth} px too wide: "${line.trim().slice(0, 60)}…"`);
    }
  }
  const height = document.documentElement.scrollHeight;
  const optional = (OPTIONAL)();
  return {wide, screens: (height - optional) / screen, page: height / screen};
}""".replace("(OPTIONAL)", f"({OPTIONAL_JS})")


# The wide fallback, before any of the page's scripts run: each Latin family of the figures'
# font stack drawn in DejaVu Sans (a FontFace from the file's bytes is ready at once, so plotly
# measures its text in it from the first draw).
FALLBACK_JS = """(() => {
  const bytes = Uint8Array.from(atob('%s'), c => c.charCodeAt(0));
  for (const family of %s) document.fonts.add(new FontFace(family, bytes));
})();"""

# Whether the fallback is in effect: the figures' font stack measures as DejaVu Sans does.
FONT_PROBE_JS = r"""([stack]) => {
  const c = document.createElement('canvas').getContext('2d');
  const width = (family) => { c.font = `12px ${family}`; return c.measureText(
    'padded length: 8 0.14 key (attended to)').width; };
  return {stack: width(stack), dejavu: width('"DejaVu Sans"'),
          serif: width('serif')};
}"""

_fallback_script: str | None = None


def fallback_script() -> str:
    """The init script of the wide fallback (DejaVu Sans for the figures' Latin families)."""
    global _fallback_script
    if _fallback_script is None:
        import base64

        if not FALLBACK_FILE.exists():
            raise FileNotFoundError(f"{FALLBACK_FILE} is missing: "
                                    "apt-get install fonts-dejavu-core")
        data = base64.b64encode(FALLBACK_FILE.read_bytes()).decode("ascii")
        _fallback_script = FALLBACK_JS % (data, json.dumps(list(FALLBACK_FAMILIES)))
    return _fallback_script


def steps_to_try(n: int, most: int = MAX_STEPS) -> list[int]:
    """Both ends and evenly spaced steps between, at most ``most`` of ``n``."""
    if n <= most:
        return list(range(n))
    return sorted({round(i * (n - 1) / (most - 1)) for i in range(most)})


def figure_states(page, fig):
    """Yield (state name, findings) for a figure: initial, each slider step, each menu entry."""
    handle = fig.element_handle()
    yield "initial", None
    layout = fig.evaluate("gd => ({s: (gd.layout.sliders || []).map(s => s.steps.length),"
                          " m: (gd.layout.updatemenus || []).map(m => (m.buttons || []).length),"
                          " sl: (gd.layout.sliders || []).map(s => s.active || 0),"
                          " ml: (gd.layout.updatemenus || []).map(m => m.active || 0)})")
    for kind, key, counts in (("sliders", "slider", layout["s"]),
                              ("updatemenus", "menu", layout["m"])):
        for idx, n in enumerate(counts):
            for k in steps_to_try(n) if kind == "sliders" else range(n):
                page.evaluate(APPLY_JS, [handle, kind, idx, k])
                yield f"{key} {idx} at step {k}", (kind, idx, k)


def check_figure(page, fig, width: int) -> tuple[list[dict], int]:
    """Every finding for one figure (dicts: kind, state, what) and the number of states."""
    handle = fig.element_handle()
    findings = []
    previous = None
    n_states = 0
    for state, control in figure_states(page, fig):
        n_states += 1
        found = page.evaluate(STATE_JS, [handle, MIN_FONT_PX, MIN_CELL_PX, width == DESKTOP,
                                         CELL_TOLERANCE_PX,
                                         TOUCH_PX, CELL_GAP_PX])
        if "error" in found:
            findings.append({"kind": "out_of_bounds", "state": state, "what": found["error"]})
            continue
        for kind, items in found.items():
            for what in dict.fromkeys(items):  # each distinct finding once per state
                findings.append({"kind": kind, "state": state, "what": what})
        snap = page.evaluate(SNAPSHOT_JS, handle)
        if previous is not None and control is not None:
            # the same control moved from its previous entry: data changed, titles did not
            if snap["data"] != previous["data"] and snap["titles"] == previous["titles"]:
                findings.append({"kind": "stale_title", "state": state,
                                 "what": "the data changed, no title did"})
        previous = snap
    return findings, n_states


def has_figure(path: Path) -> bool:
    """Whether the built page ``path`` holds a plotly figure (what the fallback font changes)."""
    return 'class="plotly-graph-div' in path.read_text(encoding="utf-8")


@contextlib.contextmanager
def tab(browser, width: int, font: str = "book"):
    """A page at ``width`` px in ``font`` (the wide fallback's init script in it, every request
    off the machine refused) for :func:`check_page` to open pages in, one after another: each
    new page starts a renderer (~0.4 s a load here), a page that navigates keeps its own."""
    if font not in FONTS:
        raise ValueError(f"font must be one of {FONTS}, got {font!r}")
    context = browser.new_context(viewport={"width": width, "height": SCREEN_HEIGHT})
    if font == "fallback":
        context.add_init_script(fallback_script())
    page = context.new_page()
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
        ("file://", "data:", "blob:")) else r.abort())
    page.book_tab = (width, font)
    try:
        yield page
    finally:
        context.close()


def check_page(browser, path: Path, width: int, shots: Path | None = None,
               name: str | None = None, font: str = "book", page=None) -> dict:
    """Open ``path`` at ``width`` and run the check on every figure and on the page, in the
    book's fonts (``font="book"``) or the wide fallback (``"fallback"``, see FALLBACK_FAMILIES),
    in ``page`` (a :func:`tab` of that width and font) or in a tab of its own. Each finding
    names its font."""
    if page is None:
        with tab(browser, width, font) as own:
            return check_page(browser, path, width, shots, name, font, own)
    if getattr(page, "book_tab", None) != (width, font):
        raise ValueError(f"check_page({width}, {font!r}) was given a page that is not a "
                         f"legibility.tab({width}, {font!r}): open one with that tab()")
    name = name or path.name
    page.goto(path.as_uri(), wait_until="load")
    page.evaluate("document.fonts.ready.then(() => 0)")
    if font == "fallback":
        from book.face.plotting import FONT_FAMILY

        probe = page.evaluate(FONT_PROBE_JS, [FONT_FAMILY])
        if abs(probe["stack"] - probe["dejavu"]) > 0.01:
            raise RuntimeError(f"the fallback font is not in effect on {name}: {probe}")
    findings = []
    figures = page.locator("div.plotly-graph-div")
    n = figures.count()
    states = 0
    for i in range(n):
        fig = figures.nth(i)
        fig.scroll_into_view_if_needed()
        page.wait_for_function("gd => gd._fullLayout && gd.querySelector('.main-svg')",
                               arg=fig.element_handle(), timeout=20_000)
        fig_id = fig.evaluate("gd => gd.id")
        found, n_states = check_figure(page, fig, width)
        states += n_states
        for f in found:
            f.update(page=name, figure=f"figure {i} ({fig_id})", width=width, font=font)
        if found and shots is not None:
            shots.mkdir(parents=True, exist_ok=True)
            fig.screenshot(path=str(
                shots / f"{name.replace('/', '_')}-{width}-{font}-fig{i}.png"))
        findings += found
    # the page's own checks (code blocks, length) in the book's fonts: the fallback
    # changes only the figures' font families
    if width == DESKTOP and font == "book":
        info = page.evaluate(PAGE_JS, [SCREEN_HEIGHT])
        findings += [{"kind": "code_overflow", "page": name, "figure": "-", "state": "-",
                      "width": width, "font": font, "what": w} for w in info["wide"]]
        if "chapters/" in name and (info["screens"] > MAX_SCREENS
                                    or info["page"] > MAX_PAGE_SCREENS):
            findings.append({"kind": "too_long", "page": name, "figure": "-", "state": "-",
                             "width": width, "font": font,
                             "what": f"{info['screens']:.1f} screens of {SCREEN_HEIGHT} px "
                                     f"without its optional sections, {info['page']:.1f} "
                                     "with them"})
    return {"figures": n, "states": states, "findings": findings, "width": width,
            "font": font, "page": name}


def totals(results: list[dict]) -> dict:
    out = {"figures": sum(r["figures"] for r in results),
           "states": sum(r["states"] for r in results)}
    for kind in KINDS:
        out[kind] = sum(1 for r in results for f in r["findings"] if f["kind"] == kind)
    return out


def describe(f: dict) -> str:
    font = f" ({f['font']} font)" if f.get("font", "book") != "book" else ""
    return (f"{f['page']} @ {f['width']} px{font}, {f['figure']}, {f['state']}: {f['kind']}: "
            f"{f['what']}")


def totals_by(results: list[dict]) -> dict:
    """Totals per (width, font): {"1280 book": {...}, "390 fallback": {...}, ...}."""
    groups: dict = {}
    for r in results:
        groups.setdefault(f"{r['width']} {r['font']}", []).append(r)
    return {k: totals(v) for k, v in sorted(groups.items())}


def totals_by_page(results: list[dict]) -> dict:
    """The kinds found on each page (every width and font together), pages without any left
    out: {"chapters/04_pytorch.html": {"cell_text": 3}, ...}."""
    pages: dict = {}
    for r in results:
        for f in r["findings"]:
            kinds = pages.setdefault(r["page"], {})
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    return dict(sorted(pages.items()))


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    paths = [Path(a).resolve() for a in argv if not a.startswith("--")]
    shots = next((Path(a.split("=", 1)[1]) for a in argv if a.startswith("--shots=")), None)
    fonts = next((a.split("=", 1)[1].split(",") for a in argv if a.startswith("--font=")),
                 list(FONTS))
    widths = next(([int(w) for w in a.split("=", 1)[1].split(",")] for a in argv
                   if a.startswith("--width=")), [DESKTOP, PHONE])
    with sync_playwright() as p:
        b = headless.launch(p)
        results = []
        for width in widths:
            for font in fonts:
                with tab(b, width, font) as page:
                    for path in paths:
                        r = check_page(b, path, width, shots, font=font, page=page,
                                       name=f"{path.parent.name}/{path.name}")
                        results.append(r)
                        seen = set()
                        for f in r["findings"]:
                            key = (f["figure"], f["kind"], f["what"][:40])
                            if key not in seen:
                                seen.add(key)
                                print(describe(f))
        b.close()
    for group, t in totals_by(results).items():
        print(group, json.dumps(t))
    print(json.dumps(totals(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
