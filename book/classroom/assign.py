"""Generate the assignments: otter's student notebooks, the student bundle, checked solutions.

``otter assign`` turns each instructor notebook in ``assignments/`` into a student notebook
(solutions replaced by ``...``) with its public tests as files; the hidden tests are not in
those notebooks at all: they are the cases of the assignment's module in
:mod:`book.classroom.assignments`. After otter, every
solution is graded through the real sandbox and must earn full marks, so a broken solution or
a spec that disagrees with it stops generation.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

from .assignments import ASSIGNMENTS

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "assignments"
BUILD = ROOT / "build" / "assignments"

# What a student installs (no `-e .`: the bundle carries no book code; the notebooks need none).
STUDENT_REQUIREMENTS = """\
# What you need for the attention assignments (Python 3.10 or newer).
numpy==2.4.6
torch==2.13.0
otter-grader==7.0.0   # grader.check() in the notebooks
jupyterlab==4.6.6
ipykernel
"""

STUDENT_README = """\
# Attention assignments

Each folder holds one assignment: its notebook and the `tests/` folder that its
`grader.check("q…")` cells read. Keep the two together; you may rename the notebook.

## Set up once

```bash
python3 -m venv .venv
.venv/bin/pip install -r requirements.txt        # Windows: .venv\\Scripts\\pip ...
.venv/bin/jupyter lab
```

(torch is only needed for `02_mha_torch` and `06_stability`; on a machine without a GPU,
`pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu` is smaller.)

## Work and hand in

