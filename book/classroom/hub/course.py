"""The course repository nbgitpuller hands out, and the links that hand it out.

A bare git repository at HUB_DIR/course (branch ``main``, readable by every account):

    chapters/<page>.ipynb            the chapters, English (worked solutions left out)
    zh/chapters/<page>.ipynb         the same in Chinese (generated from the catalogues)
    assignments/<name>/<name>.ipynb  the assignments' student notebooks and public tests
    zh/assignments/<name>/…          the same in Chinese

A link ``<hub>/hub/user-redirect/git-pull?repo=…&urlpath=lab/tree/course/<path>&branch=main``
logs the student in, clones the course into ``~/course`` the first time, pulls it the next
times (nbgitpuller merges: a file the student changed keeps the student's version, a file the
student deleted comes back fresh), and opens ``<path>`` in their JupyterLab. Jupyter Book's
launch buttons build the same links (book/site/launch.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlencode

from .install import ROOT, HubError, _open_to_all
from .settings import Settings

BRANCH = "main"
FOLDER = "course"          # the folder nbgitpuller makes in each home (the repository's name)
GIT = ["git", "-c", "user.name=attention hub", "-c", "user.email=hub@localhost",
       "-c", "init.defaultBranch=main"]
README = """\
# The course

Opened from a link of the book or of your teacher, each notebook here is your own copy: edit it,
run it, save it. A later click on a link brings what your teacher added since, and never
overwrites what you changed; a notebook you deleted comes back as it was handed out.

- `chapters/`: the book's chapters (`zh/chapters/`: 中文版)
- `assignments/`: the graded assignments; fill in each `...`, run `grader.check(...)`, save.
  Your teacher collects the saved notebook from here: keep its name and folder.
"""


def chapter_path(page: str, language: str = "en") -> str:
    """The path in the course of chapter ``page`` (e.g. "02_scaling") in ``language``."""
    return ("zh/" if language == "zh" else "") + f"chapters/{page}.ipynb"


def assignment_path(name: str, language: str = "en") -> str:
    return ("zh/" if language == "zh" else "") + f"assignments/{name}/{name}.ipynb"


def link(settings: Settings, path: str) -> str:
    """The nbgitpuller link that opens ``path`` of the course in a student's JupyterLab: for a
    chapter, the very URL of the book's launch button (book/site/launch.py) built with
    BOOK_HUB_URL=PUBLIC_URL and BOOK_HUB_COURSE=HUB_DIR/course."""
    query = urlencode({"repo": str(settings.course), "urlpath": f"lab/tree/{FOLDER}/{path}",
                       "branch": BRANCH, "targetpath": FOLDER}, safe="/")
    return f"{settings.public_url}/hub/user-redirect/git-pull?{query}"


def links(settings: Settings) -> list[tuple[str, str]]:
    """(what, link) for every chapter and assignment in the hub's language."""
    from book.site.zh_notebooks import chapter_pages

    out = [(f"chapter {Path(page).name}", link(settings, chapter_path(Path(page).name,
                                                                     settings.language)))
           for page in chapter_pages()]
    out += [(f"assignment {name}", link(settings, assignment_path(name, settings.language)))
            for name in assignment_names()]
    return out


def assignment_names() -> list[str]:
    return sorted(p.stem for p in (ROOT / "assignments").glob("*.ipynb"))


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(paths):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def student_assignments(settings: Settings, log=print) -> Path:
    """The assignments' student notebooks (otter assign, English and Chinese) under
    HUB_DIR/state/assignments, made again only when an instructor notebook, its catalogue or
    the classroom code changed. The solutions are checked by `make assignments`, not here."""
    from book.classroom import assign

    out = settings.state / "assignments"
    inputs = [*(ROOT / "assignments").glob("*.ipynb"),
              *(ROOT / "locale" / "zh_CN" / "assignments").glob("*.po"),
              *(ROOT / "book" / "classroom").glob("*.py")]
    stamp = _digest(inputs)
    stamp_file = out / ".stamp"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return out
    log("Generating the assignments' student notebooks (otter assign, both languages)")
    assign.generate(out, check_solutions=False)
    stamp_file.write_text(stamp + "\n")
    return out


