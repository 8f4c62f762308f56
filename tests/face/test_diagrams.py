"""book.face.diagrams: every label comes from the string table (both editions draw the same
picture), the shapes shown are the arguments' (so the chapters' numbers come from their code),
bad arguments raise with a fix, and the layout stays inside a phone-wide figure."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import ENGLISH_PHRASE, figure_texts

from book.face import diagrams
from book.face.plotting import text_width
from book.kit import i18n

TOY = {"vocab_size": 60, "n_labels": 7, "d_model": 64, "n_heads": 4, "n_layers": 2,
       "d_ff": 128, "max_len": 64, "norm": "pre"}
MASK = np.abs(np.subtract.outer(np.arange(8), np.arange(8))) <= 2


def every_diagram():
    return {"flow": diagrams.multihead_dataflow(),
            "flow_sizes": diagrams.multihead_dataflow(5, 6, 3, 4),
            "flow_batched": diagrams.multihead_dataflow(batched=True),
            "norm": diagrams.norm_placement(),
            "toy": diagrams.toy_model(TOY, n_params=75015),
            "toy_post": diagrams.toy_model({**TOY, "norm": "post"}),
            "kv": diagrams.kv_cache(5, {"layers": 2, "tokens": 136, "d_model": 128,
                                        "bytes": 4}),
            "window": diagrams.window_grid(MASK, 2)}


def texts(fig) -> list[str]:
    """Each line of each annotation and the title, tags removed."""
    layout = fig.layout
    raw = [a.text for a in layout.annotations if a.text] + [layout.title.text]
    return [line for t in raw for line in re.sub(r"</?b>", "", t).split("<br>")]


def test_shapes_are_the_arguments():
    t = " ".join(texts(diagrams.multihead_dataflow(5, 6, 3, 4)))
    for shape in ("(5 × 6)", "(5 × 4)", "(5 × 5)", "(5 × 12)", "(12 × 6)"):
        assert shape in t, shape
    assert "√4" in t and "head 1" in t and "head 2" in t and "head 3" not in t
    assert "1 more" in t    # the third head is counted, not drawn
    sym = " ".join(texts(diagrams.multihead_dataflow()))
    assert "(n × d_model)" in sym and "(n × h·d_k)" in sym and "head h" in sym
    batched = " ".join(texts(diagrams.multihead_dataflow(batched=True)))
    assert "(B, h, T, d_k)" in batched and "(B, h, T, T)" in batched


def test_toy_and_kv_and_window_numbers():
    toy = " ".join(texts(diagrams.toy_model({**TOY, "d_model": 48, "n_heads": 3, "d_ff": 96})))
    assert "48 → 96 → 48" in toy and "3 heads, d_k = 16" in toy and "60 words → 48" in toy
    kv = " ".join(texts(diagrams.kv_cache(3, {"layers": 2, "tokens": 10, "d_model": 8,
                                              "bytes": 4})))
    assert "token 4" in kv and "3 cached" in kv and f"{2 * 2 * 10 * 8 * 4:,} B" in kv
    assert "k4" in kv and "v1" in kv and "k5" not in kv
    window = " ".join(texts(diagrams.window_grid(MASK, 2, query=0)))
    assert f"{int(MASK.sum())} scores" in window and "64 scores" in window
    assert "query 1 sees keys 1–3" in window
    # the grid draws the mask it is given: one cell per pair, the allowed ones dark
    fig = diagrams.window_grid(MASK, 2)
    assert len(fig.layout.shapes) == 2 * MASK.size
    light = sum(s.fillcolor == "#ededed" for s in fig.layout.shapes)
    assert light == (~MASK).sum()


def test_post_ln_and_pre_ln_differ_where_the_norm_sits():
    fig = diagrams.norm_placement()
    lines = [a for a in fig.layout.annotations if a.text]
    left = [a.text for a in lines if a.x == 0.25 and a.y is not None]
    right = [a.text for a in lines if a.x == 0.75]
    ln = i18n.tr("common.dg_layernorm")
    # Post-LN: attention first, its LayerNorm after the sum; Pre-LN: LayerNorm first
    assert left.index(i18n.tr("common.dg_attention")) < left.index(ln)
    assert right.index(ln) < right.index(i18n.tr("common.dg_attention"))
    residuals = [s for s in fig.layout.shapes if s.type == "path"]
    assert len(residuals) == 4   # two residual connections per block


def test_every_text_comes_from_the_string_table(monkeypatch):
    """tr() marks what it returns: after removing the marked parts, no word is left but the
    maths' own symbols (d_model, d_k, B, h, T)."""
    real = i18n.tr
    monkeypatch.setattr(diagrams, "tr", lambda key, **kw: f"⟦{real(key, **kw)}⟧")
    figs = every_diagram()
    symbols = re.compile(r"h·d_k|d_model|d_k|\b[BhTn]\b")
    for name, fig in figs.items():
        layout = fig.layout
        for text in [a.text for a in layout.annotations if a.text] + [layout.title.text]:
            rest, before = text, None
            while rest != before:   # innermost marked parts first (tr inside tr)
                before, rest = rest, re.sub(r"⟦[^⟦⟧]*⟧", "", rest)
            rest = symbols.sub("", re.sub(r"</?b>|<br>", " ", rest))
            assert not re.search(r"[A-Za-z\u4e00-\u9fff⟦⟧]", rest), (name, text, rest)


