"""One sandbox per submission: bubblewrap on Linux; no sandbox, no run (unless the teacher says so).

The sandbox sees the system's ``/usr`` (read-only), this Python's own folders (read-only: the
interpreter, its standard library and ``site-packages``), a read-only folder holding the
notebook, the cases' inputs and :mod:`book.classroom.runner`, and a private, size-limited
working folder in memory. It has no network (only its own loopback), its own process, user,
IPC and hostname namespaces, and dies with the grader. Nothing of the teacher's checkout (the
repository next to ``.venv``, the ``book`` package, the assignments, other submissions) is
mounted: the ``book`` package is hidden even where it is installed into ``site-packages``.

The runner sets the resource limits (address space, CPU seconds, file size, no core dumps)
before any student code runs; the grader adds a wall-clock limit and kills the whole sandbox
when it is reached. Grading fails closed: where ``bwrap`` is missing or cannot create a sandbox,
:func:`run_submission` raises :class:`SandboxUnavailable` (with the install hint) instead of
running a notebook. Only with ``unsandboxed=True`` (the teacher's explicit ``UNSANDBOXED=1`` or
``--unsandboxed``) does the same runner run as a plain subprocess with those limits alone, and
every outcome then says ``unsandboxed``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .feedback import Text

RUNNER = Path(__file__).with_name("runner.py")
INSIDE_IN = "/grading/in"
INSIDE_WORK = "/grading/work"
INSTALL_HINT = ("install bubblewrap for a real sandbox: `sudo apt-get install bubblewrap` "
                "(Debian/Ubuntu) or `sudo dnf install bubblewrap` (Fedora)")
UNSANDBOXED_RISK = (
    "every submitted notebook then runs as a plain process with YOUR permissions, limited only "
    "in time and memory: it can read, change and delete your files (the hidden cases, the "
    "solutions, other submissions, the CSV), import the book's reference solution and score "
    "full marks with it, write into the virtual environment (a .pth file in site-packages) so "
    "that its code runs in every Python you start there later, and reach the network")


class UnsandboxedWarning(UserWarning):
    """A batch is graded without a sandbox, as the teacher asked."""


class SandboxUnavailable(RuntimeError):
    """No working sandbox here, and the teacher has not allowed grading without one."""

    def __init__(self, problem: str):
        self.problem = problem
        super().__init__(
            f"no sandbox: {problem}. Nothing was run.\n"
            f"  To grade safely, {INSTALL_HINT}, then run the command again.\n"
            f"  To grade without a sandbox anyway, at your own risk, set UNSANDBOXED=1 "
            f"(make grade UNSANDBOXED=1 ...) or pass --unsandboxed; {UNSANDBOXED_RISK}.")


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Per-submission limits. Seconds are wall-clock unless named CPU; sizes in MiB."""

    wall_seconds: float = 90.0     # the whole sandbox, kernel start to last output
    cell_seconds: float = 30.0     # one notebook cell (``while True: pass`` stops here)
    case_seconds: float = 5.0      # one call of a graded function on a hidden input
    cpu_seconds: int = 120         # CPU time of each process in the sandbox
    memory_mb: int = 4096          # address space of each process (torch maps ~1 GiB)
    file_mb: int = 64              # largest file a process may write
    work_mb: int = 256             # the in-memory working folder (and /tmp)

    def __post_init__(self):
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{name}={value!r} must be a positive number")
        if self.cell_seconds > self.wall_seconds:
            raise ValueError(f"Limits.cell_seconds={self.cell_seconds} exceeds wall_seconds="
                             f"{self.wall_seconds}; make the wall-clock limit the larger")


@dataclass
class Outcome:
    """What a sandbox run gave: the runner's report (untrusted data) or why there is none."""

    report: dict | None
    reason: str
    seconds: float
    isolation: str


_WORKS: dict[str, str] = {}


