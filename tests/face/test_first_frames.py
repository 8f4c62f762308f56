"""Prose about an explorer describes the state the explorer opens in (issue 48, item 3).

For each explorer whose surrounding text names values, in both editions: the notebook's own
cells that glue those values are run (the Chinese notebook's in the Chinese edition), every
``{eval}`book.glued("name:spec")``` of the prose cells around the explorer is formatted as the
page formats it, and the same value is read back from the explorer's *first frame*, the figure
each face opens on, in Python (no browser, no build): the in-page face's figure and controls,
which the book's page shows until the reader moves a control (so it must not redraw at load
with numbers of its own), the live face's in Jupyter, and a static face's (the step its slider
starts at).

Every glued name of those prose cells is read from the first frame, or listed in the case's
``elsewhere`` with the state that shows it (another step of a slider): a new sentence naming a
value the first frame does not show fails here. What the prose says without a glued value
("the explorer opens without a mask", "at d_k = 64") is checked as a fact of the first frame
(``says``).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import nbformat
import numpy as np
import pytest
from conftest import ROOT

from book.face import display
from book.kit import i18n

GLUED = re.compile(r'book\.glued\("([^"]+)"\)')


@dataclass
class Face:
    """One face of an explorer as it opens: its figure, its controls' first values and the
    top of each slider's range (the page's own top for the in-page face)."""

    name: str
    figure: object
    first: dict
    high: dict = field(default_factory=dict)


def inpage_face(cell) -> Face:
    spec = json.loads(cell.spec_json)
    assert not spec.get("redraw_at_load"), (
        f"{cell.explorer}: the page redraws it at load with numbers of its own, so the reader "
        "never sees the first frame the prose describes")
    return Face("in-page", cell.figure, {c["name"]: c["value"] for c in cell.controls},
                {c["name"]: c["high"] for c in cell.controls if "high" in c})


def live_face(explorer) -> Face:
    return Face("live", explorer.figure, {n: w.value for n, w in explorer.controls.items()},
                {n: w.max for n, w in explorer.controls.items() if hasattr(w, "max")})


def static_face(figure, control: str) -> Face:
    """A plotly figure with one slider (``control``, what it varies): the step it opens at."""
    (slider,) = figure.layout.sliders
    return Face("static", figure, {control: slider.steps[slider.active or 0].label})


@dataclass
class Case:
    page: str                    # the notebook, e.g. "chapters/02_scaling"
    run: tuple[str, ...]         # the code cells that glue what the prose names, in order
    prose: tuple[str, ...]       # the markdown cells about the explorer
    faces: Callable[[dict], list[Face]]   # from what the run cells left (``shown``: the figure
    #                                       the last one shows)
    reads: dict[str, Callable[[Face], float]]         # glued name -> read from a first frame
    says: dict[str, Callable[[Face, dict], bool]]     # the prose's words -> a first-frame fact
    elsewhere: dict[str, str] = field(default_factory=dict)  # glued name -> the state showing it


def _number(text: str, index: int = -1) -> float:
    """The ``index``-th number of a figure's text (a title: "… variance 65.2")."""
    return float(re.findall(r"\d+(?:\.\d+)?", re.sub(r"<[^>]+>", " ", text))[index])


# --- chapter 1: the heads explorer (a slider over 1–3 heads) ----------------------------------

def _ch01_faces(_ran: dict) -> list[Face]:
    from book.chapters import ch01_intuition

    return [static_face(ch01_intuition.heads_figure(), "n_heads"),
            live_face(ch01_intuition.heads_live())]


def _weight(face: Face, query: str, key: str) -> float:
    """The first head's weight of ``query`` on ``key`` (row and column found by their token;
    the English edition's labels carry a gloss after it)."""
    trace = face.figure.data[0]
    row = next(i for i, label in enumerate(trace.y) if label.split(" ")[0] == query)
    col = next(i for i, label in enumerate(trace.x) if label.split(" ")[0] == key)
    return float(trace.z[row][col])


# --- chapter 2: the d_k sampler -----------------------------------------------------------------

def _ch02_faces(_ran: dict) -> list[Face]:
    from book.chapters import ch02_scaling

    return [inpage_face(ch02_scaling.dk_inpage()), live_face(ch02_scaling.dk_live())]


