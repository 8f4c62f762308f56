"""The Chinese pages' frame speaks Chinese: every word the themes' templates pass through a
catalogue (``_("…")``, ``translate('…')``, ``{% trans %}…{% endtrans %}``) has a Chinese
translation, from Sphinx's and sphinx-book-theme's own zh_CN catalogues or from
locale/zh_CN/theme.toml (book/site/editions.py puts those into the loaded catalogues). The
themes' zh_CN catalogues leave some English ("Skip to main content", "Back to top", the colour
modes' tooltips): a page would show them to a Chinese reader."""

from __future__ import annotations

import gettext
import re
from pathlib import Path

import pytest

from book.site import editions

_CALL = re.compile(r"""\b(?:_|translate)\(\s*(['"])((?:(?!\1).)+)\1\s*\)""")
_TRANS = re.compile(r"{%-?\s*trans\b([^%]*)%}(.*?){%-?\s*endtrans\s*-?%}", re.S)
_VAR = re.compile(r"{{\s*(\w+)\s*}}")


def theme_dirs() -> list[Path]:
    import pydata_sphinx_theme
    import sphinx_book_theme

    return [Path(m.__file__).parent / "theme" for m in (sphinx_book_theme, pydata_sphinx_theme)]


def template_messages(text: str) -> set[str]:
    """The catalogue messages a Jinja template asks for."""
    found = {m.group(2) for m in _CALL.finditer(text)}
    for match in _TRANS.finditer(text):
        body = match.group(2)
        if "trimmed" in match.group(1):
            body = " ".join(body.split())
        found.add(_VAR.sub(lambda v: f"%({v.group(1)})s", body))
    return {m for m in found if re.search("[A-Za-z]{2,}", m)}


def catalogues() -> list[gettext.GNUTranslations]:
    import sphinx
    import sphinx_book_theme

    paths = [Path(sphinx.__file__).parent / "locale" / "zh_CN" / "LC_MESSAGES" / "sphinx.mo",
             *Path(sphinx_book_theme.__file__).parent.rglob("zh_CN/LC_MESSAGES/*.mo")]
    out = []
    for path in paths:
        with path.open("rb") as handle:
            out.append(gettext.GNUTranslations(handle))
    return out


def chinese(message: str, cats, ours: dict[str, str]) -> str | None:
    if message in ours:
        return ours[message]
    for cat in cats:
        text = cat.gettext(message)
        if text != message:
            return text
    return None


# templates no page of the book uses (the book builds no version switcher, no edit buttons,
# no index pages, no theme credit, no "last updated" line)
NOT_SHOWN = ("version-switcher.html", "edit-this-page.html", "indices.html",
             "theme-version.html", "sphinx-version.html", "last-updated.html", "genindex.html")


def test_every_theme_message_has_chinese():
    theme = editions.zh_theme()
    ours = {k: v for table in ("booktheme", "sphinx") for k, v in theme[table].items()}
    cats = catalogues()
    wanted: dict[str, str] = {}
    for root in theme_dirs():
        for path in root.rglob("*.html"):
            if path.name in NOT_SHOWN:
                continue
            for message in template_messages(path.read_text(encoding="utf-8")):
                wanted.setdefault(message, str(path.relative_to(root)))
    assert len(wanted) >= 20, f"only {len(wanted)} template messages found: did the theme move?"
    left = sorted(f"{where}: {message!r}" for message, where in wanted.items()
                  if not chinese(message, cats, ours))
    assert not left, (f"{len(left)} theme message(s) would show English on the Chinese pages "
                      "(add them to locale/zh_CN/theme.toml):\n" + "\n".join(left))


@pytest.mark.parametrize(("text", "messages"), [
    ('<a>{{ _("Skip to main content") }}</a>', {"Skip to main content"}),
    ("title=\"{{ translate('By') }}\"", {"By"}),
    ("{% trans copyright=copyright|e %}© Copyright {{ copyright }}.{% endtrans %}",
     {"© Copyright %(copyright)s."}),
    ("{{ _('x') }}", set()),
])
def test_template_messages_are_found(text, messages):
    assert template_messages(text) == messages


def test_the_fold_buttons_hints_are_chinese():
    """sphinx-togglebutton's hints default to English on the Chinese pages; the Chinese build
    sets them before the extension writes them into the page script."""
    from types import SimpleNamespace

    import sphinx_togglebutton

    from book.site import sphinxext

    english = {name: "Click to show" for name in sphinxext.TOGGLE_HINTS}
    zh = SimpleNamespace(language="zh_CN", **english)
    sphinxext._toggle_hints_in_chinese(None, zh)
    for name in sphinxext.TOGGLE_HINTS:
        assert re.search("[\u4e00-\u9fff]", getattr(zh, name)), name
    en = SimpleNamespace(language="en", **english)
    sphinxext._toggle_hints_in_chinese(None, en)
    assert vars(en) == {"language": "en", **english}
    # it runs before the extension's own handler (priority 500), which writes the hints
    source = Path(sphinxext.__file__).read_text(encoding="utf-8")
    assert '"config-inited", _toggle_hints_in_chinese, priority=400' in source
    assert "config.togglebutton_hint" in Path(sphinx_togglebutton.__file__).read_text()
