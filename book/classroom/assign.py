"""Assignments for classrooms: generate student notebooks and autograders, grade offline.

The instructor notebooks live in ``assignments/`` (otter-grader 7 format, exception-based
tests; hidden tests call the book's own reference code). Usage, from the repository root::

    python -m book.classroom assign             # → build/assignments/{student,autograder,...}
    python -m book.classroom grade SUBMISSIONS  # → build/grades.csv (one row per question)
    python -m book.classroom demo               # fake submissions (full, partial, blank), graded

``otter grade`` needs Docker; this module grades with otter's Python API instead
(``otter.api.grade_submission``), which runs each notebook in a fresh kernel here.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "assignments"
BUILD = ROOT / "build" / "assignments"

# For the demo and the tests: a plausible partly wrong solution of each assignment, made by
# replacing lines of the instructor's solution (each pair must match exactly once).
PARTIAL_MISTAKES = {
    "01_attention_numpy": [
        ("e = np.exp(x - x.max(axis=-1, keepdims=True))", "e = np.exp(x)"),  # not stable
        ("return np.tril(np.ones((n, n), dtype=bool))",
         "return np.triu(np.ones((n, n), dtype=bool))"),  # attends to the future
    ],
    "02_mha_torch": [
        ("return x.view(batch, seq_len, n_heads, d_model // n_heads).transpose(1, 2)",
         "return x.reshape(batch, n_heads, seq_len, d_model // n_heads)"),  # mixes heads/tokens
    ],
    "03_kv_cache": [
        ("return 2 * n_layers * n_tokens * d_model * bytes_per_number",
         "return n_layers * n_tokens * d_model * bytes_per_number"),  # forgets the values
        ("scores = K @ q / np.sqrt(len(q))", "scores = K @ q"),  # no scaling
    ],
}


class AssignmentError(RuntimeError):
    """An instructor notebook could not be turned into an assignment (e.g. a broken solution)."""


def sources(folder: Path = SOURCES) -> list[Path]:
    found = sorted(Path(folder).glob("*.ipynb"))
    if not found:
        raise FileNotFoundError(f"no instructor notebooks (*.ipynb) in {folder}")
    return found


def generate(out: Path = BUILD, source_dir: Path = SOURCES) -> dict[str, dict[str, Path]]:
    """Run ``otter assign`` on every instructor notebook; collect the outputs under ``out``.

    Otter runs each question's tests against the solution and fails on a broken solution: that
    failure is raised as :class:`AssignmentError` with otter's log. Returns, per assignment,
    the paths of the student notebook, the autograder zip and the solutions notebook.
    """
    out = Path(out)
    for sub in ("student", "autograder", "solutions"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    result = {}
    for src in sources(source_dir):
        work = out / "otter" / src.stem
        if work.exists():
            shutil.rmtree(work)
        proc = subprocess.run([sys.executable, "-m", "otter", "assign", str(src), str(work)],
                              capture_output=True, text=True, cwd=src.parent)
        zips = sorted((work / "autograder").glob("*.zip")) if work.exists() else []
        if proc.returncode != 0 or not zips:
            raise AssignmentError(f"otter assign failed for {src.name} (exit {proc.returncode}); "
                                  f"is every solution correct?\n{proc.stdout[-3000:]}"
                                  f"\n{proc.stderr[-3000:]}")
        paths = {"student": out / "student" / src.name,
                 "autograder": out / "autograder" / f"{src.stem}.zip",
                 "solutions": out / "solutions" / src.name}
        shutil.copy2(work / "student" / src.name, paths["student"])
        shutil.copy2(zips[-1], paths["autograder"])
        shutil.copy2(work / "autograder" / src.name, paths["solutions"])
        result[src.stem] = paths
    return result


def assignment_name(notebook: Path) -> str:
    """The otter assignment name recorded in a (student or solution) notebook's metadata."""
    nb = nbformat.read(notebook, as_version=4)
    name = nb.metadata.get("otter", {}).get("assignment_name")
    if not name:
        raise ValueError(f"{notebook} carries no otter assignment name: is it a student "
                         "notebook from `make assignments`?")
    return name


def _autograders(folder: Path) -> dict[str, Path]:
    by_name = {}
    for zip_path in sorted(Path(folder).glob("*.zip")):
        with zipfile.ZipFile(zip_path) as z:
            by_name[json.loads(z.read("otter_config.json"))["assignment_name"]] = zip_path
    if not by_name:
        raise FileNotFoundError(f"no autograder zips in {folder}; run `make assignments` first")
    return by_name


