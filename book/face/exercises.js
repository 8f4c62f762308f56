/* Value exercises in the book's page (book/face/checks.py: Answer, form_html). An exercise whose
 * answer is a value (a number, a shape, a small matrix or mask, a list of labels) has a form
 * under its cell; this script reads what the reader types as Python would read it (numbers,
 * True/False, 'strings', [lists], (tuples), inf) and walks the exercise's rules — the same rules
 * Python's check walks, shipped as JSON in the form with every verdict's words already in the
 * edition's language — and writes the verdict into the form's live region. Nothing is fetched:
 * it works from file://, offline, with no kernel. The book's _static/book-exercises.js, loaded
 * on the pages that hold such a form (book/site/sphinxext.py).
 */
(function () {
  "use strict";
  if (window.bookExercises) return;

  // ---- what the reader typed, as a Python literal ----------------------------------------
  // A node: {t: "num", v, int} | {t: "bool", v} | {t: "str", v} | {t: "list"|"tuple", items}.
  var UNREADABLE = {unreadable: true}, WRONG_KIND = {wrongKind: true};
  var NUMBER = /^(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?/;
  var NAME = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/;
  var INF = ["inf", "math.inf", "np.inf", "numpy.inf", "torch.inf"];
  var FLOAT_INF = /^float\(\s*(['"])([+-]?)inf(?:inity)?\1\s*\)/;

  function parse(text) {
    var s = String(text), i = 0;
    var space = function () { while (i < s.length && /\s/.test(s[i])) i++; };
    var fail = function () { throw UNREADABLE; };

    function items(close, node) {  // after "[" or "(x,": values up to `close`, commas between
      for (;;) {
        space();
        if (s[i] === close) { i++; return node; }
        node.items.push(value());
        space();
        if (s[i] === ",") { i++; continue; }
        if (s[i] === close) { i++; return node; }
        fail();
      }
    }

    function value() {
      space();
      var c = s[i], m;
      if (c === "-" || c === "+") {
        i++;
        space();
        if (s[i] === "-" || s[i] === "+") fail();  // --5: Python's literal_eval refuses it too
        var operand = value();
        if (operand.t !== "num") fail();
        return {t: "num", v: c === "-" ? -operand.v : operand.v, int: operand.int};
      }
      if (c === "[") { i++; return items("]", {t: "list", items: []}); }
      if (c === "(") {
        i++;
        space();
        if (s[i] === ")") { i++; return {t: "tuple", items: []}; }
        var first = value();
        space();
        if (s[i] === ")") { i++; return first; }  // (x) is x, as in Python
        if (s[i] !== ",") fail();
        i++;
        return items(")", {t: "tuple", items: [first]});
      }
      if (c === "'" || c === '"') {
        var out = "";
        for (i++; i < s.length && s[i] !== c; i++) {
          if (s[i] === "\\" && i + 1 < s.length) {
            i++;
            var digits = {x: 2, u: 4}[s[i]], code = digits ? s.substr(i + 1, digits) : "";
            if (code.length === digits && /^[0-9a-fA-F]+$/.test(code)) {  // \xHH, \uHHHH
              out += String.fromCharCode(parseInt(code, 16));
              i += digits;
            } else {
              out += {n: "\n", t: "\t", r: "\r"}[s[i]] || s[i];
            }
          } else {
            out += s[i];
          }
        }
        if (i >= s.length) fail();
        i++;
        return {t: "str", v: out};
      }
      if ((m = NUMBER.exec(s.slice(i)))) {
        var token = m[0];
        i += token.length;
        var isInt = !/[.eE]/.test(token);
        if (isInt && /^0+[1-9]/.test(token.replace(/_/g, ""))) fail();  // 08: Python refuses
        return {t: "num", v: Number(token.replace(/_/g, "")), int: isInt};
      }
      if ((m = FLOAT_INF.exec(s.slice(i)))) {
        i += m[0].length;
        return {t: "num", v: m[2] === "-" ? -Infinity : Infinity, int: false};
      }
      if ((m = NAME.exec(s.slice(i)))) {
        i += m[0].length;
        var name = m[0];
        if (name === "True" || name === "true") return {t: "bool", v: true};
        if (name === "False" || name === "false") return {t: "bool", v: false};
        if (INF.indexOf(name) >= 0) return {t: "num", v: Infinity, int: false};
      }
      return fail();
    }

    space();
    if (i >= s.length) fail();
    var first = value(), top = [first], comma = false;
    space();
    while (s[i] === ",") {  // 2, 8, 64 is a tuple, as in Python
      comma = true;
      i++;
      space();
      if (i >= s.length) break;
      top.push(value());
      space();
    }
    if (i < s.length) fail();
    return comma ? {t: "tuple", items: top} : first;
  }

  // ---- the value each kind reads: what Python's Answer.read gives for such a literal -------
  var isSeq = function (n) { return n.t === "list" || n.t === "tuple"; };
  var hasStr = function (n) { return n.t === "str" || (isSeq(n) && n.items.some(hasStr)); };

  function grid(node) {  // a rectangular nested list as {shape, leaves}; null when ragged
    if (!isSeq(node)) return {shape: [], leaves: [node]};
    var parts = node.items.map(grid);
    if (!parts.length) return {shape: [0], leaves: []};
    var inner = parts[0] && parts[0].shape;
    for (var k = 0; k < parts.length; k++) {
      if (!parts[k] || parts[k].shape.join() !== inner.join() ||
          parts[k].shape.length !== inner.length) return null;
    }
    return {shape: [parts.length].concat(inner),
            leaves: [].concat.apply([], parts.map(function (p) { return p.leaves; }))};
  }

  function numberOf(node) {  // book.face.checks.number() on an item; throws WRONG_KIND
    var wrapped = false;
    while (isSeq(node) && node.items.length === 1) { node = node.items[0]; wrapped = true; }
    if (node.t === "num") return node.v;
    if (node.t === "bool" && wrapped) return node.v ? 1 : 0;
    throw WRONG_KIND;
  }

  function array(node, finiteOnly) {
    var g = grid(node);
    if (!g) throw UNREADABLE;
    var floats = false, bools = true;
    var flat = g.leaves.map(function (leaf) {
      if (leaf.t === "bool") return leaf.v ? 1 : 0;
      bools = false;
      if (!leaf.int) floats = true;
      if (finiteOnly && !isFinite(leaf.v)) throw UNREADABLE;
      return leaf.v;
    });
    var dtype = !g.leaves.length || floats ? "float64" : bools ? "bool" : "int64";
    return {grid: true, shape: g.shape, flat: flat, dtype: dtype};
  }

  function read(kind, node) {
    if (kind === "number") {
      if (node.t !== "num") throw UNREADABLE;
      return node.v;
    }
    if (kind === "integer") {
      if (node.t === "num" && node.int) return node.v;
      throw WRONG_KIND;
    }
    if (kind === "labels") {
      if (!isSeq(node)) throw WRONG_KIND;
      return node.items.map(function (n) { return n.t === "str" ? n.v : null; });
    }
    if (hasStr(node)) throw UNREADABLE;
    if (kind === "array") {
      var a = array(node, true);
      a.dtype = "float64";
      return a;
    }
    if (kind === "mask") return array(node, false);
    if (!isSeq(node)) throw WRONG_KIND;
    var out = [], many = kind === "shape" ? node.items.length : Math.min(node.items.length, 3);
    for (var k = 0; k < many; k++) {  // item by item, as Python's int(v) / number(v) meet them
      var item = node.items[k];
      if (kind === "number_pair") {
        out.push(numberOf(item));
        continue;
      }
      if (isSeq(item)) throw WRONG_KIND;                   // int([..]): TypeError
      if (item.t === "bool") { out.push(item.v ? 1 : 0); continue; }
      if (!isFinite(item.v)) throw UNREADABLE;              // int(inf): OverflowError
      out.push(Math.trunc(item.v));
    }
    if (kind !== "shape" && node.items.length !== 2) throw WRONG_KIND;
    return out;
  }

  // ---- the rules' conditions (book.face.checks.Is) -----------------------------------------
  var isArray = function (v) { return v !== null && typeof v === "object" && v.grid === true; };
  var sameShape = function (a, b) { return a.length === b.length && a.join() === b.join(); };

  function gridOfJson(x) {  // a condition's operand (nested JSON lists) as {shape, flat}
    var shape = [], flat = [];
    for (var level = x; Array.isArray(level); level = level[0]) shape.push(level.length);
    (function walk(v) {
      if (Array.isArray(v)) v.forEach(walk);
      else flat.push(typeof v === "boolean" ? (v ? 1 : 0) : v);
    })(x);
    return {shape: shape, flat: flat};
  }

  function equal(v, x) {
    if (isArray(v)) {
      var g = gridOfJson(x);
      return sameShape(v.shape, g.shape) &&
             v.flat.every(function (a, k) { return a === g.flat[k]; });
    }
    if (Array.isArray(v)) {
      return Array.isArray(x) && v.length === x.length &&
             v.every(function (a, k) { return equal(a, x[k]); });
    }
    if (Array.isArray(x)) return false;
    return v === x;
  }

  var index = function (v, i) { return i < 0 ? v.length + i : i; };

  function holds(c, v) {
    switch (c.op) {
      case "eq": return equal(v, c.x);
      case "in": return c.xs.some(function (x) { return equal(v, x); });
      case "near": {
        var gap = Math.abs(v - c.x);
        return c.strict ? gap < c.tol : gap <= c.tol;
      }
      case "rel": return Math.abs(v - c.x) <= c.tol * Math.max(Math.abs(c.x), 1e-12);
      case "lt": return v < c.x;
      case "le": return v <= c.x;
      case "gt": return v > c.x;
      case "divides": return v !== 0 && c.n % v === 0;
      case "range": return c.lo <= v && v < c.hi;
      case "len": return v.length === c.n;
      case "at": {
        var i = index(v, c.i);
        return i >= 0 && i < v.length && holds(c.is, v[i]);
      }
      case "same": return equal(v[index(v, c.i)], v[index(v, c.j)]);
      case "contains": return v.some(function (a) { return equal(a, c.x); });
      case "shape": return sameShape(v.shape, c.dims);
      case "close": {
        var g = gridOfJson(c.x);
        return sameShape(v.shape, g.shape) && v.flat.every(function (a, k) {
          return Math.abs(a - g.flat[k]) <= c.atol + c.rtol * Math.abs(g.flat[k]);
        });
      }
      case "dtype":
        return c.name === "bool" ? v.dtype === "bool"
             : c.name === "float" ? v.dtype === "float64" : v.dtype !== "bool";
      case "neginf":
        return v.dtype === "float64" && v.flat.some(function (a) { return a === -Infinity; });
      case "nonzero_eq": {
        var m = gridOfJson(c.x);
        return v.dtype !== "bool" && sameShape(v.shape, m.shape) &&
               v.flat.every(function (a, k) { return (a !== 0) === (m.flat[k] !== 0); });
      }
      case "not": return !holds(c.is, v);
      case "all": return c.of.every(function (sub) { return holds(sub, v); });
    }
    throw new Error("book-exercises: unknown condition " + c.op);
  }

  // ---- a verdict ---------------------------------------------------------------------------
  function pyShape(shape) {  // as Python prints a shape: (), (3,), (5, 5)
    return "(" + shape.join(", ") + (shape.length === 1 ? ",)" : ")");
  }

  function filled(say, value) {
    var text = say.text;
    if (isArray(value)) {
      text = text.split("{shape}").join(pyShape(value.shape))
                 .split("{dtype}").join(value.dtype);
    }
    return {status: say.status, text: text};
  }

  function judge(spec, text) {
    var value;
    try {
      value = read(spec.kind, parse(text));
    } catch (e) {
      if (e === WRONG_KIND) return filled(spec.wrongKind || spec.unreadable, null);
      if (e === UNREADABLE) return filled(spec.unreadable, null);
      throw e;
    }
    for (var k = 0; k < spec.rules.length; k++) {
      if (holds(spec.rules[k].when, value)) return filled(spec.rules[k], value);
    }
    return filled(spec.otherwise, value);
  }

  // ---- the forms ---------------------------------------------------------------------------
  function specOf(form) {
    if (!form.bookSpec) {
      var data = form.querySelector("script.book-exercise-spec");
      form.bookSpec = JSON.parse(data.textContent);
    }
    return form.bookSpec;
  }

  function check(form) {
    var field = form.querySelector("input, textarea");
    var shown = judge(specOf(form), field.value);
    var box = document.createElement("div");
    box.className = "book-check " + shown.status;
    box.textContent = shown.text;
    var out = form.querySelector(".book-exercise-verdict");
    out.textContent = "";
    out.appendChild(box);
    // an answer the page could not read leaves the exercise as it was
    if (shown.status !== "todo") form.setAttribute("data-answered", shown.status);
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form || !form.classList || !form.classList.contains("book-exercise")) return;
    event.preventDefault();
    check(form);
  });

  // in the matrix box Enter starts a new row; Ctrl+Enter (⌘+Enter) checks, as the button does
  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || !target ||
        target.tagName !== "TEXTAREA") return;
    var form = target.closest(".book-exercise");
    if (!form) return;
    event.preventDefault();
    check(form);
  });

  window.bookExercises = {parse: parse, judge: judge};
})();
