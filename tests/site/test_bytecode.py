"""make book's byte-compiling step (book/site/bytecode.py): every module its lists name exists
(a renamed one would only cost speed, silently), and it refuses to run where Python would
write no bytecode."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from book.site import bytecode


@pytest.mark.slow
def test_every_listed_module_imports():
    assert bytecode.import_all(bytecode.KERNEL + bytecode.PACKAGES) == []
    # the build's list in a process of its own (Sphinx's extensions, as in the step itself)
    code = ("import sys; from book.site import bytecode; "
            "failed = bytecode.import_all(bytecode.BUILD); print(*failed, sep='\\n'); "
            "sys.exit(1 if failed else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    assert {"book.site.execution", "book.site.kernel_fork"} <= set(bytecode.book_modules(True))
    assert "book.kit.memo" in bytecode.book_modules(False)


def test_it_says_how_to_run_it_where_no_bytecode_would_be_written():
    proc = subprocess.run([sys.executable, "-P", bytecode.__file__], capture_output=True,
                          text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 2
    assert "PYTHONDONTWRITEBYTECODE= python -P book/site/bytecode.py" in proc.stderr


def test_a_failed_import_is_named_not_raised():
    failed = bytecode.import_all(["json", "book_no_such_module_here"])
    assert len(failed) == 1 and failed[0].startswith("book_no_such_module_here (")
