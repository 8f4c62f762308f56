"""Chapter notebooks as JupyterLab saves them, so that opening and saving changes nothing.

When JupyterLab opens a notebook and its kernel starts, it writes the kernel's
``language_info`` (from the kernel's ``kernel_info`` reply) and the kernelspec's display name
into the notebook's metadata, and the Jupyter server saves it with ``nbformat.write``. A file
committed with exactly that metadata, in exactly that serialisation, is not marked modified on
open and saves byte for byte. ::

    python -m book.site.nbfiles fix chapters/*.ipynb    # write JupyterLab's metadata, no outputs
    python -m book.site.nbfiles check chapters/*.ipynb  # exit 1 if JupyterLab would change a file
"""

from __future__ import annotations

import sys
from pathlib import Path

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def language_info() -> dict:
    """The ``language_info`` an ipykernel running this interpreter reports to JupyterLab."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def as_jupyterlab_saves(text: str) -> str:
    """``text`` (a notebook's JSON) as JupyterLab would save it after opening it."""
    import nbformat

    if not isinstance(text, str):
        raise TypeError(f"as_jupyterlab_saves takes the notebook's JSON text, got "
                        f"{type(text).__name__}")
    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = language_info()
    return nbformat.writes(nb, version=nbformat.NO_CONVERT) + "\n"  # nbformat.write adds it


def strip_outputs(text: str) -> str:
    """``text`` without outputs and execution counts (what the git filter commits)."""
    import nbformat

    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("user_expressions", None)  # jupyterlab-myst's evaluated roles
    nb.metadata.pop("widgets", None)
    return nbformat.writes(nb, version=nbformat.NO_CONVERT) + "\n"


def fix(path: str | Path) -> bool:
    """Rewrite ``path`` as JupyterLab saves it, outputs stripped; True if it changed."""
    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"fix needs an existing .ipynb file, got {str(path)!r}")
    before = path.read_text(encoding="utf-8")
    after = as_jupyterlab_saves(strip_outputs(before))
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("fix", "check"):
        print("usage: python -m book.site.nbfiles {fix|check} NOTEBOOK...", file=sys.stderr)
        return 2
    changed = []
    for name in argv[1:]:
        if argv[0] == "fix":
            if fix(name):
                changed.append(name)
        else:
            text = Path(name).read_text(encoding="utf-8")
            if as_jupyterlab_saves(strip_outputs(text)) != text:
                changed.append(name)
    verb = "rewritten" if argv[0] == "fix" else "would change on open/save"
    print(f"{len(changed)} of {len(argv) - 1} notebooks {verb}: {', '.join(changed) or '-'}")
    return 1 if changed and argv[0] == "check" else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
