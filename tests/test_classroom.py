"""Assignments: generation, the student-notebook scan, grading offline, and agreement with the
book's own exercises."""

from __future__ import annotations

import ast
import csv
import shutil

import nbformat
import pytest

from book import checks, classroom

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return classroom.generate(tmp_path_factory.mktemp("assignments"))


@pytest.fixture(scope="module")
def graded(generated, tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    classroom.fake_submissions(generated, folder)
    csv_path = folder.parent / "grades.csv"
    rows = classroom.grade(folder, next(iter(generated.values()))["autograder"].parent,
                           csv_path, progress=False)
    return rows, csv_path


def solution_lines(source_nb) -> set[str]:
    """Non-trivial code lines between BEGIN/END SOLUTION markers of the instructor notebook."""
    lines, inside = set(), False
    for cell in nbformat.read(source_nb, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            if "# BEGIN SOLUTION" in line:
                inside = True
            elif "# END SOLUTION" in line:
                inside = False
            elif inside and len(line.strip()) > 12:
                lines.add(line.strip())
    return lines


def hidden_test_names(source_nb) -> set[str]:
    names = set()
    for cell in nbformat.read(source_nb, as_version=4).cells:
        if cell.cell_type == "code" and "hidden: true" in cell.source:
            tree = ast.parse(cell.source)
            names |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return names


def test_three_assignments_are_generated(generated):
    assert set(generated) == {"01_attention_numpy", "02_mha_torch", "03_kv_cache"}
    for paths in generated.values():
        assert all(p.is_file() for p in paths.values())


def test_student_notebooks_hold_no_solution_and_no_hidden_test(generated):
    for stem, paths in generated.items():
        source = classroom.SOURCES / f"{stem}.ipynb"
        secrets = solution_lines(source)
        hidden = hidden_test_names(source)
        assert secrets and hidden, f"{stem}: the scan found nothing to look for"
        text = paths["student"].read_text(encoding="utf-8")
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{stem}: solution code in the student notebook: {leaked}"
        assert "BEGIN SOLUTION" not in text and "hidden: true" not in text
        assert not [h for h in hidden if h in text], f"{stem}: hidden tests leaked"
        # the autograder, on the contrary, must carry the hidden tests
        import zipfile
        with zipfile.ZipFile(paths["autograder"]) as z:
            tests = "".join(z.read(n).decode() for n in z.namelist() if n.startswith("tests/"))
        assert all(h in tests for h in hidden)


def test_full_partial_blank_scores(graded):
    rows, csv_path = graded
    totals = {}
    for r in rows:
        stem, kind = r["submission"].removesuffix(".ipynb").split("__")
        s = totals.setdefault((stem, kind), [0.0, 0.0])
        s[0] += r["score"]
        s[1] += r["possible"]
    for stem in ("01_attention_numpy", "02_mha_torch", "03_kv_cache"):
        full, partial, blank = (totals[(stem, k)] for k in ("full", "partial", "blank"))
        assert full[0] == full[1] > 0, (stem, full)
        assert 0 < partial[0] < partial[1], (stem, partial)
        assert blank[0] == 0, (stem, blank)
    with csv_path.open(encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(rows)


def test_broken_solution_fails_generation(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    nb = nbformat.read(classroom.SOURCES / "01_attention_numpy.ipynb", as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("np.tril(", "np.triu(")
    nbformat.write(nb, src / "01_attention_numpy.ipynb")
    with pytest.raises(classroom.AssignmentError, match="is every solution correct"):
        classroom.generate(tmp_path / "out", source_dir=src)


# (assignment, function the student writes, book exercise with the same contract, question)
SHARED = [("01_attention_numpy", "softmax", "ch1.my_softmax", "q1_softmax"),
          ("02_mha_torch", "split_heads", "ch4.split_heads", "q1_split_heads")]


@pytest.mark.parametrize("stem,func,exercise,question", SHARED)
def test_book_exercises_and_assignments_agree(generated, tmp_path, stem, func, exercise,
                                              question):
    """A chapter exercise and an assignment question that ask for the same function accept
    the same answers: the book's reference earns full marks from the autograder, and the
    assignment's solution passes the chapter's checker."""
    nb = nbformat.read(generated[stem]["student"], as_version=4)
    [cell] = [c for c in nb.cells if c.source.startswith(f"def {func}(")]
    cell.source = f"from book import checks\n{func} = checks.reference({exercise!r})"
    folder = tmp_path / "subs"
    folder.mkdir()
    nbformat.write(nb, folder / "uses_book_reference.ipynb")
    rows = classroom.grade(folder, generated[stem]["autograder"].parent, None, progress=False)
    [row] = [r for r in rows if r["question"] == question]
    assert row["score"] == row["possible"] > 0
    namespace = {}
    solution = nbformat.read(generated[stem]["solutions"], as_version=4)
    for c in solution.cells:  # the imports, then the solution function itself
        if c.cell_type == "code" and (c.source.startswith(("import", "from"))
                                      or c.source.startswith(f"def {func}(")):
            exec(c.source, namespace)
    assert checks.check(exercise, namespace[func]).ok


def test_grade_bad_input(tmp_path, generated):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        classroom.grade(tmp_path / "missing", csv_path=None)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no .ipynb"):
        classroom.grade(empty, csv_path=None)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(classroom.SOURCES / "01_attention_numpy.ipynb", other / "x.ipynb")
    with pytest.raises(ValueError, match="no otter assignment name"):
        classroom.grade(other, generated["01_attention_numpy"]["autograder"].parent, None,
                        progress=False)
