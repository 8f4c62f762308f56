// The page script's one namespace, window.bookInpage: the explorers register in it by name.
var ns = window.bookInpage = window.bookInpage || {};
ns.explorers = ns.explorers || {};
ns.layout = ns.layout || {};

// An explorer (one file of explorers/, named as it registers) computes what to redraw from its
// cell's spec and control values: compute(spec, values, gd) -> {traces, data, layout (what
// Plotly.update takes), status (the line above the figure), exposed (what the tests read), and
// optionally settle(gd) (one more relayout once drawn) or keep: true (input it cannot draw: the
// status says why, the last figure stays)}. `layout` holds the pixels only the page uses to lay
// that explorer out (the tests read them here).
ns.register = function (name, compute, layout) {
  if (ns.explorers[name]) throw new Error("book-inpage: two explorers named " + name);
  ns.explorers[name] = compute;
  if (layout) ns.layout[name] = layout;
};