def _raw_title(face: Face) -> str:
    return face.figure.layout.annotations[0].text


# --- chapter 4: the mask explorer --------------------------------------------------------------

def _ch04_faces(_ran: dict) -> list[Face]:
    from book.chapters import ch04_pytorch

    return [inpage_face(ch04_pytorch.mask_inpage()), live_face(ch04_pytorch.mask_live())]


def _mask_grid(face: Face) -> tuple[np.ndarray, int]:
    """The weights panel of the first frame and its number of real tokens (the keys not
    labelled as padding)."""
    weights = face.figure.data[1]
    real = sum(not str(label).startswith("pad") for label in weights.x)
    return np.asarray(weights.z, dtype=float), real


def _pad_share(face: Face) -> float:
    z, real = _mask_grid(face)
    return float(z[:real, real:].sum(axis=1).max())


def _future_share(face: Face) -> float:
    z, real = _mask_grid(face)
    return float(np.triu(z, k=1)[:real].sum(axis=1).max())


# --- chapter 8b: the head view (a menu of sentences, a slider over the 72 heads) --------------

def _ch08b_faces(ran: dict) -> list[Face]:
    """The head view the notebook's cell draws (its only face with the sentence menu)."""
    return [static_face(ran["shown"], "head")]


def _shown_map(face: Face):
    """The heatmap of the sentence the menu opens on (the one trace visible at first)."""
    (trace,) = [t for t in face.figure.data if t.visible is not False]
    return trace


def _head_weight(face: Face, query: str, key: str | int) -> float:
    """The shown map's weight of ``query`` on ``key`` (a label, or a column index); nan where
    the sentence shown has no such token (the prose is about another sentence)."""
    trace = _shown_map(face)
    if query not in trace.y or (isinstance(key, str) and key not in trace.x):
        return float("nan")
    col = key if isinstance(key, int) else list(trace.x).index(key)
    return float(trace.z[list(trace.y).index(query)][col])


# --- chapter 9: the window explorer -------------------------------------------------------------

def _ch09_faces(_ran: dict) -> list[Face]:
    from book.chapters import ch09_long_context as ch09

    static = static_face(ch09.window_figure(), "window")
    static.high = {"window": max(int(s.label) for s in static.figure.layout.sliders[0].steps)}
    return [static, inpage_face(ch09.window_inpage()), live_face(ch09.window_live())]


def _fmt(value, spec: str) -> str:
    return display.format_like_glue(value, spec)


CASES = {
    "ch01 heads": Case(
        page="chapters/01_intuition", run=("c001", "c011"), prose=("c014",),
        faces=_ch01_faces,
        reads={"share_1_no": lambda f: _weight(f, "香菜", "不要"),
               "share_1_noodles": lambda f: _weight(f, "香菜", "牛肉面")},
        says={"With one head": lambda f, g: int(f.first["n_heads"]) == 1},
        elsewhere={"share_3_no": "the slider's step of 3 heads",
                   "share_3_noodles": "the slider's step of 3 heads"}),
    "ch02 d_k sampler": Case(
        page="chapters/02_scaling", run=("c001", "c003a", "c003"), prose=("c006",),
        faces=_ch02_faces,
        reads={"dk_first_n": lambda f: f.first["n"],
               "dk_first_var": lambda f: _number(_raw_title(f))},
        says={"opens … at d_k = 64": lambda f, g: int(f.first["d_k"]) == 64
              and "d_k = 64" in _raw_title(f),
              "its title reads the variance above": lambda f, g: _fmt(
                  _number(_raw_title(f)), ".1f") == _fmt(g["var_64"], ".1f")}),
    "ch04 mask explorer": Case(
        page="chapters/04_pytorch", run=("c001", "c023"), prose=("c024", "c026"),
        faces=_ch04_faces,
        reads={"mask_max_real": lambda f: f.high["length"],
               "mask_max_pad": lambda f: f.high["padding"],
               "mask_first_length": lambda f: _mask_grid(f)[1],
               "mask_first_seq_len": lambda f: len(f.figure.data[1].x),
               "pad_share_none": _pad_share, "future_share_none": _future_share},
        says={"The explorer opens without a mask": lambda f, g: f.first["kind"] == "none"
              and bool(np.all(np.asarray(f.figure.data[0].z) == 1))}),
    "ch08b head view": Case(
        page="chapters/08b_real_model", run=("ae2319c2", "9a89e061", "1a1b95d2", "dca6a9bf"),
        prose=("5ced90fd",), faces=_ch08b_faces,
        reads={"the_animal": lambda f: _head_weight(f, "the", "animal"),
               "the_street": lambda f: _head_weight(f, "the·2", "street"),
               "street_cls": lambda f: _head_weight(f, "street", 0)},
        # the cell above it (11722181): "The view opens on the first animal sentence and
        # on {det_head}"; the prose below: "In the first animal sentence, …"
        says={"opens on the first animal sentence": lambda f, g: "tired" in _shown_map(f).y
              and "animal" in _shown_map(f).y,
              "and on {det_head}": lambda f, g: f.first["head"] == g["det_head"]}),
    "ch09 window explorer": Case(
        page="chapters/09_long_context", run=("c001", "c013"), prose=("c019",),
        faces=_ch09_faces, reads={},
        says={"The article's window is wider than the slider reaches (w = 128)":
              lambda f, g: f.high["window"] < 128},
        elsewhere={"entries_ratio": "no state: the article's w = 128, which the prose says "
                                    "is not a state of the explorer"}),
}

