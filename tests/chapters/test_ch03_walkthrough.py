"""Chapter 3's explorer (both faces) and the labelled Matrix display."""

from __future__ import annotations

import itertools

import faces
import numpy as np
import pytest
from tolerance import assert_same_run

from book import Matrix
from book.chapters import ch03_walkthrough
from book.ideas import walkthrough
from book.ideas import walkthrough as wt


def test_frames_cover_every_step_with_labels():
    frames = walkthrough.walkthrough_frames()
    ex = wt.example()
    steps = wt.walkthrough(ex.X, ex.heads, ex.W_O)
    assert [f["name"] for f in frames] == ["X", *steps]
    for f in frames:
        r, c = np.shape(f["values"])
        assert len(f["rows"]) == r and len(f["cols"]) == c
        assert len(set(f["cols"])) == c and len(set(f["rows"])) == r
    assert np.shape(frames[[f["name"] for f in frames].index("Z")]["values"]) == (3, 6)


def test_static_explorer_steps_change_the_matrix():
    fig = ch03_walkthrough.walkthrough_figure()
    steps = fig.layout.sliders[0].steps
    assert steps[0].args[0]["z"] != steps[-1].args[0]["z"]
    assert steps[0].args[0]["x"] != steps[6].args[0]["x"]  # features vs keys


def test_explorer_bad_input():
    with pytest.raises(TypeError, match="Example"):
        walkthrough.walkthrough_frames("not an example")


def test_edited_example_changes_only_downstream():
    ex, where = walkthrough.edited_example("W_K2", 0, 0, 2.5)
    base = wt.example()
    assert where == (0, 0) and ex.heads[1][1][0, 0] == 2.5
    a, b = (wt.walkthrough(e.X, e.heads, e.W_O) for e in (base, ex))
    # head 1 untouched: its inputs did not change, so the same computation runs twice
    assert_same_run(a["A1"], b["A1"], why="head 1's weights, computed twice")
    assert not np.allclose(a["A2"], b["A2"])
    assert base.heads[1][1][0, 0] != 2.5  # the original example is not modified


def test_edited_example_clamps_and_validates():
    _, where = walkthrough.edited_example("X", 5, 3, 0.0)
    assert where == (2, 3)
    with pytest.raises(ValueError, match="not one of"):
        walkthrough.edited_example("W_Q3", 0, 0, 1.0)
    with pytest.raises(ValueError, match="too large"):
        walkthrough.edited_example("X", 0, 0, 1e6)


def test_live_walkthrough_extremes():
    live = ch03_walkthrough.walkthrough_live()
    for values in ({"step": "layer_norm", "matrix": "W_O", "row": 5, "col": 3, "value": 3.0},
                   {"step": "X", "matrix": "X", "row": 0, "col": 0, "value": -3.0}):
        live.update(**values)
        assert np.all(np.isfinite(np.asarray(live.figure.data[0].z, dtype=float)))
    assert live.figure.data[0].z[0][0] == -3.0


def test_walkthrough_live_is_not_built_from_walkthrough_figure(monkeypatch):
    """The two faces are siblings (both start from _walkthrough_plot): the live face never
    calls the static one."""
    faces.forbid(monkeypatch, ch03_walkthrough, "walkthrough_figure")
    live = ch03_walkthrough.walkthrough_live()
    live.update(step="Z")
    assert not live.figure.layout.sliders and live.figure.layout.title.text.startswith("<b>Z</b>")


def test_matrix_display():
    m = Matrix("A", [[0.5, -0.0], [1.25, 2.0]], ["r1", "r2"], ["c1", "c2"])
    html = m._repr_html_()
    assert "(2×2)" in html and "<th>r2</th>" in html and "-0.00" not in html
    assert "A  (2×2)" in repr(m)
    with pytest.raises(ValueError, match="one label per row"):
        Matrix("A", np.eye(2), ["only one"])


# --- figures as a screen reader meets them (issue 47) ---------------------------------------

@pytest.mark.parametrize("language", ["en", "zh"])
def test_figures_are_described(language):
    from book.face.figures import described
    from book.kit import i18n

    i18n.set_language(language)
    try:
        figures = [ch03_walkthrough.walkthrough_figure(),
                   ch03_walkthrough.walkthrough_live().figure,
                   ch03_walkthrough.dataflow_diagram()]
        assert all(described(fig.to_dict()) for fig in figures)
    finally:
        i18n.set_language("en")


