"""Chapter 7 (book.chapters.ch07_mask_traps): the bug explorer (both faces), the training
figure, the chapter's exercises and its Chinese edition (the computations, book.studies.masktraps,
are tested in tests/studies/test_masktraps.py)."""

from __future__ import annotations

import json
import math

import faces
import pytest
import torch

from book.chapters import ch07_mask_traps
from book.face import checks
from book.studies import masktraps
from book.toy.fit import History


def test_static_explorer_has_one_dropdown_entry_per_bug_and_each_differs():
    fig = ch07_mask_traps.mask_bug_figure()
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == list(masktraps.BUGS)
    drawn = {json.dumps(b.args[0]["z"]) for b in buttons}
    assert len(drawn) == len(buttons)
    nan_text = buttons[list(masktraps.BUGS).index("~uint8, -inf")].args[0]["text"][1]
    assert all(t == "NaN" for row in nan_text for t in row)
    assert json.loads(fig.to_json())   # serialisable for the HTML page
    with pytest.raises(ValueError):
        ch07_mask_traps.mask_bug_figure([])


def test_training_figure_marks_a_diverged_run():
    ok = History(loss=[2.0, 1.0], test_accuracy=[0.5], test_steps=[2], steps=2)
    bad = History(loss=[float("nan")], steps=1, diverged=True)
    fig = ch07_mask_traps.mask_training_figure({"right": ok, "flipped": bad})
    assert "50.0%" in fig.data[0].name and "NaN at step 1" in fig.data[1].name
    with pytest.raises(ValueError):
        ch07_mask_traps.mask_training_figure({})


def test_live_explorer_any_slider_position():
    explorer = ch07_mask_traps.mask_bug_live()
    for bug in masktraps.BUGS:
        for length, padding in [(1, 0), (8, 8), (3, 5)]:
            explorer.update(bug=bug, length=length, padding=padding)
    fig = explorer.figure
    assert "right pad + causal" in fig.layout.title.text
    assert len(fig.data[0].x) == 8
    with pytest.raises(ValueError, match="outside"):
        explorer.update(length=9)


def test_mask_bug_live_is_not_built_from_mask_bug_figure(monkeypatch):
    """The two faces are siblings (both start from _mask_bug_plot): the live face never
    calls the static one."""
    faces.forbid(monkeypatch, ch07_mask_traps, "mask_bug_figure")
    explorer = ch07_mask_traps.mask_bug_live()
    explorer.update(length=3, padding=1)
    assert not explorer.figure.layout.updatemenus and len(explorer.figure.data[1].x) == 4


def test_chapter7_exercise_hints():
    def msg(key, answer):
        result = checks.check(key, answer)
        assert not result.ok
        return result.message

    assert "254" in msg("ch7.key_padding_mask", lambda k: ~k)
    assert "only to the padding" in msg("ch7.key_padding_mask", lambda k: k.bool())
    assert "fully masked" in msg("ch7.key_padding_mask", lambda k: (~k).bool())
    assert checks.check("ch7.key_padding_mask", lambda k: ~k.bool()).ok
    assert checks.check("ch7.key_padding_mask", lambda k: k.eq(0)).ok
    assert "RIGHT" in msg("ch7.left_pad_rows", 0)
    assert "NaN" in msg("ch7.masked_softmax",
                        lambda s, a: torch.softmax(s.masked_fill(~a, -math.inf), -1))
    assert "uniform" in msg("ch7.masked_softmax",
                            lambda s, a: torch.softmax(s.masked_fill(~a, -1e9), -1))

    def nan_to_num(s, a):
        return torch.softmax(s.masked_fill(~a, -math.inf), -1).nan_to_num(0.0)

    assert checks.check("ch7.masked_softmax", nan_to_num).ok


