"""The book's two editions, English and Chinese, from one source.

English is built at today's paths (``_build/html``), Chinese under ``_build/html/zh``. The
Chinese edition is the same notebooks and pages, with the prose translated in Sphinx's
gettext catalogues (``locale/zh_CN/LC_MESSAGES/**.po``) and every string Python draws
(figures, widgets, exercise messages) taken from ``book.kit.i18n``'s table in the build's
language. Its notebooks execute in Chinese: the Sphinx hook below exports the configured
language as ``BOOK_LANG``, which the build's kernels inherit and ``book.setup()`` reads.

Command line (used by the Makefile)::

    python -m book.site.editions config zh     # writes _build/zh/_config.yml from _config.yml
    python -m book.site.editions gettext        # .pot from the sources, then .po updated
    python -m book.site.editions publish        # _build/zh/_build/html -> _build/html/zh
    python -m book.site.editions notebooks-zh   # the Chinese notebooks -> _build/notebooks-zh
    python -m book.site.editions publish --from A --to B   # another pair (the student edition)
    python -m book.site.editions preview zh chapters/02_scaling   # one chapter, quickly
"""
from __future__ import annotations

import argparse
import os
import posixpath
import shutil
import subprocess
import sys
from html import escape
from pathlib import Path

import yaml

from book.kit import i18n
from book.site import templates

ROOT = Path(__file__).resolve().parents[2]

# edition code -> what Sphinx calls its language, the <html lang> and the folder it is built in
EDITIONS = {
    "en": {"sphinx": "en", "html_lang": "en", "folder": "", "name": "English"},
    "zh": {"sphinx": "zh_CN", "html_lang": "zh-CN", "folder": "zh", "name": "中文"},
}
LOCALE_DIR = "locale"
ZH_BUILD = Path("_build") / "zh"           # the Chinese edition's jupyter-book output path
GETTEXT_BUILD = Path("_build") / "gettext"
ZH_TITLE = "用实验学多头自注意力"   # the landing page's heading (index.po) says the same
# The captions of _toc.yml's parts: jupyter-book adds the sidebar's toctrees after Sphinx's
# gettext step, so the catalogues never see them; the Chinese build writes these instead.
# The learner's path's parts are named by their badges' words (book/strings/common.toml), so
# that the sidebar and the badges say the same.
ZH_CAPTIONS = {"Core": i18n.table()["common.path_badge_core"]["zh"],
               "Pitfalls": i18n.table()["common.path_badge_pitfalls"]["zh"],
               "Advanced": i18n.table()["common.path_badge_advanced"]["zh"],
               "For teachers": "教师专区", "Reference": "参考"}
# The themes' strings that their zh_CN catalogues leave English or word the Taiwan way, and the
# Chinese edition's author line: locale/zh_CN/theme.toml (a data file, so that the English
# edition's font subset does not carry them; book/site/fonts.py).
ZH_THEME = ROOT / LOCALE_DIR / "zh_CN" / "theme.toml"


def zh_theme() -> dict:
    import tomllib

    with ZH_THEME.open("rb") as handle:
        return tomllib.load(handle)


def edition_of(sphinx_language: str | None) -> str:
    """The edition code ("en" or "zh") for a Sphinx ``language`` value."""
    for code, spec in EDITIONS.items():
        if spec["sphinx"] == (sphinx_language or "en"):
            return code
    raise ValueError(f"no edition for Sphinx language {sphinx_language!r}: the book has "
                     + ", ".join(spec["sphinx"] for spec in EDITIONS.values()))


# --- Sphinx side (registered by book.site.sphinxext) -------------------------------------------

def export_language(app, config) -> None:
    """The build's kernels inherit the environment: book.setup() reads BOOK_LANG there."""
    os.environ["BOOK_LANG"] = edition_of(config.language)


def switch_target(pagename: str, edition: str) -> str:
    """Root-relative path of ``pagename`` in the *other* edition, as seen from the root of
    ``edition``'s output (English at the root, Chinese under zh/)."""
    if edition == "en":
        return f"{EDITIONS['zh']['folder']}/{pagename}.html"
    return f"../{pagename}.html"


