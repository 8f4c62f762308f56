"""Shared fixtures and helpers: the repository root, one clean build of the book per test
session, the Chinese edition, exercise checkers' basics and the texts of a figure."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import book.chapters as _chapters

ROOT = Path(__file__).resolve().parent.parent
# The chapter notebooks, in the book's order: the explicit list book.chapters.CHAPTERS, not a
# glob (tests/chapters/test_registry.py fails when a notebook of chapters/ is missing from it).
CHAPTERS = [ROOT / "chapters" / f"{entry.page}.ipynb" for entry in _chapters.CHAPTERS]


def pytest_report_header(config):
    return [f"book root: {ROOT}", f"chapter notebooks: {len(CHAPTERS)}"]


# ---- the built book: both editions, built once per run, in the background ------------------
#
# The English and the Chinese edition each execute every notebook, so the two builds are the
# longest single steps of `make test`. They start as soon as collection shows that a selected
# test needs them (all at once, while the unit tests run), and every test process of the run
# (pytest-xdist workers included) waits for the same builds. The builds of one checkout share
# one kernel slot per core (book/site/execution.py), so three builds never run more kernels
# than there are cores; each build's lines go to its folder's build.log as they come.
BOOK_FIXTURES = {"built_book": "en", "built_zh": "zh", "built_student": "student"}
BUILD_TIMEOUT_S = 1800
# A folder to keep the builds in across runs (developers re-running one slow test file on an
# unchanged tree): a build found there with a result.json is reused as it is. make test never
# sets it, so every `make test` builds from scratch.
REUSE = os.environ.get("BOOK_TEST_BUILDS")


def _builds_dir(config) -> Path:
    if REUSE:
        return Path(REUSE).resolve()
    base = config._tmp_path_factory.getbasetemp()
    # xdist: each worker has its own basetemp under the run's; the builds sit beside them
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _start_builds(config, editions) -> None:
    """Start each edition's build (tests/build_edition.py) unless a process of this run has."""
    from filelock import FileLock

    base = _builds_dir(config)
    base.mkdir(parents=True, exist_ok=True)
    with FileLock(str(base / "builds.lock")):
        for edition in sorted(editions):
            out = base / f"book-{edition}"
            if (out / "started").exists():
                continue
            out.mkdir(parents=True, exist_ok=True)
            (out / "started").write_text(str(os.getpid()), encoding="utf-8")
            log = open(out / "runner.log", "w", encoding="utf-8")  # noqa: SIM115 - the child's
            subprocess.Popen([sys.executable, str(ROOT / "tests" / "build_edition.py"), edition,
                              str(out)], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


# pytest-xdist: `make test` runs `-n 2 --dist loadfile`, with the scheduler below: a test
# file's tests stay on one worker, so its module fixtures (a JupyterLab server, a graded batch,
# trained models) are made once per run; but the tests of these files are independent of each
# other and heavy, so they are spread over both workers one by one. (xdist's own loadgroup
# cannot be used: it renames node ids in a way pytest 9 ignores.)
SPREAD = {"test_notebooks.py", "test_browser.py", "test_browser_a11y.py", "test_browser_figures.py"}


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesExceptSpread(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path.rsplit("/", 1)[-1] in SPREAD else path

    return FilesExceptSpread(config, log)


def pytest_collection_modifyitems(config, items):
    """Tests that need no build first, so that they run while the builds run; then the ones
    that wait for a build (the sort is stable: files keep their order within each part)."""
    items.sort(key=lambda item: any(name in BOOK_FIXTURES
                                    for name in getattr(item, "fixturenames", ())))


def pytest_collection_finish(session):
    wanted = {BOOK_FIXTURES[name] for item in session.items
              for name in getattr(item, "fixturenames", ()) if name in BOOK_FIXTURES}
    if wanted and not session.config.option.collectonly:
        _start_builds(session.config, wanted)


def _wait_for_build(config, edition: str) -> dict:
    _start_builds(config, {edition})  # if collection did not (e.g. a fixture used indirectly)
    out = _builds_dir(config) / f"book-{edition}"
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while not (out / "result.json").exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the {edition} build did not finish in {BUILD_TIMEOUT_S} s; "
                        f"see {out / 'runner.log'}")
        time.sleep(1)
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return {**result, "html": out / "_build" / "html", "executed": out / "_build" /
            "jupyter_execute"}


@pytest.fixture(scope="session")
def built_book(request):
    """The English edition built from scratch with ``-nW --keep-going`` into a temporary folder.

    Returns a dict with the html folder, the executed notebooks' folder, the log, the exit
    code, the warning count and the build's wall time, so that several tests can assert on one
    build (and one build serves every xdist worker).
    """
    return _wait_for_build(request.config, "en")


@pytest.fixture(scope="session")
def built_zh(request):
    """The Chinese edition, built like ``make book`` builds it (``--config $(python -m
    book.site.editions config zh)``) into a folder of its own, concurrently with the English one;
    the same keys as :func:`built_book`. Its html is not published under the English one."""
    return _wait_for_build(request.config, "zh")


@pytest.fixture(scope="session")
def built_student(request):
    """The English edition built as ``make book-student`` builds it (``BOOK_STUDENT=1``: the
    worked solutions left out); the same keys as :func:`built_book`."""
    return _wait_for_build(request.config, "student")


PHASES = ROOT / "_build" / "test-phases.json"  # the last run's phase times (make bench prints)


def pytest_sessionstart(session):
    session.config._book_started = time.perf_counter()


def _phase_times(terminalreporter) -> dict:
    """Seconds per test file (setup + call + teardown of its tests, summed over the workers:
    a test waiting for a build counts the wait), the builds' own times and the run's wall."""
    per_file: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                name = report.nodeid.split("::", 1)[0]
                per_file[name] = per_file.get(name, 0.0) + report.duration
    builds = {}
    base = None
    try:
        base = _builds_dir(terminalreporter.config)
    except Exception:  # noqa: BLE001 - no tmp_path_factory (e.g. -p no:tmpdir)
        pass
    for edition in BOOK_FIXTURES.values():
        result = base and base / f"book-{edition}" / "result.json"
        if result and result.exists():
            builds[edition] = json.loads(result.read_text(encoding="utf-8"))["seconds"]
    wall = time.perf_counter() - terminalreporter.config._book_started
    marks = terminalreporter.config.getoption("markexpr", "") or ""
    command = {"": "make test-all", "not extended": "make test"}.get(marks, f"pytest -m {marks!r}")
    return {"wall": wall, "files": per_file, "builds": builds, "command": command,
            "workers": getattr(terminalreporter.config.option, "numprocesses", None),
            "load": os.getloadavg(), "when": time.strftime("%Y-%m-%d %H:%M:%S")}


def print_phases(phases: dict, write=print) -> None:
    write(f"{phases.get('command', 'pytest')}: wall {phases['wall']:.0f} s "
          f"({phases.get('workers') or 1} worker(s); load average "
          f"at the end {' '.join(f'{x:.1f}' for x in phases['load'])}; {phases['when']})")
    for edition, seconds in phases["builds"].items():
        write(f"  {seconds:7.1f} s  build of the {edition} edition (in the background)")
    for name, seconds in sorted(phases["files"].items(), key=lambda kv: -kv[1]):
        if seconds >= 1:
            write(f"  {seconds:7.1f} s  {name}")


def pytest_terminal_summary(terminalreporter):
    """Print the phase times per test file (and keep them for ``make bench``), and how long
    each chapter took in its clean-kernel run (tests/test_notebooks.py)."""
    phases = _phase_times(terminalreporter)
    if len(phases["files"]) > 1:
        terminalreporter.section("time per test file (s, summed over workers)")
        print_phases(phases, terminalreporter.write_line)
        if len(phases["files"]) > 20 and phases["builds"]:  # a whole run (not make quick's)
            PHASES.parent.mkdir(exist_ok=True)
            PHASES.write_text(json.dumps(phases, indent=1), encoding="utf-8")
    rows = []
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get(
            "failed", []):
        if report.when == "call" and ("test_same_output_twice" in report.nodeid
                                      or "test_solution_notebooks_run" in report.nodeid):
            nbmake = dict(report.user_properties).get("nbmake") or {}
            name = (report.nodeid.split("[")[-1].rstrip("]") if "[" in report.nodeid
                    else "assignments/*.ipynb (solutions)")
            rows.append((name, report.duration,
                         report.outcome, nbmake))
    if rows:
        terminalreporter.section("notebooks: nbmake's run (pytest --nbmake) + comparison with "
                                 "the build's run (budget 30 s each)")
        runs = 0
        for name, seconds, outcome, nbmake in sorted(rows, key=lambda r: r[0]):
            count = ""
            if nbmake:
                n = nbmake.get("notebooks", 1)
                runs += nbmake["build_runs"] + n
                count = (f"  executions: build {nbmake['build_runs']} + nbmake {n}, "
                         f"nbmake {nbmake['seconds']:.1f} s")
            terminalreporter.write_line(f"{seconds:6.1f} s  {outcome:6}  {name}{count}")
            for line in nbmake.get("lines", []):
                terminalreporter.write_line(f"          nbmake: {line}")
        terminalreporter.write_line(f"{runs} notebook executions counted (build + nbmake)")


@pytest.fixture(scope="module")
def one_thread():
    """Run a test module's torch code on one thread, then restore the setting.

    Tiny tensors gain nothing from threads, training repeats bit for bit on one thread, and on
    a busy machine a second thread waiting for a free core makes each step many times slower.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def check_message(key, answer) -> str:
    """The hint an exercise checker gives for a wrong ``answer`` (asserting it is judged wrong)."""
    from book.face import checks

    result = checks.check(key, answer)
    assert not result.ok, (key, answer)
    return result.message


@pytest.fixture(autouse=True)
def _english_after_each_test():
    """Every test ends in the English edition, whatever it set: book.kit.i18n's language is one
    global per process, and a test that left it at "zh" turned the next file's English asserts
    on the same xdist worker Chinese ("头 0" for "head 0")."""
    yield
    from book.kit import i18n

    i18n.set_language("en")


@pytest.fixture
def chinese():
    """Run a test in the Chinese edition (book.kit.i18n set to "zh"), then back to English."""
    from book.kit import i18n

    i18n.set_language("zh")
    yield
    i18n.set_language("en")


def check_exercise(key) -> None:
    """An exercise checker's basics: the reference passes, each listed mistake is judged wrong
    with a hint (one that does not print a single-number answer), and no answer is "todo"."""
    from book import chapters
    from book.face import checks

    answer = checks.reference(key)
    assert checks.check(key, answer).ok
    for wrong in chapters.exercises()[key].mistakes():
        result = checks.check(key, wrong)
        assert result.status == "bad", (key, wrong)
        assert len(result.message) > 15
        if isinstance(answer, (int, float)) and not callable(answer):
            assert f"{float(answer):g}" not in result.message.replace(str(wrong), "")
    assert checks.check(key, ...).status == "todo"


# English words and phrases left in the Chinese edition's figures
ENGLISH_PHRASE = re.compile(r"[A-Za-z]{3,}[\s-]+[A-Za-z]{3,}")
FIGURE_TEXT_KEYS = ("text", "name", "label", "prefix", "hovertemplate")


def figure_texts(fig, keys=FIGURE_TEXT_KEYS, drop: str = "") -> list[str]:
    """Every text of ``fig`` under one of ``keys`` (by default the titles, annotations, legend,
    menus, sliders and hover templates a reader sees), with tags, plotly's %{...} fields and
    whatever the pattern ``drop`` matches removed."""
    pattern = re.compile(r"<[^>]+>|%\{[^}]*\}" + (f"|{drop}" if drop else ""))
    out = []

    def walk(x, key=""):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v, key)
        elif isinstance(x, str) and key in keys:
            out.append(pattern.sub(" ", x))

    walk(fig.to_plotly_json())
    return out
