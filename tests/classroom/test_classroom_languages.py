"""The Chinese assignments: generated from the English notebooks and the catalogues, graded the
same, with the feedback in the student's language (book/classroom/languages.py, feedback.py)."""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import shutil
import tokenize
from pathlib import Path

import nbformat
import numpy as np
import pytest

from book import classroom
from book.classroom import feedback, grading, languages, sandbox
from book.classroom.assignments import ASSIGNMENTS
from book.kit import i18n
from book.site import zh_notebooks

STEMS = [p.stem for p in classroom.sources()]
CJK = re.compile(r"[\u4e00-\u9fff]")


def _po(path: Path) -> dict[str, str]:
    from babel.messages.pofile import read_po

    with path.open("rb") as handle:
        return {m.id: m.string for m in read_po(handle) if m.id}


@pytest.mark.parametrize("stem", [*STEMS, languages.README])
def test_each_catalogue_holds_todays_texts_all_translated(stem):
    """`python -m book.classroom gettext` would change nothing, and nothing is left to
    translate: no empty, fuzzy or still-English entry."""
    path = languages.CATALOGUES / f"{stem}.po"
    if stem == languages.README:
        wanted = languages.readme_messages(classroom.STUDENT_README)
    else:
        wanted = languages.messages(nbformat.read(classroom.SOURCES / f"{stem}.ipynb", 4))
    entries = _po(path)
    assert list(entries) == wanted, "run `python -m book.classroom gettext`"
    assert len(zh_notebooks.load_catalogue(path)) == len(entries), "fuzzy or empty entries"
    english = [m for m, t in entries.items() if t == m]
    assert not english, f"{path.name}: not translated: {english}"


