"""Concept questions' options give nothing away (issue 48): the right option is not the
longest one, nor the shortest, in more than a third of a chapter's questions, nor of the
book's, in either language. A reader who has read nothing and picks the longest (or the
shortest) option should score no better than chance, not almost full marks."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from book.chapters import modules
from book.face import questions
from book.kit import i18n

LIMIT = Fraction(1, 3)   # the most a chapter's (or the book's) questions may give away
_MARKUP = re.compile(r"[`*$\\]")   # code spans, emphasis, maths: not what a reader sees
_SPACE = re.compile(r"\s+")


def visible_length(text: str) -> int:
    """How many characters of ``text`` the reader sees: markup stripped, whitespace collapsed."""
    return len(_SPACE.sub(" ", _MARKUP.sub("", text)).strip())


@pytest.fixture(scope="module")
def registry():
    modules()   # importing a chapter module registers its questions
    return questions.registered()


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.set_language("en")


def _tells(registry, language: str, extreme) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Per section: the questions whose right option is strictly the ``extreme`` (max or min)
    of its options' lengths (each as 'key [lengths, right one starred]'), and how many
    questions the section has."""
    i18n.set_language(language)
    tells: dict[str, list[str]] = {}
    totals: dict[str, int] = {}
    for key, q in sorted(registry.items()):
        lengths = [visible_length(text) for text, _ in q.options()]
        right = lengths[q.right - 1]
        others = lengths[:q.right - 1] + lengths[q.right:]
        totals[q.section] = totals.get(q.section, 0) + 1
        tells.setdefault(q.section, [])
        if extreme(right, *others) == right and right not in others:
            shown = ", ".join(f"*{n}*" if i == q.right else str(n)
                              for i, n in enumerate(lengths, start=1))
            tells[q.section].append(f"{key} [{shown}]")
    return tells, totals


@pytest.mark.parametrize("language", i18n.LANGUAGES)
@pytest.mark.parametrize("extreme,word", [(max, "longest"), (min, "shortest")])
def test_the_right_option_is_seldom_the_longest_or_shortest(registry, language, extreme, word):
    tells, totals = _tells(registry, language, extreme)
    told = sum(len(v) for v in tells.values())
    total = sum(totals.values())
    worst = max(tells, key=lambda s: Fraction(len(tells[s]), totals[s]))
    print(f"\n{language}: right option strictly the {word} in {told}/{total} questions; "
          f"worst chapter {worst}: {len(tells[worst])}/{totals[worst]}")
    problems = [f"{section}: {len(keys)}/{totals[section]} questions ({'; '.join(keys)})"
                for section, keys in tells.items()
                if Fraction(len(keys), totals[section]) > LIMIT]
    if Fraction(told, total) > LIMIT:
        problems.append(f"the book: {told}/{total} questions ("
                        + "; ".join(k for keys in tells.values() for k in keys) + ")")
    assert not problems, (
        f"in {language}, the right option is strictly the {word} (option lengths in visible "
        f"characters, the right one *starred*) in more than a third of the questions of:\n  "
        + "\n  ".join(problems)
        + "\nmake the wrong options as specific as the right one, or the right one more concise")