def language_switch(app, pagename, templatename, context, doctree) -> None:
    """A link to the same page in the other edition at the top of every page (relative, so
    it works from file://), and the page's hreflang alternates."""
    if app.builder.format != "html" or "body" not in context:
        return
    edition = edition_of(app.config.language)
    other = "zh" if edition == "en" else "en"
    page_dir = posixpath.dirname(pagename)
    target = posixpath.relpath(switch_target(pagename, edition), page_dir or ".")
    label = {"en": "Read in English", "zh": "阅读中文版"}[other]
    html_lang = EDITIONS[other]["html_lang"]
    link = (f'<div class="book-language-switch"><a href="{escape(target)}" '
            f'hreflang="{html_lang}" lang="{html_lang}">{escape(label)}</a></div>')
    context["body"] = link + context["body"]
    context["metatags"] = context.get("metatags", "") + (
        f'\n<link rel="alternate" hreflang="{html_lang}" href="{escape(target)}" />')


def toc_captions() -> list[str]:
    """The part captions of _toc.yml, in order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [part["caption"] for part in toc.get("parts", []) if part.get("caption")]


def translate_captions(app, exception) -> None:
    """The Chinese edition's sidebar captions in Chinese (every page carries the sidebar)."""
    if exception is not None or app.builder.format != "html":
        return
    if edition_of(app.config.language) != "zh":
        return
    missing = [c for c in toc_captions() if c not in ZH_CAPTIONS]
    if missing:
        raise ValueError(f"_toc.yml captions without a Chinese name: {missing}; add them to "
                         "book/site/editions.py's ZH_CAPTIONS")
    outdir = Path(app.outdir)
    for page in outdir.rglob("*.html"):
        if "_static" in page.parts:
            continue
        text = page.read_text(encoding="utf-8")
        new = text
        for english, chinese in ZH_CAPTIONS.items():
            new = new.replace(f'<span class="caption-text">{english}</span>',
                              f'<span class="caption-text">{chinese}</span>')
        if new != text:
            page.write_text(new, encoding="utf-8")


def chinese_downloads(app, exception) -> None:
    """The Chinese pages' download button (.ipynb) gives the Chinese notebook: the copy of each
    chapter notebook in the build's ``_sources`` is replaced by the one generated from the
    catalogues (book/site/zh_notebooks.py; a segment without a translation stops the build)."""
    if exception is not None or app.builder.format != "html":
        return
    if edition_of(app.config.language) != "zh":
        return
    from book.site import zh_notebooks

    zh_notebooks.write_notebooks(Path(app.outdir) / "_sources")


def theme_strings_in_chinese(app) -> None:
    """The Chinese edition's theme strings from locale/zh_CN/theme.toml: each is put into the
    message catalogue that Sphinx and the themes already loaded (the templates hold those
    catalogues, so they are amended in place rather than replaced)."""
    if edition_of(app.config.language) != "zh":
        return
    from sphinx import locale

    strings = {(catalogue, message): text for catalogue, table in zh_theme().items()
               if isinstance(table, dict) and catalogue != "templates"
               for message, text in table.items()}
    for (catalogue, message), text in strings.items():
        translator = locale.translators.get(("general", catalogue))
        if translator is None or not hasattr(translator, "_catalog"):
            raise RuntimeError(f"no loaded {catalogue!r} catalogue to put {message!r} in: "
                               "did the theme change? see book/site/editions.py")
        translator._catalog[message] = text


def theme_template(name: str) -> Path:
    """The file of template ``name`` (its path inside the theme's folder): sphinx-book-theme's,
    else pydata-sphinx-theme's (the one it extends)."""
    import pydata_sphinx_theme
    import sphinx_book_theme

    for package, theme in ((sphinx_book_theme, "sphinx_book_theme"),
                           (pydata_sphinx_theme, "pydata_sphinx_theme")):
        path = Path(package.__file__).parent / "theme" / theme / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"no theme template {name!r}: did the theme change? see "
                            f"{ZH_THEME.relative_to(ROOT)}'s [templates]")


def chinese_templates(app, config) -> None:
    """The theme's words that its templates write in English, with no catalogue to translate
    them (the sidebar toggles' tooltips, the navigation landmarks' names): the Chinese edition
    builds with copies of those templates in Chinese (locale/zh_CN/theme.toml's [templates]),
    made from the installed theme on every build."""
    if edition_of(config.language) != "zh":
        return
    for name, words in zh_theme().get("templates", {}).items():
        text = theme_template(name).read_text(encoding="utf-8")
        for english, chinese in words.items():
            if english not in text:
                raise RuntimeError(f"the theme's {name} no longer writes {english!r}: update "
                                   f"{ZH_THEME.relative_to(ROOT)}'s [templates]")
            text = text.replace(english, chinese)
        # components are looked up by their file name, pages by their path
        templates.override(app, config, name.removeprefix("components/"), text)


SHELL_BLOCKS = ("bash", "shell", "console")   # fenced blocks of markdown pages, by language


