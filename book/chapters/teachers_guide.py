"""The teacher's guide page (``chapters/teachers_guide.md``): a two-week unit drawn from data.

What is data here, written by hand:

* :data:`OUTCOME_MAP`: for every chapter page, one entry per learning outcome (the bullets under
  "After this chapter you will be able to" in the notebook's opening cell, in order) naming what
  practises it: exercise keys (``"ch2.variance"``, :mod:`book.face.checks`), questions
  (``"discuss:ch2.why_sqrt"``, the guide's own discussion questions; concept questions are named
  the same way when a chapter has them) and assignments (``"assignment:02_mha_torch"``, the
  instructor notebooks in ``assignments/``);
* :data:`PLAN`: the sessions of the unit, each a list of (chapter page, section heading, minutes)
  with what to assign before and after and which questions to discuss;
* the texts (discussion questions, notes on misconceptions, the plan's words) in
  ``book/strings/guide.toml``, English and Chinese.

What is read, never copied: the outcomes and section headings from the notebooks, their Chinese
from the chapters' catalogues (``locale/zh_CN/LC_MESSAGES/chapters/*.po``), the exercises from
the notebooks' ``check("…")`` calls, the fact checks (``:::{admonition} Fact check: …``) from the
notebooks, the assignments from ``assignments/*.ipynb``. An assignment named in the map that is
not in ``assignments/`` yet (one of :data:`EXPECTED_ASSIGNMENTS`) is left out of the table until
it exists, so new assignments, questions and fact checks appear without editing the guide.

The page asks for each part with ``book.site.sphinxext``'s ``{book-markdown}`` directive
(``unit-plan``, ``unit-questions``, ``unit-outcomes``, ``unit-misconceptions``); this module,
a Sphinx extension listed in _config.yml, draws them (:data:`GENERATED`) in the edition's
language. :func:`problems` lists what the tests hold the data to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from book.kit import i18n

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_DIR = ROOT / "chapters"
ASSIGNMENT_DIR = ROOT / "assignments"
CATALOGUES = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "chapters"
OUTCOMES_LEAD = "**After this chapter you will be able to**"

# Assignments announced by the classroom plan (issue 24) that may not be in assignments/ yet:
# named in the map, shown once their instructor notebook exists.
EXPECTED_ASSIGNMENTS = ("05_scaling", "06_stability", "07_masks")

EX, Q, A = "", "discuss:", "assignment:"

# page -> one tuple per outcome (the notebook's bullets, in order): what practises it
OUTCOME_MAP: dict[str, tuple[tuple[str, ...], ...]] = {
    "01_intuition": (
        ("ch1.softmax_row", "ch1.pair_count", "ch1.my_softmax", A + "01_attention_numpy"),
        (Q + "ch1.apple",),
        (Q + "ch1.qkv",),
        ("ch1.heads_needed", Q + "ch1.heads"),
    ),
    "02_scaling": (
        ("ch2.variance", A + "05_scaling"),
        ("ch2.uniform_entropy", "ch2.scaled_scores", A + "01_attention_numpy",
         A + "05_scaling"),
        ("ch2.divisor", Q + "ch2.why_sqrt"),
    ),
    "03_walkthrough": (
        ("ch3.softmax_row", "ch3.concat_shape", "ch3.w_o_size"),
        (Q + "ch3.own_weights",),
        ("ch3.layer_norm", Q + "ch3.batchnorm"),
    ),
    "04_pytorch": (
        ("ch4.split_heads", "ch4.scores_shape", A + "02_mha_torch"),
        (Q + "ch4.batched",),
        ("ch4.causal_mask", "ch4.torch_attn_mask", A + "01_attention_numpy", A + "07_masks"),
        (Q + "ch4.dropout",),
        (A + "02_mha_torch", Q + "ch4.rounding"),
    ),
    "04b_toy_model": (
        ("ch4b.labels",),
        ("ch4b.ff_params",),
        ("ch4b.chance",),
    ),
    "05_stability": (
        ("ch5.chance_loss", Q + "ch5.symptom"),
        ("ch5.pre_ln", A + "06_stability"),
        (Q + "ch5.norms", A + "06_stability"),
        ("ch5.large_rms", "ch5.xavier_std"),
        (Q + "ch5.ln_not_repair",),
    ),
    "06_heads": (
        ("ch6.max_heads", "ch6.parameters"),
        (Q + "ch6.noise",),
        ("ch6.js",),
        (Q + "ch6.choose",),
    ),
    "07_mask_traps": (
        ("ch7.key_padding_mask", A + "07_masks"),
        (Q + "ch7.flipped",),
        ("ch7.masked_softmax", A + "07_masks"),
        ("ch7.left_pad_rows", A + "07_masks"),
    ),
    "08_seeing_attention": (
        ("ch8.best_head",),
        ("ch8.modifier_pairs",),
        (Q + "ch8.debug",),
        ("ch8.row_entropy",),
    ),
    "08b_real_model": (
        (Q + "ch8b.same_model",),
        ("ch8b.word_map",),
        ("ch8b.broad_layer", "ch8b.previous_head"),
        (Q + "ch8b.sink",),
    ),
    "09_long_context": (
        (Q + "ch9.exponent",),
        ("ch9.crossover",),
        ("ch9.keys_per_query", "ch9.window_mask"),
    ),
    "09b_serving": (
        ("ch9b.cache_bytes", "ch9b.step_positions", "ch9b.cache_vs_weights",
         A + "03_kv_cache"),
        (Q + "ch9b.benchmark",),
    ),
    "10_beyond": (
        ("ch10.dilated_keys", "ch10.dilated_reach", "ch10.linear_state", "ch10.dilated_mask"),
        (Q + "ch10.costs",),
        (Q + "ch10.plain_wins",),
    ),
    "11_modern": (
        (Q + "ch11.order",),
        ("ch11.rope_offset",),
        ("ch11.kv_head", "ch11.kv_bytes", A + "04_gqa"),
        ("ch11.online_merge",),
    ),
}


@dataclass(frozen=True)
class Session:
    """One 90-minute session: ``parts`` are (chapter page, section heading, minutes); ``before``
    and ``after`` are string ids of guide.toml (``before`` may name a section to read first,
    ``read``: (page, heading)); ``discuss`` questions (``"discuss:…"``); ``assign`` what is
    handed out at the end (exercise keys and ``"assignment:…"``)."""

    week: int
    parts: tuple[tuple[str, str, int], ...]
    before: str
    after: str
    discuss: tuple[str, ...]
    assign: tuple[str, ...]
    read: tuple[str, str] | None = None


MINUTES = 90
PLAN: tuple[Session, ...] = (
    Session(1, (
        ("01_intuition", "Every token scores every token", 20),
        ("01_intuition", "Why a fixed word vector is not enough", 15),
        ("01_intuition", "Queries, keys and values: the diner, the menu tag, the dish", 15),
        ("01_intuition", "Why several heads", 20),
        ("01_intuition", "Exercises", 20),
    ), "before_1", "after_1", (Q + "ch1.apple", Q + "ch1.qkv"),
        ("ch1.my_softmax", "ch1.heads_needed")),
    Session(1, (
        ("02_scaling", "The variance of a dot product grows with d_k", 15),
        ("02_scaling", "Large scores saturate softmax", 15),
        ("02_scaling", "A saturated softmax passes back almost no gradient", 20),
        ("02_scaling", "Why √d_k and not d_k", 20),
        ("02_scaling", "Exercises", 20),
    ), "before_2", "after_2", (Q + "ch2.why_sqrt",),
        (A + "01_attention_numpy", A + "05_scaling"),
        read=("02_scaling", "Large scores saturate softmax")),
    Session(1, (
        ("03_walkthrough", "Head 1, step by step", 25),
        ("03_walkthrough", "Head 2, and putting the heads together", 15),
        ("03_walkthrough", "Why every head needs its own weights", 15),
        ("03_walkthrough", "LayerNorm, BatchNorm, and the wrong axis", 15),
        ("03_walkthrough", "Exercises", 20),
    ), "before_3", "after_3", (Q + "ch3.own_weights", Q + "ch3.batchnorm"),
        ("ch3.layer_norm", "ch3.w_o_size"),
        read=("03_walkthrough", "The set-up")),
    Session(2, (
        ("04_pytorch", "Follow the shapes", 20),
        ("04_pytorch", "A loop over the heads, or one batched product?", 10),
        ("04_pytorch", "Masks: who may attend to whom", 20),
        ("04_pytorch", "Four conventions, checked by running them", 15),
        ("04_pytorch", "Dropout: where it goes", 10),
        ("04_pytorch", "Exercises", 15),
    ), "before_4", "after_4", (Q + "ch4.batched", Q + "ch4.dropout"),
        (A + "02_mha_torch",),
        read=("04_pytorch", "One class, four matrices")),
    Session(2, (
        ("05_stability", "The symptom: Post-LN, four layers, a flat loss", 15),
        ("05_stability", "The fix that works here: move the LayerNorm (Pre-LN)", 15),
        ("05_stability", "Inside the stuck model: norms per layer", 15),
        ("05_stability", "The article's diagnosis: weights that start too large", 10),
        ("07_mask_traps", "What a fully masked row becomes", 15),
        ("07_mask_traps", "True = may attend, or True = blocked?", 10),
        ("07_mask_traps", "Exercises", 10),
    ), "before_5", "after_5", (Q + "ch5.ln_not_repair", Q + "ch7.flipped"),
        ("ch5.pre_ln", "ch7.masked_softmax", A + "06_stability", A + "07_masks"),
        read=("05_stability", "The story, and the plan")),
    Session(2, (
        ("06_heads", "What the head count changes, and what it does not", 15),
        ("06_heads", "What is one head worth? Remove it", 10),
        ("08_seeing_attention", "The head view: one head, one order", 10),
        ("08_seeing_attention", "Debugging with the maps", 15),
        ("11_modern", "Attention cannot see order", 10),
        ("11_modern", "2. Multi-query and grouped-query attention", 20),
        ("11_modern", "Exercises", 10),
    ), "before_6", "after_6", (Q + "ch6.choose", Q + "ch8.debug", Q + "ch11.order"),
        (A + "04_gqa", A + "03_kv_cache"),
        read=("06_heads", "The claim")),
)
# chapters left to the students who want more (read at home, or projects)
FURTHER = ("08b_real_model", "09_long_context", "09b_serving", "10_beyond")


# --- reading the notebooks and the catalogues -------------------------------------------------

@cache
def _cells(page: str) -> tuple[dict, ...]:
    path = CHAPTER_DIR / f"{page}.ipynb"
    if not path.is_file():
        raise ValueError(f"no chapter notebook {path}: OUTCOME_MAP and PLAN name the pages of "
                         "book.chapters.CHAPTERS")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return tuple({"type": c["cell_type"], "source": "".join(c["source"])} for c in cells)


def _markdown(page: str) -> list[str]:
    return [c["source"] for c in _cells(page) if c["type"] == "markdown"]


def title(page: str) -> str:
    """The chapter's title: the notebook's first ``# `` heading."""
    for text in _markdown(page):
        for line in text.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    raise ValueError(f"chapters/{page}.ipynb has no '# ' title")


