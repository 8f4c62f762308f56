"""The book on paper (``make pdf``, book/site/pdf.py): each edition's PDF, built from the same
build as the HTML (so nothing is executed again), with every figure of the HTML as an image,
every font embedded, no unresolved reference, and the Chinese edition's text in Chinese with no
missing glyph.

The PDF is built with ``make pdf``'s command into the test run's own build folder of the edition
(tests/conftest.py's ``built_book`` / ``built_zh``), right after its HTML build.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import unicodedata
from pathlib import Path

import pytest
from build_edition import command
from conftest import CHAPTERS

from book.kit import i18n
from book.site import static_figures

pytestmark = [pytest.mark.slow, pytest.mark.extended,
              pytest.mark.skipif(shutil.which("xelatex") is None or shutil.which("pdffonts")
                                 is None, reason="make pdf's tools are not installed: run "
                                 "make pdf-deps (TeX Live's xelatex, poppler-utils)")]
FIXTURE = {"en": "built_book", "zh": "built_zh"}
PAGES = [p.stem for p in CHAPTERS]


@pytest.fixture(scope="module", params=["en", "zh"])
def pdf(request):
    edition = request.param
    built = request.getfixturevalue(FIXTURE[edition])
    assert built["returncode"] == 0, "the HTML build failed; see its own test"
    out = Path(built["html"]).parents[1]
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1", "BOOK_STUDENT": "0"}
    start = time.perf_counter()
    proc = subprocess.run(command(edition, out) + ["--builder", "pdflatex"],
                          capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    latex = out / "_build" / "latex"
    log = proc.stdout + proc.stderr
    (out / "pdf.log").write_text(log, encoding="utf-8")
    print(f"make pdf ({edition}): {seconds:.1f} s after the HTML build")
    return {"edition": edition, "rc": proc.returncode, "log": log, "latex": latex,
            "pdf": latex / f"attention-{edition}.pdf", "html": Path(built["html"]),
            "executed": Path(built["executed"]), "seconds": seconds}


def _text(path: Path) -> str:
    return subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True,
                          text=True, check=True).stdout


def test_pdf_builds_without_warnings_or_executing_again(pdf):
    tail = pdf["log"][-3000:]
    assert pdf["rc"] == 0 and pdf["pdf"].is_file(), f"make pdf failed:\n{tail}"
    warnings = re.findall(r"WARNING: .*", pdf["log"])
    assert not warnings, warnings[:10]
    assert "Executing notebook" not in pdf["log"] and "IPKernelApp" not in pdf["log"], \
        "the PDF build executed notebooks again instead of reusing the HTML build's"
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(
        ["pdfinfo", str(pdf["pdf"])], capture_output=True, text=True).stdout).group(1))
    print(f"{pdf['edition']}: {pages} pages")
    assert pages > 100


def test_every_font_is_embedded(pdf):
    rows = subprocess.run(["pdffonts", str(pdf["pdf"])], capture_output=True, text=True,
                          check=True).stdout.splitlines()[2:]
    assert rows, "pdffonts lists no font"
    # columns: name type encoding emb sub uni object ID (the type may hold spaces)
    missing = [r for r in rows if r.split()[-5] != "yes"]
    assert not missing, missing


def test_no_missing_glyph_and_no_unresolved_reference(pdf):
    xelatex_log = (pdf["latex"] / f"attention-{pdf['edition']}.log").read_text(
        encoding="utf-8", errors="replace")
    missing = re.findall(r"Missing character: There is no .*", xelatex_log)
    assert not missing, sorted(set(missing))[:10]
    text = _text(pdf["pdf"])
    assert "??" not in text, text[max(0, text.index("??") - 200):text.index("??") + 50]
    assert "\ufffd" not in text and "□" not in text


def test_the_chinese_pdf_is_in_chinese(pdf):
    if pdf["edition"] != "zh":
        pytest.skip("the Chinese edition's text")
    text = _text(pdf["pdf"])
    letters = [c for c in text if not c.isspace() and unicodedata.category(c)[0] in "LN"]
    cjk = [c for c in letters if "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"]
    share = len(cjk) / len(letters)
    print(f"zh: {share:.0%} of the letters are CJK ({len(cjk)} of {len(letters)})")
    assert share >= 0.30


def test_every_html_figure_is_an_image_in_the_pdf(pdf):
    """Per chapter: the page's plotly figures (HTML) = the stills the .tex includes, each with
    its one line when the page lets the reader vary it; and the PDF holds that many images."""
    tex = (pdf["latex"] / f"attention-{pdf['edition']}.tex").read_text(encoding="utf-8")
    i18n.set_language(pdf["edition"])
    try:
        # the sentence both notes end with ("Shown here: the first state.")
        marker = i18n.tr("common.still_varies", controls="@@").split("@@")[1].lstrip(".。 ")
    finally:
        i18n.set_language("en")
    counts, total, stills = {}, 0, []
    for page in PAGES:
        html = (pdf["html"] / "chapters" / f"{page}.html").read_text(encoding="utf-8")
        in_html = html.count('class="plotly-graph-div')
        in_pdf = len(re.findall(rf"\\sphinxincludegraphics\[[^]]*\]{{{{stills/{page}-fig\d\d-",
                                tex))
        figures = static_figures.notebook_figures(pdf["executed"] / "chapters" / f"{page}.ipynb")
        counts[page] = (in_html, in_pdf)
        total += in_pdf
        stills += figures
        assert in_pdf == in_html, f"{page}: {in_html} figures in the HTML, {in_pdf} in the PDF"
        assert len(figures) == in_html, f"{page}: the executed notebook has {len(figures)}"
    print(f"{pdf['edition']}: figures per chapter (HTML, PDF): {json.dumps(counts)}")
    expected_notes = sum(bool(static_figures.still(f)[1]) for f in stills)
    assert tex.count(marker.replace("_", r"\_")) == expected_notes
    images = subprocess.run(["pdfimages", "-list", str(pdf["pdf"])], capture_output=True,
                            text=True, check=True).stdout.splitlines()[2:]
    drawn = [r for r in images if r.split()[2] == "image"]
    assert len(drawn) >= total, f"{len(drawn)} images in the PDF for {total} figures"