_RUNS: dict = {}


def _notebook(page: str, language: str):
    if language == "en":
        return nbformat.read(ROOT / f"{page}.ipynb", as_version=4)
    from book.site import zh_notebooks

    return zh_notebooks.chinese_notebook(page)


def _glued_and_prose(case: Case, language: str, monkeypatch) -> tuple[dict, str, dict]:
    """Run the case's cells of the edition's notebook: (every value they glue, the text of the
    prose cells, what the run left: ``shown``, the value of the last cell's last line)."""
    key = (case.page, case.run, language)
    if key not in _RUNS:
        cells = {c.id: c for c in _notebook(case.page, language).cells}
        store: dict = {}
        monkeypatch.setattr(display, "_glued", store)
        namespace: dict = {"__name__": "__main__"}
        shown = None
        with contextlib.redirect_stdout(io.StringIO()):
            for cell_id in case.run:
                where = f"{case.page}.ipynb:{cell_id}"
                body = ast.parse(cells[cell_id].source).body
                last = body.pop() if body and isinstance(body[-1], ast.Expr) else None
                exec(compile(ast.Module(body, []), where, "exec"), namespace)  # noqa: S102
                # the book's own notebook cells; what the last line shows, as Jupyter does
                shown = (eval(compile(ast.Expression(last.value), where, "eval"),  # noqa: S307
                              namespace) if last else None)
        _RUNS[key] = (dict(store), "\n".join(cells[c].source for c in case.prose),
                      {"shown": shown})
    return _RUNS[key]


@pytest.fixture
def edition():
    yield
    i18n.set_language("en")


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("name", list(CASES))
def test_the_prose_names_what_the_first_frame_shows(name, language, edition, monkeypatch):
    case = CASES[name]
    glued, prose, ran = _glued_and_prose(case, language, monkeypatch)
    i18n.set_language(language)  # the faces drawn in the edition's language
    refs = GLUED.findall(prose)
    assert refs, f"{name}: the prose cells {case.prose} name no glued value any more"
    faces = case.faces(ran)
    wrong = []
    for ref in refs:
        glue_name, _, spec = ref.partition(":")
        if glue_name in case.elsewhere:
            continue
        assert glue_name in case.reads, (
            f"{name} ({language}): the prose names {glue_name!r}, which this test does not read "
            "from the explorer's first frame: add a reader, or list the state that shows it in "
            "the case's elsewhere")
        want = _fmt(glued[glue_name], spec)
        for face in faces:
            got = _fmt(case.reads[glue_name](face), spec)
            if got != want:
                wrong.append(f"{face.name} face: the prose says {glue_name} = {want}, its first "
                             f"frame shows {got}")
    for words, fact in case.says.items():
        wrong += [f"{face.name} face: the prose says {words!r}, its first frame does not"
                  for face in faces if not fact(face, glued)]
    assert not wrong, f"{name} ({language}):\n" + "\n".join(wrong)
