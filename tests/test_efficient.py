"""book.efficient: all seven implementations compute the same thing; the benchmark's shape."""

from __future__ import annotations

import pytest
import torch

from book import efficient
from book.mha import MultiHeadSelfAttention


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
            torch.testing.assert_close(fn(x), reference, atol=1e-10, rtol=0, msg=name)


def test_benchmark_rows():
    rows = efficient.benchmark(batch=1, seq_len=8, d_model=16, n_heads=2, repeats=2)
    assert {r["variant"] for r in rows} == set(efficient.NAMES)
    assert rows[0]["vs_fastest"] == 1.0
    assert [r["seconds"] for r in rows] == sorted(r["seconds"] for r in rows)
    mha = next(r for r in rows if r["variant"] == "torch_mha")
    assert mha["vs_torch_mha"] == 1.0
    env = efficient.environment()
    assert env["torch"] == torch.__version__ and int(env["threads"]) >= 1


def test_bad_input():
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        efficient.variants(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="MultiHeadSelfAttention"):
        efficient.FusedQKV("layer")
    with pytest.raises(ValueError, match="not one of"):
        efficient.benchmark(device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            efficient.benchmark(device="cuda")
