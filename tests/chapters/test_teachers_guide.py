"""The teacher's guide: every chapter outcome is practised by something that exists, and the
two-week plan names only chapters and sections the book has (book/chapters/teachers_guide.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from book.chapters import CHAPTERS, exercises
from book.chapters import teachers_guide as guide

ROOT = Path(__file__).resolve().parents[2]


def _notebook_markdown(page: str) -> str:
    cells = json.loads((ROOT / "chapters" / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def test_the_map_and_the_plan_have_no_problems():
    assert guide.problems() == []


def test_every_outcome_of_every_chapter_maps_to_an_existing_exercise_question_or_assignment():
    """Read both sides here: the bullets under the notebook's "After this chapter…" and the
    map; every outcome has at least one item that exists now, and every item exists."""
    keys = set(exercises())
    assignments = {p.stem for p in (ROOT / "assignments").glob("*.ipynb")}
    for chapter in CHAPTERS:
        text = _notebook_markdown(chapter.page)
        block = text.split(guide.OUTCOMES_LEAD, 1)[1].lstrip("\n").split("\n\n", 1)[0]
        bullets = re.findall(r"^- ", block, re.M)
        mapped = guide.OUTCOME_MAP[chapter.page]
        assert len(mapped) == len(bullets), (chapter.page, len(bullets), len(mapped))
        for number, items in enumerate(mapped, start=1):
            present = []
            for item in items:
                if item.startswith(guide.Q):
                    msg = "guide.q_" + item[len(guide.Q):].replace(".", "_")
                    from book.kit import i18n
                    assert msg in i18n.table(), (chapter.page, number, item)
                    present.append(item)
                elif item.startswith(guide.A):
                    name = item[len(guide.A):]
                    assert name in assignments or name in guide.EXPECTED_ASSIGNMENTS, item
                    present += [item] if name in assignments else []
                else:
                    assert item in keys, (chapter.page, number, item)
                    present.append(item)
            assert present, f"{chapter.page}: outcome {number} maps to nothing that exists"


def test_a_broken_map_is_reported(monkeypatch):
    broken = dict(guide.OUTCOME_MAP)
    first = broken["02_scaling"]
    broken["02_scaling"] = ((), ("ch2.no_such_key",), *first[2:])
    monkeypatch.setattr(guide, "OUTCOME_MAP", broken)
    found = "\n".join(guide.problems())
    assert "02_scaling outcome 1" in found and "maps to no exercise" in found
    assert "'ch2.no_such_key' does not exist" in found


def test_an_outcome_only_an_expected_assignment_covers_is_not_covered(monkeypatch):
    missing = [a for a in guide.EXPECTED_ASSIGNMENTS if a not in guide.assignments()]
    if not missing:
        pytest.skip("every expected assignment exists")
    broken = dict(guide.OUTCOME_MAP)
    broken["02_scaling"] = ((guide.A + missing[0],), *broken["02_scaling"][1:])
    monkeypatch.setattr(guide, "OUTCOME_MAP", broken)
    assert any("02_scaling outcome 1" in p for p in guide.problems())


def test_the_plan_names_only_existing_chapters_and_sections():
    pages = {c.page for c in CHAPTERS}
    for number, session in enumerate(guide.PLAN, start=1):
        assert sum(m for *_, m in session.parts) <= guide.MINUTES, number
        for page, section, _minutes in (*session.parts, *([(*session.read, 0)]
                                                          if session.read else [])):
            assert page in pages, (number, page)
            headings = re.findall(r"^#{2,3} (.+)$", _notebook_markdown(page), re.M)
            assert section in [h.strip() for h in headings], (number, page, section)
    assert len(guide.PLAN) >= 4 and {s.week for s in guide.PLAN} == {1, 2}


def test_a_plan_naming_a_missing_section_is_reported(monkeypatch):
    session = guide.PLAN[0]
    wrong = guide.Session(session.week, (("01_intuition", "No such section", 10),),
                          session.before, session.after, session.discuss, session.assign)
    monkeypatch.setattr(guide, "PLAN", (wrong, *guide.PLAN[1:]))
    assert any("no section 'No such section'" in p for p in guide.problems())


def test_coverage_counts_every_outcome():
    counts = guide.coverage()
    total = sum(len(guide.outcomes(c.page)) for c in CHAPTERS)
    assert counts["outcomes"] == total and counts["covered"] == total
    print(f"\n{counts}")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_guide_renders_in_both_languages(language):
    table = guide.outcome_table(language)
    plan = guide.plan_markdown(language)
    notes = guide.misconceptions(language)
    questions = guide.question_list(language)
    assert table.count("\n") > sum(len(guide.outcomes(c.page)) for c in CHAPTERS)
    for chapter in CHAPTERS:
        first = guide.outcomes(chapter.page)[0]
        shown = guide.translated(chapter.page, first, language)
        assert shown in table
        if language == "zh":
            assert shown != first, f"{chapter.page}: outcome 1 has no Chinese in its catalogue"
    for session in guide.PLAN:
        for page, section, _ in session.parts:
            name = guide.translated(page, section, language)
            assert name in plan
            if language == "zh":
                assert name != section, f"{page}: {section!r} has no Chinese"
    assert questions.count("\n") == len(guide.questions())
    for chapter in CHAPTERS:
        for _, claim in guide.fact_checks(chapter.page):
            assert guide.translated(chapter.page, claim, language) in notes


def test_the_page_draws_each_part():
    text = (ROOT / "chapters" / "teachers_guide.md").read_text(encoding="utf-8")
    for name in guide.GENERATED:
        assert f"```{{book-markdown}} {name}\n```" in text, name
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "- book.chapters.teachers_guide" in config
    assert text.index("## A two-week unit") < text.index("## Assignments you grade offline")


def test_the_outcome_table_lists_every_chapters_concept_questions():
    table = guide.outcome_table("en")
    for chapter in CHAPTERS:
        asked = guide.concept_questions(chapter.strings)
        assert len(asked) >= 3, f"{chapter.page}: {asked}"
        for key in asked:
            assert f"`{key}`" in table, key
