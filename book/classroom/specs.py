"""The graded cases of each assignment: inputs, which function, how to compare, points.

These are the hidden tests, kept as data on the teacher's side (never in a student notebook,
never inside a sandbox). Each assignment has a builder that draws fresh inputs from a seeded
generator (a new random seed per grading batch by default, so a table of answers to known
inputs earns nothing), sends only the inputs into the sandbox, and keeps the checker: a
function of the returned output that computes the reference with the book's own code *here*,
in the teacher's process, and says what is wrong. Every question has one public case, the
shape/format check students also run with ``grader.check`` (at most 10 % of its points); the
rest of its points come from hidden cases.

Marks are fair to honest answers and give nothing to guessed ones:

- a case whose answer can be guessed without solving the task (``predictable``: a degenerate
  input such as n = 1, no tokens or one key/value head, or fixed inputs whose answer is known)
  carries no points of its own: it belongs to a ``group`` with a freshly drawn case, and the
  group's points are earned only when every case in it is right. So a constant or shape-only
  answer (all-True mask, zeros, the input returned, a fixed number) earns at most the public
  check's points; :mod:`book.classroom.fairness` measures it.
- nothing in the assignments asks for float64, so floats are compared with a tolerance that a
  correct answer computed in float32 meets (:data:`FLOAT32_RTOL`, :data:`FLOAT32_ATOL`), and the
  detail of a failed comparison says so; hidden inputs keep attention unsaturated, so that an
  answer which ignores the scores cannot pass within that tolerance by luck.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .feedback import Text as say
from .runner import encode


@dataclass(frozen=True)
class Case:
    """One graded call. ``check(output)`` returns None when right, else why it is wrong.

    Cases of a question with the same non-empty ``group`` are scored together: their points
    count only when all of them are right. A ``predictable`` case (see the module docstring)
    has 0 points and a group.
    """

    question: str
    name: str
    points: float
    public: bool
    function: str
    args: list
    check: Callable[[object], str | None]
    recipe: str = "call"              # "call": function(*args); "module": see runner.py
    init: list = field(default_factory=list)
    state: dict = field(default_factory=dict)
    tensor_args: bool = False         # send args as torch tensors
    group: str = ""                   # scored together with the question's same-group cases
    predictable: bool = False         # its answer can be guessed: no points of its own

    def wire(self, index: int, seconds: float) -> dict:
        """The JSON-ready form sent into the sandbox: inputs only, no reference, no points."""
        return {"id": index, "function": self.function, "recipe": self.recipe,
                "args": [encode(a, tensor=self.tensor_args) for a in self.args],
                "init": [encode(a) for a in self.init],
                "state": {k: encode(v, tensor=True) for k, v in self.state.items()},
                "seconds": seconds}


@dataclass(frozen=True)
class Assignment:
    stem: str                          # file stem of the instructor notebook
    name: str                          # otter assignment name, stored in student metadata
    build: Callable[[np.random.Generator], list[Case]]

    def cases(self, seed: int) -> list[Case]:
        return self.build(np.random.default_rng([seed, sum(self.stem.encode())]))

    def questions(self, seed: int = 0) -> dict[str, float]:
        out: dict[str, float] = {}
        for case in self.cases(seed):
            out[case.question] = out.get(case.question, 0) + case.points
        return out


# ---- comparisons (trusted side) --------------------------------------------------------------

OUTPUT = say("classroom.what_output")
BYTES = say("classroom.what_bytes")
MASK = say("classroom.what_mask")


def _array(output, shape=None, what=OUTPUT):
    if isinstance(output, list):
        raise _Wrong(say("classroom.sequence_not_array", what=what, n=len(output)))
    if output is None or isinstance(output, str):
        raise _Wrong(say("classroom.none_not_array" if output is None
                         else "classroom.string_not_array", what=what))
    arr = np.asarray(output)
    if shape is not None and arr.shape != tuple(shape):
        raise _Wrong(say("classroom.wrong_shape", what=what, got=arr.shape,
                          expected=tuple(shape)))
    return arr


class _Wrong(Exception):
    pass


def _checker(body: Callable[[object], None]) -> Callable[[object], str | None]:
    def check(output):
        try:
            body(output)
        except _Wrong as wrong:
            return wrong.args[0]
        except (TypeError, ValueError) as error:
            return say("classroom.not_comparable", error=str(error))
        return None
    return check


# A correct answer computed in float32 passes: its error is a few float32 roundings (~1e-7
# relative) of each intermediate, except where the inputs are large: scores near 1000 are
# rounded to float32 by up to 3e-5, which moves a softmax weight p by up to
# p(1 - p) * 6e-5 <= 1.5e-5 (measured: 1.2e-5), a quarter of what is accepted there.
# Mistakes (no scaling, the wrong axis, a mask ignored) differ by a hundredth or more.
FLOAT32_RTOL = 1e-4
FLOAT32_ATOL = 1e-5


def close_to(expected, *, rtol: float = FLOAT32_RTOL, atol: float = FLOAT32_ATOL,
             what: str = OUTPUT):
    expected = np.asarray(expected)

    def body(output):
        arr = _array(output, expected.shape, what)
        if not np.all(np.isfinite(arr.astype(float))):
            raise _Wrong(say("classroom.not_finite", what=what))
        if not np.allclose(arr.astype(float), expected.astype(float), rtol=rtol, atol=atol):
            largest = np.max(np.abs(arr.astype(float) - expected.astype(float)))
            raise _Wrong(say("classroom.differs_by", what=what, largest=largest, rtol=rtol,
                             atol=atol))
    return _checker(body)


def equal_to(expected, what: str = OUTPUT):
    expected = np.asarray(expected)

    def body(output):
        arr = _array(output, expected.shape, what)
        if expected.dtype == bool and arr.dtype != bool:
            raise _Wrong(say("classroom.dtype_not_bool", what=what, dtype=str(arr.dtype)))
        if not np.array_equal(arr, expected):
            raise _Wrong(say("classroom.differs", what=what))
    return _checker(body)


def shaped(shape, dtype=None, what: str = OUTPUT):
    def body(output):
        arr = _array(output, shape, what)
        if dtype is not None and arr.dtype != dtype:
            raise _Wrong(say("classroom.wrong_dtype", what=what, dtype=str(arr.dtype),
                             expected=str(np.dtype(dtype))))
    return _checker(body)


def pair(first, second):
    """Both parts of a returned ``(output, weights)`` pair must pass their checks."""
    def check(output):
        if not isinstance(output, list) or len(output) != 2:
            return say("classroom.expected_pair")
        return first(output[0]) or second(output[1])
    return check


def all_of(*checks):
    def check(output):
        return next((why for why in (c(output) for c in checks) if why), None)
    return check


# ---- assignment 1: attention in numpy -------------------------------------------------------

def _assignment_1(rng: np.random.Generator) -> list[Case]:
    from book.ideas.attention import scaled_dot_product_attention, softmax
    from book.ideas.masks import causal_mask

    cases = []
    q = "q1_softmax"
    x0 = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    cases.append(Case(q, say("classroom.case_rows_sum"), 1, True, "softmax", [x0],
                      close_to(softmax(x0), atol=1e-6)))
    x1 = rng.normal(scale=5.0, size=(3, 4, 7))
    cases.append(Case(q, say("classroom.case_3d_input"),
                      5, False, "softmax", [x1], close_to(softmax(x1))))
    x2 = np.array([[1000.0, 999.0, -1000.0]]) + rng.normal(size=(2, 3))
    cases.append(Case(q, say("classroom.case_large_scores"),
                      4, False, "softmax", [x2], close_to(softmax(x2))))

    q = "q2_attention"
    Q, K, V = rng.normal(size=(2, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 5))
    cases.append(Case(q, say("classroom.case_shapes"), 1, True, "attention", [Q, K, V],
                      pair(shaped((2, 5)), shaped((2, 3)))))
    Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 3))
    out, w = scaled_dot_product_attention(Q, K, V)
    cases.append(Case(q, say("classroom.case_no_mask"), 4, False, "attention", [Q, K, V],
                      pair(close_to(out), close_to(w, what=say("classroom.what_weights")))))
    n = int(rng.integers(4, 8))
    Q, K, V = rng.normal(size=(n, 4)), rng.normal(size=(n, 4)), rng.normal(size=(n, 2))
    mask = causal_mask(n).numpy()
    out, w = scaled_dot_product_attention(Q, K, V, mask)
    cases.append(Case(q, say("classroom.case_causal_mask"), 5, False, "attention", [Q, K, V, mask],
                      pair(close_to(out), close_to(w, what=say("classroom.what_weights")))))

    q = "q3_causal_mask"
    cases.append(Case(q, say("classroom.case_3x3_boolean"), 1, True, "causal_mask", [3],
                      shaped((3, 3), bool)))
    # n = 1 is right for any True: it only counts together with a drawn size
    for points, n, group in ((0, 1, "small"), (4, int(rng.integers(4, 9)), "small"),
                             (5, int(rng.integers(9, 17)), "")):
        cases.append(Case(q, f"n={n}", points, False, "causal_mask", [n],
                          equal_to(causal_mask(n).numpy()), group=group,
                          predictable=n == 1))
    return cases


# ---- assignment 2: multi-head attention in PyTorch -----------------------------------------

def _assignment_2(rng: np.random.Generator) -> list[Case]:
    import torch

    from book.ideas.masks import causal_mask, to_torch_attn_mask
    from book.ideas.mha import MultiHeadSelfAttention, from_torch_mha

    cases = []
    q = "q1_split_heads"
    cases.append(Case(q, say("classroom.case_shape"),
                      1, True, "split_heads", [np.zeros((2, 5, 8)), 4],
                      shaped((2, 4, 5, 2)), tensor_args=True))
    for points, (b, t, d, h) in zip((5, 4), ((2, 3, 8, 4), (3, 5, 12, 3)), strict=True):
        x = rng.normal(size=(b, t, d))
        expected = MultiHeadSelfAttention(d, h).split_heads(torch.from_numpy(x)).numpy()
        cases.append(Case(q, say("classroom.case_split", b=b, t=t, d=d, h=h),
                          points, False, "split_heads",
                          [x, h], close_to(expected), tensor_args=True))

    q = "q2_module"
    cases.append(Case(q, say("classroom.case_output_shape"), 1, True, "MultiHeadAttention",
                      [rng.normal(size=(2, 4, 8))], shaped((2, 4, 8)), recipe="module",
                      init=[8, 2], state=_random_state(rng, 8), tensor_args=True))
    for points, (h, t, masked) in zip((4, 5), ((2, 5, False), (4, 6, True)), strict=True):
        torch.manual_seed(int(rng.integers(2**31)))
        reference = torch.nn.MultiheadAttention(8, h, batch_first=True).double()
        state = {k: v.numpy() for k, v in from_torch_mha(reference).state_dict().items()}
        x = rng.normal(size=(3, t, 8))
        args, attn = [x], None
        if masked:
            mask = causal_mask(t)
            args, attn = [x, mask.numpy()], to_torch_attn_mask(mask)
        xt = torch.from_numpy(x)
        with torch.no_grad():
            expected = reference(xt, xt, xt, attn_mask=attn, need_weights=False)[0].numpy()
        name = say("classroom.case_heads_causal" if masked else "classroom.case_heads", h=h)
        cases.append(Case(q, name, points, False, "MultiHeadAttention", args, close_to(expected),
                          recipe="module", init=[8, h], state=state, tensor_args=True))
    return cases


def _random_state(rng: np.random.Generator, d: int) -> dict:
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = rng.normal(scale=d ** -0.5, size=(d, d))
        state[f"{name}.bias"] = rng.normal(scale=0.1, size=(d,))
    return state


# ---- assignment 3: decoding with a KV cache ------------------------------------------------

def _assignment_3(rng: np.random.Generator) -> list[Case]:
    from book.ideas.kvcache import KVCache, cache_bytes, causal_self_attention

    cases = []
    q = "q1_attend"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "attend",
                      [np.ones(4), np.ones((3, 4)), np.ones((3, 2))], shaped((2,))))
    cache = KVCache(4, 3)
    for _ in range(6):
        cache.append(rng.normal(size=4), rng.normal(size=3))
    query = rng.normal(size=4) * 10
    cases.append(Case(q, say("classroom.case_large_query"), 9, False, "attend",
                      [query, cache.keys.copy(), cache.values.copy()],
                      close_to(cache.attend(query))))

    q = "q2_decode"
    W = [rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 3))]
    cases.append(Case(q, say("classroom.case_shape"),
                      1, True, "decode", [rng.normal(size=(5, 6)), *W],
                      shaped((5, 3))))
    # weights of scale 1/sqrt(d_model): scores of order 1, attention far from one-hot, so
    # answers that ignore the scores (the values alone, their running mean) are wrong
    W = [rng.normal(scale=6 ** -0.5, size=(6, k)) for k in (4, 4, 5)]
    for points, n, group in ((0, 1, "short"), (4, 2, "short"),
                             (5, int(rng.integers(12, 20)), "")):
        X = rng.normal(size=(n, 6))
        cases.append(Case(q, say("classroom.case_tokens", n=n), points, False, "decode", [X, *W],
                          close_to(causal_self_attention(X, *W)), group=group,
                          predictable=n == 1))

    q = "q3_cache_bytes"
    cases.append(Case(q, say("classroom.case_one_number"), 1, True, "cache_bytes", [1, 1, 1, 1],
                      _number(2)))

    def drawn():
        return (int(rng.integers(2, 48)), int(rng.integers(64, 8192)),
                int(rng.integers(64, 4096)), int(rng.choice([1, 2, 4])))

    # a known shape (2 GiB) and no tokens at all (0 bytes) are guessable: each only counts
    # together with a drawn configuration
    for points, args, group in ((0, (32, 4096, 4096, 2), "a"), (4, drawn(), "a"),
                                (5, drawn(), "b"), (0, (1, 0, 8, 4), "b")):
        cases.append(Case(q, f"{args}", points, False, "cache_bytes", list(args),
                          _number(cache_bytes(*args)), group=group, predictable=points == 0))
    return cases


def _number(expected: int, what: str = BYTES):
    def body(output):
        if isinstance(output, (list, str)) or output is None:
            raise _Wrong(say("classroom.expected_number"))
        value = np.asarray(output)
        if value.shape != () or value != expected:
            raise _Wrong(say("classroom.differs", what=what))
    return _checker(body)


# ---- assignment 4: grouped-query attention with a KV cache ----------------------------------

def _gqa_reference(q, k, v, causal: bool) -> np.ndarray:
    """torch's own kernel with enable_gqa (query head i reads key/value head i // group)."""
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        out = F.scaled_dot_product_attention(
            torch.from_numpy(q)[None], torch.from_numpy(k)[None], torch.from_numpy(v)[None],
            is_causal=causal, enable_gqa=True)
    return out[0].numpy()


