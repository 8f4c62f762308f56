"""Exercise checkers: instant ✅/❌ feedback with a hint, never printing the answer.

A chapter's exercise cell ends with ``check("ch2.variance", answer)``. The exercises live in
their chapter's module (``book.chapters.ch02_scaling`` …) and register here with :func:`exercise`;
each
checker computes its reference with the same ``book`` code the chapter uses, so the exercises,
the prose and the tests agree on what a correct answer is.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from book.kit import i18n
from book.kit.progress import in_build


@dataclass(frozen=True)
class Result:
    """The verdict on one answer. ``status`` is "ok", "bad" or "todo" (not answered yet)."""

    key: str
    status: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def __str__(self) -> str:
        # the icon always comes with words: without an emoji font it may render as a box
        icon = {"ok": "✅", "bad": "❌", "todo": "✍️"}[self.status]
        word = i18n.tr({"ok": "common.check_ok", "bad": "common.check_bad",
                        "todo": "common.check_todo"}[self.status])
        if self.message.lower().startswith(word.lower()):
            return f"{icon} {self.message}"
        return f"{icon} {word}: {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        global _jupyter_note_shown
        box = f'<div class="book-check {self.status}">{html.escape(str(self))}</div>'
        if self.status == "todo" and in_build() and not _jupyter_note_shown:
            # the book's page: the first unanswered exercise says, once per page, where the
            # exercises run (a kernel per page in the build, so once per page)
            _jupyter_note_shown = True
            note = html.escape(i18n.tr("common.exercises_run_in_jupyter"))
            return f'<p class="book-check-note">{note}</p>{box}'
        return box


_jupyter_note_shown = False  # said on this page (kernel) yet?


@dataclass(frozen=True)
class Exercise:
    """One exercise: its checker, its reference answer and the mistakes readers make.

    ``reference()`` builds the correct answer with the book's own code (for tests and teachers;
    the prose never prints it). ``mistakes()`` returns wrong answers that the checker must
    reject with a hint: typical slips, kept next to the checker that catches them.
    """

    key: str
    title: str
    checker: Callable[[object], tuple[bool, str]]
    reference: Callable[[], object]
    mistakes: Callable[[], list]


_EXERCISES: dict[str, Exercise] = {}


def exercise(key: str, title: str, *, reference: Callable[[], object],
             mistakes: Callable[[], list]):
    """Register ``func(answer) -> (ok, hint_or_praise)`` as the checker of exercise ``key``."""
    def register(func):
        if key in _EXERCISES:
            raise ValueError(f"exercise {key!r} is registered twice")
        _EXERCISES[key] = Exercise(key, title, func, reference, mistakes)
        return func
    return register


def _lookup(key: str) -> Exercise:
    if key not in _EXERCISES:
        raise KeyError(f"no exercise {key!r} is registered: import the chapter module that "
                       f"defines it first (book.chapters.chNN_…; every chapter notebook imports "
                       f"its own), or call book.chapters.exercises() to load them all; "
                       f"registered now: {sorted(_EXERCISES)}")
    return _EXERCISES[key]


def registered() -> dict[str, Exercise]:
    """The exercises registered so far, by key (:func:`book.chapters.exercises` loads all)."""
    return dict(_EXERCISES)


def reference(key: str):
    """The reference answer of exercise ``key`` (for tests and teachers, not the prose)."""
    return _lookup(key).reference()


def check(key: str, answer) -> Result:
    """Check ``answer`` for exercise ``key``. Leave the answer as ``...`` until you have one."""
    exercise_ = _lookup(key)
    if answer is Ellipsis or answer is None:
        return Result(key, "todo", i18n.tr("common.todo_ellipsis"))
    try:
        ok, message = exercise_.checker(answer)
    except NotAnswered:
        return Result(key, "todo", i18n.tr("common.todo_none"))
    except Exception as err:  # a reader's function may raise anything; report it, don't crash
        return Result(key, "bad", i18n.tr("common.answer_raised", error=type(err).__name__,
                                          message=err))
    return Result(key, "ok" if ok else "bad", message)


# --- helpers -------------------------------------------------------------------------------

class NotAnswered(Exception):
    """Raised by :func:`call` when a reader's function still returns None (body is ``...``)."""


def call(func, *args):
    """Call a reader's function on fresh copies of ``args``; None means "not written yet"."""
    result = func(*(np.array(a, copy=True) if isinstance(a, (np.ndarray, list, tuple)) else a
                    for a in args))
    if result is None:
        raise NotAnswered
    return np.asarray(result, dtype=float)


def number(answer) -> float:
    if isinstance(answer, bool):
        raise TypeError("expected a number, got a bool")
    arr = np.asarray(answer, dtype=float)
    if arr.size != 1:
        raise TypeError(f"expected a single number, got shape {arr.shape}")
    return float(arr.reshape(()))


def close_number(answer, expected: float, rel: float, hint: str, praise: str = "Correct."):
    value = number(answer)
    ok = abs(value - expected) <= rel * max(abs(expected), 1e-12)
    return ok, (praise if ok else hint)


def close_array(answer, expected: np.ndarray, atol: float, hint: str, praise: str = "Correct."):
    arr = np.asarray(answer, dtype=float)
    if arr.shape != expected.shape:
        return False, f"Expected shape {expected.shape}, got {arr.shape}. " + hint
    ok = bool(np.allclose(arr, expected, atol=atol, rtol=0))
    return ok, (praise if ok else hint)


