"""Each chapter gives the same output twice from a clean kernel (nbmake runs them for time)."""

from __future__ import annotations

import nbformat
import pytest
from conftest import CHAPTERS
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

VOLATILE = {"application/vnd.jupyter.widget-view+json"}  # widget model ids are random by design


def visible_outputs(nb) -> list:
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for o in cell.get("outputs", []):
            if o.output_type == "stream":
                out.append(("stream", o.name, o.text))
            elif o.output_type in ("display_data", "execute_result"):
                out.append({k: v for k, v in o.data.items() if k not in VOLATILE})
            elif o.output_type == "error":
                out.append(("error", o.ename, o.evalue))
    return out


def run(path) -> list:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return visible_outputs(nb)


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_same_output_twice(path):
    """Two clean kernels: every printed value, figure and glued number must be identical."""
    first, second = run(path), run(path)
    assert len(first) == len(second) > 0
    for i, (a, b) in enumerate(zip(first, second, strict=True)):
        assert a == b, f"{path.name}: output {i} differs between two runs"