def _assignment_4(rng: np.random.Generator) -> list[Case]:
    from book.ideas.gqa import kv_cache_bytes, kv_head_of

    cases = []
    q = "q1_kv_head"
    cases.append(Case(q, say("classroom.case_in_range"),
                      1, True, "kv_head", [5, 8, 2], _in_range(2)))
    # (0, 4, 4) and (7, 8, 1) are right for `return 0` (and the first for `return query_head`):
    # they count only with a drawn head whose answer is neither. The drawn heads of group "b"
    # have different answers, none 0, none n_kv_heads - 1, none the head itself.
    h_b1 = int(rng.integers(4, 28))                   # of 32 heads, 8 kv heads: answer 1 … 6
    h_b2 = int(rng.choice([h for h in range(8, 24) if h // 8 != h_b1 // 4]))  # answer 1 or 2
    triples = [(0, 4, 4, "a", True), (7, 8, 1, "a", True),
               (int(rng.integers(4, 12)), 12, 3, "a", False),  # answer 1 or 2
               (h_b1, 32, 8, "b", False), (h_b2, 32, 4, "b", False)]
    for points, (h, n, g, group, predictable) in zip((0, 0, 4, 3, 2), triples, strict=True):
        cases.append(Case(q, say("classroom.case_head_of", h=h, n=n, g=g), points, False, "kv_head",
                          [h, n, g], _number(kv_head_of(h, n, g), say("classroom.what_head_index")),
                          group=group, predictable=predictable))

    def qkv(n_heads, n_kv, T, d):
        return (rng.normal(size=(n_heads, T, d)), rng.normal(size=(n_kv, T, d)),
                rng.normal(size=(n_kv, T, d)))

    q = "q2_gqa_attention"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "gqa_attention",
                      [np.ones((4, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 2))],
                      shaped((4, 3, 2))))
    for points, (h, g, T, causal) in zip((2, 2, 3, 2), ((4, 4, 5, False), (4, 1, 6, False),
                                                        (8, 2, 7, True), (6, 3, 4, True)),
                                         strict=True):
        args = qkv(h, g, T, 4)
        cases.append(Case(q, say("classroom.case_gqa_causal" if causal else "classroom.case_gqa",
                              h=h, g=g), points, False, "gqa_attention",
                          [*args, causal], close_to(_gqa_reference(*args, causal))))

    q = "q3_decode"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "decode",
                      list(qkv(4, 2, 5, 2)), shaped((4, 5, 2))))
    # one token: the values themselves are right; it counts only with the 6-token case
    shapes = ((2, 2, 1, "short"), (4, 1, 6, "short"), (8, 2, int(rng.integers(9, 16)), ""))
    for points, (h, g, T, group) in zip((0, 5, 4), shapes, strict=True):
        args = qkv(h, g, T, 4)
        cases.append(Case(q, say("classroom.case_gqa_decode", T=T, h=h, g=g), points, False,
                          "decode", list(args), close_to(_gqa_reference(*args, True)),
                          group=group, predictable=T == 1))

    q = "q4_cache_bytes"
    cases.append(Case(q, say("classroom.case_one_number"), 1, True, "cache_bytes", [1, 1, 1, 1, 1],
                      _number(2)))

    def drawn():
        return (int(rng.integers(2, 48)), int(rng.integers(64, 8192)),
                int(rng.choice([1, 2, 8])), int(rng.choice([64, 128])),
                int(rng.choice([1, 2, 4])))

    # a Llama-style shape (exactly 1 GiB) and no tokens (0 bytes) are guessable: each only
    # counts together with a drawn configuration
    configs = [(0, (32, 8192, 8, 128, 2), "a"), (4, drawn(), "a"), (5, drawn(), "b"),
               (0, (1, 0, 4, 64, 4), "b")]
    for points, args, group in configs:
        cases.append(Case(q, f"{args}", points, False, "cache_bytes", list(args),
                          _number(kv_cache_bytes(*args)), group=group,
                          predictable=points == 0))
    return cases


