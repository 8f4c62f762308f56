"""Seven ways to compute the same multi-head self-attention, for a side-by-side timing.

Every variant is built from one :class:`book.mha.MultiHeadSelfAttention` layer, so all of them
hold the same weights and return the same output (tested); only the way the work is organised
differs:

* ``loop`` — a Python loop over heads, one small matmul per head;
* ``batched`` — heads batched with view + transpose (the book's lesson module);
* ``fused_qkv`` — one (d_model → 3·d_model) projection instead of three;
* ``einsum`` — the whole computation written with ``torch.einsum``;
* ``sdpa`` — ``F.scaled_dot_product_attention`` inside (the book's production module);
* ``torch_mha_weights`` / ``torch_mha`` — ``nn.MultiheadAttention`` with
  ``need_weights=True`` (it must also average and return the weights) and ``False``.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable

import torch
from torch import nn

from . import timing, validate
from .mha import (
    MultiHeadSelfAttention,
    MultiHeadSelfAttentionLoop,
    MultiHeadSelfAttentionSDPA,
    copy_to_torch_mha,
)

NAMES = {
    "loop": "loop over heads",
    "batched": "batched heads (view + transpose)",
    "fused_qkv": "fused QKV projection",
    "einsum": "einsum",
    "sdpa": "F.scaled_dot_product_attention (book's production module)",
    "torch_mha_weights": "nn.MultiheadAttention, need_weights=True",
    "torch_mha": "nn.MultiheadAttention, need_weights=False",
}


class FusedQKV(nn.Module):
    """Batched heads with one fused projection: x @ [W_q | W_k | W_v] in a single matmul."""

    def __init__(self, layer: MultiHeadSelfAttention):
        super().__init__()
        if not isinstance(layer, MultiHeadSelfAttention):
            raise TypeError(f"layer must be a MultiHeadSelfAttention, got {type(layer).__name__}")
        d = layer.d_model
        has_bias = layer.w_q.bias is not None
        weight = layer.w_q.weight
        self.n_heads, self.d_k, self.d_model = layer.n_heads, layer.d_k, d
        self.qkv = nn.Linear(d, 3 * d, bias=has_bias, device=weight.device, dtype=weight.dtype)
        self.w_o = nn.Linear(d, d, bias=has_bias, device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            self.qkv.weight.copy_(torch.cat([layer.w_q.weight, layer.w_k.weight,
                                             layer.w_v.weight]))
            self.w_o.load_state_dict(layer.w_o.state_dict())
            if has_bias:
                self.qkv.bias.copy_(torch.cat([layer.w_q.bias, layer.w_k.bias, layer.w_v.bias]))

    def forward(self, x):
        b, n, _ = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # each (b, heads, n, d_k)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
        return self.w_o((weights @ v).transpose(1, 2).reshape(b, n, self.d_model))


def einsum_attention(layer: MultiHeadSelfAttention, x: torch.Tensor) -> torch.Tensor:
    """The same layer written with einsum: per-head weights indexed as (d_model, heads, d_k)."""
    if not isinstance(layer, MultiHeadSelfAttention):
        raise TypeError(f"layer must be a MultiHeadSelfAttention, got {type(layer).__name__}")
    layer.check_inputs(x)
    h, d_k = layer.n_heads, layer.d_k

    def heads(linear):  # (b, n, h, d_k)
        w = linear.weight.view(h, d_k, layer.d_model)
        out = torch.einsum("bnm,hkm->bnhk", x, w)
        return out if linear.bias is None else out + linear.bias.view(h, d_k)

    q, k, v = heads(layer.w_q), heads(layer.w_k), heads(layer.w_v)
    weights = torch.softmax(torch.einsum("bihk,bjhk->bhij", q, k) / math.sqrt(d_k), dim=-1)
    context = torch.einsum("bhij,bjhk->bihk", weights, v).reshape(x.shape)
    return layer.w_o(context)


def variants(layer: MultiHeadSelfAttention) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """The seven implementations (see the module docstring), sharing ``layer``'s weights."""
    if not isinstance(layer, MultiHeadSelfAttention):
        raise TypeError(f"layer must be a MultiHeadSelfAttention, got {type(layer).__name__}")
    layer = layer.eval()
    loop = MultiHeadSelfAttentionLoop.from_module(layer).eval()
    sdpa = MultiHeadSelfAttentionSDPA.from_module(layer).eval()
    fused = FusedQKV(layer).eval()
    mha = copy_to_torch_mha(layer).eval()
    return {
        "loop": loop,
        "batched": layer,
        "fused_qkv": fused,
        "einsum": lambda x: einsum_attention(layer, x),
        "sdpa": sdpa,
        "torch_mha_weights": lambda x: mha(x, x, x, need_weights=True)[0],
        "torch_mha": lambda x: mha(x, x, x, need_weights=False)[0],
    }


def environment() -> dict[str, str]:
    """What the timings depend on: torch version, threads, CPU model, GPU if any."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return {"torch": torch.__version__, "threads": str(torch.get_num_threads()), "cpu": cpu,
            "gpu": gpu}


def benchmark(batch: int = 8, seq_len: int = 128, d_model: int = 256, n_heads: int = 8, *,
              repeats: int = 10, device: str = "cpu", seed: int = 0) -> list[dict]:
    """Best-of-``repeats`` time of each variant on one input, with its ratio to the fastest and
    to ``nn.MultiheadAttention(need_weights=False)``. Rows are sorted fastest first."""
    batch = validate.integer("batch", batch, low=1)
    seq_len = validate.integer("seq_len", seq_len, low=1)
    validate.choice("device", device, ("cpu", "cuda"))
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but no CUDA GPU is available; use device='cpu'")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(validate.integer("seed", seed, low=0))
        layer = MultiHeadSelfAttention(d_model, n_heads).to(device)
        x = torch.randn(batch, seq_len, d_model, device=device)
    fns = variants(layer)

    def call(fn):
        def run():
            fn(x)
            if device == "cuda":
                torch.cuda.synchronize()
        return run

    with torch.no_grad():
        seconds = timing.compare({name: call(fn) for name, fn in fns.items()}, repeats=repeats)
    fastest = min(seconds.values())
    rows = [{"variant": name, "label": NAMES[name], "seconds": s, "vs_fastest": s / fastest,
             "vs_torch_mha": s / seconds["torch_mha"], "device": device}
            for name, s in seconds.items()]
    return sorted(rows, key=lambda r: r["seconds"])
