"""book.studies.attention_roles (chapter 8): reading a reader's order, relation pairs from the
clause
structure, relation and category masses (against a slow per-order loop), specialists,
entropy during training, batched predictions; the head/model views and the live widget,
including its bad input (unknown word, empty text, too long)."""

from __future__ import annotations

import json
import re
import unicodedata

import numpy as np
import pytest
import torch
from conftest import ENGLISH_PHRASE, FIGURE_TEXT_KEYS, figure_texts

from book import chapters
from book.chapters import ch08_seeing_attention
from book.face import checks
from book.kit import i18n
from book.studies import attention_roles
from book.studies import attention_roles as roles
from book.toy import orders, train
from book.toy import probe as probe_mod
from book.toy.fit import fit
from book.toy.model import TinyEncoder

TEXTS = ["一碗牛肉面，不要香菜，多加辣。", "两份招牌炒饭，葱和蒜都不要，辣多放一点。",
         "馄饨三份，牛肉面要一份，多加香菜。"]


@pytest.fixture(scope="module")
def model():
    return train.pretrained()


@pytest.fixture(scope="module")
def small_model():
    return TinyEncoder(d_model=16, n_heads=2, seed=5)


@pytest.fixture(scope="module")
def some_orders():
    return orders.generate(60, seed=3)


# ---- read_order / order_maps -------------------------------------------------------------

def test_read_order_labels_by_the_rules():
    order = roles.read_order(TEXTS[0])
    assert order.tokens == tuple(orders.tokenize(TEXTS[0]))
    assert order.labels == tuple(orders.label(order.tokens))


def test_read_order_keeps_an_order_the_rules_call_ambiguous():
    order = roles.read_order("不要香菜多加辣")   # two modifiers in one clause
    assert set(order.labels) == {orders.NONE}


@pytest.mark.parametrize("text,match", [
    ("", "empty"), ("   ", "empty"), ("一碗牛肉面，不要pizza", "not a word"),
    ("一碗牛肉面，" * 30, "at most 48")])
def test_read_order_bad_input_says_what_to_fix(text, match):
    with pytest.raises(ValueError, match=match) as err:
        roles.read_order(text)
    if match == "not a word":
        assert "香菜" in str(err.value)   # the message lists the vocabulary


def test_read_order_types():
    with pytest.raises(TypeError, match="str"):
        roles.read_order(["一碗"])
    with pytest.raises(TypeError):
        roles.read_order("一碗", max_len=2.5)


def test_order_maps(model):
    d = roles.order_maps(model, TEXTS[0])
    n = len(d["order"])
    assert d["maps"].shape == (model.n_layers, model.n_heads, n, n)
    np.testing.assert_allclose(d["maps"].sum(-1), 1.0, atol=1e-5)
    assert d["predictions"] == probe_mod.predict(model, d["order"])
    assert d["rules"] == list(d["order"].labels)
    assert roles.order_maps(model, "不要香菜多加辣")["rules"] is None
    with pytest.raises(ValueError, match="at most 64"):
        roles.order_maps(model, "一碗牛肉面，" * 40)
    with pytest.raises(TypeError, match="TinyEncoder"):
        roles.order_maps(torch.nn.Linear(2, 2), TEXTS[0])


def test_token_labels_are_unique():
    order = roles.read_order("老板，来三盘饺子，醋少放，再来一碗馄饨，不要香菜。")
    for gloss in (False, True):
        labels = roles.token_labels(order, gloss=gloss)
        assert len(set(labels)) == len(labels) == len(order)
    assert "(coriander)" in roles.token_labels(order, gloss=True)[-2]
    with pytest.raises(TypeError):
        roles.token_labels("一碗")


# ---- relation pairs ----------------------------------------------------------------------

