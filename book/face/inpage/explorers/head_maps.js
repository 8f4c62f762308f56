// Chapter 6's head maps: every head's map of one layer of the chosen model for a typed order.
var ns = window.bookInpage;
var axisLabels = ns.axisLabels, encoder = ns.encoder, fill = ns.fill, loadModel = ns.loadModel;
var range = ns.range, rounded3 = ns.rounded3, shortOrder = ns.shortOrder, tokenize = ns.tokenize;

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

// The head-count sweep's models (one a head count) on the grid of book.chapters.ch06_heads: the
// panels laid out for the head count as there (spec.grids), the queries glossed where one
// head takes the whole width, the keys labelled while spec.key_px apart.
ns.register("head_maps", function (spec, v, gd) {
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
    // the English hover names each cell's query and key with their glosses
    // (book.toy.orders_example.hover_glosses); the Chinese reads the tokens
    data.customdata.push(used && !spec.zh ? glossed.map(function (q) {
      return glossed.map(function (k) { return [q, k]; });
    }) : null);
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
});
