"""The grader's pieces that need no sandbox: the strict decoder of returned data, the checks
on submitted files, accounting for every file, the CSV's life cycle, points and limits."""

from __future__ import annotations

import io
import re
import zipfile

import nbformat
import numpy as np
import pytest

from book import classroom
from book.classroom import grading, runner, sandbox, specs


def test_decode_round_trips_arrays_and_rejects_anything_else():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    back = runner.decode(runner.encode(x))
    assert back.dtype == np.float32 and np.array_equal(back, x)
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
    with pytest.raises(KeyboardInterrupt):
        grading.grade(folder, csv_path, progress=False)
    assert not csv_path.exists()  # the old CSV is gone, not left looking current
    partial = grading.read_csv(tmp_path / "grades.csv.incomplete")
    assert [r["submission"] for r in partial] == ["a.txt"]
    monkeypatch.setattr(grading, "grade_one", real)
    rows = grading.grade(folder, csv_path, progress=False)
    assert [r["status"] for r in rows] == ["skipped"] * 3
    assert csv_path.exists() and not (tmp_path / "grades.csv.incomplete").exists()


def test_a_file_name_cannot_become_a_spreadsheet_formula(tmp_path):
    folder = tmp_path / "subs"
    folder.mkdir()
    (folder / "=HYPERLINK(1).txt").write_text("x")
    grading.grade(folder, tmp_path / "grades.csv", progress=False)
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
    rows = grading.grade(folder, None, progress=False)
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


@pytest.mark.parametrize("name", sorted(specs.ASSIGNMENTS))
def test_public_checks_carry_at_most_a_tenth_and_match_the_notebook(name):
    """Points come from the hidden cases. The public case of each question is worth what the
    instructor notebook's (public, otter) test says and what its markdown tells students."""
    assignment = specs.ASSIGNMENTS[name]
    cases = assignment.cases(seed=0)
    nb = nbformat.read(classroom.SOURCES / f"{assignment.stem}.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells)
    assert "hidden: true" not in text  # hidden tests live in specs.py only
    for question, total in assignment.questions().items():
        public = sum(c.points for c in cases if c.question == question and c.public)
        assert 0 < public <= 0.1 * total, (question, public, total)
        block = text.split(f"name: {question}")[1].split("# END QUESTION")[0]
        otter_points = sum(float(p) for p in re.findall(r"^points: (\S+)", block, re.M))
        assert otter_points == public, question
        assert (f"*{total:g} points: the public check below is worth {public:g}, hidden "
                f"tests on other inputs the other {total - public:g}.*") in text


def test_hidden_inputs_change_with_the_seed_and_repeat_with_it():
    a = specs.ASSIGNMENTS["attention-01-numpy"]
    first, again, other = a.cases(1), a.cases(1), a.cases(2)
    hidden = [i for i, c in enumerate(first) if not c.public and c.function == "softmax"]
    for i in hidden:
        assert np.array_equal(first[i].args[0], again[i].args[0])
        assert not np.array_equal(first[i].args[0], other[i].args[0])
    wire = first[hidden[0]].wire(0, 5.0)
    assert set(wire) == {"id", "function", "recipe", "args", "init", "state", "seconds"}
