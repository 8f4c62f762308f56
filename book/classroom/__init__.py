"""Assignments for classrooms: student notebooks and bundle, sandboxed grading offline.

The instructor notebooks live in ``assignments/`` (otter-grader 7 format: solutions and the
public tests students run with ``grader.check``). The hidden tests are data, one module per
assignment in :mod:`book.classroom.assignments` (its cases, the answers that check they are
fair, the demo's partly wrong solution), graded by this package's own harness: each
submission runs in its own sandbox (:mod:`book.classroom.sandbox`, bubblewrap on Linux), only
the graded functions' outputs come back as JSON, and the teacher's process compares them with
the book's reference (:mod:`book.classroom.grading`, checkers in :mod:`book.classroom.compare`).
Usage, from the repository root::

    python -m book.classroom assign             # → build/assignments/{student,student-zh,...}
    python -m book.classroom grade SUBMISSIONS  # → build/grades.csv (one row per question)
    python -m book.classroom demo               # fake submissions (full, partial, blank), graded
    python -m book.classroom check-sandbox      # hostile attempts from inside a sandbox
    python -m book.classroom merge a.csv b.csv > all.csv   # a class graded in parts, as one
    python -m book.classroom gettext            # the Chinese assignments' catalogues, updated

The bundle comes in English and in Chinese, the Chinese one generated from the English
notebooks and ``locale/zh_CN/assignments/*.po`` (:mod:`book.classroom.languages`); a
submission's feedback is worded in its notebook's language (:mod:`book.classroom.feedback`),
its score never depends on it.

``grade`` and ``demo`` run one sandbox per core at a time (``--jobs N``, ``make grade JOBS=N``);
the CSV is the same whatever the number (rows in file order), but for the ``seconds`` column.

Grading fails closed: where no sandbox works (bubblewrap missing, or unable to create one),
these commands stop with the install hint and exit status 3 instead of running a notebook;
``--unsandboxed`` (or ``UNSANDBOXED=1``) is the teacher's explicit, risky way round.
"""

from .assign import (
           BUILD,
           PARTIAL_MISTAKES,
           ROOT,
           SOURCES,
           STUDENT_README,
           AssignmentError,
           fake_submissions,
           generate,
           sources,
)
from .assignments import ASSIGNMENTS
from .grading import FIELDS, collect, grade, inspect, merge, summary
from .sandbox import Limits, SandboxUnavailable, isolation

__all__ = ["ASSIGNMENTS", "AssignmentError", "BUILD", "FIELDS", "Limits", "PARTIAL_MISTAKES",
           "ROOT", "SOURCES", "STUDENT_README", "SandboxUnavailable", "collect",
           "fake_submissions", "generate", "grade", "inspect", "isolation", "merge", "summary",
           "sources"]
