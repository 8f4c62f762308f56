"""book.studies.masktraps (chapter 7): the dtype table, the three ways to treat a fully masked row,
LooseAttention against PyTorch's own attention, loosen(), the bug explorer (both faces) and
the chapter's exercises."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from book.chapters import ch07_mask_traps
from book.face import checks
from book.ideas import masks, mha
from book.studies import masktraps
from book.toy import orders, train
from book.toy.fit import History, fit
from book.toy.model import TinyEncoder

# ---- dtype_outcome ------------------------------------------------------------------------------

@pytest.mark.parametrize("api", masktraps.APIS)
def test_bool_masks_are_the_reference(api):
    out = masktraps.dtype_outcome(api, "bool")
    # exact: the boolean mask against itself is the same computation run twice
    assert not out["raised"] and out["same_as_bool"] and out["max_diff"] == 0.0


@pytest.mark.parametrize("api", masktraps.APIS)
@pytest.mark.parametrize("dtype", ["uint8", "int64"])
def test_integer_masks_are_refused_by_current_torch(api, dtype):
    out = masktraps.dtype_outcome(api, dtype)
    assert out["raised"], out
    assert out["message"] and out["error"] in ("RuntimeError", "AssertionError")


def test_float_masks_run_and_differ_except_masked_fill():
    table = {r["api"]: r for r in masktraps.dtype_table(dtypes=["float32"])}
    assert table["masked_fill"]["raised"]
    for api in masktraps.APIS[1:]:
        assert not table[api]["raised"] and not table[api]["same_as_bool"], api
        assert table[api]["max_diff"] > 1e-3


def test_dtype_outcome_rejects_bad_names():
    with pytest.raises(ValueError, match="api"):
        masktraps.dtype_outcome("attention", "bool")
    with pytest.raises(ValueError, match="dtype"):
        masktraps.dtype_outcome("masked_fill", "int8")
    assert len(masktraps.dtype_table()) == len(masktraps.APIS) * len(masktraps.MASK_DTYPES)


# ---- masked_weights --------------------------------------------------------------------------

def _scores_and_mask():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 3, 4, 4, generator=gen)
    allowed = torch.rand(2, 3, 4, 4, generator=gen) < 0.5
    allowed[0, 0, 1] = False      # a fully masked row
    allowed[1, 2, 3] = False
    allowed[0, 1, 2] = True
    return scores, allowed


def test_masked_weights_three_handlings_differ_only_on_empty_rows():
    scores, allowed = _scores_and_mask()
    empty = ~allowed.any(-1)
    w_inf = masktraps.masked_weights(scores, allowed, "-inf")
    w_fin = masktraps.masked_weights(scores, allowed, "-1e9")
    w_sdpa = masktraps.masked_weights(scores, allowed, "sdpa")
    assert torch.isnan(w_inf[empty]).all() and not torch.isnan(w_inf[~empty]).any()
    torch.testing.assert_close(w_fin[empty], torch.full_like(w_fin[empty], 0.25))
    assert (w_sdpa[empty] == 0).all()
    for w in (w_fin, w_sdpa):
        torch.testing.assert_close(w[~empty], w_inf[~empty])
        assert (w[~empty][~allowed[~empty]] == 0).all()


def test_sdpa_handling_matches_torch_sdpa_on_fully_masked_rows():
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 2, 5, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    allowed = torch.rand(2, 2, 5, 5, generator=gen) < 0.4
    allowed[0, 1, 2] = False
    allowed[1, 0, 0] = False
    weights = masktraps.masked_weights(q @ k.transpose(-2, -1) / 2.0, allowed, "sdpa")
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(weights @ v, want)


def test_masked_weights_input_checks():
    scores, allowed = _scores_and_mask()
    with pytest.raises(ValueError, match="handling"):
        masktraps.masked_weights(scores, allowed, "zero")
    with pytest.raises(TypeError, match="boolean"):
        masktraps.masked_weights(scores, allowed.int())
    with pytest.raises(TypeError, match="float"):
        masktraps.masked_weights(scores.long(), allowed)


# ---- LooseAttention and loosen ----------------------------------------------------------------

def test_loose_attention_without_bug_equals_the_book_layer():
    torch.manual_seed(0)
    book_layer = mha.MultiHeadSelfAttention(8, 2, dtype=torch.float64).eval()
    loose = masktraps.LooseAttention.from_module(book_layer)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    pad = masks.padding_mask([5, 3], 5)
    causal = masks.causal_mask(5)
    for kw in ({}, {"padding_mask": pad}, {"mask": causal, "padding_mask": pad}):
        want, w_want = book_layer(x, need_weights=True, **kw)
        for handling in masktraps.HANDLING:
            loose.handling = handling
            got, w_got = loose(x, need_weights=True, **kw)
            torch.testing.assert_close(got, want)
            torch.testing.assert_close(w_got, w_want)


def test_flipped_loose_attention_is_nn_multihead_attention_given_the_book_mask():
    torch.manual_seed(1)
    loose = masktraps.LooseAttention(8, 2, flip=True, handling="-inf",
                                     dtype=torch.float64).eval()
    torch_mha = mha.copy_to_torch_mha(loose).eval()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    pad = masks.padding_mask([5, 3], 5)      # the book's convention: True = real token
    with torch.no_grad():
        out, weights = loose(x, padding_mask=pad, need_weights=True)
        t_out, t_weights = torch_mha(x, x, x, key_padding_mask=pad,
                                     average_attn_weights=False)
    torch.testing.assert_close(weights, t_weights, equal_nan=True)
    torch.testing.assert_close(out, t_out, equal_nan=True)
    assert torch.isnan(out[0]).all() and not torch.isnan(out[1]).any()


def test_flipped_sdpa_handling_equals_sdpa_given_the_torch_mask():
    torch.manual_seed(2)
    loose = masktraps.LooseAttention(8, 2, flip=True, handling="sdpa").eval()
    x = torch.randn(2, 4, 8)
    pad = masks.padding_mask([4, 2], 4)
    q, k, v = (loose.split_heads(w(x)) for w in (loose.w_q, loose.w_k, loose.w_v))
    with torch.no_grad():
        got = loose(x, padding_mask=pad)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=(~pad)[:, None, None, :])
        want = loose.w_o(loose.merge_heads(context))
    torch.testing.assert_close(got, want)


def test_loose_attention_checks_its_switches():
    with pytest.raises(TypeError, match="flip"):
        masktraps.LooseAttention(8, 2, flip=1)
    with pytest.raises(ValueError, match="handling"):
        masktraps.LooseAttention(8, 2, handling="nan")
    layer = masktraps.LooseAttention(8, 2, flip=True, handling="-1e9")
    assert "flip=True" in repr(layer) and "-1e9" in repr(layer)
    with pytest.raises(TypeError, match="boolean"):
        layer(torch.randn(1, 3, 8), padding_mask=torch.ones(1, 3, dtype=torch.uint8))


def test_loosen_copies_and_keeps_the_original():
    model = TinyEncoder(d_model=16, n_heads=2, seed=3)
    loose = masktraps.loosen(model, flip=False, handling="sdpa")
    assert all(isinstance(b.attn, masktraps.LooseAttention) for b in loose.blocks)
    assert not any(isinstance(b.attn, masktraps.LooseAttention) for b in model.blocks)
    batch = orders.collate(orders.generate(6, seed=1))
    with torch.no_grad():
        torch.testing.assert_close(loose(batch.ids, batch.padding_mask),
                                   model(batch.ids, batch.padding_mask))
        flipped = masktraps.loosen(model, flip=True, handling="-inf")
        logits = flipped(batch.ids, batch.padding_mask)
    full = batch.padding_mask.all(dim=1)   # orders with no padding: every key blocked
    assert full.any() and torch.isnan(logits[full]).all()
    with pytest.raises(TypeError, match="TinyEncoder"):
        masktraps.loosen(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="flip"):
        masktraps.loosen(model, flip="yes")
    with pytest.raises(ValueError, match="handling"):
        masktraps.loosen(model, handling="zeros")


def test_flipped_minus_inf_training_stops_at_the_first_step():
    train_orders = orders.generate(40, seed=2)
    model = masktraps.loosen(TinyEncoder(d_model=16, n_heads=2), flip=True,
                             handling="-inf")
    history = fit(model, train_orders, steps=3, batch_size=40, progress=False,
                        bucket=False)
    assert history.diverged and history.steps == 1 and math.isnan(history.loss[0])


def test_nan_share():
    layer = torch.nn.Linear(3, 2)
    assert masktraps.nan_share(layer) == 0.0
    with torch.no_grad():
        layer.weight[0, 0] = float("nan")
    assert masktraps.nan_share(layer) == pytest.approx(1 / 8)
    with pytest.raises(TypeError):
        masktraps.nan_share("model")
    with pytest.raises(ValueError, match="no parameters"):
        masktraps.nan_share(torch.nn.ReLU())


# ---- the bug explorer ------------------------------------------------------------------------

@pytest.mark.parametrize("bug", masktraps.BUGS)
@pytest.mark.parametrize("length,padding", [(1, 0), (1, 8), (8, 8), (5, 2), (8, 0)])
def test_bug_data_shapes_and_invariants(bug, length, padding):
    d = masktraps.bug_data(bug, length, padding)
    n = len(d["labels"])
    assert len(set(d["labels"])) == n
    assert d["allowed"].shape == d["weights"].shape == (n, n)
    w = d["weights"]
    finite = np.isfinite(w).all(axis=1)
    assert d["nan_rows"] == int((~finite).sum())
    sums = w[finite].sum(axis=1)
    assert np.all((np.abs(sums - 1) < 1e-5) | (sums == 0))


def test_bug_data_tells_each_story():
    assert masktraps.bug_data("correct")["real_on_pad"] == 0.0
    assert masktraps.bug_data("flipped")["real_on_pad"] == pytest.approx(1.0)
    d = masktraps.bug_data("flipped, no padding", 5, 3)
    assert d["padding"] == 0 and d["zero_rows"] == 5
    assert masktraps.bug_data("~uint8, -inf")["nan_rows"] == 7
    assert masktraps.bug_data("~uint8, -1e9")["uniform_rows"] == 7
    assert masktraps.bug_data("float 0/1 added")["real_on_pad"] > 0.05
    left = masktraps.bug_data("left pad + causal, -inf", 5, 2)
    assert left["labels"][:2] == ["pad1", "pad2"] and left["nan_rows"] == 2
    assert masktraps.bug_data("left pad + causal, -1e9", 5, 2)["uniform_rows"] == 2
    right = masktraps.bug_data("right pad + causal", 5, 2)
    assert right["nan_rows"] == 0 and right["real_on_pad"] == 0.0
    with pytest.raises(ValueError, match="bug"):
        masktraps.bug_data("nothing")
    with pytest.raises(ValueError, match="length"):
        masktraps.bug_data("correct", 0)
    with pytest.raises(ValueError, match="padding"):
        masktraps.bug_data("correct", 3, 9)


def test_static_explorer_has_one_dropdown_entry_per_bug_and_each_differs():
    fig = ch07_mask_traps.mask_bug_explorer()
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == list(masktraps.BUGS)
    drawn = {json.dumps(b.args[0]["z"]) for b in buttons}
    assert len(drawn) == len(buttons)
    nan_text = buttons[list(masktraps.BUGS).index("~uint8, -inf")].args[0]["text"][1]
    assert all(t == "NaN" for row in nan_text for t in row)
    assert json.loads(fig.to_json())   # serialisable for the HTML page
    with pytest.raises(ValueError):
        ch07_mask_traps.mask_bug_explorer([])


def test_training_figure_marks_a_diverged_run():
    ok = History(loss=[2.0, 1.0], test_accuracy=[0.5], test_steps=[2], steps=2)
    bad = History(loss=[float("nan")], steps=1, diverged=True)
    fig = ch07_mask_traps.mask_training_figure({"right": ok, "flipped": bad})
    assert "50.0%" in fig.data[0].name and "NaN at step 1" in fig.data[1].name
    with pytest.raises(ValueError):
        ch07_mask_traps.mask_training_figure({})


def test_live_explorer_any_slider_position():
    explorer = ch07_mask_traps.mask_bug_explorer_live()
    for bug in masktraps.BUGS:
        for length, padding in [(1, 0), (8, 8), (3, 5)]:
            explorer.update(bug=bug, length=length, padding=padding)
    fig = explorer.figure
    assert "right pad + causal" in fig.layout.title.text
    assert len(fig.data[0].x) == 8
    with pytest.raises(ValueError, match="outside"):
        explorer.update(length=9)


# ---- exercises ---------------------------------------------------------------------------------

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


def test_nan_step_spreads_nan_from_a_flipped_mask_and_checks_input():
    train_orders, _ = train.default_data()
    batch = orders.collate(train_orders[:32])
    model = masktraps.loosen(TinyEncoder(**train.MODEL), flip=True, handling="-inf")
    step = masktraps.nan_step(model, batch, clip=True)
    assert step["logits"] > 0 and step["params"] > 0.5
    with pytest.raises(TypeError, match="clip"):
        masktraps.nan_step(model, batch, clip=1)
    with pytest.raises(TypeError, match="collate"):
        masktraps.nan_step(model, [1, 2], clip=False)


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
        fig = ch07_mask_traps.mask_bug_explorer()
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
        message = ch07_mask_traps._ch7_left_pad_rows(0)[1]
        assert english([message]) == [] and "右填充" in message
        assert ch07_mask_traps.api_meaning("nn.MultiheadAttention attn_mask") == "True = 屏蔽"
    finally:
        i18n.set_language("en")
    assert ch07_mask_traps.mask_bug_explorer().layout.updatemenus[0].buttons[0].label \
        == "correct"
    with pytest.raises(ValueError, match="api must be one of"):
        ch07_mask_traps.api_meaning("masked fill")
