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

from . import attention, norms, orders_example, scaling


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


@dataclass(frozen=True)
class Exercise:
    """One exercise: its checker, its reference answer and the mistakes readers make.

    ``reference()`` builds the correct answer with the book's own code (for tests and teachers;
    the prose never prints it). ``mistakes()`` returns wrong answers that the checker must
    reject with a hint: typical slips, kept next to the checker that catches them.
    """

    key: str
    title: str
    checker: Callable[[object], tuple[bool, str]]
    reference: Callable[[], object]
    mistakes: Callable[[], list]


_EXERCISES: dict[str, Exercise] = {}


def exercise(key: str, title: str, *, reference: Callable[[], object],
             mistakes: Callable[[], list]):
    """Register ``func(answer) -> (ok, hint_or_praise)`` as the checker of exercise ``key``."""
    def register(func):
        if key in _EXERCISES:
            raise ValueError(f"exercise {key!r} is registered twice")
        _EXERCISES[key] = Exercise(key, title, func, reference, mistakes)
        return func
    return register


def exercises() -> dict[str, Exercise]:
    """All registered exercises by key."""
    return dict(_EXERCISES)


def reference(key: str):
    """The reference answer of exercise ``key`` (for tests and teachers, not the prose)."""
    if key not in _EXERCISES:
        raise KeyError(f"no exercise {key!r}; known exercises: {sorted(_EXERCISES)}")
    return _EXERCISES[key].reference()


def check(key: str, answer) -> Result:
    """Check ``answer`` for exercise ``key``. Leave the answer as ``...`` until you have one."""
    if key not in _EXERCISES:
        raise KeyError(f"no exercise {key!r}; known exercises: {sorted(_EXERCISES)}")
    if answer is Ellipsis or answer is None:
        return Result(key, "todo", "Not answered yet: replace ... with your answer and re-run.")
    try:
        ok, message = _EXERCISES[key].checker(answer)
    except NotAnswered:
        return Result(key, "todo", "Not answered yet: your function returns None; write its "
                                   "body and re-run.")
    except Exception as err:  # a reader's function may raise anything; report it, don't crash
        return Result(key, "bad", f"Your answer raised {type(err).__name__}: {err}")
    return Result(key, "ok" if ok else "bad", message)


# --- helpers -------------------------------------------------------------------------------

class NotAnswered(Exception):
    """Raised by :func:`call` when a reader's function still returns None (body is ``...``)."""


def call(func, *args):
    """Call a reader's function on fresh copies of ``args``; None means "not written yet"."""
    result = func(*(np.array(a, copy=True) for a in args))
    if result is None:
        raise NotAnswered
    return np.asarray(result, dtype=float)


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