def bwrap() -> str | None:
    """The bubblewrap executable, or None where it is missing or cannot make a sandbox here.

    Installed is not enough: inside some containers user namespaces are forbidden and bwrap
    fails at once. One trial run (cached) tells; :func:`bwrap_problem` says why it failed.
    """
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    if exe not in _WORKS:
        try:
            proc = subprocess.run([exe, "--unshare-all", "--unshare-user", "--uid", "65534",
                                   "--gid", "65534", "--die-with-parent", "--ro-bind", "/", "/",
                                   "--proc", "/proc", "--dev", "/dev", "true"],
                                  capture_output=True, text=True, timeout=30)
            _WORKS[exe] = "" if proc.returncode == 0 else (proc.stderr.strip()[-200:]
                                                          or f"exit {proc.returncode}")
        except (OSError, subprocess.TimeoutExpired) as error:
            _WORKS[exe] = str(error)
    return exe if not _WORKS[exe] else None


def bwrap_problem() -> str:
    """Why bubblewrap is unusable here ("" when it works)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not installed"
    bwrap()
    return f"bwrap cannot create a sandbox here: {_WORKS[exe]}" if _WORKS[exe] else ""


def isolation() -> str:
    """"bubblewrap" where submissions can run in a bwrap sandbox, else "unsandboxed"."""
    return "unsandboxed" if bwrap() is None else "bubblewrap"


def require_sandbox(unsandboxed: bool = False) -> str:
    """The isolation grading will use: "bubblewrap", or "unsandboxed" when there is no working
    sandbox and ``unsandboxed`` is True; raises :class:`SandboxUnavailable` otherwise."""
    mode = isolation()
    if mode != "bubblewrap" and not unsandboxed:
        raise SandboxUnavailable(bwrap_problem() or "no sandbox")
    return mode


def unsandboxed_warning() -> str:
    """What the teacher reads before an unsandboxed batch starts."""
    return (f"WARNING: grading WITHOUT A SANDBOX, as asked (UNSANDBOXED=1 / --unsandboxed): "
            f"{bwrap_problem() or 'no sandbox'}.\n"
            f"  The risk: {UNSANDBOXED_RISK}.\n"
            f"  Every CSV row says `unsandboxed`. Grade like this only notebooks you trust, or on "
            f"a machine you can throw away; {INSTALL_HINT}.")


def _python_dirs() -> list[str]:
    """Folders this interpreter needs: prefix, base prefix, stdlib, site-packages."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))),
             sysconfig.get_paths()["stdlib"], *site.getsitepackages()}
    found = sorted(os.path.realpath(p) for p in paths if os.path.isdir(p))
    # mount /usr whole; drop folders inside another mounted one
    keep = []
    for p in found:
        if p == "/usr" or p.startswith("/usr/"):
            continue
        if not any(p.startswith(k.rstrip("/") + "/") for k in keep):
            keep.append(p)
    return keep


def _hidden(mounted: list[str]) -> list[list[str]]:
    """bwrap options that hide the ``book`` package inside the mounted Python folders.

    An editable install leaves a ``.pth`` and a finder module in site-packages that point back
    at the checkout; a regular install puts ``book/`` itself there. Both are covered: the
    package folder gets an empty tmpfs, the distribution's top-level files become /dev/null.
    """
    def inside(path: str) -> bool:
        return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounted)

    options = []
    spec = importlib.util.find_spec("book")
    if spec is not None and spec.origin:
        package = os.path.realpath(os.path.dirname(spec.origin))
        if inside(package):
            options.append(["--tmpfs", package])
    for folder in site.getsitepackages():
        folder = os.path.realpath(folder)
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            path = os.path.join(folder, name)
            if (name.startswith("__editable__") and "attention_book" in name
                    and os.path.isfile(path) and inside(path)):
                options.append(["--ro-bind", "/dev/null", path])
    return options


