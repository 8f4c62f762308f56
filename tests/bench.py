"""Benchmarks of the book (``make bench``): build time, notebook times, page weight, live latency.

Prints tables; asserts nothing. Targets: each notebook ≤ 30 s, each live update ≤ 50 ms (p95).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np
import torch
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cold_build(out: Path) -> float:
    jb = Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    proc = subprocess.run([str(jb), "build", str(ROOT), "-nW", "--keep-going", "--path-output",
                           str(out)], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise SystemExit("the book did not build; see the log above")
    return seconds


def notebook_times() -> dict[str, float]:
    times = {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        times[path.name] = time.perf_counter() - start
    return times


def page_weights(html_root: Path) -> list[tuple[str, int, int]]:
    """(page, HTML bytes, bytes of the page plus every local script and stylesheet it loads)."""
    rows = []
    for page in sorted(html_root.rglob("*.html")):
        if "_static" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        total = len(text.encode())
        for ref in re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"#?]+)', text):
            asset = (page.parent / ref).resolve()
            if asset.is_file() and asset.suffix in {".js", ".css"}:
                total += asset.stat().st_size
        rows.append((page.relative_to(html_root).as_posix(), len(text.encode()), total))
    return rows


def live_latency() -> dict[str, tuple[float, float]]:
    from book import figures, widgets

    cases = {
        "heads_explorer_live": (widgets.heads_explorer_live,
                                [{"n_heads": h} for h in (1, 2, 3)]),
        "dk_explorer_live": (widgets.dk_explorer_live,
                             [{"d_k": d, "n": n} for d in (1, 64, 512) for n in (100, 3000)]),
        "softmax_row_live": (widgets.softmax_row_live,
                             [{"d_k": d, "n_keys": k} for d in (1, 512) for k in (1, 16, 128)]),
        "walkthrough_live": (widgets.walkthrough_live,
                             [{"step": s, "matrix": m, "row": 5, "col": 3, "value": 3.0}
                              for s in ("X", "A2", "layer_norm") for m in ("X", "W_O")]),
        "mask_explorer_live": (widgets.mask_explorer_live,
                               [{"kind": k, "length": n, "padding": p}
                                for k in figures.MASK_KINDS for n in (1, figures.MASK_MAX_REAL)
                                for p in (0, figures.MASK_MAX_PAD)]),
    }
    out = {}
    for name, (make, values) in cases.items():
        times = widgets.latency(make(), values, repeats=10) * 1000
        out[name] = (float(np.percentile(times, 50)), float(np.percentile(times, 95)))
    return out


def main() -> None:
    print(f"python {platform.python_version()}, torch {torch.__version__}, "
          f"{os.cpu_count()} CPU cores, torch threads {torch.get_num_threads()}, "
          f"{platform.processor() or platform.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        seconds = cold_build(Path(tmp))
        print(f"\ncold build (jupyter-book build -nW, executes every notebook): {seconds:.1f} s")
        print("\npage weight                      HTML bytes   with local JS/CSS")
        for page, html, total in page_weights(Path(tmp) / "_build" / "html"):
            print(f"  {page:30} {html:>12,} {total:>16,}")
    print("\nnotebook execution, clean kernel (budget 30 s)")
    for name, secs in notebook_times().items():
        print(f"  {name:30} {secs:6.1f} s")
    print("\nlive widget update latency (target ≤ 50 ms)     p50 ms    p95 ms")
    for name, (p50, p95) in live_latency().items():
        print(f"  {name:45} {p50:7.1f} {p95:9.1f}")


if __name__ == "__main__":
    main()
