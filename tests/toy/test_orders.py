"""book.toy.orders: the takeout-order language, its labels, tokenizer, generator and batches."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tolerance import assert_same_run

from book.toy import baselines
from book.toy import orders as O

pytestmark = pytest.mark.usefixtures("one_thread")  # see conftest.py

# ---- hand-written orders and their labels ---------------------------------------------------

HAND = [
    # the running example of chapter 1
    ("一碗牛肉面，不要香菜，多加辣",
     {"牛肉面": "count_1", "香菜": "omit", "辣": "extra"}),
    # modifiers after their ingredient
    ("两份炒饭，香菜不要，辣多放一点。",
     {"炒饭": "count_2", "香菜": "omit", "辣": "extra"}),
    # the nearer modifier (不要, 3 words from 葱; 多放 is 4) belongs to the other clause
    ("三碗米粉，不要香菜，葱和蒜都多放",
     {"米粉": "count_3", "香菜": "omit", "葱": "extra", "蒜": "extra"}),
    # quantity after its dish; adjectives between quantity and dish; no modifier = normal
    ("牛肉面来两碗，三份招牌红烧炒饭，要葱",
     {"牛肉面": "count_2", "炒饭": "count_3", "葱": "normal"}),
    # no quantity word = one; ingredient phrase inside the dish clause
    ("饺子，醋少加", {"饺子": "count_1", "醋": "less"}),
    ("两盘饺子不要蒜", {"饺子": "count_2", "蒜": "omit"}),
    # a list separated by 、 and 和 shares one modifier at the far end
    ("一份凉皮，香菜、葱和蒜都别放。",
     {"凉皮": "count_1", "香菜": "omit", "葱": "omit", "蒜": "omit"}),
    # spaces and ASCII punctuation are accepted; 正常 = as usual
    ("老板, 一碗 清汤 馄饨, 正常 放 辣, 盐 少放.",
     {"馄饨": "count_1", "辣": "normal", "盐": "less"}),
]


@pytest.mark.parametrize(("text", "expected"), HAND)
def test_hand_written_orders_are_labelled_by_their_clause(text, expected):
    order = O.Order.from_text(text)
    got = {t: lab for t, lab in zip(order.tokens, order.labels, strict=True) if lab != O.NONE}
    assert got == expected
    for tok, lab in zip(order.tokens, order.labels, strict=True):
        scored = O.category(tok) in ("ingredient", "dish")
        assert (lab != O.NONE) == scored


def test_nearest_modifier_rule_falls_into_the_clause_trap():
    order = O.Order.from_text("三碗米粉，不要香菜，葱和蒜都多放")
    rule = dict(zip(order.tokens, baselines.nearest_rule(order), strict=True))
    assert rule["葱"] == "omit"      # 不要 is nearer, but in another clause
    assert rule["蒜"] == "extra"
    assert baselines.nearest_rule(O.Order.from_text("饺子，醋少加"))[0] == "count_1"


def test_running_example_tokens_glosses_and_display():
    order = O.Order.from_text("一碗牛肉面，不要香菜，多加辣")
    assert order.tokens == ("一碗", "牛肉面", "，", "不要", "香菜", "，", "多加", "辣")
    assert order.glosses[:2] == ("a bowl of", "beef noodles")
    assert order.english.startswith("a bowl of | beef noodles | , | no | coriander")
    assert str(order) == "一碗 牛肉面[count_1] ， 不要 香菜[omit] ， 多加 辣[extra]"
    assert order.table()[4] == ("香菜", "coriander", "omit")
    assert order.text == "一碗牛肉面，不要香菜，多加辣"
    assert order.categories[3] == "modifier"
    assert order.label_ids[4] == O.LABELS.index("omit")
    assert order.label_ids[0] == O.IGNORE_INDEX


def test_clauses_split_at_commas_and_full_stops_not_at_list_commas():
    tokens = O.tokenize("香菜、葱不要，一碗饺子。谢谢")
    assert O.clauses(tokens) == [(0, 5), (5, 8), (8, 9)]


def test_ambiguous_clauses_raise_and_say_how_to_fix():
    with pytest.raises(ValueError, match=r"2 modifiers.*separated by '，'"):
        O.label(O.tokenize("不要香菜多加辣"))
    with pytest.raises(ValueError, match="2 dishes"):
        O.label(O.tokenize("一碗牛肉面和炒饭"))
    with pytest.raises(ValueError, match="2 quantity words"):
        O.label(O.tokenize("一碗两碗牛肉面"))


# ---- vocabulary, tokenizer ------------------------------------------------------------------

def test_vocab_pad_is_zero_and_every_word_has_gloss_and_category():
    assert O.VOCAB.itos[0] == O.PAD and O.VOCAB.stoi[O.PAD] == 0
    assert len(O.VOCAB) == len(O.WORDS) + 1
    for gloss, cat, value in O.WORDS.values():
        assert gloss and cat in O.CATEGORIES
        if cat == "quantity":
            assert value in (1, 2, 3)
        if cat == "modifier":
            assert value in O.INGREDIENT_LABELS
    assert O.gloss("香菜") == "coriander" and O.category("辣") == "ingredient"


def test_encode_decode_round_trip_and_padding_is_dropped():
    tokens = ["一碗", "牛肉面", "，", "不要", "香菜"]
    ids = O.encode(tokens)
    assert 0 not in ids
    assert O.decode(ids) == tokens
    assert O.decode(torch.tensor(ids + [0, 0])) == tokens
    assert O.decode(ids + [0], keep_pad=True)[-1] == O.PAD


def test_unknown_words_raise_listing_the_vocabulary():
    with pytest.raises(ValueError, match=r"unknown word\(s\) \['炸鸡'\].*香菜"):
        O.encode(["一碗", "炸鸡"])
    with pytest.raises(ValueError, match="not in the vocabulary"):
        O.decode([999])
    with pytest.raises(TypeError, match="tokenize"):
        O.encode("一碗牛肉面")
    with pytest.raises(ValueError, match="not a word of the order language"):
        O.gloss("披萨")
    with pytest.raises(ValueError, match="one sequence"):
        O.decode(torch.zeros(2, 3, dtype=torch.long))


def test_tokenize_greedy_longest_match():
    assert O.tokenize("不要放香菜") == ["不要", "放", "香菜"]
    assert O.tokenize("也要葱") == ["也要", "葱"]
    assert O.tokenize("再来一碗") == ["再来", "一碗"]


def test_tokenize_names_the_unknown_part():
    where = r"cannot read '炸鸡' \(at character 2 of '一份炸鸡，不要葱'\)"
    with pytest.raises(ValueError, match=where):
        O.tokenize("一份炸鸡，不要葱")
    with pytest.raises(ValueError, match="Known words: .*牛肉面"):
        O.tokenize("pizza")
    with pytest.raises(ValueError, match="holds no words"):
        O.tokenize("   ")
    with pytest.raises(TypeError, match="must be a str"):
        O.tokenize(["一碗"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(list(O.WORDS)), min_size=1, max_size=20))
def test_tokenize_inverts_joining_any_word_sequence(tokens):
    assert O.tokenize("".join(tokens)) == tokens


def test_no_word_is_a_prefix_of_another():
    # This makes the vocabulary a prefix code: greedy longest match always splits a joined
    # string back into the words it was made of (the property test above).
    words = list(O.WORDS)
    assert not [(a, b) for a in words for b in words if a != b and b.startswith(a)]


# ---- the generator ---------------------------------------------------------------------------

def test_generate_is_deterministic_and_seeds_differ():
    a, b = O.generate(40, seed=3), O.generate(40, seed=3)
    assert a == b
    assert O.generate(40, seed=4) != a


def test_generated_orders_follow_the_rules_and_round_trip():
    for order in O.generate(400, seed=1):
        assert 3 <= len(order) <= O.MAX_LEN
        assert list(order.labels) == O.label(order.tokens)   # generator and rules agree
        assert O.tokenize(order.text) == list(order.tokens)
        assert order.tokens[-1] == "。"


def test_generated_orders_need_context():
    orders = O.generate(1500, seed=2)
    stats = O.stats(orders)
    # the same ingredient gets every label; modifiers are often not next to their word
    labels_of_coriander = {lab for o in orders for t, lab in zip(o.tokens, o.labels, strict=True)
                           if t == "香菜"}
    assert labels_of_coriander == set(O.INGREDIENT_LABELS)
    assert stats["modifier_not_adjacent"] > 0.3
    assert max(stats[f"share_{lab}"] for lab in O.LABELS) < 0.3
    multi = sum(sum(O.category(t) == "dish" for t in o.tokens) > 1 for o in orders)
    assert multi / len(orders) > 0.4


def test_cheap_baselines_are_clearly_below_95_percent():
    train, test = O.train_test_split(O.generate(2000, seed=5), 0.25, seed=5)
    base = baselines.baselines(train, test, which=["token_only", "window_1", "nearest_rule"],
                               steps=300)
    assert base["token_only"] < 0.5
    assert base["window_1"] < 0.85
    assert base["nearest_rule"] < 0.93


def test_baselines_bad_name():
    orders = O.generate(20)
    with pytest.raises(ValueError, match="not one of"):
        baselines.baselines(orders[:10], orders[10:], which=["lstm"])


def test_generate_bad_input():
    with pytest.raises(ValueError, match="at least 1"):
        O.generate(0)
    with pytest.raises(TypeError, match="integer"):
        O.generate(10, seed=1.5)


# ---- split and batches ---------------------------------------------------------------------

def test_train_test_split_holds_out_unseen_orders():
    orders = O.generate(600, seed=0)
    train, test = O.train_test_split(orders, 0.25, seed=1)
    assert len(train) + len(test) == len(orders)
    assert not {o.tokens for o in train} & {o.tokens for o in test}
    distinct = len({o.tokens for o in orders})
    assert abs(len({o.tokens for o in test}) - 0.25 * distinct) <= 1
    assert O.train_test_split(orders, 0.25, seed=1) == (train, test)


def test_train_test_split_bad_input():
    orders = O.generate(10)
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        O.train_test_split(orders, 1.0)
    with pytest.raises(TypeError, match="list of Order"):
        O.train_test_split("一碗牛肉面")
    with pytest.raises(TypeError, match="must hold Order objects"):
        O.train_test_split([orders[0], "一碗牛肉面"])
    with pytest.raises(ValueError, match="two distinct"):
        O.train_test_split([orders[0], orders[0]])


def test_batches_pad_mask_and_ignore_index():
    orders = O.generate(10, seed=0)
    got = list(O.batches(orders, batch_size=4))
    assert [b.ids.shape[0] for b in got] == [4, 4, 2]
    for start, batch in zip(range(0, 10, 4), got, strict=True):
        chunk = orders[start:start + 4]
        assert batch.ids.dtype == torch.long and batch.labels.dtype == torch.long
        assert batch.padding_mask.dtype == torch.bool
        assert batch.ids.shape == batch.padding_mask.shape == batch.labels.shape
        assert batch.ids.shape[1] == max(len(o) for o in chunk)
        assert batch.padding_mask.sum(1).tolist() == [len(o) for o in chunk]
        assert_same_run(batch.padding_mask, batch.ids != 0, why="boolean masks: no rounding")
        assert bool((batch.labels[~batch.padding_mask] == O.IGNORE_INDEX).all())
        for row, order in enumerate(chunk):
            assert O.decode(batch.ids[row]) == list(order.tokens)
            assert batch.labels[row, :len(order)].tolist() == order.label_ids


def test_batches_shuffle_is_seeded_and_drop_last():
    orders = O.generate(10, seed=0)
    first = [b.ids for b in O.batches(orders, 3, shuffle=True, seed=7)]
    again = [b.ids for b in O.batches(orders, 3, shuffle=True, seed=7)]
    for a, b in zip(first, again, strict=True):
        assert_same_run(a, b, why="token ids, the same shuffle seed twice")
    assert len(list(O.batches(orders, 3, drop_last=True))) == 3
    with pytest.raises(ValueError, match="lower batch_size"):
        list(O.batches(orders, 20, drop_last=True))
    with pytest.raises(ValueError, match="at least 1"):
        list(O.batches(orders, 0))
    assert O.collate(orders[:2], pad_to=50).ids.shape == (2, 50)
    with pytest.raises(ValueError, match="at least"):
        O.collate(orders[:2], pad_to=1)


def test_order_validates_its_fields():
    with pytest.raises(ValueError, match="one label per token"):
        O.Order(("一碗", "牛肉面"), ("-",))
    with pytest.raises(ValueError, match="not one of"):
        O.Order(("香菜",), ("spicy",))
    with pytest.raises(ValueError, match="not a word"):
        O.Order(("炸鸡",), ("-",))
    with pytest.raises(ValueError, match="at least one"):
        O.Order((), ())
