"""The browser tests' font guard (tests/headless.py): every test's Chromium sees the fonts of the
Makefile's TEST_DEBS and no other, so a page that relies on a font only this machine has fails
here as it would on a newcomer's machine (issue 51)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import headless
import pytest

pytestmark = pytest.mark.skipif(shutil.which("fc-list") is None or shutil.which("dpkg") is None,
                                reason="fontconfig's fc-list and dpkg (Debian) are needed")

PROBE_FAMILY = "Book Guard Probe"
# The probe's text measured in its own family, falling back to a monospace family: the probe is a
# copy of DejaVu Sans (proportional), so the two widths differ by far more than a pixel.
WIDTH_JS = """(family) => {
  const s = document.createElement('span');
  s.style.font = `32px "${family}", monospace`;
  s.textContent = 'illuminating WWW mmm iii';
  document.body.append(s);
  return s.getBoundingClientRect().width;
}"""


def _fc_files(env: dict) -> set[Path]:
    listed = subprocess.run(["fc-list", "--format", "%{file}\n"], env=env, capture_output=True,
                            text=True, check=True).stdout
    return {Path(line).resolve() for line in listed.splitlines() if line}


def test_the_list_is_the_makefiles():
    packages = headless.test_packages()
    assert {"chromium", "bubblewrap", "fonts-dejavu-core"} <= set(packages), packages
    makefile = (headless.ROOT / "Makefile").read_text(encoding="utf-8")
    # make test and make test-all both install that one list
    for target in ("test", "test-all"):
        line = next(x for x in makefile.splitlines() if x.startswith(f"{target}:"))
        assert "test-deps" in line.split(), line


def test_an_empty_list_is_refused(tmp_path):
    makefile = tmp_path / "Makefile"
    makefile.write_text("TEST_DEBS :=\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="no TEST_DEBS list"):
        headless.test_packages(makefile)
    with pytest.raises(RuntimeError, match="not installed: run `make test-deps`"):
        headless.allowed_fonts(["fonts-no-such-package-here"])


def test_guard_sees_exactly_the_listed_fonts():
    """fontconfig under the guard lists the font files of TEST_DEBS' font packages, no more (a
    rule of /etc/fonts/conf.d that adds a folder, or a file beside the listed ones, would show
    here), no fewer."""
    allowed = {p.resolve() for p in headless.allowed_fonts()}
    seen = _fc_files(headless.env())
    assert seen == allowed, (f"seen but not listed: {sorted(map(str, seen - allowed))[:10]}; "
                             f"listed but not seen: {sorted(map(str, allowed - seen))[:10]}")


@pytest.fixture
def home_with_a_font(tmp_path):
    """A HOME whose ~/.fonts holds a font no Debian package of the list has (a copy of DejaVu
    Sans renamed "Book Guard Probe"): a font this machine has and a newcomer's lacks."""
    from fontTools.ttLib import TTFont

    source = next(p for p in headless.allowed_fonts() if p.name == "DejaVuSans.ttf")
    home = tmp_path / "home"
    (home / ".fonts").mkdir(parents=True)
    with TTFont(source) as font:
        for record in font["name"].names:
            if record.nameID in (1, 4, 16):
                record.string = PROBE_FAMILY
            elif record.nameID == 6:
                record.string = PROBE_FAMILY.replace(" ", "")
        font.save(home / ".fonts" / "probe.ttf")
    return home


def test_a_font_outside_the_list_is_hidden_from_chromium(home_with_a_font):
    """The same page measures the probe family's text: with the machine's own fontconfig
    Chromium finds the probe in ~/.fonts; with the guard it cannot and falls back. A test page
    that relied on such a font would lay out differently under the guard, as on a newcomer's
    machine."""
    from playwright.sync_api import sync_playwright

    unguarded = {**{k: v for k, v in os.environ.items() if k != "FONTCONFIG_FILE"},
                 "HOME": str(home_with_a_font), "XDG_CACHE_HOME": str(home_with_a_font / "c")}
    guarded = {**headless.env(), "HOME": str(home_with_a_font)}
    assert PROBE_FAMILY in subprocess.run(["fc-match", PROBE_FAMILY], env=unguarded,
                                          capture_output=True, text=True).stdout
    assert PROBE_FAMILY not in subprocess.run(["fc-match", PROBE_FAMILY], env=guarded,
                                              capture_output=True, text=True).stdout
    widths = {}
    with sync_playwright() as p:
        for name, env in (("unguarded", unguarded), ("guarded", guarded)):
            browser = p.chromium.launch(executable_path=headless.CHROMIUM, headless=True,
                                        args=headless.ARGS, env=env)
            try:
                page = browser.new_page()
                page.set_content("<!doctype html><body></body>")
                widths[name] = {f: page.evaluate(WIDTH_JS, f) for f in (PROBE_FAMILY, "monospace")}
            finally:
                browser.close()
    # without the guard the probe draws in its own (proportional) shapes, not the fallback's
    assert abs(widths["unguarded"][PROBE_FAMILY] - widths["unguarded"]["monospace"]) > 20, widths
    # under the guard it is not there: the text falls back to monospace
    assert abs(widths["guarded"][PROBE_FAMILY] - widths["guarded"]["monospace"]) < 0.5, widths


def test_launch_uses_the_guard():
    """headless.launch (every browser test's Chromium) passes the guard's environment."""
    calls = {}

    class Chromium:
        def launch(self, **options):
            calls.update(options)

    class Playwright:
        chromium = Chromium()

    headless.launch(Playwright())
    assert calls["env"]["FONTCONFIG_FILE"] == str(headless.fontconfig_file())
    assert calls["executable_path"] == headless.CHROMIUM and calls["headless"] is True
