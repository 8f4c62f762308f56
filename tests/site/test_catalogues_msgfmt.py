"""Every gettext catalogue under locale/ passes GNU ``msgfmt --check`` (issue 48): the chapters'
(sphinx-intl, ``make gettext``), the code comments' (locale/zh_CN/code) and the assignments'
(locale/zh_CN/assignments; both written by ``book.site.zh_notebooks.write_catalogue``).

``--check`` refuses a catalogue without a header entry (no charset: "PO file header missing or
invalid"), a msgid defined twice (an obsolete ``#~`` twin of a live message counts), and a
translation whose placeholders differ from its msgid's in a message flagged ``python-format``
or ``python-brace-format`` (babel sets those flags on any text with a % or a {...}, the book's
MyST roles and percentages included: the writers remove them, zh_notebooks.FORMAT_FLAGS).
Warnings (a header field left at its default value) are not failures.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from book.site import zh_notebooks

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = sorted((ROOT / "locale").rglob("*.po"))
MSGFMT = shutil.which("msgfmt")

# make test-deps installs Debian's gettext (the Makefile's TEST_DEBS), so CI never skips these
needs_msgfmt = pytest.mark.skipif(
    MSGFMT is None and os.environ.get("CI") != "true",
    reason="GNU msgfmt is not installed (Debian's gettext package: make test-deps installs it)")


def _msgfmt_check(path: Path) -> subprocess.CompletedProcess:
    # a UTF-8 locale, so that msgfmt quotes the Chinese of a message it refuses as Chinese
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANGUAGE": ""}
    return subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], env=env,
                          capture_output=True, text=True, errors="replace", timeout=60)


def test_there_are_catalogues():
    assert any(p.parent.name == "code" for p in CATALOGUES)
    assert any(p.parent.name == "assignments" for p in CATALOGUES)
    assert any("LC_MESSAGES" in p.parts for p in CATALOGUES)


@needs_msgfmt
def test_every_catalogue_passes_msgfmt_check():
    failures = []
    for path in CATALOGUES:
        proc = _msgfmt_check(path)
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines()
                      if "warning: header field" not in line]
            failures.append(f"{path.relative_to(ROOT)}:\n    " + "\n    ".join(errors[:8]))
    assert not failures, (f"{len(failures)} of {len(CATALOGUES)} catalogues fail "
                          "`msgfmt --check`:\n" + "\n".join(failures))


@needs_msgfmt
def test_write_catalogue_writes_what_msgfmt_accepts(tmp_path):
    """A new catalogue gets a header; a % or {...} in a message does not make it a format
    string; rewriting it with the same messages changes no byte."""
    path = tmp_path / "code" / "demo.po"
    texts = ["50% of the rows", "the {eval} role, $\\text{tokens}$", "plain"]
    zh_notebooks.write_catalogue(path, texts, "test catalogue")
    first = path.read_bytes()
    text = first.decode("utf-8")
    assert text.count('msgid ""') == 1 and "charset=utf-8" in text and "Language: zh_CN" in text
    assert "python-format" not in text and "python-brace-format" not in text
    assert _msgfmt_check(path).returncode == 0, _msgfmt_check(path).stderr
    # translated, with the "placeholders" changed: still no format check to fail
    po = text.replace('rows"\nmsgstr ""', 'rows"\nmsgstr "50%的行"')
    po = po.replace('msgstr ""\n\nmsgid "plain"',
                    'msgstr "{eval} 角色，$\\\\text{词元}$"\n\nmsgid "plain"')
    path.write_text(po, encoding="utf-8")
    translated = zh_notebooks.load_catalogue(path)
    assert len(translated) == 2, translated
    zh_notebooks.write_catalogue(path, texts, "test catalogue")
    assert zh_notebooks.load_catalogue(path) == translated
    assert _msgfmt_check(path).returncode == 0, _msgfmt_check(path).stderr
    path.write_text(text, encoding="utf-8")
    zh_notebooks.write_catalogue(path, texts, "test catalogue")
    assert path.read_bytes() == first


@needs_msgfmt
def test_tidy_catalogue_drops_format_flags_and_obsolete_twins(tmp_path):
    """What ``editions.gettext`` does after sphinx-intl: the flags babel re-adds on every update
    and an obsolete entry whose msgid came back are removed; the translations stay."""
    path = tmp_path / "page.po"
    path.write_text(
        'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n'
        '"Content-Transfer-Encoding: 8bit\\n"\n"Language: zh_CN\\n"\n\n'
        '#, python-format\nmsgid "It scores 90 % of the tokens."\nmsgstr "它答对 90 %。"\n\n'
        '#, python-brace-format\nmsgid "Cost $\\\\text{layers}$"\n'
        'msgstr "开销 $\\\\text{层数}$"\n\n'
        '#~ msgid "Cost $\\\\text{layers}$"\n#~ msgstr "开销 $\\\\text{层数}$"\n\n'
        '#~ msgid "gone"\n#~ msgstr "没了"\n', encoding="utf-8")
    assert _msgfmt_check(path).returncode != 0
    before = zh_notebooks.load_catalogue(path)
    assert zh_notebooks.tidy_catalogue(path)
    assert _msgfmt_check(path).returncode == 0, _msgfmt_check(path).stderr
    assert zh_notebooks.load_catalogue(path) == before
    assert '#~ msgid "gone"' in path.read_text(encoding="utf-8")
    assert not zh_notebooks.tidy_catalogue(path)