def translate_code_comments(app, doctree, docname) -> None:
    """The Chinese pages show the code cells' comments and docstrings in Chinese: the same
    translations (locale/zh_CN/code/<page>.po) as the Chinese notebooks, put into each code
    cell's source block. Only comments and docstrings change; the code that ran is the code
    shown."""
    if edition_of(app.config.language) != "zh":
        return
    from docutils import nodes

    from book.site import zh_notebooks

    catalogue = zh_notebooks.load_catalogue(zh_notebooks.CODE_DIR / f"{Path(docname).name}.po")
    if not catalogue:
        return
    for block in doctree.findall(nodes.literal_block):
        parent = block.parent
        in_cell = parent is not None and "cell_input" in parent.get("classes", [])
        if not in_cell and block.get("language") not in SHELL_BLOCKS:
            continue   # a markdown page's shell commands (the teacher's guide) are translated too
        text = block.astext()
        translated = zh_notebooks.codetext.translate(text, catalogue)
        if translated != text:
            block.children = [nodes.Text(translated)]
            block.rawsource = translated


def _maths_transform():
    from docutils import nodes
    from sphinx.locale import init as init_locale
    from sphinx.transforms import SphinxTransform
    from sphinx.util.i18n import docname_to_domain

    class TranslatedMaths(SphinxTransform):
        """A display formula with words in it (``\\text{projections}``) is translated here, as
        it is written in the catalogue. Sphinx's own i18n transform (priority 20) writes a
        literal message as ``::`` plus an indented block and parses it with the page's parser:
        MyST reads that as the paragraph ``::``, so the Chinese page showed ``\\[::\\]``."""

        default_priority = 19

        def apply(self, **kwargs) -> None:
            if edition_of(self.config.language) != "zh":
                return
            dirs = [os.path.join(self.env.srcdir, d) for d in self.config.locale_dirs]
            domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
            catalog, found = init_locale(dirs, self.config.language, domain)
            if not found:
                return
            for block in self.document.findall(nodes.math_block):
                source = block.rawsource or block.astext()
                translated = catalog.gettext(source)
                if translated and translated != source:
                    block.children = [nodes.Text(translated)]
                    block.rawsource = translated
                block["translatable"] = False   # done: Sphinx's transform leaves it alone

    return TranslatedMaths


def setup_sphinx(app) -> None:
    app.connect("config-inited", export_language)
    app.connect("html-page-context", language_switch)
    app.connect("build-finished", translate_captions)
    app.connect("build-finished", chinese_downloads)
    app.connect("builder-inited", theme_strings_in_chinese)
    app.connect("config-inited", chinese_templates)
    app.connect("doctree-resolved", translate_code_comments)
    app.add_transform(_maths_transform())
    # each Chinese page's own CJK font is written after these (book.site.sphinxext registers
    # book/site/page_fonts.py, which reads the edition from here)


# --- command line -------------------------------------------------------------------------

def write_config(edition: str, execute: bool = True) -> Path:
    """_config.yml with the edition's language set, written under _build/ (never committed:
    the committed _config.yml stays the one source)."""
    if edition not in EDITIONS:
        raise ValueError(f"unknown edition {edition!r}: choose one of {', '.join(EDITIONS)}")
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["language"] = EDITIONS[edition]["sphinx"]
    if edition == "zh":
        config.setdefault("latex", {}).setdefault("latex_documents", {})["targetname"] = \
            "attention-zh.tex"
        config["title"] = ZH_TITLE
        config["author"] = zh_theme()["author"]
        sphinx.setdefault("html_theme_options", {})["search_bar_text"] = "搜索本书…"
        # the larger CJK subset (book/site/fonts.py), after book.css so that its face wins; at the
        # build's end each page but the search page links its own subset instead
        # (book/site/page_fonts.py)
        sphinx["html_css_files"] = [*sphinx.get("html_css_files", []), "book-zh.css"]
        # MyST-NB's toggles of hidden cells ("Show code cell source")
        sphinx["nb_code_prompt_show"] = "显示代码单元格"
        sphinx["nb_code_prompt_hide"] = "隐藏代码单元格"
    if not execute:
        config.setdefault("execute", {})["execute_notebooks"] = "off"
    out_dir = ROOT / (ZH_BUILD if edition == "zh" else Path("_build") / edition)
    if not execute:
        out_dir = ROOT / GETTEXT_BUILD
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "_config.yml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False),
                    encoding="utf-8")
    return path


def _jupyter_book() -> str:
    return str(Path(sys.executable).with_name("jupyter-book"))


