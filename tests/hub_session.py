"""A real class server for the tests and the benchmark: the repository's hub/jupyterhub_config.py
copied with this run's accounts, ports and folder, set up and started with the same commands a
teacher runs (``python -m book.classroom.hub setup|serve``), driven in Chromium as students log
in, and removed afterwards (accounts, homes, the hub's folder; the hub and proxy stopped by
their pids). Runs as root only (it creates Unix accounts), as CI does.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "hub" / "jupyterhub_config.py"
# The test's JupyterLab exposes its application object (window.jupyterapp) so that the test can
# run cells and read outputs as test_jupyterlab.py does; a teacher's hub does not need it.
TEST_CONFIG = '\nc.Spawner.args = ["--LabApp.expose_app_in_browser=True"]\n'
PANEL = "window.jupyterapp.shell.currentWidget"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def why_not() -> str | None:
    """Why a class server cannot be tried on this machine (None if it can)."""
    if os.geteuid() != 0:
        return "the class server test creates Unix accounts: it runs as root (CI does)"
    for tool in ("useradd", "userdel", "chpasswd", "groupadd", "git"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    return None


@dataclass
class Hub:
    """One hub of this run: its configuration, accounts and process."""

    folder: Path                       # config + roster (root only)
    hub_dir: Path
    students: list[str]
    teacher: str
    url: str
    proc: subprocess.Popen | None = None
    passwords: dict[str, str] = field(default_factory=dict)
    log: Path | None = None

    @property
    def config(self) -> Path:
        return self.folder / "jupyterhub_config.py"

    def settings(self):
        from book.classroom.hub import load

        return load(self.config)

    def cli(self, *args: str, timeout: float = 1800, **kwargs) -> subprocess.CompletedProcess:
        """``python -m book.classroom.hub ARGS --config <this hub>``, as make hub-… runs it."""
        return subprocess.run([sys.executable, "-m", "book.classroom.hub", *args, "--config",
                               str(self.config)], capture_output=True, text=True, cwd=ROOT,
                              timeout=timeout, **kwargs)


def make(base: Path, n_students: int = 2, tag: str | None = None) -> Hub:
    """A configuration of the repository's file for ``n_students`` new accounts and a teacher,
    on free ports, with its HUB_DIR under /srv (students must reach it; /tmp's pytest folders
    are closed to them)."""
    tag = tag or secrets.token_hex(3)
    students = [f"bk{tag}s{i}" for i in range(n_students)]
    teacher = f"bk{tag}t"
    hub_dir = Path("/srv") / f"book-hub-test-{tag}"
    folder = base / f"hub-{tag}"
    folder.mkdir(parents=True)
    port, hub_port, api_port = free_port(), free_port(), free_port()
    url = f"http://127.0.0.1:{port}"
    values = {"ROSTER": '"roster.csv"', "TEACHERS": f'["{teacher}"]',
              "BIND_URL": f'"{url}"', "PUBLIC_URL": f'"{url}"', "HUB_PORT": str(hub_port),
              "PROXY_API_PORT": str(api_port), "HUB_DIR": f'"{hub_dir}"'}
    text = CONFIG.read_text(encoding="utf-8")
    for name, value in values.items():
        text, n = re.subn(rf"^{name} = .*$", f"{name} = {value}", text, count=1, flags=re.M)
        assert n == 1, f"hub/jupyterhub_config.py has no line '{name} = …'"
    (folder / "jupyterhub_config.py").write_text(text + TEST_CONFIG, encoding="utf-8")
    (folder / "roster.csv").write_text("username,name\n" + "".join(
        f"{s},Student {i}\n" for i, s in enumerate(students)), encoding="utf-8")
    return Hub(folder, hub_dir, students, teacher, url)


def read_passwords(hub: Hub) -> dict[str, str]:
    lines = (hub.hub_dir / "state" / "passwords.csv").read_text(encoding="utf-8").splitlines()
    hub.passwords = dict(line.split(",", 1) for line in lines[1:])
    return hub.passwords


def start(hub: Hub, timeout: float = 90) -> None:
    """``serve`` in the background (JupyterHub replaces the command's process); waits until
    the hub answers."""
    hub.log = hub.folder / "hub.log"
    out = open(hub.log, "w", encoding="utf-8")  # noqa: SIM115 - the hub's, closed with it
    hub.proc = subprocess.Popen([sys.executable, "-m", "book.classroom.hub", "serve", "--config",
                                 str(hub.config)], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{hub.url}/hub/api/", timeout=2)
            return
        except OSError:
            if hub.proc.poll() is not None:
                break
            time.sleep(0.5)
    raise RuntimeError(f"the hub did not start at {hub.url}:\n{hub.log.read_text()[-3000:]}")


def stop_and_remove(hub: Hub) -> list[str]:
    """Stop the hub and proxy by their pids, remove the accounts, homes and HUB_DIR; what
    could not be removed."""
    from book.classroom.hub import accounts

    problems = []
    state = hub.hub_dir / "state"
    for name in ("jupyterhub.pid", "proxy.pid"):
        try:
            pid = int((state / name).read_text().strip())
            os.kill(pid, 15)
        except (OSError, ValueError):
            pass
    if hub.proc is not None:
        try:
            hub.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            hub.proc.kill()
    for name in ("proxy.pid",):
        try:
            os.kill(int((state / name).read_text().strip()), 9)
        except (OSError, ValueError):
            pass
    # the students' servers and kernels, if the hub left any
    for user in hub.students + [hub.teacher]:
        subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
    time.sleep(0.5)
    for user in hub.students + [hub.teacher]:
        try:
            accounts.remove(user)
        except Exception as err:  # noqa: BLE001 - report, go on removing the rest
            problems.append(f"{user}: {err}")
    shutil.rmtree(hub.hub_dir, ignore_errors=True)
    if hub.hub_dir.exists():
        problems.append(f"{hub.hub_dir} is still there")
    return problems


# ---- in the browser --------------------------------------------------------------------------

def submit_login(page, user: str, password: str) -> None:
    """On the hub's login page: type the username and password, press the button."""
    page.wait_for_selector("#username_input", timeout=30_000)
    page.fill("#username_input", user)
    page.fill("#password_input", password)
    page.click("#login_submit", no_wait_after=True)


def wait_lab(page, path: str, timeout_s: float = 180) -> None:
    """Until JupyterLab shows the notebook ``path`` (relative to the home) with its kernel."""
    page.wait_for_url(re.compile(r".*/lab/tree/.*"), timeout=timeout_s * 1000)
    page.wait_for_function(
        f"""(path) => window.jupyterapp && {PANEL} && {PANEL}.context
            && {PANEL}.context.path === path && {PANEL}.sessionContext
            && {PANEL}.sessionContext.session && {PANEL}.sessionContext.session.kernel
            && {PANEL}.sessionContext.session.kernel.status === 'idle'""",
        arg=path, timeout=timeout_s * 1000)


def run_all(page) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def finished(page) -> bool:
    """Run All is done: the kernel idle and every code cell run (an execution count each)."""
    return page.evaluate(f"""() => {{
      const p = {PANEL};
      const k = p.sessionContext.session && p.sessionContext.session.kernel;
      if (!k || k.status !== 'idle') return false;
      return Array.from(p.content.model.cells).every(c => c.type !== 'code'
          || c.executionCount !== null);
    }}""")


def kernel_run(page, code: str, timeout_s: float = 120) -> str:
    """Run ``code`` in a new kernel of this student's server; what it printed (errors as
    ``Name: value``)."""
    return page.evaluate("""async ([code, ms]) => {
      const kernels = window.jupyterapp.serviceManager.kernels;
      const k = await kernels.startNew({name: 'python3'});
      let out = '';
      try {
        const f = k.requestExecute({code});
        f.onIOPub = m => {
          const t = m.header.msg_type;
          if (t === 'stream') out += m.content.text;
          if (t === 'error') out += m.content.ename + ': ' + m.content.evalue + '\\n';
        };
        await Promise.race([f.done, new Promise((_, no) => setTimeout(
          () => no(new Error('timed out')), ms))]);
      } finally { await k.shutdown(); }
      return out;
    }""", [code, timeout_s * 1000])


def kernel_rss_mb(user: str) -> list[float]:
    """The resident memory (MB) of each of ``user``'s ipykernel processes."""
    import pwd

    uid = pwd.getpwnam(user).pw_uid
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.stat().st_uid != uid:
                continue
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "ipykernel" not in cmd:
                continue
            status = (proc / "status").read_text()
        except OSError:
            continue
        rss = re.search(r"VmRSS:\s+(\d+) kB", status)
        if rss:
            found.append(int(rss.group(1)) / 1024)
    return found


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) / 1024
