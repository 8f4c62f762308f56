"""Shared fixtures: the repository root and one clean build of the book per test session."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def pytest_report_header(config):
    return [f"book root: {ROOT}", f"chapter notebooks: {len(CHAPTERS)}"]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build the book from scratch with ``-nW --keep-going`` into a temporary folder.

    Returns a dict with the html folder, the log, the exit code, the warning count and the
    build's wall time, so that several tests can assert on one build.
    """
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    proc = subprocess.run([str(jb), "build", str(ROOT), "-nW", "--keep-going",
                           "--path-output", str(out)], capture_output=True, text=True,
                          env={**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    match = re.search(r"build finished with problems, (\d+) warnings?", log)
    warnings = int(match.group(1)) if match else len(re.findall(r"WARNING: ", log))
    return {"html": out / "_build" / "html", "executed": out / "_build" / "jupyter_execute",
            "log": log, "returncode": proc.returncode, "warnings": warnings, "seconds": seconds}


def pytest_terminal_summary(terminalreporter):
    """Print how long each chapter took in its clean-kernel run (tests/test_notebooks.py)."""
    rows = []
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get(
            "failed", []):
        if report.when == "call" and "test_same_output_twice" in report.nodeid:
            rows.append((report.nodeid.split("[")[-1].rstrip("]"), report.duration,
                         report.outcome))
    if rows:
        terminalreporter.section("notebooks: clean-kernel run + comparison with the build's "
                                 "run (budget 30 s each)")
        for name, seconds, outcome in sorted(rows):
            terminalreporter.write_line(f"{seconds:6.1f} s  {outcome:6}  {name}")


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
    from book import checks

    result = checks.check(key, answer)
    assert not result.ok, (key, answer)
    return result.message
