"""The build's execution cache and its driver, without a build: the key sees the code and not
the prose, cached outputs go back into the right cells, publishing copies only what changed,
and ``make book``'s phases are read off its output (book/site/execution.py, builds.py)."""

from __future__ import annotations

import os

import pytest

from book.site import builds, editions, execution


def _nb(*cells):
    out = []
    for kind, source, *tags in cells:
        cell = {"cell_type": kind, "metadata": {"tags": tags} if tags else {}, "source": source}
        if kind == "code":
            cell.update(outputs=[], execution_count=None)
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"name": "python3"}}}


def test_the_key_follows_the_code_inputs_and_language_not_the_prose():
    base = _nb(("markdown", "# Title"), ("code", "x = 1"), ("code", "print(x)"))
    key = execution.execution_key(base, "inputs", "en")
    prose = _nb(("markdown", "# Another title\n\nMore prose."), ("code", "x = 1"),
                ("code", "print(x)"))
    assert execution.execution_key(prose, "inputs", "en") == key
    assert execution.execution_key(prose | {"cells": prose["cells"][1:]}, "inputs", "en") == key
    changed = [
        _nb(("markdown", "# Title"), ("code", "x = 2"), ("code", "print(x)")),
        _nb(("markdown", "# Title"), ("code", "x = 1"), ("code", "print(x)", "raises-exception")),
        _nb(("markdown", "# Title"), ("code", "x = 1")),
    ]
    for other in changed:
        assert execution.execution_key(other, "inputs", "en") != key
    assert execution.execution_key(base, "other inputs", "en") != key   # a book/ module moved
    assert execution.execution_key(base, "inputs", "zh") != key          # the other edition
    list_source = _nb(("markdown", "# Title"), ("code", ["x = ", "1"]), ("code", "print(x)"))
    assert execution.execution_key(list_source, "inputs", "en") == key
    with pytest.raises(TypeError, match="notebook"):
        execution.execution_key("x = 1", "inputs", "en")


def test_cached_outputs_go_back_into_their_cells():
    notebook = _nb(("markdown", "new prose"), ("code", "x = 1"), ("markdown", "more"),
                   ("code", "print(x)"))
    executed = _nb(("markdown", "old prose"), ("code", "x = 1"), ("code", "print(x)"))
    executed["cells"][2]["outputs"] = [{"output_type": "stream", "name": "stdout",
                                        "text": "1\n"}]
    executed["cells"][2]["execution_count"] = 2
    executed["metadata"]["widgets"] = {"state": {}}
    execution.merge_outputs(notebook, executed)
    assert notebook["cells"][0]["source"] == "new prose"
    assert notebook["cells"][3]["outputs"][0]["text"] == "1\n"
    assert notebook["cells"][3]["execution_count"] == 2
    assert notebook["metadata"]["widgets"] == {"state": {}}
    with pytest.raises(ValueError, match="code cells"):
        execution.merge_outputs(_nb(("code", "x = 1")), executed)


def test_jobs_reads_book_jobs(monkeypatch):
    monkeypatch.setenv("BOOK_JOBS", "3")
    assert execution.jobs() == 3
    monkeypatch.delenv("BOOK_JOBS")
    assert execution.jobs() == max(1, os.cpu_count() or 1)
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("BOOK_JOBS", bad)
        with pytest.raises(ValueError, match="BOOK_JOBS"):
            execution.jobs()


def test_publishing_copies_what_changed_and_drops_what_went(tmp_path):
    source, target = tmp_path / "zh", tmp_path / "html" / "zh"
    (source / "chapters").mkdir(parents=True)
    (source / "index.html").write_text("index", encoding="utf-8")
    (source / "chapters" / "a.html").write_text("a", encoding="utf-8")
    assert editions.sync_tree(source, target) == 2
    assert editions.sync_tree(source, target) == 0          # nothing changed: nothing copied
    (source / "chapters" / "a.html").write_text("a, edited", encoding="utf-8")
    (source / "index.html").unlink()
    (target / "stale").mkdir()
    (target / "stale" / "old.html").write_text("old", encoding="utf-8")
    assert editions.sync_tree(source, target) == 1
    assert (target / "chapters" / "a.html").read_text(encoding="utf-8") == "a, edited"
    assert not (target / "index.html").exists() and not (target / "stale").exists()
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(NotADirectoryError):
        editions.sync_tree(source, tmp_path / "file")


