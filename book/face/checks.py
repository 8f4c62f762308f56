"""Exercise checkers: instant ✅/❌ feedback with a hint, never printing the answer.

A chapter's exercise cell ends with ``check("ch2.variance", answer)``. The exercises live in
their chapter's module (``book.chapters.ch02_scaling`` …) and register here; each checker
computes its reference with the same ``book`` code the chapter uses, so the exercises, the prose
and the tests agree on what a correct answer is.

Two kinds of exercise:

* an exercise that asks for code (a function to write) registers its checker with
  :func:`exercise`; it runs in Jupyter, and the book's page says where (the note above it);
* an exercise whose answer is a value (a number, a shape, a small matrix or mask, a list of
  labels) registers with :func:`value_exercise` an :class:`Answer`: its check as data (the kind
  of value, rules of :class:`Is` conditions with their verdicts). Jupyter's :func:`check` walks
  those rules; in the book's page the exercise's output adds a form (:func:`form_html`) whose
  script, ``exercises.js``, walks the same rules on what the reader types, offline, with the
  same verdicts and hints in the edition's language.
"""
from __future__ import annotations

import html
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

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
        if self.status != "todo" or not in_build():
            return box
        exercise_ = _EXERCISES.get(self.key)
        if exercise_ is not None and exercise_.spec is not None:
            # the book's page: an exercise whose answer is a value is answered right there
            return box + form_html(self.key)
        if not _jupyter_note_shown:
            # the first exercise that asks for code says, once per page, where it runs (a
            # kernel per page in the build, so once per page)
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
    spec: Callable[[], Answer] | None = None  # a value exercise's check as data (value_exercise)


_EXERCISES: dict[str, Exercise] = {}


def exercise(key: str, title: str, *, reference: Callable[[], object],
             mistakes: Callable[[], list]):
    """Register ``func(answer) -> (ok, hint_or_praise)`` as the checker of exercise ``key``."""
    def register(func):
        _register(Exercise(key, title, func, reference, mistakes))
        return func
    return register


def _register(made: Exercise) -> Exercise:
    if made.key in _EXERCISES:
        raise ValueError(f"exercise {made.key!r} is registered twice")
    _EXERCISES[made.key] = made
    return made


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


# --- value exercises: a check that is data, read by Python and by the book's page -------------
#
# An exercise whose answer is a value (a number, a shape, a small matrix or mask, a list of
# labels) declares its check as an :class:`Answer`: the kind of value it reads, an ordered list
# of rules (a condition on the value and the verdict it gives) and the verdict when none holds.
# Python's check walks the rules (:meth:`Answer.verdict`); the book's page gets the same rules
# as JSON with their words rendered in the edition's language (:meth:`Answer.page_spec`) and
# ``exercises.js`` walks them on what the reader types. One set of rules, two readers, the
# same verdicts (tests/test_browser_exercises.py compares them).

@dataclass(frozen=True)
class Got:
    """A message field filled from the reader's answer itself: its ``shape`` or ``dtype``."""

    name: str


GOT_SHAPE, GOT_DTYPE = Got("shape"), Got("dtype")


@dataclass(frozen=True)
class Words:
    """A message field that is itself a string-table message (drawn in the reader's language)."""

    msg_id: str


@dataclass(frozen=True)
class Say:
    """A verdict: right or not, and its words, string-table messages joined in order (each an
    id and its fields)."""

    ok: bool
    parts: tuple[tuple[str, tuple[tuple[str, object], ...]], ...]

    def message(self, value=None) -> str:
        """The words in the current language, ``Got`` fields filled from ``value``."""
        return "".join(i18n.tr(msg_id, **{name: _field(v, value) for name, v in fields})
                       for msg_id, fields in self.parts)


def _field(v, value):
    if isinstance(v, Words):
        return i18n.tr(v.msg_id)
    if isinstance(v, Got):
        return getattr(value, v.name) if value is not None else "{" + v.name + "}"
    return v


