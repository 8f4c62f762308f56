"""Chapter 4's exercise checkers: each typical mistake gets its own hint, and correct answers
in any reasonable form (torch or numpy, bool or additive mask, torch.Size) pass
(tests/face/test_checks.py runs the generic checks over every registered exercise); and its
mask explorer's faces: dropdown over mask kinds + slider over the padded length, and the live
face (the computation, masktraps.mask_data, is tested in tests/studies/test_masktraps.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import ROOT
from conftest import check_message as message
from tolerance import rounding_tolerance

from book import chapters
from book.chapters import ch04_pytorch
from book.face import checks
from book.ideas import masks
from book.studies import masktraps


def test_causal_mask_hints_name_the_mistake():
    causal = masks.causal_mask(5)
    assert "BLOCKED" in message("ch4.causal_mask", ~causal)
    assert "future" in message("ch4.causal_mask", causal.T.contiguous())
    assert "diagonal" in message("ch4.causal_mask", causal.tril(-1))
    assert "additive" in message("ch4.causal_mask", masks.to_additive(causal))
    assert ".bool()" in message("ch4.causal_mask", causal.int())
    assert "5 × 5" in message("ch4.causal_mask", masks.causal_mask(4))


def test_causal_mask_accepts_numpy_and_lists():
    causal = masks.causal_mask(5)
    assert checks.check("ch4.causal_mask", causal.numpy()).ok
    assert checks.check("ch4.causal_mask", causal.tolist()).ok


def test_split_heads_reshape_only_mistake_gets_its_own_hint():
    def reshape_only(x, n_heads):
        b, n, d = x.shape
        return x.reshape(b, n_heads, n, d // n_heads)

    text = message("ch4.split_heads", reshape_only)
    assert "Right shape, wrong contents" in text and "several tokens" in text


def test_split_heads_other_hints():
    assert "swap axes 1 and 2" in message(
        "ch4.split_heads", lambda x, h: x.view(*x.shape[:2], h, x.shape[2] // h))
    assert "interleaved" in message(
        "ch4.split_heads",
        lambda x, h: x.view(*x.shape[:2], x.shape[2] // h, h).permute(0, 3, 1, 2))
    assert checks.check("ch4.split_heads", lambda x, h: None).status == "todo"
    assert "function itself" in message("ch4.split_heads", torch.zeros(2))
    assert "raised" in message("ch4.split_heads", lambda x, h: x.view(-1, 7))


def test_split_heads_accepts_equivalent_code():
    def with_reshape(x, n_heads):
        b, n, d = x.shape
        return x.reshape(b, n, n_heads, d // n_heads).permute(0, 2, 1, 3)

    assert checks.check("ch4.split_heads", with_reshape).ok


def test_attn_mask_accepts_bool_and_additive_conversions():
    assert checks.check("ch4.torch_attn_mask", lambda m: ~m).ok
    assert checks.check("ch4.torch_attn_mask", lambda m: m.logical_not()).ok
    assert checks.check("ch4.torch_attn_mask", masks.to_additive).ok


def test_attn_mask_hints():
    assert "other way round" in message("ch4.torch_attn_mask", lambda m: m)
    assert "ADDED" in message("ch4.torch_attn_mask", lambda m: (~m).float())
    assert "ADDED" in message("ch4.torch_attn_mask", lambda m: m.float())
    assert "not torch.int64" in message("ch4.torch_attn_mask", lambda m: (~m).long())
    assert "shape" in message("ch4.torch_attn_mask", lambda m: ~m[:-1])
    assert "torch tensor" in message("ch4.torch_attn_mask", lambda m: (~m).numpy())


@pytest.mark.parametrize("answer,text", [
    ((3, 10, 10), "each head scores separately"),
    ((3, 8, 10, 64), "shape of q"),
    ((3, 10, 8, 10), "right after the batch axis"),
    (80, "tuple of integers"),
])
def test_scores_shape_hints(answer, text):
    assert text in message("ch4.scores_shape", answer)


def test_scores_shape_accepts_any_sequence_and_never_prints_the_answer():
    answer = checks.reference("ch4.scores_shape")
    assert checks.check("ch4.scores_shape", torch.Size(answer)).ok
    assert checks.check("ch4.scores_shape", list(answer)).ok
    assert checks.check("ch4.scores_shape", np.array(answer)).ok
    for wrong in chapters.exercises()["ch4.scores_shape"].mistakes():
        assert str(tuple(answer)) not in checks.check("ch4.scores_shape", wrong).message


MAX_LEN = masktraps.MASK_MAX_REAL + masktraps.MASK_MAX_PAD


def test_static_explorer_has_a_dropdown_and_a_slider_that_combine():
    fig = ch04_pytorch.mask_figure()
    kinds = masktraps.MASK_KINDS
    assert len(fig.data) == 2 * len(kinds)
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == [f"mask: {k}" for k in kinds]
    titles = set()
    for i, button in enumerate(menu.buttons):
        visible = button.args[0]["visible"]
        assert [j for j, v in enumerate(visible) if v] == [2 * i, 2 * i + 1]
        titles.add(tuple(a["text"] for a in button.args[1]["annotations"]))
    assert len(titles) == len(kinds)  # the panel titles name the chosen mask
    (slider,) = fig.layout.sliders
    seq_lens = [int(s.label) for s in slider.steps]
    assert seq_lens == list(range(5, masktraps.MASK_MAX_REAL + 1))
    assert slider.active != len(seq_lens) - 1  # moving to the far end changes the drawing
    for step, n in zip(slider.steps, seq_lens, strict=True):
        restyle = step.args[0]
        assert len(restyle["z"]) == len(fig.data)  # every kind follows the slider
        for i, kind in enumerate(kinds):
            d = masktraps.mask_data(kind, 5, n)
            assert restyle["x"][2 * i] == restyle["y"][2 * i] == d["labels"]
            # exact: 0/1 mask cells
            np.testing.assert_array_equal(restyle["z"][2 * i], d["allowed"].astype(int))
            np.testing.assert_allclose(restyle["z"][2 * i + 1], d["weights"], atol=1e-4)
    assert len(fig.to_json()) < 200_000
    json.loads(fig.to_json())


def test_static_explorer_initial_drawing_matches_its_start():
    fig = ch04_pytorch.mask_figure(3, [3, 6], ["padding", "none"], start=6)
    d = masktraps.mask_data("padding", 3, 6)
    assert list(fig.data[0].x) == d["labels"] and fig.data[0].visible
    assert not fig.data[2].visible
    np.testing.assert_allclose(np.array(fig.data[1].z, dtype=float), d["weights"], atol=1e-4)


def test_single_kind_and_length_have_no_controls():
    fig = ch04_pytorch.mask_figure(2, [2], ["causal"])
    assert len(fig.data) == 2 and not fig.layout.updatemenus and not fig.layout.sliders


def test_large_grids_drop_the_cell_text():
    traces = ch04_pytorch._mask_traces(masktraps.mask_data("none", 8, MAX_LEN))
    assert all(t == "" for row in traces["text"][1] for t in row)
    traces = ch04_pytorch._mask_traces(masktraps.mask_data("causal", 2, 3))
    assert traces["text"][0][0] == ["✓", "·", "·"]
    assert traces["text"][1][0][1] == "0"  # a blocked weight reads as an exact 0


@pytest.mark.parametrize("kwargs,text", [
    ({"start": 4}, "not one of the padded lengths"),
    ({"kinds": []}, "at least one"),
    ({"seq_lens": []}, "at least one"),
    ({"kinds": ["future"]}, "not one of"),
])
def test_static_explorer_bad_input(kwargs, text):
    with pytest.raises(ValueError, match=text):
        ch04_pytorch.mask_figure(**kwargs)


LIVE_EXTREMES = [{"kind": k, "length": n, "padding": p} for k in masktraps.MASK_KINDS
                 for n in (1, masktraps.MASK_MAX_REAL) for p in (0, masktraps.MASK_MAX_PAD)]


def _drawn(fig) -> str:
    return json.dumps([[list(t.x), np.asarray(t.z, dtype=float).tolist()] for t in fig.data]
                      + [a.text for a in fig.layout.annotations])


def test_live_explorer_survives_extremes_and_matches_the_data():
    explorer = ch04_pytorch.mask_live()
    drawn = set()
    for values in LIVE_EXTREMES:
        explorer.update(**values)
        d = masktraps.mask_data(values["kind"], values["length"],
                              values["length"] + values["padding"])
        assert list(explorer.figure.data[0].x) == d["labels"]
        # exact: 0/1 mask cells
        np.testing.assert_array_equal(np.asarray(explorer.figure.data[0].z), d["allowed"])
        np.testing.assert_allclose(np.asarray(explorer.figure.data[1].z, dtype=float),
                                   d["weights"], atol=1e-4)
        assert values["kind"] in explorer.figure.layout.annotations[1].text or \
            values["kind"] == "none"
        drawn.add(_drawn(explorer.figure))
    assert len(drawn) == len(LIVE_EXTREMES)  # every combination draws something different


def test_the_explorer_opens_without_a_mask_on_padded_tokens():
    """The state the page's prose describes (tests/face/test_first_frames.py checks the
    prose against it): no mask, real tokens and padding, so that some weight leaks onto the
    padding and onto later tokens; every face opens on it."""
    first = ch04_pytorch.mask_first_data()
    assert first["kind"] == "none" and first["seq_len"] > first["length"]
    assert first["pad_share"] > 0 and first["future_share"] > 0
    for fig in (ch04_pytorch.mask_live().figure, ch04_pytorch.mask_inpage().figure):
        assert list(fig.data[1].x) == first["labels"]
        np.testing.assert_array_equal(np.asarray(fig.data[0].z), first["allowed"].astype(int))
        np.testing.assert_allclose(np.asarray(fig.data[1].z, dtype=float), first["weights"],
                                   atol=1e-4)
        assert fig.layout.title.text == ch04_pytorch._mask_figure_title(first["length"],
                                                                        first["seq_len"])


def test_live_controls_redraw_by_themselves():
    explorer = ch04_pytorch.mask_live()
    explorer.update(kind="none", length=3, padding=2)
    expected = _drawn(explorer.figure)
    explorer.update(kind="causal", length=8, padding=8)
    explorer.controls["kind"].value = "none"
    explorer.controls["length"].value = 3
    explorer.controls["padding"].value = 2
    assert _drawn(explorer.figure) == expected


def test_live_explorer_bad_input():
    explorer = ch04_pytorch.mask_live()
    with pytest.raises(ValueError, match="outside the slider's range"):
        explorer.update(padding=masktraps.MASK_MAX_PAD + 1)
    with pytest.raises(ValueError, match="unknown control"):
        explorer.update(seq_len=4)


# --- figures as a screen reader meets them (issue 47) ---------------------------------------

@pytest.mark.parametrize("language", ["en", "zh"])
def test_mask_explorer_is_described_in_every_face(language):
    from book.face.figures import described
    from book.kit import i18n

    i18n.set_language(language)
    try:
        faces = [ch04_pytorch.mask_figure(), ch04_pytorch.mask_live().figure,
                 ch04_pytorch.mask_inpage().figure]
        texts = [described(fig.to_dict()) for fig in faces]
    finally:
        i18n.set_language("en")
    assert all(texts)


def test_mask_caption_quotes_the_drawn_padding_share():
    from book.face.figures import described
    from book.kit import i18n

    i18n.set_language("en")
    fig = ch04_pytorch.mask_figure(length=5, start=8)
    weights = fig.data[2 * list(masktraps.MASK_KINDS).index("none") + 1]  # no mask's weights
    z = np.asarray(weights.z, dtype=float)
    share = z[:5, 5:].sum(axis=1).max()
    caption = described(fig.to_dict())[1]
    assert "(5 real tokens + 3 of padding)" in caption
    assert f"up to {share:.2f} of its weight on the padding" in caption and share > 0
    live = ch04_pytorch.mask_live()
    assert described(live.figure.to_dict())[1].count("of padding") == 1  # it reaches no mask


def test_every_chinese_token_on_an_english_axis_is_glossed():
    """Issue 48: the mask explorer's upright keys and its queries have no room for an English
    gloss, so each cell's hover names its query and key with theirs (tests/gloss_check.py),
    in every face, every state of the static explorer's controls and for any length; the
    page gets the glosses in its spec; the Chinese edition's hover reads the tokens."""
    from gloss_check import unglossed

    from book.kit import i18n

    live = ch04_pytorch.mask_live()
    figures = [ch04_pytorch.mask_figure(), ch04_pytorch.mask_inpage().figure, live.figure]
    for length, padding in ((1, 0), (8, 8), (3, 5)):
        live.update(kind="causal + padding", length=length, padding=padding)
        assert not unglossed(live.figure), (length, padding, unglossed(live.figure))
    for fig in figures:
        assert not unglossed(fig), unglossed(fig)
    spec = json.loads(ch04_pytorch.mask_inpage().spec_json)
    assert spec["glosses"][spec["tokens"].index("香菜")] == "coriander"
    i18n.set_language("zh")
    try:
        zh = ch04_pytorch.mask_inpage()
    finally:
        i18n.set_language("en")
    assert json.loads(zh.spec_json)["glosses"] is None
    assert zh.figure.data[0].customdata is None and "%{x}" in zh.figure.data[0].hovertemplate