def test_relation_pairs_by_hand():
    order = roles.read_order(TEXTS[1])
    # 两份 招牌 炒饭 ， 葱 和 蒜 都 不要 ， 辣 多放 一点 。
    p = roles.relation_pairs(order)
    assert p["ingredient → its modifier"] == [(4, [8]), (6, [8]), (10, [11])]
    assert p["modifier → its ingredients"] == [(8, [4, 6]), (11, [10])]
    assert p["dish → its quantity"] == [(2, [0])]
    assert p["quantity → its dish"] == [(0, [2])]
    assert p["word → end of its clause"] == [(2, [3]), (4, [9]), (6, [9]), (10, [13])]
    assert p["word → start of its clause"] == [(4, [3]), (6, [3]), (10, [9])]
    with pytest.raises(TypeError):
        roles.relation_pairs(TEXTS[1])


def test_relation_pairs_agree_with_the_labels(some_orders):
    """Every ingredient with a modifier in its clause gets that modifier's label."""
    for order in some_orders:
        for i, keys in roles.relation_pairs(order)["ingredient → its modifier"]:
            assert len(keys) == 1
            assert order.labels[i] == orders.WORDS[order.tokens[keys[0]]][2]
        for i, keys in roles.relation_pairs(order)["dish → its quantity"]:
            assert order.labels[i] == f"count_{orders.WORDS[order.tokens[keys[0]]][2]}"


# ---- masses against a slow loop ------------------------------------------------------------

def _slow_relation_mass(model, orders_):
    out = {r: [np.zeros((model.n_layers, model.n_heads)), 0.0, 0] for r in roles.RELATIONS}
    for order in orders_:
        w = probe_mod.attention_maps(model, order)
        for relation, pairs in roles.relation_pairs(order).items():
            for q, keys in pairs:
                out[relation][0] += w[:, :, q, keys].sum(-1)
                out[relation][1] += len(keys) / len(order)
                out[relation][2] += 1
    return out


def test_relation_mass_matches_a_per_order_loop(small_model, some_orders):
    fast = roles.relation_mass(small_model, some_orders)
    slow = _slow_relation_mass(small_model, some_orders)
    for relation, (total, chance, count) in slow.items():
        assert fast[relation]["pairs"] == count > 0
        np.testing.assert_allclose(fast[relation]["mass"], total / count, atol=1e-6)
        assert fast[relation]["chance"] == pytest.approx(chance / count)


def test_category_mass_matches_a_per_order_loop(small_model, some_orders):
    got = roles.category_mass(small_model, some_orders, queries=("ingredient",))
    cats = list(orders.CATEGORIES)
    want = np.zeros((len(cats), small_model.n_layers, small_model.n_heads))
    chance, n = np.zeros(len(cats)), 0
    for order in some_orders:
        w = probe_mod.attention_maps(small_model, order)
        kinds = np.array(order.categories)
        for q in np.flatnonzero(kinds == "ingredient"):
            for c, cat in enumerate(cats):
                want[c] += w[:, :, q, kinds == cat].sum(-1)
                chance[c] += (kinds == cat).mean()
            n += 1
    assert got["tokens"] == n
    np.testing.assert_allclose(got["mass"], want / n, atol=1e-6)
    np.testing.assert_allclose(got["chance"], chance / n)
    np.testing.assert_allclose(got["mass"].sum(0), 1.0, atol=1e-5)  # every key has a kind
    with pytest.raises(ValueError, match="query category"):
        roles.category_mass(small_model, some_orders, queries=("noodle",))
    with pytest.raises(ValueError, match="hold no token"):
        roles.category_mass(small_model, [roles.read_order("老板，谢谢。")],
                            queries="modifier")


def test_masses_leave_the_model_in_its_mode(small_model, some_orders):
    small_model.train()
    roles.relation_mass(small_model, some_orders[:5])
    assert small_model.training
    small_model.eval()


