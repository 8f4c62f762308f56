"""Rebuilds are never stale: editing a ``book/`` module (or a data file under ``assets/``)
re-executes the notebooks that depend on it on the next build; an unchanged tree re-executes
nothing (book.site.sphinxext's ``env-get-outdated`` hook); a prose-only edit shows on the page
without executing anything (book.site.execution's cache, keyed by the code a notebook runs).

Runs ``jupyter-book build`` (as ``make book`` does, in each edition) in a scratch copy of the
repository whose table of contents is one small probe notebook that imports
``book.ideas.scaling`` and prints a value of it, so that each build takes seconds instead of
the whole book's minutes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow

JB = Path(sys.executable).parent / "jupyter-book"
PROBE_CELLS = [
    "import book\nfrom book.ideas import scaling\n\nbook.setup()",
    'print("book from:", book.__file__)\nprint("probe value:", getattr(scaling, "PROBE", '
    '"original"))',
    "import uuid\n\nprint('execution id:', uuid.uuid4().hex)  # new on every execution",
]


def _notebook(cells: list[str]) -> str:
    return json.dumps({
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": "# Probe"}]
        + [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": c} for c in cells],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5})


EDITIONS = ("en", "zh")


@pytest.fixture(scope="module", params=EDITIONS)
def scratch(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"rebuild-{request.param}")
    shutil.copytree(ROOT / "book", root / "book",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / "assets", root / "assets")
    shutil.copy2(ROOT / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n"
                                   "  - file: chapters/probe\n", encoding="utf-8")
    (root / "index.md").write_text("# Rebuild probe\n", encoding="utf-8")
    # the Chinese edition's theme strings and catalogues, and the chapters its download
    # button serves in Chinese (outside the probe's table of contents: never built)
    shutil.copytree(ROOT / "locale", root / "locale")
    shutil.copytree(ROOT / "chapters", root / "chapters",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    (root / "chapters" / "probe.ipynb").write_text(_notebook(PROBE_CELLS), encoding="utf-8")
    return root, request.param


def build(root: Path, edition: str = "en") -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))  # the kernel and Sphinx import this book/
    cmd = [str(JB), "build", str(root), "-nW", "--keep-going"]
    out = root
    if edition != "en":
        config = subprocess.run([sys.executable, "-m", "book.site.editions", "config", edition],
                                env=env, cwd=root, capture_output=True, text=True, check=True)
        out = root / "_build" / edition
        cmd += ["--config", config.stdout.strip(), "--path-output", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    page = (out / "_build" / "html" / "chapters" / "probe.html").read_text(encoding="utf-8")
    value = re.search(r"probe value: (\w+)", page)
    run = re.search(r"execution id: (\w+)", page)
    return {"seconds": time.perf_counter() - start, "log": log, "page": page,
            "value": value and value.group(1), "run": run and run.group(1),
            "executions": log.count("Executing notebook")}


def test_a_book_edit_re_executes_and_an_unchanged_tree_does_not(scratch):
    scratch, edition = scratch
    first = build(scratch, edition)
    assert first["run"] and first["value"] == "original", first["log"][-3000:]
    assert f"book from: {scratch / 'book'}" in first["page"]  # the scratch copy, not the repo's
    assert first["executions"] == 1, first["log"][-3000:]
    assert f"[{edition} 1/1] chapters/probe.ipynb: Executing notebook" in first["log"]

    # Two edits that must execute nothing, in one build: a module the probe never imports
    # (this covers the unchanged tree too: the probe's inputs are the same in both) and the
    # probe's prose, which the page is read again for and shows, from the cached run. Either
    # edit alone re-executing the probe would fail the same assertions.
    with open(scratch / "book" / "ideas" / "kvcache.py", "a", encoding="utf-8") as f:
        f.write("\n# an edit to a module the probe never imports\n")
    probe = scratch / "chapters" / "probe.ipynb"
    notebook = json.loads(probe.read_text(encoding="utf-8"))
    notebook["cells"][0]["source"] = "# Probe\n\nA new sentence of prose."
    probe.write_text(json.dumps(notebook), encoding="utf-8")
    again = build(scratch, edition)
    assert "A new sentence of prose." in again["page"], again["log"][-3000:]
    assert again["run"] == first["run"], "an edit that changes no input executed the probe again"
    assert again["value"] == "original"
    assert again["executions"] == 0, again["log"][-3000:]

    with open(scratch / "book" / "ideas" / "scaling.py", "a", encoding="utf-8") as f:
        f.write('\nPROBE = "edited"\n')
    edited = build(scratch, edition)
    assert edited["run"] != again["run"], edited["log"][-3000:]
    assert edited["value"] == "edited", "the page kept the old output after book/ changed"
    assert "re-executing 1 notebook(s): chapters/probe" in edited["log"]
    assert edited["executions"] == 1, edited["log"][-3000:]

    (scratch / "assets" / "probe_data.txt").write_text("new data\n", encoding="utf-8")
    data = build(scratch, edition)
    assert data["run"] != edited["run"], data["log"][-3000:]
    print(f"\nprobe builds ({edition}): cold {first['seconds']:.1f} s, after a prose-only edit "
          f"and an edit to a module it never imports {again['seconds']:.1f} s, after a book/ "
          f"edit {edited['seconds']:.1f} s, after a data edit {data['seconds']:.1f} s")
