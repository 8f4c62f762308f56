"""Wall-clock timing for the chapters' speed comparisons (chapter 4: loop over heads vs batched).

Timings vary from run to run and machine to machine, so the chapters only ever *glue* them into
the prose (never print them), and take the best of several runs: the minimum is the run least
disturbed by everything else the machine was doing.

:func:`best_of` and :func:`compare` call each function an exact number of times (the chapters
budget their 30 s by it, and a reader can count the calls); :func:`interleaved` lets
``torch.utils.benchmark.Timer.blocked_autorange`` choose how many calls make a measurement
(blocks of calls long enough for the clock, median over blocks) — what the benchmarks use.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from book.kit import validate

MAX_REPEATS = 10_000


def _check_callable(name: str, fn) -> Callable[[], object]:
    if not callable(fn):
        raise TypeError(f"{name} must be a function that takes no arguments, got "
                        f"{type(fn).__name__}; wrap a call like this: lambda: layer(x)")
    return fn


def _check_fns(fns) -> None:
    if not isinstance(fns, Mapping) or not fns:
        raise TypeError("fns must be a non-empty dict of name -> function of no arguments, "
                        f"got {fns!r}; e.g. {{'batched': lambda: layer(x)}}")
    for name, fn in fns.items():
        if not isinstance(name, str):
            raise TypeError(f"the names in fns must be strings, got {name!r}")
        _check_callable(f"fns[{name!r}]", fn)


def best_of(fn: Callable[[], object], repeats: int = 5, *, warmup: int = 1) -> float:
    """Seconds taken by the fastest of ``repeats`` calls of ``fn()``, after ``warmup`` calls.

    The warm-up calls are not timed: the first call often pays one-off costs (allocating
    buffers, starting a thread pool) that say nothing about the computation itself.
    Example: ``best_of(lambda: layer(x), repeats=20)``.
    """
    fn = _check_callable("fn", fn)
    repeats = validate.integer("repeats", repeats, low=1, high=MAX_REPEATS)
    warmup = validate.integer("warmup", warmup, low=0, high=MAX_REPEATS)
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def compare(fns: Mapping[str, Callable[[], object]], repeats: int = 5, *,
            warmup: int = 1) -> dict[str, float]:
    """Best-of-``repeats`` seconds for each named function, timed in interleaved rounds.

    Round *r* times one call of every function in turn, so a slow spell of the machine (another
    process waking up, the CPU changing its clock) hits all of them alike instead of one.
    Example: ``compare({"loop": lambda: loop(x), "batched": lambda: layer(x)}, repeats=20)``.
    """
    _check_fns(fns)
    repeats = validate.integer("repeats", repeats, low=1, high=MAX_REPEATS)
    warmup = validate.integer("warmup", warmup, low=0, high=MAX_REPEATS)
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


CLOCKS = ("wall", "cpu")


def interleaved(fns: Mapping[str, Callable[[], object]], rounds: int = 5, *,
                min_run_time: float = 0.2, clock: str = "wall") -> dict[str, list[float]]:
    """Per-call seconds of each named function in each of ``rounds`` interleaved rounds.

    In round *r* every function gets one ``torch.utils.benchmark.Timer.blocked_autorange``
    measurement (at least ``min_run_time`` seconds of calls, median per call over its blocks),
    one function after the other; so a slow spell of the machine lands on all of them, and the
    ratio of two functions *within* a round is steadier than the ratio of their overall times.
    The threads are those PyTorch has when it is called (see :func:`torch_threads`).
    ``clock="cpu"`` times with ``time.thread_time`` (CPU seconds of the calling thread) instead
    of the wall clock: on one thread (CPU ops and the CPU autograd engine run in the calling
    thread) this leaves out the time other processes take the core, which dominates the noise
    on a shared machine; it is wrong for GPU or multi-threaded work, so it is not the default.
    Example: ``interleaved({"ref": lambda: ref(x), "ours": lambda: ours(x)}, rounds=7)``.
    """
    import torch
    from torch.utils import benchmark

    _check_fns(fns)
    rounds = validate.integer("rounds", rounds, low=1, high=MAX_REPEATS)
    min_run_time = validate.real("min_run_time", min_run_time, low=1e-4, high=60.0)
    validate.choice("clock", clock, CLOCKS)
    threads = torch.get_num_threads()
    timer = time.thread_time if clock == "cpu" else time.perf_counter
    timers = {name: benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads,
                                    label=name, timer=timer)
              for name, fn in fns.items()}
    for fn in fns.values():  # warm-up: one call each, untimed
        fn()
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, timer in timers.items():
            out[name].append(timer.blocked_autorange(min_run_time=min_run_time).median)
    return out


@contextmanager
def torch_threads(n: int) -> Iterator[int]:
    """Run the block with PyTorch limited to ``n`` CPU threads, then restore the old number.

    Timing on one thread makes a comparison independent of how many cores the machine has and
    of how busy they are: with several threads, a core taken by another process stalls every
    operation that waits for all of its threads, which can inflate tiny operations many times.
    Example: ``with torch_threads(1): compare({...})``.
    """
    import torch

    n = validate.integer("n", n, low=1, high=1024)
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(before)
