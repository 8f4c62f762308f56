// Chapter 2's d_k sampler: histograms of q·k and q·k / √d_k over n seeded pairs.
var ns = window.bookInpage;
var fill = ns.fill, histogram = ns.histogram, largest = ns.largest, variance = ns.variance;
var normals = ns.normals, seedFrom = ns.seedFrom;

ns.register("dk", function (spec, v) {
  var d_k = v.d_k, n = v.n, g = normals(seedFrom([spec.seed, d_k, n]));
  var raw = new Array(n), scaled = new Array(n), root = Math.sqrt(d_k), i, j;
  for (i = 0; i < n; i++) {
    var s = 0;
    for (j = 0; j < d_k; j++) s += g() * g();
    raw[i] = s;
    scaled[i] = s / root;
  }
  var r = 4 * root, hr = histogram(raw, -r, r, spec.bins), hs = histogram(scaled, -4, 4, spec.bins);
  var rawVar = variance(raw), scaledVar = variance(scaled), reach = Math.max(spec.reach, r);
  return {
    traces: [0, 1], data: {x: [hr.x, hs.x], y: [hr.y, hs.y]},
    layout: {"annotations[0].text": fill(spec.titles[0], {d_k: d_k, "var": rawVar}),
             "annotations[1].text": fill(spec.titles[1], {"var": scaledVar}),
             "xaxis.range": [-reach, reach],
             "yaxis.range": [0, Math.max(spec.top[0], 1.05 * largest(hr.y))],
             "yaxis2.range": [0, Math.max(spec.top[1], 1.05 * largest(hs.y))]},
    exposed: {raw: raw, raw_var: rawVar, scaled_var: scaledVar, counts: [hr.counts, hs.counts]}};
});
