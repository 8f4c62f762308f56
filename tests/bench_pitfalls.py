"""Full sweeps behind chapters 5 (training stability) and 6 (how many heads).

``python tests/bench_pitfalls.py [stability] [heads] [seeds]`` (default: all three). The
chapters train reduced sweeps that fit their 30 s budget; this script runs the larger ones
that the chapters' closing notes quote, on one CPU thread (so every number is reproducible;
the wall times depend on the machine and its load). Not collected by pytest.

* ``stability``: Post-LN vs Pre-LN (Xavier init) at depths 2, 4, 6, 8 and two learning rates,
  three seeds each, with the chapter's settings (90 steps, no warm-up, no clipping); then
  every norm × init at depth 6.
* ``heads``: d_model = 64 with 1 … 32 heads, 500 steps (the book's default training run), two
  seeds; d_model = 128 with 4 … 32 heads, one seed.
* ``seeds``: the chapter 6 sweep itself (d_model = 32, 200 steps) with three seeds, to show
  how much of its differences is seed noise.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from book.studies import heads, stability
from book.toy import train

SEEDS = (0, 1, 2)


def bench_stability(data) -> None:
    chance = stability.chance_loss()
    print(f"\n== stability: {stability.SETTINGS}; chance loss ln 7 = {chance:.3f}")
    print("a run is 'stuck' when its final loss (mean of the last 20 steps) is within 0.1 of "
          "chance")
    print(f"{'norm':<6}{'lr':>7}{'depth':>7}  {'final loss (seeds)':<26}{'accuracy (seeds)':<26}"
          "stuck")
    for lr in (3e-3, 1e-2):
        for depth in (2, 4, 6, 8):
            for norm in ("pre", "post"):
                runs = [stability.run(norm, "xavier", depth, lr, data=data, seed=s)
                        for s in SEEDS]
                losses = [r.final_loss() for r in runs]
                accs = [100 * (r.accuracy or 0.0) for r in runs]
                stuck = sum(loss > chance - 0.1 for loss in losses)
                print(f"{norm:<6}{lr:>7g}{depth:>7}  "
                      f"{' '.join(f'{v:6.3f}' for v in losses):<26}"
                      f"{' '.join(f'{v:6.1f}' for v in accs):<26}{stuck}/{len(runs)}",
                      flush=True)
    print("\nevery norm × init at depth 6, lr 0.01, seed 0:")
    for norm in ("pre", "post", "none"):
        for init in ("xavier", "torch", "small", "large"):
            r = stability.run(norm, init, 6, 1e-2, data=data)
            first = r.profile("activation", "first")
            top = max(first) if first else float("nan")
            acc = "diverged" if r.diverged else f"{100 * r.accuracy:5.1f} %"
            print(f"  {r.label:<48} first loss {r.loss[0]:10.3g}  final loss "
                  f"{r.final_loss():8.3g}  accuracy {acc}  largest layer RMS at step 1 "
                  f"{top:.3g}", flush=True)


def _heads_table(d_model, counts, seeds, steps, lr, data) -> None:
    print(f"\n== heads: d_model = {d_model}, {steps} steps, lr {lr:g}, seeds {list(seeds)}")
    print(f"{'heads':>6}{'d_k':>6}  {'accuracy % (seeds)':<22}{'loss (seeds)':<22}"
          "ms per step (seeds)")
    for h in counts:
        runs = [heads.train_heads(h, d_model=d_model, steps=steps, lr=lr, data=data, seed=s)
                for s in seeds]
        print(f"{h:>6}{d_model // h:>6}  "
              f"{' '.join(f'{100 * r.accuracy:5.1f}' for r in runs):<22}"
              f"{' '.join(f'{r.loss:.3f}' for r in runs):<22}"
              f"{' '.join(f'{1000 * r.seconds_per_step:5.1f}' for r in runs)}", flush=True)


def bench_heads(data) -> None:
    _heads_table(64, (1, 2, 4, 8, 16, 32), (0, 1), train.FIT["steps"], train.FIT["lr"], data)
    _heads_table(128, (4, 8, 16, 32), (0,), train.FIT["steps"], train.FIT["lr"], data)


def bench_seeds(data) -> None:
    s = heads.SETTINGS
    _heads_table(s["d_model"], heads.HEAD_COUNTS, SEEDS, s["steps"], s["lr"], data)
    print("(the first seed is the chapter's sweep)")


def main(argv: list[str]) -> None:
    parts = argv or ["stability", "heads", "seeds"]
    unknown = set(parts) - {"stability", "heads", "seeds"}
    if unknown:
        raise SystemExit(f"unknown part(s) {sorted(unknown)}; choose stability, heads, seeds")
    print(f"CPU cores: {os.cpu_count()}, load average before: {os.getloadavg()}")
    start = time.perf_counter()
    torch.set_num_threads(1)
    data = train.default_data()
    np.set_printoptions(precision=3)
    for part in parts:
        {"stability": bench_stability, "heads": bench_heads, "seeds": bench_seeds}[part](data)
    print(f"\ntotal {time.perf_counter() - start:.0f} s, load average after: "
          f"{os.getloadavg()}")


if __name__ == "__main__":
    main(sys.argv[1:])