def _say(ok: bool, parts) -> Say:
    out = []
    for part in parts:
        msg_id, fields = (part, {}) if isinstance(part, str) else part
        if msg_id not in i18n.table():
            raise KeyError(f"no message {msg_id!r} in the string table (book/strings/*.toml)")
        out.append((msg_id, tuple(sorted(fields.items()))))
    return Say(ok, tuple(out))


def right(*parts) -> Say:
    """The verdict "correct", in the words of ``parts``: message ids, or ``(id, {fields})``."""
    return _say(True, parts)


def wrong(*parts) -> Say:
    """The verdict "not yet", in the words of ``parts`` (joined): message ids or (id, fields)."""
    return _say(False, parts)


def _plain(x):
    """A condition's operand as JSON data (arrays and tensors as nested lists)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    return x


class Is:
    """Conditions on a reader's value, as JSON-ready dicts (``{"op": ..., ...}``). The value is
    a number (kinds number and integer), a tuple (shape, pairs), an array (array, mask) or a list
    of strings (labels); each condition says which it applies to."""

    @staticmethod
    def equal(x) -> dict:
        """The value equals ``x`` (a number, a tuple elementwise, an array: same shape and
        entries, a list of labels)."""
        return {"op": "eq", "x": _plain(x)}

    @staticmethod
    def one_of(*xs) -> dict:
        return {"op": "in", "xs": [_plain(x) for x in xs]}

    @staticmethod
    def near(x, tol: float, *, strict: bool = False) -> dict:
        """A number with ``|value − x| ≤ tol`` (``< tol`` when ``strict``)."""
        return {"op": "near", "x": float(x), "tol": float(tol), "strict": bool(strict)}

    @staticmethod
    def close_to(x, rel: float) -> dict:
        """A number with ``|value − x| ≤ rel · max(|x|, 1e-12)``."""
        return {"op": "rel", "x": float(x), "tol": float(rel)}

    @staticmethod
    def below(x) -> dict:
        return {"op": "lt", "x": _plain(x)}

    @staticmethod
    def at_most(x) -> dict:
        return {"op": "le", "x": _plain(x)}

    @staticmethod
    def above(x) -> dict:
        return {"op": "gt", "x": _plain(x)}

    @staticmethod
    def divides(n) -> dict:
        """A non-zero number that divides ``n`` (``n % value == 0``)."""
        return {"op": "divides", "n": _plain(n)}

    @staticmethod
    def in_range(low, high) -> dict:
        """A number with ``low ≤ value < high``."""
        return {"op": "range", "lo": _plain(low), "hi": _plain(high)}

    @staticmethod
    def length(n: int) -> dict:
        return {"op": "len", "n": int(n)}

    @staticmethod
    def at(i: int, cond: dict) -> dict:
        """Item ``i`` of a tuple or list (negative from the end) meets ``cond``."""
        return {"op": "at", "i": int(i), "is": cond}

    @staticmethod
    def same(i: int, j: int) -> dict:
        """Items ``i`` and ``j`` of a tuple are equal."""
        return {"op": "same", "i": int(i), "j": int(j)}

    @staticmethod
    def has(x) -> dict:
        """A tuple holds ``x``."""
        return {"op": "contains", "x": _plain(x)}

    @staticmethod
    def shape(*dims: int) -> dict:
        """An array of this shape."""
        return {"op": "shape", "dims": [int(d) for d in dims]}

    @staticmethod
    def close(x, atol: float, rtol: float = 0.0) -> dict:
        """An array of ``x``'s shape within ``atol + rtol·|x|`` of it everywhere (np.allclose)."""
        return {"op": "close", "x": _plain(x), "atol": float(atol), "rtol": float(rtol)}

    @staticmethod
    def dtype(name: str) -> dict:
        """An array of booleans ("bool"), of floats ("float") or of numbers ("number")."""
        if name not in ("bool", "float", "number"):
            raise ValueError(f"dtype must be 'bool', 'float' or 'number', got {name!r}")
        return {"op": "dtype", "name": name}

    @staticmethod
    def has_neginf() -> dict:
        """An array of floats holding −∞ (an additive mask)."""
        return {"op": "neginf"}

    @staticmethod
    def nonzero_is(x) -> dict:
        """An array of numbers whose non-zero pattern is the boolean array ``x``."""
        return {"op": "nonzero_eq", "x": _plain(x)}

    @staticmethod
    def not_(cond: dict) -> dict:
        return {"op": "not", "is": cond}

    @staticmethod
    def all(*conds: dict) -> dict:
        """Every one of ``conds``, tested in order (the first that fails stops)."""
        return {"op": "all", "of": list(conds)}


