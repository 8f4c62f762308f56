"""From the page to a running notebook: the launch button and the "run this chapter" box.

Built with the class server's address in the environment, every chapter page of both editions
gets sphinx-book-theme's JupyterHub launch button and a box under the chapter's banner with the
same link::

    BOOK_HUB_URL=http://hub.example.org:8000 make book
    BOOK_HUB_COURSE=/srv/attention-hub/course   # the default: make hub's course repository

The link is nbgitpuller's: ``{hub}/hub/user-redirect/git-pull?repo=<course>&urlpath=lab/tree/
course/chapters/<page>.ipynb&branch=main&targetpath=course`` (the Chinese edition opens
``course/zh/chapters/<page>.ipynb``). The first click clones the course into the student's
``~/course``; later clicks merge what changed and never overwrite the student's edits.
``targetpath`` names that folder: nbgitpuller's own default is the repository URL's last part
as it is, ``.git`` included (``course.git``).

Built without it, the box says how to run the chapter on one's own computer: ``make lab
CHAPTER=02`` in a copy of the repository (``git clone`` first when ``_config.yml``'s
``repository.url`` is set), and when that URL is a GitHub repository, the theme's Binder button
(mybinder.org) is added instead of the JupyterHub one (the image: ``.binder/``).

Jupyter Book 1 would set these from ``_config.yml``'s ``launch_buttons`` and ``repository``,
but the book's ``sphinx.config.html_theme_options`` replaces the theme options those make, so
this extension (``_config.yml``'s ``sphinx.extra_extensions``) sets them itself when the
configuration is read, and puts the exact link into the button once the theme has drawn it.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import yaml

from book.site import editions

HUB_URL_ENV = "BOOK_HUB_URL"
HUB_COURSE_ENV = "BOOK_HUB_COURSE"
DEFAULT_COURSE = "/srv/attention-hub/course"   # make hub's (HUB_DIR/course)
BRANCH = "main"                      # the course repository's branch (the hub's layout)
BINDER_URL = "https://mybinder.org"
INTERFACE = "jupyterlab"             # the theme's name for lab/tree/ links
BANNER = re.compile(r'<p class="book-path-banner" data-page="([^"]+)">.*?</p>', re.S)
_GITHUB = re.compile(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?/?")


@dataclass(frozen=True)
class Hub:
    """The class's JupyterHub (``url``, no trailing slash) and the course repository
    nbgitpuller clones from (``course``: a path on the hub machine or a git URL)."""

    url: str
    course: str

    @property
    def folder(self) -> str:
        """The folder the course lands in, in the student's home (``course``)."""
        return folder_of(self.course)


def folder_of(repository: str) -> str:
    """The folder ``git clone repository`` makes: its last part without ``.git``."""
    name = repository.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    name = name.removesuffix(".git")
    if not name or name in {".", ".."}:
        raise ValueError(f"cannot name a folder after the repository {repository!r}: end it "
                         "with the repository's name, e.g. /srv/attention-hub/course.git")
    return name


def hub_url(value: str) -> str:
    """``value`` checked as the hub's address (``BOOK_HUB_URL``): an http or https URL with a
    host, no query or fragment; returned without its trailing slash."""
    if not isinstance(value, str):
        raise TypeError(f"{HUB_URL_ENV} must be a string, got {type(value).__name__}")
    text = value.strip()
    parts = urlsplit(text)
    problem = None
    if parts.scheme not in ("http", "https"):
        problem = "it must start with http:// or https://"
    elif not parts.hostname or any(c.isspace() for c in text):
        problem = "it has no host name (or has spaces)"
    elif parts.query or parts.fragment:
        problem = "it must not carry a query (?…) or a fragment (#…)"
    else:
        try:
            parts.port  # noqa: B018 - raises on a port that is no number
        except ValueError:
            problem = "its port is not a number"
    if problem:
        raise ValueError(f"{HUB_URL_ENV}={value!r} is not the class server's address: "
                         f"{problem}. Give the hub's URL, e.g. "
                         f"{HUB_URL_ENV}=http://hub.example.org:8000")
    return text.rstrip("/")


