"""Every figure of the HTML book as a reader with a screen reader or a keyboard meets it (WCAG 2.1
AA, issue 47): a ``<figure>`` named by a short text alternative, its caption (what it shows and
what it tells), the drawing hidden from the accessibility tree, the figure's plotly sliders and
menus as the page's own HTML controls, a "data" disclosure that holds the figure's numbers as a
table, and a polite live region that says what a redraw shows.

A chapter describes a figure where it draws it::

    from book.face.figures import describe
    return describe(fig, alt=tr("ch02.dk_alt"), caption=tr("ch02.dk_caption", d_k=64))

:func:`describe` keeps the two texts in ``layout.meta`` (so they travel with the figure into
every face: the static one, the live one, the page's); the book's renderer
(:mod:`book.face.display`) calls :func:`figure_html` to write the wrapper around plotly's
``<div>``. The page script ``figures.js`` (``_static/book-figures.js``) wires the controls to the
figure (each step's plotly ``method`` and ``args``, as plotly's own slider would run them),
fills the table from the figure's data when the reader opens it (and again after each redraw),
and announces each redraw a reader caused. JupyterLab draws the plotly JSON itself and keeps
plotly's own controls.
"""

from __future__ import annotations

import html
import re

from book.kit import i18n

ALT = "book_alt"
DIAGRAM_WORDS = "book_diagram_words"  # a diagram's texts in drawing order (book.face.diagrams)
MENU_PX = 30  # a plotly dropdown's header: 12 px text and its padding and border
CAPTION = "book_caption"
_TAGS = re.compile(r"<[^>]+>")
_BREAKS = re.compile(r"<br\s*/?>", re.IGNORECASE)


def _text(name: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"describe: {name} must be a non-empty sentence in the book's language "
                         f"(from the string table: tr('chNN.figure_{name}')), got {value!r}")
    return value.strip()


def describe(fig, *, alt: str, caption: str):
    """``fig`` with its text alternative and caption (both plain text, the edition's language).

    ``alt``: one short sentence a screen reader reads first, saying what kind of picture it is
    and of what ("Two histograms of 4,000 dot products at d_k = 64: raw and scaled.").
    ``caption``: what the figure shows and the conclusion a reader should take from it, shown
    under it to everyone. Returns ``fig`` (a plotly ``go.Figure``), so a figure function can end
    with ``return describe(fig, ...)``.
    """
    if not hasattr(fig, "update_layout") or not hasattr(fig, "layout"):
        raise TypeError(f"describe takes a plotly go.Figure, got {type(fig).__name__}")
    meta = fig.layout.meta
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta.update({ALT: _text("alt", alt), CAPTION: _text("caption", caption)})
    fig.update_layout(meta=meta)
    return fig


def described(fig_dict: dict) -> tuple[str, str] | None:
    """The (alt, caption) :func:`describe` gave a figure (as a dict), or None."""
    meta = (fig_dict.get("layout") or {}).get("meta")
    if isinstance(meta, dict) and meta.get(ALT) and meta.get(CAPTION):
        return meta[ALT], meta[CAPTION]
    return None


def plain(text) -> str:
    """A plotly label as plain text: line breaks as spaces, tags dropped."""
    if text is None:
        return ""
    if isinstance(text, dict):
        text = text.get("text", "")
    return " ".join(_TAGS.sub("", _BREAKS.sub(" ", str(text))).split())


def _fallback(fig_dict: dict) -> tuple[str, str]:
    """An undescribed figure's alt and caption, from its title and axes (a test lists the
    figures that still use it)."""
    layout = fig_dict.get("layout") or {}
    kinds = sorted({t.get("type", "scatter") for t in fig_dict.get("data", ())})
    title = plain(layout.get("title")) or i18n.tr("common.figure_untitled")
    x = plain((layout.get("xaxis") or {}).get("title"))
    y = plain((layout.get("yaxis") or {}).get("title"))
    alt = i18n.tr("common.figure_alt_generic", kinds=", ".join(kinds), x=x or "x", y=y or "y")
    return alt, title


def _slider_label(slider: dict) -> str:
    prefix = plain((slider.get("currentvalue") or {}).get("prefix"))
    return prefix.rstrip(" :=：") or plain(slider.get("name")) or i18n.tr("common.figure_step")


