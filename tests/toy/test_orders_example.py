"""book.toy.orders_example: chapter 1's illustrative weights and small experiments."""

from __future__ import annotations

import numpy as np
import pytest

from book.toy import orders_example as oe


def test_labels_are_unique_and_keep_the_characters():
    labels = oe.labels()
    assert len(set(labels)) == len(labels) == len(oe.TOKENS)
    assert labels[3] == "不要 (no)" and labels[2] != labels[5]
    assert oe.labels(short=True)[1] == "牛肉面"


def test_labels_bad_input():
    with pytest.raises(ValueError, match="one gloss per token"):
        oe.labels(["a", "b"], ["x"])


@pytest.mark.parametrize("n_heads", [1, 2, 3])
def test_heads_split_the_relations(n_heads):
    kinds = oe.relation_kinds_per_head(n_heads)
    assert sorted(k for head in kinds for k in head) == sorted(oe.RELATIONS)
    for w in oe.illustrative_heads(n_heads):
        np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_more_heads_make_each_relation_sharper():
    one = oe.partner_share(1, 4, 3)
    three = oe.partner_share(3, 4, 3)
    assert one < 0.5 < three


@pytest.mark.parametrize("n_heads", [0, 4])
def test_head_count_out_of_range(n_heads):
    with pytest.raises(ValueError):
        oe.relation_kinds_per_head(n_heads)


def test_unknown_relation_kind():
    with pytest.raises(ValueError, match="not one of"):
        oe.head_weights(["grammar"])


def test_apple_vectors_differ_after_attention():
    res = oe.apple_contexts()
    assert res["static"] == pytest.approx(1.0)
    assert res["contextual"] < 0.99
    assert oe.apple_contexts(d_model=1)["static"] == pytest.approx(1.0)


def test_menu_match():
    weights = oe.menu_match()
    assert sum(weights.values()) == pytest.approx(1.0)
    assert max(weights, key=weights.get).startswith("麻辣面")
    with pytest.raises(ValueError, match="3 features"):
        oe.menu_match([1.0, 2.0])
    with pytest.raises(ValueError, match="too small"):
        oe.menu_match(temperature=0)