def test_captions_quote_the_drawn_shapes():
    from book.face.figures import described
    from book.kit import i18n

    i18n.set_language("en")
    fig = ch03_walkthrough.walkthrough_figure()
    steps = fig.layout.sliders[0].steps
    widths = {s.label: len(s.args[0]["x"][0]) for s in steps}
    rows = {len(s.args[0]["y"][0]) for s in steps}
    caption = described(fig.to_dict())[1]
    assert len(rows) == 1 and f"one row per token ({rows.pop()})" in caption
    assert (f"{widths['X']} features, {widths['Q1']} per head, {widths['Z']} once the heads are "
            f"concatenated, {widths[steps[-1].label]} again") in caption
    assert f"{len(steps)} steps" in described(fig.to_dict())[0]
    ex = wt.example()
    caption = described(ch03_walkthrough.dataflow_diagram(ex).to_dict())[1]
    assert f"X ({ex.X.shape[0]} × {ex.X.shape[1]})" in caption
    assert f"W_O ({ex.W_O.shape[0]} × {ex.W_O.shape[1]})" in caption


# --- issue 49: the weight matrices in the dataflow, the values in the explorer's cells ------

def test_dataflow_draws_the_examples_own_weight_matrices():
    """Each head's W_Q, W_K and W_V as a grid of its rows × columns, read from the example's
    matrices (the diagram is not told them twice), and their shape written under them."""
    from book.face import diagrams
    from book.face.figures import described

    for ex in (wt.example(), wt.example(n_heads=2, d_k=2)):
        fig = ch03_walkthrough.dataflow_diagram(ex)
        shown = " ".join(a.text for a in fig.layout.annotations if a.text)
        for h, matrices in enumerate(ex.heads, start=1):
            for name, w in zip(diagrams.weight_names(h), matrices, strict=True):
                cells = [s for s in fig.layout.shapes if s.name == name]
                assert len(cells) == w.size, name
                assert (len({c.y0 for c in cells}), len({c.x0 for c in cells})) == w.shape
                assert name in shown
            assert f"({matrices[0].shape[0]} × {matrices[0].shape[1]}) each" in shown
        rows, cols = ex.heads[0][0].shape
        alt, caption = described(fig.to_dict())
        assert f"drawn as {rows} × {cols} grids" in alt
        assert (f"W_Q, W_K and W_V ({rows} × {cols} each, the grids of {rows * cols} cells"
                in caption)


def _printed(values, digits):
    return [[f"{v + 0.0:.{digits}f}" for v in row] for row in np.asarray(values, dtype=float)]


def test_explorer_writes_every_steps_values_as_the_tables_print_them():
    """Every slider step carries its matrix's values as cell text, rounded as the page's
    tables print that matrix (the attention weights with the notebook's digits=…, the rest
    with Matrix's default), and the trace writes them (texttemplate)."""
    fig = ch03_walkthrough.walkthrough_figure()
    assert fig.data[0].texttemplate == "%{text}"
    frames = {f["name"]: f for f in walkthrough.walkthrough_frames()}
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == list(frames)
    for step in steps:
        digits = 3 if step.label.startswith("A") else Matrix("m", np.eye(1)).digits
        assert step.args[0]["text"][0] == _printed(frames[step.label]["values"], digits)
    assert [list(r) for r in fig.data[0].text] == steps[0].args[0]["text"][0]   # first state