def _equal(value, x) -> bool:
    if isinstance(value, np.ndarray):
        return bool(np.array_equal(value, np.asarray(x)))
    if isinstance(value, (tuple, list)):
        return isinstance(x, (tuple, list)) and len(value) == len(x) and all(
            _equal(a, b) for a, b in zip(value, x, strict=True))
    if isinstance(x, (tuple, list)):
        return False
    return value == x


def _holds(cond: dict, value) -> bool:
    """Whether ``value`` (read by :meth:`Answer.read`) meets ``cond`` (see :class:`Is`)."""
    op = cond["op"]
    if op == "eq":
        return _equal(value, cond["x"])
    if op == "in":
        return any(_equal(value, x) for x in cond["xs"])
    if op == "near":
        gap = abs(value - cond["x"])
        return bool(gap < cond["tol"] if cond["strict"] else gap <= cond["tol"])
    if op == "rel":
        return bool(abs(value - cond["x"]) <= cond["tol"] * max(abs(cond["x"]), 1e-12))
    if op == "lt":
        return bool(value < cond["x"])
    if op == "le":
        return bool(value <= cond["x"])
    if op == "gt":
        return bool(value > cond["x"])
    if op == "divides":
        return bool(value != 0 and cond["n"] % value == 0)
    if op == "range":
        return bool(cond["lo"] <= value < cond["hi"])
    if op == "len":
        return len(value) == cond["n"]
    if op == "at":
        i = cond["i"]
        return -len(value) <= i < len(value) and _holds(cond["is"], value[i])
    if op == "same":
        return _equal(value[cond["i"]], value[cond["j"]])
    if op == "contains":
        return any(_equal(v, cond["x"]) for v in value)
    if op == "shape":
        return tuple(value.shape) == tuple(cond["dims"])
    if op == "close":
        x = np.asarray(cond["x"], dtype=float)
        return value.shape == x.shape and bool(
            np.allclose(value, x, atol=cond["atol"], rtol=cond["rtol"]))
    if op == "dtype":
        kinds = {"bool": "b", "float": "f", "number": "iuf"}[cond["name"]]
        return value.dtype.kind in kinds
    if op == "neginf":
        return value.dtype.kind == "f" and bool(np.isneginf(value).any())
    if op == "nonzero_eq":
        return value.dtype.kind in "iuf" and bool(
            np.array_equal(value != 0, np.asarray(cond["x"], dtype=bool)))
    if op == "not":
        return not _holds(cond["is"], value)
    if op == "all":
        return all(_holds(c, value) for c in cond["of"])
    raise ValueError(f"unknown condition {op!r} (book.face.checks.Is lists them)")


class _WrongKind(Exception):
    """The answer is not the kind of value the exercise reads (its ``wrong_kind`` verdict)."""


# What each kind of answer reads (Python's side; exercises.js reads what a reader types):
ANSWER_KINDS = {
    "number": "one number (number(): a bool or several numbers raise)",
    "integer": "a Python or NumPy integer",
    "shape": "a tuple of integers (int() of each item)",
    "int_pair": "two integers, e.g. (layer, head)",
    "number_pair": "two numbers",
    "array": "an array of floats (np.asarray(answer, dtype=float))",
    "mask": "an array as given: booleans, numbers, a tensor",
    "labels": "a list of strings",
}


