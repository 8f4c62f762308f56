"""A small Sphinx extension that makes the HTML book work offline, from ``file://``, and light.

* plotly.js: a bundle of just the traces the book's figures use (scatter, bar, heatmap; 1.26 MB
  instead of 4.8 MB, and evaluated in about half the time of plotly.js's 1.5 MB "cartesian"
  bundle), built from plotly.js's sources by ``assets/vendor/plotly/refresh.py`` and vendored
  in ``assets/vendor/plotly/`` at the plotly.js version of
  the *installed* plotly (so the figure JSON and the library always match: the build stops on a
  mismatch and names the refresh script), copied into ``_static/vendor/`` and loaded only on
  pages that hold a plotly figure;
* Font Awesome's 1.5 MB JavaScript (it swaps every ``<i class="fa-…">`` for an inline SVG) is
  not loaded: the theme's stylesheet already draws the same icons from its web font;
* MathJax 3 is copied from the ``django-static-mathjax`` package into
  ``_static/vendor/mathjax/``; Sphinx's own mathjax extension loads it only on pages with math,
  via ``mathjax_path``. Its CommonHTML output draws the formulas with MathJax's TeX web fonts
  (woff, fetched from ``_static`` like any stylesheet's font, so it works from ``file://``) and
  loads only the fonts a page uses: 0.2 MB of output code plus ~0.1 MB of fonts, where the SVG
  output carried every glyph's outline in a 1.07 MB script on every page with math;
* rebuilds are never stale: Sphinx re-reads (and MyST-NB, in ``force`` mode, re-executes) only
  the sources that changed, and a notebook's source does not change when the ``book/`` code it
  calls does. Each notebook's *inputs* — the ``book/`` modules it imports, followed through
  their own imports (book/site/imports.py), the string table (``book/strings/*.toml``), the
  data files under ``assets/`` and the versions of the libraries that compute its outputs — are
  hashed into the build environment; a notebook whose hash moved is read (so executed) again.
  An unchanged tree still rebuilds in seconds.

* concept questions: ``book/face/questions.js`` is copied to ``_static/book-questions.js`` and
  loaded on the pages that hold a question (book/face/questions.py); in-page explorers:
  the modules of ``book/face/inpage/``, joined by ``book/site/scripts.py``, to
  ``_static/book-inpage.js``, loaded on the pages that hold one
  (book/face/inpage.py); value exercises answered in the page: ``book/face/exercises.js`` to
  ``_static/book-exercises.js``, loaded on the pages that hold one (book/face/checks.py);
* the page itself: ``book-page.js`` (assets/static) lists search results from ``file://``
  without the excerpts a browser refuses to fetch there, and scales figures to the paper when
  printing; the theme's search field and MyST-NB's hidden-cell toggles are named by the text
  they show (WCAG 2.5.3), one template copy and one page-body edit below.

The vendored trees stay out of ``html_static_path`` on purpose: Jupyter Book adds every ``.js``
file found there to every page.
"""

from __future__ import annotations

import hashlib
import logging
import os
import posixpath
import re
import shutil
from importlib import metadata
from pathlib import Path

from book.site import (
    editions,
    execution,
    imports,
    page_fonts,
    pdf,
    scripts,
    student,
    templates,
    terms,
)

PLOTLY_JS = "vendor/plotly-book.min.js"
PLOTLY_BUNDLE = "plotly-book.min.js"  # in assets/vendor/plotly/
PAGE_JS = "book-page.js"
MATHJAX_JS = "vendor/mathjax/startup.js"
# MathJax's loader fetches just these components (~0.75 MB with the fonts a chapter uses)
# instead of an all-in-one bundle (tex-chtml.js 1.2 MB, tex-svg.js 2.1 MB, both with the 0.4 MB
# right-click menu); the hidden MathML that screen readers read (a11y/assistive-mml) stays.
MATHJAX_LOAD = ["input/tex", "output/chtml", "a11y/assistive-mml"]
# MathJax parts the book never loads: the speech engine, the all-in-one bundles, SVG output.
_MATHJAX_SKIP = ("sre", "tex-*.js", "mml-*.js", "node-main.js", "latest.js", "svg", "svg.js")
VENDOR = Path(__file__).resolve().parents[2] / "assets" / "vendor"
REFRESH = "python assets/vendor/plotly/refresh.py"


