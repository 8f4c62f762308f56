"""Every chapter page is complete: book.chapters.CHAPTERS lists each notebook of chapters/ (the
pages of the table of contents' Core, Pitfalls and Advanced parts, in order) and, for each
entry, the page, its module (imported by the page), its section of the string table, its Chinese
catalogue, its test file (which imports the module) and at least three exercises under its key.
Pages outside those parts (the teacher's guide, the glossary) are markdown pages and need none
of these.

The check is one function, :func:`problems`, so that the tests below can show it failing on a
made-up chapter list and a made-up tree, one missing piece at a time (CONTRIBUTING.md is the
checklist it enforces)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

from book import chapters
from book.chapters import CHAPTERS
from book.face import checks

# the captions of the table of contents' parts that hold the chapters (the learner's path)
CHAPTER_PARTS = ("Core", "Pitfalls", "Advanced")
MIN_EXERCISES = 3


def toc_chapter_pages(root: Path) -> list[str]:
    """The pages (names under chapters/, no suffix) of the toc's chapter parts (Core,
    Pitfalls, Advanced), in order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    parts = [p for p in toc.get("parts", []) if p.get("caption") in CHAPTER_PARTS]
    return [Path(entry["file"]).name for part in parts for entry in part.get("chapters", [])]


def problems(entries, root: Path, registered: dict | None = None) -> list[str]:
    """What is missing for the chapter pages under ``root`` and the chapter list ``entries``
    (a sequence of :class:`book.chapters.Chapter`); ``registered``: the exercises by key
    (``book.chapters.exercises()``), or None to skip the exercise count. [] when complete."""
    out = []
    pages = sorted(p.stem for p in (root / "chapters").glob("*.ipynb"))
    listed = [entry.page for entry in entries]
    for page in pages:
        if page not in listed:
            out.append(f"chapters/{page}.ipynb has no entry in book.chapters.CHAPTERS")
    for field in ("page", "module", "strings", "key"):
        values = [getattr(entry, field) for entry in entries]
        for value in sorted({v for v in values if values.count(v) > 1}):
            out.append(f"two CHAPTERS entries share the {field} {value!r}")
    toc = toc_chapter_pages(root)
    if toc != listed:
        out.append(f"the toc's chapter parts {CHAPTER_PARTS} list {toc}, CHAPTERS lists {listed} "
                   f"(the same pages in the same order)")
    for entry in entries:
        name = f"chapter {entry.page}"
        page = root / "chapters" / f"{entry.page}.ipynb"
        module = root / "book" / "chapters" / f"{entry.module}.py"
        if not page.is_file():
            out.append(f"{name}: no page chapters/{entry.page}.ipynb")
        elif f"from book.chapters import {entry.module}" not in page.read_text(encoding="utf-8"):
            out.append(f"{name}: the page does not import its module "
                       f"(from book.chapters import {entry.module})")
        if not module.is_file():
            out.append(f"{name}: no module book/chapters/{entry.module}.py")
        if not (root / "book" / "strings" / f"{entry.strings}.toml").is_file():
            out.append(f"{name}: no strings book/strings/{entry.strings}.toml")
        if not (root / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters"
                / f"{entry.page}.po").is_file():
            out.append(f"{name}: no catalogue locale/zh_CN/LC_MESSAGES/chapters/{entry.page}.po "
                       f"(run the gettext step and translate it)")
        test_file = root / entry.test_file
        if not test_file.is_file():
            out.append(f"{name}: no test file {entry.test_file}")
        elif entry.module not in test_file.read_text(encoding="utf-8"):
            out.append(f"{name}: {entry.test_file} does not import book.chapters.{entry.module}")
        if registered is not None:
            mine = [key for key in registered if key.startswith(f"{entry.key}.")]
            if len(mine) < MIN_EXERCISES:
                out.append(f"{name}: {len(mine)} exercise(s) with the key prefix "
                           f"{entry.key!r}, at least {MIN_EXERCISES} wanted")
            strays = [key for key in mine if registered[key].checker.__module__
                      != f"book.chapters.{entry.module}"]
            if strays:
                out.append(f"{name}: {strays} are registered outside book.chapters."
                           f"{entry.module}")
    if registered is not None:
        keys = {entry.key for entry in entries}
        for key in sorted(registered):
            if key.split(".")[0] not in keys:
                out.append(f"exercise {key!r}: its prefix is no chapter's key in CHAPTERS")
    return out


def test_every_chapter_page_is_complete():
    found = problems(CHAPTERS, ROOT, chapters.exercises())
    assert not found, "\n".join(found)


def test_every_chapter_module_imports():
    assert [m.__name__ for m in chapters.modules()] == [f"book.chapters.{c.module}"
                                                       for c in CHAPTERS]


def test_the_registry_finds_the_teachers_guide_outside_the_chapters():
    assert "teachers_guide" not in toc_chapter_pages(ROOT)
    assert (ROOT / "chapters" / "teachers_guide.md").is_file()


# --- the check fails when a piece is missing (a made-up tree and chapter list) --------------