Fill in every `...`, run each `grader.check(...)` cell to see the public tests, answer the
written question at the end in the cell under it (your teacher reads it), then hand in the
`.ipynb` file. The public checks are worth one point of each question's ten: hidden tests
call your functions on other inputs. Your notebook is graded in a fresh kernel from top to
bottom, so make sure "Restart kernel and run all cells" works.
"""

# For the demo and the tests: a plausible partly wrong solution of each assignment, made by
# replacing lines of the instructor's solution (each pair must match exactly once); each
# assignment's module (book/classroom/assignments/) lists its own.
PARTIAL_MISTAKES = {a.stem: list(a.partial_mistakes) for a in ASSIGNMENTS.values()}


class AssignmentError(RuntimeError):
    """An instructor notebook could not be turned into an assignment (e.g. a broken solution)."""


def sources(folder: Path = SOURCES) -> list[Path]:
    """The instructor notebooks (``*.ipynb``) in ``folder``."""
    found = sorted(Path(folder).glob("*.ipynb"))
    if not found:
        raise FileNotFoundError(f"no instructor notebooks (*.ipynb) in {folder}")
    return found


def generate(out: Path = BUILD, source_dir: Path = SOURCES, *,
             check_solutions: bool = True, unsandboxed: bool = False,
             languages: tuple[str, ...] = ("en", "zh")) -> dict[str, dict]:
    """Run ``otter assign`` on every instructor notebook; write the student bundles.

    Layout under ``out``, English: ``student/`` (the bundle: README, requirements, one folder
    per assignment with its notebook and public ``tests/``), ``student-bundle.zip`` (the same,
    zipped), ``solutions/`` and ``otter/`` (private). Chinese (in ``languages``), the same with
    ``-zh``: ``student-zh/``, ``student-bundle-zh.zip``, ``solutions-zh/``, ``otter-zh/``, and
    ``sources-zh/`` (the Chinese instructor notebooks, private), all generated from the English
    notebooks and the catalogues (:mod:`book.classroom.languages`). Raises
    :class:`AssignmentError` when otter fails or a solution (of either language) does not earn
    full marks from the hidden cases. Returns, per assignment, the paths of the English student
    notebook, its tests folder and the solutions notebook, and under ``"zh"`` the same three
    for Chinese. The solutions are graded in the sandbox: without a working one this raises
    :class:`~book.classroom.sandbox.SandboxUnavailable` before anything is generated, unless
    ``unsandboxed`` is True (the teacher's explicit permission to grade them without it).
    """
    from . import languages as lang
    from . import sandbox

    unknown = [code for code in languages if code not in lang.LANGUAGES]
    if unknown or "en" not in languages:
        raise ValueError(f"languages={languages!r}: English and any of {lang.LANGUAGES}")
    if check_solutions:
        sandbox.require_sandbox(unsandboxed)  # fail closed before otter's slow work

    out = Path(out)
    stems = {a.stem for a in ASSIGNMENTS.values()}
    found = sources(source_dir)
    for src in found:
        if src.stem not in stems:
            raise AssignmentError(f"{src.name} has no hidden cases: no module "
                                  f"book/classroom/assignments/a{src.stem}.py (known: "
                                  f"{sorted(stems)}); add one, as the others are")
    result: dict[str, dict] = {}
    for code in languages:
        suffix = "" if code == "en" else f"-{code}"
        made = found
        if code != "en":   # the Chinese instructor notebooks, from the English ones
            made = lang.write_sources(found, out / f"sources{suffix}")
        readme = STUDENT_README if code == "en" else lang.chinese_readme(STUDENT_README)
        paths = _assign(made, out, suffix, readme, code)
        for stem, entry in paths.items():
            if code == "en":
                result[stem] = entry
            else:
                result[stem][code] = entry
    if check_solutions:
        _check_solutions(result, unsandboxed)
    return result


def _assign(found: list[Path], out: Path, suffix: str, readme: str,
            language: str = "en") -> dict[str, dict]:
    """otter assign on each of ``found``; the bundle ``student<suffix>/`` and its zip."""
    student = out / f"student{suffix}"
    if student.exists():
        shutil.rmtree(student)
    for sub in ("student", "solutions"):
        (out / f"{sub}{suffix}").mkdir(parents=True, exist_ok=True)
    result = {}
    for src in found:
        work = out / f"otter{suffix}" / src.stem
        if work.exists():
            shutil.rmtree(work)
        proc = subprocess.run([sys.executable, "-m", "otter", "assign", str(src), str(work)],
                              capture_output=True, text=True, cwd=src.parent)
        made = work / "student" / src.name
        if proc.returncode != 0 or not made.exists():
            raise AssignmentError(f"otter assign failed for {src} (exit {proc.returncode}); "
                                  f"is every solution correct?\n{proc.stdout[-3000:]}"
                                  f"\n{proc.stderr[-3000:]}")
        folder = student / src.stem
        shutil.copytree(work / "student", folder)
        _any_file_name(folder / src.name)
        paths = {"student": folder / src.name, "tests": folder / "tests",
                 "solutions": out / f"solutions{suffix}" / src.name}
        shutil.copy2(work / "autograder" / src.name, paths["solutions"])
        for notebook in (paths["student"], paths["solutions"]):
            _answer_placeholder(notebook, language)
        result[src.stem] = paths
    (student / "requirements.txt").write_text(STUDENT_REQUIREMENTS, encoding="utf-8")
    (student / "README.md").write_text(readme, encoding="utf-8")
    _zip(student, out / f"student-bundle{suffix}.zip", f"attention-assignments{suffix}")
    return result


def _any_file_name(notebook: Path) -> None:
    """Let ``grader.check`` work whatever the notebook's file name: otter's init cell names the
    file (and otter reads it); without the name, otter reads the public tests from ``tests/``."""
    nb = nbformat.read(notebook, as_version=4)
    named = f'otter.Notebook("{notebook.name}")'
    cells = [c for c in nb.cells if c.cell_type == "code" and named in c.source]
    if len(cells) != 1:
        raise AssignmentError(f"{notebook.name}: expected one otter init cell with {named}, "
                              f"found {len(cells)}")
    cells[0].source = cells[0].source.replace(named, 'otter.Notebook(tests_dir="tests")')
    nbformat.write(nb, notebook)


def _answer_placeholder(notebook: Path, language: str) -> None:
    """otter writes its placeholder into the answer cell of a written item in English; the
    Chinese notebooks get it in Chinese (the grader reads either as no answer)."""
    from .feedback import Text

    english = Text("classroom.answer_placeholder")
    if language == "en":
        return
    nb = nbformat.read(notebook, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "markdown" and c.source.strip() == english]
    for cell in cells:
        cell.source = english.to(language)
    if cells:
        nbformat.write(nb, notebook)


def _zip(folder: Path, target: Path, root: str) -> None:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                z.write(path, Path(root) / path.relative_to(folder))


def _check_solutions(generated: dict[str, dict[str, Path]], unsandboxed: bool = False) -> None:
    """Grade every solution in the sandbox; anything short of full marks is an error."""
    import tempfile

    from .grading import WRITTEN, grade

    with tempfile.TemporaryDirectory(prefix="solutions-") as tmp:
        for stem, paths in generated.items():
            shutil.copy2(paths["solutions"], Path(tmp) / f"{stem}.ipynb")
            for code in _other_languages(paths):
                shutil.copy2(paths[code]["solutions"], Path(tmp) / f"{stem}.{code}.ipynb")
        rows = grade(tmp, None, progress=False, unsandboxed=unsandboxed,
                     jobs=max(1, min(len(generated), os.cpu_count() or 1)))
    wrong = [r for r in rows if r["status"] not in ("graded", WRITTEN)
             or r["status"] == "graded" and r["score"] != r["possible"]]
    if wrong:
        lines = "\n".join(f"  {r['submission']} {r['question']}: {r['score']}/{r['possible']} "
                          f"{r['detail']}" for r in wrong)
        raise AssignmentError(f"a solution does not earn full marks from the hidden cases; is "
                              f"every solution correct?\n{lines}")
    unanswered = sorted(r["submission"] for r in rows if r["status"] == WRITTEN
                        and not r["answer"])
    if unanswered:
        raise AssignmentError(f"no model answer to the written item in {unanswered}: write one "
                              "between its BEGIN SOLUTION and END SOLUTION cells")


def fake_submissions(generated: dict[str, dict[str, Path]], out: Path) -> list[Path]:
    """Three submissions per assignment and language: the full solution, a partly wrong one
    (the same mistakes in every language), a blank one; Chinese ones are named ``…__zh__…``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for stem, paths in generated.items():
        made += _fake(stem, paths, out, stem)
        for code in _other_languages(paths):
            made += _fake(stem, paths[code], out, f"{stem}__{code}")
    return made


def _other_languages(paths: dict) -> list[str]:
    return [code for code, entry in paths.items() if isinstance(entry, dict)]


def _fake(stem: str, paths: dict, out: Path, prefix: str) -> list[Path]:
    made = []
    full = out / f"{prefix}__full.ipynb"
    shutil.copy2(paths["solutions"], full)
    blank = out / f"{prefix}__blank.ipynb"
    shutil.copy2(paths["student"], blank)
    partial = out / f"{prefix}__partial.ipynb"
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