def bundled_plotlyjs_version() -> str:
    """The plotly.js version that the installed plotly (Python) generates figures for."""
    import plotly.offline

    return plotly.offline.get_plotlyjs_version()


def vendored_plotlyjs_version(path: Path | None = None) -> str:
    """The version in the vendored bundle's banner (``plotly.js (book: … - minified) vX``)."""
    path = VENDOR / "plotly" / PLOTLY_BUNDLE if path is None else path
    head = path.read_bytes()[:400].decode("utf-8", "replace")
    found = re.search(r"plotly\.js \(book: [^)]*\) v(\S+)", head)
    if not found:
        raise ValueError(f"{path} does not start with the book's plotly.js banner; rebuild it "
                         f"with `{REFRESH}`")
    return found.group(1)


def plotly_js_path() -> Path:
    """The vendored bundle, after checking it matches the installed plotly."""
    path = VENDOR / "plotly" / PLOTLY_BUNDLE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; restore it from git or run `{REFRESH}`")
    vendored, bundled = vendored_plotlyjs_version(path), bundled_plotlyjs_version()
    if vendored != bundled:
        raise RuntimeError(f"the vendored plotly.js bundle is v{vendored} but the "
                           f"installed plotly generates figures for plotly.js v{bundled}; run "
                           f"`{REFRESH}`")
    return path


def mathjax_dir() -> Path:
    try:
        import mathjax  # the django-static-mathjax distribution
    except ImportError:
        raise ImportError("MathJax for the offline book comes from the PyPI package "
                          "django-static-mathjax; run `make book` (or pip install "
                          "-r requirements-dev.txt)") from None
    path = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (path / "startup.js").is_file() or not (path / "output" / "chtml.js").is_file():
        raise FileNotFoundError(f"MathJax 3 es5 files not found under {path}")
    return path


def _page_has_plotly(context: dict) -> bool:
    return "plotly-graph-div" in (context.get("body") or "")


def _add_plotly(app, pagename, templatename, context, doctree):
    if app.builder.format == "html" and _page_has_plotly(context):
        # Loaded synchronously in <head>: each figure's inline script calls Plotly.newPlot.
        app.builder.add_js_file(PLOTLY_JS, priority=100)


# Scripts of book/face written into _static and loaded only on the pages that hold what they
# serve (the marker in the page's body): concept questions (book/face/questions.py; the same file
# a question's output inlines in Jupyter), in-page explorers that recompute their figures from
# their controls (book/face/inpage.py; a folder of modules, joined by book/site/scripts.py),
# value exercises answered in the page (book/face/checks.py).
PAGE_SCRIPTS = {"book-questions.js": ("questions.js", 'class="book-question"'),
                "book-inpage.js": ("inpage", 'class="book-inpage"'),
                "book-exercises.js": ("exercises.js", 'class="book-exercise '),
                "book-figures.js": ("figures.js", 'class="book-figure"')}
QUESTIONS_JS, INPAGE_JS, EXERCISES_JS, FIGURES_JS = PAGE_SCRIPTS


def face_script(name: str) -> Path:
    """The package's file behind the page script ``name`` (a key of PAGE_SCRIPTS), or the
    folder of its modules."""
    return Path(__file__).resolve().parents[1] / "face" / PAGE_SCRIPTS[name][0]


def page_script_text(name: str) -> str:
    """What the build writes to ``_static/<name>``: the file as it is, or a folder's modules
    joined into one script (:func:`book.site.scripts.inpage_script`)."""
    source = face_script(name)
    if source.is_dir():
        return scripts.inpage_script()
    return source.read_text(encoding="utf-8")


def questions_js_path() -> Path:
    return face_script(QUESTIONS_JS)


def _add_page_scripts(app, pagename, templatename, context, doctree):
    if app.builder.format == "html":
        body = context.get("body") or ""
        for name, (_, marker) in PAGE_SCRIPTS.items():
            if marker in body:
                app.builder.add_js_file(name)


def _copy_page_scripts(app, exception):
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        for name in PAGE_SCRIPTS:
            text, target = page_script_text(name), static / name
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")   # a rebuild leaves an equal one as is


def _is_thebe(asset) -> bool:
    return "thebe" in (getattr(asset, "filename", None) or "") or \
        "THEBE_JS_URL" in (getattr(asset, "attributes", {}).get("body", "") or "")