def _in_range(n_kv_heads: int):
    def body(output):
        if isinstance(output, (list, str, bool)) or output is None:
            raise _Wrong(say("classroom.expected_integer"))
        value = np.asarray(output)
        if value.shape != () or not 0 <= value < n_kv_heads:
            raise _Wrong(say("classroom.index_range", last=n_kv_heads - 1))
    return _checker(body)



# ---- assignment 5: why the scores are divided by √d_k --------------------------------------

def _softmax_torch(scores) -> np.ndarray:
    import torch

    return torch.softmax(torch.from_numpy(np.asarray(scores, dtype=float)), -1).numpy()


def _assignment_5(rng: np.random.Generator) -> list[Case]:
    import torch

    from book.ideas.attention import entropy, softmax

    cases = []
    q = "q1_variance"
    cases.append(Case(q, say("classroom.case_numbers"), 1, True, "dot_variance",
                      [np.ones((3, 4)), np.ones((3, 4))], _scalar()))
    # entries of standard deviation ≠ 1: an answer that returns d_k (the unit-variance rule)
    # is wrong; the variance divides by n (numpy's default), as the question says
    for points, n in zip((3, 2), (40, int(rng.integers(60, 120))), strict=True):
        d_k, sq, sk = int(rng.integers(8, 64)), rng.uniform(0.3, 0.8), rng.uniform(1.3, 2.5)
        Q, K = rng.normal(scale=sq, size=(n, d_k)), rng.normal(scale=sk, size=(n, d_k))
        cases.append(Case(q, say("classroom.case_pairs", n=n, d_k=d_k),
                          points, False, "dot_variance", [Q, K],
                          close_to(np.sum(Q * K, axis=-1).var(),
                                   what=say("classroom.what_variance"))))
    for points in (2, 2):
        d_k, sq, sk = int(rng.integers(2, 512)), rng.uniform(0.2, 0.9), rng.uniform(1.1, 3.0)
        cases.append(Case(q, say("classroom.case_predicted", d_k=d_k),
                          points, False, "predicted_variance",
                          [d_k, float(sq), float(sk)], close_to(d_k * sq**2 * sk**2,

                                                                          what=say("classroom.what_variance"))))

    q = "q2_scores"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "scaled_scores",
                      [np.ones((2, 3, 4)), np.ones((2, 4, 5))], shaped((2, 3, 5))))
    # d_k differs from n_k, so dividing by the wrong axis's size is wrong
    for points, (h, n_q, d_k, n_k) in zip((4, 5), ((2, 3, 16, 5), (4, 6, 8, 11)), strict=True):
        q_, k = rng.normal(size=(h, n_q, d_k)), rng.normal(size=(h, n_k, d_k))
        expected = (torch.from_numpy(q_) @ torch.from_numpy(k).transpose(-2, -1)
                    / np.sqrt(d_k)).numpy()
        cases.append(Case(q, say("classroom.case_scores", h=h, d_k=d_k, n_k=n_k), points, False,
                          "scaled_scores", [q_, np.ascontiguousarray(k.transpose(0, 2, 1))],
                          close_to(expected)))

    q = "q3_saturation"
    cases.append(Case(q, say("classroom.case_shapes"), 1, True, "saturation", [np.zeros((2, 3, 4))],
                      pair(shaped((2, 3)), shaped((2, 3)))))
    moderate = rng.normal(scale=2.0, size=(3, 5, 8))
    # large scores (exp overflows without subtracting the row's maximum) and masked keys
    offset = rng.uniform(700, 1000, size=(6, 1))
    large = rng.normal(scale=3.0, size=(6, 9)) + offset
    large[rng.random(size=large.shape) < 0.3] = -np.inf
    large[:, int(rng.integers(9))] = offset[:, 0]           # never a whole row masked
    for points, scores, name in ((4, moderate, say("classroom.case_3d_scores")),
                                 (5, large, say("classroom.case_large_masked"))):
        p = softmax(scores)
        cases.append(Case(q, name, points, False, "saturation", [scores],
                          pair(close_to(p.max(axis=-1), what=say("classroom.what_largest")),
                               close_to(entropy(p) / np.log(2),
                                        what=say("classroom.what_entropies")))))

    q = "q4_backward"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "softmax_backward",
                      [np.zeros((3, 4)), np.ones((3, 4))], shaped((3, 4))))
    for points, shape in zip((4, 5), ((5, 7), (2, 4, 6)), strict=True):
        z, g = rng.normal(scale=1.5, size=shape), rng.normal(size=shape)
        zt = torch.from_numpy(z).requires_grad_(True)
        torch.softmax(zt, -1).backward(torch.from_numpy(g))   # autograd, here
        cases.append(Case(q, say("classroom.case_shape_of", shape=shape),
                          points, False, "softmax_backward", [z, g],
                          close_to(zt.grad.numpy())))
    return cases