def test_both_languages(chinese):
    for name, fig in every_diagram().items():
        shown = " ".join(texts(fig))
        assert re.search(r"[\u4e00-\u9fff]", shown), name
        leftover = [t for t in figure_texts(fig, keys=("text",))
                    if ENGLISH_PHRASE.search(t)]
        assert not leftover, (name, leftover)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_labels_fit_a_phone(language):
    """A line of a box in one of two columns fits half of a 340 px plot, a line in the middle
    all of it (the legibility check in the browser measures the real glyphs)."""
    i18n.set_language(language)
    try:
        for name, fig in every_diagram().items():
            for a in fig.layout.annotations:
                if not a.text or a.xshift:
                    continue
                room = 340 if a.x == 0.5 else 170   # the middle, or one of two columns
                for line in re.sub(r"</?b>", "", a.text).split("<br>"):
                    assert diagrams.box_width(line) <= room, (name, line)
    finally:
        i18n.set_language("en")


def test_every_diagram_has_a_trace_and_no_controls():
    for name, fig in every_diagram().items():
        assert len(fig.data) == 1 and fig.data[0].type == "scatter", name
        assert not fig.layout.sliders and not fig.layout.updatemenus
        assert fig.layout.height <= 880
        assert text_width(fig.layout.title.text) <= 46


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="all four sizes or none"):
        diagrams.multihead_dataflow(3, 4)
    with pytest.raises(ValueError, match="batched=True"):
        diagrams.multihead_dataflow(3, 4, 2, 3, batched=True)
    with pytest.raises(TypeError, match="n_heads must be an integer"):
        diagrams.multihead_dataflow(3, 4, 2.5, 3)
    with pytest.raises(ValueError, match="d_k=0 is too small"):
        diagrams.multihead_dataflow(3, 4, 2, 0)
    with pytest.raises(TypeError, match="batched"):
        diagrams.multihead_dataflow(batched="yes")
    with pytest.raises(TypeError, match="mapping"):
        diagrams.toy_model([64, 4])
    with pytest.raises(ValueError, match="lacks d_ff"):
        diagrams.toy_model({k: v for k, v in TOY.items() if k != "d_ff"})
    with pytest.raises(ValueError, match="norm"):
        diagrams.toy_model({**TOY, "norm": "middle"})
    with pytest.raises(ValueError):
        diagrams.toy_model({**TOY, "n_heads": 5})   # 64 is not divisible by 5
    with pytest.raises(ValueError, match="n_cached=9 is too large"):
        diagrams.kv_cache(9)
    with pytest.raises(ValueError, match="lacks bytes"):
        diagrams.kv_cache(3, {"layers": 1, "tokens": 2, "d_model": 4})
    with pytest.raises(ValueError, match="square"):
        diagrams.window_grid(np.ones((3, 4), bool), 1)
    with pytest.raises(ValueError, match="square"):
        diagrams.window_grid(np.ones((12, 12), bool), 1)
    with pytest.raises(ValueError, match="at least one key"):
        diagrams.window_grid(np.eye(4, dtype=bool) & False, 1)
    with pytest.raises(ValueError, match="query=4 is too large"):
        diagrams.window_grid(MASK[:4, :4], 2, query=4)
    with pytest.raises(ValueError, match="boolean"):
        diagrams.window_grid(MASK * 3, 2)