def _code_without_words(code: str) -> str:
    """``code`` with its comments and assert messages blanked: what must be identical."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and isinstance(node.msg, ast.Constant):
            node.msg = ast.Constant("")
    return ast.dump(tree)


def _comment_free(code: str) -> str:
    return "".join(t.string for t in tokenize.generate_tokens(io.StringIO(code).readline)
                   if t.type != tokenize.COMMENT)


@pytest.mark.parametrize("stem", STEMS)
def test_the_chinese_notebook_is_the_english_one_with_its_words_translated(stem):
    english = nbformat.read(classroom.SOURCES / f"{stem}.ipynb", as_version=4)
    chinese = languages.chinese_notebook(classroom.SOURCES / f"{stem}.ipynb")
    assert [(c.cell_type, c.get("id")) for c in chinese.cells] == [
        (c.cell_type, c.get("id")) for c in english.cells]
    assert chinese.metadata["language"] == "zh" and "language" not in english.metadata
    hints = 0
    for en, zh in zip(english.cells, chinese.cells, strict=True):
        if en.cell_type == "raw":      # otter's directives
            assert zh.source == en.source
        elif en.cell_type == "code":
            assert _code_without_words(zh.source) == _code_without_words(en.source)
            assert _comment_free(zh.source).count("\n") == _comment_free(en.source).count("\n")
            for directive in re.findall(r"# (?:BEGIN|END) [A-Z ]+", en.source):
                assert directive in zh.source, directive
            hints += len(languages._hints(en.source))
            shown = [n.msg.value for n in ast.walk(ast.parse(zh.source))
                     if isinstance(n, ast.Assert) and isinstance(n.msg, ast.Constant)]
            assert len(shown) == len(languages._hints(en.source))
            assert all(CJK.search(h) for h in shown), zh.source
        else:
            assert not zh_notebooks.english_prose(zh.source), zh_notebooks.english_prose(
                zh.source)
            assert zh.source.count("`") == en.source.count("`"), (en.source, zh.source)
            assert zh.source.count("$") == en.source.count("$"), (en.source, zh.source)
    assert hints >= 2, "every assignment's public checks have hints"


def test_a_missing_translation_stops_generation_and_says_which(tmp_path, monkeypatch):
    src = tmp_path / "05_scaling.ipynb"
    nb = nbformat.read(classroom.SOURCES / src.name, as_version=4)
    nb.cells[1].source += "\n\nA brand-new sentence nobody has translated yet."
    test_cell = next(c for c in nb.cells if "assert" in c.source)
    test_cell.source = test_cell.source.replace('"one number"', '"a new hint here"', 1)
    nbformat.write(nb, src)
    with pytest.raises(zh_notebooks.MissingTranslation, match="brand-new sentence"):
        languages.chinese_notebook(src)
    nb.cells[1].source = nbformat.read(classroom.SOURCES / src.name, 4).cells[1].source
    nbformat.write(nb, src)
    with pytest.raises(zh_notebooks.MissingTranslation, match="a new hint here"):
        languages.chinese_notebook(src)


def test_the_chinese_readme_keeps_its_commands():
    zh = languages.chinese_readme(classroom.STUDENT_README)
    assert CJK.search(zh) and not zh_notebooks.english_prose(zh)
    for command in re.findall(r"^\.venv/bin/\S+.*$", classroom.STUDENT_README, re.M):
        assert command in zh


def _notebook(metadata) -> bytes:
    return json.dumps({"cells": [], "metadata": metadata, "nbformat": 4,
                       "nbformat_minor": 5}).encode()


@pytest.mark.parametrize(("data", "language"), [
    (_notebook({"language": "zh"}), "zh"),
    (_notebook({"language": "en"}), "en"),
    (_notebook({}), "en"),
    (_notebook({"language": "fr"}), "en"),
    (_notebook({"language": ["zh"]}), "en"),
    (_notebook({"language": "zh; rm -rf ~"}), "en"),
    (_notebook({"language": {"__class__": "zh"}}), "en"),
    (_notebook([]), "en"),
    (b"[1, 2]", "en"),
    (b"\xff\xfe not json", "en"),
    (b"", "en"),
])
def test_the_language_a_notebook_claims_is_one_of_two_or_english(data, language):
    assert languages.language_of(data) == language


def test_feedback_reads_as_before_in_english_and_in_chinese_on_request():
    wrong = feedback.Text("classroom.wrong_shape", what=feedback.Text("classroom.what_weights"),
                          got=(2, 3), expected=(3, 2))
    assert wrong == "the weights has shape (2, 3), expected (3, 2)"
    assert wrong.to("zh") == "权重的形状是 (2, 3)，应为 (3, 2)"
    assert feedback.words("a student's own error", "zh") == "a student's own error"
    import copy
    import pickle

    for twin in (copy.deepcopy(wrong), pickle.loads(pickle.dumps(wrong))):
        assert twin == wrong and twin.to("zh") == wrong.to("zh")
    with pytest.raises(ValueError, match="language must be one of"):
        wrong.to("fr")
    with pytest.raises(KeyError, match="book/strings/classroom.toml"):
        feedback.Text("classroom.no_such_message")


def test_every_message_id_the_grader_uses_is_in_the_table():
    asked = set()
    for path in (classroom.ROOT / "book" / "classroom").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        asked |= set(re.findall(r'(?:say|Text)\(\s*"(classroom\.\w+)"', text))
    asked |= {f"classroom.case_{p}_layers{s}" for p in ("pre", "post") for s in ("", "_large")}
    assert len(asked) > 50, "the scan found too few ids: are they still say()/Text()?"
    missing = sorted(i for i in asked if i not in i18n.table())
    assert not missing, missing
    names = [c.name for a in ASSIGNMENTS.values() for c in a.cases(3)]
    worded = [n for n in names if re.search(r"[A-Za-z]{2,}[ -]|[ -][A-Za-z]{2,}", n)]
    assert worded and all(isinstance(n, feedback.Text) for n in worded), [
        n for n in worded if not isinstance(n, feedback.Text)]


def _fake_outcome(cases, answer):
    """What a sandbox returns when the notebook's function gives ``answer(case)``."""
    from book.classroom.runner import encode

    results = [{"id": i, "ok": True, "value": encode(answer(c))} for i, c in enumerate(cases)]
    return sandbox.Outcome({"status": "ok", "detail": "NameError: x", "results": results},
                           "", 1.0, "bubblewrap")


@pytest.mark.parametrize("stem", ["01_attention_numpy", "07_masks"])
def test_the_same_outputs_get_the_same_scores_in_both_languages(stem):
    """Wording is applied last: the per-question scores are the same and every detail is
    there in both languages (Chinese text where the English has words)."""
    assignment = next(a for a in ASSIGNMENTS.values() if a.stem == stem)
    cases = assignment.cases(7)
    for answer in (lambda c: np.zeros((2, 3)), lambda c: None, lambda c: [1.0, 2.0]):
        outcome = _fake_outcome(cases, answer)
        en, zh = (grading.score(assignment, cases, outcome, code) for code in ("en", "zh"))
        assert [(r["question"], r["score"], r["possible"], r["status"]) for r in en] == [
            (r["question"], r["score"], r["possible"], r["status"]) for r in zh]
        for e, z in zip(en, zh, strict=True):
            assert bool(e["detail"]) == bool(z["detail"])
            if e["detail"]:
                assert not CJK.search(e["detail"]) and CJK.search(z["detail"]), (e, z)
                assert "NameError: x" in e["detail"] and "NameError: x" in z["detail"]