def outcomes(page: str) -> list[str]:
    """The bullets under "After this chapter you will be able to", each joined to one line
    (as the gettext catalogues store them)."""
    for text in _markdown(page)[:3]:
        lines = text.splitlines()
        if OUTCOMES_LEAD not in lines:
            continue
        items: list[str] = []
        for line in lines[lines.index(OUTCOMES_LEAD) + 1:]:
            if line.startswith("- "):
                items.append(line[2:].strip())
            elif items and line.startswith("  ") and line.strip():
                items[-1] += " " + line.strip()
            elif items:
                break
        return items
    raise ValueError(f"chapters/{page}.ipynb has no {OUTCOMES_LEAD!r} list in its first cells")


def sections(page: str) -> list[str]:
    """Every ``##`` and ``###`` heading of the notebook, in order."""
    return [line.lstrip("#").strip() for text in _markdown(page)
            for line in text.splitlines() if re.match(r"#{2,3} ", line)]


def exercises(page: str) -> list[str]:
    """The exercise keys the notebook checks (``check("ch2.variance", …)``), in order."""
    found: list[str] = []
    for cell in _cells(page):
        if cell["type"] == "code":
            for key in re.findall(r"""check\(\s*["']([\w.]+)["']""", cell["source"]):
                if key not in found:
                    found.append(key)
    return found


