"""Grade a folder of submissions: one sandbox each, scores computed here, rows as they come.

Every file under the folder is accounted for in the CSV: a notebook gets one row per question
(status ``graded``) or one ``error`` row that names it and says why (timeout, crash, not a
notebook, no otter metadata, unknown assignment, …); a ``.zip`` is opened and each notebook
inside graded as ``archive.zip/inner.ipynb`` (anything else in it is listed as skipped); any
other file gets a ``skipped`` row. Rows go to ``<csv>.incomplete`` as they are computed and
that file becomes ``<csv>`` only when the batch is done, so a stale or half-written CSV never
looks current. The notebook is matched to its assignment by the metadata, not the file name,
and run under the assignment's own file name, so renaming it changes nothing.

Grading fails closed: without a working sandbox :func:`grade` raises
:class:`~book.classroom.sandbox.SandboxUnavailable` before it touches the CSV or runs anything,
unless the teacher passes ``unsandboxed=True``; then every row's ``isolation`` column reads
``unsandboxed`` (``bubblewrap`` otherwise).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import secrets
import warnings
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from book.kit import validate
from book.kit.progress import bar as progress_bar

from . import runner, sandbox
from .assignments import ASSIGNMENTS
from .cases import Assignment, Written
from .feedback import Text, words
from .languages import language_of

FIELDS = ["submission", "assignment", "question", "score", "possible", "status", "detail",
          "seconds", "isolation", "answer", "rubric"]
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_ZIP_MEMBERS = 200
MAX_ANSWER_CHARS = 1500   # a two-sentence answer is a few hundred; the rest is cut, and counted
WRITTEN = "written"       # the status of a written item's row: the teacher scores it
LINE_BREAK = " ⏎ "        # how a line break of a written answer is shown in its one CSV cell
_BREAKS = re.compile(r"\r\n|[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")
_INVISIBLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069"
                        r"\ufeff]")


@dataclass
class Item:
    """One thing found in the submissions folder: a notebook's bytes, or why it is skipped."""

    label: str
    data: bytes | None = None
    skip: str = ""


def collect(folder: Path) -> list[Item]:
    """Every file under ``folder`` (sorted), zips opened in memory (never extracted to disk)."""
    items = []
    for path in sorted(folder.rglob("*")):
        label = path.relative_to(folder).as_posix()
        if path.is_symlink():
            items.append(Item(label, skip="a symbolic link; not followed"))
        elif path.is_dir():
            continue
        elif ".ipynb_checkpoints" in path.parts:
            items.append(Item(label, skip="a Jupyter checkpoint copy, not a submission"))
        elif path.suffix.lower() == ".ipynb":
            size = path.stat().st_size
            items.append(Item(label, skip=f"larger than {MAX_NOTEBOOK_BYTES} bytes")
                         if size > MAX_NOTEBOOK_BYTES else Item(label, path.read_bytes()))
        elif path.suffix.lower() == ".zip":
            items += list(_unzip(path, label))
        else:
            items.append(Item(label, skip=f"not a notebook ({path.suffix or 'no extension'}); "
                                          "submit the .ipynb file"))
    return items


def _unzip(path: Path, label: str) -> Iterator[Item]:
    try:
        with zipfile.ZipFile(path) as z:
            members = [m for m in z.infolist() if not m.is_dir()]
            if len(members) > MAX_ZIP_MEMBERS:
                yield Item(label, skip=f"a zip of {len(members)} files; unpack it yourself")
                return
            for m in members:
                inner = f"{label}/{m.filename}"
                if not m.filename.lower().endswith(".ipynb") or "__MACOSX" in m.filename:
                    yield Item(inner, skip="in a zip, not a notebook")
                elif m.file_size > MAX_NOTEBOOK_BYTES:
                    yield Item(inner, skip=f"larger than {MAX_NOTEBOOK_BYTES} bytes")
                else:
                    with z.open(m) as f:
                        yield Item(inner, f.read(MAX_NOTEBOOK_BYTES + 1))
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as error:
        yield Item(label, skip=f"error: not a readable zip ({error})")


