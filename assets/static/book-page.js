/* The page around the figures (Jupyter Book loads every .js of html_static_path on every page).
 *
 * 1. Search from file://: Sphinx's search fetches each hit's page to show an excerpt, and a
 *    browser refuses fetch() on file:// (a CORS error on the console for every hit). There the
 *    results are listed without excerpts; over http they keep them.
 * 2. Display math wider than the column scrolls sideways: each such block is made focusable,
 *    so a keyboard user can scroll it too (axe's scrollable-region-focusable).
 * 3. Print: plotly draws each figure at the width of the screen's text column, wider than the
 *    paper. Before printing, each figure's svg layers get a viewBox so that the print CSS
 *    (book.css, html.book-print) scales the whole figure to the paper; after printing they are
 *    put back as plotly drew them.
 * 4. Figures with CJK text wait for the book's CJK font (book.css: "Book Noto Sans SC") before
 *    plotly draws them. plotly measures each text once, to place legend entries, margins and
 *    tick labels, and caches the size by the text's content and style: measured with a fallback
 *    font before the web font has loaded, a Chinese legend entry is placed too close to the
 *    next (their keys run into the text) and long tick labels leave the figure, and redrawing
 *    later reuses the stale sizes. Figures without CJK text are drawn at once. The font is
 *    fetched as soon as this script runs (in <head>), not when the first figure asks for it.
 * 5. Figures are drawn one task each, in page order: the first at once (once the font is there,
 *    if it needs it), each next one after the browser has painted the one before. Drawn in one
 *    go, as the page's inline scripts call Plotly.newPlot, figures kept the first one off the
 *    screen until the last was computed (chapter 1: its three figures back to back, the first
 *    shown 250 ms after it was drawn; a Chinese page: every figure at once, after the font).
 */
(function () {
  "use strict";

  var CJK = /[\u2e80-\u2fdf\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]/;
  if (window.Plotly && window.Plotly.newPlot) {
    var newPlot = window.Plotly.newPlot;
    // The face the page's text is drawn in: the last @font-face of the family (a Chinese page
    // declares its own subset after book.css's; document.fonts.load would fetch both).
    var bookFace = function () {
      var face = null;
      if (!document.fonts || !document.fonts.forEach) return Promise.resolve();
      document.fonts.forEach(function (f) {
        if (f.family.replace(/["']/g, "") === "Book Noto Sans SC") face = f;
      });
      return face ? face.load() : document.fonts.load('12px "Book Noto Sans SC"', "\u4e2d");
    };
    // Fetched now, while the page parses, rather than when the first figure with CJK text asks
    // for it (a Chinese page draws its text in it anyway; an English one loads 31 KB).
    var fontReady = bookFace();
    var nextTask = function () {
      // after the browser has painted what is drawn so far (a frame, or 100 ms where frames
      // are not produced, as in a background tab), in a task of its own
      return new Promise(function (resolve) {
        var done = false;
        var go = function () { if (!done) { done = true; setTimeout(resolve, 0); } };
        if (window.requestAnimationFrame) window.requestAnimationFrame(go);
        setTimeout(go, 100);
      });
    };
    var previous = null;  // the promise of the figure drawn before
    window.Plotly.newPlot = function () {
      var self = this, args = arguments;
      var draw = function () { return newPlot.apply(self, args); };
      var text;
      try { text = JSON.stringify([args[1], args[2]]); } catch (e) { text = ""; }
      var found = text && text.match(CJK);
      if (!previous && !found) {
        previous = draw();
        return previous;
      }
      // Each figure after the first is drawn in a task of its own once the one before it is
      // drawn, so the first figure is on the screen before the others are computed and the page
      // stays responsive while they are; figures with CJK text also wait for the font.
      var ready = Promise.resolve(previous).then(null, function () {});
      if (found) ready = ready.then(function () { return fontReady; }).then(null, function () {});
      if (previous) ready = ready.then(nextTask);
      previous = ready.then(draw);
      return previous;
    };
  }

  if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
    DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  }

  function scaleForPrint() {
    document.documentElement.classList.add("book-print");
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
      var container = gd.querySelector(".svg-container");
      var svgs = gd.querySelectorAll("svg.main-svg");
      if (!container || !svgs.length) return;
      var w = parseFloat(svgs[0].getAttribute("width"));
      var h = parseFloat(svgs[0].getAttribute("height"));
      if (!(w > 0 && h > 0)) return;
      container.style.aspectRatio = w + " / " + h;
      // plotly stacks its svg layers (absolutely positioned) in the container: each scales
      svgs.forEach(function (svg) { svg.setAttribute("viewBox", "0 0 " + w + " " + h); });
    });
  }

  function restoreAfterPrint() {
    document.documentElement.classList.remove("book-print");
    document.querySelectorAll(".js-plotly-plot").forEach(function (gd) {
      var container = gd.querySelector(".svg-container");
      if (container) container.style.aspectRatio = "";
      gd.querySelectorAll("svg.main-svg").forEach(function (svg) {
        svg.removeAttribute("viewBox");
      });
    });
  }

  function focusableWideMath() {
    document.querySelectorAll("mjx-container[display='true']").forEach(function (el) {
      if (el.scrollWidth > el.clientWidth + 1 && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
      }
    });
  }
  window.addEventListener("load", function () {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(focusableWideMath);
    }
  });
  window.addEventListener("resize", focusableWideMath);

  window.addEventListener("beforeprint", scaleForPrint);
  window.addEventListener("afterprint", restoreAfterPrint);
})();
