"""Every test's Chromium: one way to launch it, with the machine's fonts narrowed to those the
project installs.

A browser test that passes here only because this machine has a font a newcomer's lacks (a
system CJK font, say) turns a newcomer's `make test` red while CI stays green (issue 51: the
Chinese figures of four bare test pages were drawn in a CJK font that only `make test-all`'s
PDF dependencies installed). So every Chromium the tests start sees, through fontconfig, only
the font files of the Debian packages in the Makefile's ``TEST_DEBS`` (the list ``make test``
installs) — the web fonts the book ships (assets/static/fonts) it loads from the page, as a
reader's browser does. A page that relies on any other font draws with what the list has (CJK
as empty boxes) and its checks fail here as on a newcomer's machine.

    from headless import launch
    with sync_playwright() as p:
        browser = launch(p)
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
FONT_FILE = re.compile(r"\.(ttf|otf|ttc|otc|pfb|pcf(\.gz)?)$", re.IGNORECASE)
SYSTEM_CONF_D = Path("/etc/fonts/conf.d")


def test_packages(makefile: Path = ROOT / "Makefile") -> list[str]:
    """The Debian packages ``make test`` installs: the Makefile's ``TEST_DEBS`` (one list, read
    here so that the guard and the install cannot disagree)."""
    text = Path(makefile).read_text(encoding="utf-8").replace("\\\n", " ")
    found = re.search(r"^TEST_DEBS\s*:?=(.*)$", text, re.MULTILINE)
    if not found or not found.group(1).split():
        raise RuntimeError(f"{makefile} has no TEST_DEBS list: the font guard reads the test "
                           "packages from it (TEST_DEBS := chromium bubblewrap fonts-…)")
    return found.group(1).split()


def allowed_fonts(packages: list[str] | None = None) -> list[Path]:
    """The font files of the font packages (``fonts-*``) among ``packages`` (TEST_DEBS), as
    dpkg lists them. Raises when one of them is not installed, naming the command that does."""
    packages = test_packages() if packages is None else packages
    if shutil.which("dpkg") is None:
        raise RuntimeError("the font guard reads the fonts of TEST_DEBS' packages with dpkg: "
                           "the browser tests run on Debian or Ubuntu (README)")
    files: list[Path] = []
    for package in (p for p in packages if p.startswith("fonts-")):
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True)
        if listed.returncode != 0:
            raise RuntimeError(f"{package} (Makefile TEST_DEBS) is not installed: run `make "
                               f"test-deps` (or `sudo apt-get install -y {package}`)")
        files += [Path(line) for line in listed.stdout.splitlines()
                  if FONT_FILE.search(line) and Path(line).is_file()]
    if not files:
        raise RuntimeError("TEST_DEBS lists no installed font package: Chromium would have "
                           "no font at all (add fonts-dejavu-core to TEST_DEBS)")
    return sorted(files)


def _rules() -> list[Path]:
    """The system's fontconfig rules (aliases, hinting) that add no fonts: every file of
    /etc/fonts/conf.d but those naming a font folder or including other files (a user's
    ~/.config/fontconfig, /etc/fonts/local.conf), which could bring fonts of their own."""
    if not SYSTEM_CONF_D.is_dir():
        return []
    return [p for p in sorted(SYSTEM_CONF_D.glob("*.conf"))
            if not re.search(r"<(dir|include)\b", p.read_text(encoding="utf-8", errors="replace"))]


def fontconfig_text(fonts: list[Path], cache: Path) -> str:
    """A fonts.conf that sees exactly ``fonts`` (their folders, then each other file of those
    folders rejected), with the system's rules, its cache in ``cache``."""
    fonts = [Path(f).resolve() for f in fonts]
    folders = sorted({f.parent for f in fonts})
    wanted = {str(f) for f in fonts}
    others = sorted(str(p) for d in folders for p in d.iterdir()
                    if p.is_file() and FONT_FILE.search(p.name) and str(p) not in wanted)
    lines = ['<?xml version="1.0"?>', '<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">',
             "<!-- written by tests/headless.py: the fonts of the Makefile's TEST_DEBS only -->",
             "<fontconfig>"]
    lines += [f"  <dir>{d}</dir>" for d in folders]
    if others:
        lines += ["  <selectfont><rejectfont>"]
        lines += [f"    <glob>{o}</glob>" for o in others]
        lines += ["  </rejectfont></selectfont>"]
    lines += [f'  <include ignore_missing="yes">{r}</include>' for r in _rules()]
    lines += [f"  <cachedir>{cache}</cachedir>", "</fontconfig>", ""]
    return "\n".join(lines)


_WRITTEN: dict[str, Path] = {}


def fontconfig_file() -> Path:
    """The guard's fonts.conf (written once per process, in a folder of its own)."""
    if "path" not in _WRITTEN:
        folder = Path(tempfile.mkdtemp(prefix="book-fontconfig-"))
        path = folder / "fonts.conf"
        path.write_text(fontconfig_text(allowed_fonts(), folder / "cache"), encoding="utf-8")
        _WRITTEN["path"] = path
    return _WRITTEN["path"]


def env() -> dict[str, str]:
    """The environment of a test's Chromium: this one, fontconfig narrowed to TEST_DEBS' fonts."""
    out = {k: v for k, v in os.environ.items() if k != "FONTCONFIG_PATH"}
    out["FONTCONFIG_FILE"] = str(fontconfig_file())
    return out


def launch(playwright, args: list[str] | None = None, **options):
    """Playwright's Chromium (Debian's /usr/bin/chromium), headless, with the font guard."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError("chromium is not installed: run `make test-deps` "
                           "(or `sudo apt-get install -y chromium`)")
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=ARGS if args is None else args, env=env(), **options)


@contextlib.contextmanager
def browser(args: list[str] | None = None):
    """A guarded Chromium for a module's tests: ``with headless.browser() as b: yield b``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = launch(p, args)
        try:
            yield launched
        finally:
            launched.close()
