"""The prose's numbers in both front-ends: ``{glue:text}`key``` → ``{eval}`book.glued("key")```.

A chapter's markdown names each computed number once, as ``{eval}`book.glued("var_64:.1f")```:

* in JupyterLab / Notebook 7 (with jupyterlab-myst, from requirements.txt) the role is evaluated
  in the reader's kernel, so the prose shows the numbers of the reader's own run;
* in the book build, ``book.site.sphinxext`` reads the same role as MyST-NB's
  ``{glue:text}`var_64:.1f``` (the value glued by ``book.glue``), in any execution mode.

This module converts notebooks written with ``{glue:text}`` roles (all chapters were, and a
translated edition may be) and checks that none is left::

    python -m book.site.prose_roles convert chapters/*.ipynb   # rewrite in place, print the counts
    python -m book.site.prose_roles check chapters/*.ipynb     # exit 1 if a {glue:text} role is
    left
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

GLUE_TEXT = re.compile(r"\{glue:text\}`([^`\"']+)`")
EVAL_GLUED = re.compile(r"""\{eval\}`book\.glued\("([^"`]+)"\)`""")


def convert_text(text: str) -> tuple[str, int]:
    """``text`` with every ``{glue:text}`key``` turned into ``{eval}`book.glued("key")```."""
    if not isinstance(text, str):
        raise TypeError(f"convert_text takes markdown text (str), got {type(text).__name__}")
    return GLUE_TEXT.subn(lambda m: f'{{eval}}`book.glued("{m.group(1)}")`', text)


def _markdown_cells(nb):
    return [c for c in nb.cells if c.cell_type == "markdown"]


def convert(path: str | Path) -> int:
    """Rewrite the notebook at ``path`` in place; the number of roles converted."""
    import nbformat

    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"convert needs an existing .ipynb file, got {str(path)!r}")
    nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    total = 0
    for cell in _markdown_cells(nb):
        cell.source, n = convert_text(cell.source)
        total += n
    if total:
        nbformat.write(nb, path, version=nbformat.NO_CONVERT)
    return total


def count(path: str | Path) -> dict[str, int]:
    """How many ``{glue:text}`` and ``{eval}`book.glued(…)``` roles the notebook's prose has."""
    import nbformat

    nb = nbformat.read(Path(path), as_version=nbformat.NO_CONVERT)
    text = "\n".join(c.source for c in _markdown_cells(nb))
    return {"glue_text": len(GLUE_TEXT.findall(text)), "eval_glued": len(EVAL_GLUED.findall(text))}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("convert", "check"):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        print("usage: python -m book.site.prose_roles {convert|check} NOTEBOOK...", file=sys.stderr)
        return 2
    left = 0
    for name in argv[1:]:
        if argv[0] == "convert":
            n = convert(name)
            print(f"{name}: {n} {{glue:text}} roles converted; {count(name)}")
        else:
            counts = count(name)
            left += counts["glue_text"]
            print(f"{name}: {counts}")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
