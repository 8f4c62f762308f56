/* Concept questions (book/face/questions.py): the reader picks an option and presses the
 * button; the feedback written for that option (kept in the question's hidden list) is copied
 * into the question's live region, which a screen reader announces. Nothing is computed here:
 * the page holds every option's verdict and explanation, so it works from file://, offline,
 * with no kernel. The same file is the book's _static/book-questions.js and, in Jupyter, the
 * inline script of each question's output (the guard below installs the handlers once).
 */
(function () {
  "use strict";
  if (window.bookQuestions) return;
  window.bookQuestions = true;

  var feedback = function (question) {
    return question.querySelector(".book-question-feedback");
  };

  document.addEventListener("click", function (event) {
    var target = event.target;
    var button = target && target.closest ? target.closest(".book-question-check") : null;
    if (!button) return;
    var question = button.closest(".book-question");
    if (!question) return;
    var chosen = question.querySelector("input[type=radio]:checked");
    var key = chosen ? chosen.value : "none";
    var why = question.querySelector('.book-question-whys [data-option="' + key + '"]');
    var out = feedback(question);
    if (!why || !out) return;
    out.innerHTML = why.innerHTML;
    out.className = "book-question-feedback " + why.className;
    question.setAttribute("data-answered", chosen ? why.className : "");
  });

  // a new choice clears the verdict on the old one
  document.addEventListener("change", function (event) {
    var target = event.target;
    var question = target && target.closest ? target.closest(".book-question") : null;
    if (!question || target.type !== "radio") return;
    var out = feedback(question);
    if (out) {
      out.innerHTML = "";
      out.className = "book-question-feedback";
    }
    question.removeAttribute("data-answered");
  });
})();