def course_repository(value: str) -> str:
    """``value`` checked as the course repository (``BOOK_HUB_COURSE``): an absolute path on
    the hub machine or a git URL (``https://``, ``ssh://``, ``git@host:…``)."""
    if not isinstance(value, str):
        raise TypeError(f"{HUB_COURSE_ENV} must be a string, got {type(value).__name__}")
    text = value.strip()
    remote = re.match(r"(https?|ssh|git|file)://\S+$|[\w.-]+@[\w.-]+:\S+$", text)
    if not (remote or (text.startswith("/") and not any(c.isspace() for c in text))):
        raise ValueError(f"{HUB_COURSE_ENV}={value!r} is not a course repository: give an "
                         f"absolute path on the hub machine (the default, {DEFAULT_COURSE}) "
                         "or a git URL")
    folder_of(text)
    return text


def hub_from_env(environ=None) -> Hub | None:
    """The hub the book is built for (``BOOK_HUB_URL``, ``BOOK_HUB_COURSE``), or None when
    ``BOOK_HUB_URL`` is unset or empty."""
    environ = os.environ if environ is None else environ
    url = environ.get(HUB_URL_ENV, "")
    if not url.strip():
        return None
    course = environ.get(HUB_COURSE_ENV, "").strip() or DEFAULT_COURSE
    return Hub(hub_url(url), course_repository(course))


def notebook_path(page: str, edition: str) -> str:
    """The chapter notebook's path in the course (and in the repository):
    ``chapters/02_scaling.ipynb``, the Chinese one under ``zh/``. ``page``: ``02_scaling`` or
    the page's name in the build, ``chapters/02_scaling``."""
    if edition not in editions.EDITIONS:
        raise ValueError(f"edition must be one of {', '.join(editions.EDITIONS)}, "
                         f"not {edition!r}")
    if not isinstance(page, str) or not re.fullmatch(r"(chapters/)?[\w-]+", page):
        raise ValueError(f"page must name a chapter page like '02_scaling', not {page!r}")
    docname = page if page.startswith("chapters/") else f"chapters/{page}"
    return posixpath.join(editions.EDITIONS[edition]["folder"], f"{docname}.ipynb")


def launch_url(hub: Hub, page: str, edition: str) -> str:
    """nbgitpuller's link that opens ``page`` of ``edition`` in the student's JupyterLab."""
    path = notebook_path(page, edition)
    query = urlencode({"repo": hub.course, "urlpath": f"lab/tree/{hub.folder}/{path}",
                       "branch": BRANCH, "targetpath": hub.folder}, safe="/")
    return f"{hub.url}/hub/user-redirect/git-pull?{query}"


def chapter_number(page: str) -> str:
    """What ``make lab CHAPTER=`` takes for ``page``: ``02`` for ``02_scaling``."""
    return page.removeprefix("chapters/").split("_", 1)[0]


def lab_command(page: str, edition: str) -> str:
    """The command that opens ``page`` of ``edition`` in JupyterLab on one's own computer."""
    command = f"make lab CHAPTER={chapter_number(page)}"
    return command + " BOOK_LANG=zh" if edition == "zh" else command


def repository_url(root: Path | str) -> str:
    """``repository.url`` of the book's ``_config.yml`` under ``root`` ("" if none)."""
    path = Path(root) / "_config.yml"
    if not path.is_file():
        return ""
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return str((config.get("repository") or {}).get("url") or "").strip()


def github_parts(url: str) -> tuple[str, str] | None:
    """(owner, repository) of a GitHub repository URL, else None."""
    match = _GITHUB.fullmatch(url.strip())
    return (match.group(1), match.group(2)) if match else None


# --- the box -----------------------------------------------------------------------------------

