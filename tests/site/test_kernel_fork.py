"""The build's fork server (book/site/kernel_fork.py): a notebook runs in a forked kernel as in
one of its own (its folder, its environment, its outputs), a kernel that cannot be forked starts
as usual, an interrupted or killed kernel leaves nothing behind, and a server whose imports
started a thread forks nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from book.site import execution, kernel_fork

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not kernel_fork.available(), reason="no fork on this system")]

PROBE = ("import os, sys\n"
         "print(json.dumps({'preloaded': 'torch' in sys.modules, 'cwd': os.getcwd(),\n"
         "                  'marker': os.environ.get('BOOK_TEST_MARKER'), 'ppid': os.getppid(),\n"
         "                  'name': __name__}))")


def _notebook(folder: Path, *sources: str) -> Path:
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [],
              "execution_count": None} for s in ("import json", *sources)]
    path = folder / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3"}},
                                "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def _wait_for(server: kernel_fork.Server) -> None:
    deadline = time.monotonic() + 120
    while not os.path.exists(server.path):
        assert server.proc.poll() is None, "the fork server ended before it listened"
        assert time.monotonic() < deadline, "the fork server did not listen within 120 s"
        time.sleep(0.2)


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


@pytest.fixture(scope="module")
def server():
    server = kernel_fork.start()
    _wait_for(server)
    yield server
    server.close()


def _run(tmp_path, path, env, timeout=120):
    return execution.run_one(path, tmp_path / "out.ipynb", tmp_path, timeout, False, env)


def _probe(tmp_path) -> dict:
    ran = json.loads((tmp_path / "out.ipynb").read_text(encoding="utf-8"))
    return json.loads("".join(ran["cells"][1]["outputs"][0]["text"]))


def test_a_forked_kernel_runs_the_notebook_in_its_folder_and_environment(tmp_path, server):
    path = _notebook(tmp_path, PROBE, "print(sum(range(10)))")
    seconds, error = _run(tmp_path, path, {kernel_fork.SOCKET_ENV: server.path,
                                           "BOOK_TEST_MARKER": "forked"})
    assert error is None
    probe = _probe(tmp_path)
    assert probe["preloaded"] and probe["ppid"] == server.proc.pid   # forked by the server
    assert probe["cwd"] == str(tmp_path) and probe["marker"] == "forked"
    assert probe["name"] == "__main__"
    ran = json.loads((tmp_path / "out.ipynb").read_text(encoding="utf-8"))
    assert "".join(ran["cells"][2]["outputs"][0]["text"]) == "45\n"
    # the same notebook in a kernel of its own: the same, less the preloaded modules
    _, error = _run(tmp_path, path, {"BOOK_TEST_MARKER": "own"})
    assert error is None
    own = _probe(tmp_path)
    assert not own["preloaded"] and own["ppid"] != server.proc.pid
    assert own["cwd"] == probe["cwd"] and own["name"] == probe["name"]


def test_without_a_server_the_stub_becomes_the_kernel(tmp_path):
    path = _notebook(tmp_path, PROBE)
    _, error = _run(tmp_path, path, {kernel_fork.SOCKET_ENV: str(tmp_path / "no-server")})
    assert error is None
    assert not _probe(tmp_path)["preloaded"]


def test_a_timed_out_cell_is_interrupted_and_its_kernel_ends(tmp_path, server):
    path = _notebook(tmp_path, "import time\ntime.sleep(300)")
    seconds, error = _run(tmp_path, path, {kernel_fork.SOCKET_ENV: server.path}, timeout=5)
    assert error is not None and "timed out" in error.lower()
    assert seconds < 60
    deadline = time.monotonic() + 10
    while _children(server.proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _children(server.proc.pid) == []   # the server killed and reaped it


def test_a_killed_stub_takes_its_kernel_along_and_close_ends_the_server(tmp_path):
    server = kernel_fork.start()
    _wait_for(server)
    connection = tmp_path / "kernel.json"
    stub = subprocess.Popen([sys.executable, "-I", "-S", kernel_fork.__file__, "kernel",
                             server.path, "--", sys.executable, "-m", "ipykernel_launcher",
                             "-f", str(connection)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not _children(server.proc.pid):
        assert time.monotonic() < deadline, "no kernel was forked"
        time.sleep(0.1)
    kernel = _children(server.proc.pid)[0]
    stub.kill()
    stub.wait()
    while Path(f"/proc/{kernel}").exists() and time.monotonic() < deadline + 10:
        time.sleep(0.1)
    assert not Path(f"/proc/{kernel}").exists()
    server.close()
    assert server.proc.returncode == 0 and not Path(server.folder).exists()


def test_a_server_whose_imports_start_a_thread_forks_nothing(tmp_path):
    (tmp_path / "starts_a_thread.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n",
        encoding="utf-8")
    code = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
            f"sys.path.insert(0, {str(Path(kernel_fork.__file__).parent)!r}); "
            "import kernel_fork; kernel_fork.PRELOAD[:] = ['starts_a_thread']; "
            f"sys.exit(kernel_fork.serve({str(tmp_path / 's')!r}))")
    proc = subprocess.run([sys.executable, "-P", "-c", code], input="", capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0
    assert "1 thread(s) started by its imports" in proc.stderr
    assert not (tmp_path / "s").exists()   # it never listened: every kernel starts as usual
