"""The class server, for real (issue 46): the repository's hub/jupyterhub_config.py with two
students and a teacher of this run, set up and started with the teacher's own commands
(``python -m book.classroom.hub setup|serve``, what ``sudo make hub`` runs), on 127.0.0.1 and
free ports, with its folder under /srv.

In headless Chromium, both students log in at once from chapter 2's launch button in a page
built with this hub's address, land on the notebook in their own JupyterLab, Run All without an
error, and move a live explorer, which redraws. One student edits an assignment, the teacher
publishes a change to the course, and the student's next click keeps the edit and brings the
change; a deleted chapter comes back fresh. From student A's kernel, student B's home, the hub's
state, the teacher's solutions and hidden cases raise PermissionError. The teacher collects and
grades: the CSV has both students' rows. Bad input: an unknown user and a wrong password are
refused with JupyterHub's message and change nothing; a second hub on the same port, a hub
started without root and a broken roster are refused with what to do. At the end the hub and
proxy are stopped by their pids and the accounts, homes and folder removed.

Root only (useradd); `make test-all` and CI (.ci/run) run it.
"""

from __future__ import annotations

import csv
import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

import headless
import hub_session as hs
import pytest
from test_jupyterlab import ERRORS, _exercise_live

pytestmark = [pytest.mark.slow, pytest.mark.extended,
              pytest.mark.skipif(hs.why_not() is not None, reason=str(hs.why_not()))]

ROOT = hs.ROOT
CHAPTER = "02_scaling"
ASSIGNMENT = "01_attention_numpy"
SETUP_TIMEOUT_S = 1500
RUN_ALL_TIMEOUT_S = 300


def _modes(paths: list[Path]) -> dict[Path, int]:
    return {p: p.stat().st_mode for p in paths if p.exists()}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    from book.classroom.hub import install

    base = tmp_path_factory.mktemp("hub")
    made = hs.make(base, n_students=2)
    modes = _modes([ROOT / p for p in install.PRIVATE])
    start = time.perf_counter()
    try:
        setup = made.cli("setup", timeout=SETUP_TIMEOUT_S)
        made.setup_seconds = time.perf_counter() - start
        assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
        made.setup_log = setup.stdout
        hs.read_passwords(made)
        hs.start(made)
        yield made
    finally:
        problems = hs.stop_and_remove(made)
        for path, mode in modes.items():   # the checkout as the test found it
            path.chmod(mode)
        assert not problems, problems


