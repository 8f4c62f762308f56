// The toy encoder's forward pass in float64 over its exported weights (book/toy/export.py).
var ns = window.bookInpage = window.bookInpage || {};
var softmax = ns.softmax;

// The trained toy encoder (book/toy/export.py) on the order the reader types (its token ids):
// embeddings and positions, each block's attention and feed-forward, the classifier; in float64
// over the checkpoint's float32 weights (torch computes in float32: the maps agree to about 1e-6,
// tests/test_browser_order.py).
function unpack(entry) {
  var bytes = atob(entry.data), view = new DataView(new ArrayBuffer(bytes.length));
  for (var i = 0; i < bytes.length; i++) view.setUint8(i, bytes.charCodeAt(i));
  var v = new Float64Array(bytes.length / 4);
  for (i = 0; i < v.length; i++) v[i] = view.getFloat32(4 * i, true);
  return {shape: entry.shape, v: v};
}

function loadModel(m) {  // book.toy.export.page_model's JSON -> config and Float64 tensors
  var t = {};
  if (m.format !== 1) throw new Error("a page model of format " + m.format);
  Object.keys(m.tensors).forEach(function (name) { t[name] = unpack(m.tensors[name]); });
  return {config: m, t: t};
}

// The models unpacked so far, by id: a cell whose spec says {same_as: id} reads the weights
// another cell of the page carries (book.toy.export.page_model_ref), so the page holds one copy
var MODELS = {};

function carried(id) {
  if (!MODELS[id]) {
    document.querySelectorAll(".book-inpage script.book-inpage-spec").forEach(function (el) {
      var text = el.textContent;
      if (MODELS[id] || text.indexOf('"id":"' + id + '"') < 0) return;  // parse only that one
      var m = JSON.parse(text).model;
      if (m && m.id === id) MODELS[id] = loadModel(m);
    });
  }
  if (!MODELS[id]) {
    throw new Error("no cell of this page carries the model " + id + ": show the explorer " +
                    "that holds its weights (book.toy.export.page_model) on the same page");
  }
  return MODELS[id];
}

function pageModel(spec) {  // the cell's one model, unpacked once
  if (!spec._model) {
    var m = spec.model;
    if (m.same_as) spec._model = carried(m.same_as);
    else spec._model = MODELS[m.id] || (MODELS[m.id] = loadModel(m));
  }
  return spec._model;
}

function linear(x, w, b) {  // torch's nn.Linear: x W^T + b, W (out, in)
  var out = w.shape[0], inn = w.shape[1], W = w.v;
  return x.map(function (row) {
    var y = new Float64Array(out);
    for (var o = 0; o < out; o++) {
      var s = b ? b.v[o] : 0, base = o * inn;
      for (var i = 0; i < inn; i++) s += W[base + i] * row[i];
      y[o] = s;
    }
    return y;
  });
}

function layerNorm(x, w, b, eps) {
  return x.map(function (row) {
    var n = row.length, mean = 0, sq = 0, i, y = new Float64Array(n);
    for (i = 0; i < n; i++) mean += row[i];
    mean /= n;
    for (i = 0; i < n; i++) sq += (row[i] - mean) * (row[i] - mean);
    var inv = 1 / Math.sqrt(sq / n + eps);
    for (i = 0; i < n; i++) y[i] = (row[i] - mean) * inv * (w ? w.v[i] : 1) + (b ? b.v[i] : 0);
    return y;
  });
}

function plus(a, b) {
  return a.map(function (row, i) {
    var y = new Float64Array(row.length);
    for (var j = 0; j < row.length; j++) y[j] = row[j] + b[i][j];
    return y;
  });
}

// book.ideas.mha.MultiHeadSelfAttention, no mask; the maps alone where the values' weights
// were left out of the page (book.toy.export.page_model(maps_only=True))
function selfAttention(t, p, x, heads) {
  var q = linear(x, t[p + "w_q.weight"], t[p + "w_q.bias"]);
  var k = linear(x, t[p + "w_k.weight"], t[p + "w_k.bias"]);
  var v = t[p + "w_v.weight"] ? linear(x, t[p + "w_v.weight"], t[p + "w_v.bias"]) : null;
  var n = x.length, d = q[0].length, dk = d / heads, root = Math.sqrt(dk), maps = [];
  var context = x.map(function () { return new Float64Array(d); });
  for (var h = 0; h < heads; h++) {
    var off = h * dk, map = [];
    for (var i = 0; i < n; i++) {
      var scores = new Array(n);
      for (var j = 0; j < n; j++) {
        var s = 0;
        for (var c = 0; c < dk; c++) s += q[i][off + c] * k[j][off + c];
        scores[j] = s / root;
      }
      var w = softmax(scores);
      if (v) for (j = 0; j < n; j++) for (c = 0; c < dk; c++) context[i][off + c] += w[j] * v[j][off + c];
      map.push(w);
    }
    maps.push(map);
  }
  return {out: v ? linear(context, t[p + "w_o.weight"], t[p + "w_o.bias"]) : null, maps: maps};
}

function feedForward(t, p, x) {
  var hidden = linear(x, t[p + "ff.0.weight"], t[p + "ff.0.bias"]).map(function (row) {
    return row.map(function (z) { return z > 0 ? z : 0; });
  });
  return linear(hidden, t[p + "ff.2.weight"], t[p + "ff.2.bias"]);
}

// book.toy.model.TinyEncoder.forward(ids, need_weights=True) for one order
function encoder(model, ids) {
  var c = model.config, t = model.t, d = c.d_model, maps = [];
  var x = ids.map(function (id, i) {
    var row = new Float64Array(d);
    for (var j = 0; j < d; j++) {
      row[j] = t["embed.weight"].v[id * d + j] + (c.positions ? t["pos.weight"].v[i * d + j] : 0);
    }
    return row;
  });
  for (var l = 0; l < c.n_layers; l++) {
    var p = "blocks." + l + ".", a;
    var ln1 = function (z) { return layerNorm(z, t[p + "norm1.weight"], t[p + "norm1.bias"], c.eps); };
    var ln2 = function (z) { return layerNorm(z, t[p + "norm2.weight"], t[p + "norm2.bias"], c.eps); };
    var pre = c.norm === "pre";
    a = selfAttention(t, p + "attn.", pre ? ln1(x) : x, c.n_heads);
    maps.push(a.maps);
    if (!a.out) return {logits: null, maps: maps};  // a maps-only page model: no labels
    if (c.norm === "post") {
      x = ln1(plus(x, a.out));
      x = ln2(plus(x, feedForward(t, p, x)));
    } else {
      x = plus(x, a.out);
      x = plus(x, feedForward(t, p, pre ? ln2(x) : x));
    }
  }
  if (c.norm === "pre") x = layerNorm(x, t["final_norm.weight"], t["final_norm.bias"], c.eps);
  return {logits: linear(x, t["head.weight"], t["head.bias"]), maps: maps};
}

ns.loadModel = loadModel;
ns.pageModel = pageModel;
ns.encoder = encoder;
