"""Assignment 1, attention in numpy (``assignments/01_attention_numpy.ipynb``): its hidden cases,
the answers that check they are fair, and the demo's partly wrong solution."""

from __future__ import annotations

import numpy as np

from ..cases import Answer, Assignment, Case, Written, np_softmax
from ..compare import close_to, equal_to, pair, shaped
from ..feedback import Text as say

# The instructor notebook (assignments/<STEM>.ipynb) and otter's name for the assignment,
# stored in the student notebooks' metadata.
STEM, NAME = "01_attention_numpy", "attention-01-numpy"
# The chapter pages (book.chapters.CHAPTERS) it draws on: the teacher's plan hands it out
# only once they are taught (tests/site/test_plan_order.py).
DRAWS_ON = ("01_intuition", "02_scaling", "04_pytorch")
# The demo's partly wrong solution: (a line of the solution, its wrong version) pairs, each
# found exactly once in the solution.
PARTIAL_MISTAKES = (
    ("e = np.exp(x - x.max(axis=-1, keepdims=True))", "e = np.exp(x)"),  # not stable
    ("return np.tril(np.ones((n, n), dtype=bool))",
     "return np.triu(np.ones((n, n), dtype=bool))"),  # attends to the future
)


# ---- the hidden cases ------------------------------------------------------------------------

def hidden_cases(rng: np.random.Generator) -> list[Case]:
    from book.ideas.attention import scaled_dot_product_attention, softmax
    from book.ideas.masks import causal_mask

    cases = []
    q = "q1_softmax"
    x0 = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    cases.append(Case(question=q, name=say("classroom.case_rows_sum"), points=1, public=True,
                      function="softmax", args=[x0], check=close_to(softmax(x0), atol=1e-6)))
    x1 = rng.normal(scale=5.0, size=(3, 4, 7))
    cases.append(Case(question=q, name=say("classroom.case_3d_input"), points=5, function="softmax",
                      args=[x1], check=close_to(softmax(x1))))
    x2 = np.array([[1000.0, 999.0, -1000.0]]) + rng.normal(size=(2, 3))
    cases.append(Case(question=q, name=say("classroom.case_large_scores"), points=4,
                      function="softmax", args=[x2], check=close_to(softmax(x2))))

    q = "q2_attention"
    Q, K, V = rng.normal(size=(2, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 5))
    cases.append(Case(question=q, name=say("classroom.case_shapes"), points=1, public=True,
                      function="attention", args=[Q, K, V],
                      check=pair(shaped((2, 5)), shaped((2, 3)))))
    Q, K, V = rng.normal(size=(4, 8)), rng.normal(size=(6, 8)), rng.normal(size=(6, 3))
    out, w = scaled_dot_product_attention(Q, K, V)
    cases.append(Case(question=q, name=say("classroom.case_no_mask"), points=4,
                      function="attention", args=[Q, K, V],
                      check=pair(close_to(out), close_to(w, what=say("classroom.what_weights")))))
    n = int(rng.integers(4, 8))
    Q, K, V = rng.normal(size=(n, 4)), rng.normal(size=(n, 4)), rng.normal(size=(n, 2))
    mask = causal_mask(n).numpy()
    out, w = scaled_dot_product_attention(Q, K, V, mask)
    cases.append(Case(question=q, name=say("classroom.case_causal_mask"), points=5,
                      function="attention", args=[Q, K, V, mask],
                      check=pair(close_to(out), close_to(w, what=say("classroom.what_weights")))))

    q = "q3_causal_mask"
    cases.append(Case(question=q, name=say("classroom.case_3x3_boolean"), points=1, public=True,
                      function="causal_mask", args=[3], check=shaped((3, 3), bool)))
    # n = 1 is right for any True: it only counts together with a drawn size
    for points, n, group in ((0, 1, "small"), (4, int(rng.integers(4, 9)), "small"),
                             (5, int(rng.integers(9, 17)), "")):
        cases.append(Case(question=q, name=f"n={n}", points=points, function="causal_mask",
                          args=[n], check=equal_to(causal_mask(n).numpy()), group=group,
                          predictable=n == 1))
    return cases


# ---- answers that must not (constant ones) and must (float32 ones) earn the marks ------------

def constants() -> dict[str, Answer]:
    def shape(Q, K, V):
        return len(Q), np.shape(V)[1], len(K)

    def const_attention(fill):
        def attention(Q, K, V, mask=None):
            nq, dv, nk = shape(Q, K, V)
            return np.full((nq, dv), fill), np.full((nq, nk), fill)
        return attention

    def uniform_attention(Q, K, V, mask=None):  # ignores Q and K (and the mask)
        nq, dv, nk = shape(Q, K, V)
        return np.tile(np.mean(V, axis=0), (nq, 1)), np.full((nq, nk), 1 / nk)

    def input_attention(Q, K, V, mask=None):  # the values themselves, the mask as weights
        nq, dv, nk = shape(Q, K, V)
        w = np.asarray(mask, dtype=float) if mask is not None else np.eye(nq, nk)
        return np.resize(np.asarray(V, dtype=float), (nq, dv)), w

    return {
        "zeros": {"softmax": lambda x: np.zeros_like(np.asarray(x, dtype=float)),
                  "attention": const_attention(0.0),
                  "causal_mask": lambda n: np.zeros((n, n), dtype=bool)},
        "ones / all True": {"softmax": lambda x: np.ones_like(np.asarray(x, dtype=float)),
                            "attention": const_attention(1.0),
                            "causal_mask": lambda n: np.ones((n, n), dtype=bool)},
        "the input": {"softmax": lambda x: np.asarray(x, dtype=float),
                      "attention": input_attention,
                      "causal_mask": lambda n: np.eye(n, dtype=bool)},
        "uniform": {"softmax": lambda x: np.full(np.shape(x), 1 / np.shape(x)[-1]),
                    "attention": uniform_attention,
                    "causal_mask": lambda n: np.triu(np.ones((n, n), dtype=bool))},
    }


def float32() -> Answer:
    import torch

    def softmax(x):  # the answer: torch.softmax on a float32 copy
        return torch.softmax(torch.as_tensor(np.asarray(x), dtype=torch.float32), -1).numpy()

    def attention(Q, K, V, mask=None):
        Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
        scores = Q @ K.T / np.sqrt(np.float32(Q.shape[-1]))
        if mask is not None:
            scores = np.where(mask, scores, np.float32(-np.inf))
        w = np_softmax(scores)
        return w @ V, w

    return {"softmax": softmax, "attention": attention}


ASSIGNMENT = Assignment(stem=STEM, name=NAME, build=hidden_cases, constants=constants,
                        float32=float32, partial_mistakes=PARTIAL_MISTAKES,
                        draws_on=DRAWS_ON,
                        written=Written(rubric=say("classroom.rubric_01")))