def gettext() -> None:
    """Message catalogues from the sources (no execution), then every .po brought up to date
    (new messages empty, changed ones fuzzy: tests/test_editions.py fails on both)."""
    config = write_config("en", execute=False)
    subprocess.run([_jupyter_book(), "build", str(ROOT), "--builder", "custom",
                    "--custom-builder", "gettext", "--config", str(config),
                    "--path-output", str(ROOT / GETTEXT_BUILD), "-q"], check=True)
    pot = ROOT / GETTEXT_BUILD / "_build" / "gettext"
    # the theme's own template strings: Sphinx and sphinx-book-theme translate those themselves
    (pot / "sphinx.pot").unlink(missing_ok=True)
    subprocess.run([str(Path(sys.executable).with_name("sphinx-intl")), "update",
                    "-p", str(pot), "-l", "zh_CN", "-d", str(ROOT / LOCALE_DIR),
                    "-w", "0"], check=True)
    # the code cells' comments: locale/zh_CN/code/<page>.po (book/site/zh_notebooks.py)
    from book.site import zh_notebooks

    # babel's false python-format flags (re-added on every update) and obsolete twins of live
    # messages out, so that `msgfmt --check` passes (tests/site/test_catalogues_msgfmt.py)
    for po in sorted((ROOT / LOCALE_DIR / "zh_CN" / "LC_MESSAGES").rglob("*.po")):
        zh_notebooks.tidy_catalogue(po)
    zh_notebooks.update_code_catalogues()


def preview(edition: str, chapters: list[str]) -> Path:
    """Build the landing page and the given chapters alone (e.g. ``chapters/02_scaling``) in
    one edition, for a quick look while translating: warnings about the chapters left out are
    expected. Returns the HTML folder."""
    config = write_config(edition)
    names = [c.removesuffix(".ipynb").removesuffix(".md") for c in chapters]
    out = ROOT / "_build" / f"preview-{edition}"
    out.mkdir(parents=True, exist_ok=True)
    toc = out / "_toc.yml"
    toc.write_text(yaml.safe_dump({"format": "jb-book", "root": "index",
                                   "chapters": [{"file": n} for n in names]}),
                   encoding="utf-8")
    subprocess.run([_jupyter_book(), "build", str(ROOT), "--config", str(config), "--toc",
                    str(toc), "--path-output", str(out), "--all"], check=True)
    return out / "_build" / "html"


def publish(source: Path | None = None, target: Path | None = None) -> Path:
    """Copy the Chinese edition's HTML to _build/html/zh (the English edition's folder); the
    student edition (``make book-student``) passes its own two folders."""
    source = ROOT / ZH_BUILD / "_build" / "html" if source is None else Path(source)
    if not (source / "index.html").exists():
        raise FileNotFoundError(f"{source} has no index.html: build the Chinese edition "
                                "first (make book)")
    if target is None:
        target = ROOT / "_build" / "html" / EDITIONS["zh"]["folder"]
    sync_tree(Path(source), Path(target))
    return target


def sync_tree(source: Path, target: Path) -> int:
    """Make ``target`` a copy of ``source``, copying only the files whose size or time differ
    (a rebuild rewrites a few pages, not the fonts and MathJax) and deleting what ``source``
    no longer has. Returns how many files were copied."""
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{target} is a file; remove it to publish the edition there")
    copied, wanted = 0, set()
    for path in source.rglob("*"):
        rel = path.relative_to(source)
        wanted.add(rel)
        out = target / rel
        if path.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        info = path.stat()
        if out.is_file():
            old = out.stat()
            if old.st_size == info.st_size and old.st_mtime_ns == info.st_mtime_ns:
                continue
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out)
        copied += 1
    for path in sorted(target.rglob("*"), key=lambda p: -len(p.parts)):
        if path.relative_to(target) not in wanted:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m book.site.editions", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("config").add_argument("edition", choices=sorted(EDITIONS))
    sub.add_parser("gettext")
    sub.add_parser("notebooks-zh")
    published = sub.add_parser("publish")
    published.add_argument("--from", dest="source", type=Path, default=None)
    published.add_argument("--to", dest="target", type=Path, default=None)
    view = sub.add_parser("preview")
    view.add_argument("edition", choices=sorted(EDITIONS))
    view.add_argument("chapters", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "config":
        print(write_config(args.edition))
    elif args.command == "gettext":
        gettext()
    elif args.command == "notebooks-zh":
        from book.site import zh_notebooks

        written = zh_notebooks.write_notebooks()
        print(f"{len(written)} Chinese notebooks in {zh_notebooks.OUT_DIR}")
    elif args.command == "preview":
        print(preview(args.edition, args.chapters))
    else:
        print(publish(args.source, args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
