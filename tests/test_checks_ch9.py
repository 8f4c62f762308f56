"""Chapter 9's exercise checkers: each typical slip gets its own hint; equivalent answers pass.
(tests/test_checks.py runs the generic checks over every registered exercise.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import check_message as message
from tolerance import assert_same_run

from book.face import checks
from book.ideas import kvcache, longctx


def test_references_agree_with_the_library():
    assert checks.reference("ch9.keys_per_query") == 2 * 128 + 1
    assert checks.reference("ch9.crossover") == 6 * 768
    assert checks.reference("ch9.cache_bytes") == kvcache.cache_bytes(24, 4096, 2048, 2)
    mask = checks.reference("ch9.window_mask")(7, 2)
    assert_same_run(np.asarray(mask), longctx.window_mask(7, 2).numpy(),
                    why="boolean masks: no rounding")


@pytest.mark.parametrize("answer,text", [(256, "its own position"), (129, "causal window"),
                                         (128, "both sides"), (1000, "Count the j")])
def test_keys_per_query_hints(answer, text):
    assert text in message("ch9.keys_per_query", answer)


@pytest.mark.parametrize("answer,text", [(768, "Count both sides"), (3072, "four projections"),
                                         (100, "Set attention")])
def test_crossover_hints(answer, text):
    assert text in message("ch9.crossover", answer)


def test_cache_bytes_hints():
    right = checks.reference("ch9.cache_bytes")
    assert "AND values" in message("ch9.cache_bytes", right // 2)
    assert "2 bytes" in message("ch9.cache_bytes", right * 2)
    assert "multiply by the layers" in message("ch9.cache_bytes", right // 24)
    assert "not MiB" in message("ch9.cache_bytes", right // 2**20)
    assert checks.check("ch9.cache_bytes", float(right)).ok
    assert checks.check("ch9.cache_bytes", np.int64(right)).ok


def test_window_mask_hints_and_equivalent_answers():
    assert "Off by one" in message(
        "ch9.window_mask", lambda n, w: longctx.window_mask(int(n), int(w) - 1).numpy()
        if w > 0 else np.zeros((int(n), int(n)), dtype=bool))
    assert "causal window" in message(
        "ch9.window_mask", lambda n, w: longctx.window_mask(int(n), int(w), causal=True))
    assert "function itself" in message("ch9.window_mask", np.ones((3, 3)))
    assert "6 × 6" in message("ch9.window_mask", lambda n, w: np.ones((2, 2)))
    # the library's torch mask, 0/1 integers and nested lists are all fine
    assert checks.check("ch9.window_mask",
                        lambda n, w: longctx.window_mask(int(n), int(w))).ok
    assert checks.check("ch9.window_mask", lambda n, w: torch.tensor(
        [[int(abs(i - j) <= w) for j in range(n)] for i in range(n)])).ok
    assert checks.check("ch9.window_mask", lambda n, w: None).status == "todo"
