"""The records an assignment is made of: its graded cases and the assignment itself.

Each assignment is one module of :mod:`book.classroom.assignments` (``aNN_<stem>.py``) that
defines ``ASSIGNMENT``, an :class:`Assignment`: the instructor notebook it belongs to, the
hidden cases (a builder that draws fresh inputs from a seeded generator: a new random seed per
grading batch by default, so a table of answers to known inputs earns nothing), the answers
that :mod:`book.classroom.fairness` scores against them, and the partly wrong solution of the
demo. The hidden cases are kept on the teacher's side (never in a student notebook, never
inside a sandbox): only a case's inputs are sent into the sandbox; its checker, a function of
the returned output that computes the reference with the book's own code *here*, in the
teacher's process, says what is wrong (the checkers are in :mod:`book.classroom.compare`).
Every question has one public case, the shape/format check students also run with
``grader.check`` (at most 10 % of its points); the rest of its points come from hidden cases.

Marks are fair to honest answers and give nothing to guessed ones:

- a case whose answer can be guessed without solving the task (``predictable``: a degenerate
  input such as n = 1, no tokens or one key/value head, or fixed inputs whose answer is known)
  carries no points of its own: it belongs to a ``group`` with a freshly drawn case, and the
  group's points are earned only when every case in it is right. So a constant or shape-only
  answer (all-True mask, zeros, the input returned, a fixed number) earns at most the public
  check's points; :mod:`book.classroom.fairness` measures it.
- nothing in the assignments asks for float64, so floats are compared with a tolerance that a
  correct answer computed in float32 meets (:data:`~book.classroom.compare.FLOAT32_RTOL`,
  :data:`~book.classroom.compare.FLOAT32_ATOL`), and the detail of a failed comparison says
  so; hidden inputs keep attention unsaturated, so that an answer which ignores the scores
  cannot pass within that tolerance by luck.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .runner import encode

Answer = dict[str, Callable]   # function name -> a function, as a notebook would define it


@dataclass(frozen=True, kw_only=True)
class Case:
    """One graded call. ``check(output)`` returns None when right, else why it is wrong.

    Cases of a question with the same non-empty ``group`` are scored together: their points
    count only when all of them are right. A ``predictable`` case (see the module docstring)
    has 0 points and a group.
    """

    question: str
    name: str
    points: float
    public: bool = False              # the shape/format check students also run
    function: str
    args: list
    check: Callable[[object], str | None]
    recipe: str = "call"              # "call": function(*args); "module": see runner.py
    init: list = field(default_factory=list)
    state: dict = field(default_factory=dict)
    tensor_args: bool = False         # send args as torch tensors
    group: str = ""                   # scored together with the question's same-group cases
    predictable: bool = False         # its answer can be guessed: no points of its own

    def wire(self, index: int, seconds: float) -> dict:
        """The JSON-ready form sent into the sandbox: inputs only, no reference, no points."""
        return {"id": index, "function": self.function, "recipe": self.recipe,
                "args": [encode(a, tensor=self.tensor_args) for a in self.args],
                "init": [encode(a) for a in self.init],
                "state": {k: encode(v, tensor=True) for k, v in self.state.items()},
                "seconds": seconds}


@dataclass(frozen=True, kw_only=True)
class Written:
    """An assignment's written item ("explain in two sentences"): an otter manual question that
    the grader does not score. Its answer, the markdown cells after the prompt cell (the cell
    of id ``prompt_cell``, which otter keeps), is copied into the CSV's ``answer`` column, made
    safe (:func:`book.classroom.grading.answer_text`), next to ``rubric``, what a full answer
    says (a :class:`~book.classroom.feedback.Text`, in the student's language)."""

    rubric: str
    question: str = "w_explain"       # otter's name of the manual question
    prompt_cell: str = "written-prompt"


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """One assignment: what grades it, what checks that grading is fair, what the demo hands in.

    ``constants()`` gives the constant and shape-only answers by kind (each must score at most
    the public checks' points), ``float32()`` the functions of a correct answer computed in
    float32 that replace the instructor's (it must score full marks; empty where no answer is
    a float); ``partial_mistakes`` are (line of the solution, wrong line) pairs, each found
    exactly once in the solution, that make the demo's partly wrong submission; ``draws_on`` the
    chapter pages it needs taught first (the teacher's plan hands it out after them);
    ``written`` its written item (:class:`Written`).
    """

    stem: str                          # file stem of the instructor notebook
    name: str                          # otter assignment name, stored in student metadata
    build: Callable[[np.random.Generator], list[Case]]
    constants: Callable[[], dict[str, Answer]]
    float32: Callable[[], Answer]
    partial_mistakes: tuple[tuple[str, str], ...]
    draws_on: tuple[str, ...]          # chapter pages (book.chapters.CHAPTERS)
    written: Written                   # the written item, copied into the CSV for the teacher

    def cases(self, seed: int) -> list[Case]:
        return self.build(np.random.default_rng([seed, sum(self.stem.encode())]))

    def questions(self, seed: int = 0) -> dict[str, float]:
        out: dict[str, float] = {}
        for case in self.cases(seed):
            out[case.question] = out.get(case.question, 0) + case.points
        return out


# ---- helpers for the answers of several assignments ------------------------------------------

def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def int_constants(functions: tuple[str, ...], values=range(8), extra=()) -> dict[str, Answer]:
    """``return c`` from each of ``functions``, for every c in ``values`` and ``extra``."""
    kinds = {}
    for c in [*values, *extra]:
        kinds[f"return {c}"] = {f: (lambda *a, c=c: c) for f in functions}
    return kinds
