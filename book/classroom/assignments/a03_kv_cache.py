"""Assignment 3, decoding with a sliding-window KV cache (``assignments/03_kv_cache.ipynb``): its
hidden cases, the answers that check they are fair, and the demo's partly wrong solution.

The cache is a ring buffer of ``window`` slots and each token sees only the last ``window``
tokens, itself included, which the book does not print: chapter 9b's ``decode`` keeps every
token, and copied as it is it does not pass (tests/classroom/test_classroom_listings.py)."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, Written, int_constants, np_softmax
from ..compare import close_to, number, shaped
from ..feedback import Text as say

# The instructor notebook (assignments/<STEM>.ipynb) and otter's name for the assignment,
# stored in the student notebooks' metadata.
STEM, NAME = "03_kv_cache", "attention-03-kv-cache"
# The chapter pages (book.chapters.CHAPTERS) it draws on: the teacher's plan hands it out
# only once they are taught (tests/site/test_plan_order.py).
DRAWS_ON = ("09b_serving",)
# The demo's partly wrong solution: (a line of the solution, its wrong version) pairs, each
# found exactly once in the solution.
PARTIAL_MISTAKES = (
    ("return 2 * n_layers * min(n_tokens, window) * d_model * bytes_per_number",
     "return n_layers * min(n_tokens, window) * d_model * bytes_per_number"),  # no values
    ("scores = K @ q / np.sqrt(len(q))", "scores = K @ q"),  # no scaling
)


# ---- the hidden cases ------------------------------------------------------------------------

def windowed(X, W_q, W_k, W_v, window: int) -> np.ndarray:
    """The reference: a full recomputation in which token t attends to tokens
    t - window + 1 … t (the book's causal window mask, which counts the keys beside the
    token itself)."""
    from book.ideas.attention import scaled_dot_product_attention
    from book.ideas.longctx import window_mask

    mask = window_mask(len(X), window - 1, causal=True).numpy()
    return scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask)[0]


def window_bytes(n_layers, n_tokens, d_model, bytes_per_number, window) -> int:
    """The book's cache formula for the tokens a window keeps."""
    from book.ideas.kvcache import cache_bytes

    return cache_bytes(n_layers, min(n_tokens, window), d_model, bytes_per_number)