def bwrap_command(in_dir: Path, limits: Limits) -> list[str]:
    """The bwrap command line that runs the runner on the folder ``in_dir``."""
    exe = bwrap()
    if exe is None:
        raise FileNotFoundError(f"{bwrap_problem()}; {INSTALL_HINT}")
    cmd = [exe, "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
           "--die-with-parent", "--new-session", "--hostname", "grading",
           "--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = f"/{name}"
        if os.path.islink(host):
            cmd += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            cmd += ["--ro-bind", host, host]
    for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/alternatives"):
        cmd += ["--ro-bind-try", path, path]
    # The private /tmp (and /proc, /dev) first, the Python folders after: bwrap mounts in order,
    # so a checkout under /tmp (its .venv there too) is bound on top of the empty /tmp instead
    # of being hidden by it; the folders it needs inside the tmpfs are made by bwrap.
    size = str(limits.work_mb * 1024 * 1024)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--size", size, "--tmpfs", "/tmp"]
    mounted = _python_dirs()
    for path in mounted:
        cmd += ["--ro-bind", path, path]
    for option in _hidden(mounted):
        cmd += option
    cmd += ["--ro-bind", str(in_dir), INSIDE_IN,
            "--size", size, "--tmpfs", INSIDE_WORK,
            "--remount-ro", "/", "--chdir", INSIDE_WORK]
    return cmd


def _environment(home: str) -> dict[str, str]:
    path = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])
    return {"PATH": path, "HOME": home, "TMPDIR": "/tmp" if home == INSIDE_WORK else home,
            "LANG": "C.UTF-8", "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "JUPYTER_PLATFORM_DIRS": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1", "MPLBACKEND": "Agg"}