FACT_CHECK = re.compile(r"^:::\{admonition\} (Fact check: .+)$", re.M)


def fact_checks(page: str) -> list[tuple[str, str]]:
    """(section heading, admonition title) of every "Fact check" in the notebook."""
    found, section = [], title(page)
    for text in _markdown(page):
        for line in text.splitlines():
            if re.match(r"#{2,3} ", line):
                section = line.lstrip("#").strip()
            elif match := FACT_CHECK.match(line):
                found.append((section, match.group(1).strip()))
    return found


def assignments() -> list[str]:
    """The instructor notebooks' stems in ``assignments/``."""
    return sorted(p.stem for p in ASSIGNMENT_DIR.glob("*.ipynb"))


@cache
def _catalogue(page: str) -> dict[str, str]:
    from babel.messages.pofile import read_po

    path = CATALOGUES / f"{page}.po"
    if not path.is_file():
        return {}
    with path.open("rb") as handle:
        catalog = read_po(handle)
    return {m.id: m.string for m in catalog if m.id and isinstance(m.id, str) and m.string
            and not m.fuzzy}


def translated(page: str, text: str, language: str) -> str:
    """``text`` (a message of the page: a title, heading or outcome) in ``language``: the
    Chinese from the page's catalogue, the English when it has none yet."""
    i18n.check_language(language)
    if language == "en":
        return text
    return _catalogue(page).get(text, text)


