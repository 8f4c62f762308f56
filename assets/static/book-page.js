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
 *    later reuses the stale sizes. Figures without CJK text are drawn at once.
 */
(function () {
  "use strict";

  var CJK = /[\u2e80-\u2fdf\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]/;
  if (window.Plotly && window.Plotly.newPlot && document.fonts && document.fonts.load) {
    var newPlot = window.Plotly.newPlot;
    // The face the page's text is drawn in: the last @font-face of the family (a Chinese page
    // declares its own subset after book.css's; document.fonts.load would fetch both).
    var bookFace = function (character) {
      var face = null;
      document.fonts.forEach(function (f) {
        if (f.family.replace(/["']/g, "") === "Book Noto Sans SC") face = f;
      });
      return face ? face.load() : document.fonts.load('12px "Book Noto Sans SC"', character);
    };
    var fontReady = null;
    window.Plotly.newPlot = function () {
      var self = this, args = arguments;
      var draw = function () { return newPlot.apply(self, args); };
      var text;
      try { text = JSON.stringify([args[1], args[2]]); } catch (e) { return draw(); }
      var found = text && text.match(CJK);
      if (!found) return draw();
      fontReady = fontReady || bookFace(found[0]);
      return fontReady.then(draw, draw);
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
