"""Exercise checkers: instant ✅/❌ feedback with a hint, never printing the answer.

A chapter's exercise cell ends with ``check("ch2.variance", answer)``. Each checker computes
its reference with the same ``book`` code the chapter uses, so the exercises, the prose and
the tests agree on what a correct answer is.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import attention, orders_example, scaling


@dataclass(frozen=True)
class Result:
    """The verdict on one answer. ``status`` is "ok", "bad" or "todo" (not answered yet)."""

    key: str
    status: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def __str__(self) -> str:
        icon = {"ok": "✅", "bad": "❌", "todo": "✍️"}[self.status]
        return f"{icon} {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return f'<div class="book-check {self.status}">{html.escape(str(self))}</div>'


_CHECKERS: dict[str, Callable[[object], tuple[bool, str]]] = {}
_TITLES: dict[str, str] = {}


def exercise(key: str, title: str):
    """Register ``func(answer) -> (ok, hint_or_praise)`` as the checker of exercise ``key``."""
    def register(func):
        if key in _CHECKERS:
            raise ValueError(f"exercise {key!r} is registered twice")
        _CHECKERS[key] = func
        _TITLES[key] = title
        return func
    return register


def exercises() -> dict[str, str]:
    """All exercise keys with their titles."""
    return dict(_TITLES)


def check(key: str, answer) -> Result:
    """Check ``answer`` for exercise ``key``. Leave the answer as ``...`` until you have one."""
    if key not in _CHECKERS:
        raise KeyError(f"no exercise {key!r}; known exercises: {sorted(_CHECKERS)}")
    if answer is Ellipsis or answer is None:
        return Result(key, "todo", "Not answered yet: replace ... with your answer and re-run.")
    try:
        ok, message = _CHECKERS[key](answer)
    except Exception as err:  # a reader's function may raise anything; report it, don't crash
        return Result(key, "bad", f"Your answer raised {type(err).__name__}: {err}")
    return Result(key, "ok" if ok else "bad", message)


# --- helpers -------------------------------------------------------------------------------

def _number(answer) -> float:
    if isinstance(answer, bool):
        raise TypeError("expected a number, got a bool")
    arr = np.asarray(answer, dtype=float)
    if arr.size != 1:
        raise TypeError(f"expected a single number, got shape {arr.shape}")
    return float(arr.reshape(()))


def _close_number(answer, expected: float, rel: float, hint: str, praise: str = "Correct."):
    value = _number(answer)
    ok = abs(value - expected) <= rel * max(abs(expected), 1e-12)
    return ok, (praise if ok else hint)


def _close_array(answer, expected: np.ndarray, atol: float, hint: str, praise: str = "Correct."):
    arr = np.asarray(answer, dtype=float)
    if arr.shape != expected.shape:
        return False, f"Expected shape {expected.shape}, got {arr.shape}. " + hint
    ok = bool(np.allclose(arr, expected, atol=atol, rtol=0))
    return ok, (praise if ok else hint)


# --- chapter 1 -----------------------------------------------------------------------------

@exercise("ch1.softmax_row", "Softmax of the scores [2, 1, 0]")
def _ch1_softmax_row(answer):
    return _close_array(answer, attention.softmax([2.0, 1.0, 0.0]), 5e-3,
                        "Exponentiate each score, then divide by the sum of the three "
                        "exponentials; the result must sum to 1 and keep the order 2 > 1 > 0.")


@exercise("ch1.pair_count", "How many weights does one head compute for a 10-token sentence?")
def _ch1_pair_count(answer):
    value = _number(answer)
    ok = value == 10 * 10
    hint = ("Every token (query) scores every token (key), itself included: count the cells of "
            "the heatmap." if value != 10 * 9 else
            "Close: a token also attends to itself, so count the diagonal too.")
    return ok, ("Correct: a 10 × 10 grid per head." if ok else hint)


@exercise("ch1.my_softmax", "Write softmax(x) that survives large scores")
def _ch1_my_softmax(func):
    if not callable(func):
        return False, "Pass the function itself (my_softmax), not its result."
    rng = np.random.default_rng(1)
    cases = [np.array([2.0, 1.0, 0.0]), rng.standard_normal(7), np.array([1000.0, 999.0, 0.0]),
             np.array([-1000.0, -1001.0]), np.array([5.0])]
    for x in cases:
        got = np.asarray(func(x.copy()), dtype=float)
        want = attention.softmax(x)
        if got.shape != want.shape:
            return False, f"For an input of shape {x.shape} you returned shape {got.shape}."
        if not np.all(np.isfinite(got)):
            return False, ("Large scores give inf/NaN: exp(1000) overflows. Subtract the row's "
                           "maximum before exponentiating (softmax does not change).")
        if not np.allclose(got, want, atol=1e-9):
            return False, "The values are off for some input: do the outputs sum to 1?"
    return True, "Correct, and numerically stable."


def _heads_needed(threshold: float = 0.8) -> int:
    """Fewest heads at which 香菜 (coriander) puts ≥ threshold on both 不要 and 牛肉面."""
    coriander, no, noodles = 4, 3, 1
    return min(h for h in range(1, len(orders_example.RELATIONS) + 1)
               if orders_example.partner_share(h, coriander, no) >= threshold
               and orders_example.partner_share(h, coriander, noodles) >= threshold)


@exercise("ch1.heads_needed",
          "香菜 needs its modifier and its dish: how many heads keep both sharp?")
def _ch1_heads_needed(answer):
    value = _number(answer)
    # The smallest head count at which 香菜 puts ≥ 0.8 on both 不要 and 牛肉面 in some head.
    ok = value == _heads_needed()
    return ok, ("Correct." if ok else "Use the heads explorer: pick the row 香菜 and look for the "
                "smallest number of heads where 不要 and 牛肉面 each get a dark cell.")


# --- chapter 2 -----------------------------------------------------------------------------

@exercise("ch2.variance", "Variance of q·k for d_k = 64 with unit-variance entries")
def _ch2_variance(answer):
    return _close_number(answer, 64.0, 0.05,
                         "q·k is a sum of d_k independent products, each of variance 1·1: "
                         "variances of independent terms add.")


@exercise("ch2.divisor", "What do you divide the scores by when d_k = 256?")
def _ch2_divisor(answer):
    return _close_number(answer, float(np.sqrt(256)), 1e-6,
                         "You want the scaled scores to have variance 1 again; dividing by c "
                         "divides the variance by c².")


@exercise("ch2.uniform_entropy", "Entropy (nats) of the weights when scores are divided by d_k → ∞")
def _ch2_uniform_entropy(answer):
    n_keys = 16
    return _close_number(answer, float(np.log(n_keys)), 1e-3,
                         "Dividing by a huge number sends every score to 0: what distribution "
                         "does softmax give then, over 16 keys? Its entropy is ln of something.")


@exercise("ch2.scaled_scores", "Write scaled_scores(Q, K) = Q Kᵀ / √d_k")
def _ch2_scaled_scores(func):
    if not callable(func):
        return False, "Pass the function itself (scaled_scores), not its result."
    rng = np.random.default_rng(2)
    for n_q, n_k, d_k in [(3, 3, 4), (1, 5, 1), (4, 2, 64)]:
        q, k = rng.standard_normal((n_q, d_k)), rng.standard_normal((n_k, d_k))
        got = np.asarray(func(q, k), dtype=float)
        want = q @ k.T / np.sqrt(d_k)
        if got.shape != want.shape:
            return False, (f"For Q of shape {q.shape} and K of shape {k.shape} the scores are "
                           f"{want.shape} (queries × keys); you returned {got.shape}.")
        if np.allclose(got, q @ k.T / d_k) and d_k > 1:
            return False, "You divided by d_k; divide by its square root."
        if np.allclose(got, q @ k.T) and d_k > 1:
            return False, "These are the raw scores: the scaling is missing."
        if not np.allclose(got, want):
            return False, "The numbers are off: is it Q @ K.T (not K @ Q.T)?"
    return True, "Correct."


def reference(key: str):
    """The reference answer of a numeric exercise (for tests and the teacher, not the prose)."""
    refs = {
        "ch1.softmax_row": lambda: attention.softmax([2.0, 1.0, 0.0]),
        "ch1.pair_count": lambda: 100,
        "ch1.my_softmax": lambda: attention.softmax,
        "ch1.heads_needed": _heads_needed,
        "ch2.variance": lambda: 64.0,
        "ch2.divisor": lambda: float(np.sqrt(256)),
        "ch2.uniform_entropy": lambda: scaling.saturation(1, "linear", 16)["uniform_entropy"],
        "ch2.scaled_scores": lambda: (lambda q, k: np.asarray(q) @ np.asarray(k).T
                                      / np.sqrt(np.asarray(q).shape[1])),
    }
    if key not in refs:
        raise KeyError(f"no reference for {key!r}; known: {sorted(refs)}")
    return refs[key]()