@dataclass(frozen=True)
class Answer:
    """How a value exercise checks its answer: the ``kind`` of value it reads
    (:data:`ANSWER_KINDS`), its ``rules`` tried in order (a condition of :class:`Is` and the
    verdict it gives), the verdict ``otherwise``, and ``wrong_kind``: the verdict on an answer
    that is not of the kind (None: the reading error is reported as raised).

    Example::

        Answer("number", [(Is.near(32, 0.5, strict=True), wrong("ch05.rms_variance")),
                          (Is.close_to(math.sqrt(32), 0.03), right("ch05.rms_ok"))],
               otherwise=wrong("ch05.rms_hint"))
    """

    kind: str
    rules: tuple[tuple[dict, Say], ...]
    otherwise: Say
    wrong_kind: Say | None = None

    def __init__(self, kind: str, rules, otherwise: Say, wrong_kind: Say | None = None):
        if kind not in ANSWER_KINDS:
            raise ValueError(f"kind must be one of {', '.join(ANSWER_KINDS)}, got {kind!r}")
        rules = tuple(tuple(rule) for rule in rules)
        for rule in rules:
            if (len(rule) != 2 or not isinstance(rule[0], dict) or "op" not in rule[0]
                    or not isinstance(rule[1], Say)):
                raise TypeError("rules are (condition, verdict) pairs: (Is.equal(3), "
                                f"right('ch01.correct')), got {rule!r}")
        if not isinstance(otherwise, Say) or not isinstance(wrong_kind, (Say, type(None))):
            raise TypeError("otherwise and wrong_kind are verdicts: wrong('ch01.heads_hint')")
        if not any(say.ok for _, say in rules):
            raise ValueError("no rule of this Answer says right(...): nothing could pass")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "otherwise", otherwise)
        object.__setattr__(self, "wrong_kind", wrong_kind)

    def read(self, answer):
        """``answer`` as the value the rules test; raises for an answer of another kind."""
        kind = self.kind
        try:
            if kind == "number":
                return number(answer)
            if kind == "integer":
                if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
                    raise _WrongKind
                return int(answer)
            if kind == "shape":
                try:
                    return tuple(int(v) for v in answer)
                except TypeError:
                    raise _WrongKind from None
            if kind in ("int_pair", "number_pair"):
                item = int if kind == "int_pair" else number
                try:
                    first, second = (item(v) for v in answer)
                except (TypeError, ValueError):
                    raise _WrongKind from None
                return (first, second)
            if kind == "array":
                return np.asarray(answer, dtype=float)
            if kind == "mask":
                return np.asarray(answer.detach().cpu() if hasattr(answer, "detach") else answer)
            # labels
            if isinstance(answer, str) or not isinstance(answer, Sequence):
                raise _WrongKind
            return [str(a) for a in answer]
        except _WrongKind:
            if self.wrong_kind is None:
                raise TypeError(f"expected {ANSWER_KINDS[kind]}") from None
            raise

    def judge(self, answer) -> tuple[Say, object]:
        """The verdict on ``answer`` and the value it was read as (None if of another kind)."""
        try:
            value = self.read(answer)
        except _WrongKind:
            return self.wrong_kind, None
        for cond, say in self.rules:
            if _holds(cond, value):
                return say, value
        return self.otherwise, value

    def verdict(self, answer) -> tuple[bool, str]:
        """(right?, words) on ``answer``, in the current language: the exercise's checker."""
        say, value = self.judge(answer)
        return say.ok, say.message(value)

    def page_spec(self, key: str) -> dict:
        """The rules as the page's script reads them, each verdict's text as ``str(Result)``
        gives it in the current language (``{shape}``, ``{dtype}`` left for the script to fill
        from the reader's answer)."""
        def shown(say: Say | None):
            if say is None:
                return None
            status = "ok" if say.ok else "bad"
            return {"status": status, "text": str(Result(key, status, say.message()))}

        form = i18n.tr(f"common.exercise_form_{_FORM[self.kind]}")
        return {"key": key, "kind": self.kind,
                "rules": [{"when": cond, **shown(say)} for cond, say in self.rules],
                "otherwise": shown(self.otherwise), "wrongKind": shown(self.wrong_kind),
                "unreadable": {"status": "todo", "text": str(Result(
                    key, "todo", i18n.tr("common.exercise_unreadable", form=form)))}}


