"""book.kit.timing: best-of timing with warm-up, interleaved comparisons, helpful errors."""

from __future__ import annotations

import time

import pytest

from book.kit import timing


def test_best_of_is_the_fastest_call_and_skips_warmup():
    delays = iter([0.05, 0.02, 0.001, 0.03])  # the first (warm-up) call is the slowest

    def fn():
        time.sleep(next(delays))

    best = timing.best_of(fn, repeats=3, warmup=1)
    assert 0.001 <= best < 0.02


def test_best_of_calls_fn_warmup_plus_repeats_times():
    calls = []
    timing.best_of(lambda: calls.append(1), repeats=4, warmup=2)
    assert len(calls) == 6
    calls.clear()
    assert timing.best_of(lambda: calls.append(1), repeats=1, warmup=0) >= 0
    assert len(calls) == 1


def test_compare_times_every_function_in_rounds():
    order = []
    result = timing.compare({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                            repeats=3, warmup=0)
    assert set(result) == {"a", "b"} and all(v >= 0 for v in result.values())
    assert order == ["a", "b"] * 3  # interleaved, not all of a then all of b


def test_compare_orders_by_speed():
    result = timing.compare({"slow": lambda: time.sleep(0.01), "fast": lambda: None},
                            repeats=2)
    assert result["fast"] < result["slow"]


@pytest.mark.parametrize("kwargs,err,text", [
    ({"fn": 3}, TypeError, "lambda: layer"),
    ({"fn": lambda: None, "repeats": 0}, ValueError, "at least 1"),
    ({"fn": lambda: None, "repeats": 2.5}, TypeError, "integer"),
    ({"fn": lambda: None, "repeats": timing.MAX_REPEATS + 1}, ValueError, "at most"),
    ({"fn": lambda: None, "warmup": -1}, ValueError, "at least 0"),
])
def test_best_of_bad_input(kwargs, err, text):
    with pytest.raises(err, match=text):
        timing.best_of(**kwargs)


@pytest.mark.parametrize("fns,text", [
    ({}, "non-empty dict"),
    ([lambda: None], "non-empty dict"),
    ({"a": 1}, r"fns\['a'\] must be a function"),
    ({1: lambda: None}, "names in fns must be strings"),
])
def test_compare_bad_input(fns, text):
    with pytest.raises(TypeError, match=text):
        timing.compare(fns)


def test_torch_threads_limits_and_restores():
    import torch

    before = torch.get_num_threads()
    with timing.torch_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), timing.torch_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == before  # restored even when the block fails


@pytest.mark.parametrize("n,err", [(0, ValueError), (1.5, TypeError), (True, TypeError)])
def test_torch_threads_bad_input(n, err):
    with pytest.raises(err):
        with timing.torch_threads(n):
            pass


def test_interleaved_times_each_function_once_per_round():
    result = timing.interleaved({"slow": lambda: time.sleep(0.002), "fast": lambda: None},
                                rounds=3, min_run_time=0.01)
    assert set(result) == {"slow", "fast"}
    assert all(len(v) == 3 and all(t > 0 for t in v) for v in result.values())
    assert all(f < s for f, s in zip(result["fast"], result["slow"], strict=True))
    cpu = timing.interleaved({"sleep": lambda: time.sleep(0.002)}, rounds=2, min_run_time=0.01,
                             clock="cpu")
    assert max(cpu["sleep"]) < 0.001  # sleeping takes wall time, not CPU time


@pytest.mark.parametrize("kwargs,err,text", [
    ({"fns": {}}, TypeError, "non-empty dict"),
    ({"fns": {"a": 1}}, TypeError, "must be a function"),
    ({"fns": {"a": lambda: None}, "rounds": 0}, ValueError, "at least 1"),
    ({"fns": {"a": lambda: None}, "min_run_time": 0}, ValueError, "at least"),
    ({"fns": {"a": lambda: None}, "clock": "gpu"}, ValueError, "clock='gpu'"),
])
def test_interleaved_bad_input(kwargs, err, text):
    with pytest.raises(err, match=text):
        timing.interleaved(**kwargs)
