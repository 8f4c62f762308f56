"""A build's kernels forked from one process that has imported what their notebooks import.

Every notebook of a build runs in a kernel of its own, whose first cell imports ``book`` (torch,
numpy, plotly) and whose start imports ipykernel: ~2.7 s of one core, 28 times in ``make book``
(both editions): its CPU time went from 414 to 331 s with this server. A fork server does those
imports once, runs none of a notebook's code, and forks one kernel per notebook: the kernel is a
fresh ipykernel in a process whose ``sys.modules`` already holds those modules, with its own
working directory, environment, standard streams, fresh random seeds and session.

* ``python -P kernel_fork.py serve`` (:func:`start`, by book.site.execution for each build that
  executes notebooks): imports :data:`PRELOAD`, checks that those imports started no thread (a
  fork copies only the calling thread: an OpenMP pool or a helper thread would be left broken in
  the children; numpy's OpenBLAS pool, started before them, re-forms itself after a fork); if
  they did, it says so and forks nothing, and every kernel starts as usual. Otherwise it listens
  on a Unix socket. It ends when the build closes its standard input, killing any kernel left.
* the kernel command jupyter_client starts becomes ``python -I -S kernel_fork.py kernel SOCKET
  -- <the kernelspec's argv>`` (:func:`kernel_manager_class`): a stub of a few milliseconds that
  hands the server its argv, working directory, environment and standard streams, waits for the
  forked kernel and passes on the signals it gets (interrupts, terminate); when the stub dies
  (killed), the server kills its kernel. When the server cannot be reached or the kernelspec is
  not ``python -m ipykernel_launcher``, the stub becomes that kernel instead (``os.execv``): the
  same process to jupyter_client, only slower.

Linux only (fork, Unix sockets passing file descriptors, /proc for the thread count); elsewhere
:func:`start` returns None and the build starts its kernels as before. Standard library only at
the top: the stub runs with ``-S`` (no site-packages) and the build's worker imports this file
by path.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

SOCKET_ENV = "BOOK_KERNEL_FORK"   # the server's socket, for the worker's kernel manager
# Imported once by the server: what every chapter's kernel imports (ipykernel's start, the
# first cell's ``import book`` and ``book.setup()``'s renderer).
# torch._dynamo (1.6 s): chapters 2, 7 and 9b's code reaches it.
PRELOAD = ["ipykernel.kernelapp", "ipykernel.ipkernel", "IPython.display", "numpy", "torch",
           "torch.nn.functional", "torch._dynamo", "plotly.graph_objects", "plotly.io._renderers",
           "nbformat", "ipywidgets", "anywidget", "book"]
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
             signal.SIGUSR2)


def available() -> bool:
    return hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds") \
        and sys.platform.startswith("linux")


# ---- the build's side ------------------------------------------------------------------

class Server:
    """A running fork server: ``path`` is its socket; :meth:`close` ends it."""

    def __init__(self, proc: subprocess.Popen, path: str, folder: str):
        self.proc, self.path, self.folder = proc, path, folder

    def close(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()   # the server's signal to end (it kills kernels left)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for name in os.listdir(self.folder):
            os.unlink(os.path.join(self.folder, name))
        os.rmdir(self.folder)


def start() -> Server | None:
    """Start a fork server with the build's environment; None where there can be none (no
    fork). It does not wait for the server's imports: a kernel asked for before it listens
    (or from one that found threads after its imports, and says so on standard error) starts
    as usual."""
    if not available():
        return None
    folder = tempfile.mkdtemp(prefix="book-kf-")   # short: a socket's path is ≤ 107 bytes
    path = os.path.join(folder, "s")
    proc = subprocess.Popen([sys.executable, "-P", str(Path(__file__).resolve()), "serve", path],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    return Server(proc, path, folder)


def kernel_manager_class(path: str):
    """jupyter_client's kernel manager (for nbclient) whose kernels the server at ``path`` forks."""
    from jupyter_client.manager import AsyncKernelManager

    class ForkedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), "kernel", path,
                    "--", *cmd]

    return ForkedKernelManager


# ---- the server ----------------------------------------------------------------------------

def _threads() -> int:
    """The process's threads, native ones included (Linux)."""
    return len(os.listdir("/proc/self/task"))


