"""Ways to compute the same multi-head self-attention, for a side-by-side timing.

Every variant is built from one :class:`book.ideas.mha.MultiHeadSelfAttention` layer, so all of them
hold the same weights and return the same output (tested); only the way the work is organised
differs. The yardstick is ``minimal_sdpa`` (:class:`MinimalSDPA`), the shortest correct layer on
the fused kernel, the same one ``make bench`` (tests/bench_layers.py) measures against:

* ``loop`` — a Python loop over heads, one small matmul per head;
* ``batched`` — heads batched with view + transpose (the book's lesson module);
* ``fused_qkv`` — one (d_model → 3·d_model) projection instead of three;
* ``einsum`` — the whole computation written with ``torch.einsum``;
* ``sdpa`` — ``F.scaled_dot_product_attention`` inside (the book's production module);
* ``minimal_sdpa`` — fused QKV linear → ``F.scaled_dot_product_attention`` → output linear;
* ``torch_mha_weights`` / ``torch_mha`` — ``nn.MultiheadAttention`` with
  ``need_weights=True`` (it must also average and return the weights) and ``False``, timed under
  ``no_grad`` like the others; ``torch_mha_grad`` — ``need_weights=False`` with grad on.

:func:`mha_kernels` profiles which kernels ``nn.MultiheadAttention`` really runs: under
``no_grad`` its native fast path (bmm + softmax, is_causal dropped), with grad on the fused
kernel of ``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile

from book.ideas.mha import (
    MultiHeadSelfAttention,
    MultiHeadSelfAttentionLoop,
    MultiHeadSelfAttentionSDPA,
    copy_to_torch_mha,
)
from book.kit import memo, timing, validate

NAMES = {
    "loop": "loop over heads",
    "batched": "batched heads (view + transpose)",
    "fused_qkv": "fused QKV projection",
    "einsum": "einsum",
    "sdpa": "F.scaled_dot_product_attention (book's production module)",
    "minimal_sdpa": "minimal SDPA layer (fused QKV -> SDPA -> output), the yardstick",
    "torch_mha_weights": "nn.MultiheadAttention, need_weights=True",
    "torch_mha": "nn.MultiheadAttention, need_weights=False, no_grad",
    "torch_mha_grad": "nn.MultiheadAttention, need_weights=False, grad on",
}
YARDSTICK = "minimal_sdpa"
GRAD_ON = ("torch_mha_grad",)  # timed with grad enabled; every other variant under no_grad


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
        validate.float_tensor("x", x, ndim=3, shape_hint="(batch, seq_len, d_model)")
        if x.shape[-1] != self.d_model or x.dtype != self.qkv.weight.dtype:
            raise ValueError(f"x must be (batch, seq_len, {self.d_model}) of dtype "
                             f"{self.qkv.weight.dtype}, got shape {tuple(x.shape)} and dtype "
                             f"{x.dtype}")
        b, n, _ = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # each (b, heads, n, d_k)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
        return self.w_o((weights @ v).transpose(1, 2).reshape(b, n, self.d_model))


class MinimalSDPA(nn.Module):
    """The yardstick: one (d → 3d) linear, ``F.scaled_dot_product_attention``, one output
    linear — no validation, no mask tensors. ``MinimalSDPA.from_module(layer)`` copies the
    weights of a :class:`book.ideas.mha.MultiHeadSelfAttention` (with biases)."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        d_model = validate.integer("d_model", d_model, low=1)
        n_heads = validate.integer("n_heads", n_heads, low=1)
        validate.head_split(d_model, n_heads)
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    @classmethod
    def from_module(cls, layer: MultiHeadSelfAttention) -> MinimalSDPA:
        if not isinstance(layer, MultiHeadSelfAttention) or layer.w_q.bias is None:
            raise TypeError("layer must be a MultiHeadSelfAttention with biases, got "
                            f"{type(layer).__name__}")
        weight = layer.w_q.weight
        new = cls(layer.d_model, layer.n_heads).to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            new.qkv.weight.copy_(torch.cat([layer.w_q.weight, layer.w_k.weight,
                                            layer.w_v.weight]))
            new.qkv.bias.copy_(torch.cat([layer.w_q.bias, layer.w_k.bias, layer.w_v.bias]))
            new.out.load_state_dict(layer.w_o.state_dict())
        return new

    def forward(self, x, causal: bool = False):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (b, h, n, d_k)
        return self.out(y.transpose(1, 2).reshape(b, n, d))


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
    """The implementations (see the module docstring), sharing ``layer``'s weights."""
    if not isinstance(layer, MultiHeadSelfAttention):
        raise TypeError(f"layer must be a MultiHeadSelfAttention, got {type(layer).__name__}")
    layer = layer.eval()
    loop = MultiHeadSelfAttentionLoop.from_module(layer).eval()
    sdpa = MultiHeadSelfAttentionSDPA.from_module(layer).eval()
    fused = FusedQKV(layer).eval()
    mha = copy_to_torch_mha(layer).eval()
    minimal = MinimalSDPA.from_module(layer).eval() if layer.w_q.bias is not None else None
    if minimal is None:
        raise ValueError("the benchmark's yardstick needs a layer with biases "
                         "(MultiHeadSelfAttention(d_model, n_heads, bias=True))")
    return {
        "loop": loop,
        "batched": layer,
        "fused_qkv": fused,
        "einsum": lambda x: einsum_attention(layer, x),
        "sdpa": sdpa,
        "minimal_sdpa": minimal,
        "torch_mha_weights": lambda x: mha(x, x, x, need_weights=True)[0],
        "torch_mha": lambda x: mha(x, x, x, need_weights=False)[0],
        "torch_mha_grad": lambda x: mha(x, x, x, need_weights=False)[0],
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


@memo.shared
def benchmark(batch: int = 8, seq_len: int = 128, d_model: int = 256, n_heads: int = 8, *,
              rounds: int = 5, min_run_time: float = 0.02, device: str = "cpu",
              seed: int = 0) -> list[dict]:
    """Each variant's time relative to the minimal SDPA layer, from interleaved rounds.

    In each of ``rounds`` rounds every variant gets one ``torch.utils.benchmark`` measurement
    (:func:`book.kit.timing.interleaved`; on CPU the calling thread's CPU time, on CUDA the wall
    clock); its ratio to ``minimal_sdpa`` is taken within each round. Every variant runs under
    ``no_grad`` except ``torch_mha_grad``. Rows, fastest first: ``seconds`` (median per call),
    ``vs_minimal`` (median ratio over the rounds), ``vs_minimal_low``/``vs_minimal_high`` (its
    range), ``vs_fastest``, ``device``.
    """
    batch = validate.integer("batch", batch, low=1)
    seq_len = validate.integer("seq_len", seq_len, low=1)
    rounds = validate.integer("rounds", rounds, low=1, high=1000)
    min_run_time = validate.real("min_run_time", min_run_time, low=1e-4, high=60.0)
    validate.choice("device", device, ("cpu", "cuda"))
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but no CUDA GPU is available; use device='cpu'")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(validate.integer("seed", seed, low=0))
        layer = MultiHeadSelfAttention(d_model, n_heads).to(device)
        x = torch.randn(batch, seq_len, d_model, device=device)
    fns = variants(layer)

    def call(name, fn):
        grad = name in GRAD_ON

        def run():
            with torch.set_grad_enabled(grad):
                fn(x)
            if device == "cuda":
                torch.cuda.synchronize()
        return run

    per_round = timing.interleaved({name: call(name, fn) for name, fn in fns.items()},
                                   rounds=rounds, min_run_time=min_run_time,
                                   clock="cpu" if device == "cpu" else "wall")
    base = per_round[YARDSTICK]
    seconds = {name: statistics.median(ts) for name, ts in per_round.items()}
    fastest = min(seconds.values())
    rows = []
    for name, ts in per_round.items():
        ratios = [t / b for t, b in zip(ts, base, strict=True)]
        rows.append({"variant": name, "label": NAMES[name], "seconds": seconds[name],
                     "vs_fastest": seconds[name] / fastest,
                     "vs_minimal": statistics.median(ratios), "vs_minimal_low": min(ratios),
                     "vs_minimal_high": max(ratios), "device": device})
    return sorted(rows, key=lambda r: r["seconds"])


# --- which kernels nn.MultiheadAttention really runs ----------------------------------------

KERNEL_MARKERS = ("scaled_dot_product", "bmm", "softmax", "native_multi_head_attention")
MHA_CASES = (  # (grad on?, is_causal?) — every case passes the causal mask as attn_mask
    (True, False), (True, True), (False, False), (False, True))


def profiled_ops(fn: Callable[[], object]) -> list[str]:
    """The aten operators that ``fn()`` runs (torch.profiler, CPU), in order of first call,
    keeping those that compute attention (names containing one of :data:`KERNEL_MARKERS`)."""
    if not callable(fn):
        raise TypeError("fn must be a function of no arguments, e.g. lambda: mha(x, x, x)")
    saved = os.dup(2)  # the profiler's C++ side prints start/stop lines to fd 2
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    names = []
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        if (event.name.startswith("aten::") and event.name not in names
                and any(m in event.name for m in KERNEL_MARKERS)):
            names.append(event.name)
    return names


def mha_kernels(batch: int = 2, seq_len: int = 32, d_model: int = 64,
                n_heads: int = 4) -> list[dict]:
    """Profile ``nn.MultiheadAttention(need_weights=False)`` with a causal ``attn_mask``, with
    grad on and under ``no_grad``, with and without ``is_causal=True``.

    One row per case of :data:`MHA_CASES`: ``grad``, ``is_causal``, ``ops`` (the attention
    operators it ran, see :func:`profiled_ops`), ``fused`` (whether
    ``aten::scaled_dot_product_attention`` was among them) and ``max_diff`` (largest
    difference from ``F.scaled_dot_product_attention(is_causal=True)`` on the same weights).
    """
    batch = validate.integer("batch", batch, low=1, high=64)
    seq_len = validate.integer("seq_len", seq_len, low=2, high=1024)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        layer = MultiHeadSelfAttention(d_model, n_heads).eval()
        x = torch.randn(batch, seq_len, d_model)
    mha = copy_to_torch_mha(layer).eval()
    minimal = MinimalSDPA.from_module(layer).eval()
    mask = torch.ones(seq_len, seq_len, dtype=torch.bool).triu(1)  # True = masked out
    with torch.no_grad():
        want = minimal(x, causal=True)
    rows = []
    for grad, causal in MHA_CASES:
        def run(causal=causal):
            return mha(x, x, x, attn_mask=mask, is_causal=causal, need_weights=False)[0]
        with torch.set_grad_enabled(grad):
            ops = profiled_ops(run)
            diff = (run() - want).abs().max().item()
        rows.append({"grad": grad, "is_causal": causal, "ops": ops,
                     "fused": "aten::scaled_dot_product_attention" in ops, "max_diff": diff})
    return rows
