"""The class server: a stock JupyterHub on one machine, set up from one file a teacher edits.

``hub/jupyterhub_config.py`` is both JupyterHub's configuration and the teacher's settings
(:mod:`.settings` reads it). ``sudo make hub`` runs :func:`setup` (the students' Python with the
reader's requirements, JupyterHub, nbgitpuller and the idle culler; the proxy from npm; the
book's code without the hidden cases; the course repository; one Unix account per roster line)
and then :func:`serve` (JupyterHub in the foreground; Ctrl-C stops it). The other commands::

    python -m book.classroom.hub users     # accounts for new roster lines, first passwords
    python -m book.classroom.hub course    # publish the course again (after editing the book)
    python -m book.classroom.hub links     # the nbgitpuller link of every chapter, assignment
    python -m book.classroom.hub collect --out submissions   # then: make grade SUBMISSIONS=…
    python -m book.classroom.hub stop      # stop a hub started in the background
    python -m book.classroom.hub backup --out FILE.tar.gz    # homes, state, configuration

Each takes ``--config`` (default ``hub/jupyterhub_config.py``). See the teacher's guide.
"""

from __future__ import annotations

import os
import signal
import tarfile
import time
from pathlib import Path

from . import accounts, course, install
from .install import HubError, require_free, require_root
from .settings import Settings, SettingsError, load

CONFIG = install.ROOT / "hub" / "jupyterhub_config.py"

__all__ = ["CONFIG", "HubError", "Settings", "SettingsError", "backup", "load", "serve",
           "setup", "stop"]


def setup(settings: Settings, log=print) -> None:
    """Everything the hub needs on this machine (idempotent; see the module's docstring)."""
    require_root()
    install.prepare_dirs(settings)
    install.install_env(settings, log)
    install.install_proxy(settings, log)
    install.install_book(settings)
    install.write_gitconfig(settings)
    install.protect_checkout(log)
    course.publish(settings, log)
    accounts.ensure_accounts(settings, log)


def hub_command(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """JupyterHub's command line and environment (started in HUB_DIR/state)."""
    env = {"PATH": f"{settings.env / 'bin'}:/usr/local/bin:/usr/bin:/bin",
           "LANG": os.environ.get("LANG", "C.UTF-8"), "HOME": "/root"}
    return [str(settings.env / "bin" / "jupyterhub"), "-f", str(settings.config)], env


def serve(settings: Settings, log=print) -> None:
    """Start JupyterHub in the foreground, in place of this process."""
    require_root()
    if not (settings.env / "bin" / "jupyterhub").exists():
        raise HubError(f"no JupyterHub in {settings.env}: run `sudo make hub` (it sets up first)")
    require_free(settings)
    argv, env = hub_command(settings)
    log(f"The class server starts at {settings.public_url} (Ctrl-C stops it). Links to hand "
        "out: `make hub-links`.")
    os.chdir(settings.state)
    os.execve(argv[0], argv, env)


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def stop(settings: Settings, log=print, timeout: float = 20.0) -> list[int]:
    """Stop the hub and its proxy by their pid files; the pids signalled."""
    require_root()
    stopped = []
    for name in ("jupyterhub.pid", "proxy.pid"):
        pid = _pid(settings.state / name)
        if pid is None:
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        stopped.append(pid)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            os.kill(pid, signal.SIGKILL)
    log(f"Stopped {len(stopped)} process(es)" if stopped else "No hub was running")
    return stopped


def backup(settings: Settings, out: Path, log=print) -> Path:
    """One .tar.gz of what cannot be made again: every roster account's home, the hub's state
    (its database and the first passwords) and the configuration with its roster."""
    require_root()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:gz") as tar:
        tar.add(settings.config, arcname="hub/" + settings.config.name)
        tar.add(settings.roster, arcname="hub/" + settings.roster.name)
        for name in ("jupyterhub.sqlite", "jupyterhub_cookie_secret", "passwords.csv"):
            if (settings.state / name).exists():
                tar.add(settings.state / name, arcname=f"state/{name}")
        for username in settings.accounts():
            if accounts.exists(username):
                tar.add(accounts.home(username), arcname=f"home/{username}")
    out.chmod(0o600)
    log(f"Backed up {len(settings.accounts())} home(s), the state and the roster to {out}")
    return out
