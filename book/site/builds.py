"""``make book``: both editions built at once, their output interleaved line by line.

    python -m book.site.builds                  # English and Chinese, then Chinese published
    python -m book.site.builds en               # one edition
    python -m book.site.builds --student        # the student edition (make book-student)
    python -m book.site.builds --pdf            # both PDFs (make pdf, book/site/pdf.py)

Each edition is one ``jupyter-book build -nW --keep-going`` (the Chinese one with
``--config $(python -m book.site.editions config zh)``); both run side by side, so the two
cores each have a kernel to run (book/site/execution.py shares the kernel slots between the
builds and prints which notebook runs and how many are left). Every line a build prints comes
out prefixed with its edition (``[en]``, ``[zh]``). When every build succeeded the Chinese
HTML is published under the English one (``book.site.editions.publish``). Exits with the
first failing build's status.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from book.site import editions

ROOT = editions.ROOT
STUDENT_OUT = Path("_build") / "student"


def command(edition: str, out: Path | None = None) -> list[str]:
    """``make book``'s build command for one edition (``en`` or ``zh``), written into ``out``
    (``--path-output``; ``None``: jupyter-book's default, the book's own _build)."""
    if edition not in editions.EDITIONS:
        raise ValueError(f"unknown edition {edition!r}: choose one of "
                         + ", ".join(editions.EDITIONS))
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(ROOT), "-nW",
           "--keep-going"]
    if edition != "en":
        cmd += ["--config", str(editions.write_config(edition))]
    if out is not None:
        cmd += ["--path-output", str(out)]
    return cmd


def output_folder(edition: str, student: bool = False) -> Path:
    """Where ``make book`` (or ``make book-student``) builds ``edition``."""
    if student:
        base = ROOT / STUDENT_OUT
        return base if edition == "en" else base / editions.EDITIONS[edition]["folder"]
    return ROOT if edition == "en" else ROOT / editions.ZH_BUILD


def run_builds(jobs: dict[str, tuple[list[str], dict]], write=None) -> dict[str, int]:
    """Run each ``name -> (command, environment)`` at once, printing every line it writes
    prefixed with ``[name]`` (lines that already start with ``[name`` as they are); returns
    ``name -> exit status``."""
    write = write or (lambda line: print(line, flush=True))
    lock = threading.Lock()
    procs, threads = {}, []

    def pump(name, stream):
        for line in stream:
            line = line.rstrip("\n")
            if not line.strip():
                continue
            with lock:
                write(line if line.startswith(f"[{name}") else f"[{name}] {line}")

    for name, (cmd, env) in jobs.items():
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env, cwd=ROOT, bufsize=1, encoding="utf-8",
                                errors="replace")
        procs[name] = proc
        thread = threading.Thread(target=pump, args=(name, proc.stdout), daemon=True)
        thread.start()
        threads.append(thread)
    codes = {name: proc.wait() for name, proc in procs.items()}
    for thread in threads:
        thread.join()
    return codes


PDF_OUT = Path("_build") / "pdf"


def pdf_file(edition: str) -> Path:
    """Where the LaTeX builder leaves ``edition``'s PDF (its targetname, _config.yml and
    book.site.editions.write_config)."""
    return output_folder(edition) / "_build" / "latex" / f"attention-{edition}.pdf"


def build(chosen: list[str], student: bool = False, pdf: bool = False) -> int:
    """Build the chosen editions at once (HTML, or with ``pdf`` the LaTeX builder and xelatex
    into the same folders, reusing what the HTML build executed)."""
    if student and pdf:
        raise ValueError("the PDF is built of the full edition: drop --student or --pdf")
    start = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           "BOOK_STUDENT": "1" if student else "0"}
    jobs = {}
    for edition in chosen:
        out = output_folder(edition, student)
        cmd = command(edition, None if out == ROOT else out)
        jobs[edition] = (cmd + ["--builder", "pdflatex"] if pdf else cmd, env)
    codes = run_builds(jobs)
    seconds = time.perf_counter() - start
    failed = {name: code for name, code in codes.items() if code}
    if failed:
        print(f"build failed: {', '.join(f'{n} (exit status {c})' for n, c in failed.items())}"
              f" after {seconds:.0f} s; the lines prefixed with its name above say why",
              file=sys.stderr)
        return next(iter(failed.values()))
    if pdf:
        (ROOT / PDF_OUT).mkdir(parents=True, exist_ok=True)
        for edition in chosen:
            shutil.copy2(pdf_file(edition), ROOT / PDF_OUT / pdf_file(edition).name)
            print(f"{edition}: {ROOT / PDF_OUT / pdf_file(edition).name}", flush=True)
        print(f"built the PDF of {', '.join(chosen)} in {time.perf_counter() - start:.0f} s",
              flush=True)
        return 0
    if "zh" in chosen:
        source = output_folder("zh", student) / "_build" / "html"
        target = output_folder("en", student) / "_build" / "html" / editions.EDITIONS["zh"][
            "folder"]
        editions.publish(source, target)
    print(f"built {', '.join(chosen)}{' (student edition)' if student else ''} "
          f"in {seconds:.0f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.site.builds", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("editions", nargs="*", help="en, zh or both (the default)")
    parser.add_argument("--student", action="store_true",
                        help="the student edition (no worked solutions), in _build/student")
    parser.add_argument("--pdf", action="store_true",
                        help="each edition's PDF (LaTeX builder, xelatex), in _build/pdf")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.editions) - set(editions.EDITIONS))
    if unknown:
        parser.error(f"unknown edition(s) {', '.join(unknown)}: choose from "
                     + ", ".join(editions.EDITIONS))
    chosen = [e for e in editions.EDITIONS if e in (args.editions or editions.EDITIONS)]
    return build(chosen, student=args.student, pdf=args.pdf)


if __name__ == "__main__":
    sys.exit(main())
