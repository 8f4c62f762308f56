"""The teacher's guide's plan as data (book/site/teachers_plan.toml, book/site/teachers_plan.py):
every chapter outcome is practised by something that exists, the two-week plan names only
chapters and sections the book has, and a broken file is reported naming the file, the entry
and what to write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from book import chapters
from book.chapters import CHAPTERS, exercises
from book.site import teachers_plan as plan

ROOT = Path(__file__).resolve().parents[2]
WHERE = "book/site/teachers_plan.toml"


def _notebook_markdown(page: str) -> str:
    cells = json.loads((ROOT / "chapters" / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the plan file with ``old`` (once in it) written as ``new``."""
    text = plan.PLAN_FILE.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path = tmp_path / "teachers_plan.toml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_the_plan_has_no_problems():
    assert plan.problems(chapters) == []
    assert plan.plan().where == WHERE and plan.plan().minutes == 90


def test_every_outcome_of_every_chapter_maps_to_an_existing_exercise_question_or_assignment():
    """Read both sides here: the bullets under the notebook's "After this chapter…" and the
    file; every outcome has at least one item that exists now, and every item exists."""
    from book.kit import i18n

    keys = set(exercises())
    assignments = {p.stem for p in (ROOT / "assignments").glob("*.ipynb")}
    for chapter in CHAPTERS:
        text = _notebook_markdown(chapter.page)
        block = text.split(plan.OUTCOMES_LEAD, 1)[1].lstrip("\n").split("\n\n", 1)[0]
        bullets = re.findall(r"^- ", block, re.M)
        mapped = plan.plan().outcomes[chapter.page]
        assert len(mapped) == len(bullets), (chapter.page, len(bullets), len(mapped))
        for number, items in enumerate(mapped, start=1):
            present = []
            for item in items:
                if item.startswith(plan.Q):
                    msg = "guide.q_" + item[len(plan.Q):].replace(".", "_")
                    assert msg in i18n.table(), (chapter.page, number, item)
                    present.append(item)
                elif item.startswith(plan.A):
                    name = item[len(plan.A):]
                    assert name in assignments or name in plan.plan().expected_assignments, item
                    present += [item] if name in assignments else []
                else:
                    assert item in keys, (chapter.page, number, item)
                    present.append(item)
            assert present, f"{chapter.page}: outcome {number} maps to nothing that exists"


def test_the_plan_names_only_existing_chapters_and_sections():
    pages = {c.page for c in CHAPTERS}
    sessions = plan.plan().sessions
    for number, session in enumerate(sessions, start=1):
        assert sum(m for *_, m in session.parts) <= plan.plan().minutes, number
        for page, section, _minutes in (*session.parts, *([(*session.read, 0)]
                                                          if session.read else [])):
            assert page in pages, (number, page)
            headings = re.findall(r"^#{2,3} (.+)$", _notebook_markdown(page), re.M)
            assert section in [h.strip() for h in headings], (number, page, section)
    assert len(sessions) >= 4 and {s.week for s in sessions} == {1, 2}


def test_coverage_counts_every_outcome():
    counts = plan.coverage(chapters)
    total = sum(len(plan.outcomes(c.page)) for c in CHAPTERS)
    assert counts["outcomes"] == total and counts["covered"] == total
    print(f"\n{counts}")


# --- a broken copy of the file is reported, naming the file, the entry and what to write -------

def test_a_broken_outcome_is_reported(tmp_path):
    path = _broken(tmp_path, '    ["ch2.variance", "assignment:05_scaling"],',
                   '    [],\n    ["ch2.no_such_key"],')
    found = "\n".join(plan.problems(chapters, plan.load(path)))
    assert f"{tmp_path}/teachers_plan.toml: [outcomes] 02_scaling has 4 lists" in found
    assert "[outcomes] 02_scaling, outcome 1 (" in found and "maps to no exercise" in found
    assert "[outcomes] 02_scaling, outcome 2: 'ch2.no_such_key' does not exist; write " \
           "an exercise key" in found, found


def test_an_outcome_only_an_expected_assignment_covers_is_not_covered(tmp_path):
    """An assignment announced in expected_assignments exists as a name, but covers nothing
    until its notebook is in assignments/."""
    path = _broken(tmp_path, '    ["ch2.variance", "assignment:05_scaling"],',
                   '    ["assignment:99_future"],')
    text = path.read_text(encoding="utf-8").replace('expected_assignments = [',
                                                    'expected_assignments = ["99_future", ')
    path.write_text(text, encoding="utf-8")
    found = plan.problems(chapters, plan.load(path))
    assert len(found) == 1 and "[outcomes] 02_scaling, outcome 1 (" in found[0], found
    assert "does not exist" not in found[0]


def test_a_session_naming_a_missing_section_is_reported(tmp_path):
    path = _broken(tmp_path, '["01_intuition", "Why several heads", 20]',
                   '["01_intuition", "No such section", 20]')
    found = plan.problems(chapters, plan.load(path))
    assert found == [f"{tmp_path}/teachers_plan.toml: [[session]] 1: chapters/01_intuition.ipynb "
                     "has no section 'No such section'; write one of its '## ' or '### ' "
                     "headings as it is written there"], found


def test_a_session_over_its_minutes_is_reported(tmp_path):
    path = _broken(tmp_path, '["01_intuition", "Why several heads", 20]',
                   '["01_intuition", "Why several heads", 21]')
    assert plan.problems(chapters, plan.load(path)) == [
        f"{tmp_path}/teachers_plan.toml: [[session]] 1 plans 91 minutes, more than minutes = "
        "90: shorten or drop a part"]


@pytest.mark.parametrize("old, new, message", [
    ('["01_intuition", "Why several heads", 20]', '["01_intuition", "Why several heads"]',
     "[[session]] 1, parts[4] must be [chapter page, section heading, minutes], e.g. "
     '["01_intuition", "Exercises", 20]; it is [\'01_intuition\', \'Why several heads\']'),
    ('["01_intuition", "Why several heads", 20]', '["01_intuition", "Why several heads", "20"]',
     "[[session]] 1, parts[4]'s minutes must be a whole number above 0, e.g. 20; it is '20'"),
    ('after = "after_2"', 'after = ["after_2"]',
     "[[session]] 2, after must be a string, e.g. \"after_1\"; it is ['after_2']"),
    ('after = "after_2"', 'afterwards = "after_2"',
     "[[session]] 2 has unknown keys ['afterwards'] lacks ['after'] (its keys: "),
    ('    ["discuss:ch1.apple"],', '    "discuss:ch1.apple",',
     "[outcomes] 01_intuition, outcome 2 must be a list of strings, e.g. "
     '["ch1.softmax_row", "discuss:ch1.apple"]; it is \'discuss:ch1.apple\''),
    ("minutes = 90", "minutes = 0", "minutes must be a whole number above 0, e.g. 90"),
    ("minutes = 90", "minutes = ", "not valid TOML (Invalid value (at line "),
])
def test_a_value_of_the_wrong_shape_stops_the_reading(tmp_path, old, new, message):
    path = _broken(tmp_path, old, new)
    with pytest.raises(ValueError) as error:
        plan.load(path)
    assert str(error.value).startswith(f"{path}: {message}"), str(error.value)
