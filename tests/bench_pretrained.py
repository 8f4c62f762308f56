"""Times of the pretrained model (chapter 8b): load ≤ 3 s, one sentence ≤ 50 ms on CPU.

Run: ``.venv/bin/python tests/bench_pretrained.py``. Each load runs in a fresh process (cold:
nothing cached in memory; the file system cache stays warm). Prints a table; asserts nothing.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LOAD_BUDGET_S = 3.0
SENTENCE_BUDGET_MS = 50.0
SENTENCE = "The animal didn't cross the street because it was too tired."

CHILD = """
import json, time
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
from book.real import pretrained
model = pretrained.load()
t2 = time.perf_counter()
print(json.dumps({"import_torch": t1 - t0, "load": t2 - t1}))
"""


def cold_loads(runs: int = 3) -> list[dict]:
    out = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                              cwd=ROOT, check=True)
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def sentence_times(repeats: int = 50) -> dict[str, list[float]]:
    import torch

    from book.real import pretrained

    torch.set_num_threads(1)
    model = pretrained.load()
    times = {"embed": [], "attention maps": []}
    for _ in range(5):
        model.embed(SENTENCE)
    for _ in range(repeats):
        t = time.perf_counter()
        model.embed(SENTENCE)
        times["embed"].append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        model.attention(SENTENCE)
        times["attention maps"].append(1000 * (time.perf_counter() - t))
    return times


def main() -> None:
    loads = cold_loads()
    best = min(r["load"] for r in loads)
    print(f"load() in a fresh process (verify SHA-256 + read 90.9 MB + build), {len(loads)} "
          f"runs: best {best:.2f} s, worst {max(r['load'] for r in loads):.2f} s "
          f"(budget {LOAD_BUDGET_S} s: {'OK' if best <= LOAD_BUDGET_S else 'OVER'}); "
          f"import torch before it: {min(r['import_torch'] for r in loads):.2f} s")
    for name, ms in sentence_times().items():
        med, p95 = statistics.median(ms), sorted(ms)[int(0.95 * len(ms)) - 1]
        print(f"one sentence, {name} (1 thread, {len(ms)} runs): median {med:.1f} ms, "
              f"p95 {p95:.1f} ms (budget {SENTENCE_BUDGET_MS:.0f} ms: "
              f"{'OK' if med <= SENTENCE_BUDGET_MS else 'OVER'})")


if __name__ == "__main__":
    main()