def _controls_html(layout: dict, div_id: str) -> str:
    """The page's controls for the figure's plotly sliders and menus (which stay in the figure's
    layout, hidden: the script runs their steps' ``method`` and ``args``)."""
    parts = []
    for i, menu in enumerate(layout.get("updatemenus") or []):
        buttons = menu.get("buttons") or []
        active = menu.get("active", 0) if menu.get("showactive", True) else -1
        options = "".join(
            f'<option value="{j}"{" selected" if j == active else ""}>'
            f'{html.escape(plain(b.get("label")) or str(j + 1))}</option>'
            for j, b in enumerate(buttons))
        label = plain(menu.get("name")) or i18n.tr("common.figure_menu")
        parts.append(f'<label class="book-figure-control">{html.escape(label)} '
                     f'<select data-menu="{i}" data-figure="{div_id}">{options}</select></label>')
    for i, slider in enumerate(layout.get("sliders") or []):
        steps = slider.get("steps") or []
        active = int(slider.get("active", 0) or 0)
        now = plain(steps[active].get("label")) if steps else ""
        label = _slider_label(slider)
        parts.append(
            f'<label class="book-figure-control">{html.escape(label)} '
            f'<input type="range" min="0" max="{max(len(steps) - 1, 0)}" step="1" '
            f'value="{active}" aria-valuetext="{html.escape(now)}" data-slider="{i}" '
            f'data-figure="{div_id}"> <span class="book-figure-value" aria-hidden="true">'
            f"{html.escape(now)}</span></label>")
    if not parts:
        return ""
    return f'<div class="book-figure-controls">{"".join(parts)}</div>'


def page_layout(layout: dict) -> dict:
    """The layout the page draws: plotly's sliders and menus kept (their steps are what the
    page's controls run) but not drawn, and the room they took given back (the toolbar is the
    renderer's config: book.face.display.HTML_CONFIG)."""
    out = dict(layout)
    for kind in ("sliders", "updatemenus"):
        if out.get(kind):
            out[kind] = [{**c, "visible": False} for c in out[kind]]
    # A slider under the plot took at least its top pad of the figure's height (plotly's
    # automargin adds its rail, labels and current value): that much less height keeps the plot
    # area at least as tall as the figure was drawn for, and the page no longer for the controls
    # above it.
    room = sum(_number((s.get("pad") or {}).get("t"), 20) for s in layout.get("sliders") or []
               if _number(s.get("y"), 0) <= 0)
    # a menu under the plot (opening upwards) took at least its own header's height
    room += MENU_PX * sum(1 for m in layout.get("updatemenus") or []
                          if _number(m.get("y"), 1) <= 0 and m.get("yanchor", "top") == "top")
    if room and isinstance(out.get("height"), (int, float)):
        out["height"] = max(out["height"] - room, 200)
        # a menu entry or slider step that sets the height (chapter 8's model view: each order
        # its own) sets it that much lower too
        out["updatemenus"] = [_lower(c, "buttons", room) for c in out.get("updatemenus") or []]
        out["sliders"] = [_lower(c, "steps", room) for c in out.get("sliders") or []]
        out = {k: v for k, v in out.items() if v != [] or k in layout}
    return out


def _lower(control: dict, key: str, room: float) -> dict:
    entries = []
    for entry in control.get(key) or []:
        args = list(entry.get("args") or [])
        for i, arg in enumerate(args):
            if isinstance(arg, dict) and isinstance(arg.get("height"), (int, float)):
                args[i] = {**arg, "height": max(arg["height"] - room, 200)}
        entries.append({**entry, "args": args})
    return {**control, key: entries}


def _number(value, default: float) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _data_html(x: str, y: str) -> str:
    """The data disclosure: empty, figures.js fills it with tables from the figure's data."""
    label = html.escape(i18n.tr("common.figure_data"))
    return (f'<details class="book-figure-data" data-x="{html.escape(x)}" '
            f'data-y="{html.escape(y)}" '
            f'data-series="{html.escape(i18n.tr("common.figure_series"))}">'
            f'<summary>{label}</summary><div class="book-figure-tables" tabindex="0" '
            f'role="region" aria-label="{label}"></div></details>')


def _words_html(words: list[str]) -> str:
    """A diagram's disclosure: its boxes and labels in drawing order (it has no numbers)."""
    items = "".join(f"<li>{html.escape(w)}</li>" for w in words)
    return (f'<details class="book-figure-data" data-diagram>'
            f'<summary>{html.escape(i18n.tr("common.figure_words"))}</summary>'
            f'<ol class="book-figure-words">{items}</ol></details>')


def figure_html(fig_dict: dict, plot_html: str, div_id: str) -> str:
    """The page's ``<figure>`` around plotly's ``plot_html`` (the ``<div>`` and its script)."""
    alt, caption = described(fig_dict) or _fallback(fig_dict)
    layout = fig_dict.get("layout") or {}
    meta = layout.get("meta") if isinstance(layout.get("meta"), dict) else {}
    words = [plain(w) for w in meta.get(DIAGRAM_WORDS) or [] if plain(w)]
    x = plain((layout.get("xaxis") or {}).get("title"))
    y = plain((layout.get("yaxis") or {}).get("title"))
    return (
        f'<figure class="book-figure" aria-label="{html.escape(alt)}" data-figure="{div_id}"'
        f'{"" if described(fig_dict) else " data-undescribed"}>'
        f"{_controls_html(layout, div_id)}"
        f'<div class="book-figure-plot" aria-hidden="true">{plot_html}</div>'
        f'<figcaption id="{div_id}-caption">{html.escape(caption)} '
        # the data disclosure ends the caption's last line (no line of its own on the page)
        f"{_words_html(words) if words else _data_html(x, y)}</figcaption>"
        f'<p class="book-figure-status" role="status" aria-live="polite"></p>'
        "</figure>")
