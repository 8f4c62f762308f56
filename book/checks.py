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
    result = func(*(np.array(a, copy=True) if isinstance(a, (np.ndarray, list, tuple)) else a
                    for a in args))
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


# --- chapter 4 -----------------------------------------------------------------------------

def _ch4_causal_reference():
    from . import masks

    return masks.causal_mask(5)


def _ch4_causal_mistakes():
    import torch

    from . import masks

    causal = masks.causal_mask(5)
    ones = torch.ones(5, 5, dtype=torch.bool)
    return [~causal,                  # nn.MultiheadAttention's convention (True = blocked)
            ones.triu(),              # the upper triangle: every token sees the future
            ones.tril(-1),            # no diagonal: a token may not see itself
            masks.to_additive(causal),  # an additive float mask
            causal.int(),             # the right pattern, as integers
            np.ones((4, 4), dtype=bool)]


@exercise("ch4.causal_mask", "The causal mask for 5 tokens, in this book's convention",
          reference=_ch4_causal_reference, mistakes=_ch4_causal_mistakes)
def _ch4_causal_mask(answer):
    arr = np.asarray(answer.detach().cpu() if hasattr(answer, "detach") else answer)
    if arr.dtype.kind == "f" and np.isneginf(arr).any():
        return False, ("That is an additive float mask (0 / -inf), which is added to the scores. "
                       "This exercise wants the boolean mask: True = the query may attend.")
    if arr.shape != (5, 5):
        return False, (f"Expected a 5 × 5 mask (rows = queries, columns = keys), got shape "
                       f"{arr.shape}.")
    want = np.tril(np.ones((5, 5), dtype=bool))
    if arr.dtype != bool:
        if arr.dtype.kind in "iuf" and np.array_equal(arr != 0, want):
            return False, ("The pattern is right but it is stored as numbers; the book's masks "
                           "are booleans (torch: .bool(), numpy: .astype(bool)).")
        return False, f"A mask holds booleans (True = may attend), got dtype {arr.dtype}."
    if np.array_equal(arr, want):
        return True, "Correct: query i may attend to keys 0…i."
    if np.array_equal(arr, ~want):
        return False, ("That is nn.MultiheadAttention's convention, where True means BLOCKED. In "
                       "this book (and in F.scaled_dot_product_attention) True means may attend.")
    if np.array_equal(arr, want.T):
        return False, ("This lets every query see itself and the LATER tokens — the future. Row i "
                       "is query i: which keys has it already seen when it is produced?")
    if np.array_equal(arr, np.tril(want, -1)):
        return False, ("Almost: a token may also attend to itself (the diagonal). Without it the "
                       "first query would have no key at all, and softmax would give NaN.")
    return False, "Row i (query i) must allow the columns 0…i and block every later column."