def test_build_commands_and_folders():
    en = builds.command("en")
    assert en[1:] == ["build", str(builds.ROOT), "-nW", "--keep-going"]
    zh = builds.command("zh", builds.output_folder("zh"))
    assert zh[zh.index("--path-output") + 1] == str(builds.ROOT / editions.ZH_BUILD)
    assert zh[zh.index("--config") + 1].endswith("_config.yml")
    assert builds.output_folder("zh", student=True) == builds.ROOT / "_build" / "student" / "zh"
    with pytest.raises(ValueError, match="edition"):
        builds.command("fr")


def test_the_editions_output_is_prefixed_and_each_status_kept():
    import sys

    lines = []
    codes = builds.run_builds({
        "en": ([sys.executable, "-c", "print('one'); print('[en 1/2] two')"], dict(os.environ)),
        "zh": ([sys.executable, "-c", "import sys; print('three'); sys.exit(3)"],
               dict(os.environ)),
    }, write=lines.append)
    assert codes == {"en": 0, "zh": 3}
    assert sorted(lines) == ["[en 1/2] two", "[en] one", "[zh] three"]


def test_make_book_phases_read_off_its_output():
    import bench

    serial = [(60.0, ".venv/bin/jupyter-book build . -nW --keep-going"),
              (80.0, "/x/chapters/01.ipynb: Executing notebook using local CWD"),
              (260.0, "Finished generating HTML for book."),
              (270.0, "/x/chapters/01.ipynb: Executing notebook using local CWD"),
              (480.0, "Finished generating HTML for book.")]
    phases = bench.book_phases(serial)
    assert phases == {"install": 60.0, "builds": {"en": 200.0, "zh": 220.0}, "executions": 2}
    together = [(50.0, ".venv/bin/python -m book.site.builds en zh"),
                (51.0, "[zh 1/14] chapters/01.ipynb: Executing notebook"),
                (200.0, "[zh] Finished generating HTML for book."),
                (210.0, "[en] Finished generating HTML for book.")]
    phases = bench.book_phases(together)
    assert phases == {"install": 50.0, "builds": {"en": 160.0, "zh": 150.0}, "executions": 1}


@pytest.mark.slow
def test_a_worker_runs_a_notebook_and_reports_a_failing_cell(tmp_path):
    import json

    good = _nb(("markdown", "# A"), ("code", "print(6 * 7)"))
    bad = _nb(("code", "x = 1"), ("code", "1 / 0"))
    for name, notebook in (("good", good), ("bad", bad)):
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(notebook | {"nbformat": 4,
                                                                       "nbformat_minor": 5}),
                                                encoding="utf-8")
    seconds, error = execution.run_one(tmp_path / "good.ipynb", tmp_path / "good.out.ipynb",
                                       tmp_path, 60, False)
    assert error is None and seconds > 0
    ran = json.loads((tmp_path / "good.out.ipynb").read_text(encoding="utf-8"))
    assert "".join(ran["cells"][1]["outputs"][0]["text"]) == "42\n"
    seconds, error = execution.run_one(tmp_path / "bad.ipynb", tmp_path / "bad.out.ipynb",
                                       tmp_path, 60, False)
    assert "ZeroDivisionError" in error and "Kernel is running" not in error
    assert not (tmp_path / "bad.out.ipynb").exists()


@pytest.mark.slow
def test_the_worker_imports_neither_the_book_nor_torch(tmp_path):
    """Each of a build's 28 workers started in ~2 s when it imported the book package (torch);
    run as a script it imports nbformat and nbclient only."""
    import json
    import subprocess

    notebook = _nb(("code", "print(6 * 7)")) | {"nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "nb.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    command = execution.worker_command(tmp_path / "nb.ipynb", tmp_path / "out.ipynb", tmp_path,
                                       60, False)
    proc = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "nbclient" in imported
    assert not {"torch", "book", "jupyter_cache", "sqlalchemy"} & imported


def test_a_build_takes_the_first_notebook_no_other_build_is_running(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    todo = [("chapters/a",), ("chapters/b",), ("chapters/c",)]
    with open(tmp_path / "notebook-chapters__a.lock", "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX)          # the other edition is running chapter a
        with execution._claim(todo, tmp_path) as first:
            assert first == ("chapters/b",)
            with execution._claim(todo, tmp_path) as second:   # b is ours now: c
                assert second == ("chapters/c",)
        with execution._claim(todo, tmp_path) as last:   # only a is left: taken all the same
            assert last == ("chapters/a",)
    with execution._claim(todo, tmp_path) as none:
        assert none is None
    with execution._claim([("chapters/b",)], tmp_path) as again:   # released after the run
        assert again == ("chapters/b",)
