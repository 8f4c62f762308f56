"""Every Chinese token on an English-edition axis carries its English gloss (issue 48): in its
tick label ("香菜 (coriander)") where the axis has room, else in the hover text of its row or
column. The glosses are book.toy.orders.WORDS' (the one gloss table).

:func:`unglossed` lists the labels that have neither, over a figure's first state and every
state its dropdowns and sliders restyle to."""

from __future__ import annotations

import re

from book.toy import orders

_CJK = re.compile("[\u4e00-\u9fff]")
_SUBSCRIPTS = "₀₁₂₃₄₅₆₇₈₉"


def _token(label: str) -> str:
    """The token of an axis label: "香菜 (coriander)" → 香菜, "，₂" → ，, "香<br>菜" → 香菜."""
    bare = str(label).replace("<br>", "").split(" (")[0].strip()
    return bare.rstrip(_SUBSCRIPTS)


def _needs_gloss(label: str) -> str | None:
    """The English gloss ``label`` must show (None: no Chinese, or punctuation that reads as
    itself). A Chinese token outside the order language has no gloss to show: it fails."""
    if not _CJK.search(str(label)):
        return None
    token = _token(label)
    if token not in orders.WORDS:    # a menu's dish (chapter 1): any English in its label
        return None if re.search("[A-Za-z]", str(label)) else f"<an English gloss of {token}>"
    english = orders.gloss(token)
    return english if re.search("[A-Za-z]", english) else None


def _cell(value, r: int, c: int):
    """customdata's entry for cell (r, c) of a heatmap (a row-major grid)."""
    try:
        return value[r][c]
    except (IndexError, KeyError, TypeError):
        return None


def _hover_text(template: str, x, y, custom, r: int, c: int) -> str:
    cell = _cell(custom, r, c) if custom is not None else None

    def field(match):
        name = match.group(1)
        if name == "x":
            return str(x[c])
        if name == "y":
            return str(y[r])
        if name == "customdata":
            return str(cell)
        index = re.fullmatch(r"customdata\[(\d+)\]", name)
        if index and isinstance(cell, (list, tuple)) and int(index.group(1)) < len(cell):
            return str(cell[int(index.group(1))])
        return ""

    return re.sub(r"%\{([\w\[\]]+)(?::[^}]*)?\}", field, template or "")


def _states(fig_dict: dict):
    """Each trace's (x, y, customdata, hovertemplate) in the first state and in every state a
    control restyles (its args' lists, one entry per trace)."""
    data = fig_dict.get("data") or []
    base = [{k: t.get(k) for k in ("x", "y", "customdata", "hovertemplate")} for t in data]
    yield base
    layout = fig_dict.get("layout") or {}
    entries = [s for slider in layout.get("sliders") or [] for s in slider.get("steps", [])]
    entries += [b for menu in layout.get("updatemenus") or [] for b in menu.get("buttons", [])]
    for entry in entries:
        args = entry.get("args") or []
        restyle = args[0] if args and isinstance(args[0], dict) else {}
        which = args[2] if len(args) > 2 and isinstance(args[2], list) else range(len(data))
        state = [dict(t) for t in base]
        for key in ("x", "y", "customdata", "hovertemplate"):
            if key in restyle and isinstance(restyle[key], list):
                for value, i in zip(restyle[key], which, strict=False):
                    state[i][key] = value
        yield state


def unglossed(fig) -> list[str]:
    """"trace 2, key 香菜" for every Chinese token label of a token map (a trace with x and y
    labels) or a bar axis whose gloss is neither in the label nor in its cells' hover text.
    ``fig``: a plotly figure or its dict."""
    import json

    import plotly.io as pio

    fig_dict = json.loads(pio.to_json(fig)) if not isinstance(fig, dict) else fig
    missing = []
    for state in _states(fig_dict):
        for i, t in enumerate(state):
            x, y = list(t["x"] or []), list(t["y"] or [])
            if not x or not y:
                continue
            template = t["hovertemplate"] or ""
            grid = x and y and all(isinstance(v, str) for v in x + y)
            for axis, labels in (("key", x), ("query", y)):
                if not all(isinstance(v, str) for v in labels):
                    continue
                for j, label in enumerate(labels):
                    english = _needs_gloss(label)
                    if english is None or english in label:
                        continue
                    if grid:
                        cells = ([(r, j) for r in range(len(y))] if axis == "key"
                                 else [(j, c) for c in range(len(x))])
                    else:
                        cells = [(j, j)] if axis == "query" else []
                    # in the hover of every cell of its column (a key) or row (a query)
                    if not cells or not all(
                            f"({english})" in _hover_text(template, x, y, t["customdata"],
                                                          r, c)
                            for r, c in cells if r < len(y) and c < len(x)):
                        missing.append(f"trace {i}, {axis} {label!r} (needs {english!r})")
    return sorted(set(missing))
