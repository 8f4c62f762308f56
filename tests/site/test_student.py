"""The student edition (``make book-student``, ``BOOK_STUDENT=1``): no worked solution in the
pages or the downloadable notebooks, every exercise still there and run (book/site/student.py)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from conftest import CHAPTERS

from book.kit import i18n
from book.site import student

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters"


def _cells(path: Path) -> list[dict]:
    return [{**c, "source": "".join(c["source"]) if isinstance(c["source"], list)
             else c["source"]} for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]


def _exercise_keys(cells) -> list[str]:
    return sorted({k for c in cells if c["cell_type"] == "code" and not student.is_solution(c)
                   for k in re.findall(r"""check\(\s*["']([\w.]+)["']""", c["source"])})


def _solution_lines(cells) -> set[str]:
    """The lines of the worked solutions that appear nowhere else in the notebook, nor in the
    book's own code (which pages print with show_source): what must not reach a student."""
    others = "\n".join(c["source"] for c in cells if not student.is_solution(c))
    others += "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "book").rglob("*.py"))
    return {line.strip() for c in cells if student.is_solution(c)
            for line in c["source"].splitlines()
            if len(line.strip()) >= 12 and line.strip() not in others}


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_folds_its_solutions_where_the_switch_finds_them(notebook):
    cells = _cells(notebook)
    solutions = [c for c in cells if student.is_solution(c)]
    assert solutions, f"{notebook.name}: no '# Solution' cell"
    for cell in solutions:
        assert "hide-cell" in cell["metadata"].get("tags", []), (notebook.name, cell.get("id"))
    # nothing else that looks like a solution escapes the rule
    assert not [c for c in cells if not student.is_solution(c) and "# Solution" in c["source"]]


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_strip_notebook_removes_the_solutions_and_keeps_everything_else(notebook):
    text = notebook.read_text(encoding="utf-8")
    before = _cells(notebook)
    stripped, replaced = student.strip_notebook(text, "en")
    after = _cells_from_text(stripped)
    assert replaced == sum(student.is_solution(c) for c in before) > 0
    assert len(after) == len(before)
    assert not [c for c in after if student.is_solution(c)]
    assert _exercise_keys(after) == _exercise_keys(before) and _exercise_keys(after)
    kept = [c for c in before if not student.is_solution(c)]
    assert [c for c in after if not c["id"].endswith("-withheld")] == kept
    leaked = [line for line in _solution_lines(before) if line in stripped]
    assert not leaked, leaked
    note = i18n.table()["guide.solution_withheld"]["zh"]
    assert student.strip_notebook(text, "zh")[0].count(note) == replaced
    served, _ = student.strip_notebook(text, "zh", prose=True)
    assert "folded below" not in served
    assert ("folded below" in text) == (i18n.table()["guide.solutions_left_out"]["en"] in served)


def _cells_from_text(text: str) -> list[dict]:
    return [{**c, "source": "".join(c["source"]) if isinstance(c["source"], list)
             else c["source"]} for c in json.loads(text)["cells"]]


def test_the_promise_of_a_folded_solution_is_replaced_in_both_editions():
    """Every sentence of the chapters (English) and of their catalogues (Chinese) that says a
    solution is folded below is one the student edition rewrites."""
    from babel.messages.pofile import read_po

    english = [c["source"] for nb in CHAPTERS for c in _cells(nb) if c["cell_type"] == "markdown"
               and "folded below" in c["source"]]
    chinese = []
    for po in sorted(CATALOGUES.glob("*.po")):
        with po.open("rb") as handle:
            chinese += [m.string for m in read_po(handle) if m.id and "folded below" in m.id]
    assert len(english) >= 8 and len(chinese) == len(english)
    for language, texts in (("en", english), ("zh", chinese)):
        replacement = i18n.table()["guide.solutions_left_out"][language]
        for text in texts:
            new = student.without_promise(text, language)
            assert replacement in new, (language, text)
            assert "folded below" not in new and "折叠" not in new, (language, new)


def test_a_promise_over_two_lines_of_a_paragraph_is_rewritten():
    """MyST keeps a soft line break as a Text node of its own (chapter 1's sentence)."""
    from docutils import nodes

    paragraph = nodes.paragraph("", "", nodes.Text("Replace "), nodes.literal("...", "..."),
                                nodes.Text(" and run the cell. The worked solution"),
                                nodes.Text("\n"), nodes.Text("is folded below each one."))
    assert student.rewrite_paragraph(paragraph, "en")
    text = paragraph.astext()
    assert "folded" not in text and i18n.table()["guide.solutions_left_out"]["en"] in text
    assert text.startswith("Replace ...") and paragraph.children[1].astext() == "..."
    assert not student.rewrite_paragraph(nodes.paragraph("", "Nothing here."), "en")


def test_the_switch_reads_only_0_or_1(monkeypatch):
    monkeypatch.setenv(student.ENV, "1")
    assert student.enabled()
    monkeypatch.setenv(student.ENV, "0")
    assert not student.enabled()
    monkeypatch.setenv(student.ENV, "yes")
    with pytest.raises(ValueError, match="BOOK_STUDENT must be 1"):
        student.enabled()
    with pytest.raises(ValueError, match="not a notebook"):
        student.strip_notebook("{}")


# --- the built student edition ----------------------------------------------------------------

def _page_text(path: Path) -> str:
    """What a reader can read on a page: tags dropped, entities decoded."""
    raw = path.read_text(encoding="utf-8")
    raw = re.sub(r"<script\b.*?</script>", " ", raw, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


# The student edition's build (a third execution of every notebook, issue 24's): make test-all
# and CI build and check it; the unit tests above run in make quick and make test.
@pytest.mark.slow
@pytest.mark.extended
def test_the_student_edition_builds_without_warnings(built_student):
    assert built_student["returncode"] == 0, built_student["log"][-4000:]
    assert built_student["warnings"] == 0, built_student["log"][-4000:]
    print(f"\nstudent edition, cold build: {built_student['seconds']:.1f} s, 0 warnings")


@pytest.mark.slow
@pytest.mark.extended
def test_the_student_edition_has_no_worked_solution_and_every_exercise(built_student):
    out = built_student["html"]
    note = i18n.table()["guide.solution_withheld"]["en"].strip("*")
    found_keys = withheld = 0
    for notebook in CHAPTERS:
        cells = _cells(notebook)
        page = out / "chapters" / f"{notebook.stem}.html"
        text = _page_text(page)
        leaked = sorted(line for line in _solution_lines(cells) if line in text)
        assert not leaked, f"{page.name} shows solution code: {leaked[:3]}"
        assert "# Solution" not in text, page.name
        assert "folded below" not in text, page.name
        for key in _exercise_keys(cells):
            assert f'"{key}"' in text, f"{page.name}: exercise {key} is missing"
            found_keys += 1
        # the grep sees code: every line of the exercise cells is found the same way
        for cell in cells:
            if cell["cell_type"] == "code" and "check(" in cell["source"] \
                    and not student.is_solution(cell):
                for line in cell["source"].splitlines():
                    assert line.strip() in text, (page.name, line)
        solutions = sum(student.is_solution(c) for c in cells)
        assert text.count(note) == solutions, page.name
        withheld += solutions
        # each exercise cell ran: its check printed "not answered yet" under it
        todo = i18n.table()["common.todo_ellipsis"]["en"]
        assert text.count(todo) + text.count(i18n.table()["common.todo_none"]["en"]) >= 1
        # the notebook the download button serves
        served = out / "_sources" / "chapters" / f"{notebook.stem}.ipynb"
        served_cells = _cells(served)
        assert not [c for c in served_cells if student.is_solution(c)], served
        assert "folded below" not in served.read_text(encoding="utf-8"), served
        assert _exercise_keys(served_cells) == _exercise_keys(cells)
    everything = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".html", ".ipynb",
                                                                             ".js", ".txt")]
    marked = [p.name for p in everything if "# Solution" in p.read_text(encoding="utf-8",
                                                                          errors="replace")]
    assert not marked, marked
    print(f"\nstudent edition: {len(CHAPTERS)} chapters, {found_keys} exercises present, "
          f"{withheld} worked solutions withheld, 0 '# Solution' in {len(everything)} files")


@pytest.mark.parametrize("notebook", CHAPTERS[:3], ids=lambda p: p.stem)
def test_the_chinese_download_loses_its_solutions_too(notebook):
    """The Chinese edition's download button serves the notebook generated from the catalogues,
    whose solution comments are translated ("# 解答：…"): the student build strips those too."""
    from book.site import nbfiles, zh_notebooks

    english = json.loads(notebook.read_text(encoding="utf-8"))
    solutions = sum(student.is_solution(cell) for cell in english["cells"])
    assert solutions >= 1, f"{notebook.name}: no solution cell to test with"
    import nbformat

    chinese = nbfiles.as_jupyterlab_saves(nbformat.writes(zh_notebooks.chinese_notebook(
        f"chapters/{notebook.stem}")))
    assert sum(student.is_solution(c) for c in json.loads(chinese)["cells"]) == solutions
    stripped, replaced = student.strip_notebook(chinese, "zh", prose=True)
    assert replaced == solutions
    assert not any(student.is_solution(c) for c in json.loads(stripped)["cells"])
    assert "解答：" not in stripped