def inspect(data: bytes) -> tuple[Assignment, bytes, str]:
    """Check a submission's bytes; return its assignment, the bytes to run and a note.

    Raises ValueError with the reason for an empty file, invalid JSON, an invalid notebook,
    missing otter metadata or an unknown assignment. The kernel is forced to ``python3``.
    """
    import nbformat

    if not data:
        raise ValueError("empty file (0 bytes)")
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ValueError(f"larger than {MAX_NOTEBOOK_BYTES} bytes")
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"not valid JSON ({str(error)[:80]}); was the notebook saved "
                         "completely?") from None
    try:
        nb = nbformat.from_dict(raw)
        if not isinstance(raw, dict) or "cells" not in raw:
            raise ValueError("no cells")
        nb = nbformat.convert(nb, 4)
        nbformat.validate(nb)
    except Exception as error:  # noqa: BLE001 - nbformat raises many kinds
        raise ValueError(f"not a valid notebook ({str(error).splitlines()[0][:100]})") from None
    meta = nb.metadata.get("otter")
    name = meta.get("assignment_name") if isinstance(meta, dict) else None
    if not name:
        raise ValueError("no otter metadata: not one of the handed-out student notebooks")
    if name not in ASSIGNMENTS:
        raise ValueError(f"unknown assignment {str(name)[:60]!r} (known: "
                         f"{', '.join(sorted(ASSIGNMENTS))})")
    note = ""
    kernel = nb.metadata.get("kernelspec", {}).get("name")
    if kernel != "python3":
        note = Text("classroom.kernel_replaced", kernel=repr(str(kernel)[:40]))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    for cell in nb.cells:  # stale outputs are neither needed nor trusted
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return ASSIGNMENTS[name], nbformat.writes(nb).encode("utf-8"), note


def score(assignment: Assignment, cases: list, outcome: sandbox.Outcome,
          language: str = "en") -> list[dict]:
    """Rows for one run: compare each returned output with the reference, here. ``language``
    words the details (the student's, :func:`~book.classroom.languages.language_of`); the
    scores never depend on it."""
    questions = {}
    for case in cases:
        questions[case.question] = questions.get(case.question, 0) + case.points
    total = sum(questions.values())
    report = outcome.report
    if report is None or report.get("status") != "ok" or not isinstance(
            report.get("results"), list):
        reason = outcome.reason or (f"{report.get('status')}: {report.get('detail')}"
                                    if isinstance(report, dict) else "crash: no report")
        return [{"question": "", "score": 0, "possible": total, "status": "error",
                 "detail": words(reason, language)[:300]}]
    returned = {}
    for entry in report["results"][: len(cases)]:
        if isinstance(entry, dict) and isinstance(entry.get("id"), int):
            returned.setdefault(entry["id"], entry)
    problems: list[str | None] = []
    for index, case in enumerate(cases):
        entry = returned.get(index)
        if entry is None:
            problem = Text("classroom.no_output")
        elif entry.get("ok") is not True:
            problem = str(entry.get("error", "failed"))[:120]
        else:
            try:
                problem = case.check(runner.decode(entry.get("value")))
            except runner.BadData as bad:
                problem = Text("classroom.data_rejected", reason=str(bad))
        problems.append(problem)
    groups: dict[tuple[str, str], list[int]] = {}
    for index, case in enumerate(cases):
        if case.group:
            groups.setdefault((case.question, case.group), []).append(index)
    got = dict.fromkeys(questions, 0.0)
    why: dict[str, list[str]] = {q: [] for q in questions}
    for index, case in enumerate(cases):
        members = groups[(case.question, case.group)] if case.group else [index]
        wrong = [cases[m].name for m in members if problems[m] is not None]
        if not wrong:
            got[case.question] += case.points
        elif problems[index] is not None:
            why[case.question].append(words(Text("classroom.case_problem", case=case.name,
                                                 problem=problems[index]), language))
        elif case.points:  # right, but its group is not: a guessable case came with it
            together = Text("classroom.scored_together", case=case.name, points=case.points,
                            wrong=", ".join(words(w, language) for w in wrong))
            why[case.question].append(words(together, language))
    first = str(report.get("detail") or "")
    rows = []
    for question in questions:
        detail = words(Text("classroom.separator"), language).join(why[question])
        if detail and first:
            detail = words(Text("classroom.first_error", detail=detail, first=first), language)
        rows.append({"question": question, "score": got[question],
                     "possible": questions[question], "status": "graded",
                     "detail": detail[:400]})
    return rows


