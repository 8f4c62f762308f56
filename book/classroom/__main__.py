"""``python -m book.classroom assign|grade|demo``: see the package docstring."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import __doc__ as DOC
from .assign import BUILD, ROOT, fake_submissions, generate
from .grading import grade, summary
from .sandbox import INSTALL_HINT, Limits, isolation


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.classroom", description=DOC,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p_assign = sub.add_parser("assign", help="generate student notebooks and the bundle")
    p_assign.add_argument("--out", type=Path, default=BUILD)
    p_grade = sub.add_parser("grade", help="grade a folder of submitted notebooks")
    p_grade.add_argument("submissions", type=Path)
    p_grade.add_argument("--csv", type=Path, default=ROOT / "build" / "grades.csv")
    sub.add_parser("check-sandbox", help="try hostile things inside a sandbox, print the outcome")
    p_demo = sub.add_parser("demo", help="generate, make 3 fake submissions each, grade them")
    p_demo.add_argument("--out", type=Path, default=BUILD)
    for p in (p_grade, p_demo):
        p.add_argument("--jobs", type=int, default=1, help="sandboxes at the same time")
        p.add_argument("--seed", type=int, default=None,
                       help="seed of the hidden inputs (default: fresh per batch)")
        p.add_argument("--timeout", type=float, default=Limits.wall_seconds,
                       help="wall-clock seconds per notebook")
    args = parser.parse_args(argv)

    if args.command == "check-sandbox":
        from .sandbox import self_check

        report = self_check()
        print(report)
        return 0 if "ALLOWED" not in report and "bubblewrap" in report else 1
    if args.command in ("assign", "demo"):
        start = time.perf_counter()
        generated = generate(args.out)
        print(f"generated {len(generated)} assignments in {time.perf_counter() - start:.1f} s "
              "(every solution earns full marks in the sandbox)")
        print(f"  hand out {_shown(args.out / 'student')}/ or "
              f"{_shown(args.out / 'student-bundle.zip')}")
        print(f"  keep private: {_shown(args.out / 'solutions')}/, "
              f"{_shown(args.out / 'otter')}/ and the instructor notebooks")
        if args.command == "assign":
            return 0
        args.submissions = args.out / "fake_submissions"
        made = fake_submissions(generated, args.submissions)
        args.csv = args.out / "fake_grades.csv"
        print(f"made {len(made)} fake submissions in {_shown(args.submissions)}")
    mode = isolation()
    if mode != "bubblewrap":
        from .sandbox import bwrap_problem

        print(f"WARNING: {bwrap_problem()}: notebooks run as plain subprocesses with "
              f"time and memory limits only. Isolation is REDUCED: a submission can read your "
              f"files and import the book's reference code. {INSTALL_HINT}.", file=sys.stderr)
    limits = Limits(wall_seconds=args.timeout,
                    cell_seconds=min(Limits.cell_seconds, args.timeout))
    start = time.perf_counter()
    rows = grade(args.submissions, args.csv, seed=args.seed, limits=limits, jobs=args.jobs)
    seconds = time.perf_counter() - start
    n = len({r["submission"] for r in rows})
    errors = len({r["submission"] for r in rows if r["status"] != "graded"})
    print(f"{n} files in {seconds:.1f} s ({seconds / max(n, 1):.1f} s each, sandbox: {mode}); "
          f"{errors} with an error or skipped → {_shown(args.csv)}")
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
