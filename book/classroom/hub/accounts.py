"""One Unix account per student (and teacher): the hub logs them in with its password (PAM) and
runs their JupyterLab as that account, in a home no other student can read.

New accounts get a random first password, written to HUB_DIR/state/passwords.csv (root only)
for the teacher to hand out; a student changes it with ``passwd`` in a JupyterLab terminal.
Existing accounts are left as they are (a teacher's own login keeps its password).
"""

from __future__ import annotations

import csv
import grp
import pwd
import secrets
import subprocess
from pathlib import Path

from .install import HubError
from .settings import STUDENT_GROUP, Settings


def _run(cmd: list[str], what: str, stdin: str | None = None) -> None:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if proc.returncode != 0:
        raise HubError(f"{what} failed: {proc.stderr.strip() or proc.stdout.strip()}")


def exists(username: str) -> bool:
    try:
        pwd.getpwnam(username)
    except KeyError:
        return False
    return True


def home(username: str) -> Path:
    return Path(pwd.getpwnam(username).pw_dir)


def ensure_group() -> None:
    try:
        grp.getgrnam(STUDENT_GROUP)
    except KeyError:
        _run(["groupadd", "--system", STUDENT_GROUP], f"creating the group {STUDENT_GROUP}")


def create(username: str, full_name: str) -> str:
    """A new account with a private home (mode 700) in the class's group; its first password."""
    comment = "".join(ch for ch in full_name if ch not in ":,\n") or username
    _run(["useradd", "--create-home", "--shell", "/bin/bash", "--comment", comment,
          "--groups", STUDENT_GROUP, "--key", "UMASK=077", username],
         f"creating the account {username!r}")
    home(username).chmod(0o700)
    password = secrets.token_urlsafe(9)
    _run(["chpasswd"], f"setting {username!r}'s first password", stdin=f"{username}:{password}\n")
    return password


def ensure_accounts(settings: Settings, log=print) -> dict[str, str]:
    """An account for every teacher and student of the roster that has none; the new
    accounts' first passwords (also added to HUB_DIR/state/passwords.csv). Existing homes are
    closed to other accounts (mode 700)."""
    ensure_group()
    people = [(t, t) for t in settings.teachers] + [(s.username, s.name) for s in settings.students]
    made = {}
    for username, name in people:
        if exists(username):
            if username not in settings.teachers:
                home(username).chmod(0o700)
            continue
        made[username] = create(username, name)
    if made:
        passwords = settings.state / "passwords.csv"
        new_file = not passwords.exists()
        with passwords.open("a", encoding="utf-8", newline="") as out:
            writer = csv.writer(out)
            if new_file:
                writer.writerow(["username", "first password"])
            writer.writerows(sorted(made.items()))
        passwords.chmod(0o600)
        log(f"Created {len(made)} account(s): {', '.join(sorted(made))}; their first "
            f"passwords are in {passwords} (hand each student theirs)")
    return made


def remove(username: str) -> None:
    """Remove an account the hub made, with its home (refuses any other account)."""
    if not exists(username):
        return
    members = grp.getgrnam(STUDENT_GROUP).gr_mem if _group_exists() else []
    if username not in members:
        raise HubError(f"{username!r} was not made by the hub (not in {STUDENT_GROUP}); "
                       "remove it by hand if you mean to")
    _run(["userdel", "--remove", username], f"removing the account {username!r}")


def _group_exists() -> bool:
    try:
        grp.getgrnam(STUDENT_GROUP)
    except KeyError:
        return False
    return True
