"""book.face.checks: each checker accepts the reference answer, rejects the listed mistakes with a
hint that does not give the answer away, and reports unanswered exercises as such."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from book import chapters
from book.face import checks

KEYS = sorted(chapters.exercises())


def test_every_chapter_has_at_least_three_exercises():
    chapters = {key.split(".")[0] for key in KEYS}
    for chapter in chapters:
        assert sum(k.startswith(chapter + ".") for k in KEYS) >= 3, chapter


@pytest.mark.parametrize("key", KEYS)
def test_reference_passes(key):
    result = checks.check(key, checks.reference(key))
    assert result.ok, result.message
    assert "✅" in result._repr_html_()


# words a verdict may begin with, in each language: a right answer's message said after the
# checker's own "Correct:" must not say it again (chapter 4b's "✅ Correct: Right: …")
VERDICT_WORDS = {"en": ("Correct", "Right"), "zh": ("正确", "对：", "对。", "对，")}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_right_answer_is_called_right_once(language):
    from book.kit import i18n

    before = i18n.language()
    i18n.set_language(language)
    try:
        doubled = []
        for key in KEYS:
            said = str(checks.check(key, checks.reference(key))).removeprefix("✅").strip()
            first = next((w for w in VERDICT_WORDS[language] if said.startswith(w)), None)
            rest = said.removeprefix(first or "").lstrip(" :：,，.。")
            if first is None or rest.startswith(VERDICT_WORDS[language]):
                doubled.append(f"{key}: {said[:60]}")
        assert not doubled, "verdict missing or said twice:\n" + "\n".join(doubled)
    finally:
        i18n.set_language(before)


@pytest.mark.parametrize("key", KEYS)
def test_mistakes_fail_with_a_hint(key):
    mistakes = chapters.exercises()[key].mistakes()
    assert mistakes, f"{key} lists no mistakes to test its checker against"
    for wrong in mistakes:
        result = checks.check(key, wrong)
        assert result.status == "bad", (key, wrong)
        assert len(result.message) > 15
        assert "❌" in str(result)


@pytest.mark.parametrize("key", KEYS)
def test_unanswered_is_todo_not_wrong(key):
    assert checks.check(key, ...).status == "todo"


@pytest.mark.parametrize("key", KEYS)
def test_hints_do_not_print_a_numeric_answer(key):
    answer = checks.reference(key)
    if callable(answer) or not isinstance(answer, (int, float)):
        pytest.skip("not a single-number answer")
    for wrong in chapters.exercises()[key].mistakes():
        message = checks.check(key, wrong).message
        assert f"{float(answer):g}" not in message.replace(str(wrong), ""), message


def test_wrong_kind_of_answer():
    assert "single number" in checks.check("ch2.variance", [1, 2]).message
    assert "function itself" in checks.check("ch2.scaled_scores", 3).message


def test_unknown_exercise():
    with pytest.raises(KeyError, match="is registered"):
        checks.check("ch9.nothing", 1)
    with pytest.raises(KeyError, match="is registered"):
        checks.reference("ch9.nothing")


def test_registering_twice_is_refused():
    with pytest.raises(ValueError, match="twice"):
        checks.exercise("ch1.pair_count", "again", reference=lambda: 1,
                        mistakes=lambda: [])(lambda a: (True, ""))


@pytest.mark.parametrize("key", [k for k in KEYS if callable(checks.reference(k))])
def test_function_left_blank_is_todo(key):
    def blank(*args):
        ...

    result = checks.check(key, blank)
    assert result.status == "todo", result


def test_icons_come_with_words():
    from book.face.checks import Result

    assert str(Result("k", "ok", "a 10 × 10 grid.")) == "✅ Correct: a 10 × 10 grid."
    assert str(Result("k", "ok", "Correct, and stable.")) == "✅ Correct, and stable."
    assert str(Result("k", "bad", "Divide by √d_k.")) == "❌ Not yet: Divide by √d_k."
    assert str(Result("k", "todo", "Not answered yet: fill in")).startswith("✍️ Not answered")


def test_the_book_says_once_per_page_that_exercises_run_in_jupyter(monkeypatch):
    """In the book build the first unanswered exercise of a page (a kernel) says where the
    exercises run; the next ones show the plain box. In Jupyter never."""
    from book.face import checks
    from book.kit import i18n

    result = checks.Result("ch1.x", "todo", "Not answered yet")
    monkeypatch.setattr(checks, "_jupyter_note_shown", False)
    monkeypatch.setenv("BOOK_BUILD", "0")
    assert 'class="book-check-note"' not in result._repr_html_()
    monkeypatch.setenv("BOOK_BUILD", "1")
    first, second = result._repr_html_(), result._repr_html_()
    note = i18n.tr("common.exercises_run_in_jupyter")
    assert first.startswith('<p class="book-check-note">') and "run in Jupyter" in note
    assert first.endswith(second) and 'class="book-check-note"' not in second
    assert "book-check-note" not in checks.Result("ch1.x", "bad", "no")._repr_html_()


# ---- value exercises answered in the page ------------------------------------------------------

def test_value_and_code_exercises():
    """Every exercise whose reference is a value is a value exercise (its check is data the
    page reads too); every one whose reference is a function asks for code and has none."""
    for key in KEYS:
        has_spec = checks.registered()[key].spec is not None
        assert has_spec == (not callable(checks.reference(key))), key
        assert (checks.answer_spec(key) is None) == (not has_spec), key


@pytest.mark.parametrize("language", ["en", "zh"])
def test_page_specs_are_json_in_the_language(language):
    from book.kit import i18n

    before = i18n.language()
    i18n.set_language(language)
    try:
        for key in value_keys():
            spec = checks.answer_spec(key)
            page = json.loads(json.dumps(spec.page_spec(key), allow_nan=False))
            assert page["kind"] == spec.kind and len(page["rules"]) == len(spec.rules)
            says = [r for r in page["rules"]] + [page["otherwise"], page["unreadable"]]
            says += [page["wrongKind"]] if page["wrongKind"] else []
            assert any(s["status"] == "ok" for s in says), key
            for say in says:
                assert say["text"][0] in "✅❌✍", say
                if language == "zh":
                    assert re.search(r"[\u4e00-\u9fff]", say["text"]), say
            # the verdict on the reference is the right rule's text
            assert str(checks.check(key, checks.reference(key))) in [
                s["text"] for s in says if s["status"] == "ok"]
    finally:
        i18n.set_language(before)


def test_the_book_page_has_a_form_for_value_exercises(monkeypatch):
    """In the build an unanswered value exercise shows its box and a form (a label tied to the
    field, a submit button, a polite live region, the rules as JSON); an exercise that asks for
    code shows the note once per page instead. In Jupyter neither."""
    monkeypatch.setattr(checks, "_jupyter_note_shown", False)
    monkeypatch.setenv("BOOK_BUILD", "0")
    assert "<form" not in checks.check("ch2.variance", ...)._repr_html_()
    monkeypatch.setenv("BOOK_BUILD", "1")
    out = checks.check("ch2.variance", ...)._repr_html_()
    assert out.startswith('<div class="book-check todo">') and "book-check-note" not in out
    form = re.search(r'<form class="book-exercise book-exercise-number" '
                     r'data-exercise="ch2\.variance".*</form>$', out)
    assert form, out
    ident = re.search(r'<label for="([^"]+)">', out).group(1)
    assert f'<input type="text" id="{ident}"' in out
    assert f'aria-describedby="{ident}-help"' in out and f'id="{ident}-help"' in out
    assert '<button type="submit">' in out and 'aria-live="polite"' in out
    spec = json.loads(re.search(r'<script type="application/json" class="book-exercise-spec">'
                                r"(.*?)</script>", out).group(1))
    assert spec["key"] == "ch2.variance" and spec["kind"] == "number"
    again = checks.check("ch2.variance", ...)._repr_html_()
    assert re.search(r'<label for="([^"]+)">', again).group(1) != ident, "ids must differ"
    assert "<textarea" in checks.check("ch4.causal_mask", ...)._repr_html_()
    # the solution cell's verdict has no form
    assert "<form" not in checks.check("ch2.variance", 64)._repr_html_()
    code = checks.check("ch2.scaled_scores", ...)._repr_html_()
    assert code.startswith('<p class="book-check-note">') and "<form" not in code
    assert "book-check-note" not in checks.check("ch1.my_softmax", ...)._repr_html_()


def test_the_note_says_only_code_needs_jupyter():
    from book.kit import i18n

    before = i18n.language()
    try:
        i18n.set_language("en")
        note = i18n.tr("common.exercises_run_in_jupyter")
        assert "Code exercises" in note and "launch button" in note and "Run this chapter" in note
        i18n.set_language("zh")
        note = i18n.tr("common.exercises_run_in_jupyter")
        assert "写代码" in note and "启动按钮" in note and "运行本章" in note
    finally:
        i18n.set_language(before)


def test_value_checkers_belong_to_their_chapter():
    from book.chapters import CHAPTERS

    modules = {c.key: f"book.chapters.{c.module}" for c in CHAPTERS}
    for key in value_keys():
        assert checks.registered()[key].checker.__module__ == modules[key.split(".")[0]], key


def test_answer_is_checked_when_declared():
    with pytest.raises(ValueError, match="kind must be one of"):
        checks.Answer("complex", [(checks.Is.equal(1), checks.right("ch01.correct"))],
                      otherwise=checks.wrong("ch01.heads_hint"))
    with pytest.raises(ValueError, match="nothing could pass"):
        checks.Answer("number", [(checks.Is.equal(1), checks.wrong("ch01.heads_hint"))],
                      otherwise=checks.wrong("ch01.heads_hint"))
    with pytest.raises(KeyError, match="string table"):
        checks.right("ch01.no_such_message")
    with pytest.raises(TypeError, match="pairs"):
        checks.Answer("number", [(checks.right("ch01.correct"), checks.Is.equal(1))],
                      otherwise=checks.wrong("ch01.heads_hint"))
    with pytest.raises(ValueError, match="dtype"):
        checks.Is.dtype("complex")


def test_a_value_answer_of_another_kind():
    # no wrong-kind verdict: reading the answer raises, and check reports it as raised
    assert "single number" in checks.check("ch2.variance", [1, 2]).message
    # with one: its own hint
    from book.kit import i18n

    assert checks.check("ch3.concat_shape", 18).message == i18n.tr("ch03.tuple_hint")
    spec = checks.Answer("integer", [(checks.Is.equal(1), checks.right("ch01.correct"))],
                         otherwise=checks.wrong("ch01.heads_hint"))
    with pytest.raises(TypeError, match="expected a Python or NumPy integer"):
        spec.verdict(1.5)


# ---- value exercises: the verdicts they gave before their checks became data -------------------
#
# tests/face/value_verdicts.json holds, for every exercise whose answer is a value, what the
# Python check said (str(Result), in English and in Chinese) on its reference, each listed
# mistake and the probes below: recorded from the hand-written checkers before they were
# replaced by declarative specs (book.face.checks.Answer), so that the specs are held to the
# same verdicts. Re-record after changing a verdict on purpose:
#     .venv/bin/python tests/face/test_checks.py record

VERDICTS = Path(__file__).with_name("value_verdicts.json")


def _plain(value):
    """``value`` as plain Python data (tensors and arrays as nested lists, tagged)."""
    if hasattr(value, "detach"):
        return {"tensor": value.detach().cpu().tolist(), "dtype": str(value.dtype)}
    if isinstance(value, np.ndarray):
        return {"ndarray": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, tuple):
        return {"tuple": [_plain(v) for v in value]}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return {"float": repr(value)}
    return value


def _label(value) -> str:
    return json.dumps(_plain(value), ensure_ascii=False, sort_keys=True)


def _number_probes(ref) -> list:
    ref = float(ref)
    out = [0, 1, -1, 0.5, 2, 3, 4, 5, 7, 8, 16, 64, 100, 128, 1e9, -1e-3, 2.5, True, False,
           [1, 2], [ref], "abc", ref + 1, ref - 1, ref + 2, ref - 2, ref * 2, ref / 2, ref * 4,
           ref / 4, ref * 24, ref / 24, int(ref) if ref == int(ref) else ref]
    out += [ref * f for f in (1.0005, 0.9995, 1.001, 0.999, 1.002, 0.998, 1.01, 0.99, 1.019,
                              0.981, 1.021, 0.979, 1.029, 0.971, 1.031, 0.969, 1.049, 0.951,
                              1.051, 0.949, 1.1, 0.9)]
    out += [ref + d for d in (1e-4, -1e-4, 9e-4, -9e-4, 1.1e-3, -1.1e-3)]
    return out


def _tuple_probes(ref: tuple) -> list:
    n = len(ref)
    out = [tuple(reversed(ref)), ref[:-1], ref + (1,), (0,) * n, (1,) * n, tuple(range(n)),
           5, True, list(ref), tuple(float(v) for v in ref), tuple(v + 0.5 for v in ref),
           (), [ref], "ab", ("a", "b"), (1, "x")]
    for i in range(n):
        for d in (-2, -1, 1, 2):
            out.append(tuple(v + d if j == i else v for j, v in enumerate(ref)))
    if n == 2:  # (layer, head) and (without, with): the grid around it, and off it
        out += [(a, b) for a in range(-1, 8) for b in range(-1, 13)]
        out += [(ref[0], 0), (0, ref[1]), (ref[0] + 8, ref[1]), (ref[1], ref[1]), (ref[0], ref[0])]
    if n == 4:  # a scores shape: every order of its axes and the usual slips
        from itertools import permutations

        out += sorted(set(permutations(ref)))
        out += [(3, 10, 10), (3, 10, 64), (3, 8, 10, 64), (3, 8, 64, 10), (8, 3, 10, 10),
                (3, 10, 8, 64), (10, 10), (3, 8, 10), (3, 80, 10)]
    if n == 2 and ref == (3, 6):
        out += [(3, 2), (2, 3), (6, 6), (3, 3, 2), (1, 3, 6), 18, (18,)]
    return out


def _array_probes(ref: np.ndarray) -> list:
    return [ref + 0.004, ref - 0.004, ref + 0.006, ref.round(2), ref.round(3), ref[:-1],
            ref[::-1], np.full(ref.shape, 1 / ref.size), ref.tolist(), [ref.tolist()], 0.5,
            np.concatenate([ref, [0.0]]), np.sort(ref), ref * 1.01, [True, False, False],
            ref.astype(np.float32)]


def _mask_probes(ref) -> list:
    want = np.asarray(ref)
    rng = np.random.default_rng(0)
    out = [want, want.tolist(), want.astype(int).tolist(), want.astype(float).tolist(),
           want.T, ~want, np.tril(want, -1), np.ones((5, 5), bool), np.zeros((5, 5), bool),
           np.eye(5, dtype=bool), np.triu(want, 1), (~want).astype(int), want.astype(float) * 3,
           np.where(want, 0.0, -np.inf), np.where(want, 0.0, -1e9), want[:4, :4], want[0],
           True, 1, [[True]], want.astype(int) - 1]
    out += [rng.random((5, 5)) < 0.5 for _ in range(6)]
    flipped = want.copy()
    flipped[2, 1] = False
    out.append(flipped)
    return out


def _labels_probes(ref: list) -> list:
    from book.toy.orders import LABELS

    out = [tuple(ref), ref + ["omit"], ref[:-1], [], "count_2", 5, None, [1, 2, 3, 4],
           list(reversed(ref)), [[label] for label in ref]]
    for i in range(len(ref)):
        for label in LABELS:
            if label != ref[i]:
                out.append([label if j == i else v for j, v in enumerate(ref)])
    return out


def probes(key: str) -> list:
    """The answers a value exercise's verdicts are recorded on: its reference, its listed
    mistakes, then probes around the reference (by the reference's kind)."""
    ex = checks.registered()[key]
    ref = ex.reference()
    out = [ref, *ex.mistakes()]
    if isinstance(ref, (int, float, np.integer, np.floating)) and not isinstance(ref, bool):
        out += _number_probes(ref)
    elif isinstance(ref, tuple):
        out += _tuple_probes(ref)
    elif isinstance(ref, list):
        out += _labels_probes(ref)
    elif hasattr(ref, "dtype") and str(ref.dtype) in ("torch.bool", "bool"):
        out += _mask_probes(ref)
    else:
        out += _array_probes(np.asarray(ref, dtype=float))
    return [p for p in out if p is not None]


def _verdicts(key: str) -> dict[str, dict[str, str]]:
    from book.kit import i18n

    before = i18n.language()
    out: dict[str, dict[str, str]] = {}
    try:
        for answer in probes(key):
            label = _label(answer)
            for language in ("en", "zh"):
                i18n.set_language(language)
                out.setdefault(label, {})[language] = str(checks.check(key, answer))
    finally:
        i18n.set_language(before)
    return out


def value_keys() -> list[str]:
    """The exercises whose answer is a value (not a function to write)."""
    return [k for k in KEYS if not callable(checks.reference(k))]


@pytest.mark.parametrize("key", value_keys())
def test_value_verdicts_are_unchanged(key):
    """Every value exercise says, in both languages, what its checker said when recorded, on
    its reference, its mistakes and every probe."""
    recorded = json.loads(VERDICTS.read_text(encoding="utf-8"))
    assert key in recorded, f"{key}: no verdicts recorded; run `{RECORD}`"
    now = _verdicts(key)
    assert set(now) == set(recorded[key]), (
        f"{key}: the probes changed (new: {sorted(set(now) - set(recorded[key]))[:5]}, gone: "
        f"{sorted(set(recorded[key]) - set(now))[:5]}); run `{RECORD}`")
    changed = [f"{answer}: {recorded[key][answer]} -> {said}" for answer, said in now.items()
               if said != _as_intended(key, answer, recorded[key][answer])]
    assert not changed, f"{key}: {len(changed)} verdicts changed:\n" + "\n".join(changed[:10])


def _as_intended(key: str, answer: str, old: dict[str, str]) -> dict[str, str]:
    """A recorded verdict with the changes made on purpose since it was recorded."""
    from book.kit import i18n

    new = dict(old)
    # an array answer of the wrong shape is told so in the reader's language (it was English)
    new["zh"] = re.sub(r"Expected shape (.+?), got (.+?)\. ", r"形状应为 \1，实际是 \2。",
                       new["zh"])
    if key == "ch6.max_heads" and answer == "0":
        # 0 heads gets the hint, where the hand-written check raised ZeroDivisionError (128 % 0)
        before = i18n.language()
        try:
            for language in new:
                i18n.set_language(language)
                new[language] = str(checks.Result(key, "bad", i18n.tr("ch06.ex_max_heads_hint")))
        finally:
            i18n.set_language(before)
    return new


def test_every_value_exercise_is_recorded():
    assert sorted(json.loads(VERDICTS.read_text(encoding="utf-8"))) == sorted(value_keys())


RECORD = ".venv/bin/python tests/face/test_checks.py record"


def record() -> None:
    table = {key: _verdicts(key) for key in value_keys()}
    VERDICTS.write_text(json.dumps(table, ensure_ascii=False, indent=1, sort_keys=True) + "\n",
                        encoding="utf-8")
    print(f"wrote {VERDICTS}: {len(table)} exercises, "
          f"{sum(len(v) for v in table.values())} answers")


if __name__ == "__main__":
    if sys.argv[1:] == ["record"]:
        record()