def _drop_thebe(app, pagename, templatename, context, doctree):
    """Jupyter Book 1 always loads sphinx-thebe, and declares its ``const THEBE_JS_URL`` twice
    per page (a console error). The book has no live kernel in the page: drop its assets."""
    for key in ("script_files", "css_files"):
        if key in context:
            context[key][:] = [a for a in context[key] if not _is_thebe(a)]


def _is_mathjax(asset) -> bool:
    name = getattr(asset, "filename", None) or ""
    body = getattr(asset, "attributes", {}).get("body", "") or ""
    return name.endswith(MATHJAX_JS) or body.startswith("window.MathJax")


def _mathjax_only_with_math(app, pagename, templatename, context, doctree):
    """Sphinx loads MathJax on a page whose toctree *includes* a page with math (for the
    single-page builder), so the landing page pulled in 2 MB of MathJax for no formula at all.
    Keep MathJax only on pages that hold math themselves."""
    domain = app.env.get_domain("math")
    if domain.data.get("has_equations", {}).get(pagename, False):
        return
    if "script_files" in context:
        context["script_files"][:] = [a for a in context["script_files"] if not _is_mathjax(a)]


def _copy_vendored(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    vendor = Path(app.outdir) / "_static" / "vendor"
    vendor.mkdir(parents=True, exist_ok=True)
    shutil.copy2(plotly_js_path(), vendor / Path(PLOTLY_JS).name)
    target = vendor / "mathjax"
    source = mathjax_dir()
    # a rebuild copies MathJax's files again only when the package moved or the copy is gone
    stamp = Path(app.doctreedir) / "book-mathjax-copied"
    if (target / "startup.js").is_file() and stamp.is_file() \
            and stamp.read_text(encoding="utf-8") == _tree_stamp(source):
        return
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*_MATHJAX_SKIP))
    stamp.write_text(_tree_stamp(source), encoding="utf-8")


def _tree_stamp(folder: Path) -> str:
    """Where a vendored tree comes from and its top file's size and time: a new package
    version (or another venv) changes it."""
    startup = folder / "startup.js"
    info = startup.stat()
    return f"{folder}\n{info.st_size} {info.st_mtime_ns}\n"


def _use_local_mathjax(app, config):
    config.mathjax_path = MATHJAX_JS


# The prose's numbers: {eval}`book.glued("name:.2f")`. jupyterlab-myst evaluates that in the
# reader's kernel; the build reads it as MyST-NB's {glue:text}`name:.2f` (glued outputs, no
# kernel at render time, so any nb_execution_mode works, "cache" included).
GLUED_ROLE = re.compile(r"""^book\.glued\((["'])(?P<key>[^"']+)\1\)$""")


def _glued_role():
    from myst_nb.ext.glue.roles import PasteTextRole
    from myst_nb.ext.glue.utils import glue_warning

    class GluedRole(PasteTextRole):
        """``{eval}`book.glued("key")``` pasted as ``{glue:text}`key```; nothing else is
        evaluated (the build never runs code from the prose)."""

        def run(self):
            match = GLUED_ROLE.match(self.text.strip())
            if match is None:
                return [], [glue_warning(
                    f"{{eval}}`{self.text}`: the book only evaluates book.glued(\"name:format\") "
                    "in the prose; glue the value in a code cell (book.glue) and write "
                    "{eval}`book.glued(\"name:.2f\")`", self.document, self.line)]
            self.text = match.group("key")
            if ":" not in self.text:  # MyST-NB's default format, spelt out: a "doc::key" with
                self.text += ":s"     # no format would split at its "::" (rsplit(":", 1))
            env = getattr(self.document.settings, "env", None)
            if "nb_renderer" not in self.document and env is not None:
                # A translated paragraph (the Chinese edition): Sphinx re-parses the msgstr as a
                # document of its own, without the notebook's glue data, so the key is looked
                # up as a reference to this page's own notebook, resolved after reading.
                own = posixpath.basename(str(env.doc2path(env.docname, False)))
                self.text = f"{own}::{self.text}"
            return super().run()

    return GluedRole


