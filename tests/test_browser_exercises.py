"""Value exercises answered in the HTML book's page: the page's verdict is the Jupyter check's.

An exercise whose answer is a value (book.face.checks.value_exercise) shows, in the book build,
a form under its cell; book/face/exercises.js reads what the reader types and walks the
exercise's rules, shipped in the form as JSON. Here:

* a bare page (tests/figures_page.py) holds every value exercise's cell output as the build
  writes it, once per language, opened from file:// in headless Chromium with every other
  request refused. Into each form are typed, as a reader types them, the reference answer, every
  listed mistake, another spelling and garbage; the verdict read from the form's live region
  must be ``str(checks.check(key, answer))`` in the same language, ``answer`` being what Python
  reads from the same text (or, where the page cannot read the text as the value the exercise
  asks for, the page's message saying so). More spellings and garbage, and every probe of
  tests/face/value_verdicts.json, go through the page's script the same way without typing.
  The page passes axe-core's WCAG 2.1 A/AA rules, logs no console error, and a form works by
  keyboard alone with a visible focus ring;
* both built editions: every chapter page holds one form per value exercise of its chapter
  (and none for an exercise that asks for code) and loads the script; a right and a wrong
  answer typed into every form give the Jupyter check's verdict.
"""

from __future__ import annotations

import ast
import importlib.util
import math
import re
from pathlib import Path

import headless
import numpy as np
import page_checks
import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow

GARBAGE = ["", "seven", "[1, 2", "1 2", "(", "64 tokens", "{'a': 1}"]
# other spellings a reader types, by the kind of value an exercise reads
SPELLINGS = {
    "number": ["8.0", "-1e-3", " 64 ", "1_000", "+4", "True", "[64]", "inf"],
    "integer": ["1", "1.0", "-1", "(1,)", "99"],
    "shape": ["(2, 8, 64)", "2, 8, 64", "[3, 6]", "(3, 6,)", "18", "(3.0, 6.0)", "((3, 6),)",
              "(inf, 3)", "('3', 6)"],
    "int_pair": ["(0, 3)", "0, 3", "[1, 1]", "(1, 1, 1)", "(1,)", "7", "(-1, 0)", "(1.9, 1.2)",
                 "([1], 1)", "(inf, 1)"],
    "number_pair": ["(108, 1)", "108, 1", "[108.0, 1.0]", "([108], [1])", "(True, 1)", "(1,)",
                    "(inf, 1)", "(108, 1, 0)"],
    "array": ["[0.1, 0.2, 0.7]", "(0.665, 0.245, 0.09)", "[[0.1, 0.2, 0.7]]", "0.5", "[]",
              "[True, False, False]", "[1, [2, 3]]", "[inf, 0, 0]"],
    "mask": ["[[True, False], [False, False]]", "[[1, 0], [0, 1]]", "True", "[]",
             "[[true, false, false, false, false]] * 5", "[[1, 0], [1]]"],
    "labels": ["['normal', 'omit']", "('count_2', 'omit', 'omit', 'extra')", "'omit'", "5",
               "[1, 2, 3, 4]", "count_2, omit, omit, extra", '["count_2", "omit", "\\x6fmit", '
               '"extra"]'],
}


