"""Run one chapter notebook and write its plotly figures to a bare HTML page, to iterate on them
with ``python tests/legibility.py OUT.html`` without building the whole book.

    python tests/figures_page.py chapters/06_heads.ipynb /tmp/ch06.html

The page loads the installed plotly.js, the book's page script and its CSS with the CJK web
font of the edition it shows (``language``: the English edition's subset, or the face every
Chinese page has), and lays the figures out in a 752 px column like the book's text column
(``--width`` to change it). The browser tests see no system CJK font (tests/headless.py), as a
newcomer's machine may have none: Chinese text draws in the page's web font or not at all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def figure_html(notebook: Path) -> list[str]:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            html = o.get("data", {}).get("text/html", "")
            if "plotly-graph-div" in html:
                out.append(html)
    return out


def write_page(parts: list[str], target: Path, width: int = 752, page_js: bool = True,
               language: str = "en") -> None:
    """``page_js``: load the book's page script, as the built pages do (assets/static/
    book-page.js: figures drawn one task each, those with CJK text once the CJK web font has
    loaded; drawn before it, plotly measures their text in whatever font the machine falls back
    to and places legend entries and margins by it). ``language``: the edition whose fonts the
    page carries ("zh" adds book-zh.css, the Chinese edition's CJK face, after book.css as
    book/site/editions.py adds it)."""
    if language not in ("en", "zh"):
        raise ValueError(f"language must be 'en' or 'zh', got {language!r}")
    sys.path.insert(0, str(ROOT))
    from book.site.sphinxext import PAGE_JS, plotly_js_path

    static = ROOT / "assets" / "static"
    script = f'<script src="{(static / PAGE_JS).as_uri()}"></script>' if page_js else ""
    # the book's style sheets as _config.yml lists them (book-figure.css: the <figure> around
    # each figure, without which the browser's own 40 px figure margins narrow every plot)
    sheets = ["book.css", "book-figure.css"] + (["book-zh.css"] if language == "zh" else [])
    links = "".join(f'<link rel="stylesheet" href="{(static / s).as_uri()}">' for s in sheets)
    body = "\n".join(f'<div class="cell_output" style="margin:24px 0">{p}</div>' for p in parts)
    target.write_text(
        f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{links}
<script src="{plotly_js_path().as_uri()}"></script>{script}</head>
<body style="margin:0 auto;max-width:{width}px;padding:0 8px">{body}</body></html>""",
        encoding="utf-8")


if __name__ == "__main__":
    nb, target = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    write_page(figure_html(nb), target,
               language="zh" if os.environ.get("BOOK_LANG") == "zh" else "en")
    print(f"wrote {target}")
