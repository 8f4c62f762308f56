"""The grader's pieces that need no sandbox: the strict decoder of returned data, the checks
on submitted files, accounting for every file, the CSV's life cycle, points and limits."""

from __future__ import annotations

import contextlib
import io
import re
import zipfile
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest
from tolerance import assert_same_run

from book import classroom
from book.classroom import grading, runner, sandbox
from book.classroom.assignments import ASSIGNMENTS


def test_decode_round_trips_arrays_and_rejects_anything_else():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    back = runner.decode(runner.encode(x))
    assert_same_run(back, x, why="encode/decode round trip: bytes, no arithmetic")
    pair = runner.decode(runner.encode([x, np.array([True, False])]))
    assert isinstance(pair, list) and pair[1].dtype == bool
    bad = [{"array": {"dtype": "object", "shape": [1], "data": [1]}},
           {"array": {"dtype": "float64", "shape": [2, 2], "data": [1, 2, 3]}},
           {"array": {"dtype": "float64", "shape": [10**6], "data": []}},
           {"array": {"dtype": "float64", "shape": [1], "data": ["1"]}},
           {"array": {"dtype": "float64", "shape": [-1], "data": []}},
           {"pickle": "gASVAAAA"}, {"list": [0] * 17}, [1, 2], "text",
           {"list": [{"list": [{"list": [{"list": [{"list": [{"list": []}]}]}]}]}]}]
    for obj in bad:
        with pytest.raises(runner.BadData):
            runner.decode(obj)


def item_for(data: bytes):
    return grading.inspect(data)


def student_like(name="attention-01-numpy", kernel="python3") -> bytes:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nb.metadata["otter"] = {"assignment_name": name}
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel}
    return nbformat.writes(nb).encode()


@pytest.mark.parametrize("data,reason", [
    (b"", "empty file"), (b"{not json", "not valid JSON"), (b"\xff\xfe", "not valid JSON"),
    (b"[1, 2]", "not a valid notebook"), (b'{"cells": 3}', "not a valid notebook"),
    (nbformat.writes(nbformat.v4.new_notebook()).encode(), "no otter metadata"),
    (student_like("attention-42"), "unknown assignment 'attention-42'"),
])
def test_inspect_names_what_is_wrong(data, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        grading.inspect(data)


def test_inspect_forces_the_python3_kernel():
    assignment, data, note = grading.inspect(student_like(kernel="myenv"))
    assert assignment.stem == "01_attention_numpy" and "'myenv' replaced by python3" in note
    assert nbformat.reads(data.decode(), 4).metadata.kernelspec.name == "python3"


def test_every_file_is_accounted_for(tmp_path):
    (tmp_path / "a.ipynb").write_bytes(student_like())
    (tmp_path / "notes.txt").write_text("hi")
    (tmp_path / "sub" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "sub" / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_bytes(b"{}")
    (tmp_path / "broken.zip").write_bytes(b"PK not really")
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "a.ipynb")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("../../escape.ipynb", student_like())
        z.writestr("deep/b.ipynb", student_like())
        z.writestr("picture.png", b"\x89PNG")
    (tmp_path / "class.zip").write_bytes(buffer.getvalue())
    items = {i.label: i for i in grading.collect(tmp_path)}
    assert set(items) == {"a.ipynb", "notes.txt", "sub/.ipynb_checkpoints/a-checkpoint.ipynb",
                          "broken.zip", "link.ipynb", "class.zip/../../escape.ipynb",
                          "class.zip/deep/b.ipynb", "class.zip/picture.png"}
    assert items["a.ipynb"].data and items["class.zip/deep/b.ipynb"].data
    assert "checkpoint" in items["sub/.ipynb_checkpoints/a-checkpoint.ipynb"].skip
    assert "not a readable zip" in items["broken.zip"].skip
    assert "symbolic link" in items["link.ipynb"].skip
    assert "not a notebook" in items["class.zip/picture.png"].skip
    assert not (tmp_path.parent / "escape.ipynb").exists()  # zips are read, never extracted


def test_rows_are_written_as_computed_and_a_stale_csv_never_looks_fresh(tmp_path, monkeypatch):
    folder = tmp_path / "subs"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(name)
    csv_path = tmp_path / "grades.csv"
    csv_path.write_text("submission,score\nold,10\n")
    real = grading.grade_one

    def crash_on_b(item, *args, **kwargs):
        if item.label == "b.txt":
            raise KeyboardInterrupt  # the teacher presses Ctrl-C, or the machine dies
        return real(item, *args, **kwargs)

    monkeypatch.setattr(grading, "grade_one", crash_on_b)
    with pytest.raises(KeyboardInterrupt):  # (nothing here runs a notebook: no sandbox needed)
        grading.grade(folder, csv_path, progress=False, unsandboxed=True)
    assert not csv_path.exists()  # the old CSV is gone, not left looking current
    partial = grading.read_csv(tmp_path / "grades.csv.incomplete")
    assert [r["submission"] for r in partial] == ["a.txt"]
    monkeypatch.setattr(grading, "grade_one", real)
    rows = grading.grade(folder, csv_path, progress=False, unsandboxed=True)
    assert [r["status"] for r in rows] == ["skipped"] * 3
    assert csv_path.exists() and not (tmp_path / "grades.csv.incomplete").exists()


def test_a_file_name_cannot_become_a_spreadsheet_formula(tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "=HYPERLINK(1).txt").write_text("x")
    grading.grade(folder, tmp_path / "grades.csv", progress=False, unsandboxed=True)
    [row] = grading.read_csv(tmp_path / "grades.csv")
    assert row["submission"] == "'=HYPERLINK(1).txt"


def test_a_grader_error_on_one_file_becomes_its_error_row(tmp_path, monkeypatch):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "a.ipynb").write_bytes(student_like())
    (folder / "b.txt").write_text("b")

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(sandbox, "run_submission", boom)
    rows = grading.grade(folder, None, progress=False, unsandboxed=True)
    assert rows[0]["submission"] == "a.ipynb" and rows[0]["status"] == "error"
    assert "disk full" in rows[0]["detail"] and rows[1]["status"] == "skipped"


