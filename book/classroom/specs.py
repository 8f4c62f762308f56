"""The graded cases of each assignment: inputs, which function, how to compare, points.

These are the hidden tests, kept as data on the teacher's side (never in a student notebook,
never inside a sandbox). Each assignment has a builder that draws fresh inputs from a seeded
generator (a new random seed per grading batch by default, so a table of answers to known
inputs earns nothing), sends only the inputs into the sandbox, and keeps the checker: a
function of the returned output that computes the reference with the book's own code *here*,
in the teacher's process, and says what is wrong. Every question has one public case, the
shape/format check students also run with ``grader.check`` (at most 10 % of its points); the
rest of its points come from hidden cases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .runner import encode


@dataclass(frozen=True)
class Case:
    """One graded call. ``check(output)`` returns None when right, else why it is wrong."""

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

def _array(output, shape=None, what="the output"):
    if isinstance(output, list):
        raise _Wrong(f"{what} is a sequence of {len(output)} values, not one array")
    if output is None or isinstance(output, str):
        raise _Wrong(f"{what} is {'None' if output is None else 'a string'}, not an array")
    arr = np.asarray(output)
    if shape is not None and arr.shape != tuple(shape):
        raise _Wrong(f"{what} has shape {arr.shape}, expected {tuple(shape)}")
    return arr


class _Wrong(Exception):
    pass


def _checker(body: Callable[[object], None]) -> Callable[[object], str | None]:
    def check(output):
        try:
            body(output)
        except _Wrong as wrong:
            return str(wrong)
        except (TypeError, ValueError) as error:
            return f"the output could not be compared ({error})"
        return None
    return check


def close_to(expected, *, atol: float = 1e-8, what: str = "the output"):
    expected = np.asarray(expected)

    def body(output):
        arr = _array(output, expected.shape, what)
        if not np.all(np.isfinite(arr.astype(float))):
            raise _Wrong(f"{what} holds inf or NaN")
        if not np.allclose(arr.astype(float), expected.astype(float), atol=atol):
            raise _Wrong(f"{what} differs from the reference")
    return _checker(body)


def equal_to(expected, what: str = "the output"):
    expected = np.asarray(expected)

    def body(output):
        arr = _array(output, expected.shape, what)
        if expected.dtype == bool and arr.dtype != bool:
            raise _Wrong(f"{what} has dtype {arr.dtype}, expected bool")
        if not np.array_equal(arr, expected):
            raise _Wrong(f"{what} differs from the reference")
    return _checker(body)


def shaped(shape, dtype=None, what: str = "the output"):
    def body(output):
        arr = _array(output, shape, what)
        if dtype is not None and arr.dtype != dtype:
            raise _Wrong(f"{what} has dtype {arr.dtype}, expected {np.dtype(dtype)}")
    return _checker(body)


def pair(first, second):
    """Both parts of a returned ``(output, weights)`` pair must pass their checks."""
    def check(output):
        if not isinstance(output, list) or len(output) != 2:
            return "expected a pair (output, weights)"
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
    cases.append(Case(q, "rows sum to one (public)", 1, True, "softmax", [x0],
                      close_to(softmax(x0), atol=1e-6)))
    x1 = rng.normal(scale=5.0, size=(3, 4, 7))
    cases.append(Case(q, "3-d input", 5, False, "softmax", [x1], close_to(softmax(x1))))
    x2 = np.array([[1000.0, 999.0, -1000.0]]) + rng.normal(size=(2, 3))
    cases.append(Case(q, "large scores", 4, False, "softmax", [x2], close_to(softmax(x2))))

    q = "q2_attention"
    Q, K, V = rng.normal(size=(2, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 5))
    cases.append(Case(q, "shapes (public)", 1, True, "attention", [Q, K, V],
                      pair(shaped((2, 5)), shaped((2, 3)))))
    Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 3))
    out, w = scaled_dot_product_attention(Q, K, V)
    cases.append(Case(q, "no mask", 4, False, "attention", [Q, K, V],
                      pair(close_to(out), close_to(w, what="the weights"))))
    n = int(rng.integers(4, 8))
    Q, K, V = rng.normal(size=(n, 4)), rng.normal(size=(n, 4)), rng.normal(size=(n, 2))
    mask = causal_mask(n).numpy()
    out, w = scaled_dot_product_attention(Q, K, V, mask)
    cases.append(Case(q, "causal mask", 5, False, "attention", [Q, K, V, mask],
                      pair(close_to(out), close_to(w, what="the weights"))))

    q = "q3_causal_mask"
    cases.append(Case(q, "3 × 3 boolean (public)", 1, True, "causal_mask", [3],
                      shaped((3, 3), bool)))
    for n in (1, int(rng.integers(4, 9)), int(rng.integers(9, 17))):
        cases.append(Case(q, f"n={n}", 3, False, "causal_mask", [n],
                          equal_to(causal_mask(n).numpy())))
    return cases


# ---- assignment 2: multi-head attention in PyTorch -----------------------------------------

def _assignment_2(rng: np.random.Generator) -> list[Case]:
    import torch

    from book.ideas.masks import causal_mask, to_torch_attn_mask
    from book.ideas.mha import MultiHeadSelfAttention, from_torch_mha

    cases = []
    q = "q1_split_heads"
    cases.append(Case(q, "shape (public)", 1, True, "split_heads", [np.zeros((2, 5, 8)), 4],
                      shaped((2, 4, 5, 2)), tensor_args=True))
    for points, (b, t, d, h) in zip((5, 4), ((2, 3, 8, 4), (3, 5, 12, 3)), strict=True):
        x = rng.normal(size=(b, t, d))
        expected = MultiHeadSelfAttention(d, h).split_heads(torch.from_numpy(x)).numpy()
        cases.append(Case(q, f"{b}×{t}×{d} into {h} heads", points, False, "split_heads",
                          [x, h], equal_to(expected), tensor_args=True))

    q = "q2_module"
    cases.append(Case(q, "output shape (public)", 1, True, "MultiHeadAttention",
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
        cases.append(Case(q, f"{h} heads" + (", causal mask" if masked else ""), points, False,
                          "MultiHeadAttention", args, close_to(expected, atol=1e-10),
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
    cases.append(Case(q, "shape (public)", 1, True, "attend",
                      [np.ones(4), np.ones((3, 4)), np.ones((3, 2))], shaped((2,))))
    cache = KVCache(4, 3)
    for _ in range(6):
        cache.append(rng.normal(size=4), rng.normal(size=3))
    query = rng.normal(size=4) * 10
    cases.append(Case(q, "large query over 6 cached tokens", 9, False, "attend",
                      [query, cache.keys.copy(), cache.values.copy()],
                      close_to(cache.attend(query))))

    q = "q2_decode"
    W = [rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 3))]
    cases.append(Case(q, "shape (public)", 1, True, "decode", [rng.normal(size=(5, 6)), *W],
                      shaped((5, 3))))
    W = [rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 5))]
    for points, n in zip((2, 3, 4), (1, 2, int(rng.integers(12, 20))), strict=True):
        X = rng.normal(size=(n, 6))
        cases.append(Case(q, f"{n} tokens", points, False, "decode", [X, *W],
                          close_to(causal_self_attention(X, *W))))

    q = "q3_cache_bytes"
    cases.append(Case(q, "one number (public)", 1, True, "cache_bytes", [1, 1, 1, 1],
                      _number(2)))
    configs = [(32, 4096, 4096, 2), (int(rng.integers(2, 48)), int(rng.integers(64, 8192)),
                                     int(rng.integers(64, 4096)), int(rng.choice([1, 2, 4]))),
               (1, 0, 8, 4)]
    for args in configs:
        cases.append(Case(q, f"{args}", 3, False, "cache_bytes", list(args),
                          _number(cache_bytes(*args))))
    return cases


def _number(expected: int, what: str = "the number of bytes"):
    def body(output):
        if isinstance(output, (list, str)) or output is None:
            raise _Wrong("expected a number")
        value = np.asarray(output)
        if value.shape != () or value != expected:
            raise _Wrong(f"{what} differs from the reference")
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
    cases.append(Case(q, "in range (public)", 1, True, "kv_head", [5, 8, 2], _in_range(2)))
    triples = [(0, 4, 4), (7, 8, 1), (int(rng.integers(0, 12)), 12, 3),
               (int(rng.integers(0, 32)), 32, 8), (int(rng.integers(16, 32)), 32, 4)]
    for points, (h, n, g) in zip((1, 2, 2, 2, 2), triples, strict=True):
        cases.append(Case(q, f"head {h} of {n}, {g} key/value heads", points, False, "kv_head",
                          [h, n, g], _number(kv_head_of(h, n, g), "the head index")))

    def qkv(n_heads, n_kv, T, d):
        return (rng.normal(size=(n_heads, T, d)), rng.normal(size=(n_kv, T, d)),
                rng.normal(size=(n_kv, T, d)))

    q = "q2_gqa_attention"
    cases.append(Case(q, "shape (public)", 1, True, "gqa_attention",
                      [np.ones((4, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 2))],
                      shaped((4, 3, 2))))
    for points, (h, g, T, causal) in zip((2, 2, 3, 2), ((4, 4, 5, False), (4, 1, 6, False),
                                                        (8, 2, 7, True), (6, 3, 4, True)),
                                         strict=True):
        args = qkv(h, g, T, 4)
        cases.append(Case(q, f"{h} query heads, {g} key/value heads"
                          + (", causal" if causal else ""), points, False, "gqa_attention",
                          [*args, causal], close_to(_gqa_reference(*args, causal))))

    q = "q3_decode"
    cases.append(Case(q, "shape (public)", 1, True, "decode",
                      list(qkv(4, 2, 5, 2)), shaped((4, 5, 2))))
    shapes = ((2, 2, 1), (4, 1, 6), (8, 2, int(rng.integers(9, 16))))
    for points, (h, g, T) in zip((2, 3, 4), shapes, strict=True):
        args = qkv(h, g, T, 4)
        cases.append(Case(q, f"{T} tokens, {h} query heads, {g} key/value heads", points, False,
                          "decode", list(args), close_to(_gqa_reference(*args, True))))

    q = "q4_cache_bytes"
    cases.append(Case(q, "one number (public)", 1, True, "cache_bytes", [1, 1, 1, 1, 1],
                      _number(2)))
    configs = [(32, 8192, 8, 128, 2),  # a Llama-style shape: exactly 1 GiB
               (int(rng.integers(2, 48)), int(rng.integers(64, 8192)), int(rng.choice([1, 2, 8])),
                int(rng.choice([64, 128])), int(rng.choice([1, 2, 4]))),
               (1, 0, 4, 64, 4)]
    for points, args in zip((3, 3, 3), configs, strict=True):
        cases.append(Case(q, f"{args}", points, False, "cache_bytes", list(args),
                          _number(kv_cache_bytes(*args))))
    return cases


def _in_range(n_kv_heads: int):
    def body(output):
        if isinstance(output, (list, str, bool)) or output is None:
            raise _Wrong("expected an integer")
        value = np.asarray(output)
        if value.shape != () or not 0 <= value < n_kv_heads:
            raise _Wrong(f"expected an index between 0 and {n_kv_heads - 1}")
    return _checker(body)


ASSIGNMENTS = {a.name: a for a in (
    Assignment("01_attention_numpy", "attention-01-numpy", _assignment_1),
    Assignment("02_mha_torch", "attention-02-mha-torch", _assignment_2),
    Assignment("03_kv_cache", "attention-03-kv-cache", _assignment_3),
    Assignment("04_gqa", "attention-04-gqa", _assignment_4),
)}
