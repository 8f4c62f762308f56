// Chapter 8's model view: every head of every layer for the order the reader types.
var ns = window.bookInpage;
var axisLabels = ns.axisLabels, readOrder = ns.readOrder, rounded3 = ns.rounded3;

// Pixels only the page uses: the panels keep cell_px a row (room for every row's label) for a
// longer order than drawn first; the typed caption, growing upwards from just above the panels,
// stays under the title's title_px (13 px, at the top of the figure, and the space under it)
var LAYOUT = {cell_px: 13, title_px: 32};

// At most `count` of `labels`: every n-th, from the first (book.face.views.model_view's
// key_labels)
function everyNth(labels, count) {
  var step = Math.max(1, Math.ceil(labels.length / count));
  return labels.filter(function (_, i) { return i % step === 0; });
}

// On the figure of book.face.views.model_view (one trace a layer and head; its slider still
// picks the layer shown, its menu brings back the orders drawn in the build). The caption grows
// upwards: a longer one takes a taller top margin, the panels keep their size.
ns.register("order_model", function (spec, v, gd) {
  var r = readOrder(spec, v.text);
  if (r.refused) return r.refused;
  var mv = spec.model_view, keys = axisLabels(spec.language, r.tokens, false), n = r.n;
  // English: each map's categories are the glossed tokens (the hover names them), its ticks
  // the bare ones (book.chapters.ch08_seeing_attention._gloss_model_view)
  var cats = spec.zh ? keys : axisLabels(spec.language, r.tokens, true);
  var z = [], x = [], traces = [];
  r.out.maps.forEach(function (layerMaps) {
    layerMaps.forEach(function (map) {
      z.push(rounded3(map));
      x.push(cats);
      traces.push(traces.length);
    });
  });
  // the panels as tall as their rows need (LAYOUT.cell_px each), never shorter than drawn first
  // (the plot's height and the room under it for the slider and menu, as plotly laid them
  // out); the caption, growing upwards from a fixed share of that height above them
  var size = gd && gd._fullLayout && gd._fullLayout._size;
  if (!spec._plot && size) spec._plot = {h: size.h, below: size.b};
  var first = spec._plot || {h: mv.plot, below: mv.bottom};
  // (+ 1 px where it grows: plotly rounds the panels' domains to whole pixels, which took a
  // 22-token order's rows 0.4 px under cell_px once the page's figures drew no slider)
  var need = Math.ceil(n * LAYOUT.cell_px / mv.panel_share);
  var plot = need > first.h ? need + 1 : first.h;
  var above = Math.round(plot * mv.caption_y) + LAYOUT.title_px;
  var top = Math.max(mv.top, above + spec.line_px * r.lines);
  // every row labelled, at most mv.key_labels of the keys
  var columns = everyNth(keys, mv.key_labels);
  // a new list of annotations: the figure's list may be a menu button's own (plotly keeps
  // the object it was given), and "annotations[i].text" would rewrite that button's caption
  var notes = JSON.parse(JSON.stringify(gd && gd.layout.annotations || []));
  if (notes[mv.caption]) notes[mv.caption].text = r.caption;
  var layout = {"margin.t": top, height: top + plot + first.below, annotations: notes};
  var shownCats = everyNth(cats, mv.key_labels);
  for (var h = 0; h < mv.n_heads; h++) {
    var axis = h ? String(h + 1) : "";
    layout["xaxis" + axis + ".tickvals"] = spec.zh ? columns : shownCats;
    if (!spec.zh) {
      layout["xaxis" + axis + ".ticktext"] = columns;
      layout["yaxis" + axis + ".tickvals"] = cats;
      layout["yaxis" + axis + ".ticktext"] = keys;
    }
  }
  return {traces: traces, data: {z: z, x: x, y: x}, layout: layout,
          status: spec.messages.model_typed, exposed: r.exposed};
}, LAYOUT);
