"""Wall-clock timing for the chapters' speed comparisons (chapter 4: loop over heads vs batched).

Timings vary from run to run and machine to machine, so the chapters only ever *glue* them into
the prose (never print them), and take the best of several runs: the minimum is the run least
disturbed by everything else the machine was doing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from . import validate

MAX_REPEATS = 10_000


def _check_callable(name: str, fn) -> Callable[[], object]:
    if not callable(fn):
        raise TypeError(f"{name} must be a function that takes no arguments, got "
                        f"{type(fn).__name__}; wrap a call like this: lambda: layer(x)")
    return fn


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
    if not isinstance(fns, Mapping) or not fns:
        raise TypeError("fns must be a non-empty dict of name -> function of no arguments, "
                        f"got {fns!r}; e.g. {{'batched': lambda: layer(x)}}")
    for name, fn in fns.items():
        if not isinstance(name, str):
            raise TypeError(f"the names in fns must be strings, got {name!r}")
        _check_callable(f"fns[{name!r}]", fn)
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
