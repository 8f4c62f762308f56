"""book.ideas.positions: attention without positions is permutation-equivariant; RoPE's score
depends on the offset only; the four encoders build, run and keep their shared weights."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from book.ideas import positions
from book.ideas.mha import MultiHeadSelfAttention
from book.toy import train, variants
from book.toy.fit import fit
from book.toy.model import TinyEncoder


def layer(d=8, h=2, seed=0):
    torch.manual_seed(seed)
    return MultiHeadSelfAttention(d, h).double()


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(1, 12), seed=st.integers(0, 100))
def test_attention_without_positions_is_permutation_equivariant(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, 8, generator=g, dtype=torch.float64)
    perm = torch.randperm(n, generator=g)
    assert positions.permutation_gap(layer(), x, perm) < 1e-12


def test_positions_or_a_causal_mask_break_the_symmetry():
    x = torch.randn(1, 6, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    perm = [5, 0, 3, 1, 4, 2]
    table = positions.sinusoidal_table(6, 8)
    lay = layer()
    assert positions.permutation_gap(lambda t: lay(t + table), x, perm) > 1e-3
    causal = torch.tril(torch.ones(6, 6, dtype=torch.bool))
    assert positions.permutation_gap(lambda t: lay(t, mask=causal), x, perm) > 1e-3


def test_sinusoidal_table_values():
    t = positions.sinusoidal_table(50, 16)
    assert t.shape == (50, 16)
    p, i = 7, 3
    assert math.isclose(float(t[p, 2 * i]), math.sin(p / 10000 ** (2 * i / 16)))
    assert math.isclose(float(t[p, 2 * i + 1]), math.cos(p / 10000 ** (2 * i / 16)))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(d=st.integers(1, 16).map(lambda h: 2 * h), n=st.integers(2, 40),
       seed=st.integers(0, 100))
def test_rope_score_depends_on_the_offset_only(d, n, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(d, generator=g, dtype=torch.float64) for _ in range(2))
    rel = positions.relative_spread(positions.score_grid(q, k, n, "rope"))
    assert rel["max_spread"] < 1e-10 * max(1.0, rel["score_range"])


def test_absolute_positions_do_not_have_the_relative_property():
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(16, generator=g, dtype=torch.float64) for _ in range(2))
    rel = positions.relative_spread(positions.score_grid(q, k, 32, "sinusoidal"))
    assert rel["max_spread"] > 0.1 * rel["score_range"]


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(1, 20), shift=st.integers(0, 1000), seed=st.integers(0, 50))
def test_rope_rotates_norm_preserving_and_shift_invariant(n, shift, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(3, n, 8, generator=g, dtype=torch.float64) for _ in range(2))
    rq, rk = positions.rope(q), positions.rope(k)
    torch.testing.assert_close(rq.norm(dim=-1), q.norm(dim=-1))
    pos = torch.arange(n) + shift
    sq, sk = positions.rope(q, pos), positions.rope(k, pos)
    torch.testing.assert_close(sq @ sk.transpose(-2, -1), rq @ rk.transpose(-2, -1))
    torch.testing.assert_close(positions.rope(q, torch.zeros(n, dtype=torch.long)), q)


def test_rope_matches_complex_multiplication():
    # the "rotate half" layout: feature pair (i, i + d/2) is the complex number x_i + i·x_{i+d/2}
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 12, generator=g, dtype=torch.float64)
    theta = positions.rope_angles(torch.arange(5), 12)
    z = torch.complex(x[:, :6], x[:, 6:]) * torch.polar(torch.ones_like(theta), theta)
    torch.testing.assert_close(positions.rope(x), torch.cat([z.real, z.imag], dim=-1))


def test_rope_attention_without_rotation_is_plain_attention():
    base = layer(8, 2)
    rope_layer = positions.RopeSelfAttention.from_module(base)
    x = torch.randn(1, 1, 8, dtype=torch.float64)  # one token: position 0, no rotation
    torch.testing.assert_close(rope_layer(x), base(x))
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    pad = torch.tensor([[True] * 5, [True, True, True, False, False]])
    with torch.no_grad():
        out, w = rope_layer(x, padding_mask=pad, need_weights=True)
    assert out.shape == x.shape and torch.allclose(w.sum(-1), torch.ones(2, 2, 5,
                                                                         dtype=torch.float64))
    assert float(w[1, :, :, 3:].abs().max()) == 0.0


@pytest.mark.parametrize("kind", positions.KINDS)
def test_encoders_build_and_run(kind):
    model = variants.positional_encoder(kind, d_model=16, n_heads=2, n_layers=1, seed=0)
    ids = torch.randint(0, 10, (2, 7))
    logits, maps = model(ids, need_weights=True)
    assert logits.shape[:2] == (2, 7) and maps[0].shape == (2, 2, 7, 7)
    assert model.position_kind == kind
    has_table = any(name.startswith("pos.") for name, _ in model.named_parameters())
    assert has_table == (kind == "learned")
    # the rest starts from the weights of the plain encoder with (learned) or without a table
    plain = TinyEncoder(d_model=16, n_heads=2, n_layers=1, seed=0,
                              positions=kind == "learned")
    torch.testing.assert_close(model.embed.weight, plain.embed.weight)
    torch.testing.assert_close(model.blocks[0].attn.w_q.weight, plain.blocks[0].attn.w_q.weight)


def test_encoder_without_positions_ignores_order_and_rope_does_not(one_thread):
    ids = torch.tensor([[3, 4, 5, 6]])
    flipped = ids.flip(1)
    for kind, equivariant in (("none", True), ("rope", False), ("sinusoidal", False)):
        model = variants.positional_encoder(kind, d_model=16, n_heads=2, n_layers=1, seed=0)
        with torch.no_grad():
            gap = (model(flipped).flip(1) - model(ids)).abs().max().item()
        assert (gap < 1e-5) == equivariant, (kind, gap)


def test_rope_encoder_learns_order(one_thread):
    train_set, test_set = train.default_data()
    acc = {}
    for kind in ("none", "rope"):
        model = variants.positional_encoder(kind, n_layers=1, seed=0)
        acc[kind] = fit(model, train_set[:1500], test_set[:300], steps=60, batch_size=32,
                              lr=1e-2, threads=1, progress=False).final_accuracy
    assert acc["rope"] > acc["none"] + 0.05, acc


def test_bad_input():
    with pytest.raises(ValueError, match="d=7 is odd"):
        positions.sinusoidal_table(4, 7)
    with pytest.raises(ValueError, match="even head width"):
        positions.rope(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="one position per token"):
        positions.rope(torch.zeros(3, 4), positions=torch.arange(2))
    with pytest.raises(TypeError, match="floating-point"):
        positions.rope(torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="permutation of 0..3"):
        positions.permutation_gap(layer(), torch.zeros(1, 4, 8, dtype=torch.float64), [0, 0, 1, 2])
    with pytest.raises(ValueError, match="not one of"):
        variants.positional_encoder("alibi")
    with pytest.raises(ValueError, match="sets positions and attention itself"):
        variants.positional_encoder("rope", positions=True)
    with pytest.raises(ValueError, match="even head width"):
        positions.RopeSelfAttention(6, 2)
    with pytest.raises(ValueError, match="square"):
        positions.relative_spread(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="same width"):
        positions.score_grid(torch.zeros(4), torch.zeros(6), 3)
