"""The string table of book/kit/i18n.py: every id in both languages with the same fields, every id
the code asks for present, and clear errors on a wrong id, field or language."""

from __future__ import annotations

import ast
import re

import pytest

from book.kit import i18n

BOOK = i18n.STRINGS_DIR.parent   # book/
# an English phrase: two words of three or more letters in a row
PHRASE = re.compile(r"[A-Za-z]{3,}[\s-]+[A-Za-z]{3,}")
CJK = re.compile(r"[\u3400-\u9fff]")


@pytest.fixture(autouse=True)
def english_afterwards():
    yield
    i18n.set_language("en")


def test_every_id_has_both_languages_with_the_same_fields():
    table = i18n.table()
    assert table, "the string table is empty"
    problems = []
    for msg_id, texts in table.items():
        if set(texts) != {"en", "zh"}:
            problems.append(f"{msg_id}: has {sorted(texts)}, needs exactly en and zh")
            continue
        if not all(isinstance(t, str) and t.strip() for t in texts.values()):
            problems.append(f"{msg_id}: empty text")
            continue
        if i18n.fields(texts["en"]) != i18n.fields(texts["zh"]):
            problems.append(f"{msg_id}: fields {sorted(i18n.fields(texts['en']))} in English, "
                            f"{sorted(i18n.fields(texts['zh']))} in Chinese")
        if PHRASE.search(texts["en"]) and not CJK.search(texts["zh"]):
            problems.append(f"{msg_id}: the Chinese text {texts['zh']!r} has no Chinese")
    assert not problems, "\n".join(problems)


def _ids_asked_for() -> dict[str, str]:
    """Every literal message id passed to tr() in book/, with where it is asked for."""
    asked = {}
    for path in sorted(BOOK.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name != "tr" or not node.args:
                continue
            first = node.args[0]
            ids = [first] if isinstance(first, ast.Constant) else []
            if isinstance(first, ast.Subscript) and isinstance(first.value, ast.Dict):
                ids = first.value.values          # tr({"a": "x.y", ...}[key])
            if not ids:
                continue
            for value in ids:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    asked[value.value] = f"{path.relative_to(BOOK.parent)}:{node.lineno}"
    return asked


def test_every_id_the_code_asks_for_is_in_the_table():
    asked = _ids_asked_for()
    assert "common.check_ok" in asked, "the scan found no tr() call: is it still tr()?"
    missing = {i: where for i, where in asked.items() if i not in i18n.table()}
    assert not missing, f"ids asked for but not in book/strings/*.toml: {missing}"


def test_section_files_name_their_chapter():
    """ch06.toml belongs to the chapter whose ``strings`` it is in book.chapters.CHAPTERS (its
    module book/chapters/ch06_heads.py); common to the shared helpers, guide to the teacher's
    guide page (book/site/teachers_guide.py)."""
    from book.chapters import CHAPTERS

    owners = {entry.strings: entry for entry in CHAPTERS}
    for path in sorted(i18n.STRINGS_DIR.glob("*.toml")):
        if path.stem == "common":
            continue
        if path.stem == "guide":
            assert (BOOK / "site" / "teachers_guide.py").is_file()
            continue
        if path.stem == "classroom":   # the grader's feedback (book/classroom/feedback.py)
            assert (BOOK / "classroom" / "feedback.py").is_file()
            continue
        assert path.stem in owners, f"{path.name} is no chapter's strings in CHAPTERS"
        assert (BOOK / "chapters" / f"{owners[path.stem].module}.py").is_file(), path.name


def test_tr_follows_the_language():
    assert i18n.set_language("en") == "en"
    assert i18n.tr("common.check_ok") == "Correct"
    assert i18n.set_language("zh") == "zh" and i18n.language() == "zh"
    assert i18n.tr("common.check_ok") == "正确"


def test_setup_reads_book_lang(monkeypatch):
    import book

    monkeypatch.setenv("BOOK_LANG", "zh")
    assert book.setup() is None and i18n.language() == "zh"   # no output under the cell
    monkeypatch.delenv("BOOK_LANG")
    book.setup()
    assert i18n.language() == "en"
    book.setup(language="zh")
    assert i18n.language() == "zh"


def test_clear_errors():
    with pytest.raises(KeyError, match=r"book/strings/ch99\.toml"):
        i18n.tr("ch99.nothing")
    with pytest.raises(ValueError, match="BOOK_LANG=zh"):
        i18n.set_language("fr")
    i18n.table.cache_clear()
    try:
        i18n.table()["common.check_ok"]   # a table loads
    finally:
        i18n.table.cache_clear()


def test_missing_field_says_which(tmp_path, monkeypatch):
    (tmp_path / "ch00.toml").write_text('[t]\nen = "Head {head}"\nzh = "第 {head} 个头"\n',
                                        encoding="utf-8")
    monkeypatch.setattr(i18n, "STRINGS_DIR", tmp_path)
    i18n.table.cache_clear()
    try:
        assert i18n.tr("ch00.t", head=2) == "Head 2"
        with pytest.raises(KeyError, match="head=..."):
            i18n.tr("ch00.t")
    finally:
        i18n.table.cache_clear()


def test_a_malformed_entry_is_reported(tmp_path, monkeypatch):
    (tmp_path / "ch00.toml").write_text('t = "no languages"\n', encoding="utf-8")
    monkeypatch.setattr(i18n, "STRINGS_DIR", tmp_path)
    i18n.table.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"ch00\.toml: \[t\] must be a table"):
            i18n.table()
    finally:
        i18n.table.cache_clear()
