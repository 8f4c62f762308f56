"""Build one edition of the book into a folder and record the result (tests/conftest.py's
``built_book`` and ``built_zh`` run this in the background, both editions at once).

    python tests/build_edition.py en|zh|student OUT

runs ``make book``'s command for that edition (``jupyter-book build -nW --keep-going``, the
Chinese edition with ``--config $(python -m book.site.editions config zh)``) with
``--path-output OUT``, and writes ``OUT/result.json`` (return code, warnings, wall seconds, log)
when it is done, so that any test process can wait for it. ``student`` is the English edition
built as ``make book-student`` builds it (``BOOK_STUDENT=1``: no worked solutions).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from book.site import builds  # noqa: E402


def command(edition: str, out: Path) -> list[str]:
    return builds.command("en" if edition == "student" else edition, out)


def build(edition: str, out: Path) -> dict:
    """Build ``edition`` into ``out``; the build's lines go to ``out/build.log`` as they come
    (``tail -f`` it to follow the notebooks' progress) and into result.json's log at the end."""
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1", "PYTHONUNBUFFERED": "1"}
    env["BOOK_STUDENT"] = "1" if edition == "student" else "0"
    live = out / "build.log"
    with live.open("w", encoding="utf-8") as handle:
        proc = subprocess.run(command(edition, out), stdout=handle, stderr=subprocess.STDOUT,
                              text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    log = live.read_text(encoding="utf-8", errors="replace")
    match = re.search(r"build finished with problems, (\d+) warnings?", log)
    warnings = int(match.group(1)) if match else len(re.findall(r"WARNING: ", log))
    result = {"edition": edition, "returncode": proc.returncode, "warnings": warnings,
              "seconds": seconds, "log": log}
    tmp = out / "result.json.tmp"
    tmp.write_text(json.dumps(result), encoding="utf-8")
    tmp.replace(out / "result.json")  # appears whole, or not at all
    return result


if __name__ == "__main__":
    r = build(sys.argv[1], Path(sys.argv[2]))
    print(f"{r['edition']}: rc {r['returncode']}, {r['warnings']} warnings, {r['seconds']:.1f} s")
    sys.exit(0)
