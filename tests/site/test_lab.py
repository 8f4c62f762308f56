"""book/site/lab.py (`make lab CHAPTER=..`): which notebook a CHAPTER names, the language, the
Chinese notebook written without overwriting the reader's edits, and the command it runs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from book.chapters import CHAPTERS
from book.site import lab, launch

PAGES = [f"chapters/{c.page}" for c in CHAPTERS]


def test_the_chapter_list_is_the_books():
    assert lab.chapter_pages() == PAGES


@pytest.mark.parametrize("chapter, page", [
    ("02", "02_scaling"), ("2", "02_scaling"), (" 2 ", "02_scaling"), ("002", "02_scaling"),
    ("02_scaling", "02_scaling"), ("chapters/02_scaling.ipynb", "02_scaling"),
    ("scaling", "02_scaling"), ("4", "04_pytorch"), ("04", "04_pytorch"),
    ("4b", "04b_toy_model"), ("04b", "04b_toy_model"), ("04B", "04b_toy_model"),
    ("toy_model", "04b_toy_model"), ("8b", "08b_real_model"), ("11", "11_modern")])
def test_resolve(chapter, page):
    assert lab.resolve(chapter) == f"chapters/{page}"


def test_every_chapter_resolves_from_what_its_page_tells_the_reader():
    """The box on each page says `make lab CHAPTER=<this>` (book.site.launch.lab_command)."""
    for c in CHAPTERS:
        assert lab.resolve(launch.chapter_number(c.page)) == f"chapters/{c.page}"


@pytest.mark.parametrize("chapter", ["12", "0", "4c", "b", "02_scale", "teachers_guide",
                                     "glossary", "-1", "2.0"])
def test_a_wrong_chapter_lists_the_chapters(chapter):
    with pytest.raises(ValueError, match="no chapter") as error:
        lab.resolve(chapter)
    assert "02 (02_scaling)" in str(error.value) and "04b (04b_toy_model)" in str(error.value)


@pytest.mark.parametrize("chapter", ["", "  ", None])
def test_no_chapter_says_how_to_name_one(chapter):
    with pytest.raises(ValueError, match="CHAPTER=02"):
        lab.resolve(chapter)


def test_language(monkeypatch):
    monkeypatch.delenv("BOOK_LANG", raising=False)
    assert lab.language() == "en"
    assert lab.language("zh") == "zh"
    monkeypatch.setenv("BOOK_LANG", "zh")
    assert lab.language() == "zh"
    assert lab.language("en") == "en"
    monkeypatch.setenv("BOOK_LANG", "")
    assert lab.language() == "en"
    for wrong in ("fr", "zh_CN", "ZH"):
        with pytest.raises(ValueError, match="choose en .* or zh"):
            lab.language(wrong)


def test_print_gives_the_english_command(capsys, monkeypatch):
    monkeypatch.delenv("BOOK_LANG", raising=False)
    assert lab.main(["2", "--print"]) == 0
    cmd = shlex.split(capsys.readouterr().out)
    assert cmd == [str(Path(sys.executable).with_name("jupyter")), "lab",
                   "chapters/02_scaling.ipynb"]
    assert (lab.ROOT / cmd[2]).is_file()


def test_a_wrong_chapter_exits_2_with_the_list(capsys):
    assert lab.main(["13", "--print"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("make lab: no chapter '13'") and "11 (11_modern)" in err
    assert lab.main(["2", "--lang", "fr", "--print"]) == 2
    assert "choose en" in capsys.readouterr().err


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    """Chapter 2's Chinese notebook, written once by lab (the generator reads the catalogues)."""
    out = tmp_path_factory.mktemp("zh")
    path, written = lab.chinese_notebook("chapters/02_scaling", out)
    return out, path, written


def test_the_chinese_notebook_is_the_generators(chinese, tmp_path):
    from book.site import zh_notebooks

    out, path, written = chinese
    assert written and path == out / "chapters" / "02_scaling.ipynb"
    (same,) = zh_notebooks.write_notebooks(tmp_path, pages=["chapters/02_scaling"])
    assert path.read_bytes() == same.read_bytes()
    assert 'book.setup(language=\\"zh\\")' in path.read_text(encoding="utf-8")
    assert sorted(p.name for p in path.parent.iterdir()) == [
        ".02_scaling.ipynb.generated", "02_scaling.ipynb"], "a scratch folder was left behind"