def _generated_markdown():
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class GeneratedMarkdown(SphinxDirective):
        """``{book-markdown} name``: MyST markdown drawn by code, parsed into the page.

        The directive emits the ``book-markdown`` event with the name and the edition's
        language; the extension that draws that name (the teacher's guide's plan and tables:
        ``book.site.teachers_guide``, listed in _config.yml) answers with the markdown, in
        that language, and the files it read (the page is rebuilt when one changes). The text is
        already in the page's language, so the gettext catalogues never see it."""

        required_arguments = 1
        has_content = False

        def run(self):
            name = self.arguments[0]
            language = editions.edition_of(self.config.language)
            answer = self.env.app.emit_firstresult("book-markdown", name, language)
            if answer is None:
                raise self.error(f"{{book-markdown}} {name}: no extension draws {name!r} (is "
                                 "the module that does listed in _config.yml's extensions?)")
            text, files = answer
            for path in files:
                self.env.note_dependency(str(path))
            container = nodes.container(classes=["book-generated"])
            self.state.nested_parse(StringList(text.splitlines(), source=name),
                                    self.content_offset, container)
            for node in container.findall(nodes.TextElement):
                node["translatable"] = False
            return container.children

    return GeneratedMarkdown


def _mathjax_components(app):
    """Tell MathJax's loader which components to fetch (merged into the page's MathJax config;
    done once the other extensions have set theirs)."""
    conf = dict(app.config.mathjax3_config or {})
    loader = dict(conf.get("loader") or {})
    loader.setdefault("load", list(MATHJAX_LOAD))
    conf["loader"] = loader
    app.config.mathjax3_config = conf


_FONTAWESOME_JS = re.compile(r"[ \t]*<script[^>]*scripts/fontawesome\.js[^>]*></script>\n?")


def _without_fontawesome_js(app, config):
    """Put first on the template path a copy of the theme's ``static/webpack-macros.html``
    without its ``fontawesome.js`` script tag (the theme's CSS and web font draw the icons).
    The copy is made from the installed theme on every build, so its asset digests stay right.
    """
    try:
        import pydata_sphinx_theme
    except ImportError:
        return
    theme = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    macros = theme / "static" / "webpack-macros.html"
    if not macros.is_file():
        return
    text, n = _FONTAWESOME_JS.subn("", macros.read_text(encoding="utf-8"))
    if n == 0:
        return  # a theme version without it: nothing to drop
    templates.override(app, config, "static/webpack-macros.html", text)


# The theme's search field names itself "Search" (aria-label) while it shows "Search the book…
# Ctrl+K": a speech-input user saying what they see finds no such control (axe's
# label-content-name-mismatch, WCAG 2.5.3). Without the aria-label its name is what it shows.
_SEARCH_FIELD_LABEL = re.compile(r' aria-label="\{\{ _\(\'Search\'\) \}\}"')


def _search_field_named_by_its_text(app, config):
    """A copy of the theme's ``search-button-field.html`` without its aria-label (see above)."""
    try:
        import pydata_sphinx_theme
    except ImportError:
        return
    path = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
            / "components" / "search-button-field.html")
    if not path.is_file():
        return
    text, n = _SEARCH_FIELD_LABEL.subn("", path.read_text(encoding="utf-8"))
    if n:
        templates.override(app, config, "search-button-field.html", text)


# The theme loads Sphinx's search scripts and the whole search index (searchindex.js: 85 KB in
# English, 140 KB in Chinese) on every page, for its search-as-you-type box. With that option
# off (the default, and this book's setting) nothing on a page uses them: the search field
# opens search.html, which loads them itself.
_SEARCH_SCRIPTS = re.compile(
    r"[ \t]*<script src=\"\{\{ pathto\('(?:_static/searchtools\.js|_static/language_data\.js|"
    r"searchindex\.js)', 1\) \| e \}\}\"></script>\n?")


def _search_scripts_only_on_the_search_page(app, config):
    """A copy of the theme's ``layout.html`` without the search scripts on other pages (above),
    unless search-as-you-type is on."""
    if (config.html_theme_options or {}).get("search_as_you_type"):
        return
    try:
        import pydata_sphinx_theme
    except ImportError:
        return
    path = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
            / "layout.html")
    if not path.is_file():
        return
    text, n = _SEARCH_SCRIPTS.subn("", path.read_text(encoding="utf-8"))
    if n == 3:  # a theme version that loads them otherwise is left as it is
        templates.override(app, config, "pydata_sphinx_theme/layout.html", text)


# MyST-NB names a hidden cell's toggle "Toggle hidden content" while it shows "Show code cell
# content" (the same WCAG 2.5.3 mismatch): a <details> summary is named by its text and tells
# its open state itself, so the label goes.
_HIDDEN_CELL_LABEL = '<summary aria-label="Toggle hidden content">'


