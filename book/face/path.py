"""The learner's path as the HTML book shows it: the landing page's list of chapters (core,
pitfalls, advanced; each with its badge, time and prerequisites) and the banner under each
chapter's title. Both are drawn from the same data (``book.chapters.PATH``, passed in by the
build's hook ``book.chapters.setup``), every word from the string table (``common.path_*``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from book.kit.i18n import tr

PLACEHOLDER = '<div class="book-path"></div>'
# The landing page's map of the book (a table) is folded in a <details> whose summary the
# build writes, in the edition's language (the table itself is translated with the page).
MAP_SUMMARY = '<summary class="book-map-summary"></summary>'
BADGES = ("core", "pitfalls", "advanced")


def _number(page: str) -> str:
    return page.split("_", 1)[0].lstrip("0") or "0"


def badge(name: str) -> str:
    """The badge ``name`` ("core", "pitfalls" or "advanced") as an HTML span."""
    if name not in BADGES:
        raise ValueError(f"badge must be one of {', '.join(BADGES)}, not {name!r}")
    return (f'<span class="book-badge book-badge-{name}">'
            f'{escape(tr(f"common.path_badge_{name}"))}</span>')


def _needs(chapter, titles: dict[str, str], link: Callable[[str], str]) -> str:
    if not chapter.needs:
        return escape(tr("common.path_needs_none"))
    pages = [f'<a href="{escape(link(page))}" title="{escape(titles.get(page, page))}">'
             f'{escape(tr("common.path_chapter", number=_number(page)))}</a>'
             for page in chapter.needs]
    return escape(tr("common.path_needs")) + tr("common.path_join").join(pages)


def facts(chapter, titles: dict[str, str], link: Callable[[str], str]) -> str:
    """Badge, time and prerequisites of ``chapter`` (a ``book.chapters.Chapter``) as HTML."""
    minutes = escape(tr("common.path_minutes", minutes=chapter.minutes))
    return (f'{badge(chapter.badge)} <span class="book-path-time">{minutes}</span> '
            f'<span class="book-path-needs">{_needs(chapter, titles, link)}</span>')


def banner(chapter, titles: dict[str, str], link: Callable[[str], str]) -> str:
    """The line under a chapter page's title."""
    return (f'<p class="book-path-banner" data-page="{escape(chapter.page)}">'
            f'{facts(chapter, titles, link)}</p>')


def add_banner(body: str, chapter, titles: dict[str, str],
               link: Callable[[str], str]) -> str:
    """``body`` (a chapter page's HTML) with the banner right after its ``<h1>``."""
    end = body.find("</h1>")
    if end < 0:
        raise ValueError(f"chapter page {chapter.page!r} has no <h1> title to put its banner "
                         "under: start the notebook with a '# N. Title' heading")
    end += len("</h1>")
    return body[:end] + banner(chapter, titles, link) + body[end:]


def path_html(parts: Sequence[tuple[str, Sequence]], titles: dict[str, str],
              link: Callable[[str], str]) -> str:
    """The landing page's path: one list per badge, every chapter with its facts."""
    out = ['<div class="book-path">']
    for name, chapters in parts:
        minutes = sum(c.minutes for c in chapters)
        out.append(f'<section class="book-path-part" data-badge="{escape(name)}">')
        out.append(f'<p class="book-path-part-title">{badge(name)} '
                   f'<strong>{escape(tr(f"common.path_part_{name}"))}</strong> '
                   f'<span class="book-path-time">'
                   f'{escape(tr("common.path_part_total", n=len(chapters), minutes=minutes))}'
                   f'</span></p>')
        out.append('<ol class="book-path-list">')
        for c in chapters:
            title = titles.get(c.page, c.page)
            out.append(f'<li class="book-path-item" data-page="{escape(c.page)}">'
                       f'<a href="{escape(link(c.page))}">{escape(title)}</a><br>'
                       f'{facts(c, titles, link)}</li>')
        out.append("</ol></section>")
    out.append("</div>")
    return "".join(out)


def fill_map_summary(body: str) -> str:
    """``body`` with the folded map's empty summary (:data:`MAP_SUMMARY`) given its words."""
    if MAP_SUMMARY not in body:
        return body
    return body.replace(MAP_SUMMARY, '<summary class="book-map-summary">'
                        f'{escape(tr("common.path_map_summary"))}</summary>', 1)


def fill_path(body: str, parts: Sequence[tuple[str, Sequence]], titles: dict[str, str],
              link: Callable[[str], str]) -> str:
    """``body`` (the landing page's HTML) with its placeholder replaced by the path."""
    if PLACEHOLDER not in body:
        raise ValueError(f"the landing page has no {PLACEHOLDER} to draw the learner's path "
                         "in: put that line under its 'Start here' heading (index.md)")
    return body.replace(PLACEHOLDER, path_html(parts, titles, link), 1)