def _scalar(what: str = OUTPUT):
    def body(output):
        if isinstance(output, (list, str)) or output is None:
            raise _Wrong(say("classroom.not_one_number", what=what))
        if np.asarray(output).shape != ():
            raise _Wrong(say("classroom.shape_not_number", what=what,
                             got=np.asarray(output).shape))
    return _checker(body)


# ---- assignment 6: a stuck run, Pre-norm and Post-norm blocks ------------------------------

def _rms_norm(x, gain, eps=1e-6):
    return x / (x.pow(2).mean(dim=-1, keepdim=True) + eps).sqrt() * gain


def _block(x, W1, W2, gain, pre_norm: bool):
    import torch

    if pre_norm:
        return x + torch.relu(_rms_norm(x, gain) @ W1) @ W2
    return _rms_norm(x + torch.relu(x @ W1) @ W2, gain)


def _gradient_norms(x, target, W1, W2, gain, pre_norm: bool) -> np.ndarray:
    import torch

    W1 = torch.from_numpy(W1).requires_grad_(True)
    h = torch.from_numpy(x)
    for layer in range(len(W1)):
        h = _block(h, W1[layer], torch.from_numpy(W2[layer]), torch.from_numpy(gain[layer]),
                   pre_norm)
    (h - torch.from_numpy(target)).pow(2).mean().backward()
    return W1.grad.flatten(1).norm(dim=1).numpy()