def test_grade_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a folder"):
        classroom.grade(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="no files"):
        classroom.grade(tmp_path)
    with pytest.raises(ValueError, match="jobs=0"):
        classroom.grade(tmp_path, jobs=0)
    with pytest.raises(ValueError, match="seed=-1"):
        classroom.grade(tmp_path, seed=-1)
    with pytest.raises(TypeError, match="limits must be"):
        classroom.grade(tmp_path, limits={"wall_seconds": 5})
    with pytest.raises(ValueError, match="cell_seconds"):
        classroom.Limits(wall_seconds=5, cell_seconds=10)
    with pytest.raises(ValueError, match="memory_mb"):
        classroom.Limits(memory_mb=0)
    with pytest.raises(ValueError, match="plain file name"):
        sandbox.run_submission(b"{}", "../x.ipynb", [])
    with pytest.raises(TypeError, match="bytes"):
        sandbox.run_submission("{}", "x.ipynb", [])


def test_every_assignment_module_and_notebook_is_in_the_one_list():
    """MODULES lists every aNN_<stem>.py of book/classroom/assignments/ and every instructor
    notebook has one; a misnamed module, a repeated name and a positional field are refused."""
    from book.classroom import assignments
    from book.classroom.cases import Case

    folder = classroom.ROOT / "book" / "classroom" / "assignments"
    files = sorted(p.stem for p in folder.glob("a*.py"))
    listed = [m.__name__.rsplit(".", 1)[-1] for m in assignments.MODULES]
    assert listed == files, "add the module to MODULES in book/classroom/assignments/__init__.py"
    stems = [a.stem for a in ASSIGNMENTS.values()]
    assert stems == [p.stem for p in classroom.sources()]
    assert list(classroom.PARTIAL_MISTAKES) == stems
    one = assignments.a01_attention_numpy
    with pytest.raises(ValueError, match="name the module a01_attention_numpy.py"):
        assignments._registry([SimpleNamespace(ASSIGNMENT=one.ASSIGNMENT,
                                               __name__="book.classroom.assignments.a99_x")])
    with pytest.raises(ValueError, match="two assignments are named"):
        assignments._registry([one, one])
    with pytest.raises(TypeError):
        Case("q1", "a case", 1, True, "f", [], lambda out: None)   # keyword-only fields


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_public_checks_carry_at_most_a_tenth_and_match_the_notebook(name):
    """Points come from the hidden cases. The public case of each question is worth what the
    instructor notebook's (public, otter) test says and what its markdown tells students."""
    assignment = ASSIGNMENTS[name]
    cases = assignment.cases(seed=0)
    nb = nbformat.read(classroom.SOURCES / f"{assignment.stem}.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert "hidden: true" not in text  # hidden tests live in book/classroom/assignments/ only
    for question, total in assignment.questions().items():
        public = sum(c.points for c in cases if c.question == question and c.public)
        assert 0 < public <= 0.1 * total, (question, public, total)
        block = text.split(f"name: {question}")[1].split("# END QUESTION")[0]
        otter_points = sum(float(p) for p in re.findall(r"^points: (\S+)", block, re.M))
        assert otter_points == public, question
        assert (f"*{total:g} points: the public check below is worth {public:g}, hidden "
                f"tests on other inputs the other {total - public:g}.*") in text


def test_hidden_inputs_change_with_the_seed_and_repeat_with_it():
    a = ASSIGNMENTS["attention-01-numpy"]
    first, again, other = a.cases(1), a.cases(1), a.cases(2)
    hidden = [i for i, c in enumerate(first) if not c.public and c.function == "softmax"]
    for i in hidden:
        assert_same_run(first[i].args[0], again[i].args[0], why="the same seed twice")
        assert not np.array_equal(first[i].args[0], other[i].args[0])
    wire = first[hidden[0]].wire(0, 5.0)
    assert set(wire) == {"id", "function", "recipe", "args", "init", "state", "seconds"}


# ---- no sandbox, no run: grading fails closed ---------------------------------------------

@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    """A PATH without bwrap (the grader looks it up on PATH, as `command -v` does)."""
    empty = tmp_path / "bin-without-bwrap"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("UNSANDBOXED", raising=False)
    assert sandbox.bwrap() is None and sandbox.isolation() == "unsandboxed"
    return "bwrap is not installed"


@pytest.fixture
def broken_bwrap(monkeypatch, tmp_path):
    """A bwrap that is installed but cannot create a sandbox (user namespaces forbidden)."""
    folder = tmp_path / "bin-broken-bwrap"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("UNSANDBOXED", raising=False)
    assert sandbox.bwrap() is None
    return "bwrap cannot create a sandbox here: bwrap: setting up uid map: Permission denied"


@pytest.mark.parametrize("lacking", ["no_bwrap", "broken_bwrap"])
def test_without_a_working_sandbox_nothing_runs_and_nothing_changes(lacking, request,
                                                                     tmp_path):
    problem = request.getfixturevalue(lacking)
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "a.ipynb").write_bytes(student_like())
    csv_path = tmp_path / "grades.csv"
    csv_path.write_text("last week's grades\n")
    hint = re.escape("sudo apt-get install bubblewrap")
    with pytest.raises(classroom.SandboxUnavailable, match=hint) as raised:
        grading.grade(folder, csv_path, progress=False)
    assert re.escape(problem) in re.escape(str(raised.value)) and "UNSANDBOXED=1" in str(
        raised.value)
    assert csv_path.read_text() == "last week's grades\n"  # the old CSV is left as it was
    assert not (tmp_path / "grades.csv.incomplete").exists()
    with pytest.raises(classroom.SandboxUnavailable, match=hint):
        sandbox.run_submission(student_like(), "a.ipynb", [])
    with pytest.raises(classroom.SandboxUnavailable, match=hint):
        sandbox.self_check()
    with pytest.raises(classroom.SandboxUnavailable, match=hint):  # before otter's slow work
        classroom.generate(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unsandboxed_on_request_every_row_says_so(no_bwrap, tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "notes.txt").write_text("x")
    (folder / "broken.ipynb").write_bytes(b"{")
    csv_path = tmp_path / "grades.csv"
    with pytest.warns(sandbox.UnsandboxedWarning, match="import the book's reference solution"):
        rows = grading.grade(folder, csv_path, progress=False, unsandboxed=True)
    assert [r["status"] for r in rows] == ["error", "skipped"]
    assert [r["isolation"] for r in rows] == ["unsandboxed"] * 2
    written = grading.read_csv(csv_path)
    assert "isolation" in classroom.FIELDS and len(written) == 2
    assert all(r["isolation"] == "unsandboxed" for r in written)
    lines = grading.summary(rows).splitlines()
    assert len(lines) == 2 and all("[unsandboxed]" in line for line in lines)


@pytest.mark.skipif(sandbox.bwrap() is None, reason="needs bubblewrap (bwrap)")
def test_with_a_sandbox_rows_say_bubblewrap(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    rows = grading.grade(tmp_path, None, progress=False)
    assert [r["isolation"] for r in rows] == ["bubblewrap"]
    assert "[unsandboxed]" not in grading.summary(rows)


def test_the_command_line_fails_closed_and_marks_an_unsandboxed_batch(no_bwrap, tmp_path,
                                                                      capsys, monkeypatch):
    from book.classroom.__main__ import NO_SANDBOX, main

    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "notes.txt").write_text("x")
    csv_path = tmp_path / "grades.csv"
    for argv in (["grade", str(folder), "--csv", str(csv_path)],
                 ["assign", "--out", str(tmp_path / "a")],
                 ["demo", "--out", str(tmp_path / "d")], ["check-sandbox"]):
        assert main(argv) == NO_SANDBOX != 0, argv
        out, err = capsys.readouterr()
        assert "sudo apt-get install bubblewrap" in err and "UNSANDBOXED=1" in err, argv
        assert "Nothing was run" in err and "graded" not in out, argv
    assert not csv_path.exists() and not (tmp_path / "a").exists()
    assert not (tmp_path / "d").exists()
    for how in ("flag", "environment"):
        if how == "environment":
            monkeypatch.setenv("UNSANDBOXED", "1")
        assert main(["grade", str(folder), "--csv", str(csv_path)]
                    + (["--unsandboxed"] if how == "flag" else [])) == 0
        out, err = capsys.readouterr()
        assert "WITHOUT A SANDBOX" in err and "with YOUR permissions" in err
        assert "write into the virtual environment" in err
        assert "UNSANDBOXED: no sandbox, every row is marked `unsandboxed`" in out
        assert "[unsandboxed]" in out
        assert [r["isolation"] for r in grading.read_csv(csv_path)] == ["unsandboxed"]
    monkeypatch.setenv("UNSANDBOXED", "0")  # only "1" says yes
    assert main(["grade", str(folder), "--csv", str(csv_path)]) == NO_SANDBOX


def test_the_private_tmp_is_mounted_before_the_python_folders(monkeypatch, tmp_path):
    """bwrap mounts in order: a venv under /tmp bound before the empty /tmp would vanish
    ("bwrap: execvp /tmp/…/.venv/bin/python: No such file or directory")."""
    venv = "/tmp/a checkout/.venv"
    monkeypatch.setattr(sandbox, "bwrap", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(sandbox, "_python_dirs", lambda: ["/usr/lib/python3", venv])
    monkeypatch.setattr(sandbox, "_hidden", lambda mounted: [["--tmpfs", venv + "/book"]])
    cmd = sandbox.bwrap_command(tmp_path, classroom.Limits())

    def at(*words):
        starts = [i for i in range(len(cmd)) if cmd[i:i + len(words)] == list(words)]
        assert len(starts) == 1, (words, cmd)
        return starts[0]

    tmp = at("--tmpfs", "/tmp")
    assert tmp < at("--ro-bind", venv, venv) < at("--tmpfs", venv + "/book")
    assert tmp < at("--ro-bind", "/usr/lib/python3", "/usr/lib/python3")
    assert at("--ro-bind", str(tmp_path), sandbox.INSIDE_IN) > tmp
    assert cmd[-4:] == ["--remount-ro", "/", "--chdir", sandbox.INSIDE_WORK]


# ---- fair marks: guessable cases, float32 --------------------------------------------------

def test_a_guessable_case_counts_only_together_with_a_drawn_one():
    from book.classroom import fairness

    assignment = ASSIGNMENTS["attention-01-numpy"]

    def right_but_n1(n):
        return np.tril(np.ones((n, n), dtype=bool)) if n > 1 else np.zeros((1, 1), bool)

    def right(n):
        return np.tril(np.ones((n, n), dtype=bool))

    for seed in range(3):
        cases = [c for c in assignment.cases(seed) if c.question == "q3_causal_mask"]
        [one] = [c for c in cases if c.predictable]
        [partner] = [c for c in cases if c.group == one.group and c is not one]
        rows = {r["question"]: r for r in fairness.run_answer(
            assignment, {"causal_mask": right_but_n1}, seed)}
        q3 = rows["q3_causal_mask"]
        assert q3["score"] == q3["possible"] - partner.points, q3
        assert f"{partner.name}: right, but scored together with n=1" in q3["detail"]
        all_true = {r["question"]: r["score"] for r in fairness.run_answer(
            assignment, {"causal_mask": lambda n: np.ones((n, n), bool)}, seed)}
        assert all_true["q3_causal_mask"] == 1  # the public check only
        full = {r["question"]: r["score"] for r in fairness.run_answer(
            assignment, {"causal_mask": right}, seed)}
        assert full["q3_causal_mask"] == 10


def test_a_float32_answer_passes_and_a_wrong_one_is_told_why():
    import torch

    from book.ideas.attention import softmax

    [large] = [c for c in ASSIGNMENTS["attention-01-numpy"].cases(7)
               if c.name == "large scores"]
    x = large.args[0]
    single = torch.softmax(torch.from_numpy(x).float(), -1).numpy()
    assert single.dtype == np.float32 and not np.allclose(single, softmax(x), atol=1e-8)
    assert large.check(single) is None
    assert large.check(softmax(x)) is None
    why = large.check(softmax(x) * (1 + 1e-3))
    assert why and "differs from the reference" in why
    assert "float32 precision is accepted: rtol 0.0001, atol 1e-05" in why
    assert "inf or NaN" in large.check(np.full_like(x, np.nan))


# ---- the three assignments of issue 24, a big class: parallel grading, merged CSVs -----------

NEW_STEMS = ("05_scaling", "06_stability", "07_masks")


@pytest.mark.parametrize("stem", NEW_STEMS)
def test_new_assignments_have_at_least_eight_hidden_cases(stem):
    [assignment] = [a for a in ASSIGNMENTS.values() if a.stem == stem]
    for seed in (0, 1):
        hidden = [c for c in assignment.cases(seed) if not c.public]
        assert len(hidden) >= 8, (stem, len(hidden))
        assert sum(c.points for c in hidden) == 0.9 * sum(assignment.questions().values())


@pytest.mark.parametrize("stem", sorted(classroom.PARTIAL_MISTAKES))
def test_the_demo_mistake_earns_partial_credit(stem):
    """The line replaced in the instructor notebook exists once, and the mistaken solution
    scores strictly between 0 and full marks (scored in-process, as fairness.py does)."""
    from book.classroom import fairness

    [assignment] = [a for a in ASSIGNMENTS.values() if a.stem == stem]
    nb = nbformat.read(classroom.SOURCES / f"{stem}.ipynb", as_version=4)
    namespace: dict = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = cell.source
        for old, new in classroom.PARTIAL_MISTAKES[stem]:
            assert sum(c.source.count(old) for c in nb.cells) == 1, old
            source = source.replace(old, new)
        with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
            try:
                exec(compile(source, stem, "exec"), namespace)  # noqa: S102 - our own notebook
            except Exception:  # noqa: BLE001 - a "see it" cell may fail on the mistake
                pass
    functions = {k: v for k, v in namespace.items() if callable(v) and not k.startswith("_")}
    got = sum(fairness.scores(assignment, functions, seed=4).values())
    assert 0 < got < sum(assignment.questions().values()), (stem, got)


def rows_for(*submissions):
    return [{"submission": s, "assignment": "attention-01-numpy", "question": q, "score": 1,
             "possible": 10, "status": "graded", "detail": "", "seconds": 1.5,
             "isolation": "bubblewrap"} for s in submissions for q in ("q1", "q2")]


def written(path, rows):
    with path.open("w", newline="", encoding="utf-8") as f:
        grading.write_csv(rows, f)
    return path


def test_merge_gives_the_one_batch_order_and_refuses_duplicates(tmp_path):
    whole = rows_for("a.ipynb", "b/x.ipynb", "b-y.ipynb", "c.ipynb")
    one = written(tmp_path / "one.csv", [r for r in whole if r["submission"] in
                                         ("c.ipynb", "b-y.ipynb")])
    two = written(tmp_path / "two.csv", [r for r in whole if r["submission"] in
                                         ("a.ipynb", "b/x.ipynb")])
    merged = classroom.merge([one, two])
    # as collect() orders files: by path parts, so the folder b/ comes before b-y.ipynb
    assert [(r["submission"], r["question"]) for r in merged] == [
        ("a.ipynb", "q1"), ("a.ipynb", "q2"), ("b/x.ipynb", "q1"), ("b/x.ipynb", "q2"),
        ("b-y.ipynb", "q1"), ("b-y.ipynb", "q2"), ("c.ipynb", "q1"), ("c.ipynb", "q2")]
    out = io.StringIO()
    grading.write_csv(merged, out)
    single = io.StringIO()
    grading.write_csv(sorted(whole, key=lambda r: ["a.ipynb", "b/x.ipynb", "b-y.ipynb",
                                                   "c.ipynb"].index(r["submission"])), single)
    assert out.getvalue() == single.getvalue()
    with pytest.raises(ValueError, match="'a.ipynb' was graded twice"):
        classroom.merge([two, written(tmp_path / "three.csv", rows_for("a.ipynb"))])
    with pytest.raises(ValueError, match="holds the row of 'a.ipynb' q1 twice"):
        classroom.merge([written(tmp_path / "dup.csv", rows_for("a.ipynb", "a.ipynb"))])
    (tmp_path / "old.csv").write_text("submission,score\nx,1\n")
    with pytest.raises(ValueError, match="not a grades CSV"):
        classroom.merge([one, tmp_path / "old.csv"])
    with pytest.raises(ValueError, match="unfinished batch"):
        classroom.merge([written(tmp_path / "grades.csv.incomplete", rows_for("z"))])
    with pytest.raises(FileNotFoundError, match="not a file"):
        classroom.merge([tmp_path / "missing.csv"])


def test_merge_on_the_command_line(tmp_path, capsys):
    from book.classroom.__main__ import main

    one = written(tmp_path / "one.csv", rows_for("a.ipynb"))
    two = written(tmp_path / "two.csv", rows_for("b.ipynb"))
    assert main(["merge", str(two), str(one)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == ",".join(classroom.FIELDS)
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == ["a.ipynb"] * 2 + [
        "b.ipynb"] * 2
    assert "merged 2 files: 2 submissions, 4 rows" in err
    assert main(["merge", str(one), str(one)]) == 1
    assert "graded twice" in capsys.readouterr().err


def test_make_grade_runs_one_sandbox_per_core_by_default(tmp_path):
    """No JOBS: make passes no --jobs and the command's default is the core count (no `nproc`
    in the Makefile: it is missing on some systems); JOBS=n passes n."""
    import os
    import subprocess
    import sys

    from book.classroom.__main__ import CORES

    assert CORES == len(os.sched_getaffinity(0))
    for extra, flag in (([], ""), (["JOBS=1"], "--jobs 1 "), (["JOBS=3", "SEED=9"],
                                                              "--jobs 3 --seed 9 ")):
        proc = subprocess.run(["make", "-n", "--no-print-directory", f"SUBMISSIONS={tmp_path}",
                               *extra, "grade"], cwd=classroom.ROOT, capture_output=True,
                              text=True, timeout=60)
        [command] = re.findall(r"^.*-m book\.classroom grade .*$", proc.stdout, re.M)
        assert (flag in command + " ") if flag else "--jobs" not in command, (extra, command)
    shown = subprocess.run([sys.executable, "-m", "book.classroom", "grade", "--help"],
                           cwd=classroom.ROOT, capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(classroom.ROOT)}).stdout
    assert f"default: the cores here, {CORES}" in " ".join(shown.split())


# ---- the written item: read from the notebook, made one safe CSV cell ----------------------

def _with_answer(*answer_cells, prompt_id="written-prompt", end=True) -> bytes:
    """A notebook laid out as otter lays out a written item: the prompt, the answer cells, the
    cell that carries otter's END QUESTION marker."""
    cells = [nbformat.v4.new_code_cell("x = 1"),
             nbformat.v4.new_markdown_cell("<!-- BEGIN QUESTION -->\n\n**Question 4 (written).**")]
    cells[1]["id"], cells[1].metadata = prompt_id, {"editable": False, "deletable": False}
    for text in answer_cells:
        cell = nbformat.v4.new_markdown_cell(text)
        cell.metadata["tags"] = ["otter_answer_cell"]
        cells.append(cell)
    if end:
        cells.append(nbformat.v4.new_markdown_cell("<!-- END QUESTION -->\n\nthe end"))
    return nbformat.writes(nbformat.v4.new_notebook(cells=cells)).encode()


def test_the_written_answer_is_the_students_text_and_the_placeholder_is_none():
    from book.classroom.cases import Written
    from book.classroom.feedback import Text

    written = Written(rubric=Text("classroom.rubric_01"))
    placeholder = {code: Text("classroom.answer_placeholder").to(code) for code in ("en", "zh")}
    assert grading.written_answer(_with_answer("  Because.  ", "More."), written) == \
        "Because.\n\nMore."
    for code in ("en", "zh"):
        assert grading.written_answer(_with_answer(placeholder[code]), written) == ""
    assert grading.written_answer(_with_answer(placeholder["en"], "Mine."), written) == "Mine."
    assert grading.written_answer(_with_answer("Last cell.", end=False), written) == "Last cell."
    moved = _with_answer("Found by its tag.", prompt_id="renamed")
    assert grading.written_answer(moved, written) == "Found by its tag."
    row = grading.written_row(written, _with_answer("=1+1"), "zh")
    assert row["status"] == grading.WRITTEN and row["score"] == row["possible"] == ""
    assert row["answer"] == "=1+1" and row["rubric"] == written.rubric.to("zh")
    assert row["detail"] == Text("classroom.written_to_read").to("zh")
    blank = grading.written_row(written, _with_answer(placeholder["zh"]), "en")
    assert blank["answer"] == "" and blank["detail"] == Text("classroom.written_blank")


def test_an_answer_becomes_one_trimmed_line_without_invisible_characters():
    text = "  first\r\nsecond\nthird\rfourth\u2028fifth\tcol\x00\x1b[31m\u202egnp.exe  "
    assert grading.answer_text(text) == ("first ⏎ second ⏎ third ⏎ fourth ⏎ fifth col[31mgnp.exe")
    long = "y" * (grading.MAX_ANSWER_CHARS + 1234)
    cut = grading.answer_text(long, "en")
    assert cut.startswith("y" * grading.MAX_ANSWER_CHARS) and "(1234 more characters" in cut
    assert "另有 1234 个字符" in grading.answer_text(long, "zh")
    assert grading.answer_text("<b>bold</b> & <script>x()</script>") == \
        "<b>bold</b> & <script>x()</script>"   # text in a CSV cell: shown, never rendered


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b",
                                   "\uff0d", "\uff20"])
def test_a_cell_that_a_spreadsheet_would_run_starts_with_a_quote(start):
    assert grading._cell(start + "HYPERLINK(1)") == "'" + start + "HYPERLINK(1)"
    assert grading._cell("ok " + start) == "ok " + start


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_every_assignment_has_a_written_item_and_a_rubric_in_both_languages(name):
    assignment = ASSIGNMENTS[name]
    nb = nbformat.read(classroom.SOURCES / f"{assignment.stem}.ipynb", as_version=4)
    ids = [c.get("id") for c in nb.cells]
    prompt = nb.cells[ids.index(assignment.written.prompt_cell)]
    assert "(written).** In two sentences" in prompt.source
    before = nb.cells[ids.index(assignment.written.prompt_cell) - 1]
    assert before.cell_type == "raw" and f"name: {assignment.written.question}" in before.source
    assert "manual: true" in before.source
    solution = nb.cells[ids.index(assignment.written.prompt_cell) + 2]
    assert solution.cell_type == "markdown" and len(solution.source) > 100
    rubric = assignment.written.rubric
    assert rubric.to("en").startswith("Full answer:") and re.search(r"[\u4e00-\u9fff]",
                                                                  rubric.to("zh"))
    assert assignment.written.question not in assignment.questions()
