"""The teacher's guide page (book/site/teachers_guide.py): the plan and the tables drawn in both
editions from the plan's data (tests/site/test_teachers_plan.py checks the data itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

from book import chapters
from book.chapters import CHAPTERS
from book.site import teachers_guide as guide
from book.site import teachers_plan as plan

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_guide_renders_in_both_languages(language):
    table = guide.outcome_table(chapters, language)
    drawn = guide.plan_markdown(chapters, language)
    notes = guide.misconceptions(chapters, language)
    questions = guide.question_list(chapters, language)
    assert table.count("\n") > sum(len(plan.outcomes(c.page)) for c in CHAPTERS)
    for chapter in CHAPTERS:
        first = plan.outcomes(chapter.page)[0]
        shown = plan.translated(chapter.page, first, language)
        assert shown in table
        if language == "zh":
            assert shown != first, f"{chapter.page}: outcome 1 has no Chinese in its catalogue"
    for session in plan.plan().sessions:
        for page, section, _ in session.parts:
            name = plan.translated(page, section, language)
            assert name in drawn
            if language == "zh":
                assert name != section, f"{page}: {section!r} has no Chinese"
    assert questions.count("\n") == len(plan.questions())
    for chapter in CHAPTERS:
        for _, claim in plan.fact_checks(chapter.page):
            assert plan.translated(chapter.page, claim, language) in notes


def test_the_page_draws_each_part():
    text = (ROOT / "chapters" / "teachers_guide.md").read_text(encoding="utf-8")
    for name in guide.GENERATED:
        assert f"```{{book-markdown}} {name}\n```" in text, name
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "- book.site.teachers_guide" in config and "- book.chapters\n" in config
    assert text.index("## A two-week unit") < text.index("## Assignments you grade offline")


def test_the_outcome_table_lists_every_chapters_concept_questions():
    table = guide.outcome_table(chapters, "en")
    for chapter in CHAPTERS:
        asked = chapters.concept_questions(chapter.strings)
        assert len(asked) >= 3, f"{chapter.page}: {asked}"
        for key in asked:
            assert f"`{key}`" in table, key


def test_the_sphinx_hook_draws_with_the_chapter_list_the_build_loaded():
    """The directive's event is answered with the markdown and the files it read (the plan's
    file among them, so that an edit rebuilds the page); a name it does not draw is left to
    another extension."""
    class App:   # Sphinx's app as the hook sees it: its loaded extensions
        extensions = {guide.CHAPTERS_EXTENSION: type("Extension", (), {"module": chapters})}

    text, files = guide._markdown_for(App, "unit-plan", "zh")
    assert text == guide.plain_math(guide.plan_markdown(chapters, "zh"))
    assert plan.PLAN_FILE in files and ROOT / "chapters" / "01_intuition.ipynb" in files
    assert any(p.suffix == ".po" for p in files)
    assert guide._markdown_for(App, "no-such-part", "en") is None


def test_plain_math_writes_the_outcomes_math_as_characters():
    assert guide.plain_math(r"scale by $\sqrt{d_k}$, not $d_k$") == "scale by √d_k, not d_k"
    assert guide.plain_math(r"costs \$5 and $5") == r"costs \$5 and $5"