def _hidden_cells_named_by_their_text(app, pagename, templatename, context, doctree):
    if "body" in context and _HIDDEN_CELL_LABEL in context["body"]:
        context["body"] = context["body"].replace(_HIDDEN_CELL_LABEL, "<summary>")


# ---- never-stale rebuilds ---------------------------------------------------------------------

# The import graph (which book/ modules a notebook reaches) is book/site/imports.py's; the
# hashes of what they reach are here.
# Libraries whose version changes a notebook's output; a new version re-executes every notebook.
VERSIONED = ("numpy", "torch", "plotly", "ipywidgets", "anywidget")
# Under assets/: what the build copies as it is (no notebook reads it to compute an output).
_NOT_DATA = ("static", "vendor")


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shared_inputs(srcdir: Path, package: Path = imports.PACKAGE) -> str:
    """One digest of what every notebook depends on: data files under assets/, the string table
    (book/strings/*.toml: every figure title, widget label, exercise message and printed line a
    notebook draws comes from it, in both languages), the code catalogues
    (locale/zh_CN/code/*.po, read by book.show_source), library versions."""
    h = hashlib.sha256()
    for path in sorted((package / "strings").glob("*.toml")):
        h.update(f"strings/{path.name}:{_file_digest(path)}\n".encode())
    # the code catalogues: book.show_source prints its listing's Chinese comments and docstrings
    for path in sorted((package.parent / "locale" / "zh_CN" / "code").glob("*.po")):
        h.update(f"code/{path.name}:{_file_digest(path)}\n".encode())
    assets = srcdir / "assets"
    if assets.is_dir():
        for path in sorted(assets.rglob("*")):
            rel = path.relative_to(assets)
            if path.is_file() and rel.parts[0] not in _NOT_DATA:
                h.update(f"{rel.as_posix()}:{_file_digest(path)}\n".encode())
    for name in VERSIONED:
        try:
            h.update(f"{name}=={metadata.version(name)}\n".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name} missing\n".encode())
    return h.hexdigest()


def notebook_input_hashes(notebooks: dict[str, Path], srcdir: Path,
                          package: Path = imports.PACKAGE) -> dict[str, str]:
    """docname -> hash of the inputs of that notebook besides its own source (see above)."""
    shared = _shared_inputs(srcdir, package)
    digests: dict[str, str] = {}
    read: dict[str, set[str] | None] = {}   # each module's imports, read once for all notebooks
    out = {}
    for docname, path in notebooks.items():
        used = imports.notebook_closure(path, package, read)
        h = hashlib.sha256(shared.encode())
        for name in sorted(used):
            if name not in digests:
                digests[name] = _file_digest(imports.module_file(name, package))
            h.update(f"{name}:{digests[name]}\n".encode())
        out[docname] = h.hexdigest()
    return out


def _outdated_notebooks(app, env, added, changed, removed):
    """``env-get-outdated``: the notebooks whose inputs changed since they were last read."""
    notebooks = {}
    for docname in env.found_docs:
        path = Path(env.doc2path(docname))
        if path.suffix == ".ipynb":
            notebooks[docname] = path
    hashes = notebook_input_hashes(notebooks, Path(app.srcdir))
    before = getattr(env, "book_notebook_inputs", {})
    env.book_notebook_inputs = hashes  # pickled with the environment
    stale = sorted(d for d, h in hashes.items()
                   if before.get(d) != h and d not in added and d not in changed)
    if stale and before:
        print(f"book.site.sphinxext: inputs changed, re-executing {len(stale)} notebook(s): "
              + ", ".join(stale))
    return stale


def _quiet_jieba(app, config):
    """Sphinx's Chinese search cuts words with jieba, whose logger prints its dictionary's
    loading at DEBUG ("Building prefix dict …", "Loading model cost 1.5 seconds."): four lines
    of a library's log in a newcomer's ``make book``. Imported here first, so its level stays."""
    if (config.language or "").startswith("zh"):
        try:
            import jieba
        except ImportError:   # Sphinx then splits Chinese without it
            return
        jieba.setLogLevel(logging.WARNING)


# sphinx-togglebutton writes its hint ("Click to show", "Click to hide") on every fold's button
# from two settings whose defaults it translates with its own catalogue, filed under zh-cn, a
# folder gettext never looks in for Sphinx's zh_CN: the Chinese pages showed them in English.
TOGGLE_HINTS = ("togglebutton_hint", "togglebutton_hint_hide")


