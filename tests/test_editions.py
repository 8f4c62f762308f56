"""The Chinese edition's catalogues: one per page, complete (0 untranslated, 0 fuzzy), up to
date with the English sources, and every glued number, math span, code span and link target of
an English paragraph kept in its translation."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from babel.messages.pofile import read_po

from book import editions

ROOT = Path(editions.__file__).resolve().parent.parent
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
            found[(kind, match.group(0) if kind != "link target" else match.group(1))] += 1
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


def test_switch_targets_and_editions():
    assert editions.switch_target("chapters/02_scaling", "en") == "zh/chapters/02_scaling.html"
    assert editions.switch_target("index", "zh") == "../index.html"
    assert editions.edition_of("zh_CN") == "zh" and editions.edition_of(None) == "en"
    with pytest.raises(ValueError, match="no edition"):
        editions.edition_of("fr")
    with pytest.raises(ValueError, match="unknown edition"):
        editions.write_config("fr")