def test_the_notebook_prints_the_attention_weights_with_the_explorers_digits():
    """The explorer's digits are the page's: chapter 3's notebook shows A1 and A2 with
    Matrix(..., digits=WEIGHT_DIGITS), every other matrix with the default."""
    import json
    import re
    from pathlib import Path

    cells = json.loads(Path("chapters/03_walkthrough.ipynb").read_text(encoding="utf-8"))["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    calls = re.findall(r'Matrix\("([^"]+)",[^)]*?(?:digits=(\d))?\)', code)
    assert calls
    for name, digits in calls:
        want = (ch03_walkthrough.WEIGHT_DIGITS if re.match(r"A\d", name)
                else ch03_walkthrough.VALUE_DIGITS)
        assert int(digits or ch03_walkthrough.VALUE_DIGITS) == want, name


@pytest.mark.parametrize("language", ["en", "zh"])
def test_explorer_values_stay_written_on_a_phone(language):
    """The book's renderer (plotting.tidy) keeps the values in the cells at a phone's width, as
    the tables print them (fit_cell_text blanks texttemplate where the widest value of any step
    does not fit its cell: with a colour bar beside it, the explorer was colours only there)."""
    import copy

    from book.face import plotting
    from book.kit import i18n

    i18n.set_language(language)
    try:
        fig = ch03_walkthrough.walkthrough_figure().to_dict()
    finally:
        i18n.set_language("en")
    on_page = plotting.tidy(copy.deepcopy(fig))   # fitted to PHONE_FIGURE_WIDTH
    assert on_page["data"][0]["texttemplate"] == "%{text}"
    assert on_page["data"][0]["textfont"]["size"] >= plotting.MIN_FONT
    assert on_page["data"][0]["text"] == fig["data"][0]["text"]   # in full, leading zeros too
    wide = plotting.fit_cell_text(copy.deepcopy(fig), 1280)
    assert wide["data"][0]["texttemplate"] == "%{text}"


def test_live_explorer_writes_the_edited_values():
    live = ch03_walkthrough.walkthrough_live()
    live.update(step="A2", matrix="W_Q2", row=1, col=2, value=2.0)
    ex, _ = walkthrough.edited_example("W_Q2", 1, 2, 2.0)
    frame = next(f for f in walkthrough.walkthrough_frames(ex) if f["name"] == "A2")
    assert [list(r) for r in live.figure.data[0].text] == _printed(frame["values"], 3)
    assert live.figure.data[0].texttemplate == "%{text}"


def test_glued_verdict_words_follow_the_comparison():
    """The words chapter 3 glues into its prose (issue 49: from the chapter module, not from
    the lesson's cells), in both languages."""
    from book.kit import i18n

    assert ch03_walkthrough.same_or_different(True) == "the same"
    assert ch03_walkthrough.same_or_different(False) == "a different"
    assert ch03_walkthrough.identical_or_different(False) == "different"
    i18n.set_language("zh")
    try:
        assert ch03_walkthrough.identical_or_different(True) == "完全相同"
        assert ch03_walkthrough.same_or_different(False) == "不同的"
    finally:
        i18n.set_language("en")


# --- exercise ch3.z_row: Z1's row for 爱 by hand from the printed A1 and V1 ---------------------

def _z_row_parts():
    ex = wt.example()
    steps = wt.walkthrough(ex.X, ex.heads, ex.W_O)
    return steps, steps["A1"], steps["V1"]


def _printed_values(values, name):
    return np.round(np.asarray(values, dtype=float), ch03_walkthrough.printed_digits(name))


def test_z_row_reference_is_the_walkthroughs_own_row():
    from book.face import checks

    steps, a1, v1 = _z_row_parts()
    np.testing.assert_allclose(checks.reference("ch3.z_row"), a1[1] @ v1, atol=1e-12)
    np.testing.assert_allclose(checks.reference("ch3.z_row"), steps["Z1"][1], atol=1e-12)
    assert checks.check("ch3.z_row", a1[1] @ v1).ok


def test_z_row_tolerance_covers_the_printed_rounding_and_no_mistake():
    """The tolerance is the rounding bound of the printed tables: the worst way of rounding
    A1's row and V1 by half a unit of their printed digits stays inside it (and nearly reaches
    it), the product of the printed tables themselves passes, and so does the row written as
    the page writes Z1; every recognised mistake lies well outside it."""
    from book.face import checks

    steps, a1, v1 = _z_row_parts()
    tol = ch03_walkthrough.z_row_tolerance()
    exact = a1[1] @ v1
    da = 0.5 * 10.0 ** -ch03_walkthrough.printed_digits("A1")
    dv = 0.5 * 10.0 ** -ch03_walkthrough.printed_digits("V1")
    printed = _printed_values(a1, "A1")[1] @ _printed_values(v1, "V1")
    assert checks.check("ch3.z_row", printed).ok
    assert checks.check("ch3.z_row", _printed_values(exact, "Z1")).ok
    assert not checks.check("ch3.z_row", exact + 3 * tol).ok
    # the bound is (nearly) reached: the worst of all the ways to round A1's row and a column
    # of V1 by half a unit lands within the second-order term 3·δa·δv of the tolerance, less
    # the half unit of Z1's printed digits
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=3)))
    worst = max(np.abs((a1[1] + da * sa) @ (v1[:, k] + dv * sv) - exact[k])
                for k in range(3) for sa in signs for sv in signs)
    z_half = 0.5 * 10.0 ** -ch03_walkthrough.printed_digits("Z1")
    assert tol - z_half - 3 * da * dv <= worst <= tol - z_half + 1e-15
    for mistake, _ in ch03_walkthrough._z_row_mistakes():
        assert np.abs(mistake - exact).max() > 4 * tol