def _load_recorded_probes():
    """tests/face/test_checks.py's probes() (its file is not importable by name from here)."""
    path = ROOT / "tests" / "face" / "test_checks.py"
    spec = importlib.util.spec_from_file_location("face_test_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.probes


# ---- the text a reader types, and what Python reads from it --------------------------------

def typed(value, digits: int | None = None, top: bool = True) -> str:
    """``value`` as a reader types it: Python literal syntax, arrays and tensors as nested
    lists; ``digits``: significant digits of non-whole floats (None: exact, repr). A string
    alone is typed as it is ("layer 1", what a reader types there), in a list in quotes."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "-inf" if value < 0 else "inf"
        if digits is not None and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return repr(value) if digits is None else f"{value:.{digits}g}"
    if isinstance(value, str):
        return value if top else repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(typed(v, digits, top=False) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(typed(v, digits, top=False) for v in value) + "]"
    raise TypeError(f"cannot type {value!r}")


_INF = re.compile(r"(?<![\w.'\"])(?:(?:math|np|numpy|torch)\.)?inf\b")


def read_as_python(text: str):
    """What Python's literal syntax makes of ``text`` (plus JSON's true/false and inf); raises
    ValueError where it is not a literal."""
    source = _INF.sub("1e999", re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", text)))
    try:
        value = ast.literal_eval(source.strip())
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as err:
        raise ValueError(text) from err
    if not all(isinstance(x, (bool, int, float, str)) for x in _leaves(value)):
        raise ValueError(f"{text}: the page reads numbers, True/False, strings, lists, tuples")
    return value


def _has_str(v) -> bool:
    return isinstance(v, str) or (isinstance(v, (list, tuple)) and any(_has_str(x) for x in v))


def _leaves(v):
    if isinstance(v, (list, tuple)):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


def _rectangular(v) -> bool:
    def shape(x):
        if not isinstance(x, (list, tuple)):
            return ()
        inner = [shape(i) for i in x]
        if any(s is None for s in inner) or len(set(inner)) > 1:
            return None
        return (len(x),) + (inner[0] if inner else ())
    return shape(v) is not None


def page_reads(kind: str, value) -> bool:
    """Whether the page takes ``value`` (Python's reading of the typed text) as an answer of
    this kind, to judge as Python does; False: the page says it cannot read it (Python's check
    would raise, or the value is outside what the page reads)."""
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind in ("integer", "labels"):
        return True
    if _has_str(value):
        return False
    if kind in ("array", "mask"):
        if not _rectangular(value):
            return False
        return kind == "mask" or all(math.isfinite(x) for x in _leaves(value))
    if not isinstance(value, (list, tuple)):
        return True  # not a sequence: the exercise's wrong-kind verdict
    for item in value if kind == "shape" else value[:3]:
        if kind == "number_pair":
            continue  # number(item) failing is the wrong-kind verdict
        if isinstance(item, (list, tuple)):
            return True  # int([...]): the wrong-kind verdict
        if isinstance(item, float) and not math.isfinite(item):
            return False  # int(inf) raises OverflowError
    return True


def expected(key: str, text: str, language: str) -> str:
    """What the page must say for ``text``: Python's verdict on what Python reads from it."""
    from book.face import checks
    from book.kit import i18n

    spec = checks.answer_spec(key)
    before = i18n.language()
    i18n.set_language(language)
    try:
        try:
            value = read_as_python(text)
            readable = page_reads(spec.kind, value)
        except ValueError:
            readable = False
        if not readable:
            return spec.page_spec(key)["unreadable"]["text"]
        result = checks.check(key, value)
        raised = i18n.tr("common.answer_raised", error="\0", message="").split("\0")[0]
        assert not result.message.startswith(raised), (key, text, result)
        return str(result)
    finally:
        i18n.set_language(before)


# ---- the bare page -----------------------------------------------------------------------------

def value_keys() -> list[str]:
    from book import chapters

    return [k for k, e in chapters.exercises().items() if e.spec is not None]


def cell_outputs(language: str, monkeypatch) -> list[str]:
    """Each value exercise's unanswered cell as the build writes it, in ``language``."""
    from book.face import checks
    from book.kit import i18n

    monkeypatch.setenv("BOOK_BUILD", "1")
    before = i18n.language()
    i18n.set_language(language)
    try:
        return [checks.check(key, ...)._repr_html_() for key in value_keys()]
    finally:
        i18n.set_language(before)
        monkeypatch.delenv("BOOK_BUILD")


@pytest.fixture(scope="module")
def chromium():
    with headless.browser() as launched:
        yield launched


def open_page(browser, path: Path, width: int = 1280):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    problems: list[str] = []

    def route(r):
        if r.request.url.startswith(("file://", "data:", "blob:")):
            r.continue_()
        else:
            problems.append(f"blocked {r.request.url}")
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(path.as_uri(), wait_until="domcontentloaded")  # the forms' script has run
    return page, problems


def bare_page(tmp_path, language: str, monkeypatch) -> Path:
    import figures_page

    path = tmp_path / f"exercises-{language}.html"
    figures_page.write_page(cell_outputs(language, monkeypatch), path, language=language)
    script = (ROOT / "book" / "face" / "exercises.js").as_uri()
    html = path.read_text(encoding="utf-8").replace(
        "<html>", f'<html lang="{"zh-CN" if language == "zh" else "en"}">').replace(
        # the theme's text font: the book's CJK face first (book.css), as on the built pages
        "</head>", '<title>Value exercises</title><style>body { font-family: "Book Noto Sans SC", '
        "sans-serif; }</style></head>").replace(
        "</body>", f'<script src="{script}"></script></body>')
    path.write_text(html, encoding="utf-8")
    return path


def type_and_check(form, text: str) -> str:
    """Type ``text`` into the form's field and check it (Enter in a one-line field, the button
    under a matrix box); the verdict the live region shows."""
    field = form.locator("input, textarea")
    field.fill(text)
    if field.evaluate("el => el.tagName") == "INPUT":
        field.press("Enter")
    else:
        form.locator("button[type=submit]").click()
    return form.locator(".book-exercise-verdict").inner_text().strip()


def answers_to_type(key: str) -> list[str]:
    """The reference as a reader types it (rounded, and exactly), every listed mistake, the
    first spelling of the exercise's kind and garbage."""
    from book.face import checks

    ex = checks.registered()[key]
    kind = checks.answer_spec(key).kind
    out = [typed(ex.reference(), digits=4), typed(ex.reference())]
    out += [typed(m, digits=4) for m in ex.mistakes()]
    return list(dict.fromkeys(out + SPELLINGS[kind][:1] + GARBAGE[:2]))


def answers_to_judge(key: str, probes) -> list[str]:
    """Every answer typed into the form, every spelling of the kind, all the garbage, and every
    recorded probe of the exercise typed exactly (strings also in quotes)."""
    from book.face import checks

    texts = answers_to_type(key) + SPELLINGS[checks.answer_spec(key).kind] + GARBAGE
    for answer in probes(key):
        try:
            texts.append(typed(answer))
        except TypeError:
            continue
        if isinstance(answer, str):
            texts.append(repr(answer))
    return list(dict.fromkeys(texts))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_page_verdicts_are_the_jupyter_checks(chromium, tmp_path, monkeypatch, language):
    from book.face import checks

    keys = value_keys()
    path = bare_page(tmp_path, language, monkeypatch)
    page, problems = open_page(chromium, path)
    try:
        forms = page.locator("form.book-exercise")
        assert forms.count() == len(keys), "one form per value exercise"
        typed_n, differ = 0, []
        for i, key in enumerate(keys):
            form = forms.nth(i)
            assert form.get_attribute("data-exercise") == key
            verdict = form.locator(".book-exercise-verdict")
            assert verdict.get_attribute("aria-live") == "polite"
            label = form.locator("label")
            field = form.locator("input, textarea")
            assert label.get_attribute("for") == field.get_attribute("id")
            for text in answers_to_type(key):
                shown = type_and_check(form, text)
                want = expected(key, text, language)
                typed_n += 1
                if shown != want:
                    differ.append(f"{key} {text!r}: page {shown!r}, Python {want!r}")
            # the right answer, typed last, is accepted
            shown = type_and_check(form, typed(checks.reference(key), digits=4))
            assert shown.startswith("✅"), (key, shown)
            assert form.get_attribute("data-answered") == "ok"
            box = form.locator(".book-exercise-verdict .book-check")
            assert "ok" in box.get_attribute("class").split()
        assert not differ, f"{len(differ)} of {typed_n} typed answers differ:\n" + "\n".join(
            differ[:30])
        print(f"\n{language}: {typed_n} answers typed into {len(keys)} forms, all as Python")
        assert problems == [], problems
    finally:
        page.context.close()


@pytest.mark.extended   # the full sweep (2780 answers a language): make test-all and CI
@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_answer_agrees(chromium, tmp_path, monkeypatch, language):
    """Every spelling and garbage string above, and every answer of tests/face/value_verdicts.json's
    probes typed exactly, through the page's script (window.bookExercises.judge on the form's
    own rules): Python's verdict."""
    probes = _load_recorded_probes()
    path = bare_page(tmp_path, language, monkeypatch)
    page, problems = open_page(chromium, path)
    try:
        total, differ = 0, []
        for key in value_keys():
            texts = answers_to_judge(key, probes)
            shown = page.evaluate("""([key, texts]) => {
                const form = document.querySelector(`form[data-exercise="${key}"]`);
                const spec = JSON.parse(form.querySelector('script.book-exercise-spec')
                                        .textContent);
                return texts.map(t => window.bookExercises.judge(spec, t).text);
            }""", [key, texts])
            for text, said in zip(texts, shown, strict=True):
                total += 1
                want = expected(key, text, language)
                if said != want:
                    differ.append(f"{key} {text!r}: page {said!r}, Python {want!r}")
        assert not differ, f"{len(differ)} of {total} differ:\n" + "\n".join(differ[:30])
        assert total > 2000, total
        print(f"\n{language}: {total} answers judged by the page's script as by Python")
        assert problems == [], problems
    finally:
        page.context.close()


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_forms_are_accessible_and_work_by_keyboard(chromium, tmp_path, monkeypatch,
                                                       language):
    """axe-core's WCAG 2.1 A/AA rules (and the experimental ones, as the book's pages) find
    nothing serious on the forms, before and after a verdict, at 1280 and 390 px; Tab reaches the
    field with a visible focus ring, Enter checks (Ctrl+Enter in the matrix box), Tab reaches the
    button and Space presses it."""
    from book.face import checks

    path = bare_page(tmp_path, language, monkeypatch)
    script = page_checks.axe_script()
    for width in (1280, 390):
        page, problems = open_page(chromium, path, width)
        try:
            found = page_checks.blocking(page_checks.run_axe(page, script))
            assert found == [], found
            first = page.locator("form.book-exercise").first
            key = first.get_attribute("data-exercise")
            page.keyboard.press("Tab")
            field = first.locator("input")
            assert field.evaluate("el => el === document.activeElement"), "Tab misses the field"
            ring = field.evaluate("el => getComputedStyle(el).outlineStyle + ' ' + "
                                  "getComputedStyle(el).outlineWidth")
            assert ring.startswith("solid") and not ring.endswith(" 0px"), ring
            page.keyboard.type(typed(checks.reference(key), digits=4))
            page.keyboard.press("Enter")
            verdict = first.locator(".book-exercise-verdict")
            assert verdict.inner_text().startswith("✅"), verdict.inner_text()
            page.keyboard.press("Tab")
            button = first.locator("button")
            assert button.evaluate("el => el === document.activeElement")
            field.fill("garbage")
            button.focus()
            page.keyboard.press("Space")
            assert verdict.inner_text().startswith("✍️"), verdict.inner_text()
            assert first.get_attribute("data-answered") == "ok", "unreadable changed the answer"
            mask = page.locator('form[data-exercise="ch4.causal_mask"]')
            box = mask.locator("textarea")
            box.focus()
            page.keyboard.type("[[True, False],")
            page.keyboard.press("Enter")  # a new line, not a check
            assert mask.locator(".book-exercise-verdict").inner_text() == ""
            page.keyboard.type(" [False, False]]")
            page.keyboard.press("Control+Enter")
            assert mask.locator(".book-exercise-verdict").inner_text().startswith("❌")
            found = page_checks.blocking(page_checks.run_axe(page, script))
            assert found == [], found
            assert problems == [], problems
        finally:
            page.context.close()


# ---- the built books ---------------------------------------------------------------------------

@pytest.mark.parametrize("build", ["built_book", "built_zh"])
def test_built_pages_answer_value_exercises(request, build, chromium):
    """Each chapter page of both editions holds one form per value exercise of its chapter and
    none for exercises that ask for code, and loads book-exercises.js; a right answer and a
    wrong one (its first listed mistake) typed into every form give the Jupyter check's
    verdict in the edition's language."""
    from book import chapters
    from book.face import checks

    html_root = request.getfixturevalue(build)["html"]
    language = "zh" if build == "built_zh" else "en"
    exercises = chapters.exercises()
    checked = 0
    for chapter in chapters.CHAPTERS:
        path = html_root / "chapters" / f"{chapter.page}.html"
        text = path.read_text(encoding="utf-8")
        mine = [k for k in exercises if k.split(".")[0] == chapter.key]
        values = [k for k in mine if exercises[k].spec is not None]
        found = re.findall(r'<form class="book-exercise [^"]*" data-exercise="([^"]+)"', text)
        assert sorted(found) == sorted(values), f"{chapter.page}: forms {found}, want {values}"
        assert ("book-exercises.js" in text) == bool(values), chapter.page
        if len(values) < len(mine):
            assert 'class="book-check-note"' in text, f"{chapter.page}: no note for code"
        if not values:
            continue
        page, problems = open_page(chromium, path)
        try:
            for key in values:
                form = page.locator(f'form[data-exercise="{key}"]')
                form.scroll_into_view_if_needed()
                right = typed(checks.reference(key), digits=4)
                wrong = typed(exercises[key].mistakes()[0], digits=4)
                for text in (right, wrong):
                    shown = type_and_check(form, text)
                    assert shown == expected(key, text, language), (chapter.page, key, text)
                    checked += 1
                assert form.get_attribute("data-answered") == "bad"
            assert problems == [], (chapter.page, problems)
        finally:
            page.context.close()
    assert checked == 2 * len(value_keys())
    print(f"\n{build}: {checked} answers typed into the built pages' forms")
