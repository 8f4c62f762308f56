"""Assignment 3, decoding with a KV cache (``assignments/03_kv_cache.ipynb``): its hidden cases,
the answers that check they are fair, and the demo's partly wrong solution."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, int_constants, np_softmax
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
    ("return 2 * n_layers * n_tokens * d_model * bytes_per_number",
     "return n_layers * n_tokens * d_model * bytes_per_number"),  # forgets the values
    ("scores = K @ q / np.sqrt(len(q))", "scores = K @ q"),  # no scaling
)


# ---- the hidden cases ------------------------------------------------------------------------

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
                      function="decode", args=[rng.normal(size=(5, 6)), *W], check=shaped((5, 3))))
    # weights of scale 1/sqrt(d_model): scores of order 1, attention far from one-hot, so
    # answers that ignore the scores (the values alone, their running mean) are wrong
    W = [rng.normal(scale=6 ** -0.5, size=(6, k)) for k in (4, 4, 5)]
    for points, n, group in ((0, 1, "short"), (4, 2, "short"),
                             (5, int(rng.integers(12, 20)), "")):
        X = rng.normal(size=(n, 6))
        cases.append(Case(question=q, name=say("classroom.case_tokens", n=n), points=points,
                          function="decode", args=[X, *W],
                          check=close_to(causal_self_attention(X, *W)), group=group,
                          predictable=n == 1))

    q = "q3_cache_bytes"
    cases.append(Case(question=q, name=say("classroom.case_one_number"), points=1, public=True,
                      function="cache_bytes", args=[1, 1, 1, 1], check=number(2)))

    def drawn():
        return (int(rng.integers(2, 48)), int(rng.integers(64, 8192)),
                int(rng.integers(64, 4096)), int(rng.choice([1, 2, 4])))

    # a known shape (2 GiB) and no tokens at all (0 bytes) are guessable: each only counts
    # together with a drawn configuration
    for points, args, group in ((0, (32, 4096, 4096, 2), "a"), (4, drawn(), "a"),
                                (5, drawn(), "b"), (0, (1, 0, 8, 4), "b")):
        cases.append(Case(question=q, name=f"{args}", points=points, function="cache_bytes",
                          args=list(args), check=number(cache_bytes(*args)), group=group,
                          predictable=points == 0))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    def cumulative_mean(X, W_q, W_k, W_v):
        values = np.asarray(X) @ W_v
        return np.cumsum(values, axis=0) / np.arange(1, len(values) + 1)[:, None]

    kinds = {
        "zeros": {"attend": lambda q, K, V: np.zeros(np.shape(V)[1]),
                  "decode": lambda X, W_q, W_k, W_v: np.zeros((len(X), np.shape(W_v)[1]))},
        "ones": {"attend": lambda q, K, V: np.ones(np.shape(V)[1]),
                 "decode": lambda X, W_q, W_k, W_v: np.ones((len(X), np.shape(W_v)[1]))},
        "the input": {"attend": lambda q, K, V: np.asarray(V)[-1],
                      "decode": lambda X, W_q, W_k, W_v: np.asarray(X) @ W_v,
                      "cache_bytes": lambda n_layers, *rest: n_layers},
        "uniform": {"attend": lambda q, K, V: np.mean(V, axis=0), "decode": cumulative_mean},
    }
    return kinds | int_constants(("cache_bytes",), extra=(2**31,))


def float32() -> Answer:
    def attend(q, K, V):
        q, K, V = (np.asarray(a, dtype=np.float32) for a in (q, K, V))
        return np_softmax(K @ q / np.sqrt(np.float32(len(q)))) @ V

    def decode(X, W_q, W_k, W_v):
        X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float32) for a in (X, W_q, W_k, W_v))
        keys, values, out = [], [], []
        for x in X:
            keys.append(x @ W_k)
            values.append(x @ W_v)
            out.append(attend(x @ W_q, np.array(keys), np.array(values)))
        return np.array(out)

    return {"attend": attend, "decode": decode}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON)