def _ch4_split_reference(x, n_heads):
    batch, seq, d_model = x.shape
    return x.view(batch, seq, n_heads, d_model // n_heads).transpose(1, 2)


def _ch4_split_mistakes():
    def reshape_only(x, n_heads):
        b, n, d = x.shape
        return x.reshape(b, n_heads, n, d // n_heads)

    def no_transpose(x, n_heads):
        b, n, d = x.shape
        return x.view(b, n, n_heads, d // n_heads)

    def interleaved(x, n_heads):
        b, n, d = x.shape
        return x.view(b, n, d // n_heads, n_heads).permute(0, 3, 1, 2)

    return [reshape_only, no_transpose, interleaved, 3]


@exercise("ch4.split_heads", "Repair split_heads(x, n_heads): (batch, seq, d_model) → "
          "(batch, heads, seq, d_k)", reference=lambda: _ch4_split_reference,
          mistakes=_ch4_split_mistakes)
def _ch4_split_heads(func):
    import torch

    if not callable(func):
        return False, "Pass the function itself (split_heads), not its result."
    gen = torch.Generator().manual_seed(4)
    for batch, seq, d_model, n_heads in [(2, 4, 8, 2), (1, 3, 6, 3), (3, 5, 12, 4)]:
        d_k = d_model // n_heads
        x = torch.randn(batch, seq, d_model, generator=gen)
        out = func(x.clone(), n_heads)
        if out is None:
            raise NotAnswered
        out = torch.as_tensor(out)
        want = _ch4_split_reference(x, n_heads)
        if tuple(out.shape) != tuple(want.shape):
            if tuple(out.shape) == (batch, seq, n_heads, d_k):
                return False, ("That is (batch, seq, heads, d_k): the heads axis must come "
                               "before the sequence axis — swap axes 1 and 2.")
            return False, (f"For x of shape {tuple(x.shape)} and {n_heads} heads, expected "
                           f"(batch, heads, seq, d_k) = {tuple(want.shape)}; got "
                           f"{tuple(out.shape)}.")
        out = out.to(want.dtype)
        if torch.allclose(out, x.reshape(batch, n_heads, seq, d_k)):
            return False, ("Right shape, wrong contents: reshaping straight to (batch, heads, "
                           "seq, d_k) cuts each sequence's memory into consecutive chunks, so a "
                           "'head' gets pieces of several tokens. Split each token's features "
                           "first, (batch, seq, heads, d_k), then move the heads axis forward.")
        if torch.allclose(out, x.view(batch, seq, d_k, n_heads).permute(0, 3, 1, 2)):
            return False, ("The heads are interleaved: head h must own the consecutive columns "
                           "h·d_k … (h+1)·d_k − 1 of d_model, so the heads axis comes before d_k "
                           "when you split the last axis.")
        if not torch.allclose(out, want):
            return False, ("The values are off: out[b, h, i] must equal the columns "
                           "h·d_k … (h+1)·d_k − 1 of x[b, i].")
    return True, "Correct: every head sees its own d_k columns of every token."


def _ch4_mha_layer(n: int):
    """A seeded float64 layer, its nn.MultiheadAttention twin and an input of n tokens."""
    import torch

    from . import mha

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(n)
        layer = mha.MultiHeadSelfAttention(8, 2, dtype=torch.float64).eval()
    x = torch.randn(1, n, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    return layer, mha.copy_to_torch_mha(layer).eval(), x


def _ch4_attn_mask_cases():
    import torch

    from . import masks

    gen = torch.Generator().manual_seed(7)
    random = (torch.rand(6, 6, generator=gen) < 0.5) | torch.eye(6, dtype=torch.bool)
    return [masks.causal_mask(5), random]


def _ch4_attn_mask_reference():
    from . import masks

    return masks.to_torch_attn_mask


@exercise("ch4.torch_attn_mask", "Convert a book mask into nn.MultiheadAttention's attn_mask",
          reference=_ch4_attn_mask_reference,
          mistakes=lambda: [lambda m: m, lambda m: (~m).float(), lambda m: (~m).int(),
                            "mask"])
def _ch4_torch_attn_mask(func):
    import torch

    if not callable(func):
        return False, "Pass the function itself (to_attn_mask), not its result."
    for mask in _ch4_attn_mask_cases():
        n = mask.shape[0]
        converted = func(mask.clone())
        if converted is None:
            raise NotAnswered
        if not isinstance(converted, torch.Tensor):
            return False, f"Return a torch tensor, got {type(converted).__name__}."
        if tuple(converted.shape) != (n, n):
            return False, (f"For a {n} × {n} mask, return a {n} × {n} attn_mask (queries × "
                           f"keys); got shape {tuple(converted.shape)}.")
        if converted.dtype != torch.bool and not converted.is_floating_point():
            return False, (f"nn.MultiheadAttention accepts a boolean or a float attn_mask, not "
                           f"{converted.dtype}.")
        layer, torch_mha, x = _ch4_mha_layer(n)
        with torch.no_grad():
            want = layer(x, mask=mask)
            got = torch_mha(x, x, x, attn_mask=converted.to(x.dtype)
                            if converted.is_floating_point() else converted,
                            need_weights=False)[0]
        if bool(torch.isfinite(got).all()) and torch.allclose(got, want, atol=1e-9):
            continue
        if converted.dtype == torch.bool and torch.equal(converted, mask):
            return False, ("nn.MultiheadAttention reads a boolean attn_mask the other way round: "
                           "True = NOT allowed. Your mask blocks exactly the pairs that should "
                           "attend.")
        if converted.is_floating_point() and not bool(torch.isinf(converted).any()):
            return False, ("A float attn_mask is ADDED to the scores: adding 0 or 1 barely "
                           "changes them, so nothing is blocked — the classic silent bug. Return "
                           "a boolean mask, or a float one with -inf on the blocked pairs.")
        return False, ("nn.MultiheadAttention with your attn_mask does not compute what the "
                       "book's layer computes with the original mask. In the book True = may "
                       "attend; what does True mean for nn.MultiheadAttention?")
    return True, "Correct: nn.MultiheadAttention now computes exactly what the book's layer does."


def _ch4_scores_shape() -> tuple[int, ...]:
    from . import mha

    steps = dict(mha.shape_trace(batch=3, seq=10, d_model=512, n_heads=8))
    return next(shape for name, shape in steps.items() if name.startswith("scores"))


@exercise("ch4.scores_shape", "The shape of the scores for x of shape (3, 10, 512), 8 heads",
          reference=_ch4_scores_shape,
          mistakes=lambda: [(3, 10, 10), (3, 8, 10, 64), (3, 10, 8, 10), (3, 10, 512), 80])
def _ch4_scores_shape_check(answer):
    try:
        shape = tuple(int(v) for v in answer)
    except TypeError:
        return False, "Give the shape as a tuple of integers, one per axis."
    if shape == _ch4_scores_shape():
        return True, "Correct: one seq × seq grid of scores per sequence and per head."
    if len(shape) == 3 and shape[1] == shape[2]:
        return False, ("That is one grid per sequence; but each head scores separately. Where "
                       "does the heads axis go?")
    if len(shape) == 4 and shape[1] != 8 and 8 in shape:
        return False, ("The axes are (batch, heads, queries, keys): after transpose(1, 2) the "
                       "heads axis comes right after the batch axis.")
    if len(shape) == 4 and shape[-1] != shape[-2]:
        return False, ("That is the shape of q (or of the context): the scores compare every "
                       "query with every key, so the last two axes are both the sequence.")
    return False, ("Follow the shape trace: q is (batch, heads, seq, d_k) and the scores are "
                   "q @ k.transpose(-2, -1).")


# --- chapter 9 -----------------------------------------------------------------------------

def _ch9_keys_per_query() -> int:
    from . import longctx

    return int(longctx.window_keys(1001, 128)[500])  # a query far from both ends


@exercise("ch9.keys_per_query", "Keys per query in a sliding window with w = 128",
          reference=_ch9_keys_per_query, mistakes=lambda: [128, 256, 129, 2048])
def _ch9_keys_per_query_check(answer):
    value = _number(answer)
    expected = _ch9_keys_per_query()
    if value == expected:
        return True, "Correct: w keys on each side, and the query's own position."
    if value == expected - 1:
        return False, "Almost: a query also attends to its own position (|i − j| = 0)."
    if value == 128 + 1:
        return False, ("That counts one side and the query itself, the causal window. This "
                       "window looks both ways: |i − j| ≤ 128.")
    if value == 128:
        return False, "The condition |i − j| ≤ w allows keys on both sides of the query."
    return False, ("Count the j with |i − j| ≤ 128 for a query i in the middle of a long "
                   "document: how many lie before i, how many after, and i itself?")


def _ch9_crossover(d_model: int = 768) -> int:
    """The n at which attention's FLOPs equal the rest of the block's (n = 6 · d_model)."""
    from . import longctx

    return next(n for n in range(1, 100 * d_model)
                if 2 * longctx.block_flops(n, d_model)["attention"]
                >= sum(longctx.block_flops(n, d_model).values()))


@exercise("ch9.crossover", "At what n does attention take half of a block's FLOPs "
          "(d_model = 768)?", reference=_ch9_crossover, mistakes=lambda: [768, 3072, 1536, 512])
def _ch9_crossover_check(answer):
    value = _number(answer)
    expected = _ch9_crossover()
    if value == expected:
        return True, "Correct: 4n²d = 24nd² gives n = 6d."
    if value == 768:
        return False, ("At n = d_model attention is still a small share. Count both sides: the "
                       "projections (8nd²) and the feed-forward (16nd²) against 4n²d.")
    if value == 4 * 768:
        return False, ("That balances attention against the feed-forward alone; the four "
                       "projections (8nd²) belong to the rest of the block too.")
    return False, ("Set attention's 4n²d equal to the rest, 8nd² + 16nd², and solve for n "
                   "(see longctx.block_flops).")


def _ch9_cache_bytes() -> int:
    from . import kvcache

    return kvcache.cache_bytes(24, 4096, 2048, 2)


@exercise("ch9.cache_bytes", "Bytes of the KV cache: 24 layers, d_model 2048, 4096 tokens, "
          "float16", reference=_ch9_cache_bytes,
          mistakes=lambda: [_ch9_cache_bytes() // 2, _ch9_cache_bytes() * 2,
                            _ch9_cache_bytes() // 24, _ch9_cache_bytes() // 2**20])
def _ch9_cache_bytes_check(answer):
    value = _number(answer)
    expected = _ch9_cache_bytes()
    if value == expected:
        return True, "Correct: 2 · layers · tokens · d_model · bytes per number."
    if value == expected // 2:
        return False, "The cache holds keys AND values: one of each per layer and token."
    if value == expected * 2:
        return False, "float16 takes 2 bytes per number, not 4."
    if value == expected // 24:
        return False, "Every layer has its own keys and values: multiply by the layers."
    if value == expected // 2**20:
        return False, "Answer in bytes, not MiB."
    return False, "Multiply: 2 (K and V) · layers · tokens · d_model · bytes per number."


def _ch9_window_mask(n, w):
    i = np.arange(int(n))[:, None]
    j = np.arange(int(n))[None, :]
    return np.abs(i - j) <= int(w)


@exercise("ch9.window_mask", "Write window_mask(n, w): True where |i − j| ≤ w",
          reference=lambda: _ch9_window_mask,
          mistakes=lambda: [lambda n, w: _ch9_window_mask(n, w - 1),
                            lambda n, w: np.tril(_ch9_window_mask(n, w)),
                            lambda n, w: np.ones((int(n), int(n)), dtype=bool), "mask"])
def _ch9_window_mask_check(func):
    if not callable(func):
        return False, "Pass the function itself (window_mask), not its result."
    for n, w in [(6, 1), (5, 0), (7, 2), (4, 10), (1, 3)]:
        got = call(func, n, w)
        want = _ch9_window_mask(n, w)
        if got.shape != want.shape:
            return False, f"For n = {n} the mask is {n} × {n} (queries × keys); got {got.shape}."
        if np.array_equal(got != 0, want):
            continue
        if np.array_equal(got != 0, _ch9_window_mask(n, w - 1)) and w > 0:
            return False, "Off by one: |i − j| = w is still inside the window (≤, not <)."
        if np.array_equal(got != 0, np.tril(want)):
            return False, ("That is the causal window (keys j ≤ i only); this one looks both "
                           "ways.")
        return False, (f"For n = {n}, w = {w} some cells are wrong: row i must be True exactly "
                       "for the columns i − w … i + w that exist.")
    return True, "Correct."


# --- chapter 10 ----------------------------------------------------------------------------

@exercise("ch10.dilated_keys", "Keys seen by a query: dilated attention, w = 2, r = 3",
          reference=lambda: 2 * 2 + 1, mistakes=lambda: [3, 7, 13, 6])
def _ch10_dilated_keys(answer):
    from . import beyond

    ok = _number(answer) == len(beyond.dilated_offsets(2, 3))
    return ok, ("Correct: 2w + 1, however large r is." if ok else
                "Count the offsets 0, ±r, ±2r, … up to ±w·r: how many are there?")


@exercise("ch10.dilated_reach", "Farthest key of dilated attention, w = 2, r = 3",
          reference=lambda: 6, mistakes=lambda: [2, 3, 5, 12])
def _ch10_dilated_reach(answer):
    from . import beyond

    ok = _number(answer) == int(beyond.dilated_offsets(2, 3).max())
    return ok, ("Correct: dilation multiplies the reach, not the cost." if ok else
                "The offsets are multiples of r, up to w of them on each side.")


@exercise("ch10.linear_state", "Size of φ(K)ᵀV for d_k = d_v = 64 and 10 000 tokens",
          reference=lambda: 64 * 64, mistakes=lambda: [10_000 * 64, 10_000 ** 2, 128, 64])
def _ch10_linear_state(answer):
    value = _number(answer)
    if value in (10_000 * 64, 10_000 ** 2):
        return False, "That grows with the sequence; φ(K)ᵀ has shape (d_k, n), V (n, d_v)."
    ok = value == 64 * 64
    return ok, ("Correct: d_k × d_v, independent of n." if ok else
                "Multiply a (d_k × n) matrix by an (n × d_v) one: what shape comes out?")


def _dilated_mask_reference(n, w, r):
    from . import beyond

    return beyond.dilated_mask(n, w, r).numpy()


@exercise("ch10.dilated_mask", "Write dilated_mask(n, w, r)",
          reference=lambda: _dilated_mask_reference,
          mistakes=lambda: [lambda n, w, r: np.abs(np.subtract.outer(range(n), range(n))) <= w,
                            lambda n, w, r: np.abs(np.subtract.outer(range(n), range(n)))
                            % r == 0, "mask"])
def _ch10_dilated_mask(func):
    if not callable(func):
        return False, "Pass the function itself (dilated_mask), not its result."
    for n, w, r in [(10, 2, 3), (7, 1, 1), (12, 0, 4), (1, 3, 2)]:
        got = call(func, n, w, r)
        want = _dilated_mask_reference(n, w, r).astype(float)
        if got.shape != want.shape:
            return False, f"For n = {n} the mask is {want.shape}; you returned {got.shape}."
        if not np.array_equal(got != 0, want != 0):
            return False, (f"Wrong for n={n}, w={w}, r={r}: a key is allowed when |i − j| is a "
                           "multiple of r and at most w·r.")
    return True, "Correct."


# --- chapter 7: mask traps -----------------------------------------------------------------

def _ch7_keep_cases():
    import torch

    gen = torch.Generator().manual_seed(7)
    keep = (torch.rand(3, 6, generator=gen) < 0.7).to(torch.uint8)
    keep[:, 0] = 1   # every sequence keeps its first token
    return [torch.tensor([[1, 1, 1, 0, 0]], dtype=torch.uint8), keep]


def _ch7_key_padding_reference():
    return lambda keep: keep == 0


@exercise("ch7.key_padding_mask", "From a uint8 'keep' mask to nn.MultiheadAttention's "
          "key_padding_mask", reference=_ch7_key_padding_reference,
          mistakes=lambda: [lambda k: ~k, lambda k: k.bool(), lambda k: (~k).bool(),
                            lambda k: 1 - k, "mask"])
def _ch7_key_padding_mask(func):
    import torch

    if not callable(func):
        return False, "Pass the function itself (to_key_padding_mask), not its result."
    for keep in _ch7_keep_cases():
        out = func(keep.clone())
        if out is None:
            raise NotAnswered
        if not isinstance(out, torch.Tensor):
            return False, f"Return a torch tensor, got {type(out).__name__}."
        if tuple(out.shape) != tuple(keep.shape):
            return False, (f"key_padding_mask has one entry per (sequence, key): shape "
                           f"{tuple(keep.shape)}, got {tuple(out.shape)}.")
        want = keep == 0
        if out.dtype != torch.bool:
            if out.dtype == torch.uint8 and bool((out >= 254).all()):
                return False, ("~ on a uint8 tensor flips all 8 bits: 1 becomes 254 and 0 "
                               "becomes 255, both non-zero. Turn the 0/1 numbers into booleans "
                               "first, then invert.")
            return False, (f"nn.MultiheadAttention refuses a {out.dtype} key_padding_mask "
                           "(only bool, or float that is ADDED to the scores). Return a "
                           "boolean tensor.")
        if torch.equal(out, want):
            continue
        if torch.equal(out, ~want):
            return False, ("That mask is True on the real tokens, and nn.MultiheadAttention "
                           "reads True in key_padding_mask as 'padding, ignore it': it would "
                           "attend only to the padding.")
        if bool(out.all()):
            return False, ("Every entry is True: every key is ignored, so every row is fully "
                           "masked (NaN). Did ~ run on the numbers before .bool()?")
        return False, "True must mark exactly the padding positions (where keep is 0)."
    return True, "Correct: True marks the padding, as nn.MultiheadAttention expects."


@exercise("ch7.left_pad_rows", "Left padding + causal mask: how many query rows see no key?",
          reference=lambda: 4, mistakes=lambda: [0, 3, 7, 1])
def _ch7_left_pad_rows(answer):
    from . import masks

    value = _number(answer)
    allowed = masks.combine(masks.causal_mask(7), masks.padding_mask([3], 7, side="left"))
    want = len(masks.fully_masked_rows(allowed))
    if value == want:
        return True, ("Correct: every padding query comes before the first real token, so the "
                      "causal mask leaves it only padding keys, and those are blocked.")
    if value == 0:
        return False, ("With RIGHT padding no row would be empty. Here the padding comes first: "
                       "what may the very first query (a padding position) attend to?")
    if value == 7:
        return False, ("The real tokens still see themselves and the real tokens before them. "
                       "Count only the rows with nothing left.")
    return False, ("Draw the 7 × 7 grid: allowed = (key ≤ query) AND (key is a real token). "
                   "Count the rows with no allowed cell.")


def _ch7_softmax_reference():
    from . import masktraps

    return lambda scores, allowed: masktraps.masked_weights(scores, allowed, "sdpa")


def _ch7_softmax_cases():
    import torch

    gen = torch.Generator().manual_seed(11)
    scores = 3 * torch.randn(2, 5, 5, generator=gen)
    allowed = torch.rand(2, 5, 5, generator=gen) < 0.6
    allowed[0, 1] = False            # a fully masked row
    allowed[1, 3] = False            # another one
    allowed[0, 2] = True             # a row with every key allowed
    return scores, allowed


def _ch7_softmax_mistakes():
    import torch

    def minus_inf(s, a):
        return torch.softmax(s.masked_fill(~a, float("-inf")), dim=-1)

    def finite(s, a):
        return torch.softmax(s.masked_fill(~a, -1e9), dim=-1)

    def flipped(s, a):
        return torch.softmax(s.masked_fill(a, float("-inf")), dim=-1).nan_to_num(0.0)

    def multiply(s, a):
        return torch.softmax(s, dim=-1) * a

    return [minus_inf, finite, flipped, multiply, 0.5]


@exercise("ch7.masked_softmax", "Write masked_softmax(scores, allowed): zeros, not NaN, for "
          "a row with nothing allowed", reference=_ch7_softmax_reference,
          mistakes=_ch7_softmax_mistakes)
def _ch7_masked_softmax(func):
    import torch

    from . import masktraps

    if not callable(func):
        return False, "Pass the function itself (masked_softmax), not its result."
    scores, allowed = _ch7_softmax_cases()
    out = func(scores.clone(), allowed.clone())
    if out is None:
        raise NotAnswered
    out = torch.as_tensor(out, dtype=torch.float32)
    if tuple(out.shape) != tuple(scores.shape):
        return False, f"Return one weight per score: shape {tuple(scores.shape)}."
    want = masktraps.masked_weights(scores, allowed, "sdpa")
    empty = ~allowed.any(dim=-1)
    if bool(torch.isnan(out).any()):
        return False, ("Some rows are NaN: a row whose keys are all blocked is all -inf, and "
                       "softmax divides 0 by 0 there. Those rows must come out as zeros.")
    if torch.allclose(out[empty], torch.full_like(out[empty], 1 / scores.shape[-1])):
        return False, ("The rows with nothing allowed came out uniform — a finite fill such as "
                       "-1e9 does that, and it makes the query attend to keys it must not see. "
                       "Those rows must be all zeros.")
    if bool((out[~allowed] != 0).any()):
        return False, "A blocked key must get weight exactly 0."
    if not torch.allclose(out, want, atol=1e-6):
        return False, ("The allowed weights of a row must sum to 1 (softmax over the allowed "
                       "keys only), except in a row with nothing allowed.")
    return True, "Correct: exact softmax over the allowed keys, and zeros where none is allowed."


# --- chapter 8: seeing attention -----------------------------------------------------------

_CH8_CACHE: dict = {}


def _ch8_modifier_mass():
    """relation_mass of the shipped model on the held-out orders (computed once)."""
    if "mass" not in _CH8_CACHE:
        from . import attention_roles, train

        _, test = train.default_data()
        stats = attention_roles.relation_mass(train.pretrained(), test)
        _CH8_CACHE["mass"] = {r: s["mass"] for r, s in stats.items()}
    return _CH8_CACHE["mass"]


def _ch8_best_head():
    mass = _ch8_modifier_mass()["ingredient → its modifier"]
    layer, head = np.unravel_index(int(np.argmax(mass)), mass.shape)
    return (int(layer), int(head))


def _ch8_best_head_mistakes():
    mass = _ch8_modifier_mass()
    ing = mass["ingredient → its modifier"]
    dish = mass["dish → its quantity"]
    second = np.unravel_index(int(np.argsort(ing, axis=None)[-2]), ing.shape)
    dish_best = np.unravel_index(int(np.argmax(dish)), dish.shape)
    out = [(0, 0), (int(second[0]), int(second[1])), 3, "layer 1"]
    if tuple(int(v) for v in dish_best) != _ch8_best_head():
        out.append((int(dish_best[0]), int(dish_best[1])))
    return out


@exercise("ch8.best_head", "Which head puts the most weight on an ingredient's modifier?",
          reference=_ch8_best_head, mistakes=_ch8_best_head_mistakes)
def _ch8_best_head_check(answer):
    try:
        layer, head = (int(v) for v in answer)
    except (TypeError, ValueError):
        return False, "Answer with a pair (layer, head), both counted from 0, e.g. (0, 2)."
    mass = _ch8_modifier_mass()
    ing = mass["ingredient → its modifier"]
    if not (0 <= layer < ing.shape[0] and 0 <= head < ing.shape[1]):
        return False, (f"The model has {ing.shape[0]} layers and {ing.shape[1]} heads per "
                       "layer, counted from 0.")
    if (layer, head) == _ch8_best_head():
        return True, (f"Correct: on average it puts {ing[layer, head]:.2f} of an ingredient's "
                      "attention on the modifier of its clause.")
    dish = mass["dish → its quantity"]
    if dish[layer, head] > ing[layer, head] and dish[layer, head] >= 0.5:
        return False, ("That head specialises in dishes looking at their quantity words. Read "
                       "the panel 'ingredient → its modifier'.")
    if layer == 0:
        return False, ("Layer 0's heads spread their weight: none of them puts even half of it "
                       "on the modifier. Look at the other layer.")
    return False, ("That head does look at modifiers, but another one puts more weight on "
                   "them. Compare the numbers in the panel 'ingredient → its modifier'.")


def _ch8_pair_orders():
    from . import orders

    texts = ["一碗牛肉面，不要香菜，多加辣。", "两份招牌炒饭，葱和蒜都不要，辣多放一点。",
             "你好，招牌凉皮要一碗，葱少加，放蒜和麻酱。", "馄饨一份不要香菜，醋多放。"]
    return [orders.Order.from_text(t).tokens for t in texts] + \
        [o.tokens for o in orders.generate(30, seed=8)]


def _ch8_pairs_reference():
    from . import attention_roles, orders

    def modifier_pairs(tokens):
        pairs = attention_roles.relation_pairs(orders.Order.from_tokens(tokens))
        return [(i, keys[0]) for i, keys in pairs["ingredient → its modifier"]]

    return modifier_pairs


def _ch8_pairs_mistakes():
    from . import orders

    def nearest(tokens):   # the nearest modifier anywhere, ignoring the clauses
        mods = [j for j, t in enumerate(tokens) if orders.category(t) == "modifier"]
        return [(i, min(mods, key=lambda j: (abs(j - i), j))) for i, t in enumerate(tokens)
                if orders.category(t) == "ingredient" and mods]

    def swapped(tokens):
        return [(m, i) for i, m in _ch8_pairs_reference()(tokens)]

    def before_only(tokens):   # only a modifier before the ingredient counts
        out = []
        for i, t in enumerate(tokens):
            if orders.category(t) != "ingredient":
                continue
            j = i - 1
            while j >= 0 and tokens[j] not in orders.CLAUSE_END:
                if orders.category(tokens[j]) == "modifier":
                    out.append((i, j))
                    break
                j -= 1
        return out

    return [nearest, swapped, before_only, [(4, 3)]]


@exercise("ch8.modifier_pairs", "Write modifier_pairs(tokens): each ingredient with the "
          "modifier of its clause", reference=_ch8_pairs_reference,
          mistakes=_ch8_pairs_mistakes)
def _ch8_modifier_pairs(func):
    from . import orders

    if not callable(func):
        return False, "Pass the function itself (modifier_pairs), not its result."
    want_func = _ch8_pairs_reference()
    for tokens in _ch8_pair_orders():
        got = func(list(tokens))
        if got is None:
            raise NotAnswered
        try:
            got = sorted((int(a), int(b)) for a, b in got)
        except (TypeError, ValueError):
            return False, "Return a list of (ingredient index, modifier index) pairs."
        want = sorted(want_func(list(tokens)))
        if got == want:
            continue
        text = " ".join(tokens)
        if sorted((b, a) for a, b in got) == want:
            return False, "The pairs are the wrong way round: (ingredient, modifier)."
        if set(got) > set(want) or any(
                orders.category(tokens[b]) == "modifier" and not any(
                    s <= a < e and s <= b < e for s, e in orders.clauses(tokens))
                for a, b in got):
            return False, (f"For '{text}' you pair an ingredient with a modifier from another "
                           "clause. A clause ends at ， or 。 (book.orders.clauses helps).")
        return False, (f"For '{text}' some ingredient misses its modifier: the modifier may "
                       "stand before or after the ingredient, anywhere in the same clause.")
    return True, "Correct: these are the pairs the chapter measures."


def _ch8_entropy_reference():
    def entropy(row):
        p = np.asarray(row, dtype=float)
        nz = p[p > 0]
        return float(-(nz * np.log(nz)).sum())

    return entropy


@exercise("ch8.row_entropy", "Write entropy(row): nats, with 0 · log 0 = 0",
          reference=_ch8_entropy_reference,
          mistakes=lambda: [lambda p: -(p * np.log(p)).sum(),
                            lambda p: -(p[p > 0] * np.log2(p[p > 0])).sum(),
                            lambda p: (p[p > 0] * np.log(p[p > 0])).sum(),
                            lambda p: np.log(len(p)), 1.0])
def _ch8_row_entropy(func):
    if not callable(func):
        return False, "Pass the function itself (entropy), not its result."
    rows = [np.full(4, 0.25), np.array([1.0, 0.0, 0.0]), np.array([0.5, 0.25, 0.25, 0.0]),
            np.array([0.7, 0.2, 0.1])]
    want = _ch8_entropy_reference()
    for row in rows:
        with np.errstate(divide="ignore", invalid="ignore"):
            got = call(func, row)
        if got.size != 1:
            return False, "Return one number per row."
        value, expected = float(got.reshape(())), want(row)
        if not np.isfinite(value):
            return False, ("NaN (or infinity) for a row with a zero: 0 · log 0 is taken as 0, "
                           "so skip the zero weights.")
        if abs(value - expected) < 1e-9:
            continue
        if abs(value + expected) < 1e-9 and expected:
            return False, "The sign: entropy is −Σ p log p, which is never negative."
        if expected and abs(value - expected / np.log(2)) < 1e-9:
            return False, "That is in bits (log base 2); the book measures nats (natural log)."
        return False, f"Wrong for the row {row.tolist()}: compute −Σ p log p over p > 0."
    return True, "Correct: 0 for a one-hot row, log n for a uniform one."


# --- chapter 5: training stability ------------------------------------------------------------

@exercise("ch5.large_rms", "RMS after a 32 → 32 linear layer with N(0, 1) weights",
          reference=lambda: float(np.sqrt(32)), mistakes=lambda: [32, 1, 1 / np.sqrt(32)])
def _ch5_large_rms(answer):
    value = _number(answer)
    if abs(value - 32) < 0.5:
        return False, ("That is the output's variance. The RMS is a standard deviation: take "
                       "the square root.")
    if abs(value - 1 / np.sqrt(32)) < 0.01:
        return False, "The signal grows, it does not shrink: each output adds up 32 products."
    return _close_number(answer, float(np.sqrt(32)), 0.03,
                         "Each output adds up 32 products of a unit-variance weight and a "
                         "unit-variance input; variances of independent terms add.",
                         "Correct: every such layer multiplies the RMS by √32.")


@exercise("ch5.xavier_std", "Standard deviation of Xavier weights in a 32 × 32 layer",
          reference=lambda: float(np.sqrt(2 / 64)),
          mistakes=lambda: [1 / 32, float(np.sqrt(6 / 64)), 1, float(np.sqrt(32))])
def _ch5_xavier_std(answer):
    value = _number(answer)
    if abs(value - 1 / 32) < 1e-3:
        return False, "That is the variance; the question asks for the standard deviation."
    if abs(value - np.sqrt(6 / 64)) < 1e-3:
        return False, ("That is the bound a of xavier_uniform_'s U(-a, a); a uniform "
                       "distribution on (-a, a) has standard deviation a / √3.")
    return _close_number(answer, float(np.sqrt(2 / 64)), 0.02,
                         "Compute the variance 2 / (d_in + d_out) first, then its square root.",
                         "Correct: 1/√32, so a 32-input layer keeps the RMS of its input.")


@exercise("ch5.chance_loss", "Loss of a model that gives all 7 labels the same probability",
          reference=lambda: float(np.log(7)),
          mistakes=lambda: [1 / 7, 7, float(np.log2(7)), 0])
def _ch5_chance_loss(answer):
    value = _number(answer)
    if abs(value - np.log2(7)) < 1e-2:
        return False, "That is in bits (log base 2); cross-entropy in PyTorch uses the natural log."
    if abs(value - 1 / 7) < 1e-3:
        return False, "That is the probability of the right label; the loss is −ln of it."
    return _close_number(answer, float(np.log(7)), 2e-3,
                         "The loss of one token is −ln(probability of its right label); "
                         "what probability does a uniform guess give it?",
                         "Correct: ln 7. A loss that stays near it means nothing was learnt.")


def _ch5_pre_ln(x, sublayer, norm):
    return x + sublayer(norm(x))


def _ch5_modules(seed: int):
    """A seeded LayerNorm with non-trivial affine weights and a small sub-layer."""
    import torch
    from torch import nn

    gen = torch.Generator().manual_seed(seed)
    norm = nn.LayerNorm(6)
    sublayer = nn.Sequential(nn.Linear(6, 6), nn.Tanh())
    with torch.no_grad():
        for p in list(norm.parameters()) + list(sublayer.parameters()):
            p.copy_(torch.randn(p.shape, generator=gen))
    x = 3 * torch.randn(2, 4, 6, generator=gen) + 1
    return x, sublayer, norm


@exercise("ch5.pre_ln", "Write pre_ln(x, sublayer, norm): one Pre-LN residual step",
          reference=lambda: _ch5_pre_ln,
          mistakes=lambda: [lambda x, s, n: n(x + s(x)), lambda x, s, n: s(n(x)),
                            lambda x, s, n: x + n(s(x)), lambda x, s, n: n(x) + s(n(x)), 3])
def _ch5_pre_ln_check(func):
    import torch

    if not callable(func):
        return False, "Pass the function itself (pre_ln), not its result."
    for seed in (0, 1):
        x, sublayer, norm = _ch5_modules(seed)
        with torch.no_grad():
            out = func(x.clone(), sublayer, norm)
            if out is None:
                raise NotAnswered
            out = torch.as_tensor(out)
            if out.shape != x.shape:
                return False, (f"The output must keep the input's shape {tuple(x.shape)}; got "
                               f"{tuple(out.shape)}.")

            def same(y, out=out):
                return bool(torch.allclose(out, y, atol=1e-5))

            if same(norm(x + sublayer(x))):
                return False, ("That is Post-LN, the 2017 paper's order: it normalises the "
                               "residual sum. Pre-LN normalises the sub-layer's input instead.")
            if same(sublayer(norm(x))):
                return False, "The residual connection is missing: add the input x back."
            if same(x + norm(sublayer(x))):
                return False, ("This normalises the sub-layer's output; Pre-LN normalises its "
                               "input, before the sub-layer sees it.")
            if same(norm(x) + sublayer(norm(x))):
                return False, ("Add the sub-layer's output to x itself, not to norm(x): the "
                               "residual stream is never normalised in Pre-LN.")
            if not same(_ch5_pre_ln(x, sublayer, norm)):
                return False, ("Not a Pre-LN step: the sub-layer must see norm(x), and its "
                               "output is added to x.")
    return True, "Correct: the residual stream x passes through untouched, an identity path."


# --- chapter 6: how many heads ----------------------------------------------------------------

def _ch6_max_heads(d_model: int = 128, min_d_k: int = 16) -> int:
    return max(h for h in range(1, d_model + 1) if d_model % h == 0 and d_model // h >= min_d_k)


@exercise("ch6.max_heads", "d_model = 128: the most heads that keep d_k ≥ 16",
          reference=_ch6_max_heads, mistakes=lambda: [16, 128 * 16, 4, 7])
def _ch6_max_heads_check(answer):
    value = _number(answer)
    expected = _ch6_max_heads()
    if value == expected:
        return True, "Correct: 8 heads of 16 dimensions, the article's own configuration."
    if value == 16:
        return False, "16 is the minimum width d_k; the question asks for the number of heads."
    if value > 128:
        return False, "The heads share d_model: d_k = d_model / heads, not d_model × heads."
    if value < expected and 128 % value == 0:
        return False, "That keeps d_k ≥ 16, but a larger head count does too."
    return False, ("d_k = d_model / heads must be at least 16, and the number of heads must "
                   "divide d_model evenly.")


def _ch6_parameters() -> int:
    from . import heads

    return heads.attention_parameters(64, 16)


@exercise("ch6.parameters", "Parameters of MultiHeadSelfAttention(64, 16)",
          reference=_ch6_parameters,
          mistakes=lambda: [4 * 64 * 64, 16 * 4 * (4 * 4 + 4), 16 * 4 * (64 * 64 + 64),
                            3 * (64 * 64 + 64)])
def _ch6_parameters_check(answer):
    value = _number(answer)
    expected = _ch6_parameters()
    if value == expected:
        return True, "Correct, and the same number with 1, 4 or 64 heads."
    if value == 4 * 64 * 64:
        return False, "Close: each of the four linear maps has a bias of 64 numbers too."
    if value == 3 * (64 * 64 + 64):
        return False, "Don't forget the output projection W_O: four linear maps in all."
    if value > expected:
        return False, ("The heads do not own separate full-size matrices: they share the "
                       "four d_model × d_model maps, each head using d_k of their columns.")
    return False, ("Count the linear maps W_Q, W_K, W_V and W_O: each is d_model × d_model "
                   "plus a bias of d_model.")


def _ch6_js(p, q):
    from . import heads

    return float(heads.js_divergence(p, q))


def _ch6_js_mistakes():
    def kl(p, q):
        p, q = np.asarray(p, float), np.asarray(q, float)
        keep = p > 0
        with np.errstate(divide="ignore"):
            return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))

    def bits(p, q):
        return _ch6_js(p, q) / np.log(2)

    def symmetric_kl(p, q):
        return 0.5 * (kl(p, q) + kl(q, p))

    return [kl, bits, symmetric_kl, lambda p, q: float(np.abs(np.subtract(p, q)).sum()), 0.5]


@exercise("ch6.js", "Write js_divergence(p, q) in nats", reference=lambda: _ch6_js,
          mistakes=_ch6_js_mistakes)
def _ch6_js_check(func):
    if not callable(func):
        return False, "Pass the function itself (js_divergence), not its result."
    cases = [([0.5, 0.5], [0.5, 0.5]), ([1.0, 0.0], [0.0, 1.0]), ([0.7, 0.2, 0.1], [0.1, 0.3, 0.6]),
             ([0.25, 0.25, 0.5, 0.0], [0.0, 0.5, 0.25, 0.25]), ([1.0, 0.0, 0.0], [0.2, 0.3, 0.5])]
    for p, q in cases:
        got = float(call(func, p, q).reshape(()))
        want = _ch6_js(p, q)
        if np.isclose(got, want, atol=1e-9):
            continue
        if not np.isfinite(got):
            return False, (f"Your answer is infinite or NaN for p = {p}, q = {q}: compare "
                           "each distribution with the mixture m, which is positive wherever p "
                           "or q is, and skip the terms where a_i = 0.")
        if np.isclose(got, want / np.log(2), atol=1e-9):
            return False, "That is in bits (log base 2); use the natural log for nats."
        if not np.isclose(float(call(func, q, p).reshape(())), got, atol=1e-9):
            return False, ("Your function is not symmetric: JS(p, q) must equal JS(q, p). "
                           "Compare both distributions with their mixture m = (p + q) / 2.")
        return False, (f"Wrong for p = {p}, q = {q}. Build m = (p + q) / 2, then average "
                       "KL(p‖m) and KL(q‖m).")
    return True, "Correct: 0 for equal rows, ln 2 for rows with no word in common."
