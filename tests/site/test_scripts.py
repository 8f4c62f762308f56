"""book.site.scripts: the in-page explorers' script joined from its modules (what it does in the
page: tests/test_browser_page_model.py, tests/test_browser_order.py, tests/test_browser_inpage.py).
"""

from __future__ import annotations

import os
import re
import unicodedata
from types import SimpleNamespace

from book.kit.text import is_wide
from book.site import scripts, sphinxext

MOST_LINES = 650


def test_the_modules_are_joined_in_their_order():
    files = scripts.inpage_files()
    names = [f.relative_to(scripts.INPAGE_DIR).as_posix() for f in files]
    core = [n for n in scripts.CORE if n != scripts.WIDE_MODULE]
    explorers = sorted(n for n in names if n.startswith("explorers/"))
    assert names == core + explorers + [scripts.PAGE]
    assert len(explorers) >= 7
    text = scripts.inpage_script()
    # each module (and the generated width table) in a function scope of its own, in that order
    wrapped = re.findall(r"^// --- (\S+)\n\(function \(\) \{\n\"use strict\";\n", text, re.M)
    assert wrapped == [*scripts.CORE, *explorers, scripts.PAGE]
    parts = text.split("\n// --- ")[1:]
    assert len(parts) == len(wrapped) and all(p.endswith("\n})();\n") for p in parts[:-1])
    for f in files:
        assert f.read_text(encoding="utf-8") in text, f.name


def test_each_module_says_what_it_holds_and_stays_small():
    for f in scripts.inpage_files():
        lines = f.read_text(encoding="utf-8").splitlines()
        assert re.fullmatch(r"// \S.{10,97}", lines[0]), f"{f.name}: no one-line header"
        assert not lines[1].startswith("//"), f"{f.name}: the header runs on"
        assert len(lines) <= MOST_LINES, f"{f.name}: {len(lines)} lines"


def test_the_width_table_is_pythons_rule():
    ranges = scripts.wide_ranges()
    assert all(a <= b < c for (a, b), (c, _) in zip(ranges, ranges[1:], strict=False))

    def in_table(code):
        return any(a <= code <= b for a, b in ranges)

    for code in [*range(0x3000), *range(0x3000, 0x30000, 7), 0x1F600, 0xFF01, 0xFF61]:
        char = chr(code)
        want = is_wide(char) and unicodedata.category(char) != "Cn"
        assert in_table(code) == want, hex(code)
    module = scripts.wide_ranges_js()
    assert f"[0x{ranges[0][0]:x}, 0x{ranges[0][1]:x}]" in module
    assert module.count("[0x") == len(ranges)
    assert module in scripts.inpage_script()


def test_the_build_writes_the_joined_script(tmp_path):
    app = SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(tmp_path))
    sphinxext._copy_page_scripts(app, None)
    written = tmp_path / "_static" / sphinxext.INPAGE_JS
    assert written.read_text(encoding="utf-8") == scripts.inpage_script()
    questions = tmp_path / "_static" / sphinxext.QUESTIONS_JS
    assert questions.read_bytes() == sphinxext.questions_js_path().read_bytes()
    os.utime(written, (1, 1))
    sphinxext._copy_page_scripts(app, None)   # a rebuild leaves an equal copy as it is
    assert written.stat().st_mtime == 1