def test_specialists_of_the_shipped_model(model):
    _, test = train.default_data()
    stats = roles.relation_mass(model, test[:300])
    found = roles.specialists(stats)
    assert found and all(h["mass"] >= 0.5 and h["lift"] > 5 for h in found)
    assert [h["mass"] for h in found] == sorted((h["mass"] for h in found), reverse=True)
    best = found[0]
    assert best["relation"] == "ingredient → its modifier"
    assert best["name"] == roles.head_name(best["layer"], best["head"])
    assert roles.specialists(stats, min_mass=1.0) == []
    with pytest.raises(TypeError):
        roles.specialists([])
    with pytest.raises(ValueError):
        roles.specialists(stats, min_mass=2)


def test_head_name():
    assert roles.head_name(1, 3) == "layer 1, head 3"
    with pytest.raises(ValueError):
        roles.head_name(-1, 0)


# ---- predictions, mislabelled --------------------------------------------------------------

def test_batched_predictions_equal_predict(model, some_orders):
    assert roles.predictions(model, some_orders) == [probe_mod.predict(model, o)
                                                     for o in some_orders]


def test_mislabelled_are_sorted_and_really_wrong(small_model, some_orders):
    found = roles.mislabelled(small_model, some_orders)
    assert [len(o) for o, _ in found] == sorted(len(o) for o, _ in found)
    for order, wrong in found:
        predicted = probe_mod.predict(small_model, order)
        assert wrong and all(predicted[i] != order.labels[i] for i in wrong)


# ---- entropy during training ---------------------------------------------------------------

def test_entropy_during_training_does_not_change_the_run(some_orders):
    probe = some_orders[:10]
    plain = TinyEncoder(d_model=16, n_heads=2, seed=1)
    hooked = TinyEncoder(d_model=16, n_heads=2, seed=1)
    h1 = fit(plain, some_orders, steps=6, batch_size=16, progress=False, threads=1)
    h2, record = roles.entropy_during_training(hooked, some_orders, probe, [0, 3, 6],
                                               steps=6, batch_size=16, progress=False,
                                               threads=1)
    assert h1.loss == h2.loss
    assert sorted(record) == [0, 3, 6]
    for state in (plain.state_dict(), hooked.state_dict()):
        assert state.keys() == plain.state_dict().keys()
    for key, value in plain.state_dict().items():
        torch.testing.assert_close(hooked.state_dict()[key], value)
    np.testing.assert_allclose(record[6], probe_mod.attention_entropy(hooked, probe,
                                                                  normalize=True))
    fresh = TinyEncoder(d_model=16, n_heads=2, seed=1)
    np.testing.assert_allclose(record[0], probe_mod.attention_entropy(fresh, probe,
                                                                  normalize=True))
    assert all(0 <= v <= 1 + 1e-9 for e in record.values() for v in e.ravel())


def test_entropy_during_training_input_checks(some_orders):
    m = TinyEncoder(d_model=16, n_heads=2)
    with pytest.raises(ValueError, match="after the last step"):
        roles.entropy_during_training(m, some_orders, some_orders[:2], [0, 9], steps=5)
    with pytest.raises(ValueError, match="empty"):
        roles.entropy_during_training(m, some_orders, some_orders[:2], [])
    with pytest.raises(TypeError, match="list of step counts"):
        roles.entropy_during_training(m, some_orders, some_orders[:2], 5)


# ---- figures ------------------------------------------------------------------------------

