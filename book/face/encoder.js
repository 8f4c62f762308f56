/* The trained takeout-order encoder, run in the page (book/face/typed.py): the reader types an
 * order, this file tokenizes it exactly as book.toy.orders.tokenize does, runs the model's
 * forward pass (book.toy.model.TinyEncoder: embeddings + positions, each block's LayerNorm,
 * multi-head self-attention and feed-forward, the classifier) on the weights the build
 * exported (window.bookModels[name], a script beside this one: no fetch, so it works from
 * file://), and redraws the page's head view and model view from the result.
 *
 * window.bookEncoder.run(name, text) -> {tokens, maps[layer][head][query][key], labels, ...}
 * throws {kind: "empty" | "unknown" | "long", ...} for text the model cannot take.
 * Every sum is taken in double precision over the float32 weights.
 */
(function () {
  "use strict";
  if (window.bookEncoder) return;
  window.bookModels = window.bookModels || {};

  // Python's str.isspace, and book.toy.orders._ASCII
  var SPACE = /^[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/;
  var ASCII = {",": "\uff0c", ".": "\u3002", ";": "\uff0c", "\uff1b": "\uff0c"};
  var CLAUSE_END = ["\uff0c", "\u3002"];
  var SUBSCRIPTS = "\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089";

  function floats(b64) {   // little-endian float32, base64
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }

  function model(name) {
    var m = window.bookModels[name];
    if (!m) throw new Error("no exported model " + name + " on this page");
    if (!m.w) {
      m.w = {};
      Object.keys(m.weights).forEach(function (k) {
        m.w[k] = {shape: m.weights[k].shape, data: floats(m.weights[k].data)};
      });
      m.stoi = {};
      m.itos.forEach(function (t, i) { m.stoi[t] = i; });
      m.longest = 0;
      Object.keys(m.words).forEach(function (t) {
        m.longest = Math.max(m.longest, Array.from(t).length);
      });
    }
    return m;
  }

  function tokenize(m, text) {
    var chars = Array.from(String(text)), tokens = [], i = 0, n = chars.length;
    var isWordAt = function (j) {
      return Object.keys(m.words).some(function (t) {
        return chars.slice(j, j + Array.from(t).length).join("") === t;
      });
    };
    if (!chars.some(function (c) { return !SPACE.test(c); })) throw {kind: "empty"};
    while (i < n) {
      var ch = chars[i];
      if (SPACE.test(ch)) { i += 1; continue; }
      if (ASCII[ch]) { tokens.push(ASCII[ch]); i += 1; continue; }
      var size = Math.min(m.longest, n - i), found = null;
      for (; size > 0; size--) {
        var piece = chars.slice(i, i + size).join("");
        if (Object.prototype.hasOwnProperty.call(m.words, piece)) { found = piece; break; }
      }
      if (found === null) {
        var j = i + 1;
        while (j < n && !SPACE.test(chars[j]) && !isWordAt(j)) j += 1;
        throw {kind: "unknown", word: chars.slice(i, j).join(""), at: i, tokens: tokens};
      }
      tokens.push(found);
      i += size;
    }
    if (tokens.length > m.config.max_len) {
      throw {kind: "long", n: tokens.length, max_len: m.config.max_len};
    }
    return tokens;
  }

  // ---- the forward pass (book/toy/model.py, book/ideas/mha.py) --------------------------------

  function linear(x, n, p) {   // x (n, d_in) row-major; p.weight (d_out, d_in), p.bias (d_out)
    var W = p.weight.data, b = p.bias ? p.bias.data : null;
    var dOut = p.weight.shape[0], dIn = p.weight.shape[1], y = new Float64Array(n * dOut);
    for (var t = 0; t < n; t++) {
      for (var o = 0; o < dOut; o++) {
        var s = b ? b[o] : 0, row = o * dIn, at = t * dIn;
        for (var i = 0; i < dIn; i++) s += x[at + i] * W[row + i];
        y[t * dOut + o] = s;
      }
    }
    return y;
  }

  function layerNorm(x, n, d, p) {   // nn.LayerNorm: biased variance, eps 1e-5
    if (!p) return x;
    var y = new Float64Array(n * d), g = p.weight.data, b = p.bias.data;
    for (var t = 0; t < n; t++) {
      var mean = 0, v = 0, i;
      for (i = 0; i < d; i++) mean += x[t * d + i];
      mean /= d;
      for (i = 0; i < d; i++) { var c = x[t * d + i] - mean; v += c * c; }
      var inv = 1 / Math.sqrt(v / d + 1e-5);
      for (i = 0; i < d; i++) y[t * d + i] = (x[t * d + i] - mean) * inv * g[i] + b[i];
    }
    return y;
  }

  function attention(x, n, d, heads, p) {
    var q = linear(x, n, p.w_q), k = linear(x, n, p.w_k), v = linear(x, n, p.w_v);
    var dk = d / heads, scale = Math.sqrt(dk), merged = new Float64Array(n * d), maps = [];
    for (var h = 0; h < heads; h++) {
      var map = [];
      for (var i = 0; i < n; i++) {
        var row = new Float64Array(n), top = -Infinity, sum = 0, j, e;
        for (j = 0; j < n; j++) {
          var s = 0;
          for (e = 0; e < dk; e++) s += q[i * d + h * dk + e] * k[j * d + h * dk + e];
          row[j] = s / scale;
          if (row[j] > top) top = row[j];
        }
        for (j = 0; j < n; j++) { row[j] = Math.exp(row[j] - top); sum += row[j]; }
        for (j = 0; j < n; j++) row[j] /= sum;   // each row sums to 1
        for (e = 0; e < dk; e++) {
          var c = 0;
          for (j = 0; j < n; j++) c += row[j] * v[j * d + h * dk + e];
          merged[i * d + h * dk + e] = c;
        }
        map.push(Array.prototype.slice.call(row));
      }
      maps.push(map);
    }
    return {out: linear(merged, n, p.w_o), maps: maps};
  }

  function add(a, b) {
    var y = new Float64Array(a.length);
    for (var i = 0; i < a.length; i++) y[i] = a[i] + b[i];
    return y;
  }

  function feedForward(x, n, p) {   // Linear, ReLU, Linear
    var hidden = linear(x, n, p.ff0);
    for (var i = 0; i < hidden.length; i++) if (hidden[i] < 0) hidden[i] = 0;
    return linear(hidden, n, p.ff2);
  }

  function params(m, prefix) {
    var get = function (name) { return m.w[prefix + name]; };
    var lin = function (name) {
      return get(name + ".weight") ? {weight: get(name + ".weight"), bias: get(name + ".bias")}
        : null;
    };
    return {w_q: lin("attn.w_q"), w_k: lin("attn.w_k"), w_v: lin("attn.w_v"),
            w_o: lin("attn.w_o"), ff0: lin("ff.0"), ff2: lin("ff.2"),
            norm1: lin("norm1"), norm2: lin("norm2")};
  }

  function forward(m, tokens) {
    var c = m.config, d = c.d_model, n = tokens.length, x = new Float64Array(n * d);
    var emb = m.w["embed.weight"].data, pos = c.positions ? m.w["pos.weight"].data : null;
    tokens.forEach(function (tok, t) {
      var id = m.stoi[tok];
      for (var i = 0; i < d; i++) x[t * d + i] = emb[id * d + i] + (pos ? pos[t * d + i] : 0);
    });
    var maps = [];
    for (var layer = 0; layer < c.n_layers; layer++) {
      var p = params(m, "blocks." + layer + "."), a;
      if (c.norm === "post") {
        a = attention(x, n, d, c.n_heads, p);
        x = layerNorm(add(x, a.out), n, d, p.norm1);
        x = layerNorm(add(x, feedForward(x, n, p)), n, d, p.norm2);
      } else {   // "pre" (LayerNorm before each sub-layer) or "none"
        a = attention(layerNorm(x, n, d, p.norm1), n, d, c.n_heads, p);
        x = add(x, a.out);
        x = add(x, feedForward(layerNorm(x, n, d, p.norm2), n, p));
      }
      maps.push(a.maps);
    }
    var fn = m.w["final_norm.weight"] ? {weight: m.w["final_norm.weight"],
                                         bias: m.w["final_norm.bias"]} : null;
    var logits = linear(layerNorm(x, n, d, fn), n, {weight: m.w["head.weight"],
                                                    bias: m.w["head.bias"]});
    return {maps: maps, logits: logits};
  }

  // book.toy.probe.label_argmax: an ingredient takes the best ingredient label, a dish the
  // best count, every other token "-"
  function predict(m, tokens, logits) {
    var L = m.labels.length, nIng = m.ingredient_labels;
    return tokens.map(function (tok, t) {
      var cat = m.words[tok][1], lo = cat === "ingredient" ? 0 : nIng;
      var hi = cat === "ingredient" ? nIng : L;
      if (cat !== "ingredient" && cat !== "dish") return m.none;
      var best = lo;
      for (var j = lo; j < hi; j++) if (logits[t * L + j] > logits[t * L + best]) best = j;
      return m.labels[best];
    });
  }

  // book.toy.orders.label, or null where the rules call the order ambiguous
  function rules(m, tokens) {
    var out = tokens.map(function () { return m.none; }), start = 0;
    var ends = [];
    tokens.forEach(function (t, i) { if (CLAUSE_END.indexOf(t) >= 0) ends.push(i + 1); });
    if (!ends.length || ends[ends.length - 1] < tokens.length) ends.push(tokens.length);
    for (var e = 0; e < ends.length; e++) {
      var stop = ends[e], part = tokens.slice(start, stop);
      var of = function (kind) { return part.filter(function (t) { return m.words[t][1] === kind; }); };
      var mods = of("modifier"), qtys = of("quantity"), dishes = of("dish");
      if (mods.length > 1 || qtys.length > 1 || dishes.length > 1) return null;
      var ing = mods.length ? m.words[mods[0]][2] : "normal";
      var dish = "count_" + (qtys.length ? m.words[qtys[0]][2] : 1);
      for (var i = start; i < stop; i++) {
        var cat = m.words[tokens[i]][1];
        if (cat === "ingredient") out[i] = ing;
        else if (cat === "dish") out[i] = dish;
      }
      start = stop;
    }
    return out;
  }

  function run(name, text) {
    var m = model(name), tokens = tokenize(m, text), f = forward(m, tokens);
    return {tokens: tokens, maps: f.maps, labels: predict(m, tokens, f.logits),
            rules: rules(m, tokens), glosses: tokens.map(function (t) { return m.words[t][0]; }),
            categories: tokens.map(function (t) { return m.words[t][1]; })};
  }

  // ---- drawing (book.face.views' head view and model view, chapter 8's captions) ------------

  function isWide(ch) {   // book.face.plotting.is_wide: East Asian wide and fullwidth
    var c = ch.codePointAt(0);
    return (c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf) ||
      (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) ||
      (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) ||
      (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x20000 && c <= 0x3fffd);
  }

  function textWidth(s) {
    return Array.from(s).reduce(function (w, ch) { return w + (isWide(ch) ? 2 : 1); }, 0);
  }

  function wrapped(text, width) {   // ch08's _wrap: lines of at most width columns, at spaces
    var lines = [];
    text.split(/\s+/).filter(Boolean).forEach(function (word) {
      var last = lines.length - 1;
      if (lines.length && textWidth(lines[last]) + 1 + textWidth(word) <= width) {
        lines[last] += " " + word;
      } else {
        lines.push(word);
      }
    });
    return lines.join("<br>");
  }

  function escapeHtml(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (all, key) {
      return Object.prototype.hasOwnProperty.call(values, key) ? values[key] : all;
    });
  }

  function axisLabels(tokens, glosses, short, lang) {   // book.toy.orders_example.labels
    var seen = {};
    return tokens.map(function (tok, i) {
      seen[tok] = (seen[tok] || 0) + 1;
      var count = tokens.filter(function (t) { return t === tok; }).length;
      var name = count === 1 ? tok : tok + String(seen[tok]).split("").map(function (c) {
        return SUBSCRIPTS[+c];
      }).join("");
      var g = glosses[i], bare = short || lang === "zh" || g === "" || g === tok || g === ",";
      return bare ? name : name + " (" + g + ")";
    });
  }

  function marksLine(res, s) {   // attention_roles.order_view_data's marks, in one line
    var zh = s.lang === "zh", marks = [];
    var name = function (label) { return label === "-" ? label : s.label_names[label]; };
    res.tokens.forEach(function (tok, i) {
      var pred = res.labels[i];
      if (pred === "-") return;
      var rule = res.rules ? res.rules[i] : null;
      var ok = rule === null ? "" : pred === rule ? " \u2713"
        : " \u2717 (" + fill(s.should_be, {label: name(rule)}) + ")";
      marks.push(tok + " \u2192 " + name(pred) + ok);
    });
    return fill(s.caption_model, {marks: marks.join(zh ? "\uff0c " : ", ")});
  }

  function shortened(lines, keep) {   // the first keep lines, the last one ending in …
    if (lines.length <= keep) return lines;
    var out = lines.slice(0, keep), words = out[keep - 1].split(" ");
    if (words.length > 1) words.pop();
    out[keep - 1] = words.join(" ") + " \u2026";
    return out;
  }

  // ch08's _caption: the order (English: word-by-word glosses; Chinese: the tokens) and the
  // model's labels, wrapped. Over maxLines lines (the most the figure's own captions take, so
  // that it stays inside the room the figure keeps for it) both parts are cut with "…"; the
  // message under the box gives every label.
  function caption(res, s, maxLines) {
    var text = s.lang === "zh" ? res.tokens.join(" ") : res.glosses.join(" | ");
    var gloss = wrapped(text, s.width).split("<br>");
    var marks = wrapped(marksLine(res, s), s.width).split("<br>");
    if (maxLines && gloss.length + marks.length > maxLines) {
      var keepGloss = Math.max(1, Math.min(gloss.length, maxLines - marks.length));
      gloss = shortened(gloss, keepGloss);
      marks = shortened(marks, Math.max(1, maxLines - gloss.length));
    }
    return gloss.join("<br>") + '<br><span style="font-style:italic">' + marks.join("<br>") +
      "</span>";
  }

  function captionRoom(buttons) {   // lines of the tallest caption the menu's entries show
    var most = 0;
    buttons.forEach(function (b) {
      var notes = b.args && b.args[1] && b.args[1].annotations;
      if (notes && notes.length) {
        most = Math.max(most, notes[notes.length - 1].text.split("<br>").length);
      }
    });
    return most || null;
  }

  function copy(obj) { return JSON.parse(JSON.stringify(obj)); }

  function rounded(map, digits) {
    var f = Math.pow(10, digits);
    return map.map(function (row) {
      return row.map(function (w) { return Math.round(w * f) / f; });
    });
  }

  function stepLabels(gd) {
    var sl = gd.layout && gd.layout.sliders && gd.layout.sliders[0];
    return sl ? sl.steps.map(function (st) { return st.label; }) : [];
  }

  function menu(gd) {
    var um = gd.layout && gd.layout.updatemenus && gd.layout.updatemenus[0];
    return um && um.buttons ? um : null;
  }

  // The page's head view: one heatmap per order, slider steps "L0 H0" … over every head.
  function isHeadView(gd, c) {
    var labels = stepLabels(gd), um = menu(gd);
    return um && labels.length === c.n_layers * c.n_heads &&
      labels.every(function (l) { return /^L\d+ H\d+$/.test(l); }) &&
      gd.data.every(function (t) { return t.type === "heatmap"; });
  }

  // The page's model view (one trace per layer and head): slider steps over the layers, each
  // menu button restyles the z of all n_layers × n_heads heatmaps.
  function isModelView(gd, c) {
    var um = menu(gd), n = c.n_layers * c.n_heads;
    return um && stepLabels(gd).length === c.n_layers && gd.data.length === n &&
      um.buttons.every(function (b) { return b.args[0].z && b.args[0].z.length === n; });
  }

  function headView(gd, res, s) {
    var data = copy(gd.data), layout = copy(gd.layout), c = model(s.model).config;
    var um = layout.updatemenus[0], sl = layout.sliders[0];
    var cols = axisLabels(res.tokens, res.glosses, true, s.lang);
    var rows = axisLabels(res.tokens, res.glosses, false, s.lang);
    var at = gd._bookTyped;
    if (at === undefined) {   // a new trace, menu entry and z slot in every slider step
      at = data.length;
      data.push(copy(gd.data[0]));
      um.buttons.forEach(function (b) { b.args[0].visible.push(false); });
      um.buttons.push(copy(um.buttons[0]));
      sl.steps.forEach(function (st) { st.args[0].z.push([]); });
    }
    sl.steps.forEach(function (st, k) {
      st.args[0].z[at] = rounded(res.maps[Math.floor(k / c.n_heads)][k % c.n_heads], s.digits);
    });
    var active = sl.active || 0;
    data.forEach(function (t, i) { t.visible = i === at; });
    var trace = data[at];
    trace.x = cols; trace.y = rows; trace.z = sl.steps[active].args[0].z[at];
    var note = copy(layout.annotations[layout.annotations.length - 1]);
    note.text = caption(res, s, captionRoom(um.buttons.slice(0, at)));
    var axes = {"xaxis.categoryarray": cols, "xaxis.range": [-0.5, cols.length - 0.5],
                "yaxis.categoryarray": rows, "yaxis.range": [rows.length - 0.5, -0.5]};
    var button = um.buttons[at];
    button.label = s.menu;
    button.args = [{visible: data.map(function (t, i) { return i === at; })},
                   Object.assign({}, axes, {annotations: [note]})];
    um.active = at;
    layout.annotations = [note];
    layout.xaxis.categoryarray = cols; layout.xaxis.range = axes["xaxis.range"];
    layout.yaxis.categoryarray = rows; layout.yaxis.range = axes["yaxis.range"];
    return window.Plotly.react(gd, data, layout).then(function () { gd._bookTyped = at; });
  }

  function modelView(gd, res, s) {
    var data = copy(gd.data), layout = copy(gd.layout), c = model(s.model).config;
    var um = layout.updatemenus[0];
    var keys = axisLabels(res.tokens, res.glosses, true, s.lang);
    var at = gd._bookTyped;
    if (at === undefined) { at = um.buttons.length; um.buttons.push(copy(um.buttons[0])); }
    var z = [], xs = [], ys = [];
    for (var l = 0; l < c.n_layers; l++) {
      for (var h = 0; h < c.n_heads; h++) {
        z.push(rounded(res.maps[l][h], s.digits)); xs.push(keys); ys.push(keys);
      }
    }
    var notes = copy(layout.annotations);
    notes[notes.length - 1].text = caption(res, s, captionRoom(um.buttons.slice(0, at)));
    um.buttons[at].label = s.menu;
    um.buttons[at].args = [{z: z, x: xs, y: ys}, {annotations: notes}];
    um.active = at;
    data.forEach(function (t, i) { t.z = z[i]; t.x = keys; t.y = keys; });
    layout.annotations = notes;
    return window.Plotly.react(gd, data, layout).then(function () { gd._bookTyped = at; });
  }

  function message(err, s) {
    if (err.kind === "empty") return fill(s.empty, {});
    if (err.kind === "long") return fill(s.long, {n: err.n, max_len: err.max_len});
    if (err.kind === "unknown") {
      return fill(s.unknown, {word: err.word, at: err.at, words: s.vocabulary});
    }
    throw err;
  }

  function figures(s) {
    var c = model(s.model).config, out = [];
    Array.prototype.forEach.call(document.querySelectorAll(".js-plotly-plot"), function (gd) {
      if (s.views.indexOf("head") >= 0 && isHeadView(gd, c)) out.push([gd, headView]);
      else if (s.views.indexOf("model") >= 0 && isModelView(gd, c)) out.push([gd, modelView]);
    });
    return out;
  }

  // One typed order: compute, redraw every view, say what happened. Resolves to the result.
  function draw(box) {
    var s = JSON.parse(box.getAttribute("data-typed"));
    var input = box.querySelector("input"), out = box.querySelector(".book-typed-message");
    var start = performance.now(), res;
    try {
      res = run(s.model, input.value);
    } catch (err) {
      out.textContent = "\u26a0 " + message(err, s);
      out.className = "book-typed-message book-typed-error";
      out.style.color = "#b3261e";
      box.setAttribute("data-state", "error-" + err.kind);
      return Promise.resolve(null);
    }
    var views = figures(s);
    return Promise.all(views.map(function (v) { return v[1](v[0], res, s); })).then(function () {
      var ms = performance.now() - start;
      out.innerHTML = escapeHtml(fill(s.done, {n: res.tokens.length, views: views.length,
                                                ms: ms.toFixed(0)})) + "<br>" +
        escapeHtml(marksLine(res, s));
      out.className = "book-typed-message";
      out.style.color = "";
      box.setAttribute("data-state", "drawn");
      box.bookLast = {result: res, ms: ms, views: views.length};
      return res;
    });
  }

  window.bookEncoder = {run: run, tokenize: function (name, text) {
    return tokenize(model(name), text);
  }, draw: draw, caption: caption,
    marks: marksLine};

  if (typeof document === "undefined") return;   // node (the tests): the engine alone
  document.addEventListener("input", function (event) {
    var box = event.target && event.target.closest ? event.target.closest(".book-typed") : null;
    if (box && !event.isComposing) draw(box);
  });
  document.addEventListener("compositionend", function (event) {
    var box = event.target && event.target.closest ? event.target.closest(".book-typed") : null;
    if (box) draw(box);
  });
})();
