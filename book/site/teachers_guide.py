"""The teacher's guide page (``chapters/teachers_guide.md``): its plan and tables, drawn from data.

The page asks for each part with ``book.site.sphinxext``'s ``{book-markdown}`` directive
(``unit-plan``, ``unit-questions``, ``unit-outcomes``, ``unit-misconceptions``); this module, a
Sphinx extension listed in _config.yml, draws them (:data:`GENERATED`) as MyST markdown in the
edition's language from the plan (book/site/teachers_plan.toml, read by
:mod:`book.site.teachers_plan`), the notebooks, their catalogues and the string table
(``book/strings/guide.toml``).

The tables name the chapters' exercises and concept questions, which the chapter list
``book.chapters`` knows (``CHAPTERS``, ``exercises()``, ``concept_questions()``). The Sphinx
side stands below the chapters and never imports them: every function here takes that module as
``chapters``, and the build hands over the one it loaded as an extension (:func:`setup`).
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from book.kit import i18n
from book.site import teachers_plan as plan
from book.site.teachers_plan import A, Q, translated

CHAPTERS_EXTENSION = "book.chapters"   # _config.yml's extension that holds the chapter list


def _t(msg_id: str, language: str, **values) -> str:
    text = i18n.table()[f"guide.{msg_id}"][i18n.check_language(language)]
    return text.format(**values) if values else text


def _chapter_link(page: str, language: str) -> str:
    # the {doc} role with its text spelt out: a markdown link [text](page.ipynb) parsed inside
    # the directive lost its text when MyST resolved it (an empty, unnamed link)
    text = plain_math(translated(page, plan.title(page), language)).replace("\\.", ".")
    text = text.replace("<", "‹").replace("`", "'")
    return f"{{doc}}`{text} <{page}>`"


_TEX = ((r"\sqrt", "√"), (r"\times", "×"), (r"\cdot", "·"), (r"\to", "→"),
        (r"\le", "≤"), (r"\ge", "≥"), (r"\text", ""), (r"\mathrm", ""), ("{", ""), ("}", ""),
        ("\\", ""))


def plain_math(text: str) -> str:
    """``text`` with its inline math ``$…$`` written as plain characters (``$\\sqrt{d_k}$`` →
    ``√d_k``): the guide's tables quote the chapters' outcomes, and a page without figures
    should not load MathJax (its weight: page_checks.page_weight_problems) for a handful of
    symbols."""
    def plain(match: re.Match) -> str:
        tex = match.group(1)
        for old, new in _TEX:
            tex = tex.replace(old, new)
        return tex.replace("  ", " ").strip()

    return re.sub(r"(?<![\\$])\$([^$\n]+?)\$", plain, text)


def folded(title: str, body: str) -> str:
    """``body`` (MyST markdown) in a dropdown that opens on a click: the guide's long tables
    stay out of the way of the plan (a page stays within its screens)."""
    return f":::::{{dropdown}} {title}\n{body}\n:::::\n"


def _question(item: str, language: str) -> str:
    return _t("q_" + item[len(Q):].replace(".", "_"), language)


def _item(item: str, language: str) -> str:
    if item.startswith(Q):
        return _question(item, language)
    if item.startswith(A):
        return _t("assignment", language, name=item[len(A):])
    return f"`{item}`"


def _question_number(item: str) -> int:
    return plan.questions().index(item) + 1


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def outcome_table(chapters: ModuleType, language: str = "en") -> str:
    """The table from every chapter's outcomes to what practises them (present items only):
    two columns, so that it fits a phone's width."""
    keys, sep = set(chapters.exercises()), _t("sep", language)
    rows = [f"| {_t('col_outcome', language)} | {_t('col_practice', language)} |", "|---|---|"]
    for chapter in chapters.CHAPTERS:
        page = chapter.page
        rows.append(f"| **{_chapter_link(page, language)}** | |")
        mapped = plan.plan().outcomes.get(page, ())
        named = {i for items in mapped for i in items}
        for text, items in zip(plan.outcomes(page), mapped, strict=False):
            items = [i for i in items if plan.known(i, keys) and plan.present(i)]
            groups = [sep.join(f"`{i}`" for i in items if not i.startswith((Q, A))),
                      sep.join(f"Q{_question_number(i)}" for i in items if i.startswith(Q)),
                      sep.join(_item(i, language) for i in items if i.startswith(A))]
            rows.append(f"| {_cell(translated(page, text, language))} | "
                        + " · ".join(g for g in groups if g) + " |")
        extra = [f"`{k}`" for k in plan.exercises(page) if k not in named]
        if extra:
            rows.append(f"| *{_t('other_exercises', language)}* | {sep.join(extra)} |")
        asked = chapters.concept_questions(chapter.strings)
        if asked:
            rows.append(f"| *{_t('concept_questions', language)}* | "
                        f"{sep.join(f'`{k}`' for k in asked)} |")
    return "\n".join(rows) + "\n"


