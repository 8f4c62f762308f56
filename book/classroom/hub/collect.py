"""Collect the students' assignments from their homes into a folder `make grade` reads.

Each student's ``~/course/assignments`` (and ``~/course/zh/assignments``) is read *as that
student* (a child process with their uid and gid, no other group), so a link to a file they
cannot read themselves gives nothing, and symbolic links are not followed at all. What comes
back is data: notebooks up to the grader's size limit. They land in
``<out>/<username>/<assignment>/<file>.ipynb`` (``zh/`` before the assignment for the Chinese
copies), so the grades CSV's ``submission`` column starts with the student's username.

A notebook still as it was handed out is left out, but for each assignment the student has not
touched in either language the hub's language's copy is collected anyway: the teacher sees a
row (of zeros) for every student and assignment.
"""

from __future__ import annotations

import base64
import hashlib
import json
import pwd
import subprocess
from pathlib import Path

from ..grading import MAX_NOTEBOOK_BYTES
from . import course
from .install import HubError
from .settings import Settings

# Run as the student, with the standard library only: every *.ipynb under the two assignment
# folders, as (path relative to ~/course, base64 bytes); symbolic links and checkpoints skipped.
READER = r"""
import base64, json, os, stat, sys
home, limit = sys.argv[1], int(sys.argv[2])
course = os.path.join(home, "course")
found, skipped = [], []
for top in ("assignments", os.path.join("zh", "assignments")):
    start = os.path.join(course, top)
    try:
        if not stat.S_ISDIR(os.lstat(start).st_mode):
            continue
    except OSError:
        continue
    for folder, dirs, files in os.walk(start, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints" and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(".ipynb"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, course)
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError as err:
                skipped.append([rel, err.strerror or str(err)])
                continue
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    skipped.append([rel, "not a regular file"])
                    continue
                data = handle.read(limit + 1)
            if len(data) > limit:
                skipped.append([rel, f"larger than {limit} bytes"])
                continue
            found.append([rel, base64.b64encode(data).decode()])
json.dump({"found": found, "skipped": skipped, "course": os.path.isdir(course)}, sys.stdout)
"""


def read_as(username: str, python: Path) -> dict:
    """The notebooks under ``username``'s course assignments, read with their rights."""
    user = pwd.getpwnam(username)
    proc = subprocess.run([str(python), "-I", "-S", "-c", READER, user.pw_dir,
                           str(MAX_NOTEBOOK_BYTES)], user=user.pw_uid, group=user.pw_gid,
                          extra_groups=[], cwd="/",
                          env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise HubError(f"reading {username}'s assignments failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def _safe(rel: str) -> Path:
    path = Path(rel)
    if path.is_absolute() or ".." in path.parts:
        raise HubError(f"refusing the path {rel!r}")
    return path


def collect(settings: Settings, out: Path, log=print) -> dict[str, list[str]]:
    """Copy every student's changed assignment notebooks to ``out`` (made empty of earlier
    collections first); per student, the paths written."""
    out = Path(out)
    handed_out = course.manifest(settings)
    python = settings.env / "bin" / "python3"
    if not python.exists():
        raise HubError(f"{python} is missing: run `sudo make hub` once first")
    written: dict[str, list[str]] = {}
    for student in settings.students:
        try:
            pwd.getpwnam(student.username)
        except KeyError:
            log(f"{student.username}: no account yet (run `sudo make hub-users`); skipped")
            continue
        found = read_as(student.username, python)
        folder = out / student.username
        if folder.exists():
            for old in sorted(folder.rglob("*.ipynb")):
                old.unlink()
        chosen: dict[str, bytes] = {}
        touched: set[str] = set()
        for rel, data in found["found"]:
            raw = base64.b64decode(data)
            name = _safe(rel).parts[-2] if len(_safe(rel).parts) >= 2 else rel
            if handed_out.get(rel) == hashlib.sha256(raw).hexdigest():
                continue
            chosen[rel] = raw
            touched.add(name)
        for name in course.assignment_names():
            default = course.assignment_path(name, settings.language)
            if name not in touched:
                raw = next((base64.b64decode(d) for r, d in found["found"] if r == default), None)
                if raw is not None:
                    chosen[default] = raw
        for rel, raw in sorted(chosen.items()):
            parts = _safe(rel).parts
            target = folder.joinpath(*[p for p in parts if p != "assignments"])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(raw)
            written.setdefault(student.username, []).append(str(target.relative_to(out)))
        for rel, why in found["skipped"]:
            log(f"{student.username}: {rel} skipped ({why})")
        log(f"{student.username}: {len(chosen)} notebook(s)" if found.get("course") else
            f"{student.username}: no ~/course yet (never opened a link of the course)")
    return written