def serve(path: str) -> int:
    import importlib
    import threading

    import numpy  # noqa: F401 - its OpenBLAS starts its threads here, and is fork-safe

    baseline = _threads()
    for name in PRELOAD:
        importlib.import_module(name)
    if _threads() != baseline or threading.active_count() != 1:
        print(f"kernel fork server: {_threads() - baseline} thread(s) started by its imports, "
              "so no kernel is forked: each starts and imports on its own", file=sys.stderr)
        sys.stdin.read()   # until the build is done
        return 0
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    kernels: dict[int, socket.socket] = {}   # pid -> its stub's connection
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin, *kernels.values()], [], [], 0.1)
            if sys.stdin in ready and not sys.stdin.readline():
                return 0   # the build is done (or gone)
            for pid, conn in list(kernels.items()):
                if conn in ready:   # the stub is gone (killed): so is its kernel
                    with _quiet():
                        os.kill(pid, signal.SIGKILL)
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    with _quiet():
                        conn.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)})
                                     .encode() + b"\n")
                    conn.close()
                    del kernels[pid]
            if listener in ready:
                conn, _ = listener.accept()
                pid = _fork_kernel(conn, listener, list(kernels.values()))
                if pid is None:
                    conn.close()
                else:
                    kernels[pid] = conn
    finally:
        for pid in kernels:
            with _quiet():
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _quiet():
    """A peer (stub or kernel) may be gone already: nothing to do about it."""
    return contextlib.suppress(OSError)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The stub's request ({} when it went away before the whole line) and its three fds."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    request, _ = _line(conn, data)
    return request, fds


def _fork_kernel(conn, listener, others) -> int | None:
    try:
        request, fds = _receive(conn)
    except (OSError, ValueError):
        return None
    argv = request.get("argv", [])
    if len(fds) != 3 or argv[1:3] != ["-m", "ipykernel_launcher"]:
        with _quiet():
            conn.sendall(b'{"refused": "not a python -m ipykernel_launcher kernel"}\n')
        for fd in fds:
            os.close(fd)
        return None
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        with _quiet():
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        return pid
    # the kernel
    code = 1
    try:
        listener.close()
        conn.close()
        for other in others:
            other.close()
        os.setsid()   # its own session, as jupyter_client starts a kernel
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the kernel's standard streams
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import random

        import numpy as np

        random.seed()
        np.random.seed()
        sys.argv = ["ipykernel_launcher", *argv[3:]]
        if request["env"].get("JPY_PARENT_PID"):   # read from the environment at its import,
            # which was the server's: jupyter_client's process, as in a kernel it starts
            sys.argv.append(f"--IPKernelApp.parent_handle={request['env']['JPY_PARENT_PID']}")
        from ipykernel import kernelapp

        try:
            kernelapp.launch_new_instance()
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        import atexit

        atexit._run_exitfuncs()
    finally:
        with _quiet():
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


# ---- the stub: jupyter_client's kernel process ------------------------------------------------

def kernel(path: str, argv: list[str]) -> int:
    """Have the server at ``path`` fork the kernel ``argv``, and stand for it until it ends
    (or until this stub's parent, jupyter_client, does: as a kernel's parent poller would);
    without a server that takes it, become ``argv`` itself."""
    parent = os.getppid()
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        message = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)})
        socket.send_fds(conn, [message.encode() + b"\n"], [0, 1, 2])
        reply, rest = _line(conn, b"")
    except (OSError, ValueError):
        reply = {}
    if "pid" not in reply:
        os.execv(argv[0], argv)   # no server: the kernel itself, as jupyter_client asked
    pid = reply["pid"]
    for signum in FORWARDED:
        signal.signal(signum, lambda signum, frame: _forward(pid, signum))
    while True:
        ready, _, _ = select.select([conn], [], [], 1.0)
        if ready:   # the kernel's exit status, once the server has reaped it
            end, rest = _line(conn, rest)
            return int(end.get("exit", 1))
        if os.getppid() != parent:
            return 1   # jupyter_client is gone: so is this stub, and the server kills the kernel


def _line(conn: socket.socket, data: bytes) -> tuple[dict, bytes]:
    """The next JSON line the server sends ({} when it is gone), and what follows it."""
    while b"\n" not in data:
        more = conn.recv(4096)
        if not more:
            return {}, b""
        data += more
    line, rest = data.split(b"\n", 1)
    return json.loads(line), rest


def _forward(pid: int, signum: int) -> None:
    with _quiet():
        os.kill(pid, signum)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        sys.exit(serve(sys.argv[2]))
    if len(sys.argv) > 4 and sys.argv[1] == "kernel" and sys.argv[3] == "--":
        sys.exit(kernel(sys.argv[2], sys.argv[4:]))
    sys.exit("usage: python kernel_fork.py serve SOCKET | kernel SOCKET -- KERNEL ARGV...")