def _t(msg_id: str, language: str, **values) -> str:
    text = i18n.table()[f"guide.{msg_id}"][i18n.check_language(language)]
    return text.format(**values) if values else text


# --- checking the data ------------------------------------------------------------------------

def _known_keys() -> set[str]:
    from book import chapters

    return set(chapters.exercises())


def _known(item: str, keys: set[str]) -> bool:
    if item.startswith(Q):
        return f"guide.q_{item[len(Q):].replace('.', '_')}" in i18n.table()
    if item.startswith(A):
        return item[len(A):] in assignments() or item[len(A):] in EXPECTED_ASSIGNMENTS
    return item in keys


def _present(item: str) -> bool:
    """Whether ``item`` can be handed out now (an expected assignment may not exist yet)."""
    return not item.startswith(A) or item[len(A):] in assignments()


def problems() -> list[str]:
    """What is wrong with the map and the plan (empty when nothing is): an outcome with nothing
    that practises it, a name that does not exist, a section the plan names that the chapter
    does not have, a session over its minutes."""
    from book.chapters import CHAPTERS

    keys, found = _known_keys(), []
    pages = [c.page for c in CHAPTERS]
    if set(OUTCOME_MAP) != set(pages):
        found.append(f"OUTCOME_MAP covers {sorted(OUTCOME_MAP)}, the chapters are {pages}")
    for page in pages:
        listed = outcomes(page)
        mapped = OUTCOME_MAP.get(page, ())
        if len(mapped) != len(listed):
            found.append(f"{page}: {len(listed)} outcomes in the notebook, {len(mapped)} in "
                         "OUTCOME_MAP (one entry per outcome, in order)")
        for number, (text, items) in enumerate(zip(listed, mapped, strict=False), start=1):
            for item in items:
                if not _known(item, keys):
                    found.append(f"{page} outcome {number}: {item!r} does not exist")
            if not [i for i in items if _known(i, keys) and _present(i)]:
                found.append(f"{page} outcome {number} ({text[:50]}…) maps to no exercise, "
                             "question or assignment")
    for number, session in enumerate(PLAN, start=1):
        if sum(minutes for *_, minutes in session.parts) > MINUTES:
            found.append(f"session {number} plans more than {MINUTES} minutes")
        for page, section, _ in session.parts:
            if page not in pages:
                found.append(f"session {number}: no chapter {page!r}")
            elif section not in sections(page):
                found.append(f"session {number}: chapters/{page}.ipynb has no section "
                             f"{section!r}")
        for item in (*session.discuss, *session.assign):
            if not _known(item, keys):
                found.append(f"session {number}: {item!r} does not exist")
        for msg in (session.before, session.after):
            if f"guide.{msg}" not in i18n.table():
                found.append(f"session {number}: no string guide.{msg}")
        if session.read and (session.read[0] not in pages
                             or session.read[1] not in sections(session.read[0])):
            found.append(f"session {number}: no section {session.read!r} to read before")
    for page in FURTHER:
        if page not in pages:
            found.append(f"FURTHER names {page!r}, not a chapter")
    return found


