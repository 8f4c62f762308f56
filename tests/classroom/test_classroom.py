"""Assignments: generation, the student bundle, grading offline in the sandbox, and agreement
with the book's own exercises."""

from __future__ import annotations

import csv
import shutil
import zipfile

import nbformat
import numpy as np
import pytest
import torch

from book import classroom
from book.face import checks

pytestmark = pytest.mark.slow
STEMS = ("01_attention_numpy", "02_mha_torch", "03_kv_cache", "04_gqa")


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return classroom.generate(tmp_path_factory.mktemp("assignments"))


@pytest.fixture(scope="module")
def graded(generated, tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    classroom.fake_submissions(generated, folder)
    csv_path = folder.parent / "grades.csv"
    rows = classroom.grade(folder, csv_path, progress=False)
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


def test_every_assignment_and_the_bundle_are_generated(generated):
    assert set(generated) == set(STEMS)
    for paths in generated.values():
        assert paths["student"].is_file() and paths["solutions"].is_file()
        assert sorted(p.stem for p in paths["tests"].glob("q*.py"))
    bundle = next(iter(generated.values()))["student"].parents[1]
    with zipfile.ZipFile(bundle.parent / "student-bundle.zip") as z:
        names = set(z.namelist())
    for stem in STEMS:
        assert f"attention-assignments/{stem}/{stem}.ipynb" in names
    assert {"attention-assignments/README.md", "attention-assignments/requirements.txt"} <= names


def test_the_bundle_holds_no_solution_no_hidden_case_and_no_book_code(generated):
    bundle = next(iter(generated.values()))["student"].parents[1]
    text = {p: p.read_text(encoding="utf-8") for p in bundle.rglob("*") if p.is_file()
            and "__pycache__" not in p.parts}
    everything = "\n".join(text.values())
    for stem in STEMS:
        secrets = solution_lines(classroom.SOURCES / f"{stem}.ipynb")
        assert secrets, f"{stem}: the scan found nothing to look for"
        leaked = [s for s in secrets if s in everything]
        assert not leaked, f"{stem}: solution code in the bundle: {leaked}"
    assert "BEGIN SOLUTION" not in everything and "hidden: true" not in everything
    assert "from book" not in everything and "import book" not in everything
    requirements = (bundle / "requirements.txt").read_text()
    assert "-e" not in requirements.split() and "attention-book" not in requirements
    assert not list(bundle.rglob("*.py")) or all(p.parent.name == "tests"
                                                 for p in bundle.rglob("*.py"))


def test_full_partial_blank_scores(graded):
    rows, csv_path = graded
    totals = {}
    for r in rows:
        assert r["status"] == "graded", r
        stem, kind = r["submission"].removesuffix(".ipynb").split("__")
        s = totals.setdefault((stem, kind), [0.0, 0.0])
        s[0] += r["score"]
        s[1] += r["possible"]
    for stem in STEMS:
        full, partial, blank = (totals[(stem, k)] for k in ("full", "partial", "blank"))
        assert full[0] == full[1] > 0, (stem, full)
        assert 0 < partial[0] < partial[1], (stem, partial)
        assert blank[0] == 0, (stem, blank)
    with csv_path.open(encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(rows)


def test_broken_solution_fails_generation(tmp_path):
    """The public test only checks the mask's shape and dtype, so otter accepts the broken
    solution; grading it against the hidden cases in the sandbox does not."""
    src = tmp_path / "src"
    src.mkdir()
    nb = nbformat.read(classroom.SOURCES / "01_attention_numpy.ipynb", as_version=4)
    for cell in nb.cells:
        cell.source = cell.source.replace("np.tril(", "np.triu(")
    nbformat.write(nb, src / "01_attention_numpy.ipynb")
    with pytest.raises(classroom.AssignmentError, match="is every solution correct"):
        classroom.generate(tmp_path / "out", source_dir=src)


def test_the_bundle_works_outside_the_repository_and_under_another_name(generated, tmp_path):
    """A student's copy: the bundle folder elsewhere, the notebook renamed, real otter checks."""
    from nbclient import NotebookClient

    folder = tmp_path / "my copy"
    shutil.copytree(generated["01_attention_numpy"]["student"].parent, folder)
    (folder / "01_attention_numpy.ipynb").rename(folder / "homework of Ana.ipynb")
    nb = nbformat.read(folder / "homework of Ana.ipynb", as_version=4)
    solved = nbformat.read(generated["01_attention_numpy"]["solutions"], as_version=4)
    answers = {c.source.split("(")[0]: c.source for c in solved.cells
               if c.cell_type == "code" and c.source.startswith("def ")}
    for cell in nb.cells:
        head = cell.source.split("(")[0]
        if cell.cell_type == "code" and head in answers:
            cell.source = answers[head]
    NotebookClient(nb, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute()
    checks_run = [c for c in nb.cells if c.source.startswith("grader.check")]
    assert len(checks_run) == 3
    for cell in checks_run:
        text = str(cell.outputs)
        assert "passed" in text and "Error" not in text, text


# (assignment name, function the student writes, book exercise with the same contract)
SHARED = [("attention-01-numpy", "softmax", "ch1.my_softmax"),
          ("attention-02-mha-torch", "split_heads", "ch4.split_heads")]


@pytest.mark.parametrize("name,func,exercise", SHARED)
def test_book_exercises_and_assignments_agree(generated, name, func, exercise):
    """A chapter exercise and an assignment question that ask for the same function accept
    the same answers: the book's reference passes every case of the question (compared by
    the grader's own checks), and the assignment's solution passes the chapter's checker."""
    reference = checks.reference(exercise)
    cases = [c for c in classroom.ASSIGNMENTS[name].cases(seed=3) if c.function == func]
    assert cases
    for case in cases:
        args = [torch.from_numpy(a) if case.tensor_args and isinstance(a, np.ndarray) else a
                for a in case.args]
        out = reference(*args)
        out = out.numpy() if isinstance(out, torch.Tensor) else out
        assert case.check(out) is None, case.name
    stem = classroom.ASSIGNMENTS[name].stem
    namespace = {}
    solution = nbformat.read(generated[stem]["solutions"], as_version=4)
    for c in solution.cells:  # the imports, then the solution function itself
        if c.cell_type == "code" and (c.source.startswith(("import", "from"))
                                      or c.source.startswith(f"def {func}(")):
            exec(c.source, namespace)
    assert checks.check(exercise, namespace[func]).ok


def test_without_bubblewrap_grading_warns_and_still_scores_outside(generated, tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    shutil.copy2(generated["03_kv_cache"]["solutions"], folder / "full.ipynb")
    with pytest.warns(UserWarning, match="isolation is REDUCED"):
        rows = classroom.grade(folder, None, progress=False, force_fallback=True)
    assert [r["status"] for r in rows] == ["graded"] * 3
    assert sum(r["score"] for r in rows) == sum(r["possible"] for r in rows) == 30