# --- the page's step-by-step build (issue 49, item 2) -----------------------------------------

STEP_CELLS = ("c001b", "c001d", "c001f", "c001h", "c003b")  # steps 1–5, in reading order
HIDING = {"hide-cell", "hide-input", "hide-output", "remove-cell", "remove-input",
          "remove-output"}


def _notebook_cells() -> list[dict]:
    return json.loads((ROOT / "chapters" / "04_pytorch.ipynb").read_text("utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def test_step_cells_come_in_order_and_are_visible():
    cells = _notebook_cells()
    ids = [c["id"] for c in cells]
    positions = [ids.index(cid) for cid in STEP_CELLS]
    assert positions == sorted(positions), "the five steps must come in order"
    for cid in STEP_CELLS:
        cell = cells[ids.index(cid)]
        assert cell["cell_type"] == "code"
        assert not HIDING & set(cell["metadata"].get("tags", [])), f"{cid} is folded"
        source = _source(cell)
        assert "torch.testing.assert_close" in source, f"{cid} checks nothing"
        assert "rtol=tol, atol=tol" in source, f"{cid} must use the rounding tolerance"
        assert "tr(" not in source and "i18n" not in source
    # each step's check names what it checks and the step before (step 2: step 1's function)
    for cid, (this, before) in zip(STEP_CELLS, [("out_1", "by_hand"), ("out_2", "one_head("),
                                                ("concat", "out_2"), ("out_4", "out_3"),
                                                ("out_5", "out_4")], strict=True):
        checks_ = [line for line in _source(cells[ids.index(cid)]).splitlines()
                   if line.startswith("torch.testing.assert_close(")]
        assert any(this in line for line in checks_), f"{cid} does not check {this}"
        assert before in _source(cells[ids.index(cid)]), f"{cid} never uses {before}"
    # the module listing and the conventions table are open
    for cid in ("c003", "c031"):
        assert not HIDING & set(cells[ids.index(cid)]["metadata"].get("tags", [])), cid


def _run_steps(replace: tuple[str, str] | None = None) -> dict:
    """Run the imports cell and the five step cells in one namespace (``replace`` edits step
    4's source first); return the namespace."""
    cells = {c["id"]: c for c in _notebook_cells()}
    imports = _source(cells["c001"]).replace("book.setup()", "")
    namespace: dict = {}
    exec(imports, namespace)  # noqa: S102
    for cid in STEP_CELLS:
        source = _source(cells[cid])
        if replace and cid == "c001h":
            assert replace[0] in source
            source = source.replace(*replace)
        exec(source, namespace)  # noqa: S102
    return namespace


def test_the_steps_run_and_agree(capsys):
    ns = _run_steps()
    printed = capsys.readouterr().out
    assert printed.count("max difference") == 6
    tol = ns["tol"]
    assert tol == rounding_tolerance(torch.float32, ns["d_model"])  # tests/tolerance.py's rule
    torch.testing.assert_close(ns["out_4"], ns["out_3"], rtol=tol, atol=tol)
    assert ns["out_5"].shape == (ns["batch"], ns["seq"], ns["d_model"])


@pytest.mark.parametrize("old,new", [
    ("context.transpose(1, 2).contiguous()", "context.contiguous()"),  # transpose forgotten
    ("t.view(batch, seq, n_heads, d_k).transpose(1, 2)",
     "t.view(batch, n_heads, seq, d_k)"),  # the colleague's split of exercise 2
    ("/ d_k**0.5  # (batch, n_heads, seq, seq)", "/ d_k  # (batch, n_heads, seq, seq)"),
])
def test_a_broken_step_4_fails_its_check(old, new):
    with pytest.raises(AssertionError, match="not close"):
        _run_steps((old, new))


def test_conventions_table_and_speed_verdict():
    from book.ideas import agreement

    text = ch04_pytorch.conventions_table(agreement.mask_conventions()).data
    assert text.splitlines()[0] == "| where | argument | matches the ground truth |"
    assert len(text.splitlines()) == 2 + len(agreement.mask_conventions())
    with pytest.raises(ValueError, match="mask_conventions"):
        ch04_pytorch.conventions_table([{"where": "x"}])
    assert ch04_pytorch.speed_verdict(2.0) == "slower than"
    assert ch04_pytorch.speed_verdict(0.5) == "faster than"
    assert ch04_pytorch.speed_verdict(1.0) == "about as fast as"
    with pytest.raises(ValueError):
        ch04_pytorch.speed_verdict(-1.0)


def test_conventions_table_and_speed_verdict_in_chinese():
    from book.ideas import agreement
    from book.kit import i18n

    i18n.set_language("zh")
    try:
        text = ch04_pytorch.conventions_table(agreement.mask_conventions()).data
        verdicts = [ch04_pytorch.speed_verdict(r) for r in (2.0, 0.5, 1.0)]
    finally:
        i18n.set_language("en")
    assert text.splitlines()[0] == "| 位置 | 参数 | 与基准答案一致 |"
    assert "True = 可以关注" in text
    assert verdicts == ["更慢", "更快", "速度相当"]
