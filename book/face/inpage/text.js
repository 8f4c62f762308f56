// Text widths in columns (book.kit.text.text_width's rule, its table from Python) and lines.
var ns = window.bookInpage = window.bookInpage || {};

// The code points book.kit.text.is_wide calls wide (East Asian Width W or F: two columns), as
// [first, last] ranges: the module the build generates from Python's own rule
// (book/site/scripts.py, wide_ranges_js), so the page and Python measure a text alike.
var RANGES = ns.WIDE_RANGES;
if (!RANGES) throw new Error("book-inpage: no WIDE_RANGES: assemble it with book.site.scripts");

function isWide(code) {  // a binary search of RANGES
  var lo = 0, hi = RANGES.length - 1;
  while (lo <= hi) {
    var mid = (lo + hi) >> 1;
    if (code < RANGES[mid][0]) hi = mid - 1;
    else if (code > RANGES[mid][1]) lo = mid + 1;
    else return true;
  }
  return false;
}

// book.kit.text.text_width: a wide character counts 2, any other 1 (by code point, as Python
// counts a str)
function columns(text) {
  var n = 0;
  for (var i = 0; i < text.length; i++) {
    var code = text.codePointAt(i);
    if (code > 0xffff) i += 1;
    n += isWide(code) ? 2 : 1;
  }
  return n;
}

function hasWide(text) {  // book.face.plotting's _has_wide (tags left in)
  for (var i = 0; i < text.length; i++) if (isWide(text.codePointAt(i))) return true;
  return false;
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

// the order as typed (its tokens, no spaces) in at most `width` columns: a longer one ends
// in "…" (the axes name every token)
function shortOrder(tokens, width) {
  var text = tokens.join("");
  if (columns(text) <= width) return text;
  while (columns(text) > width - 1) text = text.slice(0, -1);
  return text + "…";
}

ns.columns = columns;
ns.hasWide = hasWide;
ns.wrapUnits = wrapUnits;
ns.tokenUnits = tokenUnits;
ns.shortOrder = shortOrder;
