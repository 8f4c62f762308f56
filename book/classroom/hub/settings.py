"""The teacher's settings: read from the class server's one configuration file and its roster.

``hub/jupyterhub_config.py`` is JupyterHub's own configuration file; its first part holds the
settings a teacher edits (UPPERCASE names: ROSTER, TEACHERS, BIND_URL, PUBLIC_URL, HUB_DIR …).
The tools of :mod:`book.classroom.hub` read the same file the way JupyterHub does (executed with
a ``c`` of its own), so the hub and the tools cannot disagree about a path or a port.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

# A Unix account name the hub may create: short, lowercase, no leading digit or dash. Names of
# the system's own accounts are refused too (see :func:`read_roster`).
USERNAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
SYSTEM_NAMES = {"root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news",
                "uucp", "proxy", "www-data", "backup", "list", "irc", "nobody", "_apt",
                "systemd-network", "messagebus", "sshd", "admin", "jupyterhub"}
LANGUAGES = ("en", "zh")
STUDENT_GROUP = "attention-class"   # the Unix group of every account the hub made


class SettingsError(ValueError):
    """The configuration or the roster says something the hub cannot do; the message says
    which line and what to write instead."""


@dataclass(frozen=True)
class Student:
    username: str
    name: str


@dataclass(frozen=True)
class Settings:
    config: Path            # hub/jupyterhub_config.py
    roster: Path
    students: tuple[Student, ...]
    teachers: tuple[str, ...]
    bind_url: str
    public_url: str
    hub_port: int
    proxy_api_port: int
    hub_dir: Path
    language: str
    idle_minutes: float
    memory_limit: str
    cpu_limit: float

    @property
    def env(self) -> Path:
        """The students' Python environment."""
        return self.hub_dir / "env"

    @property
    def state(self) -> Path:
        """The hub's database, secret and pid files (root only)."""
        return self.hub_dir / "state"

    @property
    def book(self) -> Path:
        """The book's code and data the students' kernels import (no assignments, no hidden
        cases: those stay in the teacher's checkout)."""
        return self.hub_dir / "book"

    @property
    def course(self) -> Path:
        """The course repository nbgitpuller clones into each home (bare, read-only)."""
        return self.hub_dir / "course"

    @property
    def bind(self) -> tuple[str, int]:
        parsed = urlparse(self.bind_url)
        return parsed.hostname or "0.0.0.0", parsed.port or 8000

    def accounts(self) -> list[str]:
        """Every account the hub serves: the teachers, then the students."""
        return list(self.teachers) + [s.username for s in self.students]


def _url(name: str, value) -> str:
    parsed = urlparse(str(value))
    if parsed.scheme not in ("http", "https") or not parsed.hostname \
            or parsed.path not in ("", "/"):
        raise SettingsError(f"{name} = {value!r} is not an address the hub can use: write it as "
                            f"{name} = \"http://0.0.0.0:8000\" (scheme, host and port, no path)")
    return str(value).rstrip("/")


