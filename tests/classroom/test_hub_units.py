"""book/classroom/hub without a running hub: the teacher's settings and roster, their errors,
the links (the same as the book's launch buttons), what the students' Python holds, the
collector's reader on a hostile home, and the refusals that come before anything is done
(not root, a port in use). The real hub: tests/test_hub.py."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from book.classroom.hub import __main__ as cli
from book.classroom.hub import collect, course, install
from book.classroom.hub.settings import SettingsError, load, read_roster

CONFIG = install.ROOT / "hub" / "jupyterhub_config.py"


def _config(tmp_path: Path, roster: str = "username,name\nalice,Alice Liu\nbob,Bob\n",
            **values) -> Path:
    text = CONFIG.read_text(encoding="utf-8")
    for name, value in values.items():
        text, n = re.subn(rf"^{name} = .*$", f"{name} = {value}", text, count=1, flags=re.M)
        assert n == 1, name
    (tmp_path / "jupyterhub_config.py").write_text(text, encoding="utf-8")
    (tmp_path / "roster.csv").write_text(roster, encoding="utf-8")
    return tmp_path / "jupyterhub_config.py"


def test_the_repositorys_file_loads_as_jupyterhub_reads_it(tmp_path):
    settings = load(_config(tmp_path))
    assert [s.username for s in settings.students] == ["alice", "bob"]
    assert settings.students[0].name == "Alice Liu"
    assert settings.teachers == ("teacher",) and settings.hub_dir == Path("/srv/attention-hub")
    assert settings.course == Path("/srv/attention-hub/course")
    from book.site import launch  # the book's default launch links open this course

    assert Path(launch.DEFAULT_COURSE) == settings.course
    assert settings.bind == ("0.0.0.0", 8000) and settings.language == "en"
    # JupyterHub's own loader reads the same file into the same settings
    from traitlets.config.loader import PyFileConfigLoader

    c = PyFileConfigLoader(settings.config.name, str(tmp_path)).load_config()
    assert c.Authenticator.allowed_users == {"alice", "bob", "teacher"}
    assert c.Authenticator.admin_users == {"teacher"}
    assert c.JupyterHub.bind_url == settings.bind_url
    assert c.Spawner.cmd == [str(settings.env / "bin" / "jupyterhub-singleuser")]
    assert c.Spawner.environment["GIT_CONFIG_SYSTEM"] == str(settings.hub_dir / "gitconfig")
    assert "PYTHONPATH" not in c.Spawner.env_keep   # nothing of the teacher's checkout
    assert "--timeout=3600" in c.JupyterHub.services[0]["command"]


@pytest.mark.parametrize(("roster", "said"), [
    ("username,name\nAlice,Alice\n", "cannot be a username"),
    ("username,name\n1bob,Bob\n", "cannot be a username"),
    ("username,name\nroot,Root\n", "system account"),
    ("username,name\nbob,Bob\nbob,Bobby\n", "listed twice (first on line 2)"),
    ("username,name\n# nobody yet\n", "lists no student"),
    ("username,name\nteacher,T\n", "both a teacher and a student"),
])
def test_a_bad_roster_is_refused_with_its_line(tmp_path, roster, said):
    with pytest.raises(SettingsError, match=re.escape(said)):
        load(_config(tmp_path, roster=roster))


@pytest.mark.parametrize(("name", "value", "said"), [
    ("BIND_URL", '"0.0.0.0:8000"', "not an address the hub can use"),
    ("PUBLIC_URL", '"http://hub.example.org/class"', "no path"),
    ("HUB_PORT", "80", "between 1024 and 65535"),
    ("HUB_DIR", '"attention-hub"', "absolute path"),
    ("TEACHERS", '"teacher"', "a list of usernames"),
    ("LANGUAGE", '"fr"', '"en" or "zh"'),
    ("IDLE_MINUTES", "0", "number of minutes"),
])
def test_a_bad_setting_says_what_to_write(tmp_path, name, value, said):
    with pytest.raises(SettingsError, match=re.escape(said)):
        load(_config(tmp_path, **{name: value}))


def test_missing_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="hub/jupyterhub_config.py"):
        load(tmp_path / "nothing.py")
    with pytest.raises(SettingsError, match="copy hub/roster.example.csv"):
        read_roster(tmp_path / "roster.csv")
    broken = tmp_path / "jupyterhub_config.py"
    broken.write_text("ROSTER = \n", encoding="utf-8")
    with pytest.raises(SettingsError, match="does not run: SyntaxError"):
        load(broken)


def test_the_example_roster_reads():
    students = read_roster(install.ROOT / "hub" / "roster.example.csv")
    assert [s.username for s in students] == ["alice", "bob"]


def test_course_links_are_the_books_launch_buttons(tmp_path):
    from book.site import launch

    settings = load(_config(tmp_path, PUBLIC_URL='"http://hub.example.org:8000"'))
    hub = launch.Hub(settings.public_url, str(settings.course))
    for page in ("02_scaling", "04b_toy_model"):
        for language in ("en", "zh"):
            assert course.link(settings, course.chapter_path(page, language)) == \
                launch.launch_url(hub, page, language)
    links = dict(course.links(settings))
    assert len([k for k in links if k.startswith("chapter ")]) == 14
    assert len([k for k in links if k.startswith("assignment ")]) == len(
        course.assignment_names()) >= 7
    assert "assignments%2F" not in links["assignment 01_attention_numpy"]
    assert "urlpath=lab/tree/course/assignments/01_attention_numpy/01_attention_numpy.ipynb" \
        in links["assignment 01_attention_numpy"]


def test_the_students_python_is_the_readers_without_the_checkout():
    text = install.student_requirements()
    lines = text.splitlines()
    assert not [x for x in lines if x.startswith(("-e", "-r"))], "no editable checkout, no -r"
    for wanted in ("torch==2.13.0", "jupyterlab==", "jupyterlab-myst==", "otter-grader==",
                   "jupyterhub==6.", "nbgitpuller==", "jupyterhub-idle-culler=="):
        assert any(x.startswith(wanted) for x in lines), wanted
    assert len(lines) == len(set(lines))


def test_the_book_copy_leaves_out_the_hidden_cases():
    assert install._ignore(str(install.ROOT / "book"), ["classroom", "face", "x.pyc"]) == \
        {"classroom", "x.pyc"}
    assert install._ignore(str(install.ROOT / "book" / "face"), ["classroom"]) == set()
    assert "book/classroom" in install.PRIVATE and "assignments" in install.PRIVATE


def test_not_root_is_refused_before_anything(tmp_path, monkeypatch, capsys):
    config = _config(tmp_path, HUB_DIR=f'"{tmp_path / "hubdir"}"')
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    for command in ("up", "setup", "serve", "users", "collect", "stop"):
        extra = ["--out", str(tmp_path / "out")] if command == "collect" else []
        assert cli.main([command, "--config", str(config), *extra]) == 2
        assert "must be set up and started as root" in capsys.readouterr().err
    assert not (tmp_path / "hubdir").exists() and not (tmp_path / "out").exists()


def test_a_port_in_use_is_named(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        settings = load(_config(tmp_path, BIND_URL=f'"http://127.0.0.1:{port}"'))
        with pytest.raises(install.HubError, match=f"port {port} on 127.0.0.1 .* already in use"):
            install.require_free(settings)


def test_the_reader_takes_notebooks_only_and_follows_no_link(tmp_path):
    """The collector's reader (run as the student in the hub) on a home with the tricks a
    student could play: a link to another file, a link in place of a folder, a huge file,
    checkpoints, hidden folders, other files."""
    home = tmp_path / "home"
    work = home / "course" / "assignments" / "01_x"
    work.mkdir(parents=True)
    (work / "01_x.ipynb").write_text('{"cells": []}', encoding="utf-8")
    (work / "notes.txt").write_text("not a notebook", encoding="utf-8")
    secret = tmp_path / "secret.ipynb"
    secret.write_text("SECRET", encoding="utf-8")
    (work / "link.ipynb").symlink_to(secret)
    (home / "course" / "assignments" / "02_y").symlink_to(tmp_path, target_is_directory=True)
    (work / ".ipynb_checkpoints").mkdir()
    (work / ".ipynb_checkpoints" / "01_x-checkpoint.ipynb").write_text("{}", encoding="utf-8")
    (work / "big.ipynb").write_bytes(b"x" * 2000)
    zh = home / "course" / "zh" / "assignments" / "01_x"
    zh.mkdir(parents=True)
    (zh / "01_x.ipynb").write_text('{"zh": 1}', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-I", "-S", "-c", collect.READER, str(home), "1000"],
                          capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout)
    found = {rel: base64.b64decode(data).decode() for rel, data in out["found"]}
    assert found == {"assignments/01_x/01_x.ipynb": '{"cells": []}',
                     "zh/assignments/01_x/01_x.ipynb": '{"zh": 1}'}
    skipped = dict(out["skipped"])
    assert "larger than 1000 bytes" in skipped["assignments/01_x/big.ipynb"]
    assert "assignments/01_x/link.ipynb" in skipped   # O_NOFOLLOW: not read
    assert "SECRET" not in proc.stdout


def test_collected_paths_cannot_leave_the_folder():
    for rel in ("../etc/passwd", "/etc/passwd", "assignments/../../x.ipynb"):
        with pytest.raises(install.HubError, match="refusing the path"):
            collect._safe(rel)
    assert collect._safe("zh/assignments/a/a.ipynb") == Path("zh/assignments/a/a.ipynb")
