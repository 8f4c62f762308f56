"""book.ideas.efficient: all seven implementations compute the same thing; the benchmark's shape."""

from __future__ import annotations

import pytest
import torch
from tolerance import assert_same_maths

from book.ideas import efficient
from book.ideas.mha import MultiHeadSelfAttention


@pytest.mark.parametrize("batch,n,d_model,heads", [(1, 1, 8, 1), (2, 7, 16, 4), (3, 33, 64, 8)])
def test_variants_agree(batch, n, d_model, heads):
    torch.manual_seed(batch * n)
    layer = MultiHeadSelfAttention(d_model, heads).double()
    x = torch.randn(batch, n, d_model, dtype=torch.float64)
    fns = efficient.variants(layer)
    assert set(fns) == set(efficient.NAMES)
    with torch.no_grad():
        reference = layer(x)
        for name, fn in fns.items():
            assert_same_maths(fn(x), reference, reduction=max(n, d_model), msg=name,
                              why="an efficient variant vs the layer: same maths, other kernel")


def test_benchmark_rows():
    rows = efficient.benchmark(batch=1, seq_len=8, d_model=16, n_heads=2, rounds=3,
                               min_run_time=0.001)
    assert {r["variant"] for r in rows} == set(efficient.NAMES)
    assert rows[0]["vs_fastest"] == 1.0
    assert [r["seconds"] for r in rows] == sorted(r["seconds"] for r in rows)
    yardstick = next(r for r in rows if r["variant"] == efficient.YARDSTICK)
    assert yardstick["vs_minimal"] == yardstick["vs_minimal_low"] == 1.0
    for r in rows:
        assert 0 < r["vs_minimal_low"] <= r["vs_minimal"] <= r["vs_minimal_high"]
    env = efficient.environment()
    assert env["torch"] == torch.__version__ and int(env["threads"]) >= 1


def test_minimal_sdpa_is_the_layer_of_bench_layers():
    torch.manual_seed(3)
    layer = MultiHeadSelfAttention(16, 4).double()
    minimal = efficient.MinimalSDPA.from_module(layer)
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    with torch.no_grad():
        torch.testing.assert_close(minimal(x), layer(x))
        torch.testing.assert_close(minimal(x, causal=True), layer(x, mask=causal))


def test_mha_kernels_grad_on_is_fused_no_grad_is_not():
    rows = efficient.mha_kernels(batch=1, seq_len=8, d_model=16, n_heads=2)
    assert [(r["grad"], r["is_causal"]) for r in rows] == list(efficient.MHA_CASES)
    for r in rows:
        assert r["ops"] and r["max_diff"] < 1e-5
        assert all(any(m in op for m in efficient.KERNEL_MARKERS) for op in r["ops"])
        assert r["fused"] == ("aten::scaled_dot_product_attention" in r["ops"])
    # what chapter 9 says, as measured with this torch: fused with grad on, not under no_grad
    assert [r["fused"] for r in rows] == [r["grad"] for r in rows]
    assert not any("softmax" in op for r in rows if r["grad"] for op in r["ops"])


def test_bad_input():
    with pytest.raises(ValueError, match="divisible"):
        efficient.MinimalSDPA(10, 4)
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        efficient.MinimalSDPA.from_module(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="function"):
        efficient.profiled_ops("mha")
    with pytest.raises(ValueError, match="seq_len"):
        efficient.mha_kernels(seq_len=1)
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        efficient.variants(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        efficient.FusedQKV("layer")
    with pytest.raises(ValueError, match="not one of"):
        efficient.benchmark(device="tpu")
    with pytest.raises(ValueError, match="rounds"):
        efficient.benchmark(rounds=0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            efficient.benchmark(device="cuda")