def test_z_row_the_notebook_prints_a1_and_v1_before_the_exercise():
    import json
    from pathlib import Path

    cells = json.loads(Path("chapters/03_walkthrough.ipynb").read_text(encoding="utf-8"))["cells"]
    ids = [c["id"] for c in cells]
    before = "\n".join("".join(c["source"]) for c in cells[:ids.index("c028b")])
    assert 'Matrix("A1 = softmax(S1 / √d_k)", A1' in before
    assert '("V1", V1)' in before


@pytest.mark.parametrize("language, words", [
    ("en", {"ch03.z_unscaled": "unscaled", "ch03.z_column": "column",
            "ch03.z_own_value": "own value row", "ch03.z_keys": "K1",
            "ch03.z_scores": "before the softmax"}),
    ("zh", {"ch03.z_unscaled": "未缩放", "ch03.z_column": "那一列",
            "ch03.z_own_value": "自己的值向量", "ch03.z_keys": "K1",
            "ch03.z_scores": "softmax 之前"})])
def test_z_row_mistakes_get_their_own_hints(language, words):
    from book.face import checks
    from book.kit import i18n

    steps, a1, v1 = _z_row_parts()
    wrong = {"ch03.z_unscaled": walkthrough.attention.softmax(steps["S1"][1]) @ v1,
             "ch03.z_column": a1[:, 1] @ v1,     # A1ᵀ: the column of 爱
             "ch03.z_own_value": v1[1],           # no averaging
             "ch03.z_keys": a1[1] @ steps["K1"],  # keys instead of values
             "ch03.z_scores": steps["S1_scaled"][1] @ v1}
    i18n.set_language(language)
    try:
        messages = set()
        for hint, answer in wrong.items():
            verdict = checks.check("ch3.z_row", answer)
            assert not verdict.ok, hint
            assert verdict.message == i18n.tr(hint), hint
            assert words[hint] in verdict.message, hint
            messages.add(verdict.message)
            # the printed (rounded) form of the mistake is recognised too
            rounded = np.round(answer, ch03_walkthrough.printed_digits("Z1"))
            assert checks.check("ch3.z_row", rounded).message == verdict.message, hint
        assert len(messages) == len(wrong)
        other = checks.check("ch3.z_row", v1.mean(axis=0))   # an unrecognised wrong row
        assert not other.ok and other.message == i18n.tr("ch03.z_hint")
        short = checks.check("ch3.z_row", [0.4, 0.1])
        assert not short.ok and "(3,)" in short.message and "(2,)" in short.message
        assert not checks.check("ch3.z_row", "abc").ok
    finally:
        i18n.set_language("en")


def test_z_row_the_notebooks_solution_cell_passes():
    import json
    from pathlib import Path

    from book.face import checks

    cells = {c["id"]: c for c in json.loads(
        Path("chapters/03_walkthrough.ipynb").read_text(encoding="utf-8"))["cells"]}
    solution = cells["c028c"]
    assert "hide-cell" in solution["metadata"]["tags"]
    code = "".join(solution["source"]).replace('checks.check("ch3.z_row", ',
                                                "verdicts.append(checks.check(\"ch3.z_row\", ")
    code = code.rstrip() + ")"
    _, a1, v1 = _z_row_parts()
    verdicts: list = []
    exec(code, {"checks": checks, "np": np, "A1": a1, "V1": v1, "verdicts": verdicts})
    assert len(verdicts) == 1 and verdicts[0].ok
    assert "".join(cells["c028b"]["source"]).startswith("answer = ...")