def _drain(fd: int, cap: int, sink: list) -> threading.Thread:
    """Read ``fd`` to its end in a thread, keeping at most ``cap`` bytes."""
    def read():
        kept = bytearray()
        with os.fdopen(fd, "rb") as f:
            while chunk := f.read(65536):
                if len(kept) < cap:
                    kept += chunk[: cap - len(kept)]
        sink.append(bytes(kept))
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def run_submission(notebook: bytes, name: str, cases: list, limits: Limits = Limits(), *,
                   unsandboxed: bool = False) -> Outcome:
    """Run one notebook (its bytes, saved as ``name``) and the cases in a fresh sandbox.

    Without a working sandbox this raises :class:`SandboxUnavailable`, unless ``unsandboxed``
    is True: then the notebook runs as a plain subprocess and the outcome says "unsandboxed".
    """
    if not isinstance(notebook, bytes):
        raise TypeError(f"notebook must be the notebook file's bytes, got {type(notebook)}")
    if os.sep in name or not name.endswith(".ipynb"):
        raise ValueError(f"name={name!r} must be a plain file name ending in .ipynb")
    mode = require_sandbox(unsandboxed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="grading-") as tmp:
        in_dir = Path(tmp) / "in"
        in_dir.mkdir()
        (in_dir / name).write_bytes(notebook)
        (in_dir / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
        shutil.copy(RUNNER, in_dir / "runner.py")
        limit_args = json.dumps({"memory_mb": limits.memory_mb, "cpu_seconds":
                                 limits.cpu_seconds, "file_mb": limits.file_mb,
                                 "cell_seconds": limits.cell_seconds,
                                 "case_seconds": limits.case_seconds})
        read_end, write_end = os.pipe()
        if mode == "bubblewrap":
            inside_in, work = INSIDE_IN, INSIDE_WORK
            prefix = bwrap_command(in_dir, limits)
        else:
            work_dir = Path(tmp) / "work"
            work_dir.mkdir()
            inside_in, work, prefix = str(in_dir), str(work_dir), []
        cmd = prefix + [sys.executable, "-I", "-B", f"{inside_in}/runner.py", inside_in, name,
                        work, limit_args, str(write_end)]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, pass_fds=(write_end,),
                                env=_environment(work), cwd=work if not prefix else tmp,
                                start_new_session=True)
        os.close(write_end)
        result, log = [], []
        readers = [_drain(read_end, 8_000_000, result),
                   _drain(os.dup(proc.stdout.fileno()), 20_000, log)]
        proc.stdout.close()
        reason = ""
        try:
            proc.wait(timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            reason = Text("classroom.timeout", seconds=limits.wall_seconds)
            _kill(proc)
        for thread in readers:
            thread.join(timeout=5)
        seconds = time.perf_counter() - start
        tail = (log[0] if log else b"").decode("utf-8", "replace").strip()[-400:]
        if reason:
            return Outcome(None, reason, seconds, mode)
        raw = result[0] if result else b""
        if not raw:
            why = f"crash: the sandbox ended (exit {proc.returncode}) without a report"
            return Outcome(None, why + (f"; its log ends: {tail}" if tail else ""), seconds,
                           mode)
        try:
            report = json.loads(raw)
        except (ValueError, RecursionError):
            return Outcome(None, "crash: the sandbox's report is not JSON", seconds, mode)
        if not isinstance(report, dict):
            return Outcome(None, "crash: the sandbox's report is not an object", seconds, mode)
        return Outcome(report, "", seconds, mode)


def _kill(proc: subprocess.Popen) -> None:
    """Kill the sandbox: its process group here, and (via --die-with-parent) all inside."""
    try:
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


PROBE = '''
import os, site, socket
def attempt(what, action):
    try:
        result = action()
        print(f"ALLOWED  {what}: {str(result)[:100]}")
    except BaseException as error:
        print(f"blocked  {what}: {type(error).__name__}: {str(error)[:100]}")
root, others = ROOT, OTHERS
attempt("import the book's reference code (book.ideas.attention)",
        lambda: __import__("book.ideas.attention").__file__)
attempt("patch the comparison (import book.classroom.compare)",
        lambda: __import__("book.classroom.compare"))
attempt("read the hidden tests (book/classroom/assignments/a01_attention_numpy.py)",
        lambda: open(os.path.join(root, "book", "classroom", "assignments",
                                  "a01_attention_numpy.py")).read(60))
attempt("read an instructor notebook", lambda: open(
        os.path.join(root, "assignments", "01_attention_numpy.ipynb")).read(60))
attempt("list the solutions and otter's autograders",
        lambda: os.listdir(os.path.join(root, "build", "assignments")))
attempt("write into the teacher's folder",
        lambda: open(os.path.join(root, "SANDBOX_ESCAPE.txt"), "w").write("x"))
for other in others:
    attempt(f"overwrite {other}", lambda: open(other, "w").write("{}"))
attempt("write a .pth into site-packages", lambda: open(
        os.path.join(site.getsitepackages()[0], "zz_grading_hack.pth"), "w").write("import os"))
attempt("open a network socket to 1.1.1.1:80",
        lambda: socket.create_connection(("1.1.1.1", 80), timeout=3))
attempt("resolve pypi.org", lambda: socket.getaddrinfo("pypi.org", 443))
print("sees /:", sorted(os.listdir("/")), "; processes:",
      len([p for p in os.listdir("/proc") if p.isdigit()]))
'''


def self_check(root: Path | None = None, others: tuple = (), *,
               unsandboxed: bool = False) -> str:
    """Run hostile attempts inside a sandbox, as a notebook cell; return what it printed.

    ``root`` is the teacher's checkout (default: this one) and ``others`` paths a submission
    might try to overwrite. Each line reads ``blocked …`` or ``ALLOWED …``. Without a working
    sandbox this raises :class:`SandboxUnavailable` unless ``unsandboxed`` is True.
    """
    import nbformat

    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    code = PROBE.replace("ROOT, OTHERS", f"{str(root)!r}, {[str(p) for p in others]!r}")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    outcome = run_submission(nbformat.writes(nb).encode(), "probe.ipynb", [],
                             unsandboxed=unsandboxed)
    if outcome.report is None:
        return f"the probe did not run: {outcome.reason}"
    printed = str(outcome.report.get("outputs", ""))
    # Judged from outside: with the checkout under /tmp, the sandbox's own private /tmp holds
    # an empty folder of that name (the parent of the read-only venv mount), so the write
    # "succeeds" there while the teacher's real folder is untouched.
    escape = root / "SANDBOX_ESCAPE.txt"
    if not escape.exists():
        printed = "\n".join(
            line.replace("ALLOWED  write into the teacher's folder",
                         "blocked  write into the teacher's folder (the real folder is "
                         "untouched; the write stayed in the sandbox's private space)")
            if line.startswith("ALLOWED  write into the teacher's folder") else line
            for line in printed.splitlines())
    return f"isolation: {outcome.isolation}\n" + printed