def grade_one(item: Item, seed: int, limits: sandbox.Limits,
              unsandboxed: bool = False) -> tuple[list[dict], float]:
    """The CSV rows of one collected item, and the seconds its sandbox took."""
    base = {"submission": item.label, "assignment": ""}
    if item.skip:
        status = "error" if item.skip.startswith("error:") else "skipped"
        return [{**base, "question": "", "score": 0, "possible": "", "status": status,
                 "detail": item.skip.removeprefix("error: ")}], 0.0
    try:
        assignment, data, note = inspect(item.data)
    except ValueError as error:
        return [{**base, "question": "", "score": 0, "possible": "", "status": "error",
                 "detail": str(error)}], 0.0
    language = language_of(item.data)   # wording only: the cases and scores never read it
    cases = assignment.cases(seed)
    wire = [c.wire(i, limits.case_seconds) for i, c in enumerate(cases)]
    outcome = sandbox.run_submission(data, f"{assignment.stem}.ipynb", wire, limits,
                                     unsandboxed=unsandboxed)
    rows = score(assignment, cases, outcome, language)
    rows.append(written_row(assignment.written, data, language))
    for row in rows:
        row.update(submission=item.label, assignment=assignment.name,
                   isolation=outcome.isolation)
        if note:
            note = words(note, language)
            row["detail"] = f"{note}; {row['detail']}" if row["detail"] else note
    return rows, outcome.seconds


def written_answer(data: bytes, written: Written) -> str:
    """The student's answer to the written item, as typed: the markdown cells after the prompt
    cell up to the end of the question (otter's ``<!-- END QUESTION -->``, a code cell or a
    locked cell), or, where the prompt cell is gone, the cells otter tagged as answer cells;
    the placeholder otter puts there (in either language) counts as no answer. Read from the
    notebook's bytes on the teacher's side: nothing in it is run."""
    import nbformat

    nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    ids = [cell.get("id") for cell in nb.cells]
    if written.prompt_cell in ids:
        cells = []
        for cell in nb.cells[ids.index(written.prompt_cell) + 1:]:
            if (cell.cell_type != "markdown" or "<!-- END QUESTION -->" in cell.source
                    or cell.metadata.get("editable") is False):
                break
            cells.append(cell)
    else:
        cells = [cell for cell in nb.cells if cell.cell_type == "markdown"
                 and "otter_answer_cell" in (cell.metadata.get("tags") or [])]
    placeholders = {Text("classroom.answer_placeholder").to(code) for code in ("en", "zh")}
    texts = [str(cell.source).strip() for cell in cells]
    return "\n\n".join(t for t in texts if t and t not in placeholders)


def answer_text(text: str, language: str = "en") -> str:
    """A written answer as one safe CSV cell: every line break shown as :data:`LINE_BREAK`,
    tabs as spaces, control and bidirectional-override characters dropped, trimmed, and cut
    after :data:`MAX_ANSWER_CHARS` characters (saying how many more there were). The CSV
    writer then quotes it and prefixes a cell that starts like a formula (:func:`_cell`)."""
    text = _INVISIBLE.sub("", _BREAKS.sub(LINE_BREAK, str(text).replace("\t", " "))).strip()
    if len(text) > MAX_ANSWER_CHARS:
        more = len(text) - MAX_ANSWER_CHARS
        text = (text[:MAX_ANSWER_CHARS].rstrip() + " "
                + words(Text("classroom.answer_cut", more=more), language))
    return text