def _port(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1024 <= value <= 65535:
        raise SettingsError(f"{name} = {value!r}: write a port number between 1024 and 65535")
    return value


def read_roster(path: Path) -> tuple[Student, ...]:
    """The students of a roster file: ``username,full name`` a line, ``#`` comments and a
    ``username,name`` header allowed. Raises :class:`SettingsError` naming the line of a bad
    or repeated username."""
    path = Path(path)
    if not path.is_file():
        raise SettingsError(f"no roster at {path}: copy hub/roster.example.csv to {path.name} "
                            "and list your students, one 'username,full name' a line")
    students: list[Student] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        username, _, name = (part.strip() for part in line.partition(","))
        if number == 1 and username.lower() == "username":
            continue
        if not USERNAME.match(username):
            raise SettingsError(f"{path.name}, line {number}: {username!r} cannot be a username: "
                                "use lowercase letters, digits, _ and - (at most 32), starting "
                                "with a letter, e.g. 'alice' or 'liu_wei'")
        if username in SYSTEM_NAMES:
            raise SettingsError(f"{path.name}, line {number}: {username!r} is a system account's "
                                "name; give the student another username")
        if username in seen:
            raise SettingsError(f"{path.name}, line {number}: {username!r} is listed twice (first "
                                f"on line {seen[username]}); usernames must be unique")
        seen[username] = number
        students.append(Student(username, name or username))
    if not students:
        raise SettingsError(f"{path.name} lists no student: add one 'username,full name' a line")
    return tuple(students)


def load(config: Path) -> Settings:
    """The settings of the configuration file ``config``, checked; raises
    :class:`SettingsError` (or ``FileNotFoundError``) with what to change."""
    from traitlets.config import Config

    config = Path(config).resolve()
    if not config.is_file():
        raise FileNotFoundError(f"no hub configuration at {config}: the class server's file is "
                                "hub/jupyterhub_config.py in the book's repository")
    values: dict = {"c": Config(), "__file__": str(config)}
    values["get_config"] = lambda: values["c"]
    try:
        exec(compile(config.read_bytes(), str(config), "exec"), values)  # noqa: S102
    except SettingsError:
        raise
    except Exception as err:  # the teacher's file: say where it broke
        raise SettingsError(f"{config} does not run: {type(err).__name__}: {err}") from err
    missing = [k for k in ("ROSTER", "TEACHERS", "BIND_URL", "PUBLIC_URL", "HUB_DIR")
               if k not in values]
    if missing:
        raise SettingsError(f"{config} sets no {', '.join(missing)}: start again from the "
                            "repository's hub/jupyterhub_config.py")
    teachers = values["TEACHERS"]
    if isinstance(teachers, str) or not teachers or not all(
            isinstance(t, str) and USERNAME.match(t) for t in teachers):
        raise SettingsError(f"TEACHERS = {teachers!r}: write a list of usernames, e.g. "
                            "TEACHERS = [\"teacher\"]")
    roster = config.parent / values["ROSTER"]
    students = read_roster(roster)
    both = sorted(set(teachers) & {s.username for s in students})
    if both:
        raise SettingsError(f"{both} is both a teacher and a student in {roster.name}: a teacher "
                            "collects the students' work and needs an account of their own")
    language = values.get("LANGUAGE", "en")
    if language not in LANGUAGES:
        raise SettingsError(f"LANGUAGE = {language!r}: write \"en\" or \"zh\"")
    hub_dir = Path(values["HUB_DIR"])
    if not hub_dir.is_absolute():
        raise SettingsError(f"HUB_DIR = {str(hub_dir)!r}: write an absolute path, e.g. "
                            "\"/srv/attention-hub\"")
    idle, cpu = values.get("IDLE_MINUTES", 60), values.get("CPU_LIMIT", 1.0)
    if isinstance(idle, bool) or not isinstance(idle, int | float) or idle <= 0:
        raise SettingsError(f"IDLE_MINUTES = {idle!r}: write a number of minutes, e.g. 60")
    if isinstance(cpu, bool) or not isinstance(cpu, int | float) or cpu <= 0:
        raise SettingsError(f"CPU_LIMIT = {cpu!r}: write a number of cores, e.g. 1.0")
    return Settings(config=config, roster=roster, students=students, teachers=tuple(teachers),
                    bind_url=_url("BIND_URL", values["BIND_URL"]),
                    public_url=_url("PUBLIC_URL", values["PUBLIC_URL"]),
                    hub_port=_port("HUB_PORT", values.get("HUB_PORT", 8081)),
                    proxy_api_port=_port("PROXY_API_PORT", values.get("PROXY_API_PORT", 8001)),
                    hub_dir=hub_dir, language=language, idle_minutes=float(idle),
                    memory_limit=str(values.get("MEMORY_LIMIT", "")), cpu_limit=float(cpu))
