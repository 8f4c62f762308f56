"""book.ideas.longctx, chapter 9 additions: cost sweeps, score-entry counts, a block's FLOPs
and time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from book.ideas import longctx


@pytest.mark.parametrize("n,window,block", [(1, 0, None), (10, 3, None), (100, 16, None),
                                            (100, 40, None), (37, 5, 8), (64, 200, None)])
def test_banded_score_entries_is_the_size_of_the_score_tensor(n, window, block, monkeypatch):
    seen = []
    softmax = torch.softmax

    def spy(scores, dim):
        seen.append(scores.shape)
        return softmax(scores, dim=dim)

    monkeypatch.setattr(torch, "softmax", spy)
    q = torch.randn(1, 1, n, 4)
    longctx.banded_attention(q, q, q, window, block=block)
    assert len(seen) == 1
    assert int(np.prod(seen[0])) == longctx.banded_score_entries(n, window, block)


def test_banded_entries_grow_linearly_full_quadratically():
    assert longctx.banded_score_entries(4096, 128) / longctx.banded_score_entries(2048, 128) == 2
    assert longctx.banded_score_entries(4096, 8) == 4096 * (16 + 16)  # block 16, span 16 + 2w


def test_window_keys():
    keys = longctx.window_keys(1001, 128)
    assert keys[500] == 257 and keys[0] == 129 and keys[-1] == 129
    assert set(longctx.window_keys(300, 10, causal=True)[10:]) == {11}
    assert list(longctx.window_keys(3, 5)) == [3, 3, 3]


def test_memory_sweep_is_deterministic_and_has_the_expected_exponents():
    ns = [128, 256, 512]
    first = longctx.cost_sweep(ns, measure="memory")
    assert first == longctx.cost_sweep(ns, measure="memory")
    assert first["n"] == ns and set(first) == {"n", *longctx.METHODS}
    slope = {m: longctx.fit_exponent(ns, first[m]) for m in longctx.METHODS}
    assert slope["full"] == pytest.approx(2, abs=0.15)
    assert slope["masked"] == pytest.approx(2, abs=0.15)
    assert slope["banded"] == pytest.approx(1, abs=0.15)
    assert slope["sdpa"] == pytest.approx(1, abs=0.15)
    assert all(m > f for m, f in zip(first["masked"], first["full"], strict=True))


def test_time_sweep_returns_positive_seconds_per_method():
    out = longctx.cost_sweep([16, 32], measure="time", methods=("full", "banded"), repeats=1)
    assert set(out) == {"n", "full", "banded"}
    assert all(s > 0 for m in ("full", "banded") for s in out[m])


@pytest.mark.parametrize("kwargs,err,msg", [
    ({"measure": "speed"}, ValueError, "not one of"),
    ({"methods": ("flash",)}, ValueError, "not one of"),
    ({"window": -1}, ValueError, "at least 0"),
])
def test_cost_sweep_bad_input(kwargs, err, msg):
    with pytest.raises(err, match=msg):
        longctx.cost_sweep([8], **kwargs)
    with pytest.raises(ValueError, match="at least one"):
        longctx.cost_sweep([])


def test_block_flops_attention_takes_half_at_six_d():
    for d in (64, 512, 768):
        f = longctx.block_flops(6 * d, d)
        assert f["attention"] == f["projections"] + f["feed_forward"]
    f = longctx.block_flops(10, 8, d_ff=16)
    assert f == {"projections": 8 * 10 * 64, "attention": 4 * 100 * 8,
                 "feed_forward": 4 * 10 * 8 * 16}


def test_block_costs_rows():
    rows = longctx.block_costs([8, 32], d_model=32, n_heads=4, repeats=1)
    assert [r["n"] for r in rows] == [8, 32]
    for r in rows:
        assert r["total"] == pytest.approx(sum(r[p] for p in longctx.BLOCK_PARTS))
        assert 0 < r["attention_share"] < 1
        assert r["attention_flop_share"] == pytest.approx(r["n"] / (r["n"] + 6 * 32))
    with pytest.raises(ValueError, match="not divisible"):
        longctx.block_costs([8], d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="at least one"):
        longctx.block_costs([])


def test_window_kernels_agree_and_the_fused_kernel_keeps_memory_small():
    out = longctx.window_kernels(256, 16, repeats=1)
    assert set(out["seconds"]) == set(out["memory"]) == set(longctx.WINDOW_KERNELS)
    assert out["max_diff"] < 1e-5  # the fused kernel with the window mask = the banded version
    assert out["mask_bytes"] == 256 * 256
    assert all(s > 0 for s in out["seconds"].values())
    # the fused kernel never holds the scores; the banded version holds n · (block + 2w) of them
    assert out["memory"]["sdpa_window"] < out["memory"]["banded"] / 4
    assert out["memory"]["sdpa_window"] == out["memory"]["sdpa"]


@pytest.mark.parametrize("kwargs,msg", [({"n": 1}, "n"), ({"window": -1}, "window"),
                                        ({"repeats": 0}, "repeats")])
def test_window_kernels_bad_input(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        longctx.window_kernels(**kwargs)
