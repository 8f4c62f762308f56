"""The never-stale rebuild's inputs: a notebook is executed again when anything it draws from
changes, the string table included (its figures, widgets and messages are the table's words)."""

from __future__ import annotations

import json
from pathlib import Path

from book.site import sphinxext


def _tree(tmp_path: Path) -> tuple[dict[str, Path], Path, Path]:
    package = tmp_path / "book"
    (package / "strings").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "strings" / "ch01.toml").write_text('[title]\nen = "Scores"\nzh = "分数"\n',
                                                   encoding="utf-8")
    notebook = tmp_path / "chapters" / "01_x.ipynb"
    notebook.parent.mkdir()
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "import book",
                                               "metadata": {}, "outputs": []}],
                                    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return {"chapters/01_x": notebook}, tmp_path, package


def test_a_changed_string_table_reexecutes_the_notebooks(tmp_path):
    notebooks, srcdir, package = _tree(tmp_path)
    before = sphinxext.notebook_input_hashes(notebooks, srcdir, package)
    assert sphinxext.notebook_input_hashes(notebooks, srcdir, package) == before  # unchanged
    (package / "strings" / "ch01.toml").write_text('[title]\nen = "Scores"\nzh = "得分"\n',
                                                   encoding="utf-8")
    after = sphinxext.notebook_input_hashes(notebooks, srcdir, package)
    assert after["chapters/01_x"] != before["chapters/01_x"]