def _toggle_hints_in_chinese(app, config):
    """The fold buttons' hints of the Chinese edition, from locale/zh_CN/theme.toml; connected
    before sphinx-togglebutton's own config-inited handler, which writes them into the page."""
    if editions.edition_of(config.language) != "zh":
        return
    theme = editions.zh_theme()
    for name in TOGGLE_HINTS:
        if hasattr(config, name):   # sphinx-togglebutton is loaded
            setattr(config, name, theme[name])


def setup(app):
    # The build's kernels inherit this: book.glue then glues for the page (MyST-NB) instead of
    # showing figures in place, as it does in JupyterLab.
    os.environ["BOOK_BUILD"] = "1"
    app.add_role("eval", _glued_role()(), override=True)
    app.add_event("book-markdown")
    app.add_directive("book-markdown", _generated_markdown())
    editions.setup_sphinx(app)
    terms.setup_sphinx(app)   # the glossary page's tables, from locale/terms.toml
    student.setup_sphinx(app)
    pdf.setup_sphinx(app)     # make pdf: figures as stills, xelatex with CJK fonts
    # after every other step that writes the pages (the translated captions among them): each
    # page's own CJK font, subset to the characters it shows
    app.connect("build-finished", page_fonts.page_subsets, priority=900)
    # language of parts (WCAG 3.1.2): Chinese runs on English pages, English phrases on Chinese
    # pages get a lang of their own, on every written page (book/site/lang_parts.py)
    from book.site import lang_parts
    app.connect("build-finished", lang_parts.mark_build, priority=800)
    # search results from file:// without the excerpt fetch; figures scaled to the paper in print
    # (assets/static/book-page.js; html_static_path copies it)
    app.add_js_file(PAGE_JS)
    app.connect("config-inited", _use_local_mathjax)
    app.connect("config-inited", _quiet_jieba)
    app.connect("config-inited", _toggle_hints_in_chinese, priority=400)
    app.connect("builder-inited", _mathjax_components)
    app.connect("config-inited", _without_fontawesome_js)
    app.connect("config-inited", _search_field_named_by_its_text)
    app.connect("config-inited", _search_scripts_only_on_the_search_page)
    app.connect("html-page-context", _hidden_cells_named_by_their_text)
    app.connect("env-get-outdated", _outdated_notebooks)
    # the notebooks executed before Sphinx reads them, several at once, with progress, and
    # cached by the code they run (a prose-only edit executes nothing): book/site/execution.py
    execution.install(app)
    app.connect("html-page-context", _add_plotly)
    app.connect("html-page-context", _add_page_scripts)
    app.connect("build-finished", _copy_page_scripts)
    app.connect("html-page-context", _drop_thebe, priority=900)
    app.connect("html-page-context", _mathjax_only_with_math, priority=900)
    app.connect("build-finished", _copy_vendored)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


class PlotlyJsonMime:
    """MyST-NB mime plugin (registered in pyproject.toml): plotly's JSON output is for JupyterLab
    and the PDF; the HTML book shows the ``text/html`` twin that ``book.setup()``'s renderer emits
    beside it. The JSON becomes a node that only the LaTeX builder selects and draws as an image
    (book/site/pdf.py); handling the type (rather than leaving it unknown) keeps ``-W`` builds
    warning-free."""

    mime_priority_overrides = pdf.MIME_PRIORITY

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type != "application/vnd.plotly.v1+json":
            return None
        return [] if inline else [pdf.still_node(data.content, renderer.source)]


def _make_renderer():
    from myst_nb.core.render import NbElementRenderer

    class BookRenderer(NbElementRenderer):
        """MyST-NB renderer (``nb_render_plugin: book``) that never embeds ipywidgets state.

        Live widgets are the Jupyter face of an explorer; their outputs are removed from the
        book (``remove-output``). Executing them still leaves their state — the ~5 MB plotly
        FigureWidget bundle among it — in the notebook metadata, and MyST-NB would embed it in
        the page with the widget manager from a CDN. The static face is what the book shows.
        """

        def render_nb_finalise(self, metadata: dict) -> None:
            super().render_nb_finalise({k: v for k, v in metadata.items() if k != "widgets"})

    return BookRenderer


BookRenderer = _make_renderer()
