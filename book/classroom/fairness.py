"""Are the hidden cases fair? What constant answers, the reference and a float32 reference score.

Each answer is a set of functions, as a student notebook would define them. They are called by
the grader's own kernel harness (:data:`~book.classroom.runner.KERNEL_HARNESS`, run here in
this process rather than in a sandbox: the answers are ours) on each assignment's cases, and
scored by :func:`~book.classroom.grading.score`, exactly as submissions are:

- **constant and shape-only answers** (each assignment's ``constants()``, in its module of
  :mod:`book.classroom.assignments`): zeros, ones or an all-True mask, returning an input (or
  only the values), uniform weights, a fixed number. Each must score at most the public check's
  points of its question.
- **the reference**: the instructor notebook's own solution; it must score full marks.
- **a float32 reference** (the assignment's ``float32()``): a correct answer computed in
  float32 (e.g. ``torch.softmax`` on a float32 copy). Nothing in the assignments asks for
  float64, so it must score full marks too. Questions whose answers are integers or booleans
  have none.

``python -m book.classroom fairness`` prints the table (exit 1 where a row is unfair);
``tests/classroom/test_classroom_fairness.py`` asserts it, over several seeds of the hidden
inputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from . import grading, runner, sandbox
from .assign import SOURCES
from .assignments import ASSIGNMENTS
from .cases import Assignment


def reference(stem: str, source_dir: Path = SOURCES) -> dict[str, object]:
    """The instructor notebook's solution: its code cells run in a fresh namespace."""
    import nbformat

    namespace: dict[str, object] = {}
    nb = nbformat.read(Path(source_dir) / f"{stem}.ipynb", as_version=4)
    with contextlib.redirect_stdout(io.StringIO()):  # what its "see it" cells print
        for cell in nb.cells:
            if cell.cell_type == "code":
                exec(compile(cell.source, f"{stem}.ipynb", "exec"), namespace)  # noqa: S102
    return namespace


# ---- scoring an answer like a submission -------------------------------------------------------

def run_answer(assignment: Assignment, functions: dict, seed: int,
               case_seconds: float = 5.0, language: str = "en") -> list[dict]:
    """The grader's rows for a notebook that defines ``functions``: the kernel harness calls
    them on this seed's cases (here, not in a sandbox) and :func:`grading.score` scores it,
    worded in ``language``."""
    cases = assignment.cases(seed)
    wire = [c.wire(i, case_seconds) for i, c in enumerate(cases)]
    namespace = dict(functions)
    exec(runner.KERNEL_HARNESS, namespace)  # noqa: S102 - the grader's own harness
    with tempfile.TemporaryDirectory(prefix="fairness-") as tmp:
        cases_path, results_path = os.path.join(tmp, "cases.json"), os.path.join(tmp, "out")
        Path(cases_path).write_text(json.dumps(wire), encoding="utf-8")
        with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
            namespace["__grading_harness"](cases_path, results_path)
        results = json.loads(Path(results_path).read_text(encoding="utf-8"))
    outcome = sandbox.Outcome({"status": "ok", "detail": "", "results": results}, "", 0.0,
                              "in-process")
    return grading.score(assignment, cases, outcome, language)


def scores(assignment: Assignment, functions: dict, seed: int) -> dict[str, float]:
    return {r["question"]: float(r["score"]) for r in run_answer(assignment, functions, seed)}


def table(seeds=range(5)) -> list[dict]:
    """One row per question: points, the public share, the best constant answer's score (the
    most over ``seeds`` and every constant kind, and which), the reference's and the float32
    reference's scores (the least over ``seeds``; None where the answer is not a float)."""
    rows = []
    for assignment in ASSIGNMENTS.values():
        stem = assignment.stem
        constants = assignment.constants()
        solution, single = reference(stem), assignment.float32()
        cases = assignment.cases(0)
        questions = assignment.questions()
        best = {q: (-1.0, "") for q in questions}
        ref = dict.fromkeys(questions, np.inf)
        f32 = dict.fromkeys(questions, np.inf)
        for seed in seeds:
            for kind, functions in constants.items():
                for q, got in scores(assignment, functions, seed).items():
                    if got > best[q][0]:
                        best[q] = (got, kind)
            for q, got in scores(assignment, solution, seed).items():
                ref[q] = min(ref[q], got)
            for q, got in scores(assignment, {**solution, **single}, seed).items():
                f32[q] = min(f32[q], got)
        for q, possible in questions.items():
            functions = {c.function for c in cases if c.question == q}
            public = sum(c.points for c in cases if c.question == q and c.public)
            rows.append({"assignment": stem, "question": q, "possible": possible,
                         "public": public, "constant": best[q][0], "constant_kind": best[q][1],
                         "reference": ref[q],
                         "float32": f32[q] if functions & set(single) else None})
    return rows


def format_table(rows: list[dict]) -> str:
    head = (f"{'assignment':20} {'question':17} {'points':>6} {'public':>6} "
            f"{'constant (best of all)':>30} {'reference':>9} {'float32':>7}")
    lines = [head, "-" * len(head)]
    for r in rows:
        constant = f"{r['constant']:g} ({r['constant_kind']})"
        f32 = "n/a" if r["float32"] is None else f"{r['float32']:g}"
        lines.append(f"{r['assignment']:20} {r['question']:17} {r['possible']:>6g} "
                     f"{r['public']:>6g} {constant:>30} {r['reference']:>9g} {f32:>7}")
    return "\n".join(lines)


def fair(rows: list[dict]) -> bool:
    """Every constant answer at most the public share, the references at full marks."""
    return all(r["constant"] <= r["public"] and r["reference"] == r["possible"]
               and r["float32"] in (None, r["possible"]) for r in rows)
