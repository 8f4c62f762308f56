"""``python -m book.classroom assign|grade|demo|check-sandbox|fairness|merge|gettext``: see the
package docstring.

Without a working sandbox every command that runs a notebook stops before running one, prints
why and how to install bubblewrap, and exits with status 3 (:data:`NO_SANDBOX`), unless the
teacher passes ``--unsandboxed`` or sets ``UNSANDBOXED=1``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

from . import __doc__ as DOC
from .assign import BUILD, ROOT, fake_submissions, generate
from .grading import grade, summary
from .sandbox import (
    Limits,
    SandboxUnavailable,
    UnsandboxedWarning,
    require_sandbox,
    unsandboxed_warning,
)

NO_SANDBOX = 3  # exit status: no working sandbox, and grading without one was not asked for
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


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
    p_check = sub.add_parser("check-sandbox",
                             help="try hostile things inside a sandbox, print the outcome")
    p_demo = sub.add_parser("demo", help="generate, make 3 fake submissions each, grade them")
    p_demo.add_argument("--out", type=Path, default=BUILD)
    p_fair = sub.add_parser("fairness", help="what constant answers, the reference and a "
                                             "float32 reference score, per question")
    p_fair.add_argument("--seeds", type=int, default=10, help="hidden inputs drawn this often")
    p_merge = sub.add_parser("merge", help="several grades CSVs (a class graded in parts) as "
                                           "one, on standard output; refuses duplicates")
    p_merge.add_argument("csvs", type=Path, nargs="+")
    sub.add_parser("gettext", help="the Chinese assignments' catalogues "
                                   "(locale/zh_CN/assignments/*.po) brought up to date")
    for p in (p_assign, p_grade, p_demo, p_check):
        p.add_argument("--unsandboxed", action="store_true",
                       default=os.environ.get("UNSANDBOXED") == "1",
                       help="where no sandbox works, run notebooks WITHOUT one (unsafe: they "
                            "run with your permissions); default: stop. UNSANDBOXED=1 too")
    for p in (p_grade, p_demo):
        p.add_argument("--jobs", type=int, default=CORES,
                       help=f"sandboxes at the same time (default: the cores here, {CORES})")
        p.add_argument("--seed", type=int, default=None,
                       help="seed of the hidden inputs (default: fresh per batch)")
        p.add_argument("--timeout", type=float, default=Limits.wall_seconds,
                       help="wall-clock seconds per notebook")
    args = parser.parse_args(argv)
    if args.command == "merge":  # runs nothing
        from .grading import merge, write_csv

        try:
            rows = merge(args.csvs)
        except (ValueError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        write_csv(rows, sys.stdout)
        print(f"merged {len(args.csvs)} files: {len({r['submission'] for r in rows})} "
              f"submissions, {len(rows)} rows", file=sys.stderr)
        return 0
    if args.command == "gettext":  # runs nothing
        from .assign import STUDENT_README, sources
        from .languages import update_catalogues

        for path in update_catalogues(sources(), STUDENT_README):
            print(_shown(path))
        return 0
    if args.command == "fairness":  # runs only our own answers, in this process
        from .fairness import fair, format_table, table

        rows = table(range(args.seeds))
        print(format_table(rows))
        return 0 if fair(rows) else 1
    try:
        mode = require_sandbox(args.unsandboxed)
    except SandboxUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return NO_SANDBOX
    if mode != "bubblewrap":
        print(unsandboxed_warning(), file=sys.stderr, flush=True)
    with warnings.catch_warnings():  # printed above, once
        warnings.simplefilter("ignore", UnsandboxedWarning)
        try:
            return _run(args, mode)
        except SandboxUnavailable as error:  # the sandbox stopped working meanwhile
            print(f"error: {error}", file=sys.stderr)
            return NO_SANDBOX


def _run(args, mode: str) -> int:
    if args.command == "check-sandbox":
        from .sandbox import self_check

        report = self_check(unsandboxed=args.unsandboxed)
        print(report)
        return 0 if "ALLOWED" not in report and "bubblewrap" in report else 1
    if args.command in ("assign", "demo"):
        start = time.perf_counter()
        generated = generate(args.out, unsandboxed=args.unsandboxed)
        where = "in the sandbox" if mode == "bubblewrap" else "UNSANDBOXED"
        print(f"generated {len(generated)} assignments in {time.perf_counter() - start:.1f} s "
              f"(every solution earns full marks, graded {where})")
        print(f"  hand out {_shown(args.out / 'student')}/ or "
              f"{_shown(args.out / 'student-bundle.zip')} (English), "
              f"{_shown(args.out / 'student-zh')}/ or "
              f"{_shown(args.out / 'student-bundle-zh.zip')} (Chinese)")
        print(f"  keep private: {_shown(args.out / 'solutions')}/, "
              f"{_shown(args.out / 'otter')}/, their -zh twins, "
              f"{_shown(args.out / 'sources-zh')}/ and the instructor notebooks")
        if args.command == "assign":
            return 0
        args.submissions = args.out / "fake_submissions"
        made = fake_submissions(generated, args.submissions)
        args.csv = args.out / "fake_grades.csv"
        print(f"made {len(made)} fake submissions in {_shown(args.submissions)}")
    limits = Limits(wall_seconds=args.timeout,
                    cell_seconds=min(Limits.cell_seconds, args.timeout))
    start = time.perf_counter()
    rows = grade(args.submissions, args.csv, seed=args.seed, limits=limits, jobs=args.jobs,
                 unsandboxed=args.unsandboxed)
    seconds = time.perf_counter() - start
    n = len({r["submission"] for r in rows})
    errors = len({r["submission"] for r in rows if r["status"] != "graded"})
    shown = ("sandbox: bubblewrap" if mode == "bubblewrap" else
             "UNSANDBOXED: no sandbox, every row is marked `unsandboxed`")
    print(f"{n} files in {seconds:.1f} s ({seconds / max(n, 1):.1f} s each, {shown}); "
          f"{errors} with an error or skipped → {_shown(args.csv)}")
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