def test_chapter7_figures_and_messages_in_chinese():
    """The Chinese edition: menu, titles, axes, legends and exercise messages without an
    English sentence (code names such as NaN, F.sdpa, uint8 stay)."""
    import re

    from book.kit import i18n

    keep = {"NaN", "uint8", "inf", "bool", "sdpa", "attn_mask", "scaled_dot_product_attention",
            "nn", "MultiheadAttention", "True", "token", "logits", "softmax"}

    def english(texts):
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", " ".join(t for t in texts if t))
        return [w for w in words if w not in keep and w not in ("br", "sup", "extra", "text")]

    i18n.set_language("zh")
    try:
        fig = ch07_mask_traps.mask_bug_figure()
        texts = [fig.layout.title.text] + [a.text for a in fig.layout.annotations]
        texts += [fig.layout.xaxis.title.text, fig.layout.yaxis.title.text]
        texts += [t.hovertemplate for t in fig.data]
        for button in fig.layout.updatemenus[0].buttons:
            texts += [button.label, button.args[1]["title.text"]]
        assert english(texts) == [], english(texts)
        ok = History(loss=[2.0, 1.0], test_accuracy=[0.5], test_steps=[2], steps=2)
        bad = History(loss=[float("nan")], steps=1, diverged=True)
        fig = ch07_mask_traps.mask_training_figure({"正确的掩码": ok, "翻转": bad})
        assert english([t.name for t in fig.data] + [fig.layout.xaxis.title.text,
                                                     fig.layout.yaxis.title.text]) == []
        message = checks.check("ch7.left_pad_rows", 0).message
        assert english([message]) == [] and "右填充" in message
        assert ch07_mask_traps.api_meaning("nn.MultiheadAttention attn_mask") == "True = 屏蔽"
    finally:
        i18n.set_language("en")
    assert ch07_mask_traps.mask_bug_figure().layout.updatemenus[0].buttons[0].label \
        == "correct"
    with pytest.raises(ValueError, match="api must be one of"):
        ch07_mask_traps.api_meaning("masked fill")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_figure_is_described_in_both_languages(language):
    """Each figure carries a text alternative and a caption (book.face.figures.describe), in
    the edition's language; the live face gets them from the same plot function."""
    from book.face.figures import described
    from book.kit import i18n

    ok = History(loss=[2.0, 1.0], test_accuracy=[0.5], test_steps=[2], steps=2)
    bad = History(loss=[float("nan")], steps=1, diverged=True)
    try:
        i18n.set_language(language)
        figures = [ch07_mask_traps.mask_training_figure({"right": ok, "flipped": bad}),
                   ch07_mask_traps.mask_bug_figure(), ch07_mask_traps.mask_bug_live().figure]
        for fig in figures:
            texts = described(fig.to_dict())
            assert texts is not None, fig.layout.title.text
            if language == "zh":
                assert all(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in texts), texts
    finally:
        i18n.set_language("en")


def test_training_caption_numbers_are_the_drawn_losses():
    from book.face.figures import described

    a = History(loss=[2.0, 0.4321], test_accuracy=[0.5], test_steps=[2], steps=2)
    b = History(loss=[2.0, 0.9], test_accuracy=[0.4], test_steps=[2], steps=2)
    bad = History(loss=[2.5, float("nan")], steps=2, diverged=True)
    fig = ch07_mask_traps.mask_training_figure({"one": a, "two": b, "three": bad})
    _, caption = described(fig.to_dict())
    lowest = min(min(t.y) for t in fig.data if t.mode == "lines")
    assert f"{lowest:.2f}" in caption and "“one”" in caption
    assert "NaN at step 2" in caption
    # no two runs share a dash (they differ in greyscale, not by colour alone)
    dashes = [t.line.dash for t in fig.data if t.mode == "lines"]
    assert len(set(dashes)) == len(dashes)
    fig = ch07_mask_traps.mask_training_figure({"one": a, "two": b})
    assert "Every run" in described(fig.to_dict())[1]


def test_dtype_table_and_run_labels_follow_their_inputs():
    """The lesson's dtype table and the training figure's run labels (issue 49: they left
    the notebook for the chapter module): one row per non-boolean case, its outcome in words;
    a run the chapter does not train is refused."""
    api = "masked_fill"
    rows = [{"api": api, "dtype": "bool", "raised": False, "error": None, "message": None,
             "same_as_bool": True, "max_diff": 0.0},
            {"api": api, "dtype": "uint8", "raised": True, "error": "RuntimeError",
             "message": "expected a bool mask, got uint8", "same_as_bool": None,
             "max_diff": None},
            {"api": api, "dtype": "float32", "raised": False, "error": None, "message": None,
             "same_as_bool": False, "max_diff": 0.75}]
    lines = ch07_mask_traps.dtype_outcome_table(rows).splitlines()
    assert len(lines) == 4 and "`bool`" not in "".join(lines)
    assert lines[2].endswith("| `uint8` | raises `RuntimeError`: expected a bool mask |")
    assert "(largest difference 0.75)" in lines[3]
    history = History(loss=[2.0, 1.0], test_accuracy=[0.5], test_steps=[2], steps=2)
    assert list(ch07_mask_traps.run_labels({"right": history, "inf": history})) == [
        "right mask", "flipped, −inf fill"]
    with pytest.raises(ValueError, match="keyed by"):
        ch07_mask_traps.run_labels({"flipped": history})