def _stuck_run(rng: np.random.Generator, n_steps: int, n_layers: int) -> np.ndarray:
    """Per-layer gradient norms of a run whose lower layers stop learning: layer l decays
    geometrically from its own start, lower layers faster; the top layers never collapse."""
    start = rng.uniform(0.5, 2.0, size=n_layers)
    rates = np.sort(rng.uniform(0.0, 0.25, size=n_layers))[::-1]
    rates[-2:] = 0.0
    steps = np.arange(n_steps)[:, None]
    noise = np.exp(rng.normal(scale=0.1, size=(n_steps, n_layers)))
    noise[0] = 1.0
    return start * np.exp(-rates * steps) * noise


def _collapse_steps(grad_norms: np.ndarray, fraction: float) -> np.ndarray:
    out = []
    for column in grad_norms.T:
        below = np.nonzero(column < fraction * column[0])[0]
        out.append(int(below[0]) if len(below) else -1)
    return np.array(out)


def _assignment_6(rng: np.random.Generator) -> list[Case]:
    import torch

    cases = []
    q = "q1_collapse"
    cases.append(Case(q, say("classroom.case_shape"),
                      1, True, "collapse_steps", [np.ones((5, 3)), 0.5],
                      shaped((3,)), tensor_args=True))
    for points, (n_steps, n_layers, fraction) in zip(
            (3, 3, 3), ((30, 4, 0.1), (int(rng.integers(40, 80)), 6, 0.05), (50, 8, 0.3)),
            strict=True):
        norms = _stuck_run(rng, n_steps, n_layers)
        cases.append(Case(q, say("classroom.case_collapse", n_steps=n_steps, n_layers=n_layers,
                              fraction=fraction),
                          points, False, "collapse_steps", [norms, fraction],
                          equal_to(_collapse_steps(norms, fraction), say("classroom.what_steps")),
                          tensor_args=True))

    def weights(d, h, layers=None, std=None):
        lead = () if layers is None else (layers,)
        std = (2 / (d + h)) ** 0.5 if std is None else std
        return (rng.normal(scale=std, size=(*lead, d, h)),
                rng.normal(scale=std, size=(*lead, h, d)), rng.uniform(0.5, 1.5, size=(*lead, d)))

    q = "q2_blocks"
    cases.append(Case(q, say("classroom.case_shapes"), 1, True, "pre_norm_block",
                      [np.ones((2, 3, 4)), np.ones((4, 6)), np.ones((6, 4)), np.ones(4)],
                      shaped((2, 3, 4)), tensor_args=True))
    x = rng.normal(loc=0.5, scale=2.0, size=(3, 5, 8))
    gain = rng.uniform(0.5, 1.5, size=8)
    cases.append(Case(q, "rms_norm", 3, False, "rms_norm", [x, gain],
                      close_to(_rms_norm(torch.from_numpy(x), torch.from_numpy(gain)).numpy()),
                      tensor_args=True))
    for points, pre in ((3, True), (3, False)):
        x = rng.normal(loc=0.3, size=(4, 6, 8))
        W1, W2, gain = weights(8, 12)
        expected = _block(*(torch.from_numpy(a) for a in (x, W1, W2, gain)), pre).numpy()
        cases.append(Case(q, say("classroom.case_pre_norm" if pre else "classroom.case_post_norm"),
                          points, False,
                          "pre_norm_block" if pre else "post_norm_block", [x, W1, W2, gain],
                          close_to(expected), tensor_args=True))

    q = "q3_gradients"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "layer_gradient_norms",
                      [np.ones((5, 4)), np.zeros((5, 4)), np.ones((3, 4, 6)) / 10,
                       np.ones((3, 6, 4)) / 10, np.ones((3, 4)), True],
                      shaped((3,)), tensor_args=True))
    for points, (layers, pre, std) in zip((3, 3, 3), ((4, True, None), (4, False, None),
                                                      (int(rng.integers(6, 10)), False, 1.0)),
                                          strict=True):
        x, target = rng.normal(size=(16, 8)), rng.normal(size=(16, 8))
        W1, W2, gain = weights(8, 12, layers, std)
        expected = _gradient_norms(x, target, W1, W2, gain, pre)
        cases.append(Case(q, say(f"classroom.case_{'pre' if pre else 'post'}_layers"
                              + ("_large" if std else ""), layers=layers), points, False,
                          "layer_gradient_norms", [x, target, W1, W2, gain, pre],
                          close_to(expected,
                                   what=say("classroom.what_gradient_norms")), tensor_args=True))
    return cases


