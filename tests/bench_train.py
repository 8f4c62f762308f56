"""Benchmark of the pitfalls chapters' model: ``python tests/bench_train.py [threads ...]``.

Trains the default :class:`book.toy.model.TinyEncoder` on the takeout-order task with each thread
count (default: 2, then 1) and prints held-out token accuracy, training wall time, the load
average at the time and the accuracy of the baselines that cannot attend. Target: ≥ 95 % in
≤ 20 s on two CPU cores. Asserts nothing (timings depend on the machine and its load).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from book.toy import train


def main(argv: list[str]) -> None:
    counts = [int(a) for a in argv] or [2, 1]
    print(f"CPU cores: {os.cpu_count()}, load average before: {os.getloadavg()}")
    for i, threads in enumerate(counts):
        if i == 0:
            train.benchmark(threads)
            continue
        model, history = train.train_default(progress=False, threads=threads)
        print(f"held-out token accuracy {history.final_accuracy:.4f} in {history.wall_time:.1f} s "
              f"on {threads} thread(s) (load average {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main(sys.argv[1:])
