// The page: each `.book-inpage` cell's controls wired to its explorer, a redraw per change.
var ns = window.bookInpage;
var EXPLORERS = ns.explorers;

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

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpAll);