# the words that tell a reader what to type, by kind (common.exercise_form_<form>)
_FORM = {"number": "number", "integer": "integer", "shape": "shape", "int_pair": "pair",
         "number_pair": "pair", "array": "array", "mask": "mask", "labels": "labels"}


def value_exercise(key: str, title: str, *, answer: Callable[[], Answer],
                   reference: Callable[[], object], mistakes: Callable[[], list]) -> Exercise:
    """Register exercise ``key`` whose answer is a value, checked by the :class:`Answer` that
    ``answer()`` builds (once, on first use): in Jupyter by :func:`check`, and in the book's
    page by the form under its cell (exercises.js reading the same rules)."""
    spec = cache(answer)

    def checker(given):
        return spec().verdict(given)

    # the checker belongs to the chapter module that declares it (tests/chapters/test_registry)
    checker.__module__ = sys._getframe(1).f_globals.get("__name__", __name__)
    checker.__qualname__ = f"value_exercise({key!r})"
    return _register(Exercise(key, title, checker, reference, mistakes, spec))


def answer_spec(key: str) -> Answer | None:
    """The :class:`Answer` of value exercise ``key``; None for an exercise that asks for code."""
    spec = _lookup(key).spec
    return spec() if spec is not None else None


_forms_shown = 0  # forms on this page (kernel): each input gets an id of its own


def form_html(key: str) -> str:
    """The page's form for value exercise ``key``: a labelled input, a button and a polite live
    region where exercises.js writes the verdict, in the current language."""
    global _forms_shown
    spec = answer_spec(key)
    if spec is None:
        raise ValueError(f"exercise {key!r} asks for code: it has no form in the page")
    _forms_shown += 1
    ident = f"bookex-{_forms_shown}-{key.replace('.', '-')}"
    form = i18n.tr(f"common.exercise_form_{_FORM[spec.kind]}")
    help_text = html.escape(i18n.tr("common.exercise_help", form=form))
    label = html.escape(i18n.tr("common.exercise_label"))
    button = html.escape(i18n.tr("common.q_check"))
    common = (f'id="{ident}" name="answer" autocomplete="off" autocapitalize="off" '
              f'spellcheck="false" aria-describedby="{ident}-help"')
    field = (f'<textarea {common} rows="3"></textarea>' if spec.kind == "mask"
             else f'<input type="text" {common}>')
    data = json.dumps(spec.page_spec(key), ensure_ascii=False, separators=(",", ":"))
    data = data.replace("</", "<\\/")  # never ends the script element early
    return (f'<form class="book-exercise book-exercise-{spec.kind}" '
            f'data-exercise="{html.escape(key)}" novalidate>'
            f'<div class="book-exercise-row"><label for="{ident}">{label}</label>{field}'
            f'<button type="submit">{button}</button>'
            f'<span class="book-exercise-help" id="{ident}-help">{help_text}</span></div>'
            f'<div class="book-exercise-verdict" role="status" aria-live="polite"></div>'
            f'<script type="application/json" class="book-exercise-spec">{data}</script>'
            "</form>")


def number_answer(expected: float, rel: float, hint: str, praise: str, *,
                  first=()) -> Answer:
    """One number within ``rel`` (relative) of ``expected``: ``praise``, else ``hint`` (string
    ids); ``first``: rules tried before, e.g. the hints of typical slips."""
    return Answer("number", [*first, (Is.close_to(expected, rel), right(praise))],
                  otherwise=wrong(hint))


def array_answer(expected, atol: float, hint: str, praise: str, *, first=()) -> Answer:
    """An array of ``expected``'s shape within ``atol`` of it: ``praise``; another shape says
    so before the ``hint``; ``first``: rules tried before."""
    expected = np.asarray(expected, dtype=float)
    return Answer("array", [
        *first,
        (Is.not_(Is.shape(*expected.shape)),
         wrong(("common.expected_shape", {"want": expected.shape, "shape": GOT_SHAPE}), hint)),
        (Is.close(expected, atol), right(praise))], otherwise=wrong(hint))