def coverage() -> dict:
    """Counts for the guide and the report: outcomes, how many have an exercise, a question,
    an assignment (present now), and the chapter exercises no outcome names."""
    keys = _known_keys()
    out = {"outcomes": 0, "with_exercise": 0, "with_question": 0, "with_assignment": 0,
           "covered": 0, "unmapped_exercises": []}
    for page, mapped in OUTCOME_MAP.items():
        for items in mapped:
            items = [i for i in items if _known(i, keys) and _present(i)]
            out["outcomes"] += 1
            out["with_exercise"] += any(not i.startswith((Q, A)) for i in items)
            out["with_question"] += any(i.startswith(Q) for i in items)
            out["with_assignment"] += any(i.startswith(A) for i in items)
            out["covered"] += bool(items)
        named = {i for items in mapped for i in items}
        out["unmapped_exercises"] += [k for k in exercises(page) if k not in named]
    return out


# --- rendering (MyST markdown, for the {book-markdown} directive) -----------------------------

def _chapter_link(page: str, language: str) -> str:
    # the {doc} role with its text spelt out: a markdown link [text](page.ipynb) parsed inside
    # the directive lost its text when MyST resolved it (an empty, unnamed link)
    text = plain_math(translated(page, title(page), language)).replace("\\.", ".")
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


def outcome_table(language: str = "en") -> str:
    """The table from every chapter's outcomes to what practises them (present items only):
    two columns, so that it fits a phone's width."""
    from book.chapters import CHAPTERS

    keys, sep = _known_keys(), _t("sep", language)
    rows = [f"| {_t('col_outcome', language)} | {_t('col_practice', language)} |", "|---|---|"]
    for chapter in CHAPTERS:
        page = chapter.page
        rows.append(f"| **{_chapter_link(page, language)}** | |")
        mapped = OUTCOME_MAP.get(page, ())
        named = {i for items in mapped for i in items}
        for text, items in zip(outcomes(page), mapped, strict=False):
            items = [i for i in items if _known(i, keys) and _present(i)]
            groups = [sep.join(f"`{i}`" for i in items if not i.startswith((Q, A))),
                      sep.join(f"Q{_question_number(i)}" for i in items if i.startswith(Q)),
                      sep.join(_item(i, language) for i in items if i.startswith(A))]
            rows.append(f"| {_cell(translated(page, text, language))} | "
                        + " · ".join(g for g in groups if g) + " |")
        extra = [f"`{k}`" for k in exercises(page) if k not in named]
        if extra:
            rows.append(f"| *{_t('other_exercises', language)}* | {sep.join(extra)} |")
        asked = concept_questions(chapter.strings)
        if asked:
            rows.append(f"| *{_t('concept_questions', language)}* | "
                        f"{sep.join(f'`{k}`' for k in asked)} |")
    return "\n".join(rows) + "\n"


