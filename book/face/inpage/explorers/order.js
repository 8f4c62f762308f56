// Chapter 8's head view: one head of one layer (the menus) for the order the reader types.
var ns = window.bookInpage;
var axisLabels = ns.axisLabels, columns = ns.columns, fill = ns.fill, readOrder = ns.readOrder;
var rounded3 = ns.rounded3;

// Pixels only the page uses (the first state, drawn by Python, has its own): every key labelled
// while upright labels stay key_px apart; the queries' English glosses up to gloss_up_to words
// (a longer order's map takes the rows' room: cells of 12 px at the desktop width)
var LAYOUT = {key_px: 14, gloss_up_to: 24};

// The keys' labels as book.face.plotting.level_cjk_ticks sets the first state's: level where
// the widest (at `font` px) fits its cell (the plot's width as drawn last), else upright, every
// step-th key once upright labels would come closer than LAYOUT.key_px.
function keyTicks(labels, gd, font) {
  var width = gd && gd._fullLayout && gd._fullLayout._size ? gd._fullLayout._size.w : Infinity;
  var widest = Math.max.apply(null, labels.map(columns)) * font / 2;
  var level = {"xaxis.tickangle": 0, "xaxis.tickmode": "auto", "xaxis.tickvals": null,
               "xaxis.ticktext": null};
  if (widest <= width / labels.length - 2) return level;
  var step = Math.max(1, Math.ceil(labels.length * LAYOUT.key_px / width));
  var shown = labels.filter(function (_, i) { return i % step === 0; });
  return {"xaxis.tickangle": -90, "xaxis.tickmode": "array", "xaxis.tickvals": shown,
          "xaxis.ticktext": shown};
}

ns.register("order", function (spec, v, gd) {
  var r = readOrder(spec, v.text);
  if (r.refused) return r.refused;
  var lang = spec.language, msg = spec.messages, n = r.n, tokens = r.tokens;
  var layer = Number(v.layer), head = Number(v.head), cols = axisLabels(lang, tokens, false);
  var rows = axisLabels(lang, tokens, !spec.zh && n <= LAYOUT.gloss_up_to);
  var top = spec.top + spec.line_px * r.lines;
  var layout = {"annotations[0].text": r.caption,
                "title.text": fill(msg.head_label, {layer: layer, head: head}),
                "xaxis.categoryarray": cols, "yaxis.categoryarray": rows,
                "xaxis.range": [-0.5, n - 0.5], "yaxis.range": [n - 0.5, -0.5],
                "margin.t": top, height: Math.max(spec.height, top + spec.below + spec.row_px * n)};
  var ticks = keyTicks(cols, gd, spec.key_font);
  Object.keys(ticks).forEach(function (k) { layout[k] = ticks[k]; });
  // the English hover names each cell's query and key with their glosses
  // (book.toy.orders_example.hover_glosses); the Chinese reads the tokens
  var glossed = axisLabels(lang, tokens, true);
  var hover = spec.zh ? null : glossed.map(function (q) {
    return glossed.map(function (k) { return [q, k]; });
  });
  return {
    traces: [0],
    data: {z: [rounded3(r.out.maps[layer][head])], x: [cols], y: [rows], customdata: [hover]},
    layout: layout,
    status: fill(msg.rows_cols, {head: fill(msg.head_label, {layer: layer, head: head})}),
    exposed: r.exposed};
}, LAYOUT);