def test_the_chapters_draw_their_own_numbers():
    """Chapter 3's dataflow takes its shapes from the walkthrough's example, chapter 9's grid
    its cells from the window mask the chapter computes with."""
    from book.chapters import ch03_walkthrough, ch09_long_context
    from book.ideas import longctx, walkthrough

    ex = walkthrough.example(n_heads=3, d_k=2)
    t = " ".join(texts(ch03_walkthrough.dataflow_diagram(ex)))
    assert "(3 × 4)" in t and "(3 × 2)" in t and "(3 × 6)" in t and "(6 × 4)" in t
    default = " ".join(texts(ch03_walkthrough.dataflow_diagram()))
    ex = walkthrough.example()
    width = len(ex.heads) * ex.heads[0][0].shape[1]
    assert f"({width} × {ex.X.shape[1]})" in default and f"√{ex.heads[0][0].shape[1]}" in default
    with pytest.raises(TypeError, match="Example"):
        ch03_walkthrough.dataflow_diagram("example")
    fig = ch09_long_context.window_diagram(6, 1)
    mask = longctx.window_mask(6, 1).numpy()
    assert sum(s.fillcolor == "#ededed" for s in fig.layout.shapes) == (~mask).sum()
    assert f"{int(mask.sum())} scores" in " ".join(texts(fig))


def test_a_drawing_without_boxes_still_paints_a_trace():
    """The browser test reads a figure whose traces paint nothing as broken: the window grid
    (labels and cells, no boxes) keeps one invisible point."""
    from book.ideas import longctx

    fig = diagrams.window_grid(longctx.window_mask(8, 2).numpy(), 2)
    assert len(fig.data) == 1 and len(fig.data[0].x) >= 1


# --- issue 49: the weight matrices drawn as matrices, the residual lines of the toy model -----

def cells_of(fig, name) -> list:
    return [s for s in fig.layout.shapes if s.name == name]


def test_each_drawn_head_has_its_weight_matrices_as_grids_of_their_shape():
    """W_Q, W_K and W_V of every drawn head: a grid of d_model rows × d_k columns of cells
    (named after the matrix), taller than wide when d_model > d_k, named above, the shape
    under them; a head that is counted, not drawn, has none."""
    n, d_model, n_heads, d_k = 5, 6, 3, 4
    fig = diagrams.multihead_dataflow(n, d_model, n_heads, d_k)
    t = texts(fig)
    for head in (1, 2):
        for name in diagrams.weight_names(head):
            cells = cells_of(fig, name)
            assert len(cells) == d_model * d_k, name
            assert len({c.x0 for c in cells}) == d_k and len({c.y0 for c in cells}) == d_model
            width = max(c.x1 for c in cells) - min(c.x0 for c in cells)
            height = max(c.y1 for c in cells) - min(c.y0 for c in cells)
            assert height / width == pytest.approx(d_model / d_k)
            assert name in t
    assert not any(cells_of(fig, name) for name in diagrams.weight_names(3))
    assert t.count(f"({d_model} × {d_k}) each") == 2
    # between the input and the heads' Q, K, V: X → W → Q, K, V
    boxes = {a.text.split("<br>")[0]: a.y for a in fig.layout.annotations if a.text}
    grid = [c.y0 for h in (1, 2) for name in diagrams.weight_names(h)
            for c in cells_of(fig, name)]
    assert boxes["input X"] < min(grid) and max(grid) < boxes["head 1: Q, K, V"]


def test_weight_matrices_too_big_or_symbolic_are_one_box_of_their_shape():
    fig = diagrams.multihead_dataflow(5, 64, 2, 16)
    for name in diagrams.weight_names(2):
        (box,) = cells_of(fig, name)
        assert (box.y1 - box.y0) / (box.x1 - box.x0) == pytest.approx(64 / 16)
    sym = diagrams.multihead_dataflow()
    assert all(len(cells_of(sym, name)) == 1
               for h in ("1", "h") for name in diagrams.weight_names(h))
    assert texts(sym).count("(d_model × d_k) each") == 2