def concept_questions(strings: str) -> list[str]:
    """The concept questions a chapter page asks (book/face/questions.py), by key: they check
    the chapter's outcomes with no kernel, in the page itself."""
    from book import chapters
    from book.face import questions

    chapters.modules()   # importing a chapter module registers its questions
    return sorted(k for k in questions.registered() if k.split(".", 1)[0] == strings)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def questions() -> list[str]:
    """Every question the map and the plan name, numbered in this order in the guide."""
    seen: list[str] = []
    for mapped in OUTCOME_MAP.values():
        for items in mapped:
            seen += [i for i in items if i.startswith(Q) and i not in seen]
    for session in PLAN:
        seen += [i for i in session.discuss if i not in seen]
    return seen


def _question_number(item: str) -> int:
    return questions().index(item) + 1


def question_list(language: str = "en") -> str:
    """The discussion questions, numbered as the table and the plan cite them."""
    return "\n".join(f"{n}. {_question(item, language)}"
                     + _t("paren", language, text=_chapter_of(item, language))
                     for n, item in enumerate(questions(), start=1)) + "\n"


def _chapter_of(item: str, language: str) -> str:
    for page, mapped in OUTCOME_MAP.items():
        if any(item in items for items in mapped):
            return _chapter_link(page, language)
    for session in PLAN:
        if item in session.discuss:
            return _chapter_link(session.parts[0][0], language)
    raise ValueError(f"{item!r} is in no chapter's map")


def plan_markdown(language: str = "en") -> str:
    """The sessions: what to prepare, what to do in class (chapter, section, minutes), what to
    discuss and what to hand out."""
    sep = _t("sep", language)
    out = []
    for number, session in enumerate(PLAN, start=1):
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
        handed = sep.join(_item(i, language) for i in session.assign if _present(i))
        out.append("- " + _t("after", language, text=_t(session.after, language),
                             items=handed))
        out.append("")
    further = sep.join(_chapter_link(p, language) for p in FURTHER)
    out.append(_t("further", language, chapters=further))
    return "\n".join(out) + "\n"


def misconceptions(language: str = "en") -> str:
    """Per chapter: the guide's note on what students bring, and the chapter's fact checks
    (the claims the book tests, with the section that tests them)."""
    from book.chapters import CHAPTERS

    out = []
    for chapter in CHAPTERS:
        page = chapter.page
        note_id = f"guide.note_{chapter.page.split('_')[0]}"
        note = i18n.table()[note_id][language] if note_id in i18n.table() else ""
        checks_ = fact_checks(page)
        if not note and not checks_:
            continue
        out.append(f"- **{_chapter_link(page, language)}** {note}")
        for section, claim in checks_:
            where = _t("section", language, name=translated(page, section, language))
            out.append(f"  - {translated(page, claim, language)}"
                       + _t("paren", language, text=where))
    return "\n".join(out) + "\n"


def files(language: str = "en") -> list[Path]:
    """The files the rendered parts read (so the page is rebuilt when one changes)."""
    from book.chapters import CHAPTERS

    found = [CHAPTER_DIR / f"{c.page}.ipynb" for c in CHAPTERS]
    found += [Path(__file__), i18n.STRINGS_DIR / "guide.toml"]
    if language != "en":
        found += [CATALOGUES / f"{c.page}.po" for c in CHAPTERS]
    return [p for p in found if p.is_file()]


# --- the Sphinx side: the page's {book-markdown} directives ask, this answers --------------------

def _folded(func, title_key: str):
    def draw(language: str = "en") -> str:
        return folded(_t(title_key, language), plain_math(func(language)))

    return draw


GENERATED = {"unit-plan": lambda language="en": plain_math(plan_markdown(language)),
             "unit-questions": _folded(question_list, "fold_questions"),
             "unit-outcomes": _folded(outcome_table, "fold_outcomes"),
             "unit-misconceptions": _folded(misconceptions, "fold_misconceptions")}


def _markdown_for(app, name: str, language: str):
    func = GENERATED.get(name)
    return None if func is None else (func(language), files(language))


def setup(app):
    app.setup_extension("book.site.sphinxext")  # registers the book-markdown event
    app.connect("book-markdown", _markdown_for)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
