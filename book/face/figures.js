/* Figures as a keyboard and a screen reader meet them (book/face/figures.py writes the markup).
 *
 * 1. Controls: each figure's plotly sliders and menus stay in its layout, not drawn; the page's
 *    own range inputs and selects (above the figure) run their steps' plotly method and args,
 *    as plotly's slider would, so Tab reaches them and a screen reader names them.
 * 2. Data: the "data" disclosure under a figure holds its numbers as tables, built from the
 *    figure's own data when the reader opens it, and built again after every redraw while open.
 *    Heatmaps: rows are the y labels (queries), columns the x labels (keys). Lines and bars: one
 *    row per x value, one column per series.
 * 3. Announcements: after a redraw the reader caused (a control of the figure or of its in-page
 *    explorer), the figure's polite status line says what it now shows: the controls' values,
 *    the title and panel titles (where the numbers are), and for a heatmap of up to 16 rows the
 *    key each query weights most.
 */
(function () {
  "use strict";
  var ZH = (document.documentElement.lang || "").slice(0, 2) === "zh";
  var WORDS = ZH ? {most: "每个查询权重最大的键：", panel: "面板", sep: "；"}
                 : {most: "key each query weights most: ", panel: "panel", sep: "; "};
  var MAX_ROWS_SAID = 16;
  var SAY_AFTER_MS = 400;

  function plain(text) {
    if (text === undefined || text === null) return "";
    if (typeof text === "object") text = text.text || "";
    var box = document.createElement("div");
    box.innerHTML = String(text).replace(/<br\s*\/?>/gi, " ");
    return (box.textContent || "").replace(/\s+/g, " ").trim();
  }

  function number(v) {
    if (v === null || v === undefined || v === "") return "–";
    if (typeof v !== "number") return plain(v);
    if (!isFinite(v)) return String(v);
    if (Number.isInteger(v)) return String(v);
    return String(parseFloat(v.toPrecision(4)));
  }

  // plotly.py may send arrays as typed-array specs; plotly.js decodes them into typed arrays
  function list(v) {
    if (v && ArrayBuffer.isView(v)) return Array.from(v);
    return Array.isArray(v) ? v.map(function (x) { return x && ArrayBuffer.isView(x) ? Array.from(x) : x; }) : v;
  }

  // the traces as drawn (visibility resolved, arrays decoded), named only as the figure names them
  function heatmapsShown(list) {
    return list.filter(function (t) { return t.type === "heatmap" && shown(t); }).length;
  }

  function traces(gd) {
    return (gd._fullData || gd.data || []).map(function (t, i) {
      var own = (gd.data || [])[i] || {};
      return Object.assign({}, t, {index: i, name: own.name, x: list(t.x), y: list(t.y),
                                   z: list(t.z), text: list(t.text)});
    });
  }

  // a heatmap panel's name: the trace's own, else (a figure of several panels) the panel title
  // just above its plot area; a figure of one panel has its title
  function panelName(trace, layout, panels) {
    if (trace.name) return plain(trace.name);
    if (panels < 2) return "";
    var xa = layout["xaxis" + String(trace.xaxis || "x").slice(1)] || {};
    var ya = layout["yaxis" + String(trace.yaxis || "y").slice(1)] || {};
    if (!xa.domain || !ya.domain) return "";
    var best = "", gap = Infinity;
    (layout.annotations || []).forEach(function (a) {
      if (a.xref !== "paper" || a.yref !== "paper") return;
      if (a.x < xa.domain[0] - 0.01 || a.x > xa.domain[1] + 0.01) return;
      var d = a.y - ya.domain[1];
      if (d >= -0.01 && d < gap) { gap = d; best = plain(a.text); }
    });
    return best;
  }

  function shown(trace) {
    return trace.visible !== false && trace.visible !== "legendonly";
  }

  function labels(values, n) {
    var out = [];
    for (var i = 0; i < n; i++) {
      var v = values ? values[i] : undefined;
      out.push(v === undefined ? String(i) : typeof v === "number" ? number(v) : plain(v));
    }
    return out;
  }

  /* ---- tables --------------------------------------------------------------------------- */

  // Text the script writes (tables, announcements) on an English page: its Chinese runs (the
  // tokens of an order) marked lang="zh-Hans", as the build marks the page's own (WCAG 3.1.2)
  var CJK = /([\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]+(?:[\s\u2080-\u208f]*[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]+)*)/;
  function write(el, text) {
    el.textContent = "";
    String(text).split(CJK).forEach(function (part, i) {
      if (!part) return;
      if (ZH || i % 2 === 0) { el.appendChild(document.createTextNode(part)); return; }
      var span = document.createElement("span");
      span.lang = "zh-Hans";
      span.textContent = part;
      el.appendChild(span);
    });
  }

  function cell(tag, text, scope) {
    var el = document.createElement(tag);
    write(el, text);
    if (scope) el.scope = scope;
    return el;
  }

  function table(caption, head, rows) {
    var t = document.createElement("table");
    t.className = "book-figure-table";
    t.appendChild(cell("caption", caption));
    var thead = t.createTHead().insertRow();
    head.forEach(function (h) { thead.appendChild(cell("th", h, "col")); });
    var body = t.createTBody();
    rows.forEach(function (row) {
      var tr = body.insertRow();
      row.forEach(function (v, j) { tr.appendChild(j === 0 ? cell("th", v, "row") : cell("td", v)); });
    });
    return t;
  }

  function heatmapTable(trace, name, box) {
    var z = trace.z || [];
    var ncol = z.length ? z[0].length : 0;
    var cols = labels(trace.x, ncol), rows = labels(trace.y, z.length);
    var text = Array.isArray(trace.text) && Array.isArray(trace.text[0]) ? trace.text : null;
    var corner = (box.dataset.y || "") + " \\ " + (box.dataset.x || "");
    return table(name, [corner].concat(cols), rows.map(function (r, i) {
      return [r].concat(z[i].map(function (v, j) {
        var t = text && text[i] && text[i][j] !== undefined && text[i][j] !== "" ? plain(text[i][j]) : null;
        return t !== null ? t : number(v);
      }));
    }));
  }

  // a series' name, with its panel's y-axis title where two panels hold series of one name
  function seriesNames(list, layout, box) {
    var names = list.map(function (t) { return plain(t.name) || box.dataset.series + " " + (t.index + 1); });
    return names.map(function (name, i) {
      if (names.indexOf(name) === names.lastIndexOf(name)) return name;
      var axis = layout["yaxis" + String(list[i].yaxis || "y").slice(1)] || {};
      var title = plain(axis.title);
      return title ? name + " (" + title + ")" : name;
    });
  }

  function seriesTables(traces, box, layout) {
    // traces that share their x values make one table, one column each
    var groups = [], byKey = {};
    traces.forEach(function (t) {
      var horizontal = t.orientation === "h";
      var x = horizontal ? t.y : t.x, y = horizontal ? t.x : t.y;
      if (!y) return;
      var key = JSON.stringify(x || y.length);
      if (!(key in byKey)) { byKey[key] = groups.length; groups.push({x: x, n: y.length, series: []}); }
      groups[byKey[key]].series.push({trace: t, y: y});
    });
    return groups.map(function (g) {
      var names = seriesNames(g.series.map(function (s) { return s.trace; }), layout, box);
      g.series.forEach(function (s, i) { s.name = names[i]; });
      var xs = labels(g.x, g.n);
      return table(g.series.map(function (s) { return s.name; }).join(", "),
                   [box.dataset.x || "x"].concat(g.series.map(function (s) { return s.name; })),
                   xs.map(function (x, i) {
                     return [x].concat(g.series.map(function (s) { return number(s.y[i]); }));
                   }));
    });
  }

  function fillTables(figure) {
    var gd = figure.querySelector(".js-plotly-plot");
    var box = figure.querySelector(".book-figure-data");
    var out = figure.querySelector(".book-figure-tables");
    if (!gd || !box || !out || !(gd._fullData || gd.data)) return;  // a diagram: its words
    var tables = [], lines = [];
    var layout = gd._fullLayout || gd.layout || {};
    var all = traces(gd), panels = heatmapsShown(all);
    all.forEach(function (t) {
      if (!shown(t)) return;
      var trace = t;
      if (trace.type === "heatmap") {
        var name = panelName(trace, layout, panels) || plain(layout.title) || WORDS.panel + " " + (tables.length + 1);
        tables.push(heatmapTable(t, name, box));
      } else {
        lines.push(t);
      }
    });
    tables = tables.concat(seriesTables(lines, box, layout));
    out.replaceChildren.apply(out, tables);
  }

  /* ---- announcements -------------------------------------------------------------------- */

  function controlsSaid(root) {
    var said = [];
    root.querySelectorAll("select, input[type=range]").forEach(function (el) {
      var label = el.closest("label");
      var name = label ? plain(label.firstChild && label.firstChild.textContent) : (el.getAttribute("aria-label") || el.name || "");
      var value = el.tagName === "SELECT" ? plain(el.options[el.selectedIndex] && el.options[el.selectedIndex].text)
                                          : (el.getAttribute("aria-valuetext") || el.value);
      said.push((name ? name + " " : "") + value);
    });
    return said;
  }

  function mostWeighted(gd) {
    var said = [], layout = gd._fullLayout || gd.layout || {};
    var all = traces(gd), panels = heatmapsShown(all);
    all.forEach(function (trace) {
      if (!shown(trace) || trace.type !== "heatmap" || !trace.z || trace.z.length > MAX_ROWS_SAID) return;
      var cols = labels(trace.x, trace.z[0] ? trace.z[0].length : 0), rows = labels(trace.y, trace.z.length);
      var pairs = trace.z.map(function (row, i) {
        var best = -1, top = -Infinity;
        row.forEach(function (v, j) { if (typeof v === "number" && v > top) { top = v; best = j; } });
        return best < 0 ? null : rows[i] + " → " + cols[best];
      }).filter(Boolean);
      var name = panelName(trace, layout, panels);
      if (pairs.length) said.push((name ? name + ": " : "") + WORDS.most + pairs.join(", "));
    });
    return said;
  }

  function summary(figure) {
    var gd = figure.querySelector(".js-plotly-plot");
    var root = figure.closest(".book-inpage") || figure;
    var layout = gd.layout || {};
    var parts = controlsSaid(root);
    var title = plain(layout.title);
    if (title) parts.push(title);
    var all = traces(gd), count = heatmapsShown(all);
    var panels = all.map(function (t) { return panelName(t, layout, count); });
    (layout.annotations || []).forEach(function (a) {
      var t = plain(a.text);
      if (t && parts.indexOf(t) < 0 && panels.indexOf(t) < 0) parts.push(t);
    });
    return parts.concat(mostWeighted(gd)).join(WORDS.sep);
  }

  function watch(figure) {
    var gd = figure.querySelector(".js-plotly-plot");
    if (!gd || typeof gd.on !== "function") return false;
    var status = figure.querySelector(".book-figure-status");
    var data = figure.querySelector(".book-figure-data");
    var timer = null;
    function redrawn() {
      if (data && data.open) fillTables(figure);
      if (!figure.bookPending) return;
      clearTimeout(timer);
      timer = setTimeout(function () {
        figure.bookPending = false;
        write(status, summary(figure));
      }, SAY_AFTER_MS);
    }
    gd.on("plotly_afterplot", redrawn);
    gd.on("plotly_animated", redrawn);
    if (data) data.addEventListener("toggle", function () { if (data.open) fillTables(figure); });
    return true;
  }

  /* ---- controls ------------------------------------------------------------------------- */

  function run(gd, entry) {
    if (!entry || !entry.method || entry.method === "skip") return;
    var args = [gd].concat(entry.args || []);
    return Plotly[entry.method].apply(Plotly, args);
  }

  function wire(figure) {
    var gd = figure.querySelector(".js-plotly-plot");
    figure.querySelectorAll(".book-figure-controls input[type=range]").forEach(function (input) {
      var output = input.parentNode.querySelector(".book-figure-value");
      input.addEventListener("input", function () {
        var slider = (gd.layout.sliders || [])[+input.dataset.slider] || {};
        var step = (slider.steps || [])[+input.value];
        if (!step) return;
        var said = plain(step.label);
        input.setAttribute("aria-valuetext", said);
        if (output) output.textContent = said;
        run(gd, step);
      });
    });
    figure.querySelectorAll(".book-figure-controls select").forEach(function (select) {
      select.addEventListener("change", function () {
        var menu = (gd.layout.updatemenus || [])[+select.dataset.menu] || {};
        run(gd, (menu.buttons || [])[+select.value]);
      });
    });
  }

  // a reader's change to a control marks the figure it redraws: the figure's own controls, or
  // the controls of the in-page explorer around it (capture: before the explorer redraws)
  function mark(event) {
    var el = event.target;
    if (!el || !el.closest) return;
    var holder = el.closest(".book-inpage") || el.closest(".book-figure");
    var figure = holder && (holder.matches(".book-figure") ? holder : holder.querySelector(".book-figure"));
    if (figure) figure.bookPending = true;
  }

  function start(figure, tries) {
    if (watch(figure)) { wire(figure); return; }
    if (tries > 0) setTimeout(function () { start(figure, tries - 1); }, 100);
  }

  function init() {
    document.addEventListener("input", mark, true);
    document.addEventListener("change", mark, true);
    document.querySelectorAll("figure.book-figure").forEach(function (f) { start(f, 100); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