def test_the_readers_edits_are_kept(chinese):
    out, path, _ = chinese
    original = path.read_text(encoding="utf-8")
    # untouched since written: written again (a newer catalogue would show here)
    assert lab.chinese_notebook("chapters/02_scaling", out) == (path, True)
    edited = original.replace('"cells": [', '"cells": [ ', 1)
    assert edited != original
    path.write_text(edited, encoding="utf-8")
    try:
        assert lab.chinese_notebook("chapters/02_scaling", out) == (path, False)
        assert path.read_text(encoding="utf-8") == edited
        # a copy this never wrote (make notebooks-zh's, say) that differs is kept too
        (path.parent / ".02_scaling.ipynb.generated").unlink()
        assert lab.chinese_notebook("chapters/02_scaling", out) == (path, False)
        assert path.read_text(encoding="utf-8") == edited
        # ... and one that does not differ is taken over
        path.write_text(original, encoding="utf-8")
        assert lab.chinese_notebook("chapters/02_scaling", out) == (path, True)
    finally:
        path.write_text(original, encoding="utf-8")


def test_print_gives_the_chinese_command(chinese, capsys, monkeypatch):
    out, path, _ = chinese
    monkeypatch.setattr(lab, "ZH_OUT", out)
    monkeypatch.setenv("BOOK_LANG", "zh")
    assert lab.main(["02_scaling", "--print"]) == 0
    captured = capsys.readouterr()
    assert shlex.split(captured.out)[1:] == ["lab", str(path)]
    assert captured.err == ""
    original = path.read_text(encoding="utf-8")
    path.write_text(original + "\n", encoding="utf-8")
    try:
        assert lab.main(["02", "--print"]) == 0
        assert f"Keeping your copy of {path} " in capsys.readouterr().err
    finally:
        path.write_text(original, encoding="utf-8")


def test_command_is_relative_to_the_repository():
    assert lab.command(lab.ROOT / "chapters" / "02_scaling.ipynb")[1:] == [
        "lab", "chapters/02_scaling.ipynb"]
    assert lab.command(Path("/elsewhere/x.ipynb"))[2] == "/elsewhere/x.ipynb"


def test_without_jupyterlab_it_says_what_to_install(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(lab, "jupyter", lambda: tmp_path / "jupyter")
    monkeypatch.setattr(lab.os, "execv", lambda *a: pytest.fail("executed"))
    assert lab.main(["2"]) == 2
    assert "install requirements.txt" in capsys.readouterr().err


def test_it_becomes_jupyter_lab(monkeypatch, tmp_path):
    fake = tmp_path / "jupyter"
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    calls = []
    monkeypatch.setattr(lab, "jupyter", lambda: fake)
    monkeypatch.setattr(lab.os, "execv", lambda path, args: calls.append((path, args)))
    monkeypatch.setattr(lab.os, "chdir", lambda path: calls.append(("chdir", path)))
    monkeypatch.delenv("BOOK_LANG", raising=False)
    lab.main(["4b"])
    assert calls == [("chdir", lab.ROOT),
                     (str(fake), [str(fake), "lab", "chapters/04b_toy_model.ipynb"])]


def test_without_the_catalogue_tools_it_says_what_to_install(monkeypatch, tmp_path, capsys):
    from book.site import zh_notebooks

    def missing(*args, **kwargs):
        raise ImportError("No module named 'myst_parser'", name="myst_parser")

    monkeypatch.setattr(zh_notebooks, "write_notebooks", missing)
    with pytest.raises(RuntimeError, match=r"myst_parser is missing.*make setup-book"):
        lab.chinese_notebook("chapters/02_scaling", tmp_path)
    assert not list(tmp_path.rglob("*.ipynb")), "nothing is written"
    monkeypatch.setattr(lab, "ZH_OUT", tmp_path)
    assert lab.main(["2", "--lang", "zh", "--print"]) == 2
    assert "make setup-book" in capsys.readouterr().err
