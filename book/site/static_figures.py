"""Plotly figures as images: the state a page first shows, for the PDF and for slides.

One figure's JSON (what a chapter notebook's output holds as ``application/vnd.plotly.v1+json``)
becomes a still: its sliders and menus are taken off (a picture cannot be moved), and what they
would vary is said in one line under the image (:func:`still`). :class:`Exporter` draws stills
with kaleido 1.x in the system's Chromium, with the plotly.js of the installed plotly and no
MathJax, so nothing is fetched (kaleido's own defaults load both from a CDN).

Used by book/site/pdf.py (the LaTeX builder's figures) and ``python -m book.site.static_figures``
(``make figures``: every figure of both editions as PNG and SVG, named by chapter and figure).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import sys
from pathlib import Path

from book.kit.i18n import tr

ROOT = Path(__file__).resolve().parents[2]
PLOTLY_MIME = "application/vnd.plotly.v1+json"
DEFAULT_WIDTH, DEFAULT_HEIGHT = 760, 460
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _label(control: dict) -> str:
    """What a slider or menu is called on the page: its current-value prefix, else its steps."""
    prefix = str((control.get("currentvalue") or {}).get("prefix") or "").strip().rstrip(":：")
    labels = [str(s.get("label", "")).strip() for s in (control.get("steps")
                                                          or control.get("buttons") or [])]
    labels = [x for x in labels if x]
    if prefix and labels:
        return f"{prefix} ({labels[0]} … {labels[-1]})" if len(labels) > 1 else prefix
    if prefix:
        return prefix
    if len(labels) > 3:
        return f"{labels[0]}, {labels[1]} … {labels[-1]}"
    return ", ".join(labels)


def still(fig: dict) -> tuple[dict, str]:
    """The figure without its controls, and one line saying what the page lets you vary
    ("" for a figure with no slider or menu). The drawn state is the one the page first shows:
    plotly draws ``data`` and ``layout`` as given, whatever step a slider marks active."""
    if not isinstance(fig, dict) or "data" not in fig:
        raise TypeError("still() takes a plotly figure as a dict with 'data' and 'layout' "
                        f"(a notebook output's {PLOTLY_MIME!r}), got {type(fig).__name__}")
    fig = copy.deepcopy(fig)
    layout = fig.setdefault("layout", {})
    controls = (layout.pop("sliders", None) or []) + (layout.pop("updatemenus", None) or [])
    fig.pop("frames", None)
    fig.pop("config", None)
    names = [name for name in (_label(c) for c in controls) if name]
    # an in-page explorer (book/face/inpage.py) has its controls in HTML, not in the figure:
    # its figure names them in layout.meta.book_controls
    meta = layout.get("meta") if isinstance(layout.get("meta"), dict) else {}
    page_controls = [str(n) for n in meta.pop("book_controls", None) or [] if str(n).strip()]
    if isinstance(layout.get("meta"), dict) and not layout["meta"]:
        layout.pop("meta")
    if page_controls:
        return fig, tr("common.still_varies", controls="; ".join(names + page_controls))
    if not controls:
        return fig, ""
    # the room the controls took below the plot is not needed any more
    margin = layout.get("margin") or {}
    if isinstance(margin.get("b"), (int, float)) and margin["b"] > 80:
        margin["b"] = 80
    if names:
        return fig, tr("common.still_varies", controls="; ".join(names))
    return fig, tr("common.still_varies_unnamed")


def size(fig: dict) -> tuple[int, int]:
    layout = fig.get("layout") or {}
    width = layout.get("width") or DEFAULT_WIDTH
    height = layout.get("height") or DEFAULT_HEIGHT
    return int(width), int(height)


def chromium() -> str:
    for path in (os.environ.get("BROWSER_PATH"), *CHROMIUM, shutil.which("chromium")):
        if path and Path(path).is_file():
            return path
    raise FileNotFoundError("the static figures (make pdf, make figures) are drawn in Chromium: "
                            "install Debian's package with 'sudo apt-get install -y chromium' "
                            "or set BROWSER_PATH to a Chrome or Chromium binary")


class Exporter:
    """A kaleido server for many figures (one browser start for the whole build)."""

    def __init__(self) -> None:
        self._started = False

    def _start(self) -> None:
        try:
            import kaleido
        except ImportError:
            raise ImportError("the static figures need kaleido 1.x: pip install -r "
                              "requirements-dev.txt (or run make pdf / make figures)") from None
        import plotly

        os.environ["BROWSER_PATH"] = chromium()
        plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
        kaleido.start_sync_server(n=1, plotlyjs=str(plotly_js), mathjax=False,
                                  silence_warnings=True)
        self._started = True

    def write(self, fig: dict, path: Path, scale: float = 2.0) -> Path:
        """Draw ``fig`` (already a still) to ``path``; the suffix picks the format (png, svg)."""
        import kaleido

        if not self._started:
            self._start()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        width, height = size(fig)
        fmt = path.suffix.lstrip(".").lower()
        if fmt not in ("png", "svg", "pdf"):
            raise ValueError(f"write() draws png, svg or pdf, not {path.suffix!r}")
        kaleido.write_fig_sync(fig, path=str(path), opts={"format": fmt, "width": width,
                                                           "height": height, "scale": scale})
        return path

    def close(self) -> None:
        if self._started:
            import kaleido

            kaleido.stop_sync_server(silence_warnings=True)
            self._started = False

    def __enter__(self) -> Exporter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- make figures -------------------------------------------------------------------------

_PASTE = re.compile(r"```\{glue(?::figure)?\}\s+([A-Za-z_]\w*)")


def notebook_figures(path: Path) -> list[dict]:
    """The plotly figures of an executed notebook as its page shows them, in page order: each
    code cell's figure outputs, and the glued figures its markdown pastes (```{glue} name```,
    kept by the build beside the notebook in ``<page>.glue.json``)."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    glue_file = path.with_suffix(".glue.json")
    glued = json.loads(glue_file.read_text(encoding="utf-8")) if glue_file.is_file() else {}
    found = []
    for cell in nb.get("cells", []):
        source = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            for name in _PASTE.findall(source):
                data = (glued.get(name) or {}).get("data") or {}
                if PLOTLY_MIME in data:
                    found.append(data[PLOTLY_MIME])
            continue
        if "remove-output" in (cell.get("metadata", {}).get("tags") or []):
            continue  # a live face: the page does not show it
        for output in cell.get("outputs", []):
            data = output.get("data") or {}
            if PLOTLY_MIME in data:
                found.append(data[PLOTLY_MIME])
    return found