def grade(submissions: Path, autograders: Path = BUILD / "autograder",
          csv_path: Path | None = ROOT / "build" / "grades.csv", progress: bool = True) -> list:
    """Grade every ``*.ipynb`` under ``submissions`` offline; write one CSV row per question.

    Columns: submission, assignment, question, score, possible. Each notebook is matched to
    its autograder by the assignment name in its metadata.
    """
    from otter.api import grade_submission
    from tqdm.auto import tqdm

    submissions = Path(submissions)
    if not submissions.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS={submissions} is not a folder of notebooks")
    notebooks = sorted(submissions.rglob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no .ipynb files under {submissions}")
    zips = _autograders(autograders)
    rows = []
    for nb_path in tqdm(notebooks, desc="grading", disable=not progress):
        name = assignment_name(nb_path)
        if name not in zips:
            raise ValueError(f"{nb_path.name} is for assignment {name!r}, which has no "
                             f"autograder in {autograders} (known: {sorted(zips)})")
        results = grade_submission(str(nb_path), str(zips[name]), quiet=True)
        for question, r in sorted(results.results.items()):
            rows.append({"submission": str(nb_path.relative_to(submissions)),
                         "assignment": name, "question": question,
                         "score": r.score, "possible": r.possible})
    if csv_path is not None:
        csv_path = Path(csv_path)
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        with csv_path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return rows


def fake_submissions(generated: dict[str, dict[str, Path]], out: Path) -> list[Path]:
    """Three submissions per assignment: the full solution, a partly wrong one, a blank one."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for stem, paths in generated.items():
        full = out / f"{stem}__full.ipynb"
        shutil.copy2(paths["solutions"], full)
        blank = out / f"{stem}__blank.ipynb"
        shutil.copy2(paths["student"], blank)
        partial = out / f"{stem}__partial.ipynb"
        nb = nbformat.read(paths["solutions"], as_version=4)
        for old, new in PARTIAL_MISTAKES.get(stem, []):
            cells = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
            if len(cells) != 1:
                raise ValueError(f"{stem}: the partial-mistake line {old!r} was found in "
                                 f"{len(cells)} cells, expected 1")
            cells[0].source = cells[0].source.replace(old, new)
        nbformat.write(nb, partial)
        made += [full, partial, blank]
    return made


def _summary(rows: list) -> str:
    totals: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        t = totals.setdefault((r["assignment"], r["submission"]), [0.0, 0.0])
        t[0] += r["score"]
        t[1] += r["possible"]
    return "\n".join(f"  {sub:45} {score:5.1f} / {possible:g}"
                     for (_, sub), (score, possible) in sorted(totals.items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.classroom", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_assign = sub.add_parser("assign", help="generate student notebooks and autograders")
    p_assign.add_argument("--out", type=Path, default=BUILD)
    p_grade = sub.add_parser("grade", help="grade a folder of submitted notebooks")
    p_grade.add_argument("submissions", type=Path)
    p_grade.add_argument("--autograders", type=Path, default=BUILD / "autograder")
    p_grade.add_argument("--csv", type=Path, default=ROOT / "build" / "grades.csv")
    p_demo = sub.add_parser("demo", help="generate, make 3 fake submissions each, grade them")
    p_demo.add_argument("--out", type=Path, default=BUILD)
    args = parser.parse_args(argv)

    if args.command in ("assign", "demo"):
        start = time.perf_counter()
        generated = generate(args.out)
        print(f"generated {len(generated)} assignments in {time.perf_counter() - start:.1f} s:")
        for stem, paths in generated.items():
            print(f"  {stem}: {paths['student'].relative_to(ROOT)}, "
                  f"{paths['autograder'].relative_to(ROOT)}")
        print("hand out build/assignments/student/; keep build/assignments/autograder/ private "
              "(it holds the hidden tests)")
        if args.command == "assign":
            return 0
        submissions = fake_submissions(generated, args.out / "fake_submissions")
        args.submissions = args.out / "fake_submissions"
        args.autograders = args.out / "autograder"
        args.csv = args.out / "fake_grades.csv"
        print(f"made {len(submissions)} fake submissions in {args.submissions.relative_to(ROOT)}")
    start = time.perf_counter()
    rows = grade(args.submissions, args.autograders, args.csv)
    print(f"graded {len({r['submission'] for r in rows})} submissions in "
          f"{time.perf_counter() - start:.1f} s → {args.csv}")
    print(_summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