def question_list(chapters: ModuleType, language: str = "en") -> str:
    """The discussion questions, numbered as the table and the plan cite them."""
    return "\n".join(f"{n}. {_question(item, language)}"
                     + _t("paren", language, text=_chapter_of(item, language))
                     for n, item in enumerate(plan.questions(), start=1)) + "\n"


def _chapter_of(item: str, language: str) -> str:
    for page, mapped in plan.plan().outcomes.items():
        if any(item in items for items in mapped):
            return _chapter_link(page, language)
    for session in plan.plan().sessions:
        if item in session.discuss:
            return _chapter_link(session.parts[0][0], language)
    raise ValueError(f"{item!r} is in no chapter's outcomes ({plan.plan().where})")


def plan_markdown(chapters: ModuleType, language: str = "en") -> str:
    """The sessions: what to prepare, what to do in class (chapter, section, minutes), what to
    discuss and what to hand out."""
    sep = _t("sep", language)
    out = []
    for number, session in enumerate(plan.plan().sessions, start=1):
        used = sum(minutes for *_, minutes in session.parts)
        out.append(f"**{_t('session', language, number=number, week=session.week)}**\n")
        read = {}
        if session.read:
            page, section = session.read
            read["section"] = _t("section", language, name=translated(page, section, language))
        out.append("- " + _t("before", language, text=_t(session.before, language, **read)))
        out.append("- " + _t("in_class", language, minutes=used))
        for page, section, minutes in session.parts:
            out.append("  - " + _t("part", language, minutes=minutes,
                                   chapter=_chapter_link(page, language),
                                   section=_t("section", language,
                                              name=translated(page, section, language))))
        out.append("- " + _t("discuss", language, questions=sep.join(
            f"Q{_question_number(i)}" for i in session.discuss)))
        handed = sep.join(_item(i, language) for i in session.assign if plan.present(i))
        out.append("- " + _t("after", language, text=_t(session.after, language),
                             items=handed))
        out.append("")
    further = sep.join(_chapter_link(p, language) for p in plan.plan().further)
    out.append(_t("further", language, chapters=further))
    return "\n".join(out) + "\n"


def misconceptions(chapters: ModuleType, language: str = "en") -> str:
    """Per chapter: the guide's note on what students bring, and the chapter's fact checks
    (the claims the book tests, with the section that tests them)."""
    out = []
    for chapter in chapters.CHAPTERS:
        page = chapter.page
        note_id = f"guide.note_{chapter.page.split('_')[0]}"
        note = i18n.table()[note_id][language] if note_id in i18n.table() else ""
        checks_ = plan.fact_checks(page)
        if not note and not checks_:
            continue
        out.append(f"- **{_chapter_link(page, language)}** {note}")
        for section, claim in checks_:
            where = _t("section", language, name=translated(page, section, language))
            out.append(f"  - {translated(page, claim, language)}"
                       + _t("paren", language, text=where))
    return "\n".join(out) + "\n"


def files(chapters: ModuleType, language: str = "en") -> list[Path]:
    """The files the rendered parts read (so the page is rebuilt when one changes)."""
    found = [plan.CHAPTER_DIR / f"{c.page}.ipynb" for c in chapters.CHAPTERS]
    found += [Path(__file__), Path(plan.__file__), plan.PLAN_FILE,
              i18n.STRINGS_DIR / "guide.toml"]
    if language != "en":
        found += [plan.CATALOGUES / f"{c.page}.po" for c in chapters.CHAPTERS]
    return [p for p in found if p.is_file()]


# --- the Sphinx side: the page's {book-markdown} directives ask, this answers --------------------

def _folded(func, title_key: str):
    def draw(chapters: ModuleType, language: str = "en") -> str:
        return folded(_t(title_key, language), plain_math(func(chapters, language)))

    return draw


GENERATED = {"unit-plan": lambda chapters, language="en": plain_math(
                 plan_markdown(chapters, language)),
             "unit-questions": _folded(question_list, "fold_questions"),
             "unit-outcomes": _folded(outcome_table, "fold_outcomes"),
             "unit-misconceptions": _folded(misconceptions, "fold_misconceptions")}


def _markdown_for(app, name: str, language: str):
    func = GENERATED.get(name)
    if func is None:
        return None
    chapters = app.extensions[CHAPTERS_EXTENSION].module
    return func(chapters, language), files(chapters, language)


def setup(app):
    app.setup_extension("book.site.sphinxext")  # registers the book-markdown event
    # the chapter list, loaded by name as the extension it is (the landing page's path, the
    # chapters' banners): the Sphinx side never imports the floors above it
    app.setup_extension(CHAPTERS_EXTENSION)
    app.connect("book-markdown", _markdown_for)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