def hidden_cases(rng: np.random.Generator) -> list[Case]:
    from book.ideas.kvcache import KVCache, cache_bytes, causal_self_attention

    cases = []
    q = "q1_attend"
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="attend", args=[np.ones(4), np.ones((3, 4)), np.ones((3, 2))],
                      check=shaped((2,))))
    cache = KVCache(4, 3)
    for _ in range(6):
        cache.append(rng.normal(size=4), rng.normal(size=3))
    query = rng.normal(size=4) * 10
    cases.append(Case(question=q, name=say("classroom.case_large_query"), points=9,
                      function="attend", args=[query, cache.keys.copy(), cache.values.copy()],
                      check=close_to(cache.attend(query))))

    q = "q2_decode"
    W = [rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 3))]
    cases.append(Case(question=q, name=say("classroom.case_shape"), points=1, public=True,
                      function="decode", args=[rng.normal(size=(5, 6)), *W, 3],
                      check=shaped((5, 3))))
    # weights of scale 1/sqrt(d_model): scores of order 1, attention far from one-hot, so
    # answers that ignore the scores (the values alone, their running mean) are wrong; every
    # drawn case has more tokens than the window, so that keeping every token (chapter 9b's
    # cache) or one token too many is wrong, and says so
    W = [rng.normal(scale=6 ** -0.5, size=(6, k)) for k in (4, 4, 5)]
    for points, n, window, group in ((0, 1, 2, "short"),
                                     (4, int(rng.integers(6, 10)), 3, "short"),
                                     (5, int(rng.integers(12, 20)), int(rng.integers(4, 8)), "")):
        X = rng.normal(size=(n, 6))
        like = [] if n <= window else [
            (causal_self_attention(X, *W), say("classroom.hint_no_window", window=window)),
            (windowed(X, *W, window + 1), say("classroom.hint_window_too_wide",
                                              window=window))]
        cases.append(Case(question=q, name=say("classroom.case_window", n=n, window=window),
                          points=points, function="decode", args=[X, *W, window],
                          check=close_to(windowed(X, *W, window), like=like), group=group,
                          predictable=n == 1))

    q = "q3_cache_bytes"
    cases.append(Case(question=q, name=say("classroom.case_one_number"), points=1, public=True,
                      function="cache_bytes", args=[1, 1, 1, 1, 1], check=number(2)))

    def drawn(longer: bool):
        n_tokens = int(rng.integers(64, 8192))
        window = (int(rng.integers(16, n_tokens)) if longer
                  else int(rng.integers(n_tokens + 1, 2 * n_tokens)))
        return (int(rng.integers(2, 48)), n_tokens, int(rng.integers(64, 4096)),
                int(rng.choice([1, 2, 4])), window)

    # a known shape (2 GiB) and no tokens at all (0 bytes) are guessable: each only counts
    # together with a drawn configuration; a window shorter than the text (the cache stops
    # growing) and one longer (every token is kept) are both drawn
    for points, args, group in ((0, (32, 4096, 4096, 2, 4096), "a"), (4, drawn(True), "a"),
                                (3, drawn(True), "b"), (2, drawn(False), "b"),
                                (0, (1, 0, 8, 4, 16), "b")):
        every = cache_bytes(*args[:4])
        like = [(every, say("classroom.hint_cache_no_window"))]
        cases.append(Case(question=q, name=f"{args}", points=points, function="cache_bytes",
                          args=list(args), check=number(window_bytes(*args), like=like),
                          group=group, predictable=points == 0))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    def cumulative_mean(X, W_q, W_k, W_v, window):
        values = np.asarray(X) @ W_v
        return np.cumsum(values, axis=0) / np.arange(1, len(values) + 1)[:, None]

    def window_mean(X, W_q, W_k, W_v, window):
        values = np.asarray(X) @ W_v
        return np.array([values[max(0, t - window + 1):t + 1].mean(axis=0)
                         for t in range(len(values))])

    kinds = {
        "zeros": {"attend": lambda q, K, V: np.zeros(np.shape(V)[1]),
                  "decode": lambda X, W_q, W_k, W_v, w: np.zeros((len(X), np.shape(W_v)[1]))},
        "ones": {"attend": lambda q, K, V: np.ones(np.shape(V)[1]),
                 "decode": lambda X, W_q, W_k, W_v, w: np.ones((len(X), np.shape(W_v)[1]))},
        "the input": {"attend": lambda q, K, V: np.asarray(V)[-1],
                      "decode": lambda X, W_q, W_k, W_v, w: np.asarray(X) @ W_v,
                      "cache_bytes": lambda n_layers, *rest: n_layers},
        "uniform": {"attend": lambda q, K, V: np.mean(V, axis=0), "decode": cumulative_mean},
        "uniform in the window": {"decode": window_mean},
    }
    return kinds | int_constants(("cache_bytes",), extra=(2**31,))


def float32() -> Answer:
    def attend(q, K, V):
        q, K, V = (np.asarray(a, dtype=np.float32) for a in (q, K, V))
        return np_softmax(K @ q / np.sqrt(np.float32(len(q)))) @ V

    def decode(X, W_q, W_k, W_v, window):
        X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float32) for a in (X, W_q, W_k, W_v))
        out = []
        for t, x in enumerate(X):
            start = max(0, t - window + 1)
            out.append(attend(x @ W_q, X[start:t + 1] @ W_k, X[start:t + 1] @ W_v))
        return np.array(out)

    return {"attend": attend, "decode": decode}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON,
                        written=Written(rubric=say("classroom.rubric_03")))
