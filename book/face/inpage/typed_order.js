// A typed order read, run through the page's model and captioned (chapter 8's two views).
var ns = window.bookInpage = window.bookInpage || {};
var fill = ns.fill, tokenize = ns.tokenize, pageModel = ns.pageModel, encoder = ns.encoder;
var predictions = ns.predictions, ruleLabels = ns.ruleLabels, tokenUnits = ns.tokenUnits;
var wrapUnits = ns.wrapUnits, hasWide = ns.hasWide;

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
  var italic = hasWide(markLine) ? markLine : "<i>" + markLine + "</i>";  // plotting.italic
  var caption = wrapUnits(said, spec.caption_width) + "<br><span>" + italic + "</span>";
  return {tokens: tokens, n: n, out: out, predicted: predicted, rules: rules,
          caption: caption, lines: caption.split("<br>").length,
          exposed: {tokens: tokens, maps: out.maps, logits: out.logits,
                    predictions: predicted, rules: rules, caption: caption}};
}

ns.readOrder = readOrder;