def test_head_view_dropdown_and_slider(model):
    fig = ch08_seeing_attention.head_view(model, TEXTS, names=["a", "b", "c"], start=(1, 1))
    assert len(fig.data) == 3 and [t.visible for t in fig.data] == [True, False, False]
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["a", "b", "c"]
    last = menu.buttons[-1]
    assert last.args[0]["visible"] == [False, False, True]
    assert last.args[1]["annotations"][0]["text"] != fig.layout.annotations[0].text
    assert len(last.args[1]["xaxis.categoryarray"]) == len(orders.tokenize(TEXTS[2]))
    (slider,) = fig.layout.sliders
    assert len(slider.steps) == model.n_layers * model.n_heads
    assert slider.active == 1 * model.n_heads + 1
    zs = {json.dumps(s.args[0]["z"]) for s in slider.steps}
    assert len(zs) == len(slider.steps)   # every head draws different maps
    maps = probe_mod.attention_maps(model, TEXTS[0])
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), maps[1, 1], atol=1e-3)
    assert "✗" in fig.layout.annotations[0].text or "✓" in fig.layout.annotations[0].text
    with pytest.raises(ValueError):
        ch08_seeing_attention.head_view(model, [])
    with pytest.raises(ValueError, match="names"):
        ch08_seeing_attention.head_view(model, TEXTS, names=["a"])


def test_model_view_one_dropdown_redraws_every_map(model):
    fig = ch08_seeing_attention.model_view(model, TEXTS[:2])
    n_maps = model.n_layers * model.n_heads
    assert len(fig.data) == n_maps
    (menu,) = fig.layout.updatemenus
    second = menu.buttons[1].args[0]
    assert len(second["z"]) == n_maps and second["x"][0] != list(fig.data[0].x)
    with pytest.raises(ValueError):
        ch08_seeing_attention.model_view(model, [])


def test_marks_wrong_predictions_in_the_caption(model):
    data = attention_roles.order_view_data(model, TEXTS[2])   # the model gets 牛肉面 wrong
    assert any(m.startswith("牛肉面") and "✗ (should be count_1)" in m for m in data["marks"])


def test_relation_category_and_entropy_figures(small_model, some_orders):
    stats = roles.relation_mass(small_model, some_orders)
    fig = ch08_seeing_attention.relation_figure(stats)
    assert len(fig.data) == len(roles.RELATIONS)
    cats = roles.category_mass(small_model, some_orders)
    fig = ch08_seeing_attention.category_figure(cats)
    assert fig.data[0].y[-1] == "even spread"
    assert len(fig.data[0].y) == small_model.n_layers * small_model.n_heads + 1
    record = {0: np.full((2, 2), 0.9), 10: np.full((2, 2), 0.7)}
    fig = ch08_seeing_attention.entropy_figure(record, np.full((2, 2), 0.5), 500)
    assert len(fig.data) == 4 and list(fig.data[0].x) == [0, 10]
    with pytest.raises(ValueError):
        ch08_seeing_attention.relation_figure({})
    with pytest.raises(ValueError):
        ch08_seeing_attention.entropy_figure({})


# ---- the live widget ----------------------------------------------------------------------

def test_live_widget_draws_a_typed_order(model):
    explorer = ch08_seeing_attention.attention_live(model)
    explorer.update(text=TEXTS[1], layer=0, head=2)
    d = roles.order_maps(model, TEXTS[1])
    np.testing.assert_allclose(np.array(explorer.figure.data[0].z, dtype=float),
                               d["maps"][0, 2], atol=1e-3)
    assert "layer 0 · head 2" in explorer.message.value
    assert explorer.message in explorer.widget.children


@pytest.mark.parametrize("text,shown", [
    ("一碗牛肉面，不要pizza", "not a word of the order language"),
    ("", "empty"), ("   ", "empty"),
    ("一碗牛肉面，" * 40, "at most 64")])
def test_live_widget_reports_bad_input_in_the_widget(model, text, shown):
    explorer = ch08_seeing_attention.attention_live(model)
    before = [list(explorer.figure.data[0].x), explorer.figure.data[0].z]
    explorer.update(text=text)   # must not raise
    assert shown in explorer.message.value and "⚠" in explorer.message.value
    assert [list(explorer.figure.data[0].x), explorer.figure.data[0].z] == before
    if "not a word" in shown:
        assert "香菜" in explorer.message.value   # the vocabulary is listed
    explorer.update(text=TEXTS[0])                # and it recovers
    assert "⚠" not in explorer.message.value


