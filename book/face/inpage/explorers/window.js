// Chapter 9's window explorer: a sliding window's pairs, banded blocks and score entries.
var ns = window.bookInpage;
var fill = ns.fill, range = ns.range;

// Chapter 9: a sliding window of half-width w over n tokens: what may attend, what the banded
// version computes anyway, and the score entries of both versions against n.
function bandedEntries(n, w) {  // book.ideas.longctx.banded_score_entries
  var block = Math.min(Math.max(w, 16), n);
  return Math.ceil(n / block) * block * (block + 2 * w);
}

ns.register("window", function (spec, v) {
  var w = v.window, n = v.n, block = Math.min(Math.max(w, 16), n), levels = [], keys = 0;
  for (var i = 0; i < n; i++) {
    var start = Math.floor(i / block) * block - w, row = [], seen = 0;
    for (var j = 0; j < n; j++) {
      var may = Math.abs(i - j) <= w, computed = j >= start && j < start + block + 2 * w;
      row.push(may ? 2 : computed ? 1 : 0);
      if (may) seen += 1;
    }
    levels.push(row);
    keys = Math.max(keys, seen);
  }
  var full = spec.cost_ns.map(function (c) { return c * c; });
  var banded = spec.cost_ns.map(function (c) { return bandedEntries(c, w); });
  var last = spec.cost_ns.length - 1, positions = range(n), shown = Math.min(n, spec.view);
  return {
    traces: [0, 2],
    data: {z: [levels, null], x: [positions, spec.cost_ns], y: [positions, banded]},
    layout: {"annotations[0].text": fill(spec.titles[0], {window: w, keys: keys, n: n}),
             "annotations[1].text": fill(spec.titles[1], {ratio: full[last] / banded[last],
                                                          n: spec.cost_ns[last]}),
             "xaxis.range": [-0.5, shown - 0.5], "yaxis.range": [shown - 0.5, -0.5]},
    status: n > spec.view ? fill(spec.status, {shown: shown, n: n}) : "",
    exposed: {levels: levels, keys: keys, block: block, full: full, banded: banded}};
});
