"""Each chapter gives the same output twice from a clean kernel, within its 30 s budget.

The book build (the session's ``built_book``) is the first execution; this test runs each
notebook once more in a clean kernel, times it and compares every output. So ``make test``
executes each notebook exactly twice.
"""

from __future__ import annotations

import time

import nbformat
import pytest
from conftest import CHAPTERS
from nbclient import NotebookClient

pytestmark = pytest.mark.slow

BUDGET_S = 30.0  # DESIGN: every notebook runs in ≤ 30 s on 2 CPU cores from a clean kernel
VOLATILE = {"application/vnd.jupyter.widget-view+json"}  # widget model ids are random by design
# A cell tagged "timing" measures wall-clock time (chapter 4: loop over heads vs batched). Its
# numbers differ on every run by nature, so such a cell may only glue them (no printing) and
# its outputs are left out of the comparison. Every other cell's outputs are compared in full.
TIMING_TAG = "timing"


def visible_outputs(nb) -> list:
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code" or TIMING_TAG in cell.metadata.get("tags", []):
            continue
        for o in cell.get("outputs", []):
            if o.output_type == "stream":
                # the kernel may deliver one print in several messages: compare the text as
                # the reader sees it, one block per consecutive run of the same stream
                previous = out[-1] if out else None
                if isinstance(previous, list) and previous[:2] == ["stream", o.name]:
                    previous[2] += o.text
                else:
                    out.append(["stream", o.name, o.text])
            elif o.output_type in ("display_data", "execute_result"):
                out.append({k: v for k, v in o.data.items() if k not in VOLATILE})
            elif o.output_type == "error":
                out.append(("error", o.ename, o.evalue))
        out.append(None)  # cell boundary: streams of different cells are not merged
    return out


def check_timing_cells_only_glue(nb, name: str) -> None:
    """A "timing" cell is exempt from the comparison, so it must not show anything: only
    glued values (display=False) for the prose, which MyST-NB never renders in place."""
    for cell in nb.cells:
        if cell.cell_type == "code" and TIMING_TAG in cell.metadata.get("tags", []):
            for o in cell.get("outputs", []):
                kinds = set(o.get("data", {})) if "data" in o else {o.output_type}
                assert all(k.startswith("application/papermill.record/") for k in kinds), \
                    f"{name}: a cell tagged {TIMING_TAG!r} shows {sorted(kinds)}; glue only"


def run(path) -> tuple[list, float]:
    """Execute ``path`` in a clean kernel; its visible outputs and the wall time in seconds."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    check_timing_cells_only_glue(nb, path.name)
    return visible_outputs(nb), seconds


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_same_output_twice_within_budget(path, built_book, monkeypatch):
    """The build's run and a clean kernel's: every printed value, figure and glued number is
    identical, and the clean run takes at most 30 s."""
    executed = built_book["executed"] / "chapters" / f"{path.stem}.ipynb"
    assert executed.is_file(), f"the build left no executed copy of {path.name} in {executed}"
    built = nbformat.read(executed, as_version=4)
    check_timing_cells_only_glue(built, path.name)
    first = visible_outputs(built)
    monkeypatch.setenv("BOOK_BUILD", "1")  # book.glue glues as in the build's kernels
    second, seconds = run(path)
    print(f"\n{path.name}: {seconds:.1f} s in a clean kernel (budget {BUDGET_S:.0f} s)")
    assert seconds <= BUDGET_S, f"{path.name} took {seconds:.1f} s; the budget is {BUDGET_S} s"
    assert len(first) == len(second) > 0
    for i, (a, b) in enumerate(zip(first, second, strict=True)):
        assert a == b, f"{path.name}: output {i} differs between two runs"