def build_tree(settings: Settings, target: Path, log=print) -> Path:
    """Write the course's files under ``target`` (emptied first)."""
    from book.site import nbfiles, student, zh_notebooks

    if target.exists():
        shutil.rmtree(target)
    (target / "chapters").mkdir(parents=True)
    pages = zh_notebooks.chapter_pages()
    zh_notebooks.write_notebooks(target / "zh", pages)
    for page in pages:
        english = (ROOT / f"{page}.ipynb").read_text(encoding="utf-8")
        # as JupyterLab saves them: opening one does not mark it modified
        (target / f"{page}.ipynb").write_text(nbfiles.as_jupyterlab_saves(
            student.strip_notebook(english, "en", prose=True)[0]), encoding="utf-8")
        chinese = target / "zh" / f"{page}.ipynb"
        chinese.write_text(nbfiles.as_jupyterlab_saves(
            student.strip_notebook(chinese.read_text(encoding="utf-8"), "zh")[0]),
            encoding="utf-8")
    made = student_assignments(settings, log)
    for language, folder in (("en", "student"), ("zh", "student-zh")):
        into = target / ("zh/" if language == "zh" else "") / "assignments"
        into.mkdir(parents=True, exist_ok=True)
        for item in sorted((made / folder).iterdir()):
            if item.is_dir():
                shutil.copytree(item, into / item.name)
    (target / "README.md").write_text(README, encoding="utf-8")
    return target


def _git(args: list[str], cwd: Path, what: str) -> str:
    proc = subprocess.run(GIT + args, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise HubError(f"git {what} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def publish(settings: Settings, log=print) -> bool:
    """Build the course and commit it to HUB_DIR/course when it changed; True if it did.
    Students get the change at their next click on a link."""
    bare, work = settings.course, settings.state / "course-work"
    if not (bare / "HEAD").exists():
        bare.mkdir(parents=True, exist_ok=True)
        _git(["init", "--quiet", "--bare", "--initial-branch", BRANCH, str(bare)], bare.parent,
             "init")
    if not (work / ".git").exists():
        if work.exists():
            shutil.rmtree(work)
        _git(["init", "--quiet", "--initial-branch", BRANCH, str(work)], settings.state, "init")
        _git(["remote", "add", "origin", str(bare)], work, "remote add")
    tree = build_tree(settings, settings.state / "course-tree", log)
    for item in work.iterdir():
        if item.name != ".git":
            shutil.rmtree(item) if item.is_dir() else item.unlink()
    shutil.copytree(tree, work, dirs_exist_ok=True)
    _git(["add", "--all"], work, "add")
    if not _git(["status", "--porcelain"], work, "status").strip():
        return False
    files = len(_git(["ls-files"], work, "ls-files").splitlines())
    _git(["commit", "--quiet", "-m", f"The course: {files} files"], work, "commit")
    _git(["push", "--quiet", "origin", f"HEAD:{BRANCH}"], work, "push")
    _open_to_all(bare)
    log(f"The course ({files} files) is published in {bare}")
    return True


def manifest(settings: Settings) -> dict[str, str]:
    """The handed-out version of each assignment notebook of the course: path -> sha256."""
    out = _git(["ls-tree", "-r", BRANCH], settings.course, "ls-tree")
    found = {}
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        if "/assignments/" in f"/{path}" and path.endswith(".ipynb"):
            blob = meta.split()[2]
            data = subprocess.run(["git", "cat-file", "blob", blob], cwd=settings.course,
                                  capture_output=True, check=True).stdout
            found[path] = hashlib.sha256(data).hexdigest()
    return found


def dump_links(settings: Settings) -> str:
    return json.dumps(dict(links(settings)), indent=1, ensure_ascii=False)
