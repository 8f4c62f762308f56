"""book.ideas.beyond: each efficient variant equals its explicit O(n²) form."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from book.ideas import beyond
from book.toy import probe
from book.toy.fit import fit
from book.toy.model import TinyEncoder


def qkv(n, d=8, heads=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(2, heads, n, d, generator=g, dtype=torch.float64) for _ in range(3)]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 64), causal=st.booleans())
def test_linear_equals_quadratic_form(n, causal):
    q, k, v = qkv(n, seed=n)
    torch.testing.assert_close(beyond.linear_attention(q, k, v, causal=causal),
                               beyond.linear_attention_quadratic(q, k, v, causal=causal))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 64), window=st.integers(0, 6), dilation=st.integers(1, 5))
def test_dilated_equals_masked(n, window, dilation):
    q, k, v = qkv(n, seed=n + 1)
    torch.testing.assert_close(beyond.dilated_attention(q, k, v, window, dilation),
                               beyond.reference("dilated", q, k, v, window=window,
                                                dilation=dilation))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.integers(1, 64), window=st.integers(0, 8), data=st.data())
def test_hybrid_equals_masked(n, window, data):
    n_global = data.draw(st.integers(0, min(n, 4)))
    q, k, v = qkv(n, seed=n + 2)
    torch.testing.assert_close(beyond.hybrid_attention(q, k, v, window, n_global),
                               beyond.reference("hybrid", q, k, v, window=window,
                                                n_global=n_global))


def test_dilation_one_is_a_plain_window():
    from book.ideas import longctx
    q, k, v = qkv(20)
    torch.testing.assert_close(beyond.dilated_attention(q, k, v, 3, 1),
                               longctx.masked_window_attention(q, k, v, 3))


def test_bad_input():
    q, k, v = qkv(5)
    with pytest.raises(ValueError, match="at least 1"):
        beyond.dilated_attention(q, k, v, 2, 0)
    with pytest.raises(ValueError, match="at most 5"):
        beyond.hybrid_attention(q, k, v, 1, 6)
    with pytest.raises(ValueError, match="not one of"):
        beyond.reference("sparse", q, k, v)


def test_parse_spec():
    assert beyond.parse_spec("window-3") == ("window", {"window": 3})
    assert beyond.parse_spec("dilated-2x4") == ("dilated", {"window": 2, "dilation": 4})
    assert beyond.parse_spec("hybrid-2+1") == ("hybrid", {"window": 2, "n_global": 1})
    assert beyond.parse_spec("linear") == ("linear", {})
    for bad in ("window", "dilated-2", "sparse-3", "linear-2"):
        with pytest.raises(ValueError, match="unknown attention spec"):
            beyond.parse_spec(bad)
    with pytest.raises(TypeError):
        beyond.parse_spec(3)


@pytest.mark.parametrize("spec", ["window-2", "dilated-2x2", "hybrid-1+1", "linear"])
def test_variant_layer_respects_padding_and_its_pattern(spec):
    from book.ideas import masks

    torch.manual_seed(0)
    layer = beyond.VariantAttention(16, 2, spec).double()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    pad = masks.padding_mask([7, 4], 7)
    out, weights = layer(x, padding_mask=pad, need_weights=True)
    assert out.shape == x.shape and torch.isfinite(out).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2, 7, dtype=torch.float64))
    assert weights[1, :, :4, 4:].abs().max() == 0  # real queries never see padding
    # padding rewritten: the real tokens' outputs do not move
    x2 = x.clone()
    x2[1, 4:] = 100.0
    torch.testing.assert_close(layer(x2, padding_mask=pad)[1, :4], out[1, :4])
    kind, params = beyond.parse_spec(spec)
    if kind != "linear":
        allowed = beyond.pattern_mask(kind, 7, **params)
        assert weights[0][:, ~allowed].abs().max() == 0


def test_variant_layer_full_window_equals_plain_attention():
    from book.ideas.mha import MultiHeadSelfAttention

    torch.manual_seed(1)
    plain = MultiHeadSelfAttention(8, 2).double()
    wide = beyond.VariantAttention(8, 2, "window-10").double()
    wide.load_state_dict(plain.state_dict())
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    torch.testing.assert_close(wide(x), plain(x))


def test_encoder_trains_with_a_variant():
    from book.toy import train

    train_set, test_set = train.default_data()
    model = TinyEncoder(attention="hybrid-2+1", d_model=16, n_heads=2, seed=0)
    history = fit(model, train_set[:64], test_set[:32], steps=3, progress=False,
                        threads=1)
    assert len(history.loss) == 3 and 0 <= history.final_accuracy <= 1
    maps = probe.attention_maps(model, test_set[0])
    assert maps.shape[:2] == (2, 2)


def test_cost_curves():
    ns = [8, 32]
    memory = beyond.memory_curves(ns, d=8, heads=1)
    assert set(memory) == {"full", "window", "dilated", "hybrid", "linear"}
    assert all(len(v) == 2 and v[0] > 0 for v in memory.values())
    assert memory == beyond.memory_curves(ns, d=8, heads=1)  # deterministic
    times = beyond.time_curves(ns, d=8, heads=1, repeats=1)
    assert all(len(v) == 2 and min(v) > 0 for v in times.values())


def test_pattern_data_counts_keys():
    data = beyond.pattern_data("dilated", 2, n=50, dilation=3)
    assert data["max_keys"] == 5
    assert beyond.pattern_data("full", 1, n=7)["mean_keys"] == 7
    with pytest.raises(ValueError, match="not one of"):
        beyond.pattern_data("sparse", 1)
