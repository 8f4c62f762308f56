"""The text of every figure of a build, in every state, read the way a Chinese editor would:
line breaks that split a word, lines that break 避头尾, synthetic italic on Chinese, and a
doubled prefix ("正确：正确：…").

For each executed notebook of a build (``BUILD/_build/jupyter_execute``), each plotly figure's
title, subplot titles and annotations, and the same texts in every step of its sliders and
menus. Words are jieba's (with the terminology table's), the segmenter the Chinese search
already uses. Used by tests/face/test_wrap_cjk.py (split_words) and, on a build::

    python tests/figure_text.py BUILD [--show N]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from book.face import plotting
from book.kit import text as kit_text

_TAGS = re.compile(r"<[^>]+>")
_DOUBLED = re.compile(r"([^\s：:<>]{1,12}[：:])\s*\1")


def split_words(lines: list[str]) -> list[str]:
    """The breaks between ``lines`` that fall inside a word of the joined text (jieba's words,
    with the book's terms), each as 'left/right'."""
    import jieba

    kit_text._segmenter()   # the book's terms added to jieba's dictionary
    bad = []
    for a, b in zip(lines, lines[1:], strict=False):
        a_text, b_text = _TAGS.sub("", a).rstrip(), _TAGS.sub("", b).lstrip()
        if not (a_text and b_text and plotting.is_wide(a_text[-1])
                and plotting.is_wide(b_text[0])):
            continue
        cut, at = len(a_text), 0
        for word in jieba.lcut(a_text + b_text, HMM=False):
            if at < cut < at + len(word):
                bad.append(f"{a_text[-4:]}/{b_text[:4]}")
            at += len(word)
    return bad


def faults(text: str, font_style: str | None = None) -> list[str]:
    """What is wrong with one figure text (empty when nothing), Chinese rules only."""
    if not isinstance(text, str) or not any(plotting.is_wide(c) for c in text):
        return []
    found = []
    lines = re.split(r"<br\s*/?>", text)
    for k, line in enumerate(lines):
        visible = _TAGS.sub("", line).strip()
        if k > 0 and visible[:1] in plotting.NO_LINE_START:
            found.append(f"line starts with {visible[0]}")
        if k < len(lines) - 1 and visible[-1:] in plotting.NO_LINE_END:
            found.append(f"line ends with {visible[-1]}")
    found += [f"word split {w}" for w in split_words(lines)]
    italic = [m for m in re.findall(r"<i>(.*?)</i>", text, re.S)
              + re.findall(r"font-style:\s*italic[^>]*>(.*?)</span>", text, re.S)
              if any(plotting.is_wide(c) for c in _TAGS.sub("", m))]
    if italic or font_style == "italic":
        found.append("italic Chinese")
    if _DOUBLED.search(_TAGS.sub("", text)):
        found.append(f"doubled prefix {_DOUBLED.search(_TAGS.sub('', text)).group(0)}")
    return found


def _texts(layout: dict):
    """(text, font style) of the titles and annotations that a layout (or a step's args) sets."""
    title = layout.get("title")
    if isinstance(title, dict):
        yield title.get("text"), (title.get("font") or {}).get("style")
    elif isinstance(title, str):
        yield title, None
    if "title.text" in layout:
        yield layout["title.text"], None
    for a in layout.get("annotations") or []:
        if isinstance(a, dict):
            yield a.get("text"), (a.get("font") or {}).get("style")


def figure_texts(fig: dict):
    layout = fig.get("layout", {})
    yield from _texts(layout)
    for control in (layout.get("sliders") or []) + (layout.get("updatemenus") or []):
        for entry in control.get("steps", []) + control.get("buttons", []):
            for arg in entry.get("args") or []:
                if isinstance(arg, dict):
                    yield from _texts(arg)


def scan(build: Path) -> dict:
    """Every Chinese figure text of ``build`` (texts counted once per page) and its faults."""
    report = {"texts": 0, "multi_line": 0, "faulty": 0, "kinds": {}, "examples": []}
    for nb_path in sorted((Path(build) / "_build" / "jupyter_execute").rglob("*.ipynb")):
        seen = set()
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []):
                fig = out.get("data", {}).get("application/vnd.plotly.v1+json")
                if not isinstance(fig, dict):
                    continue
                for text, style in figure_texts(fig):
                    if (text, style) in seen or not isinstance(text, str) \
                            or not any(plotting.is_wide(c) for c in text):
                        continue
                    seen.add((text, style))
                    report["texts"] += 1
                    report["multi_line"] += "<br" in text
                    found = faults(text, style)
                    if found:
                        report["faulty"] += 1
                        report["examples"].append((nb_path.stem, text, found))
                    for f in found:
                        kind = f.split(" ")[0] + " " + f.split(" ")[1]
                        report["kinds"][kind] = report["kinds"].get(kind, 0) + 1
    return report


if __name__ == "__main__":
    args = sys.argv[1:]
    show = int(args[args.index("--show") + 1]) if "--show" in args else 10
    result = scan(Path(args[0]))
    print(f"{result['texts']} Chinese figure texts ({result['multi_line']} of several lines); "
          f"{result['faulty']} with a fault; by kind: {result['kinds']}")
    for page, text, found in result["examples"][:show]:
        print(f"  {page}: {'; '.join(found)}: {text[:140]!r}")
