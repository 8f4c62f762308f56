"""book.face.checks: each checker accepts the reference answer, rejects the listed mistakes with a
hint that does not give the answer away, and reports unanswered exercises as such."""

from __future__ import annotations

import pytest

from book import chapters
from book.face import checks

KEYS = sorted(chapters.exercises())


def test_every_chapter_has_at_least_three_exercises():
    chapters = {key.split(".")[0] for key in KEYS}
    for chapter in chapters:
        assert sum(k.startswith(chapter + ".") for k in KEYS) >= 3, chapter


@pytest.mark.parametrize("key", KEYS)
def test_reference_passes(key):
    result = checks.check(key, checks.reference(key))
    assert result.ok, result.message
    assert "✅" in result._repr_html_()


@pytest.mark.parametrize("key", KEYS)
def test_mistakes_fail_with_a_hint(key):
    mistakes = chapters.exercises()[key].mistakes()
    assert mistakes, f"{key} lists no mistakes to test its checker against"
    for wrong in mistakes:
        result = checks.check(key, wrong)
        assert result.status == "bad", (key, wrong)
        assert len(result.message) > 15
        assert "❌" in str(result)


@pytest.mark.parametrize("key", KEYS)
def test_unanswered_is_todo_not_wrong(key):
    assert checks.check(key, ...).status == "todo"


@pytest.mark.parametrize("key", KEYS)
def test_hints_do_not_print_a_numeric_answer(key):
    answer = checks.reference(key)
    if callable(answer) or not isinstance(answer, (int, float)):
        pytest.skip("not a single-number answer")
    for wrong in chapters.exercises()[key].mistakes():
        message = checks.check(key, wrong).message
        assert f"{float(answer):g}" not in message.replace(str(wrong), ""), message


def test_wrong_kind_of_answer():
    assert "single number" in checks.check("ch2.variance", [1, 2]).message
    assert "function itself" in checks.check("ch2.scaled_scores", 3).message


def test_unknown_exercise():
    with pytest.raises(KeyError, match="is registered"):
        checks.check("ch9.nothing", 1)
    with pytest.raises(KeyError, match="is registered"):
        checks.reference("ch9.nothing")


def test_registering_twice_is_refused():
    with pytest.raises(ValueError, match="twice"):
        checks.exercise("ch1.pair_count", "again", reference=lambda: 1,
                        mistakes=lambda: [])(lambda a: (True, ""))


@pytest.mark.parametrize("key", [k for k in KEYS if callable(checks.reference(k))])
def test_function_left_blank_is_todo(key):
    def blank(*args):
        ...

    result = checks.check(key, blank)
    assert result.status == "todo", result


def test_icons_come_with_words():
    from book.face.checks import Result

    assert str(Result("k", "ok", "a 10 × 10 grid.")) == "✅ Correct: a 10 × 10 grid."
    assert str(Result("k", "ok", "Correct, and stable.")) == "✅ Correct, and stable."
    assert str(Result("k", "bad", "Divide by √d_k.")) == "❌ Not yet: Divide by √d_k."
    assert str(Result("k", "todo", "Not answered yet: fill in")).startswith("✍️ Not answered")


def test_the_book_says_once_per_page_that_exercises_run_in_jupyter(monkeypatch):
    """In the book build the first unanswered exercise of a page (a kernel) says where the
    exercises run; the next ones show the plain box. In Jupyter never."""
    from book.face import checks
    from book.kit import i18n

    result = checks.Result("ch1.x", "todo", "Not answered yet")
    monkeypatch.setattr(checks, "_jupyter_note_shown", False)
    monkeypatch.setenv("BOOK_BUILD", "0")
    assert 'class="book-check-note"' not in result._repr_html_()
    monkeypatch.setenv("BOOK_BUILD", "1")
    first, second = result._repr_html_(), result._repr_html_()
    note = i18n.tr("common.exercises_run_in_jupyter")
    assert first.startswith('<p class="book-check-note">') and "run in Jupyter" in note
    assert first.endswith(second) and 'class="book-check-note"' not in second
    assert "book-check-note" not in checks.Result("ch1.x", "bad", "no")._repr_html_()
