"""The production layer against a minimal SDPA layer (``make bench``; asserts nothing).

The yardstick is the shortest correct layer built on the fused kernel: one (d → 3d) linear,
``F.scaled_dot_product_attention(is_causal=...)``, one output linear — no validation, no masks
as tensors. ``book.ideas.mha.MultiHeadSelfAttentionSDPA`` holds the same weights and is called the
way a
reader calls it (causal runs pass ``mask=book.ideas.masks.causal_mask(n)``). Target: ≤ 1.05×.

``nn.MultiheadAttention`` is printed next to them, with grad on and off: under ``no_grad`` it
takes its native fast path (bmm + masked softmax, is_causal dropped), with grad on it calls the
fused kernel — which is why it is shown beside the yardstick, not used as one.

Every time is a ``torch.utils.benchmark.Timer.blocked_autorange`` median on one thread
(``book.kit.timing.interleaved``); the variants are measured in interleaved rounds (round r times
each
of them once), the ratio is taken within each round and printed as the median with its range
over the rounds, so a slow spell of a shared machine moves numerator and denominator together;
"best" is the ratio of the two fastest rounds. The default clock is the thread's CPU time (one
thread: the work runs in the calling thread), which leaves out the time other processes hold the
core; ``--clock wall`` times the wall clock instead.

Run alone: ``python tests/bench_layers.py [--rounds N] [--min-run-time S] [--clock wall|cpu]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from book.ideas import masks  # noqa: E402
from book.ideas.efficient import MinimalSDPA  # noqa: E402  (chapter 9 uses the same yardstick)
from book.ideas.mha import MultiHeadSelfAttentionSDPA, copy_to_torch_mha  # noqa: E402
from book.kit import timing  # noqa: E402

SHAPES = [(8, 128, 256, 8), (2, 512, 768, 12)]  # batch, tokens, d_model, heads
TARGET = 1.05


def layers(d_model: int, n_heads: int):
    """The yardstick, the production layer and nn.MultiheadAttention, all with equal weights."""
    torch.manual_seed(0)
    ref = MinimalSDPA(d_model, n_heads)
    prod = MultiHeadSelfAttentionSDPA(d_model, n_heads)
    with torch.no_grad():
        for lin, w, b in zip((prod.w_q, prod.w_k, prod.w_v), ref.qkv.weight.chunk(3),
                             ref.qkv.bias.chunk(3), strict=True):
            lin.weight.copy_(w)
            lin.bias.copy_(b)
        prod.w_o.load_state_dict(ref.out.state_dict())
    return ref.eval(), prod.eval(), copy_to_torch_mha(prod).eval()


def calls(shape, causal: bool, backward: bool):
    """name -> function of no arguments for one case; the outputs agree (checked here)."""
    batch, n, d, h = shape
    ref, prod, mha = layers(d, h)
    x = torch.randn(batch, n, d, generator=torch.Generator().manual_seed(1),
                    requires_grad=backward)
    mask = masks.causal_mask(n) if causal else None
    torch_mask = masks.to_torch_attn_mask(mask) if causal else None
    run_ref = lambda: ref(x, causal)  # noqa: E731
    run_prod = lambda: prod(x, mask=mask)  # noqa: E731
    run_mha = lambda: mha(x, x, x, attn_mask=torch_mask, is_causal=causal,  # noqa: E731
                          need_weights=False)[0]
    with torch.no_grad():
        want = run_ref()
        for name, fn in (("production", run_prod), ("nn.MultiheadAttention", run_mha)):
            err = (fn() - want).abs().max().item()
            if err > 1e-4:
                raise SystemExit(f"{name} disagrees with the yardstick by {err:.3g} at {shape}")
    if backward:
        def fwd_bwd(fn):
            def run():
                fn().sum().backward()
            return run
        return {"minimal SDPA": fwd_bwd(run_ref), "production": fwd_bwd(run_prod),
                "nn.MHA grad on": fwd_bwd(run_mha)}

    def no_grad(fn):
        def run():
            with torch.no_grad():
                fn()
        return run
    return {"minimal SDPA": no_grad(run_ref), "production": no_grad(run_prod),
            "nn.MHA grad on": run_mha, "nn.MHA grad off": no_grad(run_mha)}


def case_ratios(fns, rounds: int, min_run_time: float, clock: str) -> dict[str, dict]:
    """Per variant: its per-round ratios to the yardstick, and the ratio of the fastest rounds."""
    per_round = timing.interleaved(fns, rounds=rounds, min_run_time=min_run_time, clock=clock)
    base = per_round["minimal SDPA"]
    return {name: {"rounds": [t / b for t, b in zip(ts, base, strict=True)],
                   "best": min(ts) / min(base), "ms": 1e3 * statistics.median(ts)}
            for name, ts in per_round.items()}


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--min-run-time", type=float, default=0.05)
    parser.add_argument("--clock", choices=timing.CLOCKS, default="cpu")
    args = parser.parse_args(argv)
    print(f"\nproduction layer / minimal SDPA layer (torch {torch.__version__}, 1 thread, "
          f"{args.clock} clock, Timer.blocked_autorange medians in {args.rounds} interleaved "
          f"rounds)\n  cells: median ratio [min–max over rounds] (ratio of the fastest rounds); "
          f"target: production ≤ {TARGET}x")
    names = ("production", "nn.MHA grad on", "nn.MHA grad off")
    print(f"  {'case':30}{'minimal ms':>11}" + "".join(f"{n:>28}" for n in names))
    rows = []
    with timing.torch_threads(1):
        for shape in SHAPES:
            for backward in (False, True):
                for causal in (False, True):
                    r = case_ratios(calls(shape, causal, backward), args.rounds,
                                    args.min_run_time, args.clock)
                    label = (f"{shape[0]}x{shape[1]}x{shape[2]}/{shape[3]} "
                             f"{'fwd+bwd' if backward else 'fwd'}"
                             f"{', causal' if causal else ''}")
                    cells = []
                    for name in names:
                        if name not in r:
                            cells.append("—")
                            continue
                        v = r[name]["rounds"]
                        cells.append(f"{statistics.median(v):.3f} [{min(v):.2f}–{max(v):.2f}]"
                                     f" ({r[name]['best']:.3f})")
                    prod = statistics.median(r["production"]["rounds"])
                    verdict = "ok" if prod <= TARGET else "OVER"
                    print(f"  {label:30}{r['minimal SDPA']['ms']:>11.2f}"
                          + "".join(f"{c:>28}" for c in cells) + f"  {verdict}")
                    rows.append({"case": label, "production": prod,
                                 "best": r["production"]["best"]})
    inside = sum(row["production"] <= TARGET for row in rows)
    print(f"  production within {TARGET}x (median ratio) in {inside} of {len(rows)} cases")
    return rows


if __name__ == "__main__":
    main()
