"""Cheap checks of the source tree that need no build (they run in `make quick`)."""

from __future__ import annotations

import nbformat
from conftest import CHAPTERS, ROOT


def test_notebooks_are_committed_without_outputs():
    for nb_path in CHAPTERS:
        nb = nbformat.read(nb_path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs, f"{nb_path.name} has outputs: strip them"
                assert cell.execution_count is None, f"{nb_path.name} has execution counts"


def test_toc_lists_every_chapter():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    for nb in CHAPTERS:
        assert f"chapters/{nb.stem}" in toc