def written_row(written: Written, data: bytes, language: str) -> dict:
    """The row of the written item: no score (the teacher gives it), the student's answer
    (:func:`answer_text`) and the rubric line, both in the CSV's last columns."""
    try:
        answer = answer_text(written_answer(data, written), language)
    except Exception:  # noqa: BLE001 - a notebook inspect() accepted; never stop the batch
        answer = ""
    detail = Text("classroom.written_to_read" if answer else "classroom.written_blank")
    return {"question": written.question, "score": "", "possible": "", "status": WRITTEN,
            "detail": words(detail, language), "answer": answer,
            "rubric": words(written.rubric, language)}


def grade(submissions, csv_path=None, *, seed: int | None = None,
          limits: sandbox.Limits | None = None, jobs: int = 1, progress: bool = True,
          unsandboxed: bool = False) -> list[dict]:
    """Grade every file under ``submissions``; return the rows (and write them to ``csv_path``).

    Args:
        submissions: folder of returned notebooks (sub-folders and zips are searched).
        csv_path: where the CSV goes (None: no file). Rows are appended to
            ``<csv_path>.incomplete`` as computed; it is renamed to ``csv_path`` at the end.
        seed: draws the hidden cases' inputs; default: a fresh random seed per batch.
        limits: the sandbox's :class:`~book.classroom.sandbox.Limits`.
        jobs: submissions graded at the same time (one sandbox each).
        unsandboxed: the teacher's explicit permission to grade without a sandbox where none
            works here (every row then says so); without it, no sandbox raises
            :class:`~book.classroom.sandbox.SandboxUnavailable` before anything runs.
    """
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS={submissions} is not a folder of notebooks")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r} must be a positive integer")
    validate.boolean("progress", progress)
    limits = sandbox.Limits() if limits is None else limits
    if not isinstance(limits, sandbox.Limits):
        raise TypeError(f"limits must be a book.classroom.Limits, got {type(limits).__name__}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed={seed!r} must be a non-negative integer (or None for a fresh "
                         "random seed)")
    seed = secrets.randbits(32) if seed is None else seed
    items = collect(submissions)
    if not items:
        raise FileNotFoundError(f"no files under {submissions}")
    mode = sandbox.require_sandbox(unsandboxed)  # fails closed, before the old CSV is removed
    if mode != "bubblewrap":
        warnings.warn(sandbox.unsandboxed_warning(), sandbox.UnsandboxedWarning, stacklevel=2)
    writer = _Writer(csv_path)
    rows: list[dict] = []
    bar = progress_bar(len(items), "grading", show=progress, unit="file")
    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            pending = {}
            for item in items:
                pending[pool.submit(grade_one, item, seed, limits, unsandboxed)] = item
            for future, item in pending.items():  # in file order, each as soon as it is done
                bar.set_postfix_str(item.label[-50:], refresh=True)
                try:
                    new, seconds = future.result()
                except Exception as error:  # noqa: BLE001 - one file never stops the batch
                    new, seconds = [{"submission": item.label, "assignment": "", "question": "",
                                     "score": 0, "possible": "", "status": "error",
                                     "detail": f"grader error: {type(error).__name__}: "
                                               f"{error}"[:300]}], 0.0
                for row in new:
                    row.setdefault("seconds", round(seconds, 2) if row["status"] != "skipped"
                                   else "")
                    row.setdefault("isolation", mode)  # files never run: the batch's mode
                writer.write(new)
                rows += new
                bar.update(1)
    finally:
        bar.close()
        writer.close(complete=len(rows) > 0 and all(
            any(r["submission"] == i.label for r in rows) for i in items))
    return rows


