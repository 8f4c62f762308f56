"""``make lab CHAPTER=02``: one chapter's notebook in JupyterLab, on the reader's own computer.

    python -m book.site.lab 02                 # chapters/02_scaling.ipynb
    python -m book.site.lab 4b --lang zh       # the Chinese notebook of chapters/04b_toy_model
    BOOK_LANG=zh python -m book.site.lab 02    # the same as --lang zh
    python -m book.site.lab 02 --print         # print the command instead of running it

``CHAPTER`` is a chapter's number (``02``, ``2``, ``4b``, ``04b``), its page (``02_scaling``) or
the rest of its page name (``scaling``). The English notebook is the repository's own; the Chinese
one is generated from it and the catalogues (book/site/zh_notebooks.py, as ``make notebooks-zh``
does for every chapter) into ``_build/notebooks-zh/chapters/`` — unless the reader has changed
the copy there since it was generated: their edits are kept (delete the file for a fresh one).
Then this process becomes ``jupyter lab <notebook>`` (the ``jupyter`` beside this Python, i.e.
``.venv/bin/jupyter``), run from the repository's root.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANG_ENV = "BOOK_LANG"
LANGUAGES = ("en", "zh")
ZH_OUT = ROOT / "_build" / "notebooks-zh"     # book.site.zh_notebooks.OUT_DIR
STAMP_SUFFIX = ".generated"   # .<notebook>.generated beside each Chinese one: its hash as written


def chapter_pages() -> list[str]:
    """The chapter notebooks' pages, in the book's order (``chapters/02_scaling``, ...)."""
    from book.site import zh_notebooks

    return zh_notebooks.chapter_pages()


def _number(text: str) -> tuple[int, str] | None:
    match = re.fullmatch(r"0*(\d+)([a-z]?)", text)
    return (int(match.group(1)), match.group(2)) if match else None


def resolve(chapter: str, pages: list[str] | None = None) -> str:
    """The page (``chapters/02_scaling``) that ``chapter`` names: its number (``02``, ``2``,
    ``4b``, ``04b``), its page name (``02_scaling``, ``chapters/02_scaling.ipynb``) or the rest
    of its name (``scaling``)."""
    pages = chapter_pages() if pages is None else list(pages)
    names = {page.removeprefix("chapters/"): page for page in pages}
    listing = ", ".join(f"{name.split('_', 1)[0]} ({name})" for name in names)
    if not isinstance(chapter, str) or not chapter.strip():
        raise ValueError(f"say which chapter: CHAPTER=02, for example. The chapters: {listing}")
    text = chapter.strip().lower().removesuffix(".ipynb").removeprefix("chapters/")
    if text in names:
        return names[text]
    wanted = _number(text)
    found = [page for name, page in names.items()
             if (wanted is not None and _number(name.split("_", 1)[0]) == wanted)
             or (wanted is None and "_" in name and name.split("_", 1)[1] == text)]
    if len(found) != 1:
        raise ValueError(f"no chapter {chapter!r}: give its number or its page. "
                         f"The chapters: {listing}")
    return found[0]


def language(value: str | None = None) -> str:
    """The edition to open: ``value`` (``--lang``), else ``BOOK_LANG``, else English."""
    value = value if value is not None else os.environ.get(LANG_ENV, "")
    value = value.strip() or "en"
    if value not in LANGUAGES:
        raise ValueError(f"{LANG_ENV}={value!r}: choose en (English) or zh (Chinese)")
    return value


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def chinese_notebook(page: str, out_dir: Path | None = None) -> tuple[Path, bool]:
    """Write ``page``'s Chinese notebook under ``out_dir`` (same relative path) unless the copy
    there was changed since this wrote it; returns (its path, whether it was written). A copy
    with no record of being written here (e.g. ``make notebooks-zh``'s) counts as the reader's
    when it differs from what would be written now."""
    from book.site import zh_notebooks

    out_dir = ZH_OUT if out_dir is None else Path(out_dir)
    target = out_dir / f"{page}.ipynb"
    stamp = target.with_name(f".{target.name}{STAMP_SUFFIX}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as scratch:
        try:
            (fresh,) = zh_notebooks.write_notebooks(Path(scratch), pages=[page])
        except ImportError as error:   # the catalogue tools come with the book's build tools
            raise RuntimeError(f"the Chinese notebooks are generated with the book's build "
                               f"tools ({error.name} is missing): run `make setup-book` "
                               "first") from None
        if target.exists():
            mine = stamp.is_file() and stamp.read_text(encoding="utf-8").strip() == \
                _digest(target)
            if not mine and _digest(target) != _digest(fresh):
                return target, False
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(fresh), target)
    stamp.write_text(_digest(target) + "\n", encoding="utf-8")
    return target, True


def jupyter() -> Path:
    """The ``jupyter`` command of this Python's environment (``.venv/bin/jupyter``)."""
    return Path(sys.executable).with_name("jupyter")


def command(notebook: Path) -> list[str]:
    """``jupyter lab <notebook>``, the notebook relative to the repository's root."""
    notebook = Path(notebook)
    if notebook.is_absolute() and notebook.is_relative_to(ROOT):
        notebook = notebook.relative_to(ROOT)
    return [str(jupyter()), "lab", notebook.as_posix()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.site.lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapter", nargs="?", default="",
                        help="the chapter: 02, 2, 4b, 02_scaling, scaling")
    parser.add_argument("--lang", default=None, help="en or zh (default: $BOOK_LANG, else en)")
    parser.add_argument("--print", dest="print_only", action="store_true",
                        help="print the command instead of running it")
    args = parser.parse_args(argv)
    try:
        page = resolve(args.chapter)
        edition = language(args.lang)
        notebook = ROOT / f"{page}.ipynb"
        if edition == "zh":
            notebook, written = chinese_notebook(page)
            if not written:
                print(f"Keeping your copy of {command(notebook)[2]} (it changed since it was "
                      "generated; delete it to get a fresh one).", file=sys.stderr)
    except (ValueError, RuntimeError) as error:
        print(f"make lab: {error}", file=sys.stderr)
        return 2
    cmd = command(notebook)
    if args.print_only:
        print(shlex.join(cmd))
        return 0
    if not jupyter().is_file():
        print(f"make lab: no JupyterLab at {jupyter()}: install requirements.txt into this "
              "environment (make lab does)", file=sys.stderr)
        return 2
    sys.stdout.flush()
    os.chdir(ROOT)
    os.execv(cmd[0], cmd)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
