"""The teacher's guide's unit plan as data: ``book/site/teachers_plan.toml``, read and checked.

What is data here, written by hand (the TOML file):

* ``[outcomes]``: for every chapter page, one list per learning outcome (the bullets under
  "After this chapter you will be able to" in the notebook's opening cell, in order) naming
  what practises it: exercise keys (``"ch2.variance"``, :mod:`book.face.checks`), questions
  (``"discuss:ch2.why_sqrt"``, the guide's own discussion questions) and assignments
  (``"assignment:02_mha_torch"``, the instructor notebooks in ``assignments/``);
* ``[[session]]``: the sessions of the unit, each a list of (chapter page, section heading,
  minutes) with what to assign before and after and which questions to discuss;
* the texts (discussion questions, notes on misconceptions, the plan's words) are in
  ``book/strings/guide.toml``, English and Chinese.

What is read, never copied: the outcomes and section headings from the notebooks, their Chinese
from the chapters' catalogues (``locale/zh_CN/LC_MESSAGES/chapters/*.po``), the exercises from
the notebooks' ``check("…")`` calls, the fact checks (``:::{admonition} Fact check: …``) from the
notebooks, the assignments from ``assignments/*.ipynb``. An assignment the plan names that is
not in ``assignments/`` yet (one of ``expected_assignments``) is left out until it exists.

:func:`load` reads the file and stops on a value of the wrong shape, naming the file, the entry
and what to write; :func:`problems` lists what does not match the book (a name that does not
exist, an outcome nothing practises, a section the chapter does not have). Both take the chapter
list, ``book.chapters`` (its ``CHAPTERS``, ``exercises()`` and ``concept_questions()``), as an
argument: the Sphinx side stands below the chapters and never imports them
(book/site/teachers_guide.py hands over the module the build loaded as an extension).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from book.kit import i18n

ROOT = Path(__file__).resolve().parents[2]
PLAN_FILE = Path(__file__).with_suffix(".toml")
CHAPTER_DIR = ROOT / "chapters"
ASSIGNMENT_DIR = ROOT / "assignments"
CATALOGUES = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters"
OUTCOMES_LEAD = "**After this chapter you will be able to**"
EX, Q, A = "", "discuss:", "assignment:"
ITEM_HELP = ("an exercise key the chapter's notebook checks (\"ch2.variance\"), "
             "\"discuss:chN.name\" (guide.toml's [q_chN_name]) or \"assignment:NAME\" "
             "(assignments/NAME.ipynb)")


@dataclass(frozen=True)
class Session:
    """One session: ``parts`` are (chapter page, section heading, minutes); ``before`` and
    ``after`` are string ids of guide.toml (``before`` may name a section to read first,
    ``read``: (page, heading)); ``discuss`` questions (``"discuss:…"``); ``assign`` what is
    handed out at the end (exercise keys and ``"assignment:…"``)."""

    week: int
    parts: tuple[tuple[str, str, int], ...]
    before: str
    after: str
    discuss: tuple[str, ...]
    assign: tuple[str, ...]
    read: tuple[str, str] | None = None


@dataclass(frozen=True)
class Plan:
    """The file's content: ``outcomes`` page -> one tuple of items per outcome."""

    outcomes: dict[str, tuple[tuple[str, ...], ...]]
    sessions: tuple[Session, ...]
    minutes: int
    expected_assignments: tuple[str, ...]
    further: tuple[str, ...]
    where: str   # the file, as the messages name it


# --- reading the file -------------------------------------------------------------------------

def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


