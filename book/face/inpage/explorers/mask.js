// Chapter 4's mask explorer: which pairs may attend under a mask kind, and their weights.
var ns = window.bookInpage;
var fill = ns.fill, round4 = ns.round4, softmax = ns.softmax, uniqueLabels = ns.uniqueLabels;

// a weight as the renderer writes it short: ".25" for "0.25"
function shortValue(text) { return text.replace(/(^|[^\d.])0(?=\.\d)/g, "$1"); }

// Chapter 4: the takeout order's first `length` tokens padded with `padding` positions under a
// mask kind: which pairs may attend, and the weights of the seeded one-head layer (its
// projected q and k of every position come in the spec).
ns.register("mask", function (spec, v) {
  var kind = spec.kinds[v.kind], length = v.length, n = v.length + v.padding;
  if (!kind) throw new Error("unknown mask kind " + v.kind);
  var tokens = spec.tokens.slice(0, length);
  for (var p = 0; p < v.padding; p++) tokens.push(spec.pad);
  var labels = uniqueLabels(tokens), root = Math.sqrt(spec.q[0].length);
  // the English hover names each cell's query and key with their glosses
  // (book.chapters.ch04_pytorch._mask_hover_glosses); the Chinese reads the tokens
  var glossed = labels.map(function (name, i) {
    var g = spec.glosses && i < length ? spec.glosses[i] : "";
    return g === "" || g === tokens[i] || g === "," ? name : name + " (" + g + ")";
  });
  var hover = spec.glosses ? glossed.map(function (q) {
    return glossed.map(function (k) { return [q, k]; });
  }) : null;
  var allowed = [], weights = [], i, j, d;
  for (i = 0; i < n; i++) {
    var row = [], scores = [];
    for (j = 0; j < n; j++) {
      var ok = (!kind.causal || j <= i) && (!kind.padding || j < length);
      var s = 0;
      for (d = 0; d < spec.q[i].length; d++) s += spec.q[i][d] * spec.k[j][d];
      row.push(ok);
      scores.push(ok ? s / root : -Infinity);
    }
    allowed.push(row);
    weights.push(softmax(scores));
  }
  var show = n <= spec.text_up_to;
  var maskText = allowed.map(function (r) {
    return r.map(function (a) { return show ? (a ? "✓" : "·") : ""; });
  });
  var weightText = weights.map(function (r) {
    return r.map(function (w) { return show ? (w ? w.toFixed(2) : "0") : ""; });
  });
  // how the renderer writes the values at this length: a "1.00" may not fit where ".xx" does
  var oneHot = weightText.some(function (r) { return r.indexOf("1.00") >= 0; });
  var modes = spec.text_modes[n][oneHot ? 1 : 0];
  var texts = [maskText, weightText].map(function (grid, t) {
    return modes[t] === "short" ? grid.map(function (r) { return r.map(shortValue); }) : grid;
  });
  return {
    traces: [0, 1],
    data: {x: [labels, labels], y: [labels, labels], customdata: [hover, hover],
           z: [allowed.map(function (r) { return r.map(Number); }),
               weights.map(function (r) { return r.map(round4); })],
           text: texts,
           texttemplate: modes.map(function (m) { return m === "none" ? "" : "%{text}"; })},
    layout: {"annotations[0].text": kind.titles[0], "annotations[1].text": kind.titles[1],
             "title.text": fill(spec.title, {length: length, seq_len: n}),
             height: Math.max(spec.height,
                              Math.ceil(spec.margin + n * spec.cell_px / spec.panel_share)),
             "xaxis.tickangle": n > spec.angled_up_to ? -90 : spec.tickangle,
             "xaxis2.tickangle": n > spec.angled_up_to ? -90 : spec.tickangle},
    exposed: {labels: labels, allowed: allowed, weights: weights, text: texts}};
});