@pytest.fixture(scope="module")
def chapter_page(hub, tmp_path_factory):
    """Chapter 2's page, built with this hub's address (BOOK_HUB_URL): the landing page and
    the chapter alone, as `make book` builds them."""
    from book.site import launch

    out = tmp_path_factory.mktemp("hub-book")
    toc = out / "_toc.yml"
    toc.write_text(f"format: jb-book\nroot: index\nchapters:\n- file: chapters/{CHAPTER}\n",
                   encoding="utf-8")
    env = {**os.environ, launch.HUB_URL_ENV: hub.url,
           launch.HUB_COURSE_ENV: str(hub.settings().course), "BOOK_STUDENT": "0"}
    proc = subprocess.run([str(Path(sys.executable).with_name("jupyter-book")), "build",
                           str(ROOT), "--toc", str(toc), "--path-output", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    page = out / "_build" / "html" / "chapters" / f"{CHAPTER}.html"
    assert page.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return page


@pytest.fixture(scope="module")
def browser():
    with headless.browser() as launched:
        yield launched


def _launch(browser, chapter_page: Path):
    """A new student's browser on chapter 2's page; clicks the launch button (JupyterHub)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(chapter_page.as_uri(), wait_until="load")
    page.locator(".dropdown-launch-buttons button").click()
    item = page.locator(".dropdown-launch-buttons a.dropdown-item")
    item.wait_for(state="visible", timeout=5_000)
    if item.get_attribute("target") == "_blank":   # the theme opens launch links in a new tab
        with context.expect_page() as opened:
            item.click()
        page.close()
        return opened.value
    item.click()
    return page


def _until(check, timeout_s: float, what: str, page=None) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if check():
            return
        if page is not None:
            errors = page.evaluate(ERRORS)
            assert not errors, f"{what}: error outputs {errors}"
            page.wait_for_timeout(500)   # (time.sleep would keep Playwright from its events)
        else:
            time.sleep(0.5)
    raise AssertionError(f"{what}: not done after {timeout_s} s")


def _pull(page, hub, path: str) -> None:
    """Click the course link of ``path`` (as a launch button does) and wait for JupyterLab."""
    from book.classroom.hub import course

    page.goto(course.link(hub.settings(), path))
    hs.wait_lab(page, f"{course.FOLDER}/{path}")


def test_two_students_from_the_page_to_a_graded_assignment(hub, chapter_page, browser,
                                                           tmp_path):
    from book.classroom.hub import course

    settings = hub.settings()
    a, b = hub.students
    print(f"\nsetup (make hub's steps, from nothing): {hub.setup_seconds:.0f} s")

    # both students log in at once from the launch button
    pages = {user: _launch(browser, chapter_page) for user in (a, b)}
    for user, page in pages.items():
        hs.submit_login(page, user, hub.passwords[user])
    start = time.perf_counter()
    notebook = f"{course.FOLDER}/chapters/{CHAPTER}.ipynb"
    for page in pages.values():
        hs.wait_lab(page, notebook)
    print(f"both logged in, servers started, chapter {CHAPTER} open: "
          f"{time.perf_counter() - start:.1f} s")
    for user in (a, b):
        assert (Path(pwd.getpwnam(user).pw_dir) / notebook).is_file()

    # Run All in both at once; no error; a live explorer redraws in each
    start = time.perf_counter()
    for page in pages.values():
        hs.run_all(page)
    for user, page in pages.items():
        _until(lambda p=page: hs.finished(p), RUN_ALL_TIMEOUT_S, f"{user}: Run All", page)
        assert page.evaluate(ERRORS) == [], user
    print(f"Run All of chapter {CHAPTER} in both servers: {time.perf_counter() - start:.1f} s")
    for user, page in pages.items():
        page.wait_for_timeout(1500)
        live = page.query_selector_all(".jp-NotebookPanel:not(.lm-mod-hidden) "
                                       ".jp-CodeCell:has(.book-live-hint) "
                                       ".jp-OutputArea-output:has(.jupyter-widgets)")
        assert live, f"{user}: no live explorer rendered"
        assert _exercise_live(page, live[0]) is None, user

    # A edits an assignment; the teacher changes the course; A's next click keeps the edit
    page = pages[a]
    assignment = course.assignment_path(ASSIGNMENT)
    _pull(page, hub, assignment)
    mark = "# my own answer, kept across pulls"
    page.evaluate(f"""(mark) => {{
      const cell = {hs.PANEL}.content.model.cells.get(0);
      cell.sharedModel.setSource(cell.sharedModel.getSource() + '\\n' + mark);
      return window.jupyterapp.commands.execute('docmanager:save');
    }}""", mark)
    mine = Path(pwd.getpwnam(a).pw_dir) / course.FOLDER / assignment
    _until(lambda: mark in mine.read_text(encoding="utf-8"), 30, "saving the edit")
    work = settings.state / "course-work"
    (work / "README.md").write_text((work / "README.md").read_text() + "\nA new note.\n")
    for args in (["add", "README.md"], ["commit", "-q", "-m", "a note"],
                 ["push", "-q", "origin", "HEAD:main"]):
        subprocess.run(course.GIT + args, cwd=work, check=True, capture_output=True)
    _pull(page, hub, assignment)
    assert mark in mine.read_text(encoding="utf-8"), "the second pull lost the student's edit"
    assert "A new note." in (mine.parents[2] / "README.md").read_text(), \
        "the second pull did not bring the teacher's change"

    # a deleted copy comes back fresh
    chapter_copy = Path(pwd.getpwnam(a).pw_dir) / notebook
    page.evaluate("(p) => window.jupyterapp.serviceManager.contents.delete(p)", notebook)
    _until(lambda: not chapter_copy.exists(), 30, "deleting the chapter")
    _pull(page, hub, f"chapters/{CHAPTER}.ipynb")
    assert chapter_copy.is_file(), "a deleted chapter did not come back"

    # what A's kernel cannot read
    targets = {"B's home": pwd.getpwnam(b).pw_dir, "the hub's state": str(settings.state),
               "the solutions": str(ROOT / "assignments" / f"{ASSIGNMENT}.ipynb"),
               "the hidden cases": str(ROOT / "book" / "classroom" / "assignments"
                                       / f"a{ASSIGNMENT}.py"),
               "the roster": str(settings.roster)}
    code = "import os\n" + "".join(
        f"try:\n    os.listdir({p!r}) if os.path.isdir({p!r}) else open({p!r}).read(1)\n"
        f"    print({k!r}, 'READ')\nexcept Exception as e:\n    print({k!r}, type(e).__name__)\n"
        for k, p in targets.items())
    said = hs.kernel_run(page, code)
    for what in targets:
        assert f"{what} PermissionError" in said, f"A's kernel: {said!r}"
    print("from A's kernel: " + "; ".join(said.strip().splitlines()))

    # the teacher collects and grades
    out = tmp_path / "submissions"
    collected = hub.cli("collect", "--out", str(out), timeout=300)
    assert collected.returncode == 0, collected.stderr
    grades = tmp_path / "grades.csv"
    graded = subprocess.run([sys.executable, "-m", "book.classroom", "grade", str(out), "--csv",
                             str(grades)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    with grades.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    students = {r["submission"].split("/")[0] for r in rows}
    assert students == {a, b}, students
    scored = [r for r in rows if r["status"] != "written"]   # the written items: no score
    assert all(r["status"] == "graded" for r in scored), [r for r in scored
                                                           if r["status"] != "graded"]
    edited = [r for r in rows if r["submission"].startswith(f"{a}/{ASSIGNMENT}/")]
    assert edited, "A's edited assignment was not collected"
    print(f"collected and graded: {len(rows)} rows, students {sorted(students)}")
    for p in pages.values():
        p.context.close()


def test_wrong_logins_are_refused_and_change_nothing(hub, browser):
    page = browser.new_context().new_page()
    accounts_before = {p.pw_name for p in pwd.getpwall()}
    try:
        for user, password in (("nosuchstudent", "whatever"),
                               (hub.students[0], "not-the-password")):
            page.goto(f"{hub.url}/hub/login")
            hs.submit_login(page, user, password)
            page.wait_for_selector(".login_error, .alert-danger, p.error", timeout=20_000)
            text = page.inner_text("body")
            assert "Invalid username or password" in text, (user, text[:300])
            assert "/hub/login" in page.url
    finally:
        page.context.close()
    assert {p.pw_name for p in pwd.getpwall()} == accounts_before


def test_a_second_hub_on_the_same_port_is_refused(hub):
    proc = hub.cli("serve", timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "is already in use" in proc.stderr and "hub-stop" in proc.stderr, proc.stderr


def test_a_broken_roster_is_refused_before_anything(hub, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    shutil.copy(hub.config, folder / "jupyterhub_config.py")
    (folder / "roster.csv").write_text("username,name\nAlice Smith,Alice\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "book.classroom.hub", "users", "--config",
                           str(folder / "jupyterhub_config.py")], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 2 and "cannot be a username" in proc.stderr, proc.stderr
    assert "Alice Smith" not in {p.pw_name for p in pwd.getpwall()}
