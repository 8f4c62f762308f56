"""Byte-compile what a book build imports, once, right after ``make book``'s install.

``make book`` installs its packages with ``pip install --no-compile``: pip would byte-compile
every module of every package (~11,000 files, ~35 s of one core on the 2-core machine the
targets are measured on), while a build imports about 2,500 of them. This script imports
those instead, in two processes at once (what the notebooks' kernels import, and what the
Sphinx builds import), with Python's bytecode writing on, so each is compiled here once::

    PYTHONDONTWRITEBYTECODE= python -P book/site/bytecode.py

It runs as a script, not ``-m book.site.bytecode``, so that neither process imports torch
(through ``book``) before its list says so: the two would compile it side by side.

Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machines CI runs on), a module without
its ``.pyc`` is compiled again by every process that imports it: torch alone cost each of the
build's 28 kernels ~2.6 s more. A module missing from the lists below is compiled in each
process that imports it, as before; nothing else changes. ``make setup`` (the test tools)
byte-compiles the rest of the environment afterwards, one process per core (``compileall``).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
import time

# What the kernels import beyond the book's own modules (their first cell imports book).
KERNEL = ["ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel_launcher", "ipywidgets",
          "anywidget", "plotly.graph_objects", "plotly.io", "plotly.offline", "torch.nn",
          "torch.nn.functional", "torch.utils.benchmark", "torch._dynamo", "tokenizers",
          "safetensors.torch", "IPython.display", "tqdm.auto", "ipykernel.debugger", "debugpy"]
# Whole packages whose modules load lazily, by attribute (plotly's figure classes).
PACKAGES = ["plotly", "_plotly_utils"]
# What ``jupyter-book build`` loads: its command, Sphinx's HTML builder, the extensions of
# _config.yml and jupyter-book's defaults, the execution worker's nbclient, the CJK font subsetter.
BUILD = ["jupyter_book.cli.main", "sphinx.cmd.build", "sphinx.application",
         "sphinx.builders.html", "sphinx.writers.html5", "sphinx.search.zh", "sphinx.search.en",
         "myst_nb.sphinx_ext", "myst_nb.core.render", "myst_parser.sphinx_ext.main",
         "sphinx_book_theme", "pydata_sphinx_theme", "sphinx_design", "sphinx_external_toc",
         "sphinx_thebe", "sphinx_togglebutton", "sphinx_copybutton", "sphinx_comments",
         "sphinxcontrib.bibtex", "sphinx_jupyterbook_latex", "sphinx_multitoc_numbering",
         "jupyter_cache", "nbclient", "nbformat", "fontTools.subset", "fontTools.ttLib.woff2",
         "jieba"]


def book_modules(site: bool) -> list[str]:
    """The book package's modules: those of ``book.site`` (the build's) or all others."""
    import book

    names = [m.name for m in pkgutil.walk_packages(book.__path__, "book.")]
    return [n for n in names if n.startswith("book.site") == site]


def import_all(names: list[str]) -> list[str]:
    """Import each module; return those that failed, with why (a renamed module in a newer
    release only loses its head start, so the install goes on)."""
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as error:   # noqa: BLE001 - any import error only costs speed
            failed.append(f"{name} ({type(error).__name__}: {error})")
    return failed


def main(argv: list[str]) -> int:
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("book.site.bytecode: PYTHONDONTWRITEBYTECODE is set, so importing writes no "
              "bytecode: run it as `PYTHONDONTWRITEBYTECODE= python -P book/site/bytecode.py`",
              file=sys.stderr)
        return 2
    # debugpy (in KERNEL) warns about frozen modules on import otherwise, as in the kernels
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    if argv[1:] == ["--build"]:
        failed = import_all(BUILD + book_modules(site=True))
        import compileall

        for name in PACKAGES:
            compileall.compile_dir(os.path.dirname(importlib.import_module(name).__file__),
                                   quiet=1)
    elif argv[1:]:
        print(f"usage: python -P book/site/bytecode.py [--build] (not {' '.join(argv[1:])})",
              file=sys.stderr)
        return 2
    else:
        start = time.perf_counter()
        other = subprocess.Popen([sys.executable, "-P", __file__, "--build"])
        failed = import_all(KERNEL + book_modules(site=False))
        if other.wait() != 0:
            return other.returncode
        print(f"byte-compiled the modules a build imports in {time.perf_counter() - start:.0f}"
              " s", flush=True)
    for line in failed:
        print(f"book.site.bytecode: could not import {line}: it will be compiled where it is "
              "imported", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
