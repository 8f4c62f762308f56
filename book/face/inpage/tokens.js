// The order language: the tokenizer, the rules' labels, the model's labels, the axes' token labels.
var ns = window.bookInpage = window.bookInpage || {};
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

ns.uniqueLabels = uniqueLabels;
ns.tokenize = tokenize;
ns.ruleLabels = ruleLabels;
ns.predictions = predictions;
ns.axisLabels = axisLabels;