def _cell(value):
    """A CSV cell that a spreadsheet shows as text: file names, error messages and written
    answers come from students, and a cell starting with = + - @ would be run as a formula
    (so would their full-width twins in some spreadsheets)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d",
                                                 "\uff0b", "\uff0d", "\uff20"):
        return "'" + value
    return value


class _Writer:
    """Rows to ``<csv>.incomplete``, flushed one submission at a time; renamed when done."""

    def __init__(self, csv_path):
        self.final = Path(csv_path) if csv_path is not None else None
        self.file = None
        if self.final is None:
            return
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.partial = self.final.with_name(self.final.name + ".incomplete")
        for stale in (self.final, self.partial):
            if stale.exists():
                stale.unlink()
        self.file = self.partial.open("w", newline="", encoding="utf-8")
        self.csv = csv.DictWriter(self.file, fieldnames=FIELDS)
        self.csv.writeheader()
        self.file.flush()

    def write(self, rows: list[dict]) -> None:
        if self.file is not None:
            self.csv.writerows([{k: _cell(v) for k, v in r.items()} for r in rows])
            self.file.flush()
            os.fsync(self.file.fileno())

    def close(self, complete: bool) -> None:
        if self.file is not None:
            self.file.close()
            if complete:
                os.replace(self.partial, self.final)


def summary(rows: list[dict]) -> str:
    """Total per submission: 'score / possible' or its status and reason; a submission graded
    without a sandbox says ``[unsandboxed]``."""
    totals: dict[str, list] = {}
    for r in rows:
        t = totals.setdefault(r["submission"], [0.0, 0.0, r["status"], r["detail"], False])
        if r["status"] == "graded":
            t[0] += float(r["score"])
            t[1] += float(r["possible"])
        t[4] |= r.get("isolation") == "unsandboxed"
    lines = []
    for sub, (got, possible, status, detail, bare) in sorted(totals.items()):
        shown = f"{got:5.1f} / {possible:g}" if status == "graded" else f"{status}: {detail}"
        mark = "[unsandboxed] " if bare else ""
        lines.append(f"  {sub:48} {mark}{shown}"[:160])
    return "\n".join(lines)


def merge(paths) -> list[dict]:
    """The rows of several ``grades.csv`` files (one class graded in parts, e.g. on several
    machines), as one CSV: the submissions in the order one batch over all of them would use.

    Raises ValueError, naming the files, where a file is not a finished grades CSV (another
    header, an ``.incomplete`` file) or where a submission appears in two files or twice in
    one: a class split over machines must grade each submission exactly once.
    """
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("merge needs at least one grades CSV: merge a.csv b.csv > all.csv")
    rows: list[dict] = []
    where: dict[str, int] = {}
    for index, path in enumerate(paths):
        if path.name.endswith(".incomplete"):
            raise ValueError(f"{path} is an unfinished batch (grading was interrupted); grade "
                             "that part again and merge its finished CSV")
        if not path.is_file():
            raise FileNotFoundError(f"{path} is not a file; give the grades CSVs to merge")
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != FIELDS:
                raise ValueError(f"{path} is not a grades CSV of this version: its header is "
                                 f"{reader.fieldnames}, expected {FIELDS}")
            mine: set[tuple] = set()
            for row in reader:
                key = (row["submission"], row["question"])
                if key in mine:
                    raise ValueError(f"{path} holds the row of {row['submission']!r} "
                                     f"{row['question'] or '(no question)'} twice")
                mine.add(key)
                other = where.setdefault(row["submission"], index)
                if other != index:
                    raise ValueError(f"{row['submission']!r} was graded twice, in "
                                     f"{paths[other]} and in {path}; grade each submission "
                                     "on one machine only")
                rows.append(row)
    order = {label: index for index, label in enumerate(
        sorted(where, key=lambda label: tuple(label.split("/"))))}
    return sorted(rows, key=lambda r: order[r["submission"]])  # stable: questions keep order


def write_csv(rows: list[dict], out) -> None:
    """``rows`` (as read from grades CSVs: already made spreadsheet-safe) as CSV to ``out``."""
    writer = csv.DictWriter(out, fieldnames=FIELDS)
    writer.writeheader()
    writer.writerows(rows)


def read_csv(path) -> list[dict]:
    with Path(path).open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(io.StringIO(f.read())))
