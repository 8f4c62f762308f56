// Small numerics: softmax, a histogram, variance, rounding, and the titles' {field} templates.
var ns = window.bookInpage = window.bookInpage || {};

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

// A map's weights to 3 decimals, as the live views round them (book.face.plotting.rounded(map,
// 3) in chapter 8, numpy.round(map, 3) in chapter 6): numpy rounds a tie half to even, Math.round
// half up, so a weight within rounding of a tie (0.8475) may come out 1e-3 apart
function rounded3(map) {
  return map.map(function (r) { return r.map(function (w) { return Math.round(w * 1e3) / 1e3; }); });
}

ns.softmax = softmax;
ns.histogram = histogram;
ns.variance = variance;
ns.largest = largest;
ns.round4 = round4;
ns.fill = fill;
ns.range = range;
ns.rounded3 = rounded3;
