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


def test_ramp_no_weights_then_projections():
    """Chapter 1's ramp: X Xᵀ links alike tokens and is symmetric; Q = X W_Q links a modifier to
    the ingredients, not to itself, and cannot tell the two ingredients apart (no order)."""
    r = oe.ramp()
    no, coriander, extra, chili = 3, 4, 6, 7
    assert r["X"].shape == (8, 5) and r["W_Q"].shape == r["W_K"].shape == (5, 3)
    assert r["Q"].shape == r["K"].shape == r["V"].shape == (8, 3)
    assert r["S"].shape == r["A"].shape == (8, 8) and r["Z"].shape == (8, 3)
    np.testing.assert_allclose(r["XXt"], r["XXt"].T)
    np.testing.assert_allclose(r["A0"].sum(axis=1), 1) and np.testing.assert_allclose(
        r["A"].sum(axis=1), 1)
    assert r["A0"][no, extra] > r["A0"][no, coriander]      # raw: alike tokens
    assert r["A"][no, coriander] > r["A0"][no, coriander]   # projected: the ingredient
    assert r["A"][no, coriander] > r["A"][no, extra]
    assert r["S"][no, coriander] != r["S"][coriander, no]   # no longer symmetric
    assert r["A"][no, chili] == pytest.approx(r["A"][no, coriander])  # order is invisible
    np.testing.assert_allclose(r["A"][1], 1 / 8)            # 牛肉面 looks for nothing
    assert oe.ramp_labels(["dish", "modifier"]) == ["dish", "modifier"]
    with pytest.raises(ValueError):
        oe.ramp_labels(["flavour"])
