/* In-page explorers of the HTML book (book/face/inpage.py): each `.book-inpage` cell holds its
 * controls, a plotly figure (its first state, drawn by Python) and a JSON spec. This script
 * recomputes the figure's data from the controls in plain JavaScript and redraws it with
 * Plotly.update (one restyle + relayout). No kernel, no request: it works from file://.
 *
 * The deterministic explorers (mask, window) compute what their Python twins compute, value for
 * value (tests/test_browser_inpage.py compares them). The random ones (the d_k sampler, the
 * softmax row) draw from a seeded generator of their own (mulberry32 and a ziggurat): the
 * numbers differ from numpy's, the same controls always give the same drawing, and the page
 * redraws them once at load so that every state the reader sees comes from this generator.
 * The typed orders (chapter 8's head and model views, chapter 6's head maps) run a toy encoder
 * on its exported weights in float64; their maps agree with torch's to about 1e-6
 * (tests/test_browser_order.py, tests/test_browser_head_maps.py).
 *
 * A cell's element carries `bookInpage` (compute, values, last, drawn) for the tests.
 */
(function () {
  "use strict";

  // --- seeded random numbers -------------------------------------------------------------------
  function seedFrom(parts) {
    var h = 0x9e3779b9;
    for (var i = 0; i < parts.length; i++) {
      h = Math.imul(h ^ (parts[i] >>> 0), 0x85ebca6b);
      h ^= h >>> 13;
      h = Math.imul(h, 0xc2b2ae35);
      h ^= h >>> 16;
    }
    return h >>> 0;
  }

  // N(0, 1) by Marsaglia and Tsang's ziggurat (2000, 128 layers) over mulberry32: about one
  // 32-bit draw per normal, so the d_k sampler's 2 · 4096 · 3000 normals take a fraction of a
  // second (Box-Muller's log, sqrt and sine per pair took seconds).
  var ZIG = (function () {
    var kn = new Float64Array(128), wn = new Float64Array(128), fn = new Float64Array(128);
    var dn = 3.442619855899, tn = dn, vn = 9.91256303526217e-3, m1 = 2147483648.0;
    var q = vn / Math.exp(-0.5 * dn * dn);
    kn[0] = Math.floor((dn / q) * m1);
    kn[1] = 0;
    wn[0] = q / m1;
    wn[127] = dn / m1;
    fn[0] = 1.0;
    fn[127] = Math.exp(-0.5 * dn * dn);
    for (var i = 126; i >= 1; i--) {
      dn = Math.sqrt(-2 * Math.log(vn / dn + Math.exp(-0.5 * dn * dn)));
      kn[i + 1] = Math.floor((dn / tn) * m1);
      tn = dn;
      fn[i] = Math.exp(-0.5 * dn * dn);
      wn[i] = dn / m1;
    }
    return {kn: kn, wn: wn, fn: fn, r: 3.442619855899};
  })();

  function normals(seed) {
    var a = seed | 0, kn = ZIG.kn, wn = ZIG.wn, fn = ZIG.fn;
    function next() {  // mulberry32: a signed 32-bit integer
      a = (a + 0x6d2b79f5) | 0;
      var t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return t ^ (t >>> 14);
    }
    function uniform() { return ((next() >>> 0) + 0.5) / 4294967296; }  // in (0, 1)
    function tail(hz, iz) {
      for (;;) {
        var x = hz * wn[iz];
        if (iz === 0) {  // the base layer's tail beyond r
          var y;
          do { x = -Math.log(uniform()) / ZIG.r; y = -Math.log(uniform()); } while (y + y < x * x);
          return hz > 0 ? ZIG.r + x : -ZIG.r - x;
        }
        if (fn[iz] + uniform() * (fn[iz - 1] - fn[iz]) < Math.exp(-0.5 * x * x)) return x;
        hz = next();
        iz = (next() >>> 0) & 127;  // the layer from a draw of its own
        if (Math.abs(hz) < kn[iz]) return hz * wn[iz];
      }
    }
    return function () {
      var hz = next(), iz = hz & 127;
      if (Math.abs(hz) < kn[iz]) return hz * wn[iz];
      return tail(hz, iz);
    };
  }

  // --- small numerics ----------------------------------------------------------------------------
  function softmax(scores) {  // -Infinity (a blocked pair) gets exactly 0
    var top = -Infinity, i, out = new Array(scores.length), sum = 0;
    for (i = 0; i < scores.length; i++) if (scores[i] > top) top = scores[i];
    for (i = 0; i < scores.length; i++) {
      out[i] = scores[i] === -Infinity ? 0 : Math.exp(scores[i] - top);
      sum += out[i];
    }
    for (i = 0; i < out.length; i++) out[i] /= sum;
    return out;
  }

  function histogram(values, lo, hi, bins) {
    // numpy's histogram(clip(values, lo, hi), bins, (lo, hi), density=True): bin centres, densities
    var step = (hi - lo) / bins, edges = new Array(bins + 1), counts = new Array(bins), i;
    for (i = 0; i <= bins; i++) edges[i] = lo + i * step;
    edges[bins] = hi;
    for (i = 0; i < bins; i++) counts[i] = 0;
    for (i = 0; i < values.length; i++) {
      var v = Math.min(Math.max(values[i], lo), hi);
      var b = Math.min(Math.max(Math.floor((v - lo) / step), 0), bins - 1);
      if (v < edges[b]) b -= 1;
      else if (b < bins - 1 && v >= edges[b + 1]) b += 1;
      counts[b] += 1;
    }
    var x = new Array(bins), y = new Array(bins);
    for (i = 0; i < bins; i++) {
      x[i] = (edges[i] + edges[i + 1]) / 2;
      y[i] = counts[i] / (values.length * (edges[i + 1] - edges[i]));
    }
    return {x: x, y: y, counts: counts};
  }

  function variance(values) {
    var mean = 0, i, s = 0;
    for (i = 0; i < values.length; i++) mean += values[i];
    mean /= values.length;
    for (i = 0; i < values.length; i++) s += (values[i] - mean) * (values[i] - mean);
    return s / values.length;
  }

  function largest(values) { return values.reduce(function (a, b) { return Math.max(a, b); }); }

  function round4(v) { return Math.round(v * 1e4) / 1e4; }

  // A string-table template's {name} and {name:.Nf} fields filled (Python's str.format for the
  // book's titles: integers as they are, .Nf to N decimals).
  function fill(template, values) {
    return template.replace(/\{(\w+)(?::\.(\d+)f)?\}/g, function (all, name, digits) {
      if (!(name in values)) throw new Error("no value for {" + name + "} in " + template);
      var v = values[name];
      return digits === undefined ? String(v) : Number(v).toFixed(Number(digits));
    });
  }

  function range(n) { var out = new Array(n); for (var i = 0; i < n; i++) out[i] = i; return out; }

  // --- the explorers: spec + control values -> what to redraw --------------------------------
  var EXPLORERS = {};

  // Chapter 2: n pairs of random q, k in R^d_k; histograms of q·k and q·k / √d_k.
  EXPLORERS.dk = function (spec, v) {
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
  };

  // Chapter 2: one query against n_keys random keys; its softmax row, unscaled and ÷√d_k.
  EXPLORERS.softmax_row = function (spec, v) {
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
  };

  // Chapter 4: the takeout order's first `length` tokens padded with `padding` positions under a
  // mask kind: which pairs may attend, and the weights of the seeded one-head layer (its
  // projected q and k of every position come in the spec).
  var SUBSCRIPTS = "₀₁₂₃₄₅₆₇₈₉";

  function uniqueLabels(tokens) {  // book.toy.orders_example.labels(short=True)
    var seen = {}, out = [];
    tokens.forEach(function (t) {
      seen[t] = (seen[t] || 0) + 1;
      var count = tokens.filter(function (u) { return u === t; }).length;
      out.push(count === 1 ? t : t + String(seen[t]).split("").map(function (c) {
        return SUBSCRIPTS[Number(c)];
      }).join(""));
    });
    return out;
  }

  function shortValue(text) { return text.replace(/(^|[^\d.])0(?=\.\d)/g, "$1"); }

  EXPLORERS.mask = function (spec, v) {
    var kind = spec.kinds[v.kind], length = v.length, n = v.length + v.padding;
    if (!kind) throw new Error("unknown mask kind " + v.kind);
    var tokens = spec.tokens.slice(0, length);
    for (var p = 0; p < v.padding; p++) tokens.push(spec.pad);
    var labels = uniqueLabels(tokens), root = Math.sqrt(spec.q[0].length);
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
      data: {x: [labels, labels], y: [labels, labels],
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
  };

  // Chapter 9: a sliding window of half-width w over n tokens: what may attend, what the banded
  // version computes anyway, and the score entries of both versions against n.
  function bandedEntries(n, w) {  // book.ideas.longctx.banded_score_entries
    var block = Math.min(Math.max(w, 16), n);
    return Math.ceil(n / block) * block * (block + 2 * w);
  }

  EXPLORERS.window = function (spec, v) {
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
  };

  // Chapter 8: the trained toy encoder (book/toy/export.py) on the order the reader types: the
  // tokenizer, embeddings and positions, each block's attention and feed-forward, the
  // classifier; in float64 over the checkpoint's float32 weights (torch computes in float32:
  // the maps agree to about 1e-6, tests/test_browser_order.py).
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

  function has(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }

  // book.toy.orders.tokenize: greedy longest match, whitespace skipped, ASCII , . ; read as ， 。
  function tokenize(lang, text) {
    var tokens = [], i = 0, space = /\s/;
    function startsWord(j) {
      return Object.keys(lang.words).some(function (w) { return text.substr(j, w.length) === w; });
    }
    while (i < text.length) {
      var ch = text[i], found = null;
      if (space.test(ch)) { i += 1; continue; }
      if (has(lang.ascii, ch)) { tokens.push(lang.ascii[ch]); i += 1; continue; }
      for (var size = Math.min(lang.longest, text.length - i); size > 0 && !found; size--) {
        if (has(lang.words, text.substr(i, size))) found = text.substr(i, size);
      }
      if (!found) {
        var j = i + 1;
        while (j < text.length && !space.test(text[j]) && !startsWord(j)) j += 1;
        return {unknown: text.slice(i, j)};
      }
      tokens.push(found);
      i += found.length;
    }
    return {tokens: tokens};
  }

  // book.toy.orders.label: the labels by the rules of the language, null where they call the
  // order ambiguous (two modifiers, quantities or dishes in one clause)
  function ruleLabels(lang, tokens) {
    var labels = tokens.map(function () { return lang.none; }), start = 0, i;
    var ends = [];
    tokens.forEach(function (tok, k) { if (lang.clause_end.indexOf(tok) >= 0) ends.push(k + 1); });
    if (!ends.length || ends[ends.length - 1] < tokens.length) ends.push(tokens.length);
    for (var e = 0; e < ends.length; e++) {
      var part = tokens.slice(start, ends[e]), of = function (cat) {
        return part.filter(function (w) { return lang.words[w][1] === cat; });
      };
      var mods = of("modifier"), qtys = of("quantity"), dishes = of("dish");
      if (mods.length > 1 || qtys.length > 1 || dishes.length > 1) return null;
      var ingredient = mods.length ? lang.words[mods[0]][2] : "normal";
      var dish = "count_" + (qtys.length ? lang.words[qtys[0]][2] : 1);
      for (i = start; i < ends[e]; i++) {
        var cat = lang.words[tokens[i]][1];
        if (cat === "ingredient") labels[i] = ingredient;
        else if (cat === "dish") labels[i] = dish;
      }
      start = ends[e];
    }
    return labels;
  }

  // book.toy.probe.label_argmax: an ingredient takes the best ingredient label, a dish the best
  // count, every other token none
  function predictions(lang, tokens, logits) {
    return tokens.map(function (tok, i) {
      var cat = lang.words[tok][1], lo, hi, best;
      if (cat === "ingredient") { lo = 0; hi = lang.n_ingredient; }
      else if (cat === "dish") { lo = lang.n_ingredient; hi = lang.labels.length; }
      else return lang.none;
      best = lo;
      for (var j = lo + 1; j < hi; j++) if (logits[i][j] > logits[i][best]) best = j;
      return lang.labels[best];
    });
  }

  // book.toy.orders_example.labels: repeated tokens numbered ₁ ₂ …; the queries' rows carry
  // their gloss in English
  function axisLabels(lang, tokens, gloss) {
    return uniqueLabels(tokens).map(function (name, i) {
      var g = lang.words[tokens[i]][0];
      return !gloss || g === "" || g === tokens[i] || g === "," ? name : name + " (" + g + ")";
    });
  }

  // East Asian Width W or F (book.kit.text.is_wide): two columns
  var WIDE = /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/;

  function columns(text) {
    var n = 0;
    for (var i = 0; i < text.length; i++) n += WIDE.test(text[i]) ? 2 : 1;
    return n;
  }

  // `units` (words, or marks "香菜 → omit ✓") in lines of at most `width` columns, a space
  // between two units and a unit never cut, joined by <br>
  function wrapUnits(units, width) {
    var lines = [], line = "";
    units.forEach(function (unit) {
      if (line && columns(line + " " + unit) > width) { lines.push(line); line = unit; }
      else line = line ? line + " " + unit : unit;
    });
    lines.push(line);
    return lines.join("<br>");
  }

  // the order's tokens as units of a line: a closing mark (，。、) stays with the word before it
  // (避头尾: no line starts with one)
  function tokenUnits(tokens) {
    var units = [];
    tokens.forEach(function (tok) {
      if (units.length && "，。、".indexOf(tok) >= 0) units[units.length - 1] += "\u00a0" + tok;
      else units.push(tok);
    });
    return units;
  }

  // The keys' labels as book.face.plotting.level_cjk_ticks sets the first state's: level where
  // the widest fits its cell (the plot's width as drawn last), else upright, every step-th key
  // once upright labels would come closer than spec.key_px.
  function keyTicks(labels, gd, spec) {
    var width = gd && gd._fullLayout && gd._fullLayout._size ? gd._fullLayout._size.w : Infinity;
    var widest = Math.max.apply(null, labels.map(columns)) * spec.key_font / 2;
    var level = {"xaxis.tickangle": 0, "xaxis.tickmode": "auto", "xaxis.tickvals": null,
                 "xaxis.ticktext": null};
    if (widest <= width / labels.length - 2) return level;
    var step = Math.max(1, Math.ceil(labels.length * spec.key_px / width));
    var shown = labels.filter(function (_, i) { return i % step === 0; });
    return {"xaxis.tickangle": -90, "xaxis.tickmode": "array", "xaxis.tickvals": shown,
            "xaxis.ticktext": shown};
  }

  // The typed order read, run through the model and captioned as the live view captions it
  // (both of chapter 8's views): {refused: what the page says instead} where it cannot draw it
  function readOrder(spec, typed) {
    var lang = spec.language, msg = spec.messages, text = String(typed);
    function refuse(kind, status) {
      return {refused: {keep: true, status: status, exposed: {error: kind}}};
    }
    if (!text.trim()) return refuse("empty", msg.empty);
    var read = tokenize(lang, text);
    if (read.unknown !== undefined) {
      return refuse("unknown", fill(msg.unknown, {word: read.unknown}));
    }
    var tokens = read.tokens, model = pageModel(spec), n = tokens.length;
    if (n > model.config.max_len) {
      return refuse("long", fill(msg.long, {n: n, max_len: model.config.max_len}));
    }
    if (n > spec.max_words) return refuse("page_long", fill(msg.page_long, {n: n}));
    var out = encoder(model, tokens.map(function (w) { return lang.ids[w]; }));
    var predicted = predictions(lang, tokens, out.logits), rules = ruleLabels(lang, tokens);
    function name(label) { return label === lang.none ? label : spec.label_names[label]; }
    var marks = [];
    tokens.forEach(function (tok, i) {
      if (predicted[i] === lang.none) return;
      var ok = rules === null ? "" : predicted[i] === rules[i] ? " ✓"
        : " ✗ (" + fill(msg.should_be, {label: name(rules[i])}) + ")";
      marks.push(tok + " → " + name(predicted[i]) + ok);
    });
    // the order (in English its word-by-word gloss) and the model's labels, one mark a unit
    var said = spec.zh ? tokenUnits(tokens)
      : tokens.map(function (w) { return lang.words[w][0]; }).join(" | ").split(" ");
    var units = marks.map(function (mark, i) {
      var unit = mark.replace(/ /g, "\u00a0").replace("\u00a0(", " (");  // "(should be …)" may wrap
      return unit + (i < marks.length - 1 ? (spec.zh ? "，" : ",") : "");
    });
    var head0 = fill(msg.caption_model, {marks: "\u0000"}).split("\u0000");
    if (units.length) {
      units[0] = head0[0] + units[0];
      units[units.length - 1] += head0[1];
    } else units = [head0.join("")];
    var markLine = wrapUnits(units.join(" ").split(" "), spec.caption_width);
    var italic = WIDE.test(markLine) ? markLine : "<i>" + markLine + "</i>";  // plotting.italic
    var caption = wrapUnits(said, spec.caption_width) + "<br><span>" + italic + "</span>";
    return {tokens: tokens, n: n, out: out, predicted: predicted, rules: rules,
            caption: caption, lines: caption.split("<br>").length,
            exposed: {tokens: tokens, maps: out.maps, logits: out.logits,
                      predictions: predicted, rules: rules, caption: caption}};
  }

  function rounded3(map) {  // book.kit.numeric.rounded(map, 3), as the live views round
    return map.map(function (r) { return r.map(function (w) { return Math.round(w * 1e3) / 1e3; }); });
  }

  // Chapter 8's head view: one head of one layer (the menus) for the typed order
  EXPLORERS.order = function (spec, v, gd) {
    var r = readOrder(spec, v.text);
    if (r.refused) return r.refused;
    var lang = spec.language, msg = spec.messages, n = r.n, tokens = r.tokens;
    var layer = Number(v.layer), head = Number(v.head), cols = axisLabels(lang, tokens, false);
    // the queries' glosses (English) up to spec.gloss_up_to words: a longer order's map takes
    // the rows' room (cells of 12 px at the desktop width)
    var rows = axisLabels(lang, tokens, !spec.zh && n <= spec.gloss_up_to);
    var top = spec.top + spec.line_px * r.lines;
    var layout = {"annotations[0].text": r.caption,
                  "title.text": fill(msg.head_label, {layer: layer, head: head}),
                  "xaxis.categoryarray": cols, "yaxis.categoryarray": rows,
                  "xaxis.range": [-0.5, n - 0.5], "yaxis.range": [n - 0.5, -0.5],
                  "margin.t": top, height: Math.max(spec.height, top + spec.below + spec.row_px * n)};
    var ticks = keyTicks(cols, gd, spec);
    Object.keys(ticks).forEach(function (k) { layout[k] = ticks[k]; });
    return {
      traces: [0], data: {z: [rounded3(r.out.maps[layer][head])], x: [cols], y: [rows]},
      layout: layout,
      status: fill(msg.rows_cols, {head: fill(msg.head_label, {layer: layer, head: head})}),
      exposed: r.exposed};
  };

  // At most `count` of `labels`: every n-th, from the first (book.face.views.model_view's
  // key_labels)
  function everyNth(labels, count) {
    var step = Math.max(1, Math.ceil(labels.length / count));
    return labels.filter(function (_, i) { return i % step === 0; });
  }

  // Chapter 8's model view: every head of every layer for the typed order, on the figure of
  // book.face.views.model_view (one trace a layer and head; its slider still picks the layer
  // shown, its menu brings back the orders drawn in the build). The caption grows upwards: a
  // longer one takes a taller top margin, the panels keep their size.
  EXPLORERS.order_model = function (spec, v, gd) {
    var r = readOrder(spec, v.text);
    if (r.refused) return r.refused;
    var mv = spec.model_view, keys = axisLabels(spec.language, r.tokens, false), n = r.n;
    var z = [], x = [], traces = [];
    r.out.maps.forEach(function (layerMaps) {
      layerMaps.forEach(function (map) {
        z.push(rounded3(map));
        x.push(keys);
        traces.push(traces.length);
      });
    });
    // the panels as tall as their rows need (mv.cell_px each: room for every row's label),
    // never shorter than drawn first
    // (the plot's height and the room under it for the slider and menu, as plotly laid them
    // out); the caption, growing upwards from a fixed share of that height above them
    var size = gd && gd._fullLayout && gd._fullLayout._size;
    if (!spec._plot && size) spec._plot = {h: size.h, below: size.b};
    var first = spec._plot || {h: mv.plot, below: mv.bottom};
    var plot = Math.max(first.h, Math.ceil(n * mv.cell_px / mv.panel_share));
    var above = Math.round(plot * mv.caption_y) + mv.title_px;
    var top = Math.max(mv.top, above + spec.line_px * r.lines);
    // every row labelled (a row has mv.cell_px), at most mv.key_labels of the keys
    var columns = everyNth(keys, mv.key_labels);
    // a new list of annotations: the figure's list may be a menu button's own (plotly keeps
    // the object it was given), and "annotations[i].text" would rewrite that button's caption
    var notes = JSON.parse(JSON.stringify(gd && gd.layout.annotations || []));
    if (notes[mv.caption]) notes[mv.caption].text = r.caption;
    var layout = {"margin.t": top, height: top + plot + first.below, annotations: notes};
    for (var h = 0; h < mv.n_heads; h++) {
      var axis = h ? String(h + 1) : "";
      layout["xaxis" + axis + ".tickvals"] = columns;
    }
    return {traces: traces, data: {z: z, x: x, y: x}, layout: layout,
            status: spec.messages.model_typed, exposed: r.exposed};
  };

  // Chapter 6: every head's map of one layer of the chosen model (the head-count sweep's, one
  // model a head count) for the typed order, on the grid of book.chapters.ch06_heads: the
  // panels laid out for the head count as there (spec.grids), the queries glossed where one
  // head takes the whole width, the keys labelled while 14 px apart.
  function entropy(p) {  // nats, 0 log 0 = 0
    var h = 0;
    for (var i = 0; i < p.length; i++) if (p[i] > 0) h -= p[i] * Math.log(p[i]);
    return h;
  }

  function jsDivergence(maps) {  // book.studies.heads.pairwise(maps, "js"): mean over head pairs
    var heads = maps.length, n = maps[0].length, total = 0, pairs = 0;
    for (var a = 0; a < heads; a++) {
      for (var b = 0; b < heads; b++) {
        if (a === b) continue;
        var s = 0;
        for (var i = 0; i < n; i++) {
          var mix = maps[a][i].map(function (w, j) { return (w + maps[b][i][j]) / 2; });
          s += entropy(mix) - (entropy(maps[a][i]) + entropy(maps[b][i])) / 2;
        }
        total += s / n;
        pairs += 1;
      }
    }
    return total / pairs;
  }

  // the order as typed (its tokens, no spaces) in at most `width` columns: a longer one ends
  // in "…" (the axes name every token)
  function shortOrder(tokens, width) {
    var text = tokens.join("");
    if (columns(text) <= width) return text;
    while (columns(text) > width - 1) text = text.slice(0, -1);
    return text + "…";
  }

  EXPLORERS.head_maps = function (spec, v, gd) {
    var lang = spec.language, msg = spec.messages, key = String(v.n_heads);
    var layer = Number(v.layer), text = String(v.order);
    function refuse(kind, status) { return {keep: true, status: status, exposed: {error: kind}}; }
    if (!spec.models[key]) throw new Error("head_maps: no model of " + key + " heads");
    if (!text.trim()) return refuse("empty", msg.empty);
    var read = tokenize(lang, text);
    if (read.unknown !== undefined) return refuse("unknown", fill(msg.unknown, {word: read.unknown}));
    var tokens = read.tokens, n = tokens.length;
    if (n > spec.max_words[key]) {
      return refuse("long", fill(msg.long, {heads: spec.heads[key], max_words: spec.max_words[key],
                                            n: n}));
    }
    spec._models = spec._models || {};
    if (!spec._models[key]) spec._models[key] = loadModel(spec.models[key]);
    var model = spec._models[key], heads = model.config.n_heads;
    var out = encoder(model, tokens.map(function (w) { return lang.ids[w]; }));
    var maps = out.maps[layer], labels = axisLabels(lang, tokens, false);
    var glossed = axisLabels(lang, tokens, !spec.zh), cols = spec.columns[key];
    var rows = cols === 1 ? glossed : labels, data = {z: [], x: [], y: [], customdata: []};
    for (var h = 0; h < spec.panels; h++) {
      var used = h < heads;
      data.z.push(used ? rounded3(maps[h]) : []);
      data.x.push(used ? labels : []);
      data.y.push(used ? rows : []);
      data.customdata.push(used ? rows.map(function () { return glossed; }) : []);
    }
    var js = heads > 1 ? jsDivergence(maps) : null, grid = spec.grids[key], layout = {};
    Object.keys(grid).forEach(function (k) { layout[k] = grid[k]; });
    layout["title.text"] = fill(msg.title, {heads: spec.heads[key], layer: layer,
                                            js: js === null ? "" : fill(msg.js, {js: js}),
                                            text: shortOrder(tokens, spec.title_columns)});
    // the keys' labels upright (the first state's may be level or stacked, written out for
    // its own order by book.face.plotting.level_cjk_ticks) and, once the grid is drawn (the
    // query labels' width decides the panels'), every one while spec.key_px apart, else every
    // n-th
    for (h = 0; h < spec.panels; h++) {
      var x = "xaxis" + (h ? String(h + 1) : "");
      layout[x + ".tickangle"] = -90;
      layout[x + ".ticktext"] = layout[x + ".tickvals"] = layout[x + ".tickmode"] = null;
    }
    function settle(drawn) {
      var fl = drawn._fullLayout, more = {};
      for (var k = 0; k < heads; k++) {
        var axis = "xaxis" + (k ? String(k + 1) : ""), length = fl[axis] ? fl[axis]._length : 0;
        var step = length ? Math.max(1, Math.ceil(n * spec.key_px / length)) : 1;
        var now = drawn.layout[axis] && drawn.layout[axis].tickvals;
        var want = step > 1 ? labels.filter(function (_, i) { return i % step === 0; }) : null;
        if (JSON.stringify(now || null) !== JSON.stringify(want)) {
          more[axis + ".tickmode"] = want ? "array" : null;
          more[axis + ".tickvals"] = want;
        }
      }
      return Object.keys(more).length ? more : null;
    }
    return {traces: range(spec.panels), data: data, layout: layout, status: "", settle: settle,
            exposed: {tokens: tokens, maps: out.maps, layer_maps: maps, js: js,
                      labels: labels, glossed: glossed}};
  };

  // --- the page: controls -> a redraw ---------------------------------------------------------
  function drawn(gd) {  // book-page.js draws the figures one task each: wait for this one
    return new Promise(function (resolve) {
      (function poll() {
        if (gd._fullLayout && gd.querySelector(".main-svg")) resolve();
        else setTimeout(poll, 30);
      })();
    });
  }

  function setUp(root) {
    var spec = JSON.parse(root.querySelector("script.book-inpage-spec").textContent);
    var gd = root.querySelector(".plotly-graph-div");
    var status = root.querySelector(".book-inpage-status");
    var explorer = EXPLORERS[root.getAttribute("data-explorer")];
    var form = root.querySelector("form.book-inpage-controls");
    if (!explorer || !gd || !form) throw new Error("book-inpage: an incomplete cell");
    var state = {chain: drawn(gd), queued: false, drawn: 0, last: null};

    function values() {
      var out = {};
      form.querySelectorAll("select, input[type=range], input[type=text]").forEach(function (c) {
        out[c.name] = c.tagName === "SELECT" || c.type === "text" ? c.value : Number(c.value);
      });
      return out;
    }

    function draw() {
      var v = values(), t0 = performance.now(), out = explorer(spec, v, gd);
      if (out.keep) {  // input the explorer cannot draw: say why, keep the last good figure
        status.textContent = out.status;
        state.drawn += 1;
        state.last = {values: v, data: out.exposed, ms: performance.now() - t0};
        return Promise.resolve();
      }
      // the page sized the figure's container to its first height: a taller state takes more
      if (out.layout.height) gd.style.height = out.layout.height + "px";
      return window.Plotly.update(gd, out.data, out.layout, out.traces).then(function () {
        // what depends on the drawn layout (an axis' length) follows in one more relayout
        var more = out.settle ? out.settle(gd) : null;
        return more ? window.Plotly.relayout(gd, more) : null;
      }).then(function () {
        status.textContent = out.status || "";
        state.drawn += 1;
        state.last = {values: v, data: out.exposed, ms: performance.now() - t0};
      });
    }

    function schedule() {  // many input events, one redraw of the latest values
      if (state.queued) return;
      state.queued = true;
      state.chain = state.chain.then(function () {
        state.queued = false;
        return draw();
      }).then(null, function (error) {  // said on the console; the next change draws again
        console.error("book-inpage (" + root.getAttribute("data-explorer") + "):", error);
      });
    }

    form.querySelectorAll("input[type=range]").forEach(function (slider) {
      var number = form.querySelector('input[type=number][name="' + slider.name + '"]');
      slider.addEventListener("input", function () { number.value = slider.value; schedule(); });
      number.addEventListener("input", function () {
        var x = Number(number.value);
        if (number.value === "" || !Number.isInteger(x) || x < Number(slider.min)
            || x > Number(slider.max)) return;  // half typed: wait for a whole value in range
        slider.value = String(x);
        schedule();
      });
      number.addEventListener("change", function () { number.value = slider.value; });
    });
    form.querySelectorAll("select").forEach(function (menu) {
      menu.addEventListener("change", schedule);
    });
    form.querySelectorAll("input[type=text]").forEach(function (box) {
      box.addEventListener("input", schedule);
    });
    // a control of the figure's own (a menu button, a slider step) may set a new height: the
    // box the page sized to the first follows it
    state.chain = state.chain.then(function () {
      var fit = function () {
        if (gd.layout.height && gd.style.height !== gd.layout.height + "px") {
          gd.style.height = gd.layout.height + "px";
        }
      };
      gd.on("plotly_update", fit);
      gd.on("plotly_relayout", fit);
    });
    root.bookInpage = {
      compute: function (v) { return explorer(spec, v, gd); },
      values: values,
      last: function () { return state.last; },
      drawn: function () { return state.drawn; },
      settled: function () { return state.chain.then(function () { return state.drawn; }); }
    };
    if (spec.redraw_at_load) schedule();
  }

  function setUpAll() {
    document.querySelectorAll(".book-inpage").forEach(setUp);
  }

  window.bookInpage = {explorers: EXPLORERS, fill: fill, seedFrom: seedFrom, normals: normals};
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpAll);
  else setUpAll();
})();