def _slug(text: str, limit: int = 40) -> str:
    text = re.sub(r"<[^>]+>", " ", text or "")
    text = re.sub(r"[^\w]+", "-", text, flags=re.UNICODE).strip("-").lower()
    return text[:limit].rstrip("-")


def figure_name(page: str, index: int, fig: dict) -> str:
    """``03_walkthrough-fig02-<title>``: chapter, place on the page, and the title's words."""
    title = (fig.get("layout") or {}).get("title")
    title = title.get("text", "") if isinstance(title, dict) else (title or "")
    slug = _slug(title)
    return f"{page}-fig{index:02d}" + (f"-{slug}" if slug else "")


EXECUTED = {"en": Path("_build/jupyter_execute"), "zh": Path("_build/zh/_build/jupyter_execute")}


def export_all(out: Path, editions: tuple[str, ...] = ("en", "zh"), formats=("png", "svg"),
               root: Path = ROOT, progress=print) -> dict[str, int]:
    """Every figure of the built editions' executed notebooks into ``out/<edition>/``."""
    from book.kit import i18n
    from book.site.zh_notebooks import chapter_pages

    counts: dict[str, int] = {}
    with Exporter() as exporter:
        for edition in editions:
            executed = root / EXECUTED[edition]
            if not executed.is_dir():
                raise FileNotFoundError(f"{executed} is missing: build the book first "
                                        "(make book), then make figures")
            i18n.set_language(edition)
            pages = [(Path(p).name, executed / f"{p}.ipynb") for p in chapter_pages()]
            total = 0
            for n, (page, path) in enumerate(pages, 1):
                if not path.is_file():
                    raise FileNotFoundError(f"{path} is missing: rebuild the book (make book)")
                figs = notebook_figures(path)
                for i, fig in enumerate(figs, 1):
                    picture, note = still(fig)
                    name = figure_name(page, i, fig)
                    for fmt in formats:
                        exporter.write(picture, out / edition / f"{name}.{fmt}")
                    if note:
                        (out / edition / f"{name}.txt").write_text(note + "\n", encoding="utf-8")
                total += len(figs)
                progress(f"[figures {edition} {n}/{len(pages)}] {page}: {len(figs)} figures")
            counts[edition] = total
    return counts


def main(argv: list[str]) -> int:
    out = ROOT / "_build" / "figures"
    if argv:
        out = Path(argv[0])
    counts = export_all(out)
    for edition, n in counts.items():
        print(f"{edition}: {n} figures as PNG and SVG in {out / edition}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
