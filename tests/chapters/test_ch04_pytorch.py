"""Chapter 4's exercise checkers: each typical mistake gets its own hint, and correct answers
in any reasonable form (torch or numpy, bool or additive mask, torch.Size) pass.
(tests/test_checks.py runs the generic checks over every registered exercise.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import check_message as message

from book import chapters
from book.face import checks
from book.ideas import masks


def test_causal_mask_hints_name_the_mistake():
    causal = masks.causal_mask(5)
    assert "BLOCKED" in message("ch4.causal_mask", ~causal)
    assert "future" in message("ch4.causal_mask", causal.T.contiguous())
    assert "diagonal" in message("ch4.causal_mask", causal.tril(-1))
    assert "additive" in message("ch4.causal_mask", masks.to_additive(causal))
    assert ".bool()" in message("ch4.causal_mask", causal.int())
    assert "5 × 5" in message("ch4.causal_mask", masks.causal_mask(4))


def test_causal_mask_accepts_numpy_and_lists():
    causal = masks.causal_mask(5)
    assert checks.check("ch4.causal_mask", causal.numpy()).ok
    assert checks.check("ch4.causal_mask", causal.tolist()).ok


def test_split_heads_reshape_only_mistake_gets_its_own_hint():
    def reshape_only(x, n_heads):
        b, n, d = x.shape
        return x.reshape(b, n_heads, n, d // n_heads)

    text = message("ch4.split_heads", reshape_only)
    assert "Right shape, wrong contents" in text and "several tokens" in text


def test_split_heads_other_hints():
    assert "swap axes 1 and 2" in message(
        "ch4.split_heads", lambda x, h: x.view(*x.shape[:2], h, x.shape[2] // h))
    assert "interleaved" in message(
        "ch4.split_heads",
        lambda x, h: x.view(*x.shape[:2], x.shape[2] // h, h).permute(0, 3, 1, 2))
    assert checks.check("ch4.split_heads", lambda x, h: None).status == "todo"
    assert "function itself" in message("ch4.split_heads", torch.zeros(2))
    assert "raised" in message("ch4.split_heads", lambda x, h: x.view(-1, 7))


def test_split_heads_accepts_equivalent_code():
    def with_reshape(x, n_heads):
        b, n, d = x.shape
        return x.reshape(b, n, n_heads, d // n_heads).permute(0, 2, 1, 3)

    assert checks.check("ch4.split_heads", with_reshape).ok


def test_attn_mask_accepts_bool_and_additive_conversions():
    assert checks.check("ch4.torch_attn_mask", lambda m: ~m).ok
    assert checks.check("ch4.torch_attn_mask", lambda m: m.logical_not()).ok
    assert checks.check("ch4.torch_attn_mask", masks.to_additive).ok


def test_attn_mask_hints():
    assert "other way round" in message("ch4.torch_attn_mask", lambda m: m)
    assert "ADDED" in message("ch4.torch_attn_mask", lambda m: (~m).float())
    assert "ADDED" in message("ch4.torch_attn_mask", lambda m: m.float())
    assert "not torch.int64" in message("ch4.torch_attn_mask", lambda m: (~m).long())
    assert "shape" in message("ch4.torch_attn_mask", lambda m: ~m[:-1])
    assert "torch tensor" in message("ch4.torch_attn_mask", lambda m: (~m).numpy())


@pytest.mark.parametrize("answer,text", [
    ((3, 10, 10), "each head scores separately"),
    ((3, 8, 10, 64), "shape of q"),
    ((3, 10, 8, 10), "right after the batch axis"),
    (80, "tuple of integers"),
])
def test_scores_shape_hints(answer, text):
    assert text in message("ch4.scores_shape", answer)


def test_scores_shape_accepts_any_sequence_and_never_prints_the_answer():
    answer = checks.reference("ch4.scores_shape")
    assert checks.check("ch4.scores_shape", torch.Size(answer)).ok
    assert checks.check("ch4.scores_shape", list(answer)).ok
    assert checks.check("ch4.scores_shape", np.array(answer)).ok
    for wrong in chapters.exercises()["ch4.scores_shape"].mistakes():
        assert str(tuple(answer)) not in checks.check("ch4.scores_shape", wrong).message