@pytest.mark.parametrize("language", ["en", "zh"])
def test_weight_matrices_fit_half_a_phone(language):
    """A head's three matrices and their names keep to their column at PHONE_FIGURE_WIDTH:
    the two heads' grids never meet."""
    from book.face.plotting import PHONE_FIGURE_WIDTH

    i18n.set_language(language)
    try:
        fig = diagrams.multihead_dataflow(5, 6, 2, 4)
    finally:
        i18n.set_language("en")
    half_column = (PHONE_FIGURE_WIDTH - 2 * diagrams.SIDE) / 4
    for name in diagrams.weight_names(1) + diagrams.weight_names(2):
        for c in cells_of(fig, name):
            assert max(abs(c.x0), abs(c.x1)) < half_column
    for a in fig.layout.annotations:
        if a.text in diagrams.weight_names(1):
            assert abs(a.xshift) + diagrams.box_width(a.text) / 2 < half_column


@pytest.mark.parametrize("norm", ["pre", "post", "none"])
def test_toy_block_draws_a_residual_line_around_each_sub_layer(norm):
    """The block as EncoderBlock runs it: a residual line (a path and its arrowhead) leaves the
    stream above attention and above the feed-forward layer and comes back at the '+' under
    each; the LayerNorms sit where ``norm`` puts them."""
    fig = diagrams.toy_model({**TOY, "norm": norm})
    boxes = [(a.text, a.y) for a in fig.layout.annotations if a.text and not a.xshift]
    ys = {}
    for text, y in boxes:
        ys.setdefault(text.split(":")[0], []).append(y)
    paths = [s for s in fig.layout.shapes if s.type == "path"]
    heads = [a for a in fig.layout.annotations if a.name == diagrams.RESIDUAL]
    assert len(paths) == 2 and all(p.name == diagrams.RESIDUAL for p in paths)
    assert len(heads) == 2
    sums = sorted(y for y in ys["+"])[1:]   # the first '+' adds the embeddings
    for path, sub_layer, add, head in zip(paths, ("self-attention", "feed-forward"), sums,
                                          heads, strict=True):
        points = [tuple(map(float, p.split(","))) for p in re.findall(r"[\d.]+,[\d.]+",
                                                                       path.path)]
        top, bottom = min(y for _, y in points), max(y for _, y in points)
        (middle,) = ys[sub_layer]
        assert top < middle < bottom and bottom == pytest.approx(add)
        assert head.y == pytest.approx(add) and head.showarrow
    layer_norms = ys.get(i18n.tr("common.dg_layernorm"), [])
    attention, ff = ys["self-attention"][0], ys["feed-forward"][0]
    if norm == "pre":    # before each sub-layer, and once after the stack
        assert sum(y < attention for y in layer_norms) == 1 and len(layer_norms) == 3
    elif norm == "post":  # after each sum
        assert all(y > attention for y in layer_norms) and len(layer_norms) == 2
    else:
        assert not layer_norms
    assert texts(fig).count(i18n.tr("common.dg_residual")) == 2
    assert ff > attention


@pytest.mark.parametrize("language", ["en", "zh"])
def test_toy_residual_lines_stay_inside_the_block_on_a_phone(language):
    from book.face.plotting import PHONE_FIGURE_WIDTH

    i18n.set_language(language)
    try:
        fig = diagrams.toy_model(TOY)
    finally:
        i18n.set_language("en")
    plot = PHONE_FIGURE_WIDTH - 2 * diagrams.SIDE
    frame = next(s for s in fig.layout.shapes if s.type == "rect")
    room = (frame.x1 - 0.5) * plot          # from the middle to the frame's right edge
    for path in (s for s in fig.layout.shapes if s.type == "path"):
        out = max(float(x) for x in re.findall(r"([\d.]+),", path.path))
        assert out < room
    for a in fig.layout.annotations:
        if a.textangle == -90:   # the word "residual" along the line
            assert a.xshift + diagrams.FONT < room
