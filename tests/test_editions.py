"""The Chinese edition's catalogues: one per page, complete (0 untranslated, 0 fuzzy), up to
date with the English sources, and every glued number, math span, code span and link target of
an English paragraph kept in its translation."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from babel.messages.pofile import read_po

from book.site import editions

ROOT = editions.ROOT
LOCALE = ROOT / editions.LOCALE_DIR / "zh_CN" / "LC_MESSAGES"

# What must survive translation verbatim, each kind counted per message.
KEPT = {
    "glued number": re.compile(r"\{eval\}`[^`]*`"),
    "display math": re.compile(r"\$\$.+?\$\$", re.S),
    "inline math": re.compile(r"(?<![\$\\])\$(?!\$)[^$\n]+?(?<!\\)\$(?!\$)"),
    "code span": re.compile(r"(?<![`}])`[^`\n]+`(?!`)"),
    "role": re.compile(r"\{(?!eval\})[a-z:]+\}`[^`]*`"),
    "link target": re.compile(r"\]\(([^)\s]+)\)"),
}


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [entry["file"] for entry in part["chapters"]]
    return pages


def catalogue(page: str):
    path = LOCALE / f"{page}.po"
    assert path.is_file(), (f"{page} has no catalogue {path.relative_to(ROOT)}: run "
                            "`make gettext` and translate it")
    with path.open("rb") as handle:
        return read_po(handle)


def messages(page: str):
    return [m for m in catalogue(page) if m.id]


@pytest.mark.parametrize("page", toc_pages())
def test_catalogue_is_complete(page):
    entries = messages(page)
    assert entries, f"{page}.po holds no message"
    untranslated = [m.id for m in entries if not m.string]
    fuzzy = [m.id for m in entries if m.fuzzy]
    assert not untranslated and not fuzzy, (
        f"{page}.po: {len(untranslated)} untranslated, {len(fuzzy)} fuzzy of {len(entries)}; "
        f"first: {(untranslated + fuzzy)[0][:120]!r}")


def kept(text: str) -> Counter:
    found = Counter()
    rest = text
    for kind, pattern in KEPT.items():
        for match in pattern.finditer(rest):
            text = match.group(0) if kind != "link target" else match.group(1)
            if kind.endswith("math"):   # words in a formula's \text{} are translated
                text = re.sub(r"\\text\{[^{}]*\}", r"\\text{…}", text)
            found[(kind, text)] += 1
        if kind in ("glued number", "display math", "inline math"):
            rest = pattern.sub(" ", rest)   # what is inside math is not a code span
    return found


@pytest.mark.parametrize("page", toc_pages())
def test_translation_keeps_numbers_math_and_code(page):
    problems = []
    for m in messages(page):
        if not m.string:
            continue
        lost = kept(m.id) - kept(m.string)
        added = kept(m.string) - kept(m.id)
        if lost or added:
            problems.append(f"{m.id[:70]!r}: lost {dict(lost)}, added {dict(added)}")
    assert not problems, f"{page}.po:\n" + "\n".join(problems[:20])


def test_kept_spans_are_found():
    text = ('At $d_k = 64$ the variance is {eval}`book.glued("var_64:.1f\")` in `torch`, '
            'see [chapter 2](02_scaling.ipynb) and $$a = b$$.')
    spans = {kind for kind, _ in kept(text)}
    assert spans == {"glued number", "inline math", "code span", "link target", "display math"}
    assert kept(text) - kept(text.replace("$d_k = 64$", "$d_k=64$"))


def test_every_catalogue_belongs_to_a_page():
    pages = set(toc_pages())
    stray = [str(p.relative_to(LOCALE)) for p in LOCALE.rglob("*.po")
             if str(p.relative_to(LOCALE).with_suffix("")) not in pages]
    assert not stray, f"catalogues of no page (remove them): {stray}"


@pytest.mark.slow
def test_catalogues_are_up_to_date(tmp_path):
    """The messages the sources give today are the ones translated: else `make gettext`."""
    config = editions.write_config("en", execute=False)
    out = tmp_path / "gettext"
    proc = subprocess.run([str(Path(sys.executable).with_name("jupyter-book")), "build",
                           str(ROOT), "--builder", "custom", "--custom-builder", "gettext",
                           "--config", str(config), "--path-output", str(out), "-qq"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    problems = []
    for page in toc_pages():
        pot = out / "_build" / "gettext" / f"{page}.pot"
        with pot.open("rb") as handle:
            wanted = {m.id for m in read_po(handle) if m.id}
        have = {m.id for m in messages(page)}
        if wanted - have:
            problems.append(f"{page}: {len(wanted - have)} new message(s), e.g. "
                            f"{sorted(wanted - have)[0][:100]!r}")
        if have - wanted:
            problems.append(f"{page}: {len(have - wanted)} message(s) no longer in the source")
    assert not problems, "run `make gettext` and translate:\n" + "\n".join(problems)


def test_every_toc_caption_has_a_chinese_name():
    assert editions.toc_captions(), "_toc.yml has no part captions?"
    assert set(editions.toc_captions()) <= set(editions.ZH_CAPTIONS)


@pytest.mark.slow
def test_chinese_sidebar_captions(built_zh):
    for rel in sorted(_html_pages(built_zh["html"])):
        text = (built_zh["html"] / rel).read_text(encoding="utf-8")
        for english in editions.ZH_CAPTIONS:
            assert f'<span class="caption-text">{english}</span>' not in text, rel
        assert f'<span class="caption-text">{editions.ZH_CAPTIONS["Core"]}</span>' in text, rel


def test_switch_targets_and_editions():
    assert editions.switch_target("chapters/02_scaling", "en") == "zh/chapters/02_scaling.html"
    assert editions.switch_target("index", "zh") == "../index.html"
    assert editions.edition_of("zh_CN") == "zh" and editions.edition_of(None) == "en"
    with pytest.raises(ValueError, match="no edition"):
        editions.edition_of("fr")
    with pytest.raises(ValueError, match="unknown edition"):
        editions.write_config("fr")


# --- the built Chinese edition -------------------------------------------------------------

def _html_pages(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.html")
            if "_static" not in p.parts and p.name not in {"genindex.html", "search.html"}}


@pytest.mark.slow
def test_chinese_edition_builds_without_warnings(built_zh):
    assert built_zh["returncode"] == 0, built_zh["log"][-4000:]
    assert built_zh["warnings"] == 0, built_zh["log"][-4000:]
    print(f"\nChinese edition cold build: {built_zh['seconds']:.1f} s, 0 warnings, "
          f"{len(_html_pages(built_zh['html']))} pages")


@pytest.mark.slow
def test_both_editions_have_the_same_pages(built_book, built_zh):
    assert _html_pages(built_book["html"]) == _html_pages(built_zh["html"])


LANG = re.compile(r"<html[^>]*\blang=\"([^\"]+)\"")
SWITCH = re.compile(r'class="book-language-switch"><a href="([^"]+)" hreflang="([^"]+)"')
# a Chinese word glued into English prose carries lang="zh-Hans" (book/site/lang_parts.py)
PASTED = re.compile(r'<span class="pasted-text"[^>]*>([^<]*)</span>')


@pytest.mark.slow
@pytest.mark.parametrize("edition", ["en", "zh"])
def test_every_page_names_its_language_and_links_its_twin(built_book, built_zh, edition):
    """<html lang> per edition; a switch on every page to the same page of the other edition
    (relative: the Chinese edition is published under zh/ of the English one)."""
    root = (built_book if edition == "en" else built_zh)["html"]
    other = "zh-CN" if edition == "en" else "en"
    for rel in sorted(_html_pages(root)):
        text = (root / rel).read_text(encoding="utf-8")
        assert LANG.search(text).group(1) == editions.EDITIONS[edition]["html_lang"], rel
        match = SWITCH.search(text)
        assert match, f"{edition}/{rel}: no language switch"
        href, hreflang = match.groups()
        assert hreflang == other
        published = Path("/book") / ("" if edition == "en" else "zh") / rel
        target = (published.parent / href).resolve()
        expected = Path("/book") / ("zh" if edition == "en" else "") / rel
        assert target == expected.resolve(), f"{edition}/{rel}: switch goes to {href}"


@pytest.mark.slow
def test_every_glued_number_is_filled_in_both_editions(built_book, built_zh):
    """The same numbers in the same count on both pages of a chapter: none lost in a
    translated paragraph (the {glue} trap), none empty."""
    for rel in sorted(_html_pages(built_book["html"])):
        en = PASTED.findall((built_book["html"] / rel).read_text(encoding="utf-8"))
        zh = PASTED.findall((built_zh["html"] / rel).read_text(encoding="utf-8"))
        assert all(v.strip() for v in zh), f"{rel}: an empty glued number in Chinese"
        assert len(en) == len(zh), (f"{rel}: {len(en)} glued numbers in English, "
                                    f"{len(zh)} in Chinese")


DISPLAY_MATHS = re.compile(r'<div class="math notranslate nohighlight">\s*\\\[(.*?)\\\]\s*</div>',
                           re.S)


@pytest.mark.slow
def test_every_display_formula_is_drawn_in_both_editions(built_book, built_zh):
    """Each page's display formulas, in the same count in both editions, none empty and none
    the ``::`` that Sphinx's translation of a formula with words left (book/site/editions.py's
    TranslatedMaths): chapter 9's FLOP count and 9b's cache bytes read \\[::\\] in Chinese."""
    for rel in sorted(_html_pages(built_book["html"])):
        en = DISPLAY_MATHS.findall((built_book["html"] / rel).read_text(encoding="utf-8"))
        zh = DISPLAY_MATHS.findall((built_zh["html"] / rel).read_text(encoding="utf-8"))
        for edition, found in (("en", en), ("zh", zh)):
            empty = [m for m in found if m.strip() in {"", "::"}]
            assert not empty, f"{edition}/{rel}: {len(empty)} empty display formula(s)"
        assert len(en) == len(zh), (f"{rel}: {len(en)} display formulas in English, "
                                    f"{len(zh)} in Chinese")


# Times the notebooks measure in their own cells (the code is the lesson there): each edition's
# kernel measures them itself, so they may differ between the editions.
MEASURED_IN_THE_NOTEBOOK = {"02_scaling": ("t_",), "04_pytorch": ("ms_", "ratio_"),
                            "08b_real_model": ("load_s",)}


def _numbers(glue_file: Path) -> dict[str, str]:
    out = {}
    for name, record in json.loads(glue_file.read_text(encoding="utf-8")).items():
        text = record.get("data", {}).get("text/plain", "")
        try:
            float(text)
        except ValueError:
            continue
        out[name] = text
    return out


@pytest.mark.slow
def test_both_editions_show_the_same_measured_numbers(built_book, built_zh):
    """Training runs, timings and the data set are computed once per build and loaded by the
    other edition's kernels (book/kit/memo.py): every number glued into a page is the same,
    digit for digit, in both editions, timings included, but those the notebook times in its
    own cells."""
    compared = 0
    for en_file in sorted((built_book["executed"] / "chapters").glob("*.glue.json")):
        chapter = en_file.name.removesuffix(".glue.json")
        en = _numbers(en_file)
        zh = _numbers(built_zh["executed"] / "chapters" / en_file.name)
        own = MEASURED_IN_THE_NOTEBOOK.get(chapter, ())
        differ = sorted(name for name in en.keys() & zh.keys()
                        if en[name] != zh[name] and not name.startswith(own))
        assert not differ, (f"{chapter}: {len(differ)} number(s) differ between the editions, "
                            "e.g. " + ", ".join(f"{n} {en[n]} / {zh[n]}" for n in differ[:3]))
        compared += len(en.keys() & zh.keys())
    assert compared > 400, f"only {compared} glued numbers compared: were the builds read?"


@pytest.mark.slow
def test_chinese_search_index_has_chinese_words(built_zh):
    index = (built_zh["html"] / "searchindex.js").read_text(encoding="utf-8")
    index = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), index)
    assert re.search(r'"注意力"', index), "jieba did not split the Chinese prose into words"


NEW_PLOT = re.compile(r'Plotly\.newPlot\(\s*"[^"]+",\s*')
# Words a Chinese figure may show in Latin letters: notation, names of things, units.
LATIN_OK = re.compile(
    r"\b(?:softmax|PyTorch|torch|SDPA|GQA|MQA|MHA|MLA|RoPE|ALiBi|BERT|KV|QKV|LayerNorm|Pre-LN|"
    r"Post-LN|RMSNorm|NaN|inf|FlashAttention|Flash|log|exp|max|min|argmax|ms|MB|KB|GB|"
    r"[A-Za-z]|[A-Za-z]_\w+)\b", re.I)


def figure_texts(html: str) -> list[str]:
    """The texts a reader sees in each plotly figure of a page: titles, axis titles,
    annotations, legend entries, slider and menu labels."""
    decoder = json.JSONDecoder()
    texts: list[str] = []
    for match in NEW_PLOT.finditer(html):
        data, end = decoder.raw_decode(html, match.end())
        layout, _ = decoder.raw_decode(html, html.index("{", end))

        def title(obj):
            t = (obj or {}).get("title")
            return t.get("text") if isinstance(t, dict) else t

        texts.append(title(layout))
        texts += [title(v) for k, v in layout.items()
                  if re.match(r"[xy]axis\d*$|coloraxis", k) and isinstance(v, dict)]
        texts += [a.get("text") for a in layout.get("annotations", [])]
        texts += [t.get("name") for t in data if t.get("showlegend", True) is not False]
        for slider in layout.get("sliders", []):
            texts.append((slider.get("currentvalue") or {}).get("prefix"))
            texts += [s.get("label") for s in slider.get("steps", [])]
        for menu in layout.get("updatemenus", []):
            texts += [b.get("label") for b in menu.get("buttons", [])]
    return [re.sub(r"<[^>]+>", " ", t) for t in texts if isinstance(t, str) and t.strip()]


def english_left(text: str) -> str | None:
    """An English phrase left in a Chinese text (two Latin words that are not notation)."""
    # chapter 8b's model reads English: its input sentences (quoted “…”) and its English
    # tokens glossed in Chinese ("the cat（猫）") are data, not the book's words
    rest = re.sub(r"“[^”]*”|[A-Za-z][A-Za-z ]*（[^）]*）", " ", text)
    rest = LATIN_OK.sub(" ", rest)
    match = re.search(r"[A-Za-z]{3,}[\s,-]+[A-Za-z]{2,}", rest)
    return match.group(0) if match else None


def test_english_left_finds_phrases_not_notation():
    assert english_left("Head 2 attends here") == "attends here"
    assert english_left("第 2 个头：softmax 之后") is None
    assert english_left("d_k = 64 时的 QKV 分数") is None
    assert english_left("raw scores") == "raw scores"
    assert english_left("“I ate an apple for lunch.”：9 个词元") is None   # a model's input
    assert english_left("the cat（猫）") is None


@pytest.mark.slow
def test_chinese_figures_speak_chinese(built_zh):
    """No English phrase in any figure text of the Chinese edition (notation excepted)."""
    left = {}
    for rel in sorted(_html_pages(built_zh["html"])):
        for text in figure_texts((built_zh["html"] / rel).read_text(encoding="utf-8")):
            phrase = english_left(text)
            if phrase:
                left.setdefault(rel, []).append(text[:80])
    assert not left, "English in Chinese figures (add it to book/strings/*.toml):\n" + "\n".join(
        f"{rel}: {sorted(set(texts))[:8]}" for rel, texts in left.items())


@pytest.mark.parametrize("page", toc_pages())
def test_translations_parse_as_the_same_kind_of_text(page):
    """Sphinx parses each msgstr as MyST on its own: one that starts with "2. " or "- " becomes
    a list (and Sphinx keeps the English title), so such a start must be escaped ("2\\. ")."""
    bad = [m.string[:60] for m in messages(page)
           if m.string and re.match(r"(\d+[.)]|[-*+])\s", m.string)]
    assert not bad, f"{page}.po: translations that would parse as a list: {bad}"