class _Reader:
    """Type checks that name the file, the entry and what to write."""

    def __init__(self, where: str):
        self.where = where

    def bad(self, entry: str, expected: str, value) -> ValueError:
        return ValueError(f"{self.where}: {entry} must be {expected}; it is {value!r}")

    def text(self, value, entry: str, example: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.bad(entry, f"a string, e.g. {example}", value)
        return value

    def number(self, value, entry: str, example: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise self.bad(entry, f"a whole number above 0, e.g. {example}", value)
        return value

    def texts(self, value, entry: str, example: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.bad(entry, f"a list of strings, e.g. {example}", value)
        return tuple(value)

    def table(self, value, entry: str, keys: set[str], required: set[str], example: str):
        if not isinstance(value, dict):
            raise self.bad(entry, f"a table, e.g. {example}", value)
        unknown, missing = set(value) - keys, required - set(value)
        if unknown or missing:
            raise ValueError(f"{self.where}: {entry} "
                             + (f"has unknown keys {sorted(unknown)} " if unknown else "")
                             + (f"lacks {sorted(missing)} " if missing else "")
                             + f"(its keys: {', '.join(sorted(keys))}; e.g. {example})")
        return value


_SESSION_KEYS = {"week", "parts", "before", "after", "discuss", "assign", "read"}
_TOP_KEYS = {"minutes", "expected_assignments", "further", "outcomes", "session"}


def _session(read: _Reader, value, entry: str) -> Session:
    value = read.table(value, entry, _SESSION_KEYS, _SESSION_KEYS - {"read"},
                       'week = 1, parts = [["01_intuition", "Exercises", 20]], '
                       'before = "before_1", after = "after_1", discuss = [], assign = []')
    part_example = '["01_intuition", "Exercises", 20]'
    if not isinstance(value["parts"], list) or not value["parts"]:
        raise read.bad(f"{entry}, parts", "a list of [chapter page, section heading, minutes], "
                       f"e.g. [{part_example}]", value["parts"])
    parts = []
    for number, part in enumerate(value["parts"], start=1):
        where = f"{entry}, parts[{number}]"
        if not isinstance(part, list) or len(part) != 3:
            raise read.bad(where, f"[chapter page, section heading, minutes], e.g. {part_example}",
                           part)
        parts.append((read.text(part[0], f"{where}'s chapter page", '"01_intuition"'),
                      read.text(part[1], f"{where}'s section heading", '"Exercises"'),
                      read.number(part[2], f"{where}'s minutes", "20")))
    section = None
    if "read" in value:
        section = read.texts(value["read"], f"{entry}, read",
                             '["02_scaling", "Large scores saturate softmax"]')
        if len(section) != 2:
            raise read.bad(f"{entry}, read", 'one [chapter page, section heading], e.g. '
                           '["02_scaling", "Large scores saturate softmax"]', value["read"])
    return Session(read.number(value["week"], f"{entry}, week", "1"), tuple(parts),
                   read.text(value["before"], f"{entry}, before", '"before_1"'),
                   read.text(value["after"], f"{entry}, after", '"after_1"'),
                   read.texts(value["discuss"], f"{entry}, discuss", '["discuss:ch1.apple"]'),
                   read.texts(value["assign"], f"{entry}, assign",
                              '["ch1.my_softmax", "assignment:02_mha_torch"]'), section)


def load(path: Path = PLAN_FILE) -> Plan:
    """The plan in ``path``. A value of the wrong shape raises ValueError naming the file, the
    entry and what to write there."""
    read = _Reader(_shown(path))
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{read.where}: not valid TOML ({error})") from None
    data = read.table(data, "the file", _TOP_KEYS, _TOP_KEYS,
                      "minutes = 90, expected_assignments = [], further = [], [outcomes], "
                      "[[session]]")
    outcomes = {}
    for page, mapped in read.table(data["outcomes"], "[outcomes]", set(data["outcomes"]), set(),
                                   '01_intuition = [["ch1.softmax_row"]]').items():
        if not isinstance(mapped, list):
            raise read.bad(f"[outcomes] {page}", 'one list per outcome, e.g. '
                           '[["ch1.softmax_row", "discuss:ch1.apple"], ["discuss:ch1.qkv"]]',
                           mapped)
        outcomes[page] = tuple(read.texts(items, f"[outcomes] {page}, outcome {number}",
                                          '["ch1.softmax_row", "discuss:ch1.apple"]')
                               for number, items in enumerate(mapped, start=1))
    sessions = data["session"]
    if not isinstance(sessions, list) or not sessions:
        raise read.bad("[[session]]", "one [[session]] table per session", sessions)
    return Plan(outcomes, tuple(_session(read, value, f"[[session]] {number}")
                                for number, value in enumerate(sessions, start=1)),
                read.number(data["minutes"], "minutes", "90"),
                read.texts(data["expected_assignments"], "expected_assignments",
                           '["05_scaling"]'),
                read.texts(data["further"], "further", '["10_beyond"]'), read.where)


@cache
def plan() -> Plan:
    """The book's plan (``book/site/teachers_plan.toml``)."""
    return load()


# --- reading the notebooks and the catalogues -------------------------------------------------

@cache
def _cells(page: str) -> tuple[dict, ...]:
    path = CHAPTER_DIR / f"{page}.ipynb"
    if not path.is_file():
        raise ValueError(f"no chapter notebook {path}: {_shown(PLAN_FILE)} names the pages of "
                         "book.chapters.CHAPTERS")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return tuple({"type": c["cell_type"], "source": "".join(c["source"])} for c in cells)


def _markdown(page: str) -> list[str]:
    return [c["source"] for c in _cells(page) if c["type"] == "markdown"]


def title(page: str) -> str:
    """The chapter's title: the notebook's first ``# `` heading."""
    for text in _markdown(page):
        for line in text.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    raise ValueError(f"chapters/{page}.ipynb has no '# ' title")


def outcomes(page: str) -> list[str]:
    """The bullets under "After this chapter you will be able to", each joined to one line
    (as the gettext catalogues store them)."""
    for text in _markdown(page)[:3]:
        lines = text.splitlines()
        if OUTCOMES_LEAD not in lines:
            continue
        items: list[str] = []
        for line in lines[lines.index(OUTCOMES_LEAD) + 1:]:
            if line.startswith("- "):
                items.append(line[2:].strip())
            elif items and line.startswith("  ") and line.strip():
                items[-1] += " " + line.strip()
            elif items:
                break
        return items
    raise ValueError(f"chapters/{page}.ipynb has no {OUTCOMES_LEAD!r} list in its first cells")


def sections(page: str) -> list[str]:
    """Every ``##`` and ``###`` heading of the notebook, in order."""
    return [line.lstrip("#").strip() for text in _markdown(page)
            for line in text.splitlines() if re.match(r"#{2,3} ", line)]


def exercises(page: str) -> list[str]:
    """The exercise keys the notebook checks (``check("ch2.variance", …)``), in order."""
    found: list[str] = []
    for cell in _cells(page):
        if cell["type"] == "code":
            for key in re.findall(r"""check\(\s*["']([\w.]+)["']""", cell["source"]):
                if key not in found:
                    found.append(key)
    return found


FACT_CHECK = re.compile(r"^:::\{admonition\} (Fact check: .+)$", re.M)


def fact_checks(page: str) -> list[tuple[str, str]]:
    """(section heading, admonition title) of every "Fact check" in the notebook."""
    found, section = [], title(page)
    for text in _markdown(page):
        for line in text.splitlines():
            if re.match(r"#{2,3} ", line):
                section = line.lstrip("#").strip()
            elif match := FACT_CHECK.match(line):
                found.append((section, match.group(1).strip()))
    return found


def assignments() -> list[str]:
    """The instructor notebooks' stems in ``assignments/``."""
    return sorted(p.stem for p in ASSIGNMENT_DIR.glob("*.ipynb"))


@cache
def _catalogue(page: str) -> dict[str, str]:
    from babel.messages.pofile import read_po

    path = CATALOGUES / f"{page}.po"
    if not path.is_file():
        return {}
    with path.open("rb") as handle:
        catalog = read_po(handle)
    return {m.id: m.string for m in catalog if m.id and isinstance(m.id, str) and m.string
            and not m.fuzzy}


def translated(page: str, text: str, language: str) -> str:
    """``text`` (a message of the page: a title, heading or outcome) in ``language``: the
    Chinese from the page's catalogue, the English when it has none yet."""
    i18n.check_language(language)
    if language == "en":
        return text
    return _catalogue(page).get(text, text)


# --- checking the plan against the book -------------------------------------------------------

def known(item: str, keys: set[str], the_plan: Plan | None = None) -> bool:
    """Whether ``item`` names something that exists (or an expected assignment)."""
    the_plan = the_plan or plan()
    if item.startswith(Q):
        return f"guide.q_{item[len(Q):].replace('.', '_')}" in i18n.table()
    if item.startswith(A):
        return item[len(A):] in assignments() or item[len(A):] in the_plan.expected_assignments
    return item in keys


def present(item: str) -> bool:
    """Whether ``item`` can be handed out now (an expected assignment may not exist yet)."""
    return not item.startswith(A) or item[len(A):] in assignments()


def problems(chapters: ModuleType, the_plan: Plan | None = None) -> list[str]:
    """What is wrong with the plan (empty when nothing is), each naming the file, the entry and
    what to write: an outcome with nothing that practises it, a name that does not exist, a
    section the plan names that the chapter does not have, a session over its minutes.
    ``chapters`` is ``book.chapters``."""
    the_plan = the_plan or plan()
    keys, found, where = set(chapters.exercises()), [], the_plan.where
    pages = [c.page for c in chapters.CHAPTERS]
    if set(the_plan.outcomes) != set(pages):
        found.append(f"{where}: [outcomes] lists {sorted(the_plan.outcomes)}; write one line "
                     f"per chapter page of book.chapters.CHAPTERS: {pages}")
    for page in pages:
        listed = outcomes(page)
        mapped = the_plan.outcomes.get(page, ())
        if len(mapped) != len(listed):
            found.append(f"{where}: [outcomes] {page} has {len(mapped)} lists, "
                         f"chapters/{page}.ipynb {len(listed)} outcomes: write one list per "
                         "outcome, in the notebook's order")
        for number, (text, items) in enumerate(zip(listed, mapped, strict=False), start=1):
            entry = f"{where}: [outcomes] {page}, outcome {number}"
            found += [f"{entry}: {item!r} does not exist; write {ITEM_HELP}"
                      for item in items if not known(item, keys, the_plan)]
            if not [i for i in items if known(i, keys, the_plan) and present(i)]:
                found.append(f"{entry} ({text[:50]}…) maps to no exercise, question or "
                             f"assignment that exists; add {ITEM_HELP}")
    for number, session in enumerate(the_plan.sessions, start=1):
        entry = f"{where}: [[session]] {number}"
        used = sum(minutes for *_, minutes in session.parts)
        if used > the_plan.minutes:
            found.append(f"{entry} plans {used} minutes, more than minutes = "
                         f"{the_plan.minutes}: shorten or drop a part")
        for page, section in [part[:2] for part in session.parts] + \
                ([session.read] if session.read else []):
            if page not in pages:
                found.append(f"{entry}: no chapter {page!r}; write a page of "
                             f"book.chapters.CHAPTERS: {pages}")
            elif section not in sections(page):
                found.append(f"{entry}: chapters/{page}.ipynb has no section {section!r}; "
                             "write one of its '## ' or '### ' headings as it is written there")
        found += [f"{entry}: {item!r} does not exist; write {ITEM_HELP}"
                  for item in (*session.discuss, *session.assign)
                  if not known(item, keys, the_plan)]
        found += [f"{entry}: no string guide.{msg}; add [{msg}] with en = … and zh = … to "
                  "book/strings/guide.toml" for msg in (session.before, session.after)
                  if f"guide.{msg}" not in i18n.table()]
    found += [f"{where}: further names {page!r}, not a chapter; write a page of "
              "book.chapters.CHAPTERS" for page in the_plan.further if page not in pages]
    return found


def order_problems(chapters: ModuleType, draws_on: dict[str, tuple[str, ...]],
                   the_plan: Plan | None = None) -> list[str]:
    """Where the plan goes against the book's order (empty when nowhere): a chapter used (a
    part, or the section read before the session) before a page it says to read first
    (``Chapter.needs``, book.chapters.PATH) is used; an assignment handed out before a chapter
    it draws on (``draws_on``: stem -> pages, book.classroom's ``Assignment.draws_on``) is
    used, or one that the plan never uses; a chapter page neither in a session nor in
    ``further``. A chapter counts as taught from its first part or reading on; the reading
    comes before the session's parts, the hand-out after them."""
    the_plan = the_plan or plan()
    where, found = the_plan.where, []
    first: dict[str, tuple[int, int]] = {}   # page -> (session, step) of its first use
    for number, session in enumerate(the_plan.sessions, start=1):
        uses = ([(0, session.read[0])] if session.read else []) + \
            [(step, page) for step, (page, *_) in enumerate(session.parts, start=1)]
        for step, page in uses:
            first.setdefault(page, (number, step))

    def when(at: tuple[int, int]) -> str:
        return f"[[session]] {at[0]}" + (", read before" if at[1] == 0 else f", parts[{at[1]}]")

    for page, at in sorted(first.items(), key=lambda item: item[1]):
        for need in chapters.chapter(page).needs:
            if need not in first:
                found.append(f"{where}: {when(at)} uses chapters/{page}.ipynb, which says to "
                             f"read {need} first, and no session uses {need}: put a part or "
                             "the reading of it in this session or an earlier one")
            elif first[need] > at:
                found.append(f"{where}: {when(at)} uses chapters/{page}.ipynb, which says to "
                             f"read {need} first, but {need} comes only at {when(first[need])}")
    for number, session in enumerate(the_plan.sessions, start=1):
        for item in session.assign:
            if not item.startswith(A) or item[len(A):] not in draws_on:
                continue
            for page in draws_on[item[len(A):]]:
                if page not in first:
                    found.append(f"{where}: [[session]] {number} hands out {item!r}, which "
                                 f"draws on {page}, and no session uses {page}: teach it "
                                 "first or leave the assignment out")
                elif first[page][0] > number:
                    found.append(f"{where}: [[session]] {number} hands out {item!r}, which "
                                 f"draws on {page}, before {page} is taught "
                                 f"({when(first[page])}): hand it out after that session")
    found += [f"{where}: chapters/{c.page}.ipynb is in no session and not in further: plan "
              "it or name it in further" for c in chapters.CHAPTERS
              if c.page not in first and c.page not in the_plan.further]
    found += [f"{where}: further names {page}, which [[session]] {first[page][0]} uses: take "
              "it out of further" for page in the_plan.further if page in first]
    return found


def coverage(chapters: ModuleType) -> dict:
    """Counts for the guide and the report: outcomes, how many have an exercise, a question,
    an assignment (present now), and the chapter exercises no outcome names."""
    keys = set(chapters.exercises())
    out = {"outcomes": 0, "with_exercise": 0, "with_question": 0, "with_assignment": 0,
           "covered": 0, "unmapped_exercises": []}
    for page, mapped in plan().outcomes.items():
        for items in mapped:
            items = [i for i in items if known(i, keys) and present(i)]
            out["outcomes"] += 1
            out["with_exercise"] += any(not i.startswith((Q, A)) for i in items)
            out["with_question"] += any(i.startswith(Q) for i in items)
            out["with_assignment"] += any(i.startswith(A) for i in items)
            out["covered"] += bool(items)
        named = {i for items in mapped for i in items}
        out["unmapped_exercises"] += [k for k in exercises(page) if k not in named]
    return out


def questions() -> list[str]:
    """Every question the outcomes and the sessions name, numbered in this order in the
    guide."""
    seen: list[str] = []
    for mapped in plan().outcomes.values():
        for items in mapped:
            seen += [i for i in items if i.startswith(Q) and i not in seen]
    for session in plan().sessions:
        seen += [i for i in session.discuss if i not in seen]
    return seen
