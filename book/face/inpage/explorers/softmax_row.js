// Chapter 2's softmax row: one seeded query against n_keys keys, unscaled and ÷√d_k.
var ns = window.bookInpage;
var fill = ns.fill, largest = ns.largest, softmax = ns.softmax;
var normals = ns.normals, seedFrom = ns.seedFrom;

ns.register("softmax_row", function (spec, v) {
  var d_k = v.d_k, n = v.n_keys, g = normals(seedFrom([v.seed, d_k, n, spec.salt]));
  var q = new Array(d_k), K = new Array(n), scores = new Array(n), root = Math.sqrt(d_k);
  var i, j, keys = new Array(n);
  for (i = 0; i < d_k; i++) q[i] = g();
  for (j = 0; j < n; j++) {
    K[j] = new Array(d_k);
    var s = 0;
    for (i = 0; i < d_k; i++) { K[j][i] = g(); s += K[j][i] * q[i]; }
    scores[j] = s;
    keys[j] = spec.key + (j + 1);
  }
  var none = softmax(scores), sqrt = softmax(scores.map(function (x) { return x / root; }));
  return {
    traces: [0, 1], data: {x: [keys, keys], y: [none, sqrt]},
    // the key labels a tick's length below the axis: on a phone, upright, "k1" would
    // otherwise touch the weight axis' "0"
    layout: {"title.text": fill(spec.title, {d_k: d_k, none: largest(none), sqrt: largest(sqrt)}),
             "xaxis.ticks": "outside", "xaxis.ticklen": 6},
    exposed: {q: q, k: K, scores: scores, none: none, sqrt: sqrt}};
});
