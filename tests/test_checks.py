"""book.checks: each checker accepts the reference answer, rejects wrong ones, never leaks."""

from __future__ import annotations

import numpy as np
import pytest

from book import checks

WRONG = {
    "ch1.softmax_row": [[0.5, 0.3, 0.2], [2, 1, 0], [0.67, 0.24]],
    "ch1.pair_count": [90, 10, 20],
    "ch1.my_softmax": [lambda x: np.exp(x) / np.exp(x).sum(), lambda x: x, 3],
    "ch1.heads_needed": [1, 3],
    "ch2.variance": [8, 1, 4096],
    "ch2.divisor": [256, 4],
    "ch2.uniform_entropy": [0, 16, 1],
    "ch2.scaled_scores": [lambda q, k: q @ k.T, lambda q, k: q @ k.T / q.shape[1],
                          lambda q, k: k @ q.T / np.sqrt(q.shape[1]), "x"],
}


def test_every_exercise_has_wrong_answers_listed():
    assert set(WRONG) == set(checks.exercises())


@pytest.mark.parametrize("key", sorted(WRONG))
def test_reference_passes(key):
    result = checks.check(key, checks.reference(key))
    assert result.ok, result.message
    assert "✅" in result._repr_html_()


@pytest.mark.parametrize("key", sorted(WRONG))
def test_wrong_answers_fail_with_a_hint(key):
    for wrong in WRONG[key]:
        result = checks.check(key, wrong)
        assert result.status == "bad", (key, wrong)
        assert len(result.message) > 15
        assert "❌" in str(result)


@pytest.mark.parametrize("key", sorted(WRONG))
def test_unanswered_is_todo_not_wrong(key):
    assert checks.check(key, ...).status == "todo"


def test_hints_do_not_print_the_answer():
    for key in ("ch2.variance", "ch2.divisor", "ch1.pair_count"):
        answer = checks.reference(key)
        for wrong in WRONG[key]:
            message = checks.check(key, wrong).message
            assert f"{float(answer):g}" not in message.replace(str(wrong), ""), message


def test_wrong_kind_of_answer():
    assert "single number" in checks.check("ch2.variance", [1, 2]).message
    assert "function itself" in checks.check("ch2.scaled_scores", 3).message


def test_unknown_exercise():
    with pytest.raises(KeyError, match="known exercises"):
        checks.check("ch9.nothing", 1)
    with pytest.raises(KeyError):
        checks.reference("ch9.nothing")
