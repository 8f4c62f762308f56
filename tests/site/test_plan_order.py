"""The teacher's plan (book/site/teachers_plan.toml) follows the book's order: no session uses a
chapter before the chapters it says to read first (book.chapters.PATH, the "read first" of the
learner's path and the chapter banners), no assignment goes out before the chapters it draws on
(book.classroom's ``Assignment.draws_on``) are taught, and no chapter is dropped silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from book import chapters
from book.classroom.assignments import ASSIGNMENTS
from book.site import teachers_plan as plan

DRAWS_ON = {a.stem: a.draws_on for a in ASSIGNMENTS.values()}


def _changed(tmp_path: Path, old: str, new: str) -> plan.Plan:
    """The plan with ``old`` (once in the file) written as ``new``."""
    text = plan.PLAN_FILE.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = tmp_path / "teachers_plan.toml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return plan.load(path)


def test_every_assignment_names_the_chapters_it_draws_on():
    pages = [c.page for c in chapters.CHAPTERS]
    assert set(DRAWS_ON) == set(plan.assignments())
    for stem, drawn in DRAWS_ON.items():
        assert drawn and set(drawn) <= set(pages), (stem, drawn)
        # the outcomes an assignment practises are outcomes of chapters it draws on
        for page, mapped in plan.plan().outcomes.items():
            if any(f"{plan.A}{stem}" in items for items in mapped):
                assert page in drawn, f"[outcomes] {page} names {stem}, which lacks {page}"


def test_the_plan_follows_the_chapters_read_first_and_the_assignments_chapters():
    assert plan.order_problems(chapters, DRAWS_ON) == []


@pytest.mark.parametrize("old, new, message", [
    # a chapter before the one it says to read first (05_stability needs 04b_toy_model)
    ('    ["04b_toy_model", "The model: embeddings, blocks, a classifier", 15],\n',
     '    ["04_pytorch", "Exercises", 15],\n',
     "[[session]] 5, read before uses chapters/05_stability.ipynb, which says to read "
     "04b_toy_model first, and no session uses 04b_toy_model"),
    # an assignment with masks handed out in week 1, before chapter 4 teaches them
    ('assign = ["assignment:05_scaling"]',
     'assign = ["assignment:05_scaling", "assignment:01_attention_numpy"]',
     "[[session]] 2 hands out 'assignment:01_attention_numpy', which draws on 04_pytorch, "
     "before 04_pytorch is taught ([[session]] 4, read before)"),
    # an assignment whose chapter the plan never teaches (the KV cache, chapter 9b)
    ('assign = ["ch6.js", "ch8.top_keys"]', 'assign = ["assignment:03_kv_cache"]',
     "[[session]] 6 hands out 'assignment:03_kv_cache', which draws on 09b_serving, and no "
     "session uses 09b_serving"),
    # a chapter read before the chapter it says to read first is taught (4 needs 3)
    ('read = ["03_walkthrough", "The set-up"]', 'read = ["04_pytorch", "One class, four matrices"]',
     "[[session]] 3, read before uses chapters/04_pytorch.ipynb, which says to read "
     "03_walkthrough first, but 03_walkthrough comes only at [[session]] 3, parts[1]"),
    # a chapter whose read-first chapter is left to further (11 needs 9b)
    ('    ["06_heads", "Choosing the number of heads", 10],\n',
     '    ["11_modern", "Attention cannot see order", 10],\n',
     "[[session]] 6, parts[3] uses chapters/11_modern.ipynb, which says to read 09b_serving "
     "first, and no session uses 09b_serving"),
])
def test_a_plan_out_of_order_is_reported(tmp_path, old, new, message):
    found = plan.order_problems(chapters, DRAWS_ON, _changed(tmp_path, old, new))
    assert any(f"{tmp_path}/teachers_plan.toml: {message}" in line for line in found), found


def test_a_chapter_left_out_without_a_word_is_reported(tmp_path):
    the_plan = _changed(tmp_path, '"08b_real_model", ', "")
    assert plan.order_problems(chapters, DRAWS_ON, the_plan) == [
        f"{tmp_path}/teachers_plan.toml: chapters/08b_real_model.ipynb is in no session and not "
        "in further: plan it or name it in further"]
