"""Concept questions: predict, then run; explain why; spot the bug. Answered with no kernel.

A question is data: its kind, which option is right, an optional code snippet (registered by
its chapter's module with :func:`question`), and its words in the string table, under the
question's key ``"<section>.<name>"`` (``"ch01.two_keys"``: section ``ch01`` of
``book/strings/ch01.toml``)::

    [q_two_keys]          # the question
    [q_two_keys_1]        # option 1 … option n, numbered from 1, as many as the table has
    [q_two_keys_1_why]    # what the page answers when the reader picks option 1

Every option has its explanation, the wrong ones saying which misconception they are.
A "predict" question also records ``answered_in``: the id of the notebook cell (the ``"id"``
field of the chapter's ``.ipynb``) that first gives its answer away, the prose, figure or
diagram that states or shows it. The question must be asked before that cell, or the reader
reads the answer before predicting it (tests/face/test_questions.py checks the order).
``ask("ch01.two_keys", ...)`` shows the questions as semantic HTML: a fieldset of radio
buttons, a button, and a live region where the chosen option's explanation appears. The page
holds every explanation; ``questions.js`` (the book's ``_static/book-questions.js``, and in
Jupyter an inline script of the output) copies the chosen one into view. So a question works
in the static HTML book from ``file://``, offline, and in JupyterLab, in both languages.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from book.kit import i18n
from book.kit.progress import in_build

KINDS = ("predict", "explain", "bug")
_KEY = re.compile(r"^(?P<section>[a-z0-9]+)\.(?P<name>[a-z][a-z0-9_]*)$")
SCRIPT = Path(__file__).with_name("questions.js")


@dataclass(frozen=True)
class Question:
    """One concept question. ``right`` is the number (from 1) of its one right option;
    ``answered_in`` (predict questions only, None for the others) the id of the notebook cell
    that first gives the answer away, which the question must come before."""

    key: str
    kind: str
    right: int
    code: str | None = None
    answered_in: str | None = None

    @property
    def base(self) -> str:
        """The string id of its text: ``ch01.two_keys`` -> ``ch01.q_two_keys``."""
        section, name = self.key.split(".", 1)
        return f"{section}.q_{name}"

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0]

    def count(self) -> int:
        """How many options the string table gives it (ids ``<base>_1`` … ``<base>_n``)."""
        return _count_options(self.base)

    def prompt(self) -> str:
        return i18n.tr(self.base)

    def options(self) -> list[tuple[str, str]]:
        """(text, explanation) of each option, in the current language."""
        return [(i18n.tr(f"{self.base}_{i}"), i18n.tr(f"{self.base}_{i}_why"))
                for i in range(1, self.count() + 1)]


_QUESTIONS: dict[str, Question] = {}


def _count_options(base: str) -> int:
    table = i18n.table()
    n = 0
    while f"{base}_{n + 1}" in table:
        n += 1
    return n


_CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # nbformat 4.5's cell id


def question(key: str, *, kind: str, right: int, code: str | None = None,
             answered_in: str | None = None) -> Question:
    """Register the question ``key`` (``"ch01.two_keys"``) and return it.

    ``kind``: "predict" (predict, then run), "explain" (explain why) or "bug" (spot the bug);
    ``right``: the number (from 1) of the right option; ``code``: a snippet shown under the
    question (the code a spot-the-bug question is about), or None; ``answered_in``: for a
    "predict" question (required there, refused for the other kinds), the id of the cell of
    the chapter's notebook that first gives the answer away (the sentence, figure or diagram
    that states or shows it), which the question's ``book.ask`` cell must come before. Its
    words must already be in the string table (see the module's docstring): at least two
    options, each with its ``_why``.
    """
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValueError(f"question key must look like 'ch01.two_keys' (the string table's "
                         f"section, a dot, a lower-case name), got {key!r}")
    if key in _QUESTIONS:
        raise ValueError(f"question {key!r} is registered twice")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if code is not None and (not isinstance(code, str) or not code.strip()):
        raise TypeError(f"code must be a non-empty str (the snippet) or None, got {code!r}")
    if kind == "predict":
        if not isinstance(answered_in, str) or not _CELL_ID.match(answered_in):
            raise ValueError(f"predict question {key!r} needs answered_in: the id of the "
                             f"notebook cell that first gives its answer away (the \"id\" "
                             f"field of a cell of the chapter's .ipynb), got {answered_in!r}")
    elif answered_in is not None:
        raise ValueError(f"answered_in is for predict questions only (the cell a prediction "
                         f"must come before); question {key!r} is of kind {kind!r}, got "
                         f"answered_in={answered_in!r}")
    made = Question(key, kind, right, None if code is None else code.strip("\n"), answered_in)
    table = i18n.table()
    if made.base not in table:
        raise KeyError(f"question {key!r} has no text: add [{made.base.split('.', 1)[1]}] with "
                       f"en = ... and zh = ... to book/strings/{made.section}.toml")
    n = made.count()
    if n < 2:
        raise ValueError(f"question {key!r} has {n} option(s) in the string table; add "
                         f"[{made.base.split('.', 1)[1]}_1], [..._2], … (at least two)")
    missing = [f"{made.base}_{i}_why" for i in range(1, n + 1)
               if f"{made.base}_{i}_why" not in table]
    if missing:
        raise KeyError(f"question {key!r}: every option needs its explanation; add {missing} "
                       f"to book/strings/{made.section}.toml")
    if isinstance(right, bool) or not isinstance(right, int) or not 1 <= right <= n:
        raise ValueError(f"right must be the number of the right option, 1 to {n}, for "
                         f"question {key!r}; got {right!r}")
    _QUESTIONS[key] = made
    return made


def registered() -> dict[str, Question]:
    """The questions registered so far, by key (importing a chapter module registers its own)."""
    return dict(_QUESTIONS)


def _lookup(key: str) -> Question:
    if key not in _QUESTIONS:
        raise KeyError(f"no question {key!r} is registered: import the chapter module that "
                       f"defines it first (book.chapters.chNN_…); registered now: "
                       f"{sorted(_QUESTIONS)}")
    return _QUESTIONS[key]


_CODE_SPAN = re.compile(r"`([^`]+)`")
_EMPHASIS = re.compile(r"(?<![A-Za-z0-9_*])\*([^*\s](?:[^*]*[^*\s])?)\*(?![A-Za-z0-9_*])")


def inline(text: str) -> str:
    """``text`` as HTML: escaped, with `backticks` as <code> and *stars* as <em> (outside code)."""
    parts = _CODE_SPAN.split(text)  # even: prose, odd: code
    return "".join(f"<code>{html.escape(part, quote=False)}</code>" if i % 2 else
                   _EMPHASIS.sub(r"<em>\1</em>", html.escape(part, quote=False))
                   for i, part in enumerate(parts))


@cache
def script() -> str:
    """The questions' script (questions.js)."""
    return SCRIPT.read_text(encoding="utf-8")


_CJK_STOPS = ("。", "：", "，", "！", "？")
_shown = 0  # questions shown in this kernel: each radio group gets a name of its own


def to_html(q: Question, number: int) -> str:
    """One question as HTML (radio group name ``bookq-<number>-<key>``)."""
    name = f"bookq-{number}-{q.key.replace('.', '-')}"
    kind = i18n.tr(f"common.q_kind_{q.kind}")
    parts = [f'<div class="book-question" data-question="{html.escape(q.key)}">',
             "<fieldset>",
             f'<legend><span class="book-question-kind">{html.escape(kind)}</span> '
             f'<span class="book-question-prompt">{inline(q.prompt())}</span></legend>']
    if q.code:
        parts.append(f'<pre class="book-question-code"><code>{html.escape(q.code)}</code></pre>')
    parts.append('<div class="book-question-options">')
    whys = []
    for i, (text, why) in enumerate(q.options(), start=1):
        parts.append(f'<label><input type="radio" name="{name}" value="{i}"> '
                     f"<span>{inline(text)}</span></label>")
        right = i == q.right
        verdict = i18n.tr("common.q_right" if right else "common.q_wrong")
        space = "" if verdict.endswith(_CJK_STOPS) else " "  # no space after a full stop 。
        whys.append(f'<p data-option="{i}" class="{"right" if right else "wrong"}">'
                    f"{'✅' if right else '❌'} <strong>{html.escape(verdict)}</strong>{space}"
                    f"{inline(why)}</p>")
    parts.append("</div>")
    parts.append(f'<button type="button" class="book-question-check">'
                 f"{html.escape(i18n.tr('common.q_check'))}</button>")
    parts.append('<p class="book-question-feedback" role="status" aria-live="polite"></p>')
    whys.append(f'<p data-option="none" class="none">{html.escape(i18n.tr("common.q_none"))}'
                "</p>")
    parts.append('<div class="book-question-whys" hidden>' + "".join(whys) + "</div>")
    parts.append("</fieldset></div>")
    return "".join(parts)


def to_text(q: Question) -> str:
    """The question as plain text (what a front-end without HTML shows)."""
    lines = [f"{i18n.tr(f'common.q_kind_{q.kind}')}: {q.prompt()}"]
    if q.code:
        lines += ["", *("    " + line for line in q.code.splitlines()), ""]
    lines += [f"  {i}. {text}" for i, (text, _) in enumerate(q.options(), start=1)]
    return "\n".join(lines)


class Questions:
    """Questions to show in a notebook cell (what :func:`ask` returns)."""

    def __init__(self, items: list[Question]):
        self.items = items

    def _repr_mimebundle_(self, include=None, exclude=None):
        global _shown
        blocks = []
        for q in self.items:
            _shown += 1
            blocks.append(to_html(q, _shown))
        body = "".join(blocks)
        if not in_build():
            # Jupyter: the output brings its script (JupyterLab runs it in a trusted output,
            # i.e. one made by running the cell); the book's pages load _static's copy
            body += f"<script>{script()}</script>"
        else:
            # the book's page: folded under one line (a chapter stays within its screens), the
            # reader opens it to answer; in Jupyter the questions are open where the cell runs
            summary = i18n.tr("common.q_fold", n=len(self.items))
            body = (f'<details class="book-questions-fold"><summary>{html.escape(summary)}'
                    f"</summary>{body}</details>")
        plain = "\n\n".join(to_text(q) for q in self.items)
        plain += "\n\n" + i18n.tr("common.q_plain_hint")
        return {"text/html": f'<div class="book-questions">{body}</div>', "text/plain": plain}

    def __repr__(self) -> str:
        return "\n\n".join(to_text(q) for q in self.items)


def ask(*keys: str) -> Questions:
    """The questions ``keys`` (``"ch01.two_keys"``, …), to show as a cell's output."""
    if not keys:
        raise ValueError("ask needs at least one question key, e.g. ask('ch01.two_keys')")
    for key in keys:
        if not isinstance(key, str):
            raise TypeError(f"question keys are strings like 'ch01.two_keys', got {key!r}")
    return Questions([_lookup(key) for key in keys])


def of_section(section: str) -> list[Question]:
    """The registered questions of string-table section ``section`` (a chapter: ``"ch01"``)."""
    return [q for q in _QUESTIONS.values() if q.section == section]