def box(page: str, edition: str, hub: Hub | None, repository: str = "") -> str:
    """The "run this chapter" box of ``page`` in ``edition``: the hub's link, or the command
    that runs it locally (``git clone … &&`` first when the book names its ``repository``),
    each inside one sentence, so that the box takes two lines of a desktop screen."""
    from book.kit import i18n

    i18n.check_language(edition)
    previous = i18n.language()
    i18n.set_language(edition)
    try:
        label = (f'<strong id="book-run-label" class="book-run-label">'
                 f'{escape(i18n.tr("common.run_label"))}</strong>')
        if hub is not None:
            link = (f'<a class="book-run-link" href="{escape(launch_url(hub, page, edition))}">'
                    f'{escape(i18n.tr("common.run_hub_link"))}</a>')
            before, after = i18n.tr("common.run_hub", link="\0").split("\0")
            body = f"<p>{label}{escape(before)}{link}{escape(after)}</p>"
        else:
            command = lab_command(page, edition)
            if repository:
                command = (f"git clone {repository} && cd {folder_of(repository)} "
                           f"&& {command}")
            words = "common.run_local_clone" if repository else "common.run_local"
            before, after = i18n.tr(words, command="\0").split("\0")
            body = (f'<p>{label}{escape(before)}<code class="book-run-command">'
                    f'{escape(command)}</code>{escape(after)}</p>')
    finally:
        i18n.set_language(previous)
    kind = "hub" if hub is not None else "local"
    return (f'<div class="book-run book-run-{kind}" role="note" '
            f'aria-labelledby="book-run-label">{body}</div>')


def add_box(body: str, edition: str, hub: Hub | None, repository: str = "") -> str:
    """``body`` (a chapter page's HTML) with the box right after its banner (the line of
    badge, time and prerequisites that ``book.chapters`` puts under the title); a page
    without a banner (not a chapter) is returned as it is."""
    match = BANNER.search(body)
    if match is None:
        return body
    return (body[:match.end()] + box(match.group(1), edition, hub, repository)
            + body[match.end():])


# --- Sphinx ------------------------------------------------------------------------------------

def configure(app, config) -> None:
    """``config-inited``: the theme's launch button (JupyterHub with ``BOOK_HUB_URL``, else
    Binder for a GitHub ``repository.url``), and what the pages need to draw the box."""
    from sphinx.errors import ConfigError

    try:
        hub = hub_from_env()
    except ValueError as error:
        raise ConfigError(str(error)) from None
    edition = editions.edition_of(config.language)
    repository = repository_url(app.srcdir)
    app.book_launch = {"hub": hub, "edition": edition, "repository": repository}
    theme = config.html_theme_options
    context = config.html_context
    if hub is not None:
        # the theme builds {github_url}/{github_user}/{github_repo} from these and opens
        # {github_repo}/{path_to_docs}/{page}: the course without its .git (git finds the
        # repository either way); launch_url's exact link replaces it on each page
        head, _, owner = hub.course.removesuffix(".git").rstrip("/").rpartition("/")
        head, _, user = head.rpartition("/")
        context.update({"github_url": head, "github_user": user or owner,
                        "github_repo": hub.folder})
        theme["launch_buttons"] = {"notebook_interface": INTERFACE, "jupyterhub_url": hub.url}
    elif (parts := github_parts(repository)) is not None:
        context.update({"github_url": "https://github.com", "github_user": parts[0],
                        "github_repo": parts[1]})
        theme["launch_buttons"] = {"notebook_interface": INTERFACE, "binderhub_url": BINDER_URL}
    else:
        return
    theme["repository_branch"] = BRANCH
    theme["path_to_docs"] = editions.EDITIONS[edition]["folder"]


def page_context(app, pagename, templatename, context, doctree) -> None:
    """``html-page-context``, after the theme's buttons and the chapter's banner: the
    JupyterHub button's exact link and words, and the box under the banner."""
    settings = getattr(app, "book_launch", None)
    if settings is None or app.builder.format != "html" or "body" not in context:
        return
    hub, edition = settings["hub"], settings["edition"]
    if hub is not None and pagename.startswith("chapters/"):
        for group in context.get("header_buttons", []):
            for button in group.get("buttons", []):
                if button.get("text") == "JupyterHub":
                    from book.kit import i18n

                    button["url"] = launch_url(hub, pagename, edition)
                    button["tooltip"] = i18n.table()["common.run_hub_link"][edition]
    context["body"] = add_box(context["body"], edition, hub, settings["repository"])


def setup(app):
    app.connect("config-inited", configure)
    # after sphinx-book-theme's buttons (501) and book.chapters' banner (500)
    app.connect("html-page-context", page_context, priority=510)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
