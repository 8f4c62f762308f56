"""book/site/launch.py: the nbgitpuller link of each chapter in each edition, the checks of
BOOK_HUB_URL and BOOK_HUB_COURSE, the theme settings made when the configuration is read, and
the "run this chapter" box (the built pages: tests/test_launch_buttons.py)."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest

from book.chapters import CHAPTERS
from book.kit import i18n
from book.site import launch

HUB = launch.Hub("http://hub.example.org:8000", "/srv/attention-hub/course.git")


def _query(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    return {k: v[0] for k, v in parse_qs(parts.query, strict_parsing=True).items()}


@pytest.mark.parametrize("edition, folder", [("en", ""), ("zh", "zh/")])
def test_launch_url_opens_the_chapter_in_the_course(edition, folder):
    url = launch.launch_url(HUB, "chapters/02_scaling", edition)
    assert url.startswith("http://hub.example.org:8000/hub/user-redirect/git-pull?")
    assert _query(url) == {"repo": "/srv/attention-hub/course.git",
                           "urlpath": f"lab/tree/course/{folder}chapters/02_scaling.ipynb",
                           "branch": "main", "targetpath": "course"}
    # the page's bare name says the same
    assert launch.launch_url(HUB, "02_scaling", edition) == url


def test_every_chapter_has_its_own_link():
    urls = {launch.launch_url(HUB, c.page, "en") for c in CHAPTERS}
    assert len(urls) == len(CHAPTERS)
    for c in CHAPTERS:
        assert _query(launch.launch_url(HUB, c.page, "zh"))["urlpath"] == \
            f"lab/tree/course/zh/chapters/{c.page}.ipynb"


def test_a_remote_course_and_a_hub_under_a_prefix():
    hub = launch.Hub(launch.hub_url("https://uni.example.org/jupyter/"),
                     launch.course_repository("https://git.example.org/class/ml-course.git"))
    url = launch.launch_url(hub, "04b_toy_model", "en")
    assert url.startswith("https://uni.example.org/jupyter/hub/user-redirect/git-pull?")
    query = _query(url)
    assert query["repo"] == "https://git.example.org/class/ml-course.git"
    assert query["targetpath"] == "ml-course"
    assert query["urlpath"] == "lab/tree/ml-course/chapters/04b_toy_model.ipynb"


@pytest.mark.parametrize("repository, folder", [
    ("/srv/attention-hub/course.git", "course"), ("/srv/course", "course"),
    ("/srv/course.git/", "course"), ("git@git.example.org:class/notes.git", "notes"),
    ("https://github.com/org/attention-book", "attention-book")])
def test_folder_of(repository, folder):
    assert launch.folder_of(repository) == folder


def test_hub_from_env():
    assert launch.hub_from_env({}) is None
    assert launch.hub_from_env({"BOOK_HUB_URL": "  "}) is None
    hub = launch.hub_from_env({"BOOK_HUB_URL": "http://127.0.0.1:8000/"})
    assert hub == launch.Hub("http://127.0.0.1:8000", "/srv/attention-hub/course")
    hub = launch.hub_from_env({"BOOK_HUB_URL": "https://hub.example.org",
                               "BOOK_HUB_COURSE": "/data/c.git"})
    assert hub.course == "/data/c.git" and hub.folder == "c"


@pytest.mark.parametrize("value, says", [
    ("hub.example.org:8000", "http:// or https://"),
    ("ftp://hub.example.org", "http:// or https://"),
    ("http://", "no host name"),
    ("http://hub example.org", "no host name"),
    ("http://hub.example.org/?next=/lab", "query"),
    ("http://hub.example.org/#top", "fragment"),
    ("http://hub.example.org:port", "port")])
def test_a_wrong_hub_url_is_named(value, says):
    with pytest.raises(ValueError, match="BOOK_HUB_URL") as error:
        launch.hub_from_env({"BOOK_HUB_URL": value})
    assert says in str(error.value) and "e.g. BOOK_HUB_URL=http://" in str(error.value)


@pytest.mark.parametrize("value", ["course.git", "srv/course.git", "/srv/my course.git", "/",
                                   "https://", "/srv/.git"])
def test_a_wrong_course_is_named(value):
    with pytest.raises(ValueError, match="BOOK_HUB_COURSE|folder"):
        launch.hub_from_env({"BOOK_HUB_URL": "http://h:8000", "BOOK_HUB_COURSE": value})


def test_wrong_types_and_pages():
    with pytest.raises(TypeError, match="BOOK_HUB_URL"):
        launch.hub_url(8000)
    with pytest.raises(TypeError, match="BOOK_HUB_COURSE"):
        launch.course_repository(None)
    with pytest.raises(ValueError, match="edition"):
        launch.notebook_path("02_scaling", "fr")
    with pytest.raises(ValueError, match="page"):
        launch.notebook_path("../02_scaling", "en")


@pytest.mark.parametrize("page, command", [
    ("02_scaling", "make lab CHAPTER=02"), ("chapters/04b_toy_model", "make lab CHAPTER=04b"),
    ("11_modern", "make lab CHAPTER=11")])
def test_lab_command(page, command):
    assert launch.lab_command(page, "en") == command
    assert launch.lab_command(page, "zh") == command + " BOOK_LANG=zh"


def test_github_parts_and_repository_url(tmp_path):
    assert launch.github_parts("https://github.com/org/attention-book") == \
        ("org", "attention-book")
    assert launch.github_parts("https://github.com/org/attention-book.git/") == \
        ("org", "attention-book")
    assert launch.github_parts("https://gitlab.com/org/book") is None
    assert launch.github_parts("") is None
    assert launch.repository_url(tmp_path) == ""
    (tmp_path / "_config.yml").write_text("repository:\n  url: ''\n", encoding="utf-8")
    assert launch.repository_url(tmp_path) == ""
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/o/b\n",
                                          encoding="utf-8")
    assert launch.repository_url(tmp_path) == "https://github.com/o/b"


# --- the box ---------------------------------------------------------------------------------

def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_the_hub_box_links_where_the_button_does(edition):
    box = launch.box("02_scaling", edition, HUB)
    assert box.startswith('<div class="book-run book-run-hub" role="note" '
                          'aria-labelledby="book-run-label">')
    assert 'id="book-run-label"' in box
    hrefs = re.findall(r'href="([^"]+)"', box)
    assert [html.unescape(h) for h in hrefs] == [launch.launch_url(HUB, "02_scaling", edition)]
    table = i18n.table()
    link = table["common.run_hub_link"][edition]
    said = table["common.run_label"][edition] + table["common.run_hub"][edition].format(link=link)
    assert _text(box) == said
    assert re.search(rf'<a class="book-run-link" href="[^"]+">{link}</a>', box)
    assert "make lab" not in box
    assert i18n.language() == "en", "the box left the language switched"


@pytest.mark.parametrize("edition, command", [("en", "make lab CHAPTER=04b"),
                                              ("zh", "make lab CHAPTER=04b BOOK_LANG=zh")])
def test_the_local_box_gives_the_command(edition, command):
    box = launch.box("04b_toy_model", edition, None)
    assert "book-run-local" in box and "href=" not in box
    code = re.findall(r'<code class="book-run-command">(.*?)</code>', box, re.S)
    assert [html.unescape(c) for c in code] == [command]
    table = i18n.table()
    assert _text(box) == (table["common.run_label"][edition]
                          + table["common.run_local"][edition].format(command=command))


def test_the_local_box_clones_a_named_repository():
    box = launch.box("02_scaling", "en", None, "https://github.com/org/attention-book.git")
    code = html.unescape(re.search(r"<code[^>]*>(.*?)</code>", box, re.S).group(1))
    assert code == ("git clone https://github.com/org/attention-book.git && cd attention-book "
                    "&& make lab CHAPTER=02")
    assert _text(box).endswith(i18n.table()["common.run_local_clone"]["en"].format(
        command=code))


def test_the_box_goes_under_the_banner_of_chapter_pages_only():
    banner = ('<h1>2. Scaling</h1><p class="book-path-banner" data-page="02_scaling">'
              '<span>core</span> <a href="01_intuition.html">chapter 1</a></p>')
    body = banner + "<p>First paragraph.</p>"
    out = launch.add_box(body, "en", HUB)
    assert out.startswith(banner + '<div class="book-run book-run-hub"')
    assert out.endswith("</div><p>First paragraph.</p>")
    assert out.count('id="book-run-label"') == 1
    page = "<h1>Glossary</h1><p>Words.</p>"
    assert launch.add_box(page, "en", HUB) == page


# --- Sphinx ------------------------------------------------------------------------------------

def _app(tmp_path, language="en", repository=""):
    if repository:
        (tmp_path / "_config.yml").write_text(f"repository:\n  url: {repository}\n",
                                              encoding="utf-8")
    config = SimpleNamespace(language=language, html_theme_options={"search_bar_text": "x"},
                             html_context={"default_mode": "light"})
    return SimpleNamespace(srcdir=str(tmp_path)), config


@pytest.mark.parametrize("language, folder", [("en", ""), ("zh_CN", "zh")])
def test_configure_sets_the_theme_for_the_hub(tmp_path, monkeypatch, language, folder):
    monkeypatch.setenv("BOOK_HUB_URL", "http://hub.example.org:8000")
    monkeypatch.delenv("BOOK_HUB_COURSE", raising=False)
    app, config = _app(tmp_path, language, "https://github.com/org/book")
    launch.configure(app, config)
    theme, context = config.html_theme_options, config.html_context
    assert theme["launch_buttons"] == {"notebook_interface": "jupyterlab",
                                       "jupyterhub_url": "http://hub.example.org:8000"}
    assert "binderhub_url" not in theme["launch_buttons"]
    assert theme["repository_branch"] == "main" and theme["path_to_docs"] == folder
    assert theme["search_bar_text"] == "x" and context["default_mode"] == "light"
    # what sphinx-book-theme makes of them: {url}/{user}/{repo}, and it opens {repo}/{path}
    assert (f"{context['github_url']}/{context['github_user']}/{context['github_repo']}"
            == "/srv/attention-hub/course")
    assert context["github_repo"] == "course"
    assert app.book_launch["hub"].url == "http://hub.example.org:8000"
    assert app.book_launch["edition"] == ("zh" if folder else "en")


def test_configure_adds_binder_for_a_github_repository(tmp_path, monkeypatch):
    monkeypatch.delenv("BOOK_HUB_URL", raising=False)
    app, config = _app(tmp_path, "zh_CN", "https://github.com/org/attention-book")
    launch.configure(app, config)
    assert config.html_theme_options["launch_buttons"] == {
        "notebook_interface": "jupyterlab", "binderhub_url": "https://mybinder.org"}
    assert config.html_theme_options["path_to_docs"] == "zh"
    assert config.html_context["github_user"] == "org"
    assert config.html_context["github_repo"] == "attention-book"
    assert app.book_launch["repository"] == "https://github.com/org/attention-book"


@pytest.mark.parametrize("repository", ["", "https://gitlab.com/org/book"])
def test_configure_adds_no_button_otherwise(tmp_path, monkeypatch, repository):
    monkeypatch.delenv("BOOK_HUB_URL", raising=False)
    app, config = _app(tmp_path, "en", repository)
    launch.configure(app, config)
    assert config.html_theme_options == {"search_bar_text": "x"}
    assert config.html_context == {"default_mode": "light"}
    assert app.book_launch == {"hub": None, "edition": "en", "repository": repository}


def test_configure_stops_the_build_on_a_wrong_hub_url(tmp_path, monkeypatch):
    from sphinx.errors import ConfigError

    monkeypatch.setenv("BOOK_HUB_URL", "hub.example.org")
    app, config = _app(tmp_path)
    with pytest.raises(ConfigError, match="BOOK_HUB_URL='hub.example.org'"):
        launch.configure(app, config)


def test_page_context_sets_the_buttons_link_and_the_box(tmp_path):
    app = SimpleNamespace(builder=SimpleNamespace(format="html"),
                          book_launch={"hub": HUB, "edition": "zh", "repository": ""})
    theirs = {"type": "link", "text": "JupyterHub", "url": "http://x/theirs", "tooltip": "t"}
    context = {"header_buttons": [{"type": "group", "buttons": [theirs]}],
               "body": '<h1>T</h1><p class="book-path-banner" data-page="02_scaling">b</p>'}
    launch.page_context(app, "chapters/02_scaling", "page.html", context, None)
    assert theirs["url"] == launch.launch_url(HUB, "chapters/02_scaling", "zh")
    assert theirs["tooltip"] == i18n.table()["common.run_hub_link"]["zh"]
    assert launch.launch_url(HUB, "02_scaling", "zh") in html.unescape(context["body"])