@pytest.mark.slow
@pytest.mark.extended
def test_every_assignment_scores_the_same_answers_the_same_in_both_languages(tmp_path):
    """The reference solutions (read from the English instructor notebook and from its Chinese
    twin), their float32 variants and every constant answer of book/classroom/assignments/, on
    the same hidden inputs: the same score for every question whatever the language."""
    from book.classroom import fairness

    chinese = tmp_path / "zh"
    languages.write_sources(classroom.sources(), chinese)
    compared = worded = 0
    for assignment in ASSIGNMENTS.values():
        stem = assignment.stem
        answers = {"reference": fairness.reference(stem),
                   "float32": {**fairness.reference(stem), **assignment.float32()},
                   **assignment.constants()}
        for kind, functions in answers.items():
            en = fairness.run_answer(assignment, functions, 11, language="en")
            zh_functions = fairness.reference(stem, chinese) if kind == "reference" else functions
            zh = fairness.run_answer(assignment, zh_functions, 11, language="zh")
            assert [(r["question"], r["score"], r["status"]) for r in en] == [
                (r["question"], r["score"], r["status"]) for r in zh], (stem, kind)
            for e, z in zip(en, zh, strict=True):
                assert bool(e["detail"]) == bool(z["detail"]), (stem, kind, e, z)
                if e["detail"]:
                    assert not CJK.search(e["detail"]) and CJK.search(z["detail"]), (e, z)
                    worded += 1
            compared += 1
    assert compared > 7 * 3 and worded > 20, (compared, worded)


@pytest.mark.slow
@pytest.mark.extended
def test_a_notebook_claiming_a_language_changes_only_its_own_wording(tmp_path):
    """Three copies of one partly wrong English answer, graded in one batch: as handed out,
    claiming Chinese, and claiming a made-up language. The scores are the same; the row that
    claims Chinese is worded in Chinese; the others, and every other file, read as before."""
    stem = "07_masks"
    generated = classroom.generate(tmp_path / "assign", _one_source(tmp_path, stem),
                                   check_solutions=False)[stem]
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = nbformat.read(generated["solutions"], as_version=4)
    for old, new in classroom.PARTIAL_MISTAKES[stem]:
        for c in nb.cells:
            c.source = c.source.replace(old, new)
    nbformat.write(nb, subs / "a_plain.ipynb")
    for name, claim in (("b_claims_zh", "zh"), ("c_claims_other", "../../zh")):
        nb.metadata["language"] = claim
        nbformat.write(nb, subs / f"{name}.ipynb")
    shutil.copy2(generated["zh"]["solutions"], subs / "d_zh_full.ipynb")
    (subs / "e_broken.ipynb").write_text('{"metadata": {"language": "zh"}, "cells": 5}')
    rows = classroom.grade(subs, tmp_path / "grades.csv", seed=5, jobs=2, progress=False,
                           unsandboxed=not sandbox.isolation() == "bubblewrap")
    by = {}
    for r in rows:
        by.setdefault(r["submission"].removesuffix(".ipynb"), []).append(r)
    plain, zh, other = by["a_plain"], by["b_claims_zh"], by["c_claims_other"]
    scores = [[(r["question"], r["score"]) for r in rows] for rows in (plain, zh, other)]
    assert scores[0] == scores[1] == scores[2]
    graded = [r for r in plain if r["status"] == "graded"]   # not the written item's row
    assert 0 < sum(r["score"] for r in graded) < sum(r["possible"] for r in graded)
    assert [r["detail"] for r in other] == [r["detail"] for r in plain]
    worded = [(p["detail"], z["detail"]) for p, z in zip(plain, zh, strict=True) if p["detail"]]
    assert worded and all(not CJK.search(p) and CJK.search(z) for p, z in worded)
    assert [r["score"] for r in by["d_zh_full"]] == [r["possible"] for r in by["d_zh_full"]]
    assert [r["status"] for r in by["e_broken"]] == ["error"]
    with (tmp_path / "grades.csv").open(encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(rows)


def _one_source(tmp_path, stem):
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(classroom.SOURCES / f"{stem}.ipynb", src)
    return src