def test_live_widget_redraws_every_order(model):
    """Each update redraws (its 50 ms budget is measured by `make bench`, not here)."""
    explorer = ch08_seeing_attention.attention_live(model)
    before = explorer.redraws
    for i, text in enumerate(TEXTS * 2):
        explorer.update(text=text, layer=i % 2, head=i % 4)
    assert explorer.redraws == before + 2 * len(TEXTS)


# ---- exercises ------------------------------------------------------------------------------

def test_chapter8_exercise_hints():
    def msg(key, answer):
        result = checks.check(key, answer)
        assert not result.ok
        return result.message

    assert "Layer 0" in msg("ch8.best_head", (0, 1))
    assert "(layer, head)" in msg("ch8.best_head", 5)
    assert "counted from 0" in msg("ch8.best_head", (2, 0))
    assert "bits" in msg("ch8.row_entropy",
                         lambda p: -(p[p > 0] * np.log2(p[p > 0])).sum())
    assert "wrong way round" in msg("ch8.modifier_pairs",
                                    lambda t: [(m, i) for i, m in
                                               checks.reference("ch8.modifier_pairs")(t)])


def test_top_key_and_where_it_looked(model):
    order = roles.read_order(TEXTS[0])
    i = order.categories.index("ingredient")
    case = roles.top_key(model, order, i, 1, 0)
    assert case["token"] == order.tokens[i] and 0 < case["weight"] <= 1
    assert isinstance(case["same_clause"], bool)
    maps = probe_mod.attention_maps(model, order)
    assert roles.where_it_looked(order, maps, i, 1, 0) in (
        "partner, same clause", "partner, other clause", "something else")
    with pytest.raises(ValueError, match="too large"):
        roles.top_key(model, order, len(order), 1, 0)
    with pytest.raises(ValueError, match="only ingredients and dishes"):
        roles.where_it_looked(order, maps, order.categories.index("punctuation"), 1, 0)
    with pytest.raises(ValueError, match="tokens"):
        roles.where_it_looked(order, maps[..., :2, :2], i, 1, 0)


# ---- the Chinese edition ------------------------------------------------------------------

def test_chapter_8_figures_speak_chinese(model, small_model, some_orders, chinese):
    figs = [ch08_seeing_attention.head_view(model, TEXTS, start=(1, 1)),
            ch08_seeing_attention.model_view(model, TEXTS[:2]),
            ch08_seeing_attention.relation_figure(roles.relation_mass(small_model, some_orders)),
            ch08_seeing_attention.category_figure(roles.category_mass(small_model, some_orders)),
            ch08_seeing_attention.entropy_figure({0: np.full((2, 2), 0.9)},
                                                 np.full((2, 2), 0.5), 500)]
    for fig in figs:
        # the category ticks (x, y) too
        english = [t for t in figure_texts(fig, FIGURE_TEXT_KEYS + ("x", "y"))
                   if ENGLISH_PHRASE.search(t)]
        assert not english, english[:5]
    caption = figs[0].layout.annotations[0].text
    assert "a bowl of" not in caption and "模型" in caption and "不要" in caption
    assert roles.head_name(1, 3) == "第 1 层 · 头 3"
    assert "应为" in " ".join(roles.order_view_data(model, TEXTS[2])["marks"])
    ok, message = chapters.exercises()["ch8.row_entropy"].checker(lambda p: 1.0)
    assert not ok and not ENGLISH_PHRASE.search(message)


def test_captions_fit_a_phone_screen(model):
    for language in ("en", "zh"):
        i18n.set_language(language)
        fig = ch08_seeing_attention.head_view(model, TEXTS)
        lines = re.sub(r"<(?!br>)[^>]+>", "", fig.layout.annotations[0].text)
        widest = max(sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
                     for line in lines.split("<br>"))
        assert widest <= ch08_seeing_attention.CAPTION_WIDTH
    i18n.set_language("en")