def made_up(entry, page: str, module: str, strings: str, key: str):
    """A chapter entry like ``entry`` with these four names (whatever else an entry holds)."""
    return dataclasses.replace(entry, page=page, module=module, strings=strings, key=key)


@pytest.fixture
def tree(tmp_path):
    """A copy of what the check reads for chapter 9b, and the toc listing only it."""
    entry = chapters.chapter("09b_serving")
    for rel in (f"chapters/{entry.page}.ipynb", f"book/chapters/{entry.module}.py",
                f"book/strings/{entry.strings}.toml",
                f"locale/zh_CN/LC_MESSAGES/chapters/{entry.page}.po", entry.test_file):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(
        {"format": "jb-book", "root": "index",
         "parts": [{"caption": CHAPTER_PARTS[0], "chapters": [{"file": f"chapters/{entry.page}"}]},
                   {"caption": "For teachers",
                    "chapters": [{"file": "chapters/teachers_guide"}]}]}), encoding="utf-8")
    return tmp_path, entry


def test_a_complete_made_up_tree_passes(tree):
    root, entry = tree
    assert problems([entry], root) == []
    exercises = {k: v for k, v in chapters.exercises().items() if k.startswith("ch9b.")}
    assert problems([entry], root, exercises) == []


@pytest.mark.parametrize("missing,says", [
    ("chapters/09b_serving.ipynb", "no page"),
    ("book/chapters/ch09b_serving.py", "no module"),
    ("book/strings/ch09b.toml", "no strings"),
    ("locale/zh_CN/LC_MESSAGES/chapters/09b_serving.po", "no catalogue"),
    ("tests/chapters/test_ch09b_serving.py", "no test file"),
])
def test_a_missing_piece_is_named(tree, missing, says):
    root, entry = tree
    (root / missing).unlink()
    found = problems([entry], root)
    assert len(found) == 1 and says in found[0] and "09b_serving" in found[0], found


def test_a_page_without_an_entry_and_an_entry_without_a_page_are_named(tree):
    root, entry = tree
    shutil.copy(root / "chapters" / "09b_serving.ipynb", root / "chapters" / "12_new.ipynb")
    found = problems([entry], root)
    assert any("12_new.ipynb has no entry" in p for p in found), found
    ghost = made_up(entry, "13_ghost", "ch13_ghost", "ch13", "ch13")
    found = problems([entry, ghost], root)
    assert any("13_ghost: no page" in p for p in found)
    assert any("no module book/chapters/ch13_ghost.py" in p for p in found)
    assert any("toc" in p for p in found)  # the toc does not list it either


def test_a_new_page_that_follows_the_checklist_passes(tree):
    """What CONTRIBUTING.md asks of a new chapter page (as chapters/04b_toy_model.ipynb): the
    page in the toc, a CHAPTERS entry, its module, strings, catalogue and test file."""
    root, entry = tree
    new = made_up(entry, "99z_new", "ch99z_new", "ch99z", "ch99z")
    for src, dst in ((f"chapters/{entry.page}.ipynb", f"chapters/{new.page}.ipynb"),
                     (f"book/strings/{entry.strings}.toml", f"book/strings/{new.strings}.toml"),
                     (f"locale/zh_CN/LC_MESSAGES/chapters/{entry.page}.po",
                      f"locale/zh_CN/LC_MESSAGES/chapters/{new.page}.po")):
        shutil.copy(root / src, root / dst)
    page = root / "chapters" / f"{new.page}.ipynb"
    page.write_text(page.read_text(encoding="utf-8").replace(entry.module, new.module),
                    encoding="utf-8")
    (root / "book" / "chapters" / f"{new.module}.py").write_text('"""A new chapter."""\n')
    (root / new.test_file).write_text(f"from book.chapters import {new.module}\n")
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    toc["parts"][0]["chapters"].insert(0, {"file": f"chapters/{new.page}"})
    (root / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    assert problems([new, entry], root) == []
    # with its exercises counted: none registered under ch99z yet, so it is named
    found = problems([new, entry], root, checks.registered())
    assert any("0 exercise(s) with the key prefix 'ch99z'" in p for p in found), found


def test_too_few_exercises_a_stray_key_and_a_shared_key_are_named(tree):
    root, entry = tree
    exercises = {k: v for k, v in chapters.exercises().items() if k.startswith("ch9b.")}
    one = dict(list(exercises.items())[:1])
    assert any("1 exercise(s)" in p for p in problems([entry], root, one))
    stray = {**exercises, "ch99.x": exercises["ch9b.cache_bytes"]}
    assert any("'ch99.x'" in p for p in problems([entry], root, stray))
    # a chapter whose key is another chapter's (as 9b's was chapter 9's) cannot count its own
    ch9 = chapters.chapter("09_long_context")
    twin = made_up(entry, entry.page, entry.module, entry.strings, ch9.key)
    found = problems([twin], root, chapters.exercises())
    assert any("registered outside book.chapters.ch09b_serving" in p for p in found), found
