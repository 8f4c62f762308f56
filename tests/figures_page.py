"""Run one chapter notebook and write its plotly figures to a bare HTML page, to iterate on them
with ``python tests/legibility.py OUT.html`` without building the whole book.

    python tests/figures_page.py chapters/06_heads.ipynb /tmp/ch06.html

The page loads the installed plotly.js and the book's CSS (with its CJK web font), and lays the
figures out in a 752 px column like the book's text column (``--width`` to change it).
"""

from __future__ import annotations

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


def write_page(parts: list[str], target: Path, width: int = 752, page_js: bool = False) -> None:
    """``page_js``: load the book's page script too (assets/static/book-page.js: figures drawn
    one task each, the CJK ones once the font is there), as the built pages do."""
    sys.path.insert(0, str(ROOT))
    from book.site.sphinxext import PAGE_JS, plotly_js_path

    static = ROOT / "assets" / "static"
    script = f'<script src="{(static / PAGE_JS).as_uri()}"></script>' if page_js else ""
    body = "\n".join(f'<div class="cell_output" style="margin:24px 0">{p}</div>' for p in parts)
    target.write_text(
        f"""<!doctype html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="{(static / 'book.css').as_uri()}">
<script src="{plotly_js_path().as_uri()}"></script>{script}</head>
<body style="margin:0 auto;max-width:{width}px;padding:0 8px">{body}</body></html>""",
        encoding="utf-8")


if __name__ == "__main__":
    nb, target = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
    write_page(figure_html(nb), target)
    print(f"wrote {target}")