def _naive_softmax(x):
    """The textbook formula without the max shift: overflows on large scores."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(np.asarray(x, dtype=float))
        return e / e.sum()


@exercise("ch1.softmax_row", "Softmax of the scores [2, 1, 0]",
          reference=lambda: attention.softmax([2.0, 1.0, 0.0]),
          mistakes=lambda: [[0.5, 0.3, 0.2], [2, 1, 0], [0.67, 0.24]])
def _ch1_softmax_row(answer):
    return _close_array(answer, attention.softmax([2.0, 1.0, 0.0]), 5e-3,
                        "Exponentiate each score, then divide by the sum of the three "
                        "exponentials; the result must sum to 1 and keep the order 2 > 1 > 0.")


@exercise("ch1.pair_count", "How many weights does one head compute for a 10-token sentence?",
          reference=lambda: 10 * 10, mistakes=lambda: [90, 10, 20])
def _ch1_pair_count(answer):
    value = _number(answer)
    ok = value == 10 * 10
    hint = ("Every token (query) scores every token (key), itself included: count the cells of "
            "the heatmap." if value != 10 * 9 else
            "Close: a token also attends to itself, so count the diagonal too.")
    return ok, ("Correct: a 10 × 10 grid per head." if ok else hint)


@exercise("ch1.my_softmax", "Write softmax(x) that survives large scores",
          reference=lambda: attention.softmax,
          mistakes=lambda: [_naive_softmax, lambda x: x, 3])
def _ch1_my_softmax(func):
    if not callable(func):
        return False, "Pass the function itself (my_softmax), not its result."
    rng = np.random.default_rng(1)
    cases = [np.array([2.0, 1.0, 0.0]), rng.standard_normal(7), np.array([1000.0, 999.0, 0.0]),
             np.array([-1000.0, -1001.0]), np.array([5.0])]
    for x in cases:
        got = call(func, x)
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
          "香菜 needs its modifier and its dish: how many heads keep both sharp?",
          reference=lambda: _heads_needed(), mistakes=lambda: [1, 3])
def _ch1_heads_needed(answer):
    value = _number(answer)
    # The smallest head count at which 香菜 puts ≥ 0.8 on both 不要 and 牛肉面 in some head.
    ok = value == _heads_needed()
    return ok, ("Correct." if ok else "Use the heads explorer: pick the row 香菜 and look for the "
                "smallest number of heads where 不要 and 牛肉面 each get a dark cell.")


# --- chapter 2 -----------------------------------------------------------------------------

def _scaled_scores(q, k):
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    return q @ k.T / np.sqrt(q.shape[1])


@exercise("ch2.variance", "Variance of q·k for d_k = 64 with unit-variance entries",
          reference=lambda: 64.0, mistakes=lambda: [8, 1, 4096])
def _ch2_variance(answer):
    return _close_number(answer, 64.0, 0.05,
                         "q·k is a sum of d_k independent products, each of variance 1·1: "
                         "variances of independent terms add.")


@exercise("ch2.divisor", "What do you divide the scores by when d_k = 256?",
          reference=lambda: float(np.sqrt(256)), mistakes=lambda: [256, 4])
def _ch2_divisor(answer):
    return _close_number(answer, float(np.sqrt(256)), 1e-6,
                         "You want the scaled scores to have variance 1 again; dividing by c "
                         "divides the variance by c².")


@exercise("ch2.uniform_entropy", "Entropy (nats) of the weights when scores are divided by d_k → ∞",
          reference=lambda: scaling.saturation(1, "linear", 16)["uniform_entropy"],
          mistakes=lambda: [0, 16, 1])
def _ch2_uniform_entropy(answer):
    n_keys = 16
    return _close_number(answer, float(np.log(n_keys)), 1e-3,
                         "Dividing by a huge number sends every score to 0: what distribution "
                         "does softmax give then, over 16 keys? Its entropy is ln of something.")


@exercise("ch2.scaled_scores", "Write scaled_scores(Q, K) = Q Kᵀ / √d_k",
          reference=lambda: _scaled_scores,
          mistakes=lambda: [lambda q, k: q @ k.T, lambda q, k: q @ k.T / q.shape[1],
                            lambda q, k: k @ q.T / np.sqrt(q.shape[1]), "x"])
def _ch2_scaled_scores(func):
    if not callable(func):
        return False, "Pass the function itself (scaled_scores), not its result."
    rng = np.random.default_rng(2)
    for n_q, n_k, d_k in [(3, 3, 4), (1, 5, 1), (4, 2, 64)]:
        q, k = rng.standard_normal((n_q, d_k)), rng.standard_normal((n_k, d_k))
        got = call(func, q, k)
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


# --- chapter 3 -----------------------------------------------------------------------------

def _walkthrough_steps():
    from . import walkthrough as wt

    ex = wt.example()
    return wt.walkthrough(ex.X, ex.heads, ex.W_O), ex


@exercise("ch3.softmax_row", "Softmax of the second row of S1 / √d_k (the query 爱)",
          reference=lambda: _walkthrough_steps()[0]["A1"][1],
          mistakes=lambda: [_walkthrough_steps()[0]["S1_scaled"][1],
                            attention.softmax(_walkthrough_steps()[0]["S1"][1]),
                            _walkthrough_steps()[0]["A1"][0], [1 / 3] * 3])
def _ch3_softmax_row(answer):
    steps, _ = _walkthrough_steps()
    arr = np.asarray(answer, dtype=float)
    if arr.shape == (3,) and np.allclose(arr, attention.softmax(steps["S1"][1]), atol=5e-3):
        return False, "That is the softmax of the unscaled scores: divide by √d_k first."
    if arr.shape == (3,) and np.allclose(arr, steps["A1"][0], atol=5e-3):
        return False, "That is the first row (the query 我); the exercise asks for the second."
    return _close_array(answer, steps["A1"][1], 5e-3,
                        "Take row 1 of S1_scaled, exponentiate (minus the row's max), divide by "
                        "the sum; the three weights must sum to 1.")


@exercise("ch3.concat_shape", "Shape of the concatenated heads Z",
          reference=lambda: (3, 6), mistakes=lambda: [(3, 3), (6, 3), (3, 4), 18])
def _ch3_concat_shape(answer):
    try:
        shape = tuple(int(v) for v in answer)
    except TypeError:
        return False, "Answer with a tuple (rows, columns), e.g. (2, 5)."
    if shape == (3, 6):
        return True, "Correct: 3 tokens, 2 heads × 3 columns."
    if shape == (6, 3):
        return False, "Rows are tokens; the heads sit side by side as columns."
    return False, "One row per token; each head contributes d_k columns."


@exercise("ch3.layer_norm", "Write layer_norm(r): per token, over the features",
          reference=lambda: norms.layer_norm,
          mistakes=lambda: [lambda r: (r - r.mean(0)) / np.sqrt(r.var(0) + 1e-5),
                            lambda r: (r - r.mean(-1, keepdims=True))
                            / np.sqrt(r.var(-1, ddof=1, keepdims=True) + 1e-5),
                            lambda r: r / np.sqrt(r.var(-1, keepdims=True) + 1e-5), 3])
def _ch3_layer_norm(func):
    if not callable(func):
        return False, "Pass the function itself (layer_norm), not its result."
    rng = np.random.default_rng(3)
    for shape in [(3, 4), (1, 8), (5, 2)]:
        r = rng.normal(loc=1.0, scale=2.0, size=shape)
        got = call(func, r)
        if got.shape != r.shape:
            return False, f"For input shape {shape} you returned {got.shape}; keep the shape."
        if not np.allclose(got, norms.layer_norm(r), atol=1e-6):
            if shape[0] > 1 and np.allclose(got.mean(axis=0), 0, atol=1e-6):
                return False, ("Your columns have mean 0: you normalised over the tokens "
                               "(axis 0). LayerNorm works on each token's features.")
            return False, ("Check each step: mean over the last axis, the population "
                           "variance (ddof=0) over the last axis, then (r - mean) / √(var + ε).")
    return True, "Correct."


@exercise("ch3.w_o_size", "How many numbers does W_O hold?",
          reference=lambda: _walkthrough_steps()[1].W_O.size, mistakes=lambda: [16, 12, 36])
def _ch3_w_o_size(answer):
    value = _number(answer)
    ex = _walkthrough_steps()[1]
    ok = value == ex.W_O.size
    return ok, ("Correct." if ok else "W_O maps the concatenated heads' columns back to "
                "d_model: count rows × columns.")