# ---- assignment 7: masks in two conventions ------------------------------------------------

def _additive(allowed: np.ndarray):
    """An additive mask must be 0.0 exactly where allowed and -inf exactly where blocked."""
    allowed = np.asarray(allowed, dtype=bool)

    def body(output):
        arr = _array(output, allowed.shape, MASK).astype(float)
        if not np.all((arr == 0) | np.isneginf(arr)):
            raise _Wrong(say("classroom.mask_values"))
        if not np.array_equal(arr == 0, allowed):
            raise _Wrong(say("classroom.mask_entries"))
    return _checker(body)


def _masked_reference(Q, K, V, allowed) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence and query: the book's attention on the allowed keys, zeros for a row that
    allows none (the book's own function refuses such a row, rightly)."""
    from book.ideas.attention import scaled_dot_product_attention

    out = np.zeros((*Q.shape[:2], V.shape[-1]))
    weights = np.zeros(allowed.shape)
    for b in range(len(Q)):
        for i in range(Q.shape[1]):
            if allowed[b, i].any():
                o, w = scaled_dot_product_attention(Q[b, i:i + 1], K[b], V[b],
                                                    allowed[b, i:i + 1])
                out[b, i], weights[b, i] = o[0], w[0]
    return out, weights


def _assignment_7(rng: np.random.Generator) -> list[Case]:
    from book.ideas.masks import padding_mask

    def blocked(lengths, n_q, n_k):
        keys = ~padding_mask(lengths, n_k, side="left").numpy()      # book: True = real
        return np.repeat(keys[:, None, :], n_q, axis=1)

    def causal_allowed(n_q, n_k):
        return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)

    cases = []
    q = "q1_padding"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "key_padding_blocked",
                      [np.array([2, 3]), 4, 3], shaped((2, 4, 3), bool)))
    for points, (batch, n_q, n_k) in zip((3, 3, 3), ((3, 2, 6), (4, 5, 3),
                                                     (int(rng.integers(5, 9)), 1, 10)),
                                         strict=True):
        lengths = rng.integers(1, n_k, size=batch)
        lengths[0] = n_k                             # one sequence without padding
        cases.append(Case(q, say("classroom.case_padding", batch=batch, n_q=n_q, n_k=n_k),
                          points, False,
                          "key_padding_blocked", [lengths, n_q, n_k],
                          equal_to(blocked(lengths, n_q, n_k), MASK)))

    q = "q2_causal"
    cases.append(Case(q, say("classroom.case_values"), 1, True, "causal_additive", [2, 3],
                      shaped((2, 3))))
    # one query at the end sees every key: all zeros, guessable; it counts only together
    # with a drawn chunk
    n_k = int(rng.integers(6, 12))
    for points, (n_q, n_k_, group) in zip((0, 4, 5), ((1, 5, "a"), (3, n_k, "a"),
                                                     (int(rng.integers(2, 6)), 14, "")),
                                          strict=True):
        cases.append(Case(q, say("classroom.case_queries_keys", n_q=n_q, n_k=n_k_),
                          points, False, "causal_additive",
                          [n_q, n_k_], _additive(causal_allowed(n_q, n_k_)), group=group,
                          predictable=n_q == 1))
    cases.append(Case(q, say("classroom.case_square"), 0, False, "causal_additive", [6, 6],
                      _additive(causal_allowed(6, 6)), group="a", predictable=True))

    q = "q3_combine"
    cases.append(Case(q, say("classroom.case_shape"), 1, True, "combine_masks",
                      [np.zeros((2, 3)), np.zeros((4, 2, 3), dtype=bool)], shaped((4, 2, 3))))
    for points, (batch, n_q, n_k) in zip((4, 5), ((2, 3, 5), (3, 4, 7)), strict=True):
        additive = np.where(causal_allowed(n_q, n_k), 0.0, -np.inf)
        block = rng.random(size=(batch, n_q, n_k)) < 0.4
        allowed = causal_allowed(n_q, n_k)[None] & ~block
        cases.append(Case(q, say("classroom.case_combine", batch=batch, n_q=n_q, n_k=n_k),
                          points, False,
                          "combine_masks", [additive, block], _additive(allowed)))

    q = "q4_attention"
    cases.append(Case(q, say("classroom.case_shapes"), 1, True, "masked_attention",
                      [np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 6)),
                       np.zeros((2, 3, 5))], pair(shaped((2, 3, 6)), shaped((2, 3, 5)))))
    for points, (batch, n_q, n_k, empty) in zip((4, 5), ((2, 3, 6, False), (3, 4, 7, True)),
                                                strict=True):
        lengths = rng.integers(n_q + 1, n_k + 1, size=batch)
        if empty:   # short sequences: their first queries sit on padding and see no key
            lengths[1:] = rng.integers(1, n_q, size=batch - 1)
        allowed = causal_allowed(n_q, n_k)[None] & ~blocked(lengths, n_q, n_k)
        Q, K = rng.normal(size=(batch, n_q, 4)), rng.normal(size=(batch, n_k, 4))
        V = rng.normal(size=(batch, n_k, 3))
        out, w = _masked_reference(Q, K, V, allowed)
        name = say("classroom.case_sequences_empty" if empty else "classroom.case_sequences",
                   batch=batch)
        cases.append(Case(q, name, points, False, "masked_attention",
                          [Q, K, V, np.where(allowed, 0.0, -np.inf)],
                          pair(close_to(out), close_to(w, what=say("classroom.what_weights")))))
    return cases


ASSIGNMENTS = {a.name: a for a in (
    Assignment("01_attention_numpy", "attention-01-numpy", _assignment_1),
    Assignment("02_mha_torch", "attention-02-mha-torch", _assignment_2),
    Assignment("03_kv_cache", "attention-03-kv-cache", _assignment_3),
    Assignment("04_gqa", "attention-04-gqa", _assignment_4),
    Assignment("05_scaling", "attention-05-scaling", _assignment_5),
    Assignment("06_stability", "attention-06-stability", _assignment_6),
    Assignment("07_masks", "attention-07-masks", _assignment_7),
)}
