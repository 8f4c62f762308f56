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


def test_notebooks_open_and_save_unchanged_in_jupyterlab():
    """Read and written as the Jupyter server does (nbformat), with the metadata JupyterLab's
    kernel writes (kernelspec display name, language_info): byte for byte the committed file.
    tests/test_jupyterlab.py checks the same in a real JupyterLab."""
    from book.site import nbfiles, prose_roles

    for nb_path in CHAPTERS:
        text = nb_path.read_text(encoding="utf-8")
        assert nbfiles.as_jupyterlab_saves(text) == text, \
            f"{nb_path.name} changes when JupyterLab saves it: python -m book.site.nbfiles fix"
        counts = prose_roles.count(nb_path)
        assert counts["glue_text"] == 0, (f"{nb_path.name} has {{glue:text}} roles that Jupyter "
                                          "shows raw: python -m book.site.prose_roles convert")


def test_cross_references_resolve_within_their_cell():
    """jupyterlab-myst renders each markdown cell on its own: a {ref} to a label of another cell
    logs "Cross reference target was not found" in JupyterLab (chapter 9 did, 12 times), so a
    reference names a target in its own cell or the prose names the section in words."""
    import re

    role = re.compile(r"\{(?:ref|numref)\}`(?:[^`<]*<)?([^`>]+)>?`")
    label = re.compile(r"^\(([^)]+)\)=\s*$", re.M)
    loose = []
    for path in CHAPTERS:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type != "markdown":
                continue
            here = set(label.findall(cell.source))
            loose += [f"{path.name} cell {i}: {{ref}}`{t}`" for t in role.findall(cell.source)
                      if t not in here]
    assert not loose, "references to another cell's label:\n" + "\n".join(loose)
